//! The job queue of uploaded files on a real SQLite database: a file's job is claimed by one
//! worker at a time, heartbeats and finishing need the claim, released jobs come back, and a
//! claim whose heartbeat is too old is taken over by another worker.

use brandhub_catalog::{Cell, Layout, Record, catalog};
use brandhub_store::{Store, StoreOptions};
use std::time::Duration;

async fn open() -> (Store, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::connect(&StoreOptions {
        url: format!("sqlite://{}", dir.path().join("jobs.db").display()),
        max_connections: 4,
        page_cache_bytes: 0,
        matches_first_limit: 40,
        pg_settings: Vec::new(),
    })
    .await
    .unwrap();
    store.migrate().await.unwrap();
    (store, dir)
}

fn record(resource: &str, id: &str, cells: &[(&str, Cell)]) -> Record {
    let resource = catalog().resource(resource).unwrap();
    let layout = Layout::of(resource);
    let mut record = Record::empty(resource);
    record.cells[layout.cell("id")] = Cell::Text(id.to_string());
    for (path, cell) in cells {
        record.cells[layout.cell(path)] = cell.clone();
    }
    record
}

const COMPANY: &str = "0190000000000000000000000000000A";
const BRAND: &str = "0190000000000000000000000000000B";
const USER: &str = "0190000000000000000000000000000C";

/// A company, brand and user, and a pending file of theirs with its job.
async fn queued_file(store: &Store, id: &str) {
    let created = || Cell::Text("2031-01-01T00:00:00".into());
    if store
        .text_field_of("brand", "id", BRAND)
        .await
        .unwrap()
        .is_none()
    {
        let mut tx = store.begin().await.unwrap();
        let catalog = catalog();
        tx.insert_records(
            catalog.resource("company").unwrap(),
            &[record(
                "company",
                COMPANY,
                &[("name", "Acme".into()), ("createdDate", created())],
            )],
        )
        .await
        .unwrap();
        tx.insert_records(
            catalog.resource("brand").unwrap(),
            &[record(
                "brand",
                BRAND,
                &[("fk_company", COMPANY.into()), ("name", "Acme".into())],
            )],
        )
        .await
        .unwrap();
        tx.insert_records(
            catalog.resource("user").unwrap(),
            &[record(
                "user",
                USER,
                &[
                    ("email", "a@acme.test".into()),
                    ("name", "A".into()),
                    ("type", "admin".into()),
                    ("status", "active".into()),
                    ("createdDate", created()),
                ],
            )],
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
    }
    let file = record(
        "file",
        id,
        &[
            ("fk_brand", BRAND.into()),
            ("fk_user", USER.into()),
            ("fileType", "product".into()),
            ("fileName", "p.xlsx".into()),
            ("createdDate", created()),
            ("status", "pending".into()),
        ],
    );
    store.create_file(file).await.unwrap();
}

const TIMEOUT_MS: i64 = 60_000;

#[tokio::test]
async fn one_worker_holds_a_job_until_it_finishes_or_releases_it() {
    let (store, _dir) = open().await;
    let id = "0190000000000000000000000000F001";
    queued_file(&store, id).await;
    assert!(store.has_claimable_job(TIMEOUT_MS).await.unwrap());

    let job = store
        .claim_job("w1", TIMEOUT_MS)
        .await
        .unwrap()
        .expect("a job");
    assert_eq!((job.file_id.as_str(), job.attempts), (id, 1));
    assert_eq!(
        store.file_status(id).await.unwrap().as_deref(),
        Some("processing")
    );
    assert!(
        store.claim_job("w2", TIMEOUT_MS).await.unwrap().is_none(),
        "a claimed job is not claimed twice"
    );
    assert!(!store.has_claimable_job(TIMEOUT_MS).await.unwrap());
    assert!(store.heartbeat_job(id, "w1").await.unwrap());
    assert!(
        !store.heartbeat_job(id, "w2").await.unwrap(),
        "only the holder beats"
    );

    let mut tx = store.begin().await.unwrap();
    assert!(
        !tx.finish_job(id, "w2").await.unwrap(),
        "only the holder finishes"
    );
    drop(tx);

    store.release_job(id, "w1", 0).await.unwrap();
    assert_eq!(
        store.file_status(id).await.unwrap().as_deref(),
        Some("pending")
    );
    let again = store
        .claim_job("w2", TIMEOUT_MS)
        .await
        .unwrap()
        .expect("a released job comes back");
    assert_eq!(again.attempts, 2);

    let mut tx = store.begin().await.unwrap();
    assert!(tx.finish_job(id, "w2").await.unwrap());
    tx.update_file(id, &[("status", "processed".into())])
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert!(
        !store.has_claimable_job(TIMEOUT_MS).await.unwrap(),
        "a done job stays done"
    );
    assert!(store.claim_job("w1", TIMEOUT_MS).await.unwrap().is_none());
    assert_eq!(
        store.file_status(id).await.unwrap().as_deref(),
        Some("processed")
    );
}

#[tokio::test]
async fn a_job_whose_heartbeat_is_too_old_is_taken_over() {
    let (store, _dir) = open().await;
    let id = "0190000000000000000000000000F002";
    queued_file(&store, id).await;
    store
        .claim_job("dead", TIMEOUT_MS)
        .await
        .unwrap()
        .expect("a job");
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(
        store.claim_job("w2", TIMEOUT_MS).await.unwrap().is_none(),
        "fresh enough"
    );
    let taken = store
        .claim_job("w2", 10)
        .await
        .unwrap()
        .expect("an old claim is taken over");
    assert_eq!(taken.attempts, 2);
    assert!(
        !store.heartbeat_job(id, "dead").await.unwrap(),
        "the old holder has lost it"
    );
    let mut tx = store.begin().await.unwrap();
    assert!(
        !tx.finish_job(id, "dead").await.unwrap(),
        "and cannot finish it"
    );
    drop(tx);
    let mut tx = store.begin().await.unwrap();
    assert!(tx.finish_job(id, "w2").await.unwrap());
    tx.commit().await.unwrap();
}

#[tokio::test]
async fn jobs_are_claimed_oldest_first_and_each_once() {
    let (store, _dir) = open().await;
    // Queued in the opposite order of their ids, so that the order of queueing must decide.
    let ids = [
        "0190000000000000000000000000F005",
        "0190000000000000000000000000F004",
        "0190000000000000000000000000F003",
    ];
    for id in ids {
        queued_file(&store, id).await;
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let mut claimed = Vec::new();
    while let Some(job) = store.claim_job("w", TIMEOUT_MS).await.unwrap() {
        claimed.push(job.file_id);
    }
    assert_eq!(claimed, ids);
}

#[tokio::test]
async fn a_heartbeat_keeps_a_claim() {
    let (store, _dir) = open().await;
    let id = "0190000000000000000000000000F006";
    queued_file(&store, id).await;
    store
        .claim_job("w1", TIMEOUT_MS)
        .await
        .unwrap()
        .expect("a job");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(store.heartbeat_job(id, "w1").await.unwrap());
    assert!(
        store.claim_job("w2", 200).await.unwrap().is_none(),
        "a claim whose heartbeat is fresh is not taken over"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        store.claim_job("w2", 200).await.unwrap().is_some(),
        "without heartbeats it is"
    );
}
