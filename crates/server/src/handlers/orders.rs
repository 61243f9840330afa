//! The order endpoints (docs/API.md, "Orders: intake, lifecycle and stock"), for resources the catalog declares as moving through
//! a lifecycle: the intake (`POST /api/<resource>`), a lifecycle step (`PATCH
//! /api/<resource>/<id>`) and the lifecycle's many-record actions (`POST
//! /api/<resource>/<action>`, such as `dispatch`). The store's order engine decides; these
//! only read bodies, check grants and answer with the records as the caller sees them (money
//! fields hidden from warehouses, as in reads).

use super::read::{viewer, with_etag};
use super::write::{Created, answer, read_one};
use super::{MAX_QUERY_BODY, not_found, read_body, require_grant};
use crate::AppState;
use crate::problem::{Answer, Problem};
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use brandhub_catalog::Resource;
use brandhub_catalog::lifecycle::transition;
use brandhub_problem::{ApiError, Code, words};
use brandhub_query::conditions::{IdempotencyKey, IfMatch};
use brandhub_query::intake::parse_intake;
use brandhub_query::lifecycle::{Ask, read_ask};
use brandhub_query::plan::Viewer;
use brandhub_query::write::MAX_WRITE_RECORDS;
use brandhub_store::schema::FIRST_VERSION;
use brandhub_store::{Caller, Timing};
use serde_json::{Value, json};

/// The intake: 201 with `Location`, `ETag` and the new order with its lines; with an
/// `Idempotency-Key` used before for the same body, the first answer again. The caller's
/// grant for POST is checked by [`super::write::create`].
pub async fn intake(
    state: &AppState,
    resource: &'static Resource,
    viewer: &Viewer,
    timing: &Timing,
    bytes: &[u8],
    key: Option<IdempotencyKey>,
) -> Answer<Response> {
    let intake = parse_intake(resource, bytes, viewer)?;
    let (id, replay) = match state
        .store
        .intake_order(&intake, viewer, key.as_ref())
        .await?
    {
        Ok(id) => (id, None),
        Err(kept) => match kept.written.first() {
            Some((id, _)) => (id.clone(), Some(kept)),
            None => {
                tracing::error!(
                    "an idempotency key of an order intake was kept without the order it wrote"
                );
                return Err(Problem(ApiError::internal()));
            }
        },
    };
    let created = Created {
        status: StatusCode::CREATED,
        location: Some(format!("/api/{}/{id}", resource.name)),
        key: key.as_ref(),
        replay: replay.as_ref(),
    };
    created
        .answer(state, async {
            let page = read_one(state, resource, &id, viewer, timing)
                .await?
                .ok_or_else(|| not_found(resource, &id))?;
            // A new record's version is the first (an ETag may be older than the body it
            // comes with, never newer).
            Ok((page.body.to_vec(), Some(FIRST_VERSION)))
        })
        .await
}

/// The step a `PATCH` of a record with a lifecycle asks for (400 or 422 when it asks none).
pub fn read_step(bytes: &[u8]) -> Answer<Ask> {
    let object = one_object(bytes)?;
    Ok(read_ask(&object, None)?.1)
}

/// A lifecycle step on one record: 200 with the record as it now is. The store answers 404
/// for a record outside the caller's scope before it looks at the step.
pub async fn step(
    state: &AppState,
    resource: &'static Resource,
    id: &str,
    viewer: &Viewer,
    timing: &Timing,
    ask: &Ask,
    if_match: Option<IfMatch>,
) -> Answer<Response> {
    let version = state
        .store
        .order_step_if(id, ask, viewer, if_match.as_ref())
        .await?;
    let page = read_one(state, resource, id, viewer, timing)
        .await?
        .ok_or_else(|| not_found(resource, id))?;
    Ok(with_etag(
        answer(StatusCode::OK, page.body.to_vec(), None),
        Some(version),
    ))
}

fn one_object(bytes: &[u8]) -> Answer<serde_json::Map<String, Value>> {
    match serde_json::from_slice(bytes) {
        Ok(Value::Object(object)) => Ok(object),
        _ => Err(Problem(ApiError::new(
            Code::InvalidValue,
            words!(
                "The body must be one JSON object naming the new status and what it needs.",
                "Der Inhalt muss ein JSON-Objekt sein, das den neuen Status und das dafür Nötige nennt."
            ),
        ))),
    }
}

/// `POST /api/<resource>/<action>` ([`super::post_named`]): one lifecycle step (the
/// action's) on each element of an array of up to 1,000, each applied or refused on its own;
/// 200 with one outcome per element, in the body's order. A key needs PATCH on the
/// resource: each element changes a record.
pub async fn action(
    state: &AppState,
    resource: &'static Resource,
    action: &str,
    caller: &Caller,
    headers: &HeaderMap,
    body: Body,
) -> Answer<Response> {
    let step = resource
        .lifecycle
        .and_then(|l| l.actions.iter().find(|(n, _)| *n == action))
        .map(|(_, step)| *step);
    let Some(step) = step else {
        let mut error = ApiError::new(
            Code::MethodNotAllowed,
            format!(
                "/api/{}/{action} does not accept POST; it accepts {}.",
                resource.name,
                resource.methods(true).join(", ")
            ),
        );
        error.allow = Some(resource.methods(true).join(", "));
        return Err(Problem(error));
    };
    require_grant(caller, resource, "PATCH")?;
    let bytes = read_body(headers, body, MAX_QUERY_BODY).await?;
    let viewer = viewer(caller);
    let items = match serde_json::from_slice(&bytes) {
        // An element that is not an object with an id makes the body malformed, not a refusal
        // of one order.
        Ok(Value::Array(items))
            if !items.is_empty()
                && items.len() <= MAX_WRITE_RECORDS
                && items
                    .iter()
                    .all(|item| item.get("id").is_some_and(Value::is_string)) =>
        {
            items
        }
        _ => {
            return Err(Problem(ApiError::new(
                Code::InvalidValue,
                format!(
                    "The body must be a JSON array of 1 to {MAX_WRITE_RECORDS} objects, one {action} per {}, each with its id.",
                    resource.name
                ),
            )));
        }
    };
    let row = transition(step);
    // Each element read on its own; the readable ones are then taken in one transaction, each
    // applied or refused on its own.
    let mut results: Vec<Result<(String, String), Problem>> = Vec::with_capacity(items.len());
    let mut asks = Vec::new();
    let mut asked_at = Vec::new();
    for (index, object) in items.iter().filter_map(Value::as_object).enumerate() {
        let read = read_ask(object, row.to.first().copied()).map_err(Problem);
        results.push(match read {
            Ok((Some(id), ask)) if row.to.contains(&ask.status.as_str()) => {
                asks.push((id.clone(), ask));
                asked_at.push(index);
                Ok((id, String::new()))
            }
            Ok((Some(id), ask)) => Err(Problem(
                ApiError::new(
                    Code::InvalidTransition,
                    words!(
                        "The {action} of order '{id}' cannot ask for status '{}': a {action} ends in {}.", "Der Schritt {action} der Bestellung '{id}' kann nicht den Status '{}' verlangen: ein Schritt {action} endet in {}.",
                        ask.status,
                        row.to.join(" or ")
                    ),
                )
                .with_field("status"),
            )),
            Ok((None, _)) => Err(Problem(
                brandhub_query::write::validation_failed(vec![brandhub_problem::FieldError::new(
                    "id",
                    "is required: it names the order",
                )]),
            )),
            Err(error) => Err(error),
        });
    }
    let steps = state.store.order_steps(&asks, &viewer).await?;
    for (index, step) in asked_at.into_iter().zip(steps) {
        results[index] = match step {
            Ok(status) => Ok((asks_id(&results[index]), status)),
            Err(error) => Err(Problem::from(error)),
        };
    }
    let mut outcomes = Vec::with_capacity(items.len());
    let (mut applied, mut refused) = (0, 0);
    for (index, (item, result)) in items.iter().zip(results).enumerate() {
        let id = item.get("id").cloned().unwrap_or(Value::Null);
        outcomes.push(match result {
            Ok((_, status)) => {
                applied += 1;
                json!({"index": index, "id": id, "status": 200, "orderStatus": status})
            }
            Err(Problem(error)) => {
                refused += 1;
                let said = error.body_in(crate::problem::asked_language());
                json!({
                    "index": index,
                    "id": id,
                    "status": error.code.status(),
                    "code": error.code.as_str(),
                    "detail": said["detail"],
                    "errors": said.get("errors").cloned().unwrap_or_else(|| json!([])),
                })
            }
        });
    }
    let body = json!({"response": {
        "recordsSent": outcomes.len(),
        "applied": applied,
        "refused": refused,
        action: outcomes,
    }});
    let bytes = serde_json::to_vec(&body).map_err(|_| Problem(ApiError::internal()))?;
    Ok(answer(StatusCode::OK, bytes, None))
}

/// The order id of a result read so far.
fn asks_id(result: &Result<(String, String), Problem>) -> String {
    result
        .as_ref()
        .map(|(id, _)| id.clone())
        .unwrap_or_default()
}
