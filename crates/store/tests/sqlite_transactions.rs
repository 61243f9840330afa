//! SQLite write transactions begin and end by statements of their own, sent with the
//! transaction's first and last statements (one round trip to the connection's thread fewer
//! each). What sqlx's transactions did for them must still hold: a transaction dropped
//! before its commit leaves nothing, its connection comes back without a transaction open,
//! and the next writer gets its turn.

mod support;

use brandhub_store::{Store, StoreError};
use sea_query::{Alias, Expr, ExprTrait, Query};
use sqlx::Connection;

async fn open(url: &str) -> Store {
    support::migrated_store(url, 2).await
}

fn insert_version(name: &str, version: i64) -> sea_query::InsertStatement {
    Query::insert()
        .into_table(Alias::new("bh_table_version"))
        .columns([Alias::new("table_name"), Alias::new("version")])
        .values_panic([name.into(), version.into()])
        .to_owned()
}

async fn names(side: &mut sqlx::SqliteConnection) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT table_name FROM bh_table_version WHERE table_name LIKE 'tx_%' ORDER BY 1",
    )
    .fetch_all(side)
    .await
    .unwrap()
}

#[tokio::test]
async fn a_transaction_dropped_before_its_commit_leaves_nothing_and_the_next_one_writes() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("tx.db").display());
    let store = open(&url).await;
    let mut side = sqlx::SqliteConnection::connect(&url).await.unwrap();
    // More rounds than the pool has connections: a connection given back with its
    // transaction open would fail the next BEGIN on it, or hold the write lock.
    for round in 0..6 {
        let mut dropped = store.begin().await.unwrap();
        dropped
            .execute_untracked(
                "bh_table_version",
                &insert_version(&format!("tx_dropped_{round}"), 1),
            )
            .await
            .unwrap();
        drop(dropped);
        let mut kept = store.begin().await.unwrap();
        kept.execute_untracked(
            "bh_table_version",
            &insert_version(&format!("tx_kept_{round}"), 1),
        )
        .await
        .unwrap();
        kept.commit().await.unwrap();
    }
    let expected: Vec<String> = (0..6).map(|round| format!("tx_kept_{round}")).collect();
    assert_eq!(names(&mut side).await, expected);
}

#[tokio::test]
async fn a_statement_that_fails_in_a_batch_gives_its_own_error_and_nothing_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("tx.db").display());
    let store = open(&url).await;
    let mut side = sqlx::SqliteConnection::connect(&url).await.unwrap();
    let mut tx = store.begin().await.unwrap();
    // The first statement travels with BEGIN; the second takes a key the first took.
    tx.execute_untracked("bh_table_version", &insert_version("tx_twice", 1))
        .await
        .unwrap();
    let error = tx
        .execute_untracked("bh_table_version", &insert_version("tx_twice", 2))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::Conflict { .. }), "{error:?}");
    drop(tx);
    // A commit that wrote nothing sends nothing, and the store writes on.
    store.begin().await.unwrap().commit().await.unwrap();
    let mut tx = store.begin().await.unwrap();
    tx.execute_untracked("bh_table_version", &insert_version("tx_after", 1))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(names(&mut side).await, vec!["tx_after".to_string()]);
}

/// `brandhub import` (or a second `serve`) opens a database that a running server writes:
/// its migration must wait for each of the server's writes to end, not fail, which a schema
/// transaction that began by reading and then asked for the write lock did (SQLite refuses
/// that lock at once, without waiting, while another connection holds it).
#[tokio::test]
async fn a_migration_waits_for_the_writes_of_another_store() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("tx.db").display());
    let server = open(&url).await;
    // As a new build finds the database: its schema is made again.
    let mut tx = server.begin().await.unwrap();
    let earlier = Query::update()
        .table(Alias::new("bh_meta"))
        .value(Alias::new("value"), "an earlier build")
        .and_where(Expr::col(Alias::new("name")).eq(brandhub_store::schema::FINGERPRINT_NAME))
        .to_owned();
    assert_eq!(tx.execute_untracked("bh_meta", &earlier).await.unwrap(), 1);
    tx.commit().await.unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = tokio::spawn({
        let done = done.clone();
        async move {
            let mut round = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let mut tx = server.begin().await.unwrap();
                tx.execute_untracked(
                    "bh_table_version",
                    &insert_version(&format!("tx_w{round}"), 1),
                )
                .await
                .unwrap();
                tx.commit().await.unwrap();
                round += 1;
            }
            round
        }
    });
    let second = support::migrated_store(&url, 2).await;
    second.close().await;
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let rounds = writer.await.unwrap();
    assert!(rounds > 0, "the server wrote while the others migrated");
}
