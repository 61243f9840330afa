//! The planner's statistics on SQLite. brandhub binds every value it sends, and SQLite built
//! with STAT4 (the bundled one is) compiles a statement again at each execution whose bound
//! values could change its plan while `sqlite_stat4` holds key samples. So `ANALYZE` keeps
//! `sqlite_stat1`'s averages and drops the samples, and a migration drops samples an earlier
//! version left behind.

mod support;

use brandhub_store::Store;
use sqlx::Connection;

async fn open(url: &str) -> Store {
    support::migrated_store(url, 2).await
}

async fn count(connection: &mut sqlx::SqliteConnection, table: &str) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
        .fetch_one(connection)
        .await
        .unwrap()
}

#[tokio::test]
async fn sqlite_statistics_keep_averages_without_key_samples() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("stats.db").display());
    let store = open(&url).await;
    let mut side = sqlx::SqliteConnection::connect(&url).await.unwrap();
    // An indexed table with rows, so that ANALYZE has something to sample.
    for i in 0..200 {
        sqlx::query("INSERT INTO bh_table_version (table_name, version) VALUES (?, ?)")
            .bind(format!("sampled_{i:03}"))
            .bind(i64::from(i))
            .execute(&mut side)
            .await
            .unwrap();
    }

    store.analyze().await.unwrap();
    assert!(count(&mut side, "sqlite_stat1").await > 0, "averages kept");
    assert_eq!(count(&mut side, "sqlite_stat4").await, 0, "no key samples");

    // Samples left by an earlier version's ANALYZE are dropped when a server migrates.
    sqlx::raw_sql("ANALYZE").execute(&mut side).await.unwrap();
    assert!(
        count(&mut side, "sqlite_stat4").await > 0,
        "this SQLite gathers key samples (STAT4), which the test is about"
    );
    drop(store);
    let _store = open(&url).await;
    assert_eq!(count(&mut side, "sqlite_stat4").await, 0, "samples dropped");
    assert!(count(&mut side, "sqlite_stat1").await > 0);
}
