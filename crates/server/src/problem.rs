//! The one way errors leave the server: `application/problem+json` with the code's status and
//! the headers some codes carry (`WWW-Authenticate`, `Retry-After`, `Allow`).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use brandhub_problem::{ApiError, Code, Lang};
use brandhub_store::StoreError;

tokio::task_local! {
    /// The language the request being answered asked for (`Accept-Language`), set by
    /// [`in_the_clients_language`] around every request.
    static LANGUAGE: Lang;
}

/// Answers the request's problems with titles in the first language of its
/// `Accept-Language` that the API speaks (English otherwise).
pub async fn in_the_clients_language(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let lang = request
        .headers()
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|value| value.to_str().ok())
        .map(Lang::from_accept_language)
        .unwrap_or_default();
    LANGUAGE.scope(lang, next.run(request)).await
}

/// An [`ApiError`] on its way to the client.
#[derive(Debug, Clone)]
pub struct Problem(pub ApiError);

impl From<ApiError> for Problem {
    fn from(error: ApiError) -> Problem {
        Problem(error)
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let error = self.0;
        let status =
            StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let lang = LANGUAGE.try_with(|lang| *lang).unwrap_or_default();
        let body = serde_json::to_vec(&error.body_in(lang)).unwrap_or_default();
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_LANGUAGE,
            HeaderValue::from_static(lang.tag()),
        );
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if error.code == Code::Unauthenticated {
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"brandhub\""),
            );
        }
        if let Some(seconds) = error.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if let Some(allow) = error
            .allow
            .as_deref()
            .and_then(|a| HeaderValue::from_str(a).ok())
        {
            headers.insert(header::ALLOW, allow);
        }
        response
    }
}

/// Seconds a client is told to wait (`Retry-After`) when the database cannot be reached: a
/// restarting database server is usually back within a few.
pub const UNAVAILABLE_RETRY_AFTER: u64 = 5;

/// Shorthand for handler results.
pub type Answer<T> = Result<T, Problem>;

/// How each thing that can go wrong in the store is answered (docs/API.md, "Errors"): the one place a
/// store error meets an HTTP status.
impl From<StoreError> for Problem {
    fn from(error: StoreError) -> Problem {
        Problem(from_store(error))
    }
}

/// The problem a store error is answered with.
pub(crate) fn from_store(error: StoreError) -> ApiError {
    let detail = error.to_string();
    {
        match error {
            StoreError::Request(error) => error,
            StoreError::Invalid { problems, .. } => {
                let mut refused = ApiError::new(Code::ValidationFailed, detail);
                refused.errors = problems;
                refused
            }
            StoreError::NotFound(_) => ApiError::new(Code::NotFound, detail),
            StoreError::Refused(_) => ApiError::new(Code::Forbidden, detail),
            StoreError::Conflict { field, .. } => {
                let conflict = ApiError::new(Code::Conflict, detail);
                match field {
                    Some(field) => conflict.with_field(field),
                    None => conflict,
                }
            }
            StoreError::Stale(_) => {
                ApiError::new(Code::PreconditionFailed, detail).with_field("If-Match")
            }
            StoreError::Transition(_) => ApiError::new(Code::InvalidTransition, detail),
            StoreError::Unavailable => ApiError::unavailable(UNAVAILABLE_RETRY_AFTER),
            StoreError::Config(_) | StoreError::Internal | StoreError::Unreadable(_) => {
                ApiError::internal()
            }
        }
    }
}
