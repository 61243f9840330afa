//! Parsing of the configured location, separate from opening it so the accepted forms are in one
//! place and testable without a backend.

use crate::StoreError;
use std::path::{Path, PathBuf};

/// Where a configured store keeps the bytes, known without opening it: for tools that copy
/// the store as it lies (`brandhub backup` and `restore`) rather than through the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// A directory of the local disk holding each file as one regular file named by its key
    /// (a name [`is_key`] accepts); an upload being written is a file of another name until
    /// it is complete.
    Directory(PathBuf),
    /// A bucket, as `s3://bucket[/prefix]`: its own tools (versioning, replication) keep it.
    Bucket(String),
}

impl Place {
    /// The place of the store that [`crate::FileStore::open`] opens for the same arguments.
    pub fn of(location: Option<&str>, data_dir: &Path) -> Result<Place, StoreError> {
        Ok(match Location::parse(location)? {
            Location::Local => Place::Directory(data_dir.join(crate::store::LOCAL_DIR)),
            Location::S3 { bucket, prefix } if prefix.is_empty() => {
                Place::Bucket(format!("s3://{bucket}"))
            }
            Location::S3 { bucket, prefix } => Place::Bucket(format!("s3://{bucket}/{prefix}")),
        })
    }
}

/// Whether `name` is a key the store accepts (a file id): a complete file of a local
/// [`Place::Directory`] has such a name.
pub fn is_key(name: &str) -> bool {
    crate::key::check(name).is_ok()
}

/// Where files are kept, as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Location {
    /// Under `<data_dir>/files` on the local disk.
    Local,
    /// In `bucket`, under `prefix` (segments joined by `/`, or empty for the bucket's root).
    S3 { bucket: String, prefix: String },
}

impl Location {
    /// Parses `None` (or an empty string) as the local disk and `s3://bucket[/prefix]` as S3.
    pub(crate) fn parse(location: Option<&str>) -> Result<Self, StoreError> {
        let Some(given) = location.map(str::trim).filter(|s| !s.is_empty()) else {
            return Ok(Location::Local);
        };
        let unsupported = |reason: &str| StoreError::UnsupportedLocation {
            location: given.to_owned(),
            reason: reason.to_owned(),
        };
        let rest = match given.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("s3") => rest,
            Some((scheme, _)) => return Err(unsupported(&format!("scheme {scheme:?} is not s3"))),
            None => return Err(unsupported("not a URL")),
        };
        if rest.contains(['?', '#']) {
            return Err(unsupported("a query or fragment is not allowed"));
        }
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(unsupported("the bucket name is missing"));
        }
        if !bucket
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        {
            return Err(unsupported(
                "a bucket name has only lowercase letters, digits, '-' and '.'",
            ));
        }
        let segments: Vec<&str> = prefix.split('/').filter(|s| !s.is_empty()).collect();
        if segments.iter().any(|s| *s == "." || *s == "..") {
            return Err(unsupported("the prefix may not contain '.' or '..'"));
        }
        Ok(Location::S3 {
            bucket: bucket.to_owned(),
            prefix: segments.join("/"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3(bucket: &str, prefix: &str) -> Location {
        Location::S3 {
            bucket: bucket.into(),
            prefix: prefix.into(),
        }
    }

    #[test]
    fn parses_the_accepted_forms() {
        assert_eq!(Location::parse(None).unwrap(), Location::Local);
        assert_eq!(Location::parse(Some("  ")).unwrap(), Location::Local);
        assert_eq!(Location::parse(Some("s3://b")).unwrap(), s3("b", ""));
        assert_eq!(Location::parse(Some("s3://b/")).unwrap(), s3("b", ""));
        assert_eq!(
            Location::parse(Some("S3://my.bucket-1/up/loads/")).unwrap(),
            s3("my.bucket-1", "up/loads")
        );
        assert_eq!(
            Location::parse(Some("s3://b//a//c")).unwrap(),
            s3("b", "a/c")
        );
    }

    #[test]
    fn places_are_the_data_dir_s_files_or_the_bucket() {
        let data = Path::new("/srv/brandhub");
        assert_eq!(
            Place::of(None, data).unwrap(),
            Place::Directory(data.join("files"))
        );
        assert_eq!(
            Place::of(Some("s3://b//up/"), data).unwrap(),
            Place::Bucket("s3://b/up".into())
        );
        assert_eq!(
            Place::of(Some("s3://b"), data).unwrap(),
            Place::Bucket("s3://b".into())
        );
        assert!(Place::of(Some("/var/files"), data).is_err());
        assert!(is_key("0123456789ABCDEF0123456789ABCDEF"));
        // An upload being written by the local backend.
        assert!(!is_key("0123456789ABCDEF0123456789ABCDEF#1"));
    }

    #[test]
    fn rejects_everything_else_naming_the_accepted_forms() {
        for bad in [
            "/var/files",
            "files",
            "file:///var/files",
            "gs://b/p",
            "https://s3.amazonaws.com/b",
            "s3://",
            "s3:///p",
            "s3://Bucket/p",
            "s3://b/../p",
            "s3://b/p?x=1",
        ] {
            let err = Location::parse(Some(bad)).unwrap_err();
            assert!(
                matches!(err, StoreError::UnsupportedLocation { .. }),
                "{bad}"
            );
            let text = err.to_string();
            assert!(text.contains("s3://bucket[/prefix]"), "{text}");
            assert!(text.contains(bad), "{text}");
        }
    }
}
