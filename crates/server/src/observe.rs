//! Per-request bookkeeping that every response carries: an `X-Request-Id` (the client's, if it
//! sent a sane one, else a new UUIDv7), a `Server-Timing` header with the database time and the
//! total time, and one log line with both. The log line never holds a credential: an
//! invitation's token in the path and the values of query parameters named as credentials
//! (or looking like brandhub's keys) are written `[redacted]` ([`loggable_path`],
//! [`loggable_query`]).

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
    let path = loggable_path(request.uri().path());
    let query = loggable_query(request.uri().query());
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
            %query,
            status = response.status().as_u16(),
            total_ms = total.as_secs_f64() * 1000.0,
            db_ms = database.as_secs_f64() * 1000.0,
            "answered"
        );
    });
    response
}

/// What a credential is logged as.
const REDACTED: &str = "[redacted]";

/// Path segments whose next segment is a credential: `/api/invitation/<token>`.
const SECRET_AFTER: &[&str] = &["invitation"];

/// Words that name a query parameter holding a credential (matched in its lower-cased name:
/// `apiKey`, `access_token`, `client_secret`, `password`, …).
const SECRET_NAMES: &[&str] = &[
    "key",
    "secret",
    "token",
    "password",
    "passwd",
    "auth",
    "session",
    "credential",
    "signature",
];

/// The prefixes of brandhub's own secrets: API keys, session keys, invitation tokens.
const SECRET_PREFIXES: &[&str] = &["bhk_", "bhs_", "bhi_"];

/// The path as the log shows it: the segment after `invitation` (its token) redacted, and any
/// segment that looks like one of brandhub's secrets.
pub fn loggable_path(path: &str) -> String {
    let mut after_secret_marker = false;
    let segments: Vec<&str> = path
        .split('/')
        .map(|segment| {
            let secret = (after_secret_marker && !segment.is_empty()) || looks_secret(segment);
            after_secret_marker = SECRET_AFTER
                .iter()
                .any(|marker| segment.eq_ignore_ascii_case(marker));
            if secret { REDACTED } else { segment }
        })
        .collect();
    segments.join("/")
}

/// The query string as the log shows it (empty without one): each parameter whose name
/// says it holds a credential, or whose name or value looks like one of brandhub's secrets,
/// has its value redacted (or itself, when it has no value).
pub fn loggable_query(query: Option<&str>) -> String {
    let Some(query) = query else {
        return String::new();
    };
    query
        .split('&')
        .map(|pair| {
            let (name, value) = match pair.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (pair, None),
            };
            let decoded_name: String = form_urlencoded::parse(name.as_bytes())
                .map(|(n, _)| n.into_owned())
                .collect();
            let decoded_value: String = value
                .map(|v| {
                    form_urlencoded::parse(format!("v={v}").as_bytes())
                        .map(|(_, v)| v.into_owned())
                        .collect()
                })
                .unwrap_or_default();
            let lower = decoded_name.to_ascii_lowercase();
            let secret = SECRET_NAMES.iter().any(|word| lower.contains(word))
                || looks_secret(&decoded_name)
                || looks_secret(&decoded_value);
            match (secret, value) {
                (false, _) => pair.to_string(),
                (true, Some(_)) if !looks_secret(&decoded_name) => format!("{name}={REDACTED}"),
                (true, _) => REDACTED.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// Whether text holds one of brandhub's secrets (by its prefix).
fn looks_secret(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    SECRET_PREFIXES.iter().any(|prefix| lower.contains(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invitation_token_in_the_path_is_redacted() {
        assert_eq!(
            loggable_path("/api/invitation/bhi_abcdefSECRET"),
            "/api/invitation/[redacted]"
        );
        assert_eq!(
            loggable_path("/API/Invitation/anything-else"),
            "/API/Invitation/[redacted]"
        );
        assert_eq!(loggable_path("/api/invitation"), "/api/invitation");
        assert_eq!(loggable_path("/api/invitation/"), "/api/invitation/");
        assert_eq!(loggable_path("/api/brand/0123ABC"), "/api/brand/0123ABC");
        assert_eq!(loggable_path("/x/bhk_leaked"), "/x/[redacted]");
    }

    #[test]
    fn credentials_in_the_query_are_redacted_and_the_rest_kept() {
        assert_eq!(loggable_query(None), "");
        assert_eq!(
            loggable_query(Some("pageSize=1&name=Acme")),
            "pageSize=1&name=Acme"
        );
        assert_eq!(
            loggable_query(Some(
                "pageSize=1&apiKey=abc&access_token=t&PASSWORD=p&client_secret=s&key=k"
            )),
            "pageSize=1&apiKey=[redacted]&access_token=[redacted]&PASSWORD=[redacted]&client_secret=[redacted]&key=[redacted]"
        );
        // brandhub's own secrets wherever they stand, encoded or not.
        assert_eq!(
            loggable_query(Some("name=bhs_abc&q=x%20bhk_y&bhi_z&a%70iKey=1")),
            "name=[redacted]&q=[redacted]&[redacted]&a%70iKey=[redacted]"
        );
    }
}
