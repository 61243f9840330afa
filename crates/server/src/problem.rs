//! The one way errors leave the server: `application/problem+json` with the code's status and
//! the headers some codes carry (`WWW-Authenticate`, `Retry-After`, `Allow`).

use crate::AppState;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use brandhub_catalog::Res;
use brandhub_problem::{ApiError, Code, Lang};
use brandhub_store::StoreError;
use std::sync::Mutex;

tokio::task_local! {
    /// The language the request being answered asked for, set by
    /// [`in_the_clients_language`] around every request.
    static LANGUAGE: Asked;
}

/// What a request says of the language of its problems.
struct Asked {
    /// The language of its `Accept-Language`, if it has one.
    header: Option<Lang>,
    /// Its authenticated caller's user id, once known ([`caller_known`]), when it has none.
    caller: Mutex<Option<String>>,
}

/// A problem answered in English because its request gave no `Accept-Language`: the
/// caller's own language may still title it ([`in_the_clients_language`]).
#[derive(Clone)]
struct Untitled(ApiError);

/// Answers the request's problems with titles in the first language of its
/// `Accept-Language` that the API speaks (English if it names none). A request without the
/// header has them in its authenticated user's `detail.lang` (`en`, `de`; English for any
/// other, and for a caller not known): looked up only when a problem is answered.
pub async fn in_the_clients_language(
    State(state): State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let header = request
        .headers()
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|value| value.to_str().ok())
        .map(Lang::from_accept_language);
    let asked = Asked {
        header,
        caller: Mutex::new(None),
    };
    let (mut response, caller) = LANGUAGE
        .scope(asked, async {
            let response = next.run(request).await;
            let caller = LANGUAGE.with(|asked| asked.caller.lock().expect("lock").take());
            (response, caller)
        })
        .await;
    let Some(Untitled(error)) = response.extensions_mut().remove::<Untitled>() else {
        return response;
    };
    let Some(user) = caller else {
        return response;
    };
    match users_language(&state, &user).await {
        Some(lang) if lang != Lang::default() => {
            let body = serde_json::to_vec(&error.body_in(lang)).unwrap_or_default();
            let headers = response.headers_mut();
            headers.remove(header::CONTENT_LENGTH);
            headers.insert(
                header::CONTENT_LANGUAGE,
                HeaderValue::from_static(lang.tag()),
            );
            *response.body_mut() = Body::from(body);
            response
        }
        _ => response,
    }
}

/// The language of the request being answered, as its `Accept-Language` names it (English
/// without one): for words answered inside a successful response (a bulk step's refusals).
pub(crate) fn asked_language() -> Lang {
    LANGUAGE
        .try_with(|asked| asked.header)
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Notes the request's authenticated caller (`auth`): its language titles the request's
/// problems if the request names none.
pub(crate) fn caller_known(user_id: &str) {
    let _ = LANGUAGE.try_with(|asked| {
        if asked.header.is_none() {
            *asked.caller.lock().expect("lock") = Some(user_id.to_string());
        }
    });
}

/// A user's `detail.lang`, if it is a language the API speaks: one read of that field, made
/// only when a problem is answered to a request that named no language.
async fn users_language(state: &AppState, user: &str) -> Option<Lang> {
    let lang = state
        .store
        .text_field_of(Res::User, "detail.lang", user)
        .await
        .ok()??;
    Lang::from_tag(&lang?)
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
        // No header: English for now, the caller's language later ([`in_the_clients_language`]).
        let header = LANGUAGE.try_with(|asked| asked.header);
        let lang = header.ok().flatten().unwrap_or_default();
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
        if matches!(header, Ok(None)) {
            response.extensions_mut().insert(Untitled(error));
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
    let detail = error.words();
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
