//! Exports (docs/API.md, "Exports: CSV and XLSX"): any list request answered as CSV (`format=csv` or `Accept:
//! text/csv`) or XLSX (`format=xlsx`) with every matching record, not one page. The same
//! parse → plan as a list (filters, order, fields, complex queries, scope); the store reads the
//! records in keyset chunks and the rows go out as they are read, so memory holds a chunk
//! whatever the count. Without `fields` or `exclude`, a product, stock or price export has
//! the columns of that upload type (`brandhub_ingest::layout`), so it can be uploaded again.
//! No cell runs as a formula in a spreadsheet program: CSV marks a text that would with a
//! leading `'`, XLSX writes every text as a string cell (`brandhub_sheet::csv_text`).

use super::read::viewer;
use super::require_grant;
use crate::AppState;
use crate::problem::{Answer, Problem};
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use brandhub_catalog::{Resource, catalog};
use brandhub_ingest::layout::sheet_layout;
use brandhub_problem::{ApiError, Code};
use brandhub_query::plan::{ReadPlan, Viewer, plan_read};
use brandhub_query::request::{Format, ReadRequest};
use brandhub_query::sql::Keyset;
use brandhub_sheet::{csv_text, typed_text};
use brandhub_store::{Caller, ExportChunk, Store, TableCell, TableColumn, Timing, table_columns};
use bytes::Bytes;
use std::io;
use tokio::sync::mpsc;
use tracing::Instrument;

/// The media type of CSV exports.
pub const CSV: &str = "text/csv; charset=utf-8";
/// The media type of XLSX exports.
pub const XLSX: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";

/// Rows an XLSX worksheet holds (Excel's limit, the header included); longer exports go on
/// into further worksheets.
const XLSX_SHEET_ROWS: u32 = 1_048_576;

/// Bytes gathered before they are sent on as one piece of the body.
const PIECE: usize = 64 * 1024;

/// The format a list answers with: `format=` if given, else the most preferred of JSON, CSV
/// and XLSX in `Accept`, else JSON.
pub fn requested_format(request: &ReadRequest, headers: &HeaderMap) -> Format {
    request.format.unwrap_or_else(|| {
        headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(accepted)
            .unwrap_or(Format::Json)
    })
}

/// The format an `Accept` header prefers among those brandhub answers in (by `q`, then by
/// position); `None` when it names none of them (`*/*` included: JSON then).
fn accepted(accept: &str) -> Option<Format> {
    let mut best: Option<(Format, f32)> = None;
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let format = match media.as_str() {
            "application/json" => Format::Json,
            "text/csv" => Format::Csv,
            m if m == XLSX => Format::Xlsx,
            _ => continue,
        };
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        if q > 0.0 && best.is_none_or(|(_, b)| q > b) {
            best = Some((format, q));
        }
    }
    best.map(|(format, _)| format)
}

/// 400 for `format=csv` or `xlsx` where only one record or a count is answered.
pub fn only_json(request: &ReadRequest) -> Answer<()> {
    match request.format {
        None | Some(Format::Json) => Ok(()),
        Some(other) => Err(Problem(
            ApiError::new(
                Code::InvalidParameter,
                format!(
                    "format={} exports lists: ask /api/<resource> or /api/<resource>/query; this endpoint answers JSON only.",
                    other.as_str()
                ),
            )
            .with_field("format"),
        )),
    }
}

/// What an export writes: the plan of its rows and its columns with their headers.
struct Table {
    plan: ReadPlan,
    columns: Vec<(String, TableColumn)>,
}

/// Plans an export of `resource`: the request's fields, or the upload sheet of the resource.
fn table(
    resource: &'static Resource,
    request: &ReadRequest,
    caller: &Caller,
    viewer: &Viewer,
) -> Answer<Table> {
    let layout = (request.fields.is_none() && request.exclude.is_empty())
        .then(|| sheet_layout(resource.handle()))
        .flatten();
    let Some((layout, through)) = layout else {
        let plan = plan_read(resource, request, viewer)?;
        let columns = table_columns(&plan.selection)
            .into_iter()
            .map(|column| (column.path.clone(), column))
            .collect();
        return Ok(Table { plan, columns });
    };
    let rows = catalog().get(layout.rows);
    if !std::ptr::eq(rows, resource) {
        require_grant(caller, rows, "GET")?;
    }
    let mut request = match through {
        Some(relation) => request.through(relation),
        None => request.clone(),
    };
    request.fields = Some(
        layout
            .columns
            .iter()
            .map(|(_, path)| path.to_string())
            .collect(),
    );
    let plan = plan_read(rows, &request, viewer)?;
    let available = table_columns(&plan.selection);
    let columns = layout
        .columns
        .iter()
        .map(|(column, path)| {
            let found = available
                .iter()
                .find(|c| c.path == *path)
                .cloned()
                .ok_or_else(|| {
                    // A path the caller may not see: the sheet cannot be made for it.
                    Problem(ApiError::new(
                        Code::Forbidden,
                        format!(
                            "A {} export needs {path}, which this caller cannot read; choose the columns with fields=.",
                            resource.name
                        ),
                    ))
                })?;
            Ok((column.label().to_string(), found))
        })
        .collect::<Answer<Vec<_>>>()?;
    Ok(Table { plan, columns })
}

/// The text of a cell in CSV: numbers as the shortest text that reads back the same; a text
/// (a value of a text-typed column, never a number) marked with a leading `'` when a
/// spreadsheet program would run it as a formula (`brandhub_sheet::csv_text`, docs/API.md, "Exports: CSV and XLSX").
#[cfg(test)]
fn text_of(cell: &TableCell) -> String {
    match cell {
        TableCell::Text(text) => csv_text(text).into_owned(),
        other => {
            let mut text = String::new();
            write_plain(&mut text, other);
            text
        }
    }
}

/// A cell that is not a text, in CSV (see [`text_of`]), written into `out`.
fn write_plain(out: &mut String, cell: &TableCell) {
    use std::fmt::Write as _;
    let _ = match cell {
        TableCell::Empty | TableCell::Text(_) => Ok(()),
        TableCell::Integer(n) => write!(out, "{n}"),
        TableCell::Number(n) => write!(out, "{n}"),
        TableCell::Bool(b) => write!(out, "{b}"),
    };
}

/// Answers a list request as an export.
pub async fn export(
    state: &AppState,
    resource: &'static Resource,
    request: &ReadRequest,
    caller: &Caller,
    timing: &Timing,
    format: Format,
) -> Answer<Response> {
    let viewer = viewer(caller);
    let table = table(resource, request, caller, &viewer)?;
    // Exports read on connections of their own (`Store::for_export`).
    let store = state.store.for_export();
    // The first chunk before the answer's head: a failure here is still a proper error.
    let first = store
        .export_chunk(&table.plan, &viewer, None, state.export_chunk, timing)
        .await?;
    let (sender, receiver) = mpsc::channel::<io::Result<Bytes>>(4);
    let chunk = state.export_chunk;
    // The rest is written after the answer's head went out; its lines keep the request id.
    let span = tracing::Span::current();
    let (content_type, extension) = match format {
        Format::Xlsx => {
            let ahead = chunks_ahead(store, viewer, table.plan.clone(), chunk, first.next.clone());
            tokio::task::spawn_blocking(move || {
                let _entered = span.enter();
                write_xlsx(ahead, table, first, &sender);
            });
            (XLSX, "xlsx")
        }
        _ => {
            tokio::spawn(write_csv(store, viewer, chunk, table, first, sender).instrument(span));
            (CSV, "csv")
        }
    };
    let body = Body::from_stream(futures_util::stream::unfold(
        receiver,
        |mut receiver| async { receiver.recv().await.map(|piece| (piece, receiver)) },
    ));
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(value) = HeaderValue::from_str(&format!(
        "attachment; filename=\"{}.{extension}\"",
        resource.name
    )) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}

/// Reads the chunk after `after`; a failure is logged and ends the body with an error, so the
/// client sees a broken transfer rather than a short file that looks whole.
async fn next_chunk(
    store: &Store,
    viewer: &Viewer,
    plan: &ReadPlan,
    after: &Keyset,
    limit: u64,
) -> Option<ExportChunk> {
    match store
        .export_chunk(plan, viewer, Some(after), limit, &Timing::default())
        .await
    {
        Ok(chunk) => Some(chunk),
        Err(error) => {
            tracing::error!(%error, "an export stopped: a chunk could not be read");
            None
        }
    }
}

/// The chunks after `after`, read one ahead of the writing by a task of their own, so that the
/// database's reading and the writing each take a core: the task is parked in the read while
/// the writer works, and starts the next read as soon as it handed one over. A task spawned
/// from the writer's own would wait for the writer to yield (the scheduler runs a task spawned
/// by a busy worker on that worker, next), which made the two take turns. At most three chunks
/// are held: the one written, one handed over and one being read; with only two, the reader
/// would wait for the writer to take each chunk, and be woken on the writer's worker, which
/// finishes writing first (docs/decisions/0034-exports-read-directly.md). The channel closes
/// after the last chunk, or early when one could not be read ([`next_chunk`] logged why): the
/// writer, which knows whether more was due, ends the export as broken then.
fn chunks_ahead(
    store: Store,
    viewer: Viewer,
    plan: ReadPlan,
    limit: u64,
    after: Option<Keyset>,
) -> mpsc::Receiver<ExportChunk> {
    let (sender, receiver) = mpsc::channel(1);
    let span = tracing::Span::current();
    tokio::spawn(
        async move {
            let mut after = after;
            while let Some(from) = after.take() {
                let Some(chunk) = next_chunk(&store, &viewer, &plan, &from, limit).await else {
                    return;
                };
                after = chunk.next.clone();
                if sender.send(chunk).await.is_err() {
                    return;
                }
            }
        }
        .instrument(span),
    );
    receiver
}

fn broken() -> io::Error {
    io::Error::other("the export stopped; the server log has the cause")
}

async fn write_csv(
    store: Store,
    viewer: Viewer,
    limit: u64,
    table: Table,
    first: ExportChunk,
    sender: mpsc::Sender<io::Result<Bytes>>,
) {
    let mut ahead = chunks_ahead(store, viewer, table.plan.clone(), limit, first.next.clone());
    let mut chunk = first;
    let mut header = true;
    loop {
        // Writing CSV into memory cannot fail.
        let mut writer = csv::Writer::from_writer(Vec::with_capacity(PIECE * 2));
        if std::mem::take(&mut header) {
            let _ = writer.write_record(table.columns.iter().map(|(h, _)| h.as_str()));
        }
        let mut number = String::new();
        for row in 0..chunk.node.rows.len() {
            for (_, column) in &table.columns {
                let cell = column.cell(&chunk.node, row);
                let _ = match &cell {
                    TableCell::Text(text) => writer.write_field(csv_text(text).as_bytes()),
                    other => {
                        number.clear();
                        write_plain(&mut number, other);
                        writer.write_field(number.as_bytes())
                    }
                };
            }
            // No more fields: the record ends.
            let _ = writer.write_record(None::<&[u8]>);
        }
        let bytes = writer.into_inner().unwrap_or_default();
        if sender.send(Ok(Bytes::from(bytes))).await.is_err() {
            return; // The client went away.
        }
        if chunk.next.is_none() {
            return;
        }
        match ahead.recv().await {
            Some(next) => chunk = next,
            // The reading task logged why it read nothing.
            None => {
                let _ = sender.send(Err(broken())).await;
                return;
            }
        }
    }
}

/// A `Write` that sends what is written on as pieces of the body.
struct BodyWriter<'a> {
    sender: &'a mpsc::Sender<io::Result<Bytes>>,
    buffer: Vec<u8>,
}

impl BodyWriter<'_> {
    fn send(&mut self) -> io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let piece = Bytes::from(std::mem::replace(
            &mut self.buffer,
            Vec::with_capacity(PIECE),
        ));
        self.sender
            .blocking_send(Ok(piece))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client went away"))
    }
}

impl io::Write for BodyWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= PIECE {
            self.send()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send()
    }
}

/// Writes the XLSX on a blocking thread: rows go into constant-memory worksheets (a temporary
/// file each, not the heap), then the workbook is zipped straight into the body.
fn write_xlsx(
    mut ahead: mpsc::Receiver<ExportChunk>,
    table: Table,
    first: ExportChunk,
    sender: &mpsc::Sender<io::Result<Bytes>>,
) {
    use rust_xlsxwriter::Workbook;
    let result = (|| -> Result<bool, String> {
        let mut workbook = Workbook::new();
        let mut sheet = workbook
            .add_worksheet_with_constant_memory()
            .map_err(|e| e.to_string())?;
        let write_header = |sheet: &mut rust_xlsxwriter::Worksheet| -> Result<(), String> {
            for (c, (header, _)) in table.columns.iter().enumerate() {
                sheet
                    .write_string(0, c as u16, header)
                    .map_err(|e| e.to_string())?;
            }
            Ok(())
        };
        write_header(sheet)?;
        let mut row: u32 = 1;
        let mut chunk = first;
        loop {
            for r in 0..chunk.node.rows.len() {
                if row == XLSX_SHEET_ROWS {
                    sheet = workbook
                        .add_worksheet_with_constant_memory()
                        .map_err(|e| e.to_string())?;
                    write_header(sheet)?;
                    row = 1;
                }
                for (c, (_, column)) in table.columns.iter().enumerate() {
                    let c = c as u16;
                    let written = match column.cell(&chunk.node, r) {
                        TableCell::Empty => continue,
                        // A string cell, never a formula, whatever it begins with.
                        TableCell::Text(text) => {
                            sheet.write_string(row, c, typed_text(&text)).map(|_| ())
                        }
                        TableCell::Integer(n) => sheet.write_number(row, c, n as f64).map(|_| ()),
                        TableCell::Number(n) => sheet.write_number(row, c, n).map(|_| ()),
                        TableCell::Bool(b) => sheet.write_boolean(row, c, b).map(|_| ()),
                    };
                    written.map_err(|e| e.to_string())?;
                }
                row += 1;
            }
            if chunk.next.is_none() {
                break;
            }
            match ahead.blocking_recv() {
                Some(next) => chunk = next,
                None => return Ok(false),
            }
        }
        let mut writer = BodyWriter {
            sender,
            buffer: Vec::with_capacity(PIECE),
        };
        workbook
            .save_to_writer(&mut writer)
            .map_err(|e| e.to_string())?;
        io::Write::flush(&mut writer).map_err(|e| e.to_string())?;
        Ok(true)
    })();
    match result {
        Ok(true) => {}
        Ok(false) => {
            let _ = sender.blocking_send(Err(broken()));
        }
        Err(error) => {
            tracing::error!(%error, "an XLSX export stopped");
            let _ = sender.blocking_send(Err(broken()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Format, TableCell, accepted, text_of};

    #[test]
    fn csv_marks_formula_texts_and_leaves_numbers_alone() {
        let text = |t: &str| text_of(&TableCell::Text(t.into()));
        assert_eq!(
            text("=HYPERLINK(\"https://example.test\")"),
            "'=HYPERLINK(\"https://example.test\")"
        );
        assert_eq!(text("-5"), "'-5", "a text column's -5 is text");
        assert_eq!(text("Plain"), "Plain");
        assert_eq!(text_of(&TableCell::Integer(-5)), "-5");
        assert_eq!(text_of(&TableCell::Number(-5.25)), "-5.25");
    }

    #[test]
    fn accept_picks_the_preferred_known_type() {
        assert_eq!(accepted("text/csv"), Some(Format::Csv));
        assert_eq!(accepted("application/json, text/csv"), Some(Format::Json));
        assert_eq!(
            accepted("application/json;q=0.5, text/csv"),
            Some(Format::Csv)
        );
        assert_eq!(
            accepted("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
            Some(Format::Xlsx)
        );
        assert_eq!(
            accepted("text/csv;q=0, application/json;q=0.1"),
            Some(Format::Json)
        );
        assert_eq!(accepted("*/*"), None);
        assert_eq!(accepted("text/html"), None);
    }
}
