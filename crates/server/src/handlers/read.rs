//! The read endpoints: lists, one record by id, counts, and complex queries (docs/API.md, "Parameters of reads" and "Complex queries").
//! Each runs parse → plan → store → render.

use super::{MAX_QUERY_BODY, export, json, read_body, require_grant, resource};
use crate::AppState;
use crate::auth::Authenticated;
use crate::problem::Answer;
use axum::Extension;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use brandhub_catalog::Resource;
use brandhub_query::conditions::etag;
use brandhub_query::parse::parse_request;
use brandhub_query::plan::{Viewer, plan_by_id, plan_count, plan_read};
use brandhub_query::request::{Format, ReadRequest};
use brandhub_store::{Caller, RenderedPage, Timing};
use bytes::Bytes;
use std::sync::Arc;

/// The view of the catalog and the data that a caller has.
pub fn viewer(caller: &Caller) -> Viewer {
    caller.viewer()
}

/// Authorises a read and parses its URL and body into a request.
async fn prepare(
    name: &str,
    caller: &Caller,
    query: Option<String>,
    headers: &HeaderMap,
    body: Body,
) -> Answer<(&'static Resource, ReadRequest)> {
    let resource = resource(name)?;
    require_grant(caller, resource, "GET")?;
    let bytes = read_body(headers, body, MAX_QUERY_BODY).await?;
    let request = parse_request(query.as_deref().unwrap_or_default(), &bytes)?;
    Ok((resource, request))
}

/// A rendered page as the answer, without copying the cached bytes.
fn page_answer(page: RenderedPage) -> Response {
    let mut response = Body::from(Bytes::from_owner(ArcBytes(page.body))).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Lets a shared rendered page back a response body.
struct ArcBytes(Arc<Vec<u8>>);

impl AsRef<[u8]> for ArcBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// `GET /api/<resource>` (with an optional JSON body) and `POST /api/<resource>/query`.
pub async fn list(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Authenticated { caller, versions }: Authenticated,
    Extension(timing): Extension<Arc<Timing>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Answer<Response> {
    let (resource, request) = prepare(&name, &caller, query, &headers, body).await?;
    if let Some(sent) = &request.changed_since {
        return super::changes::changes(
            &state, resource, &request, &caller, &versions, &timing, sent,
        )
        .await;
    }
    let format = export::requested_format(&request, &headers);
    if format != Format::Json {
        return export::export(&state, resource, &request, &caller, &timing, format).await;
    }
    let viewer = viewer(&caller);
    let plan = plan_read(resource, &request, &viewer)?;
    let page = state
        .store
        .render_page(&plan, &viewer, &versions, &timing)
        .await?;
    Ok(page_answer(page))
}

/// `GET /api/<resource>/<id>`: one record in the envelope, or 404.
pub async fn by_id(
    State(state): State<AppState>,
    Path((name, id)): Path<(String, String)>,
    Authenticated { caller, versions }: Authenticated,
    Extension(timing): Extension<Arc<Timing>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Answer<Response> {
    let (resource, request) = prepare(&name, &caller, query, &headers, body).await?;
    export::only_json(&request)?;
    super::changes::refuse_changed_since(&request, "a record by id")?;
    let viewer = viewer(&caller);
    let plan = plan_by_id(resource, &id, &request, &viewer)?;
    // The record's version first, then the table versions again and the record: its ETag
    // may be older than the body (a later If-Match fails, the client reads again), never newer.
    let version = state.store.version_of(resource, &id).await?;
    let versions = match version {
        Some(_) => Arc::new(state.store.versions(&timing).await?),
        None => versions,
    };
    let page = state
        .store
        .render_page(&plan, &viewer, &versions, &timing)
        .await?;
    if page.records == 0 {
        return Err(super::not_found(resource, &id));
    }
    Ok(with_etag(page_answer(page), version))
}

/// Adds the `ETag` of a record at `version` (docs/API.md, "Writes: concurrency and idempotency") to an answer.
pub(crate) fn with_etag(mut response: Response, version: Option<i64>) -> Response {
    if let Some(value) = version.and_then(|v| HeaderValue::from_str(&etag(v)).ok()) {
        response.headers_mut().insert(header::ETAG, value);
    }
    response
}

/// `GET /api/<resource>/count` and `POST /api/<resource>/count`: `{"count": n}`.
pub async fn count(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Authenticated { caller, versions }: Authenticated,
    Extension(timing): Extension<Arc<Timing>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Answer<Response> {
    let (resource, request) = prepare(&name, &caller, query, &headers, body).await?;
    export::only_json(&request)?;
    super::changes::refuse_changed_since(&request, "a count")?;
    let viewer = viewer(&caller);
    // Everything the plan depends on: callers with the same view key see the same records.
    let identity = format!(
        "{}\u{1f}{}\u{1f}{request:?}",
        viewer.cache_key(),
        resource.name
    );
    let count = state
        .store
        .count_request(
            identity,
            || plan_count(resource, &request, &viewer),
            &versions,
            &timing,
        )
        .await?;
    Ok(json(
        StatusCode::OK,
        format!("{{\"count\":{count}}}").into_bytes(),
    ))
}
