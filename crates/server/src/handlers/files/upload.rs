//! `POST /api/file`: an upload checked (part name, scope, the right to write what the file
//! writes, format, size), its bytes stored before the answer, and the file recorded and queued
//! by the ingest side; with `?wait=` the answer comes once a worker has processed it.

use super::{no_file, visible};
use crate::AppState;
use crate::handlers::read::viewer;
use crate::handlers::write::{answer, read_one};
use crate::handlers::{DRAIN_LIMIT, drain, require_grant};
use crate::problem::{Answer, Problem};
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use brandhub_catalog::FileStatus;
use brandhub_catalog::Res;
use brandhub_catalog::catalog;
use brandhub_filestore::PutError;
use brandhub_ingest::authority::{Target, label_of};
use brandhub_ingest::queue::{self, Upload};
use brandhub_problem::{ApiError, Code, Words, words};
use brandhub_query::judge::Verdict;
use brandhub_query::plan::Viewer;
use brandhub_sheet::{ArgumentError, Format, PartName, parse_part_name, parse_wait};
use brandhub_store::ids::{looks_like_id, new_id};
use brandhub_store::{Caller, Timing};
use std::time::Duration;

/// How often a waiting upload looks at its file's status besides being woken by a worker of
/// this process (a worker of another process cannot wake it).
const WAIT_POLL: Duration = Duration::from_millis(200);
/// Room for the multipart framing around a file of the largest accepted size.
const FRAMING: u64 = 64 * 1024;
/// The longest file name accepted.
const MAX_FILE_NAME: usize = 255;

fn invalid(message: impl Into<Words>) -> Problem {
    Problem(ApiError::new(Code::InvalidUpload, message))
}

fn too_large(limit: u64) -> Problem {
    Problem(ApiError::new(
        Code::PayloadTooLarge,
        words!(
            "The file is larger than the upload limit of {limit} bytes.",
            "Die Datei ist größer als die Upload-Grenze von {limit} Bytes."
        ),
    ))
}

/// A refused argument as its problem: `code` says whether it was the part name (an invalid
/// upload) or a query parameter.
fn refused(code: Code, error: ArgumentError) -> Problem {
    Problem(ApiError::new(code, error.message).with_field(&error.field))
}

fn missing(what: &str, id: &str, field: &str) -> Problem {
    Problem(
        ApiError::new(
            Code::NotFound,
            words!(
                "There is no {what} with id '{id}' (the part name's {field}).",
                "Es gibt kein {what} mit der Kennung '{id}' ({field} im Namen des Teils)."
            ),
        )
        .with_field(field),
    )
}

/// The checks of the part's arguments (docs/API.md, "Files: uploads and processing"): the brand in the caller's scope, the
/// warehouse in scope and of the brand's company; then the right to write what the file
/// writes (403 for a target the caller sees but may not write); then the host, one the caller
/// may name in a price (`Target::unseen`: 404 as for a host that does not exist).
async fn check_part(
    state: &AppState,
    viewer: &Viewer,
    part: &PartName,
    timing: &Timing,
) -> Answer<()> {
    if !visible(state, Res::Brand, &part.brand, viewer, timing).await? {
        return Err(missing("brand", &part.brand, "brand"));
    }
    if let Some(warehouse) = &part.warehouse {
        if !visible(state, Res::Warehouse, warehouse, viewer, timing).await? {
            return Err(missing("warehouse", warehouse, "warehouse"));
        }
        let brand_company = state
            .store
            .text_field_of(Res::Brand, "fk_company", &part.brand)
            .await?
            .flatten();
        let warehouse_company = state
            .store
            .text_field_of(Res::Warehouse, "fk_company", warehouse)
            .await?
            .flatten();
        if brand_company != warehouse_company {
            return Err(Problem(
                ApiError::new(
                    Code::InvalidUpload,
                    words!(
                        "The warehouse {} belongs to another company than the brand {}.",
                        "Das Lager {} gehört zu einer anderen Firma als die Marke {}.",
                        label(state, Res::Warehouse, warehouse).await?,
                        label(state, Res::Brand, &part.brand).await?
                    ),
                )
                .with_field("warehouse"),
            ));
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
        let (resource, id) = target.refused_record();
        let label = label(state, resource, id).await?;
        let reason = target.refusal(viewer, &label).as_sentence();
        return Err(Problem(
            ApiError::new(Code::Forbidden, reason).with_field(field),
        ));
    }
    // A price file's host as a JSON price write judges it: one the caller sees, else the
    // answer for a host that does not exist (after the right to write prices, which no host
    // changes, so neither answer tells whether a host exists).
    if let Some(host) = &part.host
        && !looks_like_id(host)
    {
        return Err(missing("host", host, "host"));
    }
    if let Some((resource, id)) = target.unseen(&mut &state.store, viewer).await? {
        return Err(missing(resource, id, resource));
    }
    Ok(())
}

/// A record of `resource` (with a name and a code) as a message names it ([`label_of`]).
async fn label(state: &AppState, resource: Res, id: &str) -> Answer<String> {
    let mut text = Vec::with_capacity(2);
    for path in ["name", "code"] {
        text.push(
            state
                .store
                .text_field_of(resource, path, id)
                .await?
                .flatten()
                .unwrap_or_default(),
        );
    }
    Ok(label_of(&text[0], &text[1], id))
}

/// The last segment of a file name as a browser may send it (`C:\fakepath\stock.xlsx`).
fn base_name(name: &str) -> &str {
    name.rsplit(['/', '\\']).next().unwrap_or(name).trim()
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
        if status.is_none_or(FileStatus::is_final) {
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
    let file = catalog().get(Res::File);
    require_grant(caller, file, "POST")?;
    let wait = parse_wait(query).map_err(|e| refused(Code::InvalidParameter, e))?;
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let boundary = multer::parse_boundary(content_type).map_err(|_| {
        Problem(ApiError::new(
            Code::UnsupportedMediaType,
            words!(
                "An upload is multipart/form-data (with a boundary) holding one file part, not '{content_type}'.", "Ein Upload ist multipart/form-data (mit boundary) mit einem Dateiteil, nicht '{content_type}'."
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
    let file = catalog().get(Res::File);
    let field = match multipart.next_field().await {
        Ok(Some(field)) => field,
        Ok(None) => {
            return Err(invalid(words!(
                "The upload has no file part: send one part named <fileType>,<arguments> with a filename.",
                "Der Upload hat keinen Dateiteil: einen Teil namens <fileType>,<arguments> mit Dateinamen senden."
            )));
        }
        Err(error) => {
            return Err(invalid(words!(
                "The multipart body cannot be read: {error}.",
                "Der multipart-Inhalt kann nicht gelesen werden: {error}."
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
        return Err(invalid(words!(
            "The file part has no name: name it <fileType>,<arguments>, such as product,<brand>.",
            "Der Dateiteil hat keinen Namen: <fileType>,<arguments> nennen, etwa product,<brand>."
        )));
    }
    if file_name.is_empty() {
        return Err(invalid(words!(
            "The part '{part_name}' has no filename: the file part needs one (its extension tells the format).",
            "Der Teil '{part_name}' hat keinen Dateinamen: der Dateiteil braucht einen (seine Endung nennt das Format)."
        )));
    }
    if file_name.chars().count() > MAX_FILE_NAME {
        return Err(invalid(words!(
            "The filename is longer than {MAX_FILE_NAME} characters.",
            "Der Dateiname ist länger als {MAX_FILE_NAME} Zeichen."
        )));
    }
    let part = parse_part_name(&part_name).map_err(|e| refused(Code::InvalidUpload, e))?;
    let viewer = viewer(caller);
    check_part(state, &viewer, &part, timing).await?;
    let format = Format::from_file_name(&file_name).ok_or_else(|| {
        Problem(ApiError::new(
            Code::UnsupportedMediaType,
            words!(
                "'{file_name}' is not an accepted spreadsheet: send .xlsx, .xlsm, .xls, .ods or .csv.", "'{file_name}' ist keine angenommene Tabelle: .xlsx, .xlsm, .xls, .ods oder .csv senden."
            ),
        ))
    })?;

    // The bytes are stored before the answer (docs/API.md, "Files: uploads and processing"), under the new file's id.
    let id = new_id();
    match state.files.put_stream(&id, field, state.max_upload).await {
        Ok(_) => {}
        Err(PutError::TooLarge { limit }) => return Err(too_large(limit)),
        Err(PutError::Body(error)) => {
            return Err(invalid(words!(
                "The upload broke off: {error}.",
                "Der Upload brach ab: {error}."
            )));
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
    let upload = Upload {
        id: &id,
        user: &caller.user_id,
        part: &part,
        file_name: &file_name,
        format,
    };
    if let Err(error) = queue::enqueue(&state.store, &upload).await {
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
        .ok_or_else(|| no_file(&id))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_lose_their_folders() {
        assert_eq!(base_name("C:\\fakepath\\stock.xlsx"), "stock.xlsx");
        assert_eq!(base_name("a/b/prices.csv"), "prices.csv");
    }

    #[test]
    fn refusals_keep_their_argument() {
        let error = parse_part_name("stock,b1").unwrap_err();
        let problem = refused(Code::InvalidUpload, error);
        assert_eq!(problem.0.code, Code::InvalidUpload);
        assert_eq!(problem.0.field.as_deref(), Some("warehouse"));
        let problem = refused(
            Code::InvalidParameter,
            parse_wait(Some("wait=x")).unwrap_err(),
        );
        assert_eq!(problem.0.field.as_deref(), Some("wait"));
    }
}
