//! Answers for requests no route takes: unknown paths (404) and known paths with a method they
//! do not accept (405), both as problem+json.

use crate::problem::Problem;
use axum::http::{Method, Uri};
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

/// 405 for a method a path does not accept; axum adds the `Allow` header.
pub async fn method_not_allowed(method: Method, uri: Uri) -> Problem {
    Problem(ApiError::new(
        Code::MethodNotAllowed,
        format!(
            "{} does not accept {method}; see the Allow header.",
            uri.path()
        ),
    ))
}
