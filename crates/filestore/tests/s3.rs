//! The S3 backend against a local moto server (`pip install 'moto[server]'`). When
//! `moto_server` is not on PATH: a failure under `CI=true`, else skipped with a line saying so.

mod common;

use brandhub_filestore::FileStore;
use brandhub_filestore::testing::Moto;

const BUCKET: &str = "brandhub-test";

#[tokio::test]
async fn s3_store_streams_in_and_out_and_aborts_cleanly() {
    let Some(moto) = Moto::start("s3_store_streams_in_and_out_and_aborts_cleanly") else {
        return;
    };
    moto.create_bucket(BUCKET);
    let settings = moto.settings();
    let settings: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let data_dir = tempfile::tempdir().expect("tempdir");
    let store = FileStore::open_with_env(
        Some(&format!("s3://{BUCKET}/uploads/")),
        data_dir.path(),
        &settings,
    )
    .expect("open");
    assert!(
        store
            .describe()
            .starts_with(&format!("s3://{BUCKET}/uploads")),
        "{}",
        store.describe()
    );
    assert!(
        !data_dir.path().join("files").exists(),
        "no local directory"
    );

    common::exercise(&store).await;

    // Objects sit under the prefix, and only the completed ones are there.
    assert_eq!(
        moto.keys(BUCKET),
        [
            "uploads/0123456789abcdef0123456789abcdef",
            "uploads/empty",
            "uploads/exact"
        ]
    );

    // No aborted multipart upload is left in the bucket, nor one whose request was dropped.
    assert_eq!(moto.open_uploads(BUCKET), Vec::<String>::new());
    common::cancel_an_upload(&store, "cancelled").await;
    assert_eq!(
        moto.open_uploads(BUCKET),
        ["uploads/cancelled"],
        "under way when dropped"
    );
    assert!(
        common::eventually(|| moto.open_uploads(BUCKET).is_empty()).await,
        "{:?}",
        moto.open_uploads(BUCKET)
    );
    common::assert_missing(&store, "cancelled").await;
    assert_eq!(moto.keys(BUCKET).len(), 3);
    drop(moto);
}
