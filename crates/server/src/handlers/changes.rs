//! Sync by cursor: `GET /api/<resource>?changedSince=…` (docs/API.md, "Sync by cursor").
//! Checks the cursor (its binding, age and the caller's scope), then has the store read what
//! changed after it and renders the entries with the next cursor.

use super::{json, read::viewer};
use crate::AppState;
use crate::problem::{Answer, Problem};
use axum::http::StatusCode;
use axum::response::Response;
use brandhub_catalog::{Anchor, Resource};
use brandhub_problem::{ApiError, Code};
use brandhub_query::changes::{Cursor, Position, binding, check_request};
use brandhub_query::plan::plan_read;
use brandhub_query::request::ReadRequest;
use brandhub_store::{Caller, Timing, Versions};

/// Answers one call of a sync: `sent` is `changedSince`'s value.
pub(crate) async fn changes(
    state: &AppState,
    resource: &'static Resource,
    request: &ReadRequest,
    caller: &Caller,
    versions: &Versions,
    timing: &Timing,
    sent: &str,
) -> Answer<Response> {
    check_request(request)?;
    let viewer = viewer(caller);
    let plan = plan_read(resource, request, &viewer)?;
    let who = format!(
        "{}|{}",
        viewer.user_type().as_str(),
        viewer.anchor_ids(Anchor::Own).join(",")
    );
    let binding = binding(resource.name, &who, request);
    let scope = state.store.scope_fingerprint(&viewer, timing).await?;
    let now = state.store.clock().now_millis();
    let position = match Cursor::start(sent)? {
        None => Position::Full {
            horizon: 0,
            after: String::new(),
        },
        Some(cursor) => {
            cursor.check_binding(&binding)?;
            if cursor.expired(now) {
                return Err(Problem(
                    ApiError::new(
                        Code::CursorExpired,
                        "This cursor is older than the 30 days changes are kept: start again with changedSince=0.",
                    )
                    .with_field("changedSince"),
                ));
            }
            if cursor.scope != scope {
                return Err(Problem(
                    ApiError::new(
                        Code::CursorReset,
                        "What you may see has changed since this cursor was made: start again with changedSince=0.",
                    )
                    .with_field("changedSince"),
                ));
            }
            cursor.position
        }
    };
    let changes = state
        .store
        .read_changes(&plan, &viewer, position, versions, timing)
        .await?;
    let cursor = Cursor {
        position: changes.next,
        issued_millis: now,
        binding,
        scope,
    }
    .encode();
    let mut body = Vec::with_capacity(16 * 1024);
    brandhub_store::render::render_changes(
        &mut body,
        &plan.selection,
        &changes.data,
        &changes.entries,
        &cursor,
        changes.more,
    );
    Ok(json(StatusCode::OK, body))
}

/// 400 for `changedSince` where it has no meaning (a record by id, a count).
pub(crate) fn refuse_changed_since(request: &ReadRequest, what: &str) -> Answer<()> {
    match request.changed_since {
        None => Ok(()),
        Some(_) => Err(Problem(
            ApiError::new(
                Code::InvalidParameter,
                format!("changedSince syncs a list; {what} has none."),
            )
            .with_field("changedSince"),
        )),
    }
}
