//! Keys are chosen by callers (file ids); this checks that one names a single, harmless path
//! segment before it reaches the disk or the bucket.

use crate::StoreError;

/// The longest key accepted; file ids are 32 hex digits.
pub(crate) const MAX_KEY_LEN: usize = 128;

/// Returns `key` if it is 1..=[`MAX_KEY_LEN`] ASCII letters, digits, `-` or `_`: no separators,
/// no dots (so no `..`), nothing `object_store` would escape or treat as a staging file.
pub(crate) fn check(key: &str) -> Result<&str, StoreError> {
    let ok = !key.is_empty()
        && key.len() <= MAX_KEY_LEN
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(key)
    } else {
        Err(StoreError::InvalidKey {
            key: key.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_file_ids_and_rejects_paths() {
        assert!(check("0123456789abcdef0123456789abcdef").is_ok());
        assert!(check("a-b_C").is_ok());
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "a\\b",
            "../x",
            "a b",
            "a#1",
            "é",
            "x.xlsx",
            &"a".repeat(MAX_KEY_LEN + 1),
        ] {
            assert!(
                matches!(check(bad), Err(StoreError::InvalidKey { .. })),
                "{bad:?}"
            );
        }
    }
}
