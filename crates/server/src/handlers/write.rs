//! The write endpoints (docs/API.md, "Writes: master data and catalogue"): `POST /api/<resource>`, `PATCH /api/<resource>/<id>`
//! and `DELETE /api/<resource>/<id>`, for the resources whose catalog entry accepts them. The
//! body is checked by `brandhub_query::write`; the key's grants must allow the method; the
//! record must be in the caller's scope (404 otherwise, as if it did not exist) and one the
//! caller may write (the catalog's write rules: 403, or 422 for what a write would set); a
//! new record must be one the caller will see, refused before anything is written. The answer
//! is the record as it now is, read back through the read pipeline.

use super::read::{viewer, with_etag};
use super::{MAX_QUERY_BODY, not_found, read_body, require_grant, resource};
use crate::AppState;
use crate::auth::WriteCaller;
use crate::problem::{Answer, Problem};
use axum::Extension;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use brandhub_catalog::{BulkSet, Resource};
use brandhub_problem::{ApiError, Code};
use brandhub_query::bulk::parse_bulk;
use brandhub_query::conditions::{IdempotencyKey, IfMatch, etag};
use brandhub_query::plan::{ReadPlan, Viewer, plan_by_id, plan_read};
use brandhub_query::request::ReadRequest;
use brandhub_query::write::{WriteMode, parse_write, parse_writes};
use brandhub_store::records::{Writer, Written};
use brandhub_store::schema::FIRST_VERSION;
use brandhub_store::{Caller, KeptAnswer, RenderedPage, Timing};
use std::collections::HashMap;
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

/// Whether the caller sees the record by id (scope, docs/API.md, "Scope: who sees what"): its id alone read, fresh
/// (see [`read_one_as`]). What a PATCH or DELETE checks first, so that a record outside
/// scope is a 404 before anything else is looked at.
pub(crate) async fn visible(
    state: &AppState,
    resource: &'static Resource,
    id: &str,
    viewer: &Viewer,
    timing: &Timing,
) -> Answer<bool> {
    let request = ReadRequest {
        fields: Some(vec!["id".to_string()]),
        ..ReadRequest::default()
    };
    Ok(read_one_as(state, resource, id, &request, viewer, timing)
        .await?
        .is_some())
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
    // Read fresh, past the page cache: the record as it now is, after a write or just
    // before one (`Store::render_fresh`).
    let plan = plan_by_id(resource, id, request, viewer)?;
    let page = state.store.render_fresh(&plan, viewer, timing).await?;
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

/// The `If-Match` precondition of a `PATCH` or `DELETE`, if any (400 when malformed).
fn if_match(headers: &HeaderMap) -> Answer<Option<IfMatch>> {
    let Some(value) = headers.get(header::IF_MATCH) else {
        return Ok(None);
    };
    let text = value.to_str().map_err(|_| {
        Problem(
            ApiError::new(
                Code::InvalidParameter,
                "If-Match must be * or entity tags in quotes, as ETag sends them.",
            )
            .with_field("If-Match"),
        )
    })?;
    Ok(Some(IfMatch::parse(text)?))
}

/// `POST /api/<resource>`: creates records; 201 with `Location` and the new record. Files
/// are created by uploading them ([`super::files::upload`]), orders by an intake
/// ([`super::orders::intake`]); everything else goes through the write pipeline.
pub async fn create(
    State(state): State<AppState>,
    Path(name): Path<String>,
    write_caller: WriteCaller,
    Extension(timing): Extension<Arc<Timing>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Answer<Response> {
    // A file, an order and an idempotency key's answer are kept apart from the statement
    // that commits the records: their caller is checked first (`WriteCaller`).
    let apart = resource(&name).is_ok_and(|r| r.uploads || r.lifecycle.is_some())
        || headers.contains_key(IDEMPOTENCY_KEY);
    if apart {
        let caller = write_caller.checked(&state, &timing).await?;
        let query = query.as_deref();
        return create_as(
            &state,
            &name,
            caller,
            &timing,
            query,
            &headers,
            Sent::Stream(body),
        )
        .await;
    }
    let bytes = read_body(&headers, body, MAX_QUERY_BODY).await;
    write_caller
        .run(&state, &timing, |caller| {
            let sent = Sent::Read(bytes.clone());
            create_as(
                &state,
                &name,
                caller,
                &timing,
                query.as_deref(),
                &headers,
                sent,
            )
        })
        .await
}

/// A request's body: still to be read, or read already, for a write that may be made twice
/// ([`WriteCaller::run`]). A body read badly is refused where it would have been read.
enum Sent {
    Stream(Body),
    Read(Answer<bytes::Bytes>),
}

impl Sent {
    /// The body's bytes, up to `limit`.
    async fn bytes(self, headers: &HeaderMap, limit: usize) -> Answer<bytes::Bytes> {
        match self {
            Sent::Stream(body) => read_body(headers, body, limit).await,
            Sent::Read(read) => read,
        }
    }

    /// The body as a stream (a file's upload).
    fn into_body(self) -> Answer<Body> {
        match self {
            Sent::Stream(body) => Ok(body),
            Sent::Read(read) => read.map(Body::from),
        }
    }
}

/// [`create`] as `caller`.
async fn create_as(
    state: &AppState,
    name: &str,
    caller: Arc<Caller>,
    timing: &Arc<Timing>,
    query: Option<&str>,
    headers: &HeaderMap,
    body: Sent,
) -> Answer<Response> {
    let resource = resource(name)?;
    if resource.uploads {
        let body = body.into_body()?;
        return super::files::upload(state, &caller, timing, query, headers, body).await;
    }
    if resource.writes.create.is_empty() {
        return Err(not_accepted(resource, "POST", false));
    }
    require_grant(&caller, resource, "POST")?;
    let bytes = body.bytes(headers, MAX_QUERY_BODY).await?;
    let viewer = viewer(&caller);
    let key = idempotency_key(headers, &caller, resource, query, &bytes)?;
    if resource.lifecycle.is_some() {
        return super::orders::intake(state, resource, &viewer, timing, &bytes, key).await;
    }
    if key.is_some() && !resource.writes.replayable() {
        // The answer shows a secret that is never kept, so it could not be given again.
        return Err(Problem(
            ApiError::new(
                Code::InvalidParameter,
                format!(
                    "Idempotency-Key is not accepted on {} creates, whose answer shows a secret only once; send the request without it.",
                    resource.name
                ),
            )
            .with_field("Idempotency-Key"),
        ));
    }
    let writer = Writer::with_key(&viewer, &caller.key_id, &caller.grants);
    create_records(state, resource, &writer, timing, query, &bytes, key).await
}

/// The header a create's idempotency key comes in (docs/API.md, "Writes: concurrency and idempotency").
const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// The header that marks an answer given again for an idempotency key.
const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";

/// The create's `Idempotency-Key`, if any, with the fingerprint of the request (resource,
/// parameters, body): per user, so one user's keys never meet another's.
fn idempotency_key(
    headers: &HeaderMap,
    caller: &Caller,
    resource: &Resource,
    query: Option<&str>,
    bytes: &[u8],
) -> Answer<Option<IdempotencyKey>> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY) else {
        return Ok(None);
    };
    let key = value.to_str().unwrap_or("\u{0}");
    let request: [&[u8]; 3] = [
        resource.name.as_bytes(),
        query.unwrap_or_default().as_bytes(),
        bytes,
    ];
    Ok(Some(IdempotencyKey::new(&caller.user_id, key, &request)?))
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

/// A create through the write pipeline: one record (201 with `Location`, or 200 when an
/// upsert changed an existing one) or an array of them (201 when anything was created, the
/// envelope with every record in the body's order). A new record's secret, where the
/// resource has one, is added to the answer: it is shown this once.
async fn create_records(
    state: &AppState,
    resource: &'static Resource,
    writer: &Writer<'_>,
    timing: &Timing,
    query: Option<&str>,
    bytes: &[u8],
    key: Option<IdempotencyKey>,
) -> Answer<Response> {
    let viewer = writer.viewer;
    let upsert = upsert_parameter(query)?;
    let (items, array) = parse_writes(resource, bytes, viewer)?;
    // The answer is the records written as a read of them shows them; one new record's is
    // read by the statement that writes it, where it can be.
    let template = plan_read(resource, &ReadRequest::default(), viewer)?;
    let mut read_by_write = None;
    let (written, replay): (Vec<Written>, Option<KeptAnswer>) = match &key {
        None => {
            let (written, page) = state
                .store
                .create_records_answered(
                    resource,
                    &items,
                    writer,
                    upsert,
                    array,
                    (!array && !upsert).then_some((&template, timing)),
                )
                .await?;
            read_by_write = page;
            (written, None)
        }
        Some(key) => match state
            .store
            .create_records_once(resource, &items, writer, upsert, array, key)
            .await?
        {
            Ok(written) => (written, None),
            Err(kept) => (
                kept.written
                    .iter()
                    .map(|(id, created)| Written {
                        id: id.clone(),
                        created: *created,
                        secret: None,
                    })
                    .collect(),
                Some(kept),
            ),
        },
    };
    let status = if written.iter().any(|w| w.created) {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let location = match written.as_slice() {
        [one] if one.created && !array => Some(format!("/api/{}/{}", resource.name, one.id)),
        _ => None,
    };
    let first = Created {
        status,
        location,
        key: key.as_ref(),
        replay: replay.as_ref(),
    };
    first
        .answer(state, async {
            // One record written: its ETag, read before the record (see `read::by_id`); a
            // new record's is the first (an ETag may be older than the body it comes with,
            // never newer).
            let version = match written.as_slice() {
                [one] if !array && one.created => Some(FIRST_VERSION),
                [one] if !array => state.store.version_of(resource, &one.id).await?,
                _ => None,
            };
            let body =
                render_written(state, &template, &written, read_by_write, viewer, timing).await?;
            Ok((body, version))
        })
        .await
}

/// A create's answer, kept for its `Idempotency-Key` or given again for it (docs/API.md, "Writes: concurrency and idempotency"):
/// the one place that decides what a create with a key answers, for the write pipeline's
/// creates and for an order intake.
pub(crate) struct Created<'a> {
    /// 201, or 200 for an upsert that created nothing.
    pub status: StatusCode,
    /// The new record's address, for one record created.
    pub location: Option<String>,
    /// The request's key, if it came with one.
    pub key: Option<&'a IdempotencyKey>,
    /// What the first request with the key kept, when this one is its retry.
    pub replay: Option<&'a KeptAnswer>,
}

impl Created<'_> {
    /// The answer: the kept body when there is one; else `render`'s body and version
    /// (`ETag`), kept for the key of a first request, marked replayed for a retry that came
    /// before the first answer was kept.
    pub(crate) async fn answer(
        self,
        state: &AppState,
        render: impl std::future::Future<Output = Answer<(Vec<u8>, Option<i64>)>>,
    ) -> Answer<Response> {
        if let Some(KeptAnswer {
            body: Some(body),
            etag,
            ..
        }) = self.replay
        {
            let mut response = answer(self.status, body.clone(), self.location);
            if let Some(etag) = etag.as_deref().and_then(|e| HeaderValue::from_str(e).ok()) {
                response.headers_mut().insert(header::ETAG, etag);
            }
            return Ok(replayed(response));
        }
        let (body, version) = render.await?;
        let response = |body| with_etag(answer(self.status, body, self.location.clone()), version);
        match (self.key, self.replay) {
            (Some(key), None) => {
                let etag = version.map(etag);
                state.store.keep_answer(key, &body, etag.as_deref()).await?;
                Ok(response(body))
            }
            // Replayed before the first answer was kept: the same records, rendered again.
            (Some(_), Some(_)) => Ok(replayed(response(body))),
            _ => Ok(response(body)),
        }
    }
}

/// Marks an answer given again for an idempotency key.
fn replayed(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    response
}

/// The records a create wrote, as the caller sees them, in the body's order, in one
/// envelope: one read of all of them (`template`, the resource's read as the caller sees it,
/// narrowed to their ids: one statement, plus one per expanded relation), or the page the
/// write's own statement read (`read_by_write`), each new record's secret added where the
/// resource has one.
async fn render_written(
    state: &AppState,
    template: &ReadPlan,
    written: &[Written],
    read_by_write: Option<RenderedPage>,
    viewer: &Viewer,
    timing: &Timing,
) -> Answer<Vec<u8>> {
    let internal = |_| Problem(ApiError::internal());
    let resource = template.resource;
    let page = match read_by_write {
        Some(page) => page,
        None => {
            let mut ids: Vec<String> = written.iter().map(|w| w.id.clone()).collect();
            ids.sort();
            ids.dedup();
            let plan = template.narrowed_to(&ids);
            state.store.render_fresh(&plan, viewer, timing).await?
        }
    };
    let mut envelope: serde_json::Value = serde_json::from_slice(&page.body).map_err(internal)?;
    let mut found: HashMap<String, serde_json::Value> = match envelope["response"]
        .get_mut(resource.name)
        .map(serde_json::Value::take)
    {
        Some(serde_json::Value::Array(records)) => records
            .into_iter()
            .filter_map(|r| Some((r["id"].as_str()?.to_string(), r)))
            .collect(),
        _ => HashMap::new(),
    };
    let mut records = Vec::with_capacity(written.len());
    for one in written {
        let mut record = found
            .get(&one.id)
            .cloned()
            .ok_or_else(|| not_found(resource, &one.id))?;
        if let (Some(secret), Some(shown)) = (&one.secret, resource.writes.secret) {
            record[shown.shown_as] = serde_json::Value::String(secret.clone());
        }
        records.push(record);
    }
    found.clear();
    let count = records.len();
    envelope["response"][resource.name] = serde_json::Value::Array(records);
    envelope["response"]["recordsSent"] = count.into();
    envelope["response"]["recordsFound"] = count.into();
    serde_json::to_vec(&envelope).map_err(internal)
}

/// `PATCH /api/<resource>/<id>`: changes a record in scope; 200 with the record as it now is.
/// A record that moves through a lifecycle changes by a step ([`super::orders::step`]).
pub async fn update(
    State(state): State<AppState>,
    Path((name, id)): Path<(String, String)>,
    write_caller: WriteCaller,
    Extension(timing): Extension<Arc<Timing>>,
    headers: HeaderMap,
    body: Body,
) -> Answer<Response> {
    let bytes = read_body(&headers, body, MAX_QUERY_BODY).await;
    if resource(&name).is_ok_and(|r| r.lifecycle.is_some()) {
        // A step goes through the order flow, which checks its caller first (`WriteCaller`).
        let caller = write_caller.checked(&state, &timing).await?;
        return update_as(&state, &name, &id, caller, &timing, &headers, bytes).await;
    }
    write_caller
        .run(&state, &timing, |caller| {
            update_as(&state, &name, &id, caller, &timing, &headers, bytes.clone())
        })
        .await
}

/// [`update`] as `caller`, with the body as it was read.
async fn update_as(
    state: &AppState,
    name: &str,
    id: &str,
    caller: Arc<Caller>,
    timing: &Timing,
    headers: &HeaderMap,
    bytes: Answer<bytes::Bytes>,
) -> Answer<Response> {
    let resource = resource(name)?;
    if resource.writes.update.is_empty() && resource.lifecycle.is_none() {
        return Err(not_accepted(resource, "PATCH", true));
    }
    require_grant(&caller, resource, "PATCH")?;
    let bytes = bytes?;
    let viewer = viewer(&caller);
    // The store answers 404 for a record outside scope before it looks at the values or the
    // step; a request refused before it gets there asks the same question first.
    if resource.lifecycle.is_some() {
        let parsed = if_match(headers).and_then(|if_match| {
            let ask = super::orders::read_step(&bytes)?;
            Ok((if_match, ask))
        });
        let (if_match, ask) =
            out_of_scope_first(state, resource, id, &viewer, timing, parsed).await?;
        return super::orders::step(state, resource, id, &viewer, timing, &ask, if_match).await;
    }
    let parsed = if_match(headers).and_then(|if_match| {
        let values = parse_write(resource, WriteMode::Update, &bytes, &viewer)?;
        Ok((if_match, values))
    });
    let (if_match, values) =
        out_of_scope_first(state, resource, id, &viewer, timing, parsed).await?;
    let writer = Writer::with_key(&viewer, &caller.key_id, &caller.grants);
    // The answer is the record as a read by id shows it; the store reads it with the write
    // where it can.
    let answer_plan = plan_by_id(resource, id, &ReadRequest::default(), &viewer)?;
    let (version, page) = state
        .store
        .update_record_answered(
            id,
            &values,
            &writer,
            if_match.as_ref(),
            &answer_plan,
            timing,
        )
        .await?;
    let page = page.ok_or_else(|| not_found(resource, id))?;
    Ok(with_etag(
        answer(StatusCode::OK, page.body.to_vec(), None),
        Some(version),
    ))
}

/// `POST /api/<resource>/<field>` for a field the catalog sets in bulk
/// ([`brandhub_catalog::BulkSet`]): up to 1,000 elements, each naming a record and giving the
/// field's value, written in one transaction or not at all; 200 with the records as they now
/// are, in the body's order. A key needs PATCH on the resource: each element changes a
/// record.
pub async fn set_in_bulk(
    state: &AppState,
    resource: &'static Resource,
    bulk: BulkSet,
    caller: &Caller,
    timing: &Timing,
    headers: &HeaderMap,
    body: Body,
) -> Answer<Response> {
    require_grant(caller, resource, "PATCH")?;
    let bytes = read_body(headers, body, MAX_QUERY_BODY).await?;
    let viewer = viewer(caller);
    let elements = parse_bulk(resource, bulk, &bytes, &viewer)?;
    let writer = Writer::with_key(&viewer, &caller.key_id, &caller.grants);
    let ids = state
        .store
        .set_in_bulk(resource, &elements, &writer)
        .await?;
    let written: Vec<Written> = ids
        .into_iter()
        .map(|id| Written {
            id,
            created: false,
            secret: None,
        })
        .collect();
    let template = plan_read(resource, &ReadRequest::default(), &viewer)?;
    let body = render_written(state, &template, &written, None, &viewer, timing).await?;
    Ok(answer(StatusCode::OK, body, None))
}

/// What a `PATCH` or `DELETE` read of its request, or, when that was refused, 404 for a
/// record the caller does not see (docs/API.md, "Scope: who sees what": whether a record exists outside scope is never
/// told, by a 400 or a 422 either). A request read well goes on to the store, whose write
/// answers 404 itself before it looks at anything else, so it needs no read of its own.
async fn out_of_scope_first<T>(
    state: &AppState,
    resource: &'static Resource,
    id: &str,
    viewer: &Viewer,
    timing: &Timing,
    read: Answer<T>,
) -> Answer<T> {
    match read {
        Ok(read) => Ok(read),
        Err(_) if !visible(state, resource, id, viewer, timing).await? => {
            Err(not_found(resource, id))
        }
        Err(problem) => Err(problem),
    }
}

/// `DELETE /api/<resource>/<id>`: removes a record in scope (or, where the catalog says so,
/// revokes it: keys); 204.
pub async fn delete(
    State(state): State<AppState>,
    Path((name, id)): Path<(String, String)>,
    write_caller: WriteCaller,
    Extension(timing): Extension<Arc<Timing>>,
    headers: HeaderMap,
) -> Answer<Response> {
    write_caller
        .run(&state, &timing, |caller| {
            delete_as(&state, &name, &id, caller, &timing, &headers)
        })
        .await
}

/// [`delete`] as `caller`.
async fn delete_as(
    state: &AppState,
    name: &str,
    id: &str,
    caller: Arc<Caller>,
    timing: &Timing,
    headers: &HeaderMap,
) -> Answer<Response> {
    let resource = resource(name)?;
    if !resource.writes.delete {
        return Err(not_accepted(resource, "DELETE", true));
    }
    require_grant(&caller, resource, "DELETE")?;
    let viewer = viewer(&caller);
    let if_match =
        out_of_scope_first(state, resource, id, &viewer, timing, if_match(headers)).await?;
    let writer = Writer::with_key(&viewer, &caller.key_id, &caller.grants);
    state
        .store
        .delete_record_if(resource, id, &writer, if_match.as_ref())
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
