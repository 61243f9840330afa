//! Request handlers: thin functions that take typed inputs from extractors, run the pipeline's
//! stages and answer. What every handler needs (finding the resource, checking the grant,
//! reading the body, writing JSON) lives here once.

pub mod changes;
pub mod export;
pub mod fallback;
pub mod files;
pub mod openapi;
pub mod orders;
pub mod read;
pub mod session;
pub mod write;

use crate::problem::{Answer, Problem};
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use brandhub_catalog::{Resource, catalog};
use brandhub_problem::{ApiError, Code, words};
use brandhub_store::Caller;
use futures_util::StreamExt;

/// The largest request body a read accepts (docs/API.md, "Complex queries"), declared with the other limits.
pub const MAX_QUERY_BODY: usize = brandhub_query::limits::BODY_BYTES.max;

/// How much of an oversized body is read and thrown away before answering 413, so that an
/// HTTP/1.1 client still sending it reads the answer instead of a broken connection.
const DRAIN_LIMIT: usize = 16 * 1024 * 1024;

async fn drain(body: Body, limit: usize) {
    let mut stream = body.into_data_stream();
    let mut seen = 0;
    while let Some(Ok(chunk)) = stream.next().await {
        seen += chunk.len();
        if seen > limit {
            break;
        }
    }
}

/// The 404 of a record that is not there, or that the caller may not see.
pub fn not_found(resource: &Resource, id: &str) -> Problem {
    Problem(ApiError::new(
        Code::NotFound,
        words!(
            "There is no {} with id '{id}'.",
            "Es gibt kein {} mit der Kennung '{id}'.",
            resource.name
        ),
    ))
}

/// `POST /api/<resource>/<name>`: a field set on many records at once where the catalog
/// declares `name` so ([`brandhub_catalog::Writes::bulk`], [`write::set_in_bulk`]), else
/// one of the resource's lifecycle actions ([`orders::action`]; 405 when it has none by that
/// name).
pub async fn post_named(
    axum::extract::State(state): axum::extract::State<crate::AppState>,
    axum::extract::Path((name, action)): axum::extract::Path<(String, String)>,
    crate::auth::Authenticated { caller, .. }: crate::auth::Authenticated,
    axum::Extension(timing): axum::Extension<std::sync::Arc<brandhub_store::Timing>>,
    headers: HeaderMap,
    body: Body,
) -> Answer<Response> {
    let resource = resource(&name)?;
    match resource.writes.bulk {
        Some(bulk) if bulk.field == action => {
            write::set_in_bulk(&state, resource, bulk, &caller, &timing, &headers, body).await
        }
        _ => orders::action(&state, resource, &action, &caller, &headers, body).await,
    }
}

/// The resource named in a URL, or 404 listing the resources there are.
pub fn resource(name: &str) -> Answer<&'static Resource> {
    catalog().resource(name).ok_or_else(|| {
        let names: Vec<&str> = catalog().resource_names().collect();
        Problem(ApiError::new(
            Code::NotFound,
            format!(
                "There is no resource '{name}'. Resources: {}.",
                names.join(", ")
            ),
        ))
    })
}

/// 403 unless the caller's key grants `method` on `resource`.
pub fn require_grant(caller: &Caller, resource: &Resource, method: &str) -> Answer<()> {
    if caller.may(resource.name, method) {
        return Ok(());
    }
    let grants: Vec<String> = caller.grants.iter().map(ToString::to_string).collect();
    Err(Problem(ApiError::new(
        Code::Forbidden,
        words!(
            "This key's grants ({}) do not include {}:{method}.",
            "Die Rechte dieses Schlüssels ({}) umfassen {}:{method} nicht.",
            grants.join(" "),
            resource.name
        ),
    )))
}

/// Reads a request body of at most `limit` bytes; a JSON body must say so if it names a type.
pub async fn read_body(headers: &HeaderMap, body: Body, limit: usize) -> Answer<bytes::Bytes> {
    let too_large = || {
        Problem(ApiError::new(
            Code::PayloadTooLarge,
            words!(
                "The request body is larger than {limit} bytes.",
                "Der Inhalt der Anfrage ist größer als {limit} Bytes."
            ),
        ))
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        drain(body, DRAIN_LIMIT).await;
        return Err(too_large());
    }
    let mut stream = body.into_data_stream();
    let mut bytes = bytes::BytesMut::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| too_large())?;
        if bytes.len() + chunk.len() > limit {
            drain(Body::from_stream(stream), DRAIN_LIMIT).await;
            return Err(too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    let bytes = bytes.freeze();
    if !bytes.iter().all(u8::is_ascii_whitespace)
        && let Some(content_type) = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
        && !content_type.starts_with("application/json")
        && !content_type.contains("+json")
    {
        return Err(Problem(ApiError::new(
            Code::UnsupportedMediaType,
            format!("A query body must be application/json, not {content_type}."),
        )));
    }
    Ok(bytes)
}

/// A JSON answer from bytes already rendered.
pub fn json(status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
