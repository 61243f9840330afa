//! The write endpoints (CONTRACT §9): `POST /api/<resource>`, `PATCH /api/<resource>/<id>`
//! and `DELETE /api/<resource>/<id>`, for the resources whose catalog entry accepts them. The
//! body is checked by `brandhub_query::write`; the key's grants must allow the method; the
//! record must be in the caller's scope (404 otherwise, as if it did not exist) and one the
//! caller may write (the catalog's write rules: 403, or 422 for what a write would set); a
//! new record must be one the caller will see, refused before anything is written. The answer
//! is the record as it now is, read back through the read pipeline.

use super::read::viewer;
use super::{MAX_QUERY_BODY, read_body, require_grant, resource};
use crate::AppState;
use crate::auth::Authenticated;
use crate::problem::{Answer, Problem};
use axum::Extension;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use brandhub_catalog::{Resource, WriteAction};
use brandhub_problem::{ApiError, Code, FieldError};
use brandhub_query::plan::{Viewer, plan_by_id};
use brandhub_query::request::ReadRequest;
use brandhub_query::write::{WriteMode, parse_write, parse_writes, validation_failed};
use brandhub_store::{Caller, RenderedPage, Timing};
use std::sync::Arc;

/// 405 for a method the resource does not accept, with the methods it does.
fn not_accepted(resource: &Resource, method: &str, with_id: bool) -> Problem {
    let allowed = resource.methods(with_id).join(", ");
    let mut error = ApiError::new(
        Code::MethodNotAllowed,
        format!(
            "{} does not accept {method}; it accepts {allowed}.",
            resource.name
        ),
    );
    error.allow = Some(allowed);
    Problem(error)
}

/// The record by id as the caller sees it, or `None` outside scope or missing.
pub(crate) async fn read_one(
    state: &AppState,
    resource: &'static Resource,
    id: &str,
    viewer: &Viewer,
    timing: &Timing,
) -> Answer<Option<RenderedPage>> {
    read_one_as(state, resource, id, &ReadRequest::default(), viewer, timing).await
}

/// [`read_one`] with the selection of a read request (`fields`, `exclude`).
pub(crate) async fn read_one_as(
    state: &AppState,
    resource: &'static Resource,
    id: &str,
    request: &ReadRequest,
    viewer: &Viewer,
    timing: &Timing,
) -> Answer<Option<RenderedPage>> {
    // The write just changed the tables: read the versions again so nothing cached before
    // the write is taken for the record as it now is.
    let versions = state.store.versions(timing).await?;
    let plan = plan_by_id(resource, id, request, viewer)?;
    let page = state
        .store
        .render_page(&plan, viewer, &versions, timing)
        .await?;
    Ok((page.records > 0).then_some(page))
}

/// A JSON answer with an optional `Location`.
pub(crate) fn answer(status: StatusCode, body: Vec<u8>, location: Option<String>) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(location) = location.and_then(|l| HeaderValue::from_str(&l).ok()) {
        headers.insert(header::LOCATION, location);
    }
    response
}

fn not_found(resource: &Resource, id: &str) -> Problem {
    Problem(ApiError::new(
        Code::NotFound,
        format!("There is no {} with id '{id}'.", resource.name),
    ))
}

/// 403 unless the key to revoke allows no more than the caller's own key: a key never
/// manages keys wider than itself (a `brand:GET` key cannot revoke a `*:*` one).
async fn require_no_wider_key(state: &AppState, caller: &Caller, key_id: &str) -> Answer<()> {
    let Some(grants) = state.store.key_grants(key_id).await? else {
        return Ok(());
    };
    if grants.iter().all(|g| g.is_within(&caller.grants)) {
        return Ok(());
    }
    let show = |grants: &[brandhub_store::Grant]| {
        grants
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    };
    Err(Problem(ApiError::new(
        Code::Forbidden,
        format!(
            "This key ({}) may not revoke a key that allows more than it does ({}).",
            show(&caller.grants),
            show(&grants)
        ),
    )))
}

/// 403 unless the catalog's write rules let the caller `action` this record (which it sees).
async fn require_authority(
    state: &AppState,
    resource: &'static Resource,
    id: &str,
    viewer: &Viewer,
    action: WriteAction,
) -> Answer<()> {
    if state.store.may(resource, id, viewer, action).await? {
        return Ok(());
    }
    Err(Problem(ApiError::new(
        Code::Forbidden,
        format!(
            "A {} user may not {} this {} (see who writes what in the API reference).",
            viewer.user_type().as_str(),
            action.as_str(),
            resource.name
        ),
    )))
}

/// `POST /api/<resource>`: creates a record; 201 with `Location` and the new record. Files
/// are created by uploading them ([`super::files::upload`]).
pub async fn create(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Authenticated { caller, .. }: Authenticated,
    Extension(timing): Extension<Arc<Timing>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Answer<Response> {
    let resource = resource(&name)?;
    if resource.uploads {
        return super::files::upload(&state, &caller, &timing, query.as_deref(), &headers, body)
            .await;
    }
    if resource.writes.create.is_empty() {
        return Err(not_accepted(resource, "POST", false));
    }
    require_grant(&caller, resource, "POST")?;
    let bytes = read_body(&headers, body, MAX_QUERY_BODY).await?;
    let viewer = viewer(&caller);
    if resource.writes.generic {
        return create_generic(&state, resource, &viewer, &timing, query.as_deref(), &bytes).await;
    }
    let values = parse_write(resource, WriteMode::Create, &bytes, &viewer)?;
    let (id, secret) = match resource.name {
        "user" => (state.store.create_user_from(&values, &viewer).await?, None),
        "apiKey" => {
            let values = values.checked()?;
            let owner = values
                .text("fk_user")
                .unwrap_or_else(|| caller.user_id.clone());
            let key = state
                .store
                .create_key(
                    &owner,
                    values.text("name").as_deref(),
                    values.list("grants").map(Vec::as_slice),
                    Some((&viewer, caller.grants.as_slice())),
                )
                .await
                .map_err(|error| match error.code {
                    Code::NotFound => Problem(validation_failed(vec![FieldError {
                        field: "fk_user".into(),
                        message: format!("no user has id '{owner}'"),
                        index: None,
                    }])),
                    _ => Problem(error),
                })?;
            (key.id, Some(key.secret))
        }
        _ => return Err(not_accepted(resource, "POST", false)),
    };
    let page = read_one(&state, resource, &id, &viewer, &timing)
        .await?
        .ok_or_else(|| not_found(resource, &id))?;
    let body = match secret {
        // The secret is shown in this answer only: added to the record, never stored.
        Some(secret) => {
            let mut envelope: serde_json::Value =
                serde_json::from_slice(&page.body).map_err(|_| Problem(ApiError::internal()))?;
            envelope["response"][resource.name][0]["secret"] = serde_json::Value::String(secret);
            serde_json::to_vec(&envelope).map_err(|_| Problem(ApiError::internal()))?
        }
        None => page.body.to_vec(),
    };
    Ok(answer(
        StatusCode::CREATED,
        body,
        Some(format!("/api/{}/{id}", resource.name)),
    ))
}

/// `?upsert=true` (or `false`, the default): the one parameter a create takes.
fn upsert_parameter(query: Option<&str>) -> Answer<bool> {
    let mut upsert = false;
    for pair in query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        upsert = match pair {
            "upsert=true" => true,
            "upsert=false" => false,
            _ => {
                let name = pair.split('=').next().unwrap_or_default();
                return Err(Problem(
                    ApiError::new(
                        Code::InvalidParameter,
                        format!(
                            "A create takes one parameter, upsert=true or upsert=false; '{pair}' is not it."
                        ),
                    )
                    .with_field(name),
                ));
            }
        };
    }
    Ok(upsert)
}

/// A create through the generic write pipeline: one record (201 with `Location`, or 200 when
/// an upsert changed an existing one) or an array of them (201 when anything was created,
/// the envelope with every record in the body's order).
async fn create_generic(
    state: &AppState,
    resource: &'static Resource,
    viewer: &Viewer,
    timing: &Timing,
    query: Option<&str>,
    bytes: &[u8],
) -> Answer<Response> {
    let upsert = upsert_parameter(query)?;
    let (items, array) = parse_writes(resource, bytes, viewer)?;
    let written = state
        .store
        .create_records(resource, &items, viewer, upsert, array)
        .await?;
    let status = if written.iter().any(|w| w.created) {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let mut envelope: Option<serde_json::Value> = None;
    let mut records = Vec::with_capacity(written.len());
    for record in &written {
        let page = read_one(state, resource, &record.id, viewer, timing)
            .await?
            .ok_or_else(|| not_found(resource, &record.id))?;
        let mut body: serde_json::Value =
            serde_json::from_slice(&page.body).map_err(|_| Problem(ApiError::internal()))?;
        if let Some(serde_json::Value::Array(mut found)) = body["response"]
            .get_mut(resource.name)
            .map(serde_json::Value::take)
        {
            records.append(&mut found);
        }
        envelope.get_or_insert(body);
    }
    let mut envelope = envelope.ok_or_else(|| Problem(ApiError::internal()))?;
    let count = records.len();
    envelope["response"][resource.name] = serde_json::Value::Array(records);
    envelope["response"]["recordsSent"] = count.into();
    envelope["response"]["recordsFound"] = count.into();
    let body = serde_json::to_vec(&envelope).map_err(|_| Problem(ApiError::internal()))?;
    let location = match written.as_slice() {
        [one] if !array && one.created => Some(format!("/api/{}/{}", resource.name, one.id)),
        _ => None,
    };
    Ok(answer(status, body, location))
}

/// `PATCH /api/<resource>/<id>`: changes a record in scope; 200 with the record as it now is.
pub async fn update(
    State(state): State<AppState>,
    Path((name, id)): Path<(String, String)>,
    Authenticated { caller, .. }: Authenticated,
    Extension(timing): Extension<Arc<Timing>>,
    headers: HeaderMap,
    body: Body,
) -> Answer<Response> {
    let resource = resource(&name)?;
    if resource.writes.update.is_empty() {
        return Err(not_accepted(resource, "PATCH", true));
    }
    require_grant(&caller, resource, "PATCH")?;
    let bytes = read_body(&headers, body, MAX_QUERY_BODY).await?;
    let viewer = viewer(&caller);
    if read_one(&state, resource, &id, &viewer, &timing)
        .await?
        .is_none()
    {
        return Err(not_found(resource, &id));
    }
    let values = parse_write(resource, WriteMode::Update, &bytes, &viewer)?;
    if resource.writes.generic {
        state
            .store
            .update_record(resource, &id, &values, &viewer)
            .await?;
        let page = read_one(&state, resource, &id, &viewer, &timing)
            .await?
            .ok_or_else(|| not_found(resource, &id))?;
        return Ok(answer(StatusCode::OK, page.body.to_vec(), None));
    }
    let updated = match resource.name {
        "user" => state.store.update_user(&id, &values, &viewer).await?,
        _ => return Err(not_accepted(resource, "PATCH", true)),
    };
    if updated.is_none() {
        return Err(not_found(resource, &id));
    }
    let page = read_one(&state, resource, &id, &viewer, &timing)
        .await?
        .ok_or_else(|| not_found(resource, &id))?;
    Ok(answer(StatusCode::OK, page.body.to_vec(), None))
}

/// `DELETE /api/<resource>/<id>`: removes (for keys: revokes) a record in scope; 204.
pub async fn delete(
    State(state): State<AppState>,
    Path((name, id)): Path<(String, String)>,
    Authenticated { caller, .. }: Authenticated,
    Extension(timing): Extension<Arc<Timing>>,
) -> Answer<Response> {
    let resource = resource(&name)?;
    if !resource.writes.delete {
        return Err(not_accepted(resource, "DELETE", true));
    }
    require_grant(&caller, resource, "DELETE")?;
    let viewer = viewer(&caller);
    if read_one(&state, resource, &id, &viewer, &timing)
        .await?
        .is_none()
    {
        return Err(not_found(resource, &id));
    }
    require_authority(&state, resource, &id, &viewer, WriteAction::Write).await?;
    if resource.writes.generic {
        state.store.delete_record(resource, &id, &viewer).await?;
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    match resource.name {
        "apiKey" => {
            require_no_wider_key(&state, &caller, &id).await?;
            state.store.revoke_key(&id).await?
        }
        _ => return Err(not_accepted(resource, "DELETE", true)),
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}
