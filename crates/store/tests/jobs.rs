//! The job queue of uploaded files on a real database (SQLite, and PostgreSQL when
//! `BRANDHUB_TEST_DATABASE_URL` is set): a file's job is claimed by one worker at a time,
//! heartbeats and finishing need the claim, released jobs come back, and a claim whose
//! heartbeat is too old is taken over by another worker. Time is a manual clock that the tests
//! move: no test sleeps against a time-out.

mod support;

use brandhub_catalog::{Cell, FileStatus, Layout, Record, catalog};
use brandhub_store::{Clock, Store, StoreOptions};
use std::time::Duration;
use support::{Db, on_both};

/// The manual clock's start: any fixed time does.
const START: i64 = 1_900_000_000_000;

/// A fresh, migrated store on a manual clock; `None` when PostgreSQL is not configured (the
/// variant is skipped, or fails under `CI=true`). The directory keeps the SQLite file.
async fn open(db: Db, name: &str) -> Option<(Store, Clock, tempfile::TempDir)> {
    let dir = tempfile::tempdir().unwrap();
    let url = match db {
        Db::Sqlite => format!("sqlite://{}", dir.path().join("jobs.db").display()),
        Db::Postgres => support::fresh_postgres("jobs", name).await?,
    };
    let clock = Clock::manual(START);
    let store = Store::connect(&StoreOptions {
        url,
        max_connections: 4,
        page_cache_bytes: 0,
        matches_first_limit: 40,
        pg_settings: Vec::new(),
        database_wait: brandhub_store::db::DEFAULT_DATABASE_WAIT,
    })
    .await
    .unwrap()
    .with_clock(clock.clone());
    store.migrate().await.unwrap();
    Some((store, clock, dir))
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
        .text_field_of(brandhub_catalog::Res::Brand, "id", BRAND)
        .await
        .unwrap()
        .is_none()
    {
        let mut tx = store.begin().await.unwrap();
        let catalog = catalog();
        tx.insert_records(
            catalog.resource("company").unwrap(),
            &mut [record(
                "company",
                COMPANY,
                &[("name", "Acme".into()), ("createdDate", created())],
            )],
        )
        .await
        .unwrap();
        tx.insert_records(
            catalog.resource("brand").unwrap(),
            &mut [record(
                "brand",
                BRAND,
                &[("fk_company", COMPANY.into()), ("name", "Acme".into())],
            )],
        )
        .await
        .unwrap();
        tx.insert_records(
            catalog.resource("user").unwrap(),
            &mut [record(
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

async fn one_worker_holds_a_job_until_it_finishes_or_releases_it(db: Db) {
    let Some((store, _clock, _dir)) = open(db, "holds").await else {
        return;
    };
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
        store.file_status(id).await.unwrap().map(FileStatus::as_str),
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

    store.release_job(id, "w1", START).await.unwrap();
    assert_eq!(
        store.file_status(id).await.unwrap().map(FileStatus::as_str),
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
        store.file_status(id).await.unwrap().map(FileStatus::as_str),
        Some("processed")
    );
}

async fn a_released_job_waits_until_it_is_available(db: Db) {
    let Some((store, clock, _dir)) = open(db, "released").await else {
        return;
    };
    let id = "0190000000000000000000000000F007";
    queued_file(&store, id).await;
    store
        .claim_job("w1", TIMEOUT_MS)
        .await
        .unwrap()
        .expect("a job");
    store.release_job(id, "w1", START + 5_000).await.unwrap();
    clock.advance(Duration::from_millis(4_999));
    assert!(!store.has_claimable_job(TIMEOUT_MS).await.unwrap());
    assert!(
        store.claim_job("w2", TIMEOUT_MS).await.unwrap().is_none(),
        "not before its retry time"
    );
    clock.advance(Duration::from_millis(1));
    assert!(store.has_claimable_job(TIMEOUT_MS).await.unwrap());
    let again = store
        .claim_job("w2", TIMEOUT_MS)
        .await
        .unwrap()
        .expect("claimable at its retry time");
    assert_eq!(again.attempts, 2);
}

async fn a_job_whose_heartbeat_is_too_old_is_taken_over(db: Db) {
    let Some((store, clock, _dir)) = open(db, "taken_over").await else {
        return;
    };
    let id = "0190000000000000000000000000F002";
    queued_file(&store, id).await;
    store
        .claim_job("dead", TIMEOUT_MS)
        .await
        .unwrap()
        .expect("a job");
    clock.advance(Duration::from_millis(TIMEOUT_MS as u64));
    assert!(
        store.claim_job("w2", TIMEOUT_MS).await.unwrap().is_none(),
        "a heartbeat exactly as old as the time-out is fresh enough"
    );
    clock.advance(Duration::from_millis(1));
    assert!(store.has_claimable_job(TIMEOUT_MS).await.unwrap());
    let taken = store
        .claim_job("w2", TIMEOUT_MS)
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

async fn jobs_are_claimed_oldest_first_and_each_once(db: Db) {
    let Some((store, clock, _dir)) = open(db, "oldest_first").await else {
        return;
    };
    // Queued in the opposite order of their ids, so that the order of queueing must decide.
    let ids = [
        "0190000000000000000000000000F005",
        "0190000000000000000000000000F004",
        "0190000000000000000000000000F003",
    ];
    for id in ids {
        queued_file(&store, id).await;
        clock.advance(Duration::from_millis(1));
    }
    let mut claimed = Vec::new();
    while let Some(job) = store.claim_job("w", TIMEOUT_MS).await.unwrap() {
        claimed.push(job.file_id);
    }
    assert_eq!(claimed, ids);
}

async fn a_heartbeat_keeps_a_claim(db: Db) {
    let Some((store, clock, _dir)) = open(db, "heartbeat").await else {
        return;
    };
    let id = "0190000000000000000000000000F006";
    queued_file(&store, id).await;
    store
        .claim_job("w1", TIMEOUT_MS)
        .await
        .unwrap()
        .expect("a job");
    clock.advance(Duration::from_millis(TIMEOUT_MS as u64 - 1));
    assert!(store.heartbeat_job(id, "w1").await.unwrap());
    clock.advance(Duration::from_millis(TIMEOUT_MS as u64 - 1));
    assert!(
        store.claim_job("w2", TIMEOUT_MS).await.unwrap().is_none(),
        "a claim whose heartbeat is fresh is not taken over, however old the claim"
    );
    clock.advance(Duration::from_millis(2));
    assert!(
        store.claim_job("w2", TIMEOUT_MS).await.unwrap().is_some(),
        "without heartbeats it is"
    );
}

on_both!(
    one_worker_holds_a_job_until_it_finishes_or_releases_it,
    a_released_job_waits_until_it_is_available,
    a_job_whose_heartbeat_is_too_old_is_taken_over,
    jobs_are_claimed_oldest_first_and_each_once,
    a_heartbeat_keeps_a_claim,
);
