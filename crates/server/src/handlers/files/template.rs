//! `GET /api/file/template/<fileType>`: the empty `.xlsx` of a file type, its header row the
//! columns an upload of that type reads.

use super::content::content_disposition;
use crate::handlers::require_grant;
use crate::problem::{Answer, Problem};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use brandhub_catalog::Res;
use brandhub_catalog::catalog;
use brandhub_problem::{ApiError, Code};
use brandhub_sheet::{FileType, Format};
use brandhub_store::Caller;

/// `GET /api/file/template/<fileType>`: the `.xlsx` template of a file type.
pub(super) async fn template(caller: &Caller, name: &str) -> Answer<Response> {
    let file = catalog().get(Res::File);
    require_grant(caller, file, "GET")?;
    let file_type = FileType::named(name).ok_or_else(|| {
        let names: Vec<&str> = FileType::ALL.into_iter().map(FileType::as_str).collect();
        Problem(ApiError::new(
            Code::NotFound,
            format!(
                "There is no file type '{name}'. File types: {}.",
                names.join(", ")
            ),
        ))
    })?;
    let bytes = brandhub_sheet::template(file_type);
    let mut response = (StatusCode::OK, bytes).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(Format::Xlsx.mime()),
    );
    headers.insert(
        header::CONTENT_DISPOSITION,
        content_disposition(&format!("{}-template.xlsx", file_type.as_str())),
    );
    Ok(response)
}
