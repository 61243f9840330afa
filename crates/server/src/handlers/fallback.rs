//! Answers for requests no route takes: unknown paths (404), known paths with a method they
//! do not accept (405), and targets too long to read (414), all as problem+json.

use crate::problem::Problem;
use axum::http::{Method, Uri};
use brandhub_catalog::catalog;
use brandhub_problem::{ApiError, Code};

/// 404 for a path that is not part of the API.
pub async fn not_found(uri: Uri) -> Problem {
    Problem(ApiError::new(
        Code::NotFound,
        format!(
            "No API path matches '{}'. Paths start with /api/<resource>.",
            uri.path()
        ),
    ))
}

/// 414 for a request whose target was longer than the server reads (`lenient` put
/// [`crate::lenient::TOO_LONG_TARGET`] in its place).
pub async fn uri_too_long() -> Problem {
    Problem(ApiError::new(
        Code::UriTooLong,
        format!(
            "The request's path and query are longer than {} bytes; send long queries as a \
             JSON body to POST /api/<resource>/query.",
            crate::lenient::MAX_TARGET
        ),
    ))
}

/// The methods a path accepts, from the catalog (what `Allow` must say).
fn allowed(path: &str) -> Option<String> {
    let mut segments = path.trim_matches('/').split('/');
    let (Some("api"), Some(name)) = (segments.next(), segments.next()) else {
        return None;
    };
    let resource = catalog().resource(name)?;
    let methods = match (segments.next(), segments.next(), segments.next()) {
        (None, _, _) => resource.methods(false),
        (Some("count"), None, _) => vec!["GET", "HEAD", "POST"],
        (Some("query"), None, _) => vec!["POST"],
        // A lifecycle's array action (`/api/order/dispatch`).
        (Some(action), None, _)
            if resource
                .lifecycle
                .is_some_and(|l| l.actions.iter().any(|(name, _)| *name == action)) =>
        {
            vec!["POST"]
        }
        (Some(_), None, _) => resource.methods(true),
        // `/api/file/<id>/content` and `/api/file/template/<fileType>`.
        (Some(_), Some(_), None) if resource.uploads => vec!["GET", "HEAD"],
        _ => return None,
    };
    Some(methods.join(", "))
}

/// 405 for a method a path does not accept, with the `Allow` header the catalog implies.
pub async fn method_not_allowed(method: Method, uri: Uri) -> Problem {
    let allow = allowed(uri.path());
    let mut error = ApiError::new(
        Code::MethodNotAllowed,
        format!(
            "{} does not accept {method}; it accepts {}.",
            uri.path(),
            allow.as_deref().unwrap_or("other methods")
        ),
    );
    error.allow = allow;
    Problem(error)
}
