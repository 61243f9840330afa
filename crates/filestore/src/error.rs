//! The errors of the store, kept apart from `object_store`'s so callers can branch on the cases
//! the API answers differently (missing file, too large, bad request body) without depending on
//! the backend crate.

use std::path::PathBuf;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The configured location is neither empty (local disk) nor an `s3://` URL, so the
    /// operator learns at startup which forms are accepted.
    #[error(
        "unsupported file store location {location:?}: {reason}; accepted forms are no location \
         (files kept under the data directory) or s3://bucket[/prefix]"
    )]
    UnsupportedLocation {
        /// The location as given.
        location: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An S3 setting given to [`crate::FileStore::open_with_env`] is not one the S3 client
    /// knows, caught early rather than silently ignored.
    #[error("unknown S3 setting {key:?}")]
    UnknownSetting {
        /// The setting's name as given.
        key: String,
    },
    /// A key is not a safe single path segment; keys come from the caller, and this keeps them
    /// from escaping the store's directory or prefix.
    #[error(
        "invalid file key {key:?}: 1 to {max} characters of ASCII letters, digits, '-' or '_'",
        max = crate::key::MAX_KEY_LEN
    )]
    InvalidKey {
        /// The key as given.
        key: String,
    },
    /// No object has this key: the API answers 404 for it, unlike other failures.
    #[error("file {key:?} not found")]
    NotFound {
        /// The missing key.
        key: String,
    },
    /// The local directory could not be created at startup.
    #[error("cannot create the file directory {}: {source}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Any other failure of the backend (disk, network, permissions, configuration).
    #[error("file store: {0}")]
    Backend(#[source] object_store::Error),
}

impl StoreError {
    /// Maps a backend error for `key`, keeping "not found" distinct.
    pub(crate) fn from_backend(key: &str, error: object_store::Error) -> Self {
        match error {
            object_store::Error::NotFound { .. } => StoreError::NotFound {
                key: key.to_owned(),
            },
            other => StoreError::Backend(other),
        }
    }
}

/// Why [`crate::FileStore::put_stream`] stored nothing. Generic over the body's error type so
/// the caller gets its own error back (and can answer 400 for a broken request body).
#[derive(Debug, thiserror::Error)]
pub enum PutError<E> {
    /// The body passed `limit` bytes (the API answers 413); the upload was aborted.
    #[error("upload is larger than the limit of {limit} bytes")]
    TooLarge {
        /// The limit that was passed, in bytes.
        limit: u64,
    },
    /// The body stream failed; the upload was aborted.
    #[error("upload body failed: {0}")]
    Body(#[source] E),
    /// The store failed or the key was invalid.
    #[error(transparent)]
    Store(#[from] StoreError),
}
