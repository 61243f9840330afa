//! Batched webhook deliveries on a real database (SQLite, and PostgreSQL when
//! `BRANDHUB_TEST_DATABASE_URL` is set): a batch webhook's events gather in one delivery that
//! is not claimed before its wait has passed, events fanned out meanwhile join it, a full
//! batch is due at once, and what comes after a claimed batch opens the next. Time is a manual
//! clock that the tests move: no test sleeps against the wait.

mod support;

use brandhub_catalog::{Cell, Layout, Record, catalog};
use brandhub_store::events::EVENT_TABLE;
use brandhub_store::{Clock, DeliveryClaim, Store, StoreOptions};
use sea_query::{Alias, Query};
use serde_json::Value;
use std::time::Duration;
use support::{Db, on_both};

/// The manual clock's start: any fixed time does.
const START: i64 = 1_900_000_000_000;

/// The batch wait of these tests.
const WAIT: Duration = Duration::from_secs(1);

const COMPANY: &str = "0190000000000000000000000000000A";
const USER: &str = "0190000000000000000000000000000C";
const WEBHOOK: &str = "0190000000000000000000000000000D";

/// A fresh, migrated store on a manual clock with an admin user, a company and the user's
/// batch webhook on `stock.updated`; `None` when PostgreSQL is not configured.
async fn open(db: Db, name: &str) -> Option<(Store, Clock, tempfile::TempDir)> {
    let dir = tempfile::tempdir().unwrap();
    let url = match db {
        Db::Sqlite => format!("sqlite://{}", dir.path().join("batches.db").display()),
        Db::Postgres => support::fresh_postgres("batches", name).await?,
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
    let created = || Cell::Text("2031-01-01T00:00:00".into());
    let mut tx = store.begin().await.unwrap();
    let company = record(
        "company",
        COMPANY,
        &[("name", "Acme".into()), ("createdDate", created())],
    );
    tx.insert_records(catalog().resource("company").unwrap(), &mut [company])
        .await
        .unwrap();
    let user = record(
        "user",
        USER,
        &[
            ("email", "a@acme.test".into()),
            ("name", "A".into()),
            ("type", "admin".into()),
            ("status", "active".into()),
            ("createdDate", created()),
        ],
    );
    tx.insert_records(catalog().resource("user").unwrap(), &mut [user])
        .await
        .unwrap();
    let webhook = catalog().resource("webhook").unwrap();
    let mut hook = record(
        "webhook",
        WEBHOOK,
        &[
            ("fk_user", USER.into()),
            ("url", "https://hooks.example.com/batches".into()),
            ("active", Cell::Boolean(true)),
            ("batch", Cell::Boolean(true)),
            ("createdDate", created()),
            ("secret", "whsec_test".into()),
        ],
    );
    hook.lists[Layout::of(webhook).list("events")] = vec!["stock.updated".into()];
    tx.insert_records(webhook, &mut [hook]).await.unwrap();
    tx.commit().await.unwrap();
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

/// Puts `count` events into the outbox, each about the company (any record the webhook's
/// user sees does); their ids, oldest first.
async fn events(store: &Store, count: usize) -> Vec<String> {
    let now = store.clock().now_millis();
    let ids: Vec<String> = (0..count).map(|_| brandhub_store::ids::new_id()).collect();
    for chunk in ids.chunks(500) {
        let mut insert = Query::insert()
            .into_table(Alias::new(EVENT_TABLE))
            .columns(
                [
                    "id",
                    "event_type",
                    "resource",
                    "record_id",
                    "created_at",
                    "created_date",
                ]
                .map(Alias::new),
            )
            .to_owned();
        for id in chunk {
            insert.values_panic([
                id.clone().into(),
                "stock.updated".into(),
                "company".into(),
                COMPANY.into(),
                now.into(),
                brandhub_store::ids::timestamp_at(now).into(),
            ]);
        }
        store.execute_untracked(EVENT_TABLE, &insert).await.unwrap();
    }
    ids
}

/// Fans out everything in the outbox; when the batch left open falls due.
async fn fan_out(store: &Store) -> Option<i64> {
    let mut due = None;
    loop {
        let fanned = store.fan_out_events(200, WAIT).await.unwrap();
        if fanned.events == 0 {
            return due;
        }
        due = fanned.batch_due.or(due);
    }
}

/// The ids of the events a claimed batch carries, in its body's order.
fn carried(claim: &DeliveryClaim) -> Vec<String> {
    let body: Value = serde_json::from_str(&claim.body).unwrap();
    assert_eq!(body["type"], "batch", "{body}");
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| {
            assert_eq!(event["type"], "stock.updated");
            assert_eq!(event["data"]["id"], COMPANY);
            event["id"].as_str().unwrap().to_string()
        })
        .collect()
}

const LEASE: i64 = 60_000;

async fn a_batch_gathers_events_until_its_wait_has_passed(db: Db) {
    let Some((store, clock, _dir)) = open(db, "gathers").await else {
        return;
    };
    let mut sent = events(&store, 3).await;
    assert_eq!(fan_out(&store).await, Some(START + 1_000));
    assert!(
        store.claim_delivery(LEASE).await.unwrap().is_none(),
        "a batch is not sent before its wait"
    );
    // Events fanned out meanwhile join the open batch, which stays due when it was.
    clock.advance(Duration::from_millis(600));
    sent.extend(events(&store, 2).await);
    assert_eq!(fan_out(&store).await, Some(START + 1_000));
    clock.advance(Duration::from_millis(399));
    assert!(store.claim_delivery(LEASE).await.unwrap().is_none());
    clock.advance(Duration::from_millis(1));
    let claim = store
        .claim_delivery(LEASE)
        .await
        .unwrap()
        .expect("the batch is due");
    assert_eq!(claim.event_type, "batch");
    assert_eq!(claim.withheld, None);
    assert_eq!(carried(&claim), sent, "one delivery, oldest first");
    assert!(store.claim_delivery(LEASE).await.unwrap().is_none());

    // A claimed batch takes no more: the next event opens the next batch.
    let next = events(&store, 1).await;
    assert_eq!(fan_out(&store).await, Some(START + 2_000));
    clock.advance(WAIT);
    let claim = store.claim_delivery(LEASE).await.unwrap().expect("due");
    assert_eq!(carried(&claim), next);
}

async fn a_full_batch_is_due_at_once_and_the_rest_waits(db: Db) {
    let Some((store, clock, _dir)) = open(db, "full").await else {
        return;
    };
    let first = events(&store, 1).await;
    fan_out(&store).await;
    let more = events(&store, 1_200).await;
    // 999 fill the open batch, which is due now; the other 201 open the next.
    assert_eq!(fan_out(&store).await, Some(START + 1_000));
    let claim = store
        .claim_delivery(LEASE)
        .await
        .unwrap()
        .expect("a full batch is due at once");
    let mut expected = first.clone();
    expected.extend(more[..999].iter().cloned());
    assert_eq!(carried(&claim), expected);
    assert!(
        store.claim_delivery(LEASE).await.unwrap().is_none(),
        "the rest waits"
    );
    clock.advance(WAIT);
    let rest = store.claim_delivery(LEASE).await.unwrap().expect("due");
    assert_eq!(carried(&rest), more[999..].to_vec());
}

on_both!(
    a_batch_gathers_events_until_its_wait_has_passed,
    a_full_batch_is_due_at_once_and_the_rest_waits,
);
