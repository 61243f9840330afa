//! The file endpoints (CONTRACT §8): `POST /api/file` (a multipart upload: checked, streamed to
//! the file store before the answer, recorded as `pending` and queued for the workers in one
//! transaction), `GET /api/file/<id>/content` (the uploaded bytes) and
//! `GET /api/file/template/<fileType>` (an `.xlsx` with the type's columns).

use super::read::viewer;
use super::write::{answer, read_one, read_one_as};
use super::{DRAIN_LIMIT, drain, require_grant, resource};
use crate::AppState;
use crate::auth::Authenticated;
use crate::problem::{Answer, Problem};
use axum::Extension;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use brandhub_catalog::{Cell, Layout, Record};
use brandhub_filestore::{PutError, StoreError};
use brandhub_ingest::authority::Target;
use brandhub_problem::{ApiError, Code};
use brandhub_query::judge::Verdict;
use brandhub_query::plan::Viewer;
use brandhub_query::request::ReadRequest;
use brandhub_sheet::{FileType, Format};
use brandhub_store::ids::{looks_like_id, new_id, now_timestamp};
use brandhub_store::{Caller, Timing};
use chrono::NaiveDate;
use std::sync::Arc;
use std::time::Duration;

/// The longest `?wait=` accepted (CONTRACT §8); a longer one, or anything but a number of
/// seconds from 0 to it, is 400.
pub const MAX_WAIT: Duration = Duration::from_secs(60);
/// How often a waiting upload looks at its file's status besides being woken by a worker of
/// this process (a worker of another process cannot wake it).
const WAIT_POLL: Duration = Duration::from_millis(200);
/// Room for the multipart framing around a file of the largest accepted size.
const FRAMING: u64 = 64 * 1024;
/// The longest file name accepted.
const MAX_FILE_NAME: usize = 255;

fn invalid(message: impl Into<String>) -> Problem {
    Problem(ApiError::new(Code::InvalidUpload, message))
}

fn too_large(limit: u64) -> Problem {
    Problem(ApiError::new(
        Code::PayloadTooLarge,
        format!("The file is larger than the upload limit of {limit} bytes."),
    ))
}

/// What an upload's part name says: the file type and its arguments, ids in upper case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartName {
    pub file_type: FileType,
    pub brand: String,
    pub warehouse: Option<String>,
    pub host: Option<String>,
    pub start: Option<NaiveDate>,
    pub end: Option<NaiveDate>,
}

/// A `DD/MM/YYYY` date of a price part name.
fn parse_day(text: &str, field: &str) -> Result<NaiveDate, ApiError> {
    let parts: Vec<&str> = text.split('/').collect();
    let digits = |s: &str, lengths: std::ops::RangeInclusive<usize>| {
        lengths.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())
    };
    let date = match parts.as_slice() {
        [d, m, y] if digits(d, 1..=2) && digits(m, 1..=2) && digits(y, 4..=4) => {
            match (y.parse(), m.parse(), d.parse()) {
                (Ok(y), Ok(m), Ok(d)) => NaiveDate::from_ymd_opt(y, m, d),
                _ => None,
            }
        }
        _ => None,
    };
    date.ok_or_else(|| {
        ApiError::new(
            Code::InvalidUpload,
            format!("The {field} '{text}' of the part name is not a valid date DD/MM/YYYY."),
        )
        .with_field(field)
    })
}

/// Parses a part name (`<fileType>,<arg>,...`, CONTRACT §8); every failure names the argument.
pub fn parse_part_name(name: &str) -> Result<PartName, ApiError> {
    let parts: Vec<&str> = name.split(',').map(str::trim).collect();
    let kind = parts[0];
    let file_type = FileType::named(kind).ok_or_else(|| {
        let forms: Vec<&str> = FileType::ALL
            .into_iter()
            .map(FileType::part_usage)
            .collect();
        ApiError::new(
            Code::InvalidUpload,
            format!(
                "The part name '{name}' does not start with a file type; name the part {}.",
                forms.join(" or ")
            ),
        )
        .with_field("fileType")
    })?;
    let args = &parts[1..];
    let wrong = |field: &str| {
        ApiError::new(
            Code::InvalidUpload,
            format!(
                "The part name '{name}' does not fit a {} file: name the part {}.",
                file_type.as_str(),
                file_type.part_usage()
            ),
        )
        .with_field(field)
    };
    let brand = match args.first() {
        Some(brand) if !brand.is_empty() => brand.to_ascii_uppercase(),
        _ => return Err(wrong("brand")),
    };
    let mut part = PartName {
        file_type,
        brand,
        warehouse: None,
        host: None,
        start: None,
        end: None,
    };
    match file_type {
        FileType::Product | FileType::Image | FileType::OrderDispatch => {
            if args.len() != 1 {
                return Err(wrong("fileType"));
            }
        }
        FileType::Stock => match args {
            [_, warehouse] if !warehouse.is_empty() => {
                part.warehouse = Some(warehouse.to_ascii_uppercase());
            }
            _ => return Err(wrong("warehouse")),
        },
        FileType::Price => {
            let (host, start, end) = match args {
                [_, host, start] => (host, start, ""),
                [_, host, start, end] => (host, start, *end),
                [_] | [_, _] => {
                    return Err(wrong(if args.len() == 1 { "host" } else { "startDate" }));
                }
                _ => return Err(wrong("endDate")),
            };
            if host.is_empty() {
                return Err(wrong("host"));
            }
            part.host = Some(host.to_ascii_uppercase());
            let start = parse_day(start, "startDate")?;
            part.start = Some(start);
            // A trailing comma without an end date is a permanent markdown.
            if !end.is_empty() {
                let end_day = parse_day(end, "endDate")?;
                if end_day < start {
                    return Err(ApiError::new(
                        Code::InvalidUpload,
                        format!("The endDate '{end}' is before the startDate of the part name."),
                    )
                    .with_field("endDate"));
                }
                part.end = Some(end_day);
            }
        }
    }
    Ok(part)
}

/// `?wait=<seconds>`: how long to wait for processing (0: answer at once).
fn parse_wait(query: Option<&str>) -> Answer<Duration> {
    let mut wait = Duration::ZERO;
    for pair in query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        if name != "wait" {
            return Err(Problem(
                ApiError::new(
                    Code::InvalidParameter,
                    format!(
                        "An upload takes one parameter, wait (seconds to wait for processing), not '{name}'."
                    ),
                )
                .with_field(name),
            ));
        }
        // Checked before it becomes a Duration, which cannot hold NaN, infinities or 1e308.
        wait = value
            .parse::<f64>()
            .ok()
            .filter(|s| (0.0..=MAX_WAIT.as_secs_f64()).contains(s))
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .ok_or_else(|| {
                Problem(
                    ApiError::new(
                        Code::InvalidParameter,
                        format!("wait is a number of seconds from 0 to 60, not '{value}'."),
                    )
                    .with_field("wait"),
                )
            })?;
    }
    Ok(wait)
}

/// Whether the caller sees the record (scope, CONTRACT §5); malformed ids are never seen.
async fn visible(
    state: &AppState,
    resource_name: &str,
    id: &str,
    viewer: &Viewer,
    timing: &Timing,
) -> Answer<bool> {
    if !looks_like_id(id) {
        return Ok(false);
    }
    let request = ReadRequest {
        fields: Some(vec!["id".to_string()]),
        ..ReadRequest::default()
    };
    let resource = resource(resource_name)?;
    let page = read_one_as(state, resource, id, &request, viewer, timing).await?;
    Ok(page.is_some())
}

fn missing(what: &str, id: &str, field: &str) -> Problem {
    Problem(
        ApiError::new(
            Code::NotFound,
            format!("There is no {what} with id '{id}' (the part name's {field})."),
        )
        .with_field(field),
    )
}

/// The checks of the part's arguments (CONTRACT §8): the brand in the caller's scope, the
/// warehouse in scope and of the brand's company, the host existing; then the right to
/// write what the file writes (403 for a target the caller sees but may not write).
async fn check_part(
    state: &AppState,
    viewer: &Viewer,
    part: &PartName,
    timing: &Timing,
) -> Answer<()> {
    if !visible(state, "brand", &part.brand, viewer, timing).await? {
        return Err(missing("brand", &part.brand, "brand"));
    }
    if let Some(warehouse) = &part.warehouse {
        if !visible(state, "warehouse", warehouse, viewer, timing).await? {
            return Err(missing("warehouse", warehouse, "warehouse"));
        }
        let brand_company = state
            .store
            .text_field_of("brand", "fk_company", &part.brand)
            .await?
            .flatten();
        let warehouse_company = state
            .store
            .text_field_of("warehouse", "fk_company", warehouse)
            .await?
            .flatten();
        if brand_company != warehouse_company {
            return Err(Problem(
                ApiError::new(
                    Code::InvalidUpload,
                    format!(
                        "The warehouse '{warehouse}' belongs to another company than the brand '{}'.",
                        part.brand
                    ),
                )
                .with_field("warehouse"),
            ));
        }
    }
    if let Some(host) = &part.host {
        let exists = looks_like_id(host)
            && state
                .store
                .text_field_of("host", "id", host)
                .await?
                .is_some();
        if !exists {
            return Err(missing("host", host, "host"));
        }
    }
    let target = Target {
        file_type: part.file_type,
        brand: &part.brand,
        warehouse: part.warehouse.as_deref(),
        host: part.host.as_deref(),
    };
    if target.verdict(&mut &state.store, viewer).await? == Verdict::No {
        let field = if part.warehouse.is_some() {
            "warehouse"
        } else {
            "brand"
        };
        let mut reason = target.refusal(viewer);
        if let Some(first) = reason.get(..1) {
            reason.replace_range(..1, &first.to_uppercase());
        }
        return Err(Problem(
            ApiError::new(Code::Forbidden, format!("{reason}.")).with_field(field),
        ));
    }
    Ok(())
}

/// The last segment of a file name as a browser may send it (`C:\fakepath\stock.xlsx`).
fn base_name(name: &str) -> &str {
    name.rsplit(['/', '\\']).next().unwrap_or(name).trim()
}

/// The new file record: `pending`, with what the part name says.
fn new_file_record(
    id: &str,
    caller: &Caller,
    part: &PartName,
    file_name: &str,
    format: Format,
) -> Record {
    let file = brandhub_catalog::catalog()
        .resource("file")
        .expect("file is a resource");
    let l = Layout::of(file);
    let mut record = Record::empty(file);
    let mut set = |path: &str, cell: Cell| record.cells[l.cell(path)] = cell;
    set("id", Cell::Text(id.to_string()));
    set("fk_brand", Cell::Text(part.brand.clone()));
    set("fk_user", Cell::Text(caller.user_id.clone()));
    set("fileType", Cell::Text(part.file_type.as_str().to_string()));
    set("fileName", Cell::Text(file_name.to_string()));
    set("createdDate", Cell::Text(now_timestamp()));
    set("status", Cell::Text("pending".to_string()));
    set("detail.fileMime", Cell::Text(format.mime().to_string()));
    set("detail.error", Cell::Text(String::new()));
    for path in [
        "detail.rowsRead",
        "detail.rowsApplied",
        "detail.rowsSkipped",
    ] {
        set(path, Cell::Integer(0));
    }
    if let Some(warehouse) = &part.warehouse {
        set("detail.warehouse", Cell::Text(warehouse.clone()));
    }
    if let Some(host) = &part.host {
        set("detail.host", Cell::Text(host.clone()));
    }
    let precise = |day: NaiveDate| format!("{}T00:00:00.000Z", day.format("%Y-%m-%d"));
    if let Some(start) = part.start {
        set("detail.startDate", Cell::Text(precise(start)));
        let end = part
            .end
            .map_or_else(|| brandhub_catalog::NO_END_DATE.to_string(), precise);
        set("detail.endDate", Cell::Text(end));
    }
    record
}

/// Reads and discards what is left of a multipart body (bounded), so that an HTTP/1.1 client
/// still sending reads the answer instead of a broken connection.
async fn drain_parts(multipart: &mut multer::Multipart<'_>) {
    let mut seen = 0;
    while let Ok(Some(mut field)) = multipart.next_field().await {
        while let Ok(Some(chunk)) = field.chunk().await {
            seen += chunk.len();
            if seen > DRAIN_LIMIT {
                return;
            }
        }
    }
}

/// Waits until the file is processed or failed, or `wait` has passed.
async fn wait_until_done(state: &AppState, id: &str, wait: Duration) -> Answer<()> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let finished = state.signals.finished();
        tokio::pin!(finished);
        finished.as_mut().enable();
        let status = state.store.file_status(id).await?;
        if matches!(status.as_deref(), None | Some("processed") | Some("failed")) {
            return Ok(());
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Ok(());
        }
        let nap = WAIT_POLL.min(deadline - now);
        tokio::select! {
            _ = &mut finished => {}
            _ = tokio::time::sleep(nap) => {}
        }
    }
}

/// `POST /api/file`: checks the upload, stores its bytes, records the file (`pending`) with its
/// job, and answers 201 with the record (after processing, with `?wait=`).
pub async fn upload(
    state: &AppState,
    caller: &Caller,
    timing: &Timing,
    query: Option<&str>,
    headers: &HeaderMap,
    body: Body,
) -> Answer<Response> {
    let file = resource("file")?;
    require_grant(caller, file, "POST")?;
    let wait = parse_wait(query)?;
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let boundary = multer::parse_boundary(content_type).map_err(|_| {
        Problem(ApiError::new(
            Code::UnsupportedMediaType,
            format!(
                "An upload is multipart/form-data (with a boundary) holding one file part, not '{content_type}'."
            ),
        ))
    })?;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > state.max_upload.saturating_add(FRAMING)) {
        drain(body, DRAIN_LIMIT).await;
        return Err(too_large(state.max_upload));
    }
    let mut multipart = multer::Multipart::new(body.into_data_stream(), boundary);
    let outcome = receive(state, caller, timing, &mut multipart, wait).await;
    if outcome.is_err() {
        // A refused upload may still be arriving: read it away, so the client gets the answer.
        drain_parts(&mut multipart).await;
    }
    outcome
}

/// The part of [`upload`] that reads the multipart body.
async fn receive(
    state: &AppState,
    caller: &Caller,
    timing: &Timing,
    multipart: &mut multer::Multipart<'_>,
    wait: Duration,
) -> Answer<Response> {
    let file = resource("file")?;
    let field = match multipart.next_field().await {
        Ok(Some(field)) => field,
        Ok(None) => {
            return Err(invalid(
                "The upload has no file part: send one part named <fileType>,<arguments> with a filename.",
            ));
        }
        Err(error) => {
            return Err(invalid(format!(
                "The multipart body cannot be read: {error}."
            )));
        }
    };
    let part_name = field.name().unwrap_or_default().trim().to_string();
    let file_name = field
        .file_name()
        .map(base_name)
        .unwrap_or_default()
        .to_string();
    if part_name.is_empty() {
        return Err(invalid(
            "The file part has no name: name it <fileType>,<arguments>, such as product,<brand>.",
        ));
    }
    if file_name.is_empty() {
        return Err(invalid(format!(
            "The part '{part_name}' has no filename: the file part needs one (its extension tells the format)."
        )));
    }
    if file_name.chars().count() > MAX_FILE_NAME {
        return Err(invalid(format!(
            "The filename is longer than {MAX_FILE_NAME} characters."
        )));
    }
    let part = parse_part_name(&part_name)?;
    let viewer = viewer(caller);
    check_part(state, &viewer, &part, timing).await?;
    let format = Format::from_file_name(&file_name).ok_or_else(|| {
        Problem(ApiError::new(
            Code::UnsupportedMediaType,
            format!(
                "'{file_name}' is not an accepted spreadsheet: send .xlsx, .xlsm, .xls, .ods or .csv."
            ),
        ))
    })?;

    // The bytes are stored before the answer (CONTRACT §8), under the new file's id.
    let id = new_id();
    match state.files.put_stream(&id, field, state.max_upload).await {
        Ok(_) => {}
        Err(PutError::TooLarge { limit }) => return Err(too_large(limit)),
        Err(PutError::Body(error)) => {
            return Err(invalid(format!("The upload broke off: {error}.")));
        }
        Err(PutError::Store(error)) => {
            tracing::error!(%error, "an upload could not be stored");
            return Err(Problem(ApiError::internal()));
        }
    }
    let extra = match multipart.next_field().await {
        Ok(None) => None,
        Ok(Some(other)) => Some(format!(
            "The upload has more than one part ('{}' after '{part_name}'): send exactly one file part.",
            other.name().unwrap_or_default()
        )),
        Err(error) => Some(format!(
            "The multipart body cannot be read after the file part: {error}."
        )),
    };
    if let Some(message) = extra {
        if let Err(error) = state.files.delete(&id).await {
            tracing::warn!(%error, file = %id, "a refused upload's bytes were not removed");
        }
        return Err(invalid(message));
    }
    let record = new_file_record(&id, caller, &part, &file_name, format);
    if let Err(error) = state.store.create_file(record).await {
        if let Err(error) = state.files.delete(&id).await {
            tracing::warn!(%error, file = %id, "an unrecorded upload's bytes were not removed");
        }
        return Err(error.into());
    }
    if !wait.is_zero() {
        state.signals.notify_queued();
        wait_until_done(state, &id, wait).await?;
    }
    let page = read_one(state, file, &id, &viewer, timing)
        .await?
        .ok_or_else(|| {
            Problem(ApiError::new(
                Code::NotFound,
                format!("There is no file with id '{id}'."),
            ))
        })?;
    // Without a wait the answer shows the file as queued; only then is a worker woken.
    if wait.is_zero() {
        state.signals.notify_queued();
    }
    Ok(answer(
        StatusCode::CREATED,
        page.body.to_vec(),
        Some(format!("/api/file/{id}")),
    ))
}

/// `attachment` with the file name, plain where it is safe ASCII and RFC 5987-encoded too.
fn content_disposition(name: &str) -> HeaderValue {
    let plain: String = name
        .chars()
        .map(|c| {
            if (c.is_ascii_graphic() && c != '"' && c != '\\') || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let encoded: String = name
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    HeaderValue::from_str(&format!(
        "attachment; filename=\"{plain}\"; filename*=UTF-8''{encoded}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("attachment"))
}

/// `GET /api/file/<id>/content`: the uploaded bytes, streamed, with the format's content type.
async fn content(state: &AppState, caller: &Caller, timing: &Timing, id: &str) -> Answer<Response> {
    let file = resource("file")?;
    require_grant(caller, file, "GET")?;
    let not_found = || {
        Problem(ApiError::new(
            Code::NotFound,
            format!("There is no file with id '{id}'."),
        ))
    };
    if !visible(state, "file", id, &viewer(caller), timing).await? {
        return Err(not_found());
    }
    let id = id.to_ascii_uppercase();
    let name = state
        .store
        .text_field_of("file", "fileName", &id)
        .await?
        .flatten()
        .unwrap_or_else(|| "file".to_string());
    let (size, stream) = match state.files.get(&id).await {
        Ok(found) => found,
        Err(StoreError::NotFound { .. }) => {
            return Err(Problem(ApiError::new(
                Code::NotFound,
                format!(
                    "The bytes of file '{id}' are not stored (only uploaded files have content)."
                ),
            )));
        }
        Err(error) => {
            tracing::error!(%error, file = %id, "a stored file could not be read");
            return Err(Problem(ApiError::internal()));
        }
    };
    let mime = Format::from_file_name(&name).map_or("application/octet-stream", |f| f.mime());
    let mut response = Body::from_stream(stream).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(mime));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
    headers.insert(header::CONTENT_DISPOSITION, content_disposition(&name));
    Ok(response)
}

/// `GET /api/file/template/<fileType>`: the `.xlsx` template of a file type.
async fn template(caller: &Caller, name: &str) -> Answer<Response> {
    let file = resource("file")?;
    require_grant(caller, file, "GET")?;
    let file_type = FileType::named(name).ok_or_else(|| {
        let names: Vec<&str> = FileType::ALL.into_iter().map(FileType::as_str).collect();
        Problem(ApiError::new(
            Code::NotFound,
            format!(
                "There is no file type '{name}'. File types: {}.",
                names.join(", ")
            ),
        ))
    })?;
    let bytes = brandhub_sheet::template(file_type);
    let mut response = (StatusCode::OK, bytes).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(Format::Xlsx.mime()),
    );
    headers.insert(
        header::CONTENT_DISPOSITION,
        content_disposition(&format!("{}-template.xlsx", file_type.as_str())),
    );
    Ok(response)
}

/// `GET /api/<resource>/<a>/<b>`: the file content and template paths; any other is 404.
pub async fn nested(
    State(state): State<AppState>,
    Path((name, first, second)): Path<(String, String, String)>,
    Authenticated { caller, .. }: Authenticated,
    Extension(timing): Extension<Arc<Timing>>,
) -> Answer<Response> {
    let uploads = brandhub_catalog::catalog()
        .resource(&name)
        .is_some_and(|r| r.uploads);
    match (uploads, first.as_str(), second.as_str()) {
        (true, "template", file_type) => template(&caller, file_type).await,
        (true, id, "content") => content(&state, &caller, &timing, id).await,
        _ => Err(Problem(ApiError::new(
            Code::NotFound,
            format!(
                "No API path matches '/api/{name}/{first}/{second}'. Files have /api/file/<id>/content and /api/file/template/<fileType>."
            ),
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BRAND: &str = "0190aaaaaaaaaaaaaaaaaaaaaaaaaaaa";

    fn code_and_field(name: &str) -> (Code, Option<String>) {
        let error = parse_part_name(name).unwrap_err();
        (error.code, error.field)
    }

    #[test]
    fn part_names_carry_their_arguments() {
        let part = parse_part_name(&format!("product,{BRAND}")).unwrap();
        assert_eq!(part.file_type, FileType::Product);
        assert_eq!(part.brand, BRAND.to_ascii_uppercase());
        let part = parse_part_name(&format!("stock,{BRAND},w1")).unwrap();
        assert_eq!(part.warehouse.as_deref(), Some("W1"));
        let part = parse_part_name(&format!("price,{BRAND},h1,01/02/2024,29/02/2024")).unwrap();
        assert_eq!(part.start, NaiveDate::from_ymd_opt(2024, 2, 1));
        assert_eq!(part.end, NaiveDate::from_ymd_opt(2024, 2, 29));
        let part = parse_part_name(&format!("price,{BRAND},h1,01/02/2024,")).unwrap();
        assert_eq!(part.end, None, "a trailing comma is a permanent markdown");
        let part = parse_part_name(&format!("orderdispatch,{BRAND}")).unwrap();
        assert_eq!(part.file_type, FileType::OrderDispatch);
    }

    #[test]
    fn bad_part_names_name_the_argument() {
        for (name, field) in [
            ("images,x".to_string(), "fileType"),
            (format!("product,{BRAND},extra"), "fileType"),
            ("product,".to_string(), "brand"),
            (format!("stock,{BRAND}"), "warehouse"),
            (format!("price,{BRAND}"), "host"),
            (format!("price,{BRAND},h"), "startDate"),
            (format!("price,{BRAND},h,31/02/2024"), "startDate"),
            (format!("price,{BRAND},h,2024-02-01"), "startDate"),
            (format!("price,{BRAND},h,01/02/2024,1/1/24"), "endDate"),
            (format!("price,{BRAND},h,01/02/2024,31/01/2024"), "endDate"),
            (
                format!("price,{BRAND},h,01/02/2024,02/02/2024,x"),
                "endDate",
            ),
        ] {
            assert_eq!(
                code_and_field(&name),
                (Code::InvalidUpload, Some(field.to_string())),
                "{name}"
            );
        }
    }

    #[test]
    fn waits_are_bounded_numbers() {
        assert_eq!(parse_wait(None).unwrap(), Duration::ZERO);
        assert_eq!(
            parse_wait(Some("wait=2.5")).unwrap(),
            Duration::from_millis(2500)
        );
        assert_eq!(parse_wait(Some("wait=60")).unwrap(), MAX_WAIT);
        assert_eq!(parse_wait(Some("wait=0")).unwrap(), Duration::ZERO);
        assert_eq!(parse_wait(Some("wait=-0")).unwrap(), Duration::ZERO);
        for bad in [
            "wait=-1",
            "wait=soon",
            "wait=NaN",
            "wait=nan",
            "wait=inf",
            "wait=-inf",
            "wait=infinity",
            "wait=1e308",
            "wait=1e400",
            "wait=60.001",
            "wait=600",
            "wait=-0.0001",
            "wait=",
            "other=1",
        ] {
            assert_eq!(
                parse_wait(Some(bad)).unwrap_err().0.code,
                Code::InvalidParameter,
                "{bad}"
            );
        }
    }

    #[test]
    fn file_names_lose_their_folders_and_headers_stay_safe() {
        assert_eq!(base_name("C:\\fakepath\\stock.xlsx"), "stock.xlsx");
        assert_eq!(base_name("a/b/prices.csv"), "prices.csv");
        let header = content_disposition("prix été \"1\".xlsx");
        let text = header.to_str().unwrap();
        assert!(
            text.starts_with("attachment; filename=\"prix _t_ _1_.xlsx\""),
            "{text}"
        );
        assert!(
            text.contains("filename*=UTF-8''prix%20%C3%A9t%C3%A9%20%221%22.xlsx"),
            "{text}"
        );
    }
}
