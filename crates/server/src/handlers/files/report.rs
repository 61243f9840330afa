//! `GET /api/file/<id>/report`: the rows processing skipped, as a spreadsheet to fix and upload
//! again (README, "The portal"): the uploaded header with an `Error` column added, then each skipped
//! row as it was uploaded with its reason. A CSV upload gets a CSV report; every other format
//! an `.xlsx` (the formats brandhub can write), with the same cells.

use super::content::content_disposition;
use super::{no_file, visible};
use crate::AppState;
use crate::handlers::read::viewer;
use crate::handlers::require_grant;
use crate::problem::{Answer, Problem};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use brandhub_catalog::Res;
use brandhub_catalog::catalog;
use brandhub_catalog::{FileStatus, file_paths};
use brandhub_problem::{ApiError, Code, words};
use brandhub_sheet::{Cell, Format, Limits, csv_text, typed_text};
use brandhub_store::{Caller, Timing};
use futures_util::TryStreamExt;
use std::collections::HashMap;

/// The column the report adds.
pub const ERROR_COLUMN: &str = "Error";

/// A cell as the report writes it: as the reader understood it.
fn cell_text(cell: &Cell) -> String {
    cell.as_text().map(|t| t.into_owned()).unwrap_or_default()
}

/// `GET /api/file/<id>/report`.
pub(super) async fn report(
    state: &AppState,
    caller: &Caller,
    timing: &Timing,
    id: &str,
) -> Answer<Response> {
    let file = catalog().get(Res::File);
    require_grant(caller, file, "GET")?;
    if !visible(state, Res::File, id, &viewer(caller), timing).await? {
        return Err(no_file(id));
    }
    let id = id.to_ascii_uppercase();
    let text_of = |path: &'static str| {
        let id = id.clone();
        async move {
            Ok::<_, Problem>(
                state
                    .store
                    .text_field_of(Res::File, path, &id)
                    .await?
                    .flatten()
                    .unwrap_or_default(),
            )
        }
    };
    let status = text_of(file_paths::STATUS).await?;
    if !FileStatus::named(&status).is_some_and(FileStatus::is_final) {
        return Err(Problem(ApiError::new(
            Code::Conflict,
            words!(
                "File '{id}' is {status}: its report exists once it is processed.",
                "Datei '{id}' ist {status}: ihr Bericht entsteht, sobald sie verarbeitet ist."
            ),
        )));
    }
    let name = text_of(file_paths::FILE_NAME).await?;
    let format = Format::from_file_name(&name).unwrap_or(Format::Xlsx);
    let skipped: HashMap<u32, String> = state.store.skipped_rows(&id).await?.into_iter().collect();
    let bytes = match state.files.get(&id).await {
        Ok((_, stream)) => stream
            .map_ok(|chunk| chunk.to_vec())
            .try_concat()
            .await
            .map_err(|error| {
                tracing::error!(%error, file = %id, "a stored file could not be read");
                Problem(ApiError::internal())
            })?,
        Err(error) => {
            tracing::warn!(%error, file = %id, "the bytes of a file for its report are missing");
            return Err(Problem(ApiError::new(
                Code::NotFound,
                words!(
                    "The bytes of file '{id}' are not stored, so it has no report.",
                    "Die Bytes der Datei '{id}' sind nicht gespeichert, daher hat sie keinen Bericht."
                ),
            )));
        }
    };
    // The file was read within these limits when it was processed; a file that failed as a
    // whole (no header, too large) has no rows to report beyond its reason.
    let (header, rows) = match brandhub_sheet::read(&bytes, format, &Limits::default()) {
        Ok(table) => {
            let header: Vec<String> = table.header().cells().iter().map(cell_text).collect();
            let rows: Vec<(Vec<String>, String)> = table
                .rows()
                .iter()
                .filter_map(|row| {
                    let reason = skipped.get(&row.number())?;
                    Some((row.cells().iter().map(cell_text).collect(), reason.clone()))
                })
                .collect();
            (header, rows)
        }
        Err(_) => (Vec::new(), Vec::new()),
    };
    let width = header.len();
    let mut table = Vec::with_capacity(rows.len() + 1);
    let mut first = header;
    first.push(ERROR_COLUMN.to_string());
    table.push(first);
    for (mut cells, reason) in rows {
        cells.resize(width, String::new());
        cells.push(reason);
        table.push(cells);
    }
    let stem = name.rsplit_once('.').map_or(name.as_str(), |(s, _)| s);
    let (body, mime, extension) = if format == Format::Csv {
        (csv_of(&table)?, "text/csv; charset=utf-8", "csv")
    } else {
        (xlsx_of(&table)?, Format::Xlsx.mime(), "xlsx")
    };
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(mime));
    headers.insert(
        header::CONTENT_DISPOSITION,
        content_disposition(&format!("{stem}-errors.{extension}")),
    );
    Ok(response)
}

/// The report as CSV: a text a spreadsheet program would run as a formula is marked with a
/// leading `'`, as in exports (`brandhub_sheet::csv_text`); uploaded again, it reads as it was.
fn csv_of(table: &[Vec<String>]) -> Answer<Vec<u8>> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    for row in table {
        writer
            .write_record(row.iter().map(|cell| csv_text(cell).into_owned()))
            .map_err(|_| Problem(ApiError::internal()))?;
    }
    writer
        .into_inner()
        .map_err(|_| Problem(ApiError::internal()))
}

fn xlsx_of(table: &[Vec<String>]) -> Answer<Vec<u8>> {
    let internal = |error: rust_xlsxwriter::XlsxError| {
        tracing::error!(%error, "an error report could not be written");
        Problem(ApiError::internal())
    };
    let mut workbook = rust_xlsxwriter::Workbook::new();
    let sheet = workbook.add_worksheet();
    let bold = rust_xlsxwriter::Format::new().set_bold();
    for (r, row) in table.iter().enumerate() {
        let r = u32::try_from(r).map_err(|_| Problem(ApiError::internal()))?;
        for (c, value) in row.iter().enumerate() {
            let c = u16::try_from(c).map_err(|_| Problem(ApiError::internal()))?;
            let value = typed_text(value);
            if r == 0 {
                sheet
                    .write_string_with_format(r, c, value, &bold)
                    .map_err(internal)?;
            } else {
                sheet.write_string(r, c, value).map_err(internal)?;
            }
        }
    }
    workbook.save_to_buffer().map_err(internal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_cells_never_run_as_formulas_and_read_back_as_they_were() {
        let table = vec![
            vec!["Title".to_string(), ERROR_COLUMN.to_string()],
            vec![
                "=HYPERLINK(\"x\")".to_string(),
                "Barcode is empty".to_string(),
            ],
        ];
        let csv = String::from_utf8(csv_of(&table).unwrap()).unwrap();
        assert_eq!(
            csv,
            "Title,Error\n\"'=HYPERLINK(\"\"x\"\")\",Barcode is empty\n"
        );
        for (bytes, format) in [
            (csv.into_bytes(), Format::Csv),
            (xlsx_of(&table).unwrap(), Format::Xlsx),
        ] {
            let read = brandhub_sheet::read(&bytes, format, &Limits::default()).unwrap();
            assert_eq!(cell_text(read.rows()[0].cell(0)), table[1][0], "{format:?}");
        }
    }
}
