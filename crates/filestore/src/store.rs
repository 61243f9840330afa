//! [`FileStore`]: opening a backend and streaming bytes in and out of it.

use std::path::Path;
use std::pin::pin;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::stream::{BoxStream, Stream, StreamExt};
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::buffered::BufWriter;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::prefix::PrefixStore;
use object_store::{ObjectStore, ObjectStoreExt};
use tokio::io::AsyncWriteExt;

use crate::location::Location;
use crate::{PutError, StoreError, key};

/// Bytes buffered before they are sent as one part. 5 MiB is the smallest part S3 accepts (all
/// but the last), and an upload no larger than this is sent in one plain PUT.
pub const PART_SIZE: usize = 5 * 1024 * 1024;

/// Parts being sent at once. With the part being filled, an upload holds at most
/// `PART_SIZE * (1 + MAX_PARTS_IN_FLIGHT)` bytes (15 MiB) whatever its size.
pub const MAX_PARTS_IN_FLIGHT: usize = 2;

const _: () = assert!(PART_SIZE * (1 + MAX_PARTS_IN_FLIGHT) <= 16 * 1024 * 1024);

/// The name of the local directory under the data directory.
pub(crate) const LOCAL_DIR: &str = "files";

/// A stream of a stored file's bytes, ready to become a response body.
pub type ByteStream = BoxStream<'static, Result<Bytes, StoreError>>;

/// Keeps uploaded files' bytes. Cheap to clone and share between the HTTP layer and workers.
#[derive(Debug, Clone)]
pub struct FileStore {
    inner: Arc<dyn ObjectStore>,
    description: String,
}

impl FileStore {
    /// Opens the store configured by `location`: `None` for `<data_dir>/files` on the local disk
    /// (created if missing), or `s3://bucket[/prefix]` for S3 with settings from the `AWS_*`
    /// environment variables. Anything else is an error naming the accepted forms.
    pub fn open(location: Option<&str>, data_dir: &Path) -> Result<Self, StoreError> {
        Self::open_with_env(location, data_dir, &[])
    }

    /// Like [`FileStore::open`], with S3 settings named as their environment variables (e.g.
    /// `AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`) that take precedence over the process
    /// environment, so tests and embedders can configure S3 without touching it. Ignored for the
    /// local disk.
    pub fn open_with_env(
        location: Option<&str>,
        data_dir: &Path,
        env: &[(&str, &str)],
    ) -> Result<Self, StoreError> {
        match Location::parse(location)? {
            Location::Local => open_local(data_dir),
            Location::S3 { bucket, prefix } => open_s3(&bucket, &prefix, env),
        }
    }

    /// A one-line description of where files go, for the startup log (no secrets).
    pub fn describe(&self) -> &str {
        &self.description
    }

    /// Streams `body` into the object `key` (replacing any previous one) without holding it in
    /// memory, and returns its length. If the body passes `max_bytes`, or yields an error, the
    /// upload is aborted and nothing is stored under `key`.
    pub async fn put_stream<S, E>(
        &self,
        key: &str,
        body: S,
        max_bytes: u64,
    ) -> Result<u64, PutError<E>>
    where
        S: Stream<Item = Result<Bytes, E>>,
    {
        let path = object_path(key)?;
        let mut upload = Upload::new(
            BufWriter::with_capacity(Arc::clone(&self.inner), path, PART_SIZE)
                .with_max_concurrency(MAX_PARTS_IN_FLIGHT),
        );
        let mut body = pin!(body);
        let mut total: u64 = 0;
        while let Some(chunk) = body.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(error) => {
                    upload.abort(key).await;
                    return Err(PutError::Body(error));
                }
            };
            total = total.saturating_add(chunk.len() as u64);
            if total > max_bytes {
                upload.abort(key).await;
                return Err(PutError::TooLarge { limit: max_bytes });
            }
            if chunk.is_empty() {
                continue;
            }
            if let Err(error) = upload.put(chunk).await {
                upload.abort(key).await;
                return Err(StoreError::Backend(error).into());
            }
        }
        upload
            .finish()
            .await
            .map_err(|error| StoreError::Backend(backend_error(error)))?;
        Ok(total)
    }

    /// Opens the object `key` for streaming, with its length: for serving the bytes back.
    pub async fn get(&self, key: &str) -> Result<(u64, ByteStream), StoreError> {
        let path = object_path(key)?;
        let result = self
            .inner
            .get(&path)
            .await
            .map_err(|e| StoreError::from_backend(key, e))?;
        let size = result.meta.size;
        let owned_key = key.to_owned();
        let stream = result
            .into_stream()
            .map(move |chunk| chunk.map_err(|e| StoreError::from_backend(&owned_key, e)))
            .boxed();
        Ok((size, stream))
    }

    /// Reads the whole object `key` into memory: for workers that parse the file.
    pub async fn get_bytes(&self, key: &str) -> Result<Bytes, StoreError> {
        let path = object_path(key)?;
        let result = self
            .inner
            .get(&path)
            .await
            .map_err(|e| StoreError::from_backend(key, e))?;
        result
            .bytes()
            .await
            .map_err(|e| StoreError::from_backend(key, e))
    }

    /// Removes the object `key`. Removing a missing key succeeds, as S3 cannot tell the
    /// difference, so both backends behave alike.
    pub async fn delete(&self, key: &str) -> Result<(), StoreError> {
        let path = object_path(key)?;
        match self.inner.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(StoreError::Backend(e)),
        }
    }
}

/// Recovers the backend error that `BufWriter`'s `AsyncWrite` side wraps in an I/O error.
fn backend_error(error: std::io::Error) -> object_store::Error {
    let generic = |source: Box<dyn std::error::Error + Send + Sync>| object_store::Error::Generic {
        store: "filestore",
        source,
    };
    if !error
        .get_ref()
        .is_some_and(|inner| inner.is::<object_store::Error>())
    {
        return generic(Box::new(error));
    }
    match error
        .into_inner()
        .map(|inner| inner.downcast::<object_store::Error>())
    {
        Some(Ok(backend)) => *backend,
        Some(Err(other)) => generic(other),
        None => generic("the upload failed".into()),
    }
}

/// The object path of a validated key.
fn object_path(key: &str) -> Result<ObjectPath, StoreError> {
    key::check(key).map(ObjectPath::from)
}

fn open_local(data_dir: &Path) -> Result<FileStore, StoreError> {
    let dir = data_dir.join(LOCAL_DIR);
    std::fs::create_dir_all(&dir).map_err(|source| StoreError::CreateDir {
        path: dir.clone(),
        source,
    })?;
    // fsync: an upload is answered only once its bytes are on disk (docs/API.md, "Files: uploads and processing").
    let store = LocalFileSystem::new_with_prefix(&dir)
        .map_err(StoreError::Backend)?
        .with_fsync(true);
    Ok(FileStore {
        inner: Arc::new(store),
        description: format!("local directory {}", dir.display()),
    })
}

fn open_s3(bucket: &str, prefix: &str, env: &[(&str, &str)]) -> Result<FileStore, StoreError> {
    install_crypto_provider();
    let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
    for (name, value) in env {
        let key: AmazonS3ConfigKey =
            name.to_ascii_lowercase()
                .parse()
                .map_err(|_| StoreError::UnknownSetting {
                    key: (*name).to_owned(),
                })?;
        builder = builder.with_config(key, *value);
    }
    // A local S3-compatible server is reached over plain http; allow it when the endpoint says so.
    let endpoint = [AmazonS3ConfigKey::S3Endpoint, AmazonS3ConfigKey::Endpoint]
        .iter()
        .find_map(|k| builder.get_config_value(k));
    if endpoint.as_deref().is_some_and(|e| {
        e.get(..7)
            .is_some_and(|s| s.eq_ignore_ascii_case("http://"))
    }) {
        builder = builder.with_allow_http(true);
    }
    let s3 = builder.build().map_err(StoreError::Backend)?;
    let mut description = format!("s3://{bucket}/{prefix}");
    if let Some(endpoint) = endpoint {
        description.push_str(&format!(" at {endpoint}"));
    }
    let inner: Arc<dyn ObjectStore> = if prefix.is_empty() {
        Arc::new(s3)
    } else {
        Arc::new(PrefixStore::new(s3, prefix))
    };
    Ok(FileStore { inner, description })
}

/// The S3 client's TLS (rustls, chosen without a bundled provider) needs a process-wide crypto
/// provider; install ring, the one the rest of the workspace uses, unless one already is.
fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race with another installer is fine: a provider is then installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// An upload in progress. Dropped before [`Upload::finish`] or [`Upload::abort`] (say, when the
/// request handling it is cancelled), it aborts itself in the background so no multipart upload
/// is left behind.
struct Upload {
    writer: Option<BufWriter>,
}

impl Upload {
    fn new(writer: BufWriter) -> Self {
        Upload {
            writer: Some(writer),
        }
    }

    async fn put(&mut self, chunk: Bytes) -> object_store::Result<()> {
        match &mut self.writer {
            Some(writer) => writer.put(chunk).await,
            None => unreachable!("put after finish or abort"),
        }
    }

    /// Discards what was sent; a failure here leaves only an incomplete upload, so it is logged.
    async fn abort(&mut self, key: &str) {
        if let Some(mut writer) = self.writer.take()
            && let Err(error) = writer.abort().await
        {
            tracing::warn!(key, %error, "could not abort an upload");
        }
    }

    /// Sends what is buffered and completes the object.
    async fn finish(&mut self) -> std::io::Result<()> {
        match self.writer.take() {
            Some(mut writer) => writer.shutdown().await,
            None => unreachable!("finish after finish or abort"),
        }
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if let Some(mut writer) = self.writer.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                if let Err(error) = writer.abort().await {
                    tracing::warn!(%error, "could not abort a cancelled upload");
                }
            });
        }
    }
}
