//! Where the bytes of uploaded spreadsheets live (docs/API.md, "Files: uploads and processing": "the bytes are stored before the
//! response"). A [`FileStore`] writes them to a local directory by default, or to an
//! S3-compatible bucket when given `s3://bucket/prefix`, through the `object_store` crate so
//! both backends share one code path.
//!
//! Uploads are streamed: at most [`PART_SIZE`] bytes are buffered, plus at most
//! [`MAX_PARTS_IN_FLIGHT`] parts being sent, whatever the size of the file. An upload that
//! passes its size limit, or whose body fails, is aborted and leaves nothing stored.
//!
//! Every operation needs a Tokio runtime.

mod error;
mod key;
mod location;
mod store;
#[cfg(feature = "testing")]
pub mod testing;

pub use error::{PutError, StoreError};
pub use location::{Place, is_key};
pub use store::{ByteStream, FileStore, MAX_PARTS_IN_FLIGHT, PART_SIZE};
