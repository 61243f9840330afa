//! Request headers that make a write conditional (docs/API.md, "Writes: concurrency and idempotency"): `If-Match` (apply only to the
//! version read) and `Idempotency-Key` (apply once). Parsed here, like the rest of a request,
//! before anything touches the database; the store checks them inside the write.

use brandhub_problem::{ApiError, ApiResult, Code};
use sha2::{Digest, Sha256};

/// The longest idempotency key accepted (Stripe and the IETF draft use at most 255
/// characters).
pub const MAX_KEY_CHARS: usize = 255;

/// What an `If-Match` header asks of a record: any current version (`*`), or one of these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfMatch {
    Any,
    Versions(Vec<i64>),
}

impl IfMatch {
    /// Parses an `If-Match` header (RFC 9110 §13.1.1): `*`, or entity tags separated by
    /// commas. Weak tags (`W/"…"`) never match (the comparison is strong) and tags that are
    /// not brandhub's match nothing; a value that is no list of entity tags is 400.
    pub fn parse(header: &str) -> ApiResult<IfMatch> {
        let header = header.trim();
        if header == "*" {
            return Ok(IfMatch::Any);
        }
        let mut versions = Vec::new();
        for tag in header.split(',').map(str::trim) {
            let (weak, quoted) = match tag.strip_prefix("W/") {
                Some(rest) => (true, rest),
                None => (false, tag),
            };
            let inner = quoted
                .strip_prefix('"')
                .and_then(|t| t.strip_suffix('"'))
                .filter(|t| !t.contains('"'))
                .ok_or_else(|| {
                    ApiError::new(
                        Code::InvalidParameter,
                        format!(
                            "If-Match takes * or entity tags in quotes, as ETag sends them (\"3\"); '{tag}' is neither."
                        ),
                    )
                    .with_field("If-Match")
                })?;
            if let (false, Ok(version)) = (weak, inner.parse::<i64>()) {
                versions.push(version);
            }
        }
        Ok(IfMatch::Versions(versions))
    }

    /// Whether a record at `version` satisfies the precondition.
    pub fn matches(&self, version: i64) -> bool {
        match self {
            IfMatch::Any => true,
            IfMatch::Versions(versions) => versions.contains(&version),
        }
    }
}

/// The `ETag` of a record at `version`.
pub fn etag(version: i64) -> String {
    format!("\"{version}\"")
}

/// A create's key: whose it is, the key, and what the request was (its resource, parameters
/// and body), so the same key with another request is told apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey {
    pub user_id: String,
    pub key: String,
    pub fingerprint: String,
}

impl IdempotencyKey {
    /// Checks a header value (1 to 255 visible ASCII characters; 400 otherwise) and
    /// fingerprints the request it came with.
    pub fn new(user_id: &str, key: &str, request: &[&[u8]]) -> ApiResult<IdempotencyKey> {
        if key.is_empty()
            || key.len() > MAX_KEY_CHARS
            || !key.bytes().all(|b| b.is_ascii_graphic() || b == b' ')
        {
            return Err(ApiError::new(
                Code::InvalidParameter,
                format!(
                    "Idempotency-Key takes 1 to {MAX_KEY_CHARS} visible ASCII characters, such as a UUID."
                ),
            )
            .with_field("Idempotency-Key"));
        }
        let mut hash = Sha256::new();
        for part in request {
            hash.update((part.len() as u64).to_le_bytes());
            hash.update(part);
        }
        let fingerprint = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
        Ok(IdempotencyKey {
            user_id: user_id.to_string(),
            key: key.to_string(),
            fingerprint,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_match_takes_a_star_or_strong_entity_tags() {
        assert_eq!(IfMatch::parse(" * ").unwrap(), IfMatch::Any);
        assert_eq!(
            IfMatch::parse("\"3\", \"7\"").unwrap(),
            IfMatch::Versions(vec![3, 7])
        );
        // Weak and foreign tags are understood and match nothing.
        let weak = IfMatch::parse("W/\"3\", \"abc\"").unwrap();
        assert_eq!(weak, IfMatch::Versions(vec![]));
        assert!(!weak.matches(3));
        assert!(IfMatch::Any.matches(12));
        for bad in ["3", "\"3", "\"3\"\"", ""] {
            let error = IfMatch::parse(bad).unwrap_err();
            assert_eq!(error.code, Code::InvalidParameter, "{bad}");
        }
    }

    #[test]
    fn etags_are_quoted_versions_that_parse_back() {
        assert_eq!(etag(5), "\"5\"");
        assert!(IfMatch::parse(&etag(5)).unwrap().matches(5));
        assert!(!IfMatch::parse(&etag(5)).unwrap().matches(6));
    }

    #[test]
    fn keys_are_visible_ascii_and_fingerprints_tell_requests_apart() {
        let a = IdempotencyKey::new("U", "k-1", &[b"company", b"", b"{}"]).unwrap();
        let b = IdempotencyKey::new("U", "k-1", &[b"company", b"", b"{ }"]).unwrap();
        let c = IdempotencyKey::new("U", "k-1", &[b"company", b"", b"{}"]).unwrap();
        assert_ne!(a.fingerprint, b.fingerprint);
        assert_eq!(a, c);
        // Parts are length-prefixed: moving bytes between parts is another request.
        let d = IdempotencyKey::new("U", "k-1", &[b"compan", b"y", b"{}"]).unwrap();
        assert_ne!(a.fingerprint, d.fingerprint);
        for bad in ["", "tab\there", "é", &"x".repeat(256)] {
            let error = IdempotencyKey::new("U", bad, &[]).unwrap_err();
            assert_eq!(error.code, Code::InvalidParameter);
        }
    }
}
