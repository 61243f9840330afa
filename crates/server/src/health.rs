//! `/healthz` and `/readyz` (docs/API.md, "Operations: health, metrics, logs"): unauthenticated plain-text answers for load
//! balancers and orchestrators. Health says the process serves; readiness says it can do its
//! work: the database answers, within a bound, and has every table and column this build
//! needs.

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use brandhub_store::Store;
use std::time::Duration;

/// How long readiness waits for the database before saying it does not answer.
pub const READY_TIMEOUT: Duration = Duration::from_secs(5);

fn text(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// `GET /healthz`: the process is up and serving.
pub async fn healthz() -> Response {
    text(StatusCode::OK, "ok\n".to_string())
}

/// `GET /readyz`: 200 when the database answers and migrations are applied, else 503 with
/// the reason (the log has the database's own error).
pub async fn readyz(State(store): State<Store>) -> Response {
    match tokio::time::timeout(READY_TIMEOUT, store.schema_gaps()).await {
        Ok(Ok(gaps)) if gaps.is_empty() => text(StatusCode::OK, "ready\n".to_string()),
        Ok(Ok(gaps)) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "not ready: migrations are not applied; missing: {}\n",
                gaps.join(", ")
            ),
        ),
        Ok(Err(_)) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: the database does not answer (the server log has the cause)\n".to_string(),
        ),
        Err(_) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "not ready: the database did not answer within {} s\n",
                READY_TIMEOUT.as_secs()
            ),
        ),
    }
}
