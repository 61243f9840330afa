//! Per-request bookkeeping that every response carries: an `X-Request-Id` (the client's, if it
//! sent a sane one, else a new UUIDv7), a `Server-Timing` header with the database time and the
//! total time, and one log line with both.

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use brandhub_store::Timing;
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;

/// The request id header.
pub static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

fn request_id(request: &Request) -> String {
    request
        .headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_string)
        .unwrap_or_else(|| uuid::Uuid::now_v7().simple().to_string())
}

/// The middleware: gives the request a [`Timing`] and an id, and stamps the response.
pub async fn observe(mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = request_id(&request);
    let timing = Arc::new(Timing::default());
    request.extensions_mut().insert(timing.clone());
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let span = tracing::info_span!("request", id = %id);
    let mut response =
        Timing::scope(timing.clone(), next.run(request).instrument(span.clone())).await;
    let total = started.elapsed();
    let database = timing.database_time();
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&id) {
        headers.insert(REQUEST_ID.clone(), value);
    }
    let server_timing = format!(
        "db;dur={:.3};desc=\"{} statements\", total;dur={:.3}",
        database.as_secs_f64() * 1000.0,
        timing.statements(),
        total.as_secs_f64() * 1000.0
    );
    if let Ok(value) = HeaderValue::from_str(&server_timing) {
        headers.insert(HeaderName::from_static("server-timing"), value);
    }
    span.in_scope(|| {
        tracing::info!(
            %method,
            %path,
            status = response.status().as_u16(),
            total_ms = total.as_secs_f64() * 1000.0,
            db_ms = database.as_secs_f64() * 1000.0,
            "answered"
        );
    });
    response
}
