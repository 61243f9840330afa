//! The web portal (README, "The portal"): static files embedded in the binary and served at `/`.
//!
//! The files under `crates/server/portal/` are plain HTML, CSS and ES modules (no build step);
//! `include_dir` embeds them at compile time, so the binary is the whole product. At start the
//! server hashes them all into one content hash: `/` answers `index.html` (never cached, so a
//! new binary is seen at once) with its asset links pointing to `/assets/<hash>/…`, and those
//! answers are cacheable for a year, since a change of any file changes the hash and so every
//! URL. Relative imports between modules stay inside the hashed directory.
//!
//! Every answer carries `Content-Security-Policy: default-src 'self'`: the portal runs no
//! inline script or style and loads nothing from another host.

use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use include_dir::{Dir, include_dir};
use sha2::{Digest, Sha256};
use std::sync::OnceLock;

static FILES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/portal");

/// The policy of every portal answer.
pub const CONTENT_SECURITY_POLICY: &str =
    "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The embedded files' content hash and the rendered index page.
struct Bundle {
    hash: String,
    index: String,
}

fn bundle() -> &'static Bundle {
    static BUNDLE: OnceLock<Bundle> = OnceLock::new();
    BUNDLE.get_or_init(|| {
        let mut hasher = Sha256::new();
        let mut files = Vec::new();
        collect(&FILES, &mut files);
        files.sort_by_key(|f| f.0);
        for (path, contents) in &files {
            hasher.update(path.as_bytes());
            hasher.update([0]);
            hasher.update(contents);
        }
        let hash: String = hasher
            .finalize()
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect();
        let template = FILES
            .get_file("index.html")
            .and_then(|f| f.contents_utf8())
            .unwrap_or_default();
        Bundle {
            index: template.replace("{{ASSETS}}", &format!("/assets/{hash}")),
            hash,
        }
    })
}

fn collect(dir: &'static Dir<'static>, files: &mut Vec<(&'static str, &'static [u8])>) {
    for file in dir.files() {
        files.push((file.path().to_str().unwrap_or_default(), file.contents()));
    }
    for sub in dir.dirs() {
        collect(sub, files);
    }
}

/// The content hash of the embedded files (what asset URLs carry).
pub fn content_hash() -> &'static str {
    &bundle().hash
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("json") => "application/json",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn secured(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// `GET /`: the portal's page, revalidated on every load (`ETag` is the content hash).
pub async fn index(headers: HeaderMap) -> Response {
    let bundle = bundle();
    let etag = format!("\"{}\"", bundle.hash);
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == etag);
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            bundle.index.clone(),
        )
            .into_response()
    };
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, value);
    }
    secured(response)
}

/// `GET /assets/<hash>/<path>`: an embedded file, cacheable for a year; 404 for another hash
/// (an old page asking for files of a binary that is gone) or an unknown path.
pub async fn asset(Path((hash, path)): Path<(String, String)>) -> Response {
    let file = (hash == bundle().hash)
        .then(|| FILES.get_file(&path))
        .flatten()
        .filter(|_| path != "index.html");
    let Some(file) = file else {
        return secured(
            (
                StatusCode::NOT_FOUND,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                "No such portal file; reload the page.",
            )
                .into_response(),
        );
    };
    secured(
        (
            [
                (header::CONTENT_TYPE, content_type(&path)),
                (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
            ],
            file.contents(),
        )
            .into_response(),
    )
}

/// Requests of the portal say so (`X-Requested-With`); their 401 answers carry no
/// `WWW-Authenticate`, which would make the browser open its own sign-in dialog over the
/// portal's. Other clients get the header as docs/API.md, "Transport and authentication" says.
pub async fn quiet_challenge(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let from_portal = request.headers().contains_key("x-requested-with");
    let mut response = next.run(request).await;
    if from_portal {
        response.headers_mut().remove(header::WWW_AUTHENTICATE);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_links_assets_under_the_content_hash() {
        let bundle = bundle();
        assert_eq!(bundle.hash.len(), 16);
        assert!(
            bundle
                .index
                .contains(&format!("/assets/{}/app.js", bundle.hash))
        );
        assert!(!bundle.index.contains("{{ASSETS}}"));
    }

    #[test]
    fn every_file_has_a_known_type_and_nothing_refers_to_another_host() {
        let mut files = Vec::new();
        collect(&FILES, &mut files);
        assert!(files.len() > 5);
        for (path, contents) in files {
            assert_ne!(content_type(path), "application/octet-stream", "{path}");
            if let Ok(text) = std::str::from_utf8(contents) {
                // An SVG names its XML namespace with a URL, which is never fetched.
                let text = text.replace("http://www.w3.org/2000/svg", "");
                for scheme in ["http://", "https://"] {
                    assert!(!text.contains(scheme), "{path} refers to another host");
                }
            }
        }
    }
}
