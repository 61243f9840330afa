//! The local-disk backend, the default.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use brandhub_filestore::{FileStore, StoreError};

fn files_in(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect()
}

#[tokio::test]
async fn local_store_streams_in_and_out_and_aborts_cleanly() {
    let data_dir = tempfile::tempdir().expect("tempdir");
    let store = FileStore::open(None, data_dir.path()).expect("open");
    let dir = data_dir.path().join("files");
    assert!(dir.is_dir(), "the files directory is created");
    assert!(store.describe().contains("local directory"));

    common::exercise(&store).await;

    // Aborted uploads leave no staging files behind: only what was completed and kept.
    let expected: BTreeSet<String> = ["0123456789abcdef0123456789abcdef", "empty", "exact"]
        .map(String::from)
        .into();
    assert_eq!(files_in(&dir), expected);
    assert_eq!(std::fs::metadata(dir.join("exact")).unwrap().len(), 3 << 20);
}

#[tokio::test]
async fn a_cancelled_upload_leaves_nothing() {
    let data_dir = tempfile::tempdir().expect("tempdir");
    let store = FileStore::open(None, data_dir.path()).expect("open");
    let dir = data_dir.path().join("files");
    common::cancel_an_upload(&store, "cancelled").await;
    assert!(
        common::eventually(|| files_in(&dir).is_empty()).await,
        "{:?}",
        files_in(&dir)
    );
    common::assert_missing(&store, "cancelled").await;
}

#[test]
fn unsupported_locations_are_a_clear_error() {
    let data_dir = tempfile::tempdir().expect("tempdir");
    for bad in ["/srv/files", "file:///srv/files", "gs://bucket/p", "s3://"] {
        let err = FileStore::open(Some(bad), data_dir.path()).expect_err(bad);
        assert!(matches!(err, StoreError::UnsupportedLocation { .. }));
        let text = err.to_string();
        assert!(text.contains(bad), "{text}");
        assert!(text.contains("s3://bucket[/prefix]"), "{text}");
    }
    assert!(!data_dir.path().join("files").exists());
}

#[test]
fn unknown_s3_settings_are_rejected() {
    let data_dir = tempfile::tempdir().expect("tempdir");
    let err = FileStore::open_with_env(Some("s3://bucket"), data_dir.path(), &[("AWS_NOPE", "1")])
        .expect_err("unknown setting");
    assert!(matches!(err, StoreError::UnknownSetting { .. }), "{err}");
}
