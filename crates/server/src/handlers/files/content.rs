//! `GET /api/file/<id>/content`: the bytes of an uploaded file, streamed from the file store.

use super::{no_file, visible};
use crate::AppState;
use crate::handlers::read::viewer;
use crate::handlers::require_grant;
use crate::problem::{Answer, Problem};
use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use brandhub_catalog::Res;
use brandhub_catalog::catalog;
use brandhub_catalog::file_paths;
use brandhub_filestore::StoreError;
use brandhub_problem::{ApiError, Code, words};
use brandhub_sheet::Format;
use brandhub_store::{Caller, Timing};

/// `attachment` with the file name, plain where it is safe ASCII and RFC 5987-encoded too.
pub(super) fn content_disposition(name: &str) -> HeaderValue {
    let plain: String = name
        .chars()
        .map(|c| {
            if (c.is_ascii_graphic() && c != '"' && c != '\\') || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let encoded: String = name
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    HeaderValue::from_str(&format!(
        "attachment; filename=\"{plain}\"; filename*=UTF-8''{encoded}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("attachment"))
}

/// `GET /api/file/<id>/content`: the uploaded bytes, streamed, with the format's content type.
pub(super) async fn content(
    state: &AppState,
    caller: &Caller,
    timing: &Timing,
    id: &str,
) -> Answer<Response> {
    let file = catalog().get(Res::File);
    require_grant(caller, file, "GET")?;
    let not_found = || no_file(id);
    if !visible(state, Res::File, id, &viewer(caller), timing).await? {
        return Err(not_found());
    }
    let id = id.to_ascii_uppercase();
    let name = state
        .store
        .text_field_of(Res::File, file_paths::FILE_NAME, &id)
        .await?
        .flatten()
        .unwrap_or_else(|| "file".to_string());
    let (size, stream) = match state.files.get(&id).await {
        Ok(found) => found,
        Err(StoreError::NotFound { .. }) => {
            return Err(Problem(ApiError::new(
                Code::NotFound,
                words!(
                    "The bytes of file '{id}' are not stored (only uploaded files have content).",
                    "Die Bytes der Datei '{id}' sind nicht gespeichert (nur hochgeladene Dateien haben Inhalt)."
                ),
            )));
        }
        Err(error) => {
            tracing::error!(%error, file = %id, "a stored file could not be read");
            return Err(Problem(ApiError::internal()));
        }
    };
    let mime = Format::from_file_name(&name).map_or("application/octet-stream", |f| f.mime());
    let mut response = Body::from_stream(stream).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(mime));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
    headers.insert(header::CONTENT_DISPOSITION, content_disposition(&name));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_stay_safe_in_headers() {
        let header = content_disposition("prix été \"1\".xlsx");
        let text = header.to_str().unwrap();
        assert!(
            text.starts_with("attachment; filename=\"prix _t_ _1_.xlsx\""),
            "{text}"
        );
        assert!(
            text.contains("filename*=UTF-8''prix%20%C3%A9t%C3%A9%20%221%22.xlsx"),
            "{text}"
        );
    }
}
