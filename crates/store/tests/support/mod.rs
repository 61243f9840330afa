//! What the store's own tests share.

#![allow(dead_code, unused_macros, unused_imports)]

use brandhub_store::{Store, StoreOptions};

/// A store on `url` with its schema migrated, without page cache, for tests that talk to it
/// directly.
pub async fn migrated_store(url: &str, max_connections: u32) -> Store {
    let store = Store::connect(&StoreOptions {
        url: url.to_string(),
        max_connections,
        page_cache_bytes: 0,
        matches_first_limit: 40,
        pg_settings: Vec::new(),
        database_wait: brandhub_store::db::DEFAULT_DATABASE_WAIT,
    })
    .await
    .expect("the database opens");
    store.migrate().await.expect("migrations apply");
    store
}

/// A migrated store holding the demo data at `scale`, on a database of one test's own: a
/// file in the returned directory on SQLite, [`fresh_postgres`] on PostgreSQL (`None` when it
/// is not configured); with the demo's summary (its users).
pub async fn demo_store(
    db: Db,
    suite: &str,
    name: &str,
    scale: u64,
) -> Option<(Store, tempfile::TempDir, brandhub_demo::DemoSummary)> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let url = match db {
        Db::Sqlite => format!("sqlite://{}", dir.path().join("demo.db").display()),
        Db::Postgres => fresh_postgres(suite, name).await?,
    };
    let store = Store::connect(&StoreOptions {
        url,
        max_connections: 4,
        page_cache_bytes: 8 << 20,
        matches_first_limit: 40,
        pg_settings: Vec::new(),
        database_wait: brandhub_store::db::DEFAULT_DATABASE_WAIT,
    })
    .await
    .expect("the database opens");
    store.migrate().await.expect("migrations apply");
    let (chunks, summary) = brandhub_demo::generate_all(&brandhub_demo::DemoOptions {
        scale,
        ..brandhub_demo::DemoOptions::default()
    });
    let mut tx = store.begin().await.expect("a transaction");
    for mut chunk in chunks {
        tx.insert_records(chunk.resource, &mut chunk.records)
            .await
            .expect("the demo is written");
    }
    tx.commit().await.expect("the demo commits");
    Some((store, dir, summary))
}

/// Which database a test runs on.
#[derive(Debug, Clone, Copy)]
pub enum Db {
    Sqlite,
    Postgres,
}

/// A new empty PostgreSQL database for one test of `suite`, named after the configured one
/// (so that checkouts sharing a server keep apart); `None` when PostgreSQL is not configured
/// (the test is skipped, loudly, and fails under `CI=true`).
pub async fn fresh_postgres(suite: &str, name: &str) -> Option<String> {
    let Some(admin_url) = std::env::var("BRANDHUB_TEST_DATABASE_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        brandhub_filestore::testing::skip(
            &format!("{suite}::postgres::{name}"),
            "BRANDHUB_TEST_DATABASE_URL is not set",
        );
        return None;
    };
    let (server, configured) = admin_url
        .rsplit_once('/')
        .filter(|(server, _)| server.contains("://") && !server.ends_with('/'))
        .expect("BRANDHUB_TEST_DATABASE_URL is postgres://user@host/database");
    let configured: String = configured
        .split('?')
        .next()
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    let database = format!("bh_{configured}_store_{suite}_{name}").to_ascii_lowercase();
    as_admin(
        &admin_url,
        [
            format!("DROP DATABASE IF EXISTS \"{database}\" WITH (FORCE)"),
            format!("CREATE DATABASE \"{database}\""),
        ],
    )
    .await;
    Some(format!("{server}/{database}"))
}

/// Runs `statements` on the database of `admin_url` (creating and dropping test databases).
async fn as_admin(admin_url: &str, statements: impl IntoIterator<Item = String>) {
    use sqlx::Connection;
    let mut admin = sqlx::PgConnection::connect(admin_url)
        .await
        .expect("PostgreSQL is reachable");
    for statement in statements {
        sqlx::raw_sql(sqlx::AssertSqlSafe(statement.clone()))
            .execute(&mut admin)
            .await
            .unwrap_or_else(|error| panic!("the test may run {statement}: {error}"));
    }
    admin.close().await.ok();
}

/// Drops the database of `url` that [`fresh_postgres`] made, once its test is done with it.
pub async fn drop_postgres(url: &str) {
    let admin_url = std::env::var("BRANDHUB_TEST_DATABASE_URL").expect("PostgreSQL is configured");
    let (_, database) = url.rsplit_once('/').expect("a database URL");
    as_admin(
        &admin_url,
        [format!(
            "DROP DATABASE IF EXISTS \"{database}\" WITH (FORCE)"
        )],
    )
    .await;
}

/// Declares each test (an `async fn(Db)` of the file) on both databases.
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(super::Db::Sqlite).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(super::Db::Postgres).await;
                }
            )*
        }
    };
}
pub(crate) use on_both;

/// The viewer of the demo's first user of `user_type`, as its principal is now.
pub async fn demo_viewer(
    store: &Store,
    demo: &brandhub_demo::DemoSummary,
    user_type: brandhub_catalog::UserType,
) -> brandhub_query::plan::Viewer {
    let user = &demo
        .credentials
        .iter()
        .find(|c| c.user_type == user_type)
        .expect("a demo user of that type")
        .user_id;
    brandhub_store::rights::principal(&mut &*store, user)
        .await
        .unwrap()
        .expect("the demo user")
        .viewer()
}
