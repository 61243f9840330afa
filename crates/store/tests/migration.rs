//! A migration beside a running server: a database whose schema is this build's is left
//! alone (a start-up takes no lock a write holds), and a new build's migration that
//! PostgreSQL aborts for a deadlock with another session runs again.

mod support;

use brandhub_catalog::catalog;
use brandhub_store::schema::FINGERPRINT_NAME;
use sqlx::{Connection, PgConnection};
use std::time::Duration;

/// Long enough for any migration of an empty database on a loaded machine; a migration that
/// waits for a lock held until the test ends never finishes within it.
const MIGRATION_BOUND: Duration = Duration::from_secs(60);

/// Runs `sql` on the SQLite database of `url` on a connection of its own, outside any store.
async fn on_sqlite(url: &str, sql: String) -> Option<i64> {
    let mut connection = sqlx::SqliteConnection::connect(url).await.unwrap();
    let answer = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .fetch_optional(&mut connection)
        .await
        .unwrap();
    connection.close().await.ok();
    answer
}

/// The schema's version after a start-up (SQLite counts every change of its schema).
async fn schema_version(url: &str) -> i64 {
    support::migrated_store(url, 1).await.close().await;
    on_sqlite(url, "PRAGMA schema_version".into())
        .await
        .unwrap()
}

#[tokio::test]
async fn sqlite_a_current_schema_is_not_made_again() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("m.db").display());
    let first = schema_version(&url).await;
    let second = schema_version(&url).await;
    assert_eq!(first, second, "a second start-up changed the schema");
}

/// A start-up leaves a current schema as it is, even one changed by hand; `brandhub migrate`
/// (`migrate_fully`) makes it whole again.
#[tokio::test]
async fn sqlite_an_index_dropped_by_hand_comes_back_with_a_full_migration() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("m.db").display());
    support::migrated_store(&url, 1).await.close().await;
    let index = format!("ix_{}_bh_change", catalog().resources()[0].table);
    let indexes = || {
        on_sqlite(
            &url,
            format!("SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = '{index}'"),
        )
    };
    assert_eq!(indexes().await, Some(1), "the migration made {index}");
    on_sqlite(&url, format!("DROP INDEX \"{index}\"")).await;
    support::migrated_store(&url, 1).await.close().await;
    assert_eq!(
        indexes().await,
        Some(0),
        "a start-up leaves the schema as it is"
    );
    let store = support::migrated_store(&url, 1).await;
    store.migrate_fully().await.unwrap();
    store.close().await;
    assert_eq!(
        indexes().await,
        Some(1),
        "a full migration makes {index} again"
    );
}

#[tokio::test]
async fn postgres_a_current_schema_is_migrated_beside_an_open_write() {
    let Some(url) = support::fresh_postgres("migration", "current").await else {
        return;
    };
    support::migrated_store(&url, 2).await.close().await;
    // An open write transaction on every resource table holds locks that making a trigger
    // again would wait for until it ends.
    let mut writer = PgConnection::connect(&url).await.unwrap();
    sqlx::raw_sql("BEGIN").execute(&mut writer).await.unwrap();
    for resource in catalog().resources() {
        let lock = format!("LOCK TABLE \"{}\" IN ROW EXCLUSIVE MODE", resource.table);
        sqlx::raw_sql(sqlx::AssertSqlSafe(lock))
            .execute(&mut writer)
            .await
            .unwrap();
    }
    let again = tokio::time::timeout(MIGRATION_BOUND, support::migrated_store(&url, 2))
        .await
        .expect("a current schema is migrated without waiting for the open write");
    again.close().await;
    sqlx::raw_sql("ROLLBACK")
        .execute(&mut writer)
        .await
        .unwrap();
    writer.close().await.ok();
    support::drop_postgres(&url).await;
}

#[tokio::test]
async fn postgres_a_new_schema_is_made_again_after_a_deadlock_with_a_write() {
    let Some(url) = support::fresh_postgres("migration", "deadlock").await else {
        return;
    };
    support::migrated_store(&url, 2).await.close().await;
    let mut writer = PgConnection::connect(&url).await.unwrap();
    // As a new build would find it: the stored fingerprint differs.
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "UPDATE bh_meta SET value = 'an earlier build' WHERE name = '{FINGERPRINT_NAME}'"
    )))
    .execute(&mut writer)
    .await
    .unwrap();
    let tables: Vec<&str> = catalog().resources().iter().map(|r| r.table).collect();
    let last = tables[tables.len() - 1];
    // Another session holds the last table the migration makes triggers on (in SHARE mode,
    // as an index being built would: the migration's indexes pass, its triggers wait)...
    sqlx::raw_sql("BEGIN").execute(&mut writer).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "LOCK TABLE \"{last}\" IN SHARE MODE"
    )))
    .execute(&mut writer)
    .await
    .unwrap();
    let migration = tokio::spawn({
        let url = url.clone();
        async move { support::migrated_store(&url, 2).await.close().await }
    });
    // ...until the migration, holding the triggers it made on other tables, waits for it...
    let mut watcher = PgConnection::connect(&url).await.unwrap();
    let held = format!(
        "SELECT d.relname::text FROM pg_locks l JOIN pg_class c ON c.oid = l.relation \
         JOIN pg_locks h ON h.pid = l.pid AND h.granted AND h.mode = 'ShareRowExclusiveLock' \
         JOIN pg_class d ON d.oid = h.relation \
         WHERE NOT l.granted AND c.relname = '{last}' LIMIT 1"
    );
    let first: String = tokio::time::timeout(MIGRATION_BOUND, async {
        loop {
            let held = sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(held.clone()))
                .fetch_optional(&mut watcher)
                .await
                .unwrap();
            match held {
                Some(table) => break table,
                None => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    })
    .await
    .expect("the migration comes to wait for the other session");
    // ...and the session then writes one of those: PostgreSQL aborts one of the two, the one
    // that waited first (its deadlock check comes first): the migration.
    let write = sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "LOCK TABLE \"{first}\" IN ROW EXCLUSIVE MODE"
    )))
    .execute(&mut writer)
    .await;
    assert!(write.is_ok(), "the migration gave way: {write:?}");
    sqlx::raw_sql("COMMIT").execute(&mut writer).await.unwrap();
    tokio::time::timeout(MIGRATION_BOUND, migration)
        .await
        .expect("the migration ends")
        .expect("the migration, aborted once, succeeds when run again");
    let stored: String = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT value FROM bh_meta WHERE name = '{FINGERPRINT_NAME}'"
    )))
    .fetch_one(&mut watcher)
    .await
    .unwrap();
    assert_ne!(
        stored, "an earlier build",
        "the migration stored its fingerprint"
    );
    writer.close().await.ok();
    watcher.close().await.ok();
    support::drop_postgres(&url).await;
}
