//! The file endpoints (docs/API.md, "Files: uploads and processing"): `POST /api/file` ([`upload`]: a multipart upload,
//! checked, streamed to the file store before the answer, recorded as `pending` and queued for
//! the workers in one transaction), `GET /api/file/<id>/content` ([`content`]: the uploaded
//! bytes), `GET /api/file/<id>/report` ([`report`]: the skipped rows with their reasons) and `GET /api/file/template/<fileType>` ([`template`]: an `.xlsx` with the type's
//! columns). What the part name and `?wait=` say is parsed next to the file types
//! (`brandhub_sheet::parse_part_name`); recording and queueing is the ingest side's
//! (`brandhub_ingest::queue`).

mod content;
mod report;
mod template;
mod upload;

pub use upload::upload;

use crate::AppState;
use crate::auth::Authenticated;
use crate::problem::{Answer, Problem};
use axum::Extension;
use axum::extract::{Path, State};
use axum::response::Response;
use brandhub_catalog::{Res, catalog};
use brandhub_problem::{ApiError, Code, words};
use brandhub_query::plan::Viewer;
use brandhub_store::Timing;
use brandhub_store::ids::looks_like_id;
use std::sync::Arc;

/// The 404 of a file that is not there, or that the caller may not see.
fn no_file(id: &str) -> Problem {
    Problem(ApiError::new(
        Code::NotFound,
        words!(
            "There is no file with id '{id}'.",
            "Es gibt keine Datei mit der Kennung '{id}'."
        ),
    ))
}

/// Whether the caller sees the record (scope, docs/API.md, "Scope: who sees what"); malformed ids are never seen.
async fn visible(
    state: &AppState,
    res: Res,
    id: &str,
    viewer: &Viewer,
    timing: &Timing,
) -> Answer<bool> {
    if !looks_like_id(id) {
        return Ok(false);
    }
    super::write::visible(state, catalog().get(res), id, viewer, timing).await
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
        (true, "template", file_type) => template::template(&caller, file_type).await,
        (true, id, "content") => content::content(&state, &caller, &timing, id).await,
        (true, id, "report") => report::report(&state, &caller, &timing, id).await,
        _ => Err(Problem(ApiError::new(
            Code::NotFound,
            format!(
                "No API path matches '/api/{name}/{first}/{second}'. Files have /api/file/<id>/content, /api/file/<id>/report and /api/file/template/<fileType>."
            ),
        ))),
    }
}
