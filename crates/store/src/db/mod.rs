//! The connection to SQLite or PostgreSQL, and the few primitives everything else is built on:
//! run a sea-query statement, decode rows into [`Cell`]s by catalog type, time it, and write in
//! a transaction that bumps the written tables' versions.

mod commit;
mod export_reader;
mod failure;
mod rows;
mod statements;
mod timing;
mod tx;

pub(crate) use failure::*;
pub use failure::{lost_to_another_transaction, unreachable};
pub use rows::Kind;
pub(crate) use rows::*;
pub use timing::{CallerCheck, Timing};
pub use tx::WriteTx;
pub(crate) use tx::*;

use crate::error::{StoreError, StoreResult};
use brandhub_catalog::Cell;
use sea_query_sqlx::SqlxBinder;
use sqlx::AssertSqlSafe;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use std::str::FromStr;
use std::time::{Duration, Instant};

/// Which database a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// SQLite's page cache of each pooled connection, in KiB (the operating system caches the
/// file too).
pub const SQLITE_CACHE_KIB: u32 = 8_000;

/// SQLite connections kept for exports, and the page cache of each (KiB): a scan reads each
/// page once, so a large cache would only hold memory.
pub const EXPORT_CONNECTIONS: u32 = 2;
const EXPORT_CACHE_KIB: u32 = 1_000;

/// How long a statement waits for the database by default ([`StoreOptions::database_wait`]).
pub const DEFAULT_DATABASE_WAIT: Duration = Duration::from_secs(30);

/// SQLite's connection settings with a page cache of `cache_kib`, waiting up to `wait` for a
/// lock another connection holds.
fn sqlite_options(url: &str, cache_kib: u32, wait: Duration) -> StoreResult<SqliteConnectOptions> {
    Ok(SqliteConnectOptions::from_str(url)
        .map_err(|e| internal("bad SQLite URL", e))?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(wait)
        .foreign_keys(true)
        .pragma("cache_size", format!("-{cache_kib}"))
        .pragma("temp_store", "memory")
        .statement_cache_capacity(256)
        .pragma(
            "wal_autocheckpoint",
            crate::checkpoint::AUTOMATIC_CHECKPOINT_PAGES,
        )
        // Room for a whole page (and its padded relation loads) without the worker
        // thread blocking mid-query and waking the reader row by row.
        .row_buffer_size(4096))
}

#[derive(Debug, Clone)]
pub(crate) enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// A handle on the database; cheap to clone (the pools are shared).
#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) pool: Pool,
    /// SQLite only: the few connections exports read on (see [`Store::for_export`]).
    pub(crate) export_pool: Option<Pool>,
    /// SQLite only: where an export's chunks are read ([`export_reader`]).
    pub(crate) export_reader: Option<std::sync::Arc<export_reader::ExportReader>>,
    pub(crate) count_writer: Option<tokio::sync::mpsc::Sender<crate::count::CountEntry>>,
    /// Counts known in this process: statement hash → (stamp, count).
    pub(crate) counts: std::sync::Arc<quick_cache::sync::Cache<String, (i64, u64)>>,
    /// Where the count of a request is found (see [`Store::count_request`]), bounded by bytes.
    pub(crate) count_routes: std::sync::Arc<crate::count::RouteCache>,
    /// `brandOrderRef` numbers this process reserved and has not handed out yet
    /// ([`crate::orders::intake`]).
    pub(crate) order_numbers: std::sync::Arc<tokio::sync::Mutex<std::ops::Range<i64>>>,
    /// Rendered pages known in this process.
    pub(crate) pages: std::sync::Arc<crate::page::PageCache>,
    /// Rows of expanded relations known in this process ([`crate::related`]); none when no
    /// page is kept either.
    pub(crate) related: Option<std::sync::Arc<crate::related::RelatedCache>>,
    /// Pages being made now, so that requests missing the same page wait for it (none when
    /// no page is kept: they would wait for nothing).
    pub(crate) pages_in_making: Option<crate::page::InMaking>,
    pub(crate) matches_first_limit: u64,
    /// The job queue's clock (the system's, unless a test set one).
    pub(crate) clock: crate::clock::Clock,
    /// The caches' hits and misses, for metrics.
    pub(crate) tallies: std::sync::Arc<crate::stats::CacheTallies>,
    /// Whether webhook URLs may be plain http to the loopback address (tests only).
    pub(crate) insecure_loopback: bool,
    /// Notified when a write of this process committed events (see [`Store::events_written`]).
    pub(crate) events_written: std::sync::Arc<tokio::sync::Notify>,
    /// SQLite only: where this process's write transactions queue for the database's one
    /// write lock, and the connection they run on ([`crate::write_turn`]).
    pub(crate) write_turn: Option<crate::write_turn::WriteTurn>,
    /// SQLite only: when this process checkpoints the database ([`crate::checkpoint`]).
    pub(crate) checkpoints: Option<std::sync::Arc<crate::checkpoint::Checkpoints>>,
    /// The versions this process last read whole ([`Store::versions`]).
    pub(crate) last_versions: std::sync::Arc<crate::versions::LastRead>,
}

/// The most writes an optimistic write holds for the one statement that commits it (an
/// order's intake holds three: the order, its lines, their stock); a write of more begins
/// its transaction.
const MAX_HELD: usize = 8;

/// How a store connects.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// `sqlite://path` or `postgres://…`.
    pub url: String,
    /// The most connections the pool opens.
    pub max_connections: u32,
    /// Bytes of rendered pages kept in memory (0 keeps none).
    pub page_cache_bytes: u64,
    /// Pages with at most this many matches, and counts whose filter matches at most this
    /// many records within a wide scope, collect them first (see
    /// [`brandhub_query::sql::PageStrategy`], [`brandhub_query::sql::filter_drives`]); tests
    /// lower it to exercise every strategy.
    pub matches_first_limit: u64,
    /// PostgreSQL settings for brandhub's sessions (`name`, `value`), such as the planner's
    /// `random_page_cost`.
    pub pg_settings: Vec<(String, String)>,
    /// How long a statement waits for the database before it fails with
    /// [`StoreError::Unavailable`]: for a pooled connection (a PostgreSQL server that refuses
    /// them is tried again meanwhile), and on SQLite for a lock another connection holds (its
    /// busy timeout) or this process's turn to write ([`DEFAULT_DATABASE_WAIT`] unless set).
    pub database_wait: Duration,
}

impl Store {
    /// Connects (creating an SQLite file if needed) with the settings each backend wants.
    pub async fn connect(options: &StoreOptions) -> StoreResult<Store> {
        let url = options.url.as_str();
        let mut export_pool = None;
        let mut export_reader = None;
        let mut write_turn = None;
        let wait = options.database_wait;
        let pool = if url.starts_with("sqlite:") {
            let main = sqlite_options(url, SQLITE_CACHE_KIB, wait)?;
            let file = main.get_filename();
            if !file.as_os_str().is_empty() && file.as_os_str() != ":memory:" {
                export_reader = Some(std::sync::Arc::new(export_reader::ExportReader::new(
                    file.to_path_buf(),
                    EXPORT_CONNECTIONS,
                    EXPORT_CACHE_KIB,
                    wait,
                )));
            }
            write_turn = Some(crate::write_turn::WriteTurn::new(
                sqlite_options(url, crate::write_turn::WRITER_CACHE_KIB, wait)?,
                wait,
            ));
            export_pool = Some(Pool::Sqlite(
                SqlitePoolOptions::new()
                    .max_connections(EXPORT_CONNECTIONS)
                    .test_before_acquire(false)
                    .min_connections(0)
                    .acquire_timeout(wait)
                    .connect_lazy_with(sqlite_options(url, EXPORT_CACHE_KIB, wait)?),
            ));
            Pool::Sqlite(
                SqlitePoolOptions::new()
                    .max_connections(options.max_connections)
                    .acquire_timeout(wait)
                    // A ping before every checkout would double the round trips of a read.
                    .test_before_acquire(false)
                    .min_connections(1)
                    .connect_with(main)
                    .await
                    .map_err(|e| failed("cannot open the SQLite database", e))?,
            )
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            // The writer setting tells the triggers that see writes from outside brandhub
            // that this connection's writes are brandhub's own (`crate::external`).
            let mut settings: Vec<(&str, &str)> = vec![
                ("statement_timeout", "60s"),
                (crate::external::PG_WRITER_SETTING, "on"),
            ];
            settings.extend(
                options
                    .pg_settings
                    .iter()
                    .map(|(n, v)| (n.as_str(), v.as_str())),
            );
            let connect = PgConnectOptions::from_str(url)
                .map_err(|e| internal("bad PostgreSQL URL", e))?
                .options(settings)
                .statement_cache_capacity(256);
            Pool::Postgres(
                PgPoolOptions::new()
                    .max_connections(options.max_connections)
                    .acquire_timeout(wait)
                    .test_before_acquire(false)
                    .min_connections(1)
                    .connect_with(connect)
                    .await
                    .map_err(|e| failed("cannot connect to PostgreSQL", e))?,
            )
        } else {
            return Err(StoreError::Config(format!(
                "database URL '{url}' is neither sqlite:// nor postgres://"
            )));
        };
        let checkpoints = match (&pool, &write_turn) {
            (Pool::Sqlite(sqlite), Some(turn)) => {
                Some(std::sync::Arc::new(crate::checkpoint::Checkpoints::new(
                    sqlite.clone(),
                    turn.gate(),
                    crate::checkpoint::RESTART_AFTER_FRAMES,
                )))
            }
            _ => None,
        };
        let count_writer = Some(crate::count::start_writer(
            pool.clone(),
            write_turn.clone(),
            checkpoints.clone(),
        ));
        Ok(Store {
            last_versions: Default::default(),
            write_turn,
            checkpoints,
            pool,
            export_pool,
            export_reader,
            count_writer,
            counts: std::sync::Arc::new(quick_cache::sync::Cache::new(16_384)),
            count_routes: std::sync::Arc::new(crate::count::RouteCache::with_weighter(
                16_384,
                crate::count::COUNT_ROUTE_BYTES,
                crate::count::RouteWeight,
            )),
            pages: std::sync::Arc::new(crate::page::page_cache(options.page_cache_bytes)),
            related: crate::related::related_cache(options.page_cache_bytes),
            pages_in_making: (options.page_cache_bytes > 0).then(Default::default),
            matches_first_limit: options.matches_first_limit,
            clock: crate::clock::Clock::system(),
            tallies: Default::default(),
            insecure_loopback: false,
            events_written: Default::default(),
            order_numbers: Default::default(),
        })
    }

    /// The same store accepting webhook URLs of plain http to the loopback address
    /// (`--webhook-allow-insecure-localhost`): a test's receiver needs no certificate.
    pub fn allowing_insecure_loopback_urls(mut self) -> Store {
        self.insecure_loopback = true;
        self
    }

    /// Whether webhook URLs may be plain http to the loopback address.
    pub fn allows_insecure_loopback_urls(&self) -> bool {
        self.insecure_loopback
    }

    /// Wakes when a write of this process commits events, so that its webhook senders fan
    /// them out at once instead of at their next poll (other processes' events are polled).
    pub fn events_written(&self) -> std::sync::Arc<tokio::sync::Notify> {
        self.events_written.clone()
    }

    /// The same store with another clock for its job queue: tests set a
    /// [`Clock::manual`](crate::clock::Clock::manual) to reach time-outs without sleeping.
    pub fn with_clock(mut self, clock: crate::clock::Clock) -> Store {
        self.clock = clock;
        self
    }

    /// The job queue's clock.
    pub fn clock(&self) -> &crate::clock::Clock {
        &self.clock
    }

    /// The backend this store runs on.
    pub fn backend(&self) -> Backend {
        match self.pool {
            Pool::Sqlite(_) => Backend::Sqlite,
            Pool::Postgres(_) => Backend::Postgres,
        }
    }

    /// Closes every connection (on shutdown, or before deleting a test database).
    pub async fn close(&self) {
        if let Some(turn) = &self.write_turn {
            turn.close().await;
        }
        if let Some(exports) = &self.export_pool {
            on_pool!(exports, |pool, _builder| pool.close().await)
        }
        on_pool!(&self.pool, |pool, _builder| pool.close().await)
    }

    /// The same store reading on the connections kept for exports. On SQLite each connection
    /// caches its own pages: an export's full scan spread over the whole pool would fill every
    /// connection's cache (the pool's size × [`SQLITE_CACHE_KIB`]); on its own few connections
    /// with a small cache it holds a few megabytes, and at most [`EXPORT_CONNECTIONS`] exports
    /// read at once. PostgreSQL caches pages in its server: the same pool serves.
    pub fn for_export(&self) -> Store {
        let mut store = self.clone();
        if let Some(exports) = &self.export_pool {
            store.pool = exports.clone();
        }
        store
    }

    /// Runs a select and decodes each row by `kinds`.
    pub async fn fetch(
        &self,
        statement: &sea_query::SelectStatement,
        kinds: &[Kind],
        timing: &Timing,
    ) -> StoreResult<Vec<Vec<Cell>>> {
        let started = Instant::now();
        let rows = on_pool!(&self.pool, |pool, builder| {
            let (sql, values) = built(statement, builder);
            let logged = tracing::enabled!(tracing::Level::DEBUG).then(|| sql.clone());
            // The SQL comes from sea-query over catalog names; every value is bound.
            let rows = sqlx::query_with(AssertSqlSafe(sql), values)
                .fetch_all(pool)
                .await
                .map_err(|e| failed("a read failed", e))?;
            let decoded = rows
                .iter()
                .map(|row| decode_row(row, kinds))
                .collect::<Result<Vec<_>, _>>()
                .map_err(unreadable)?;
            if let Some(sql) = logged {
                tracing::debug!(%sql, rows = decoded.len(), micros = started.elapsed().as_micros() as u64, "read");
            }
            decoded
        });
        timing.add(started.elapsed());
        Ok(rows)
    }

    /// [`Store::fetch`] for an export's chunk: on SQLite through the connections of
    /// [`export_reader`], elsewhere as any read.
    pub(crate) async fn fetch_export_rows(
        &self,
        statement: &sea_query::SelectStatement,
        kinds: &[Kind],
        timing: &Timing,
    ) -> StoreResult<Vec<Vec<Cell>>> {
        let Some(reader) = &self.export_reader else {
            return self.fetch(statement, kinds, timing).await;
        };
        let started = Instant::now();
        let (sql, values) = statement.build(sea_query::SqliteQueryBuilder);
        let rows = reader
            .fetch(rows::limit_compiled_once(sql), values, kinds.to_vec())
            .await?;
        timing.add(started.elapsed());
        Ok(rows)
    }

    /// [`Store::fetch`] counted in the current request's timing: for a write's reads before
    /// its transaction, which has no `Timing` of its own.
    pub(crate) async fn fetch_in_request(
        &self,
        statement: &sea_query::SelectStatement,
        kinds: &[Kind],
    ) -> StoreResult<Vec<Vec<Cell>>> {
        let timing = Timing::default();
        let rows = self.fetch(statement, kinds, &timing).await?;
        Timing::add_to_request(timing.database_time());
        Ok(rows)
    }

    /// Runs a select that returns one integer (a count, a version).
    pub async fn fetch_integer(
        &self,
        statement: &sea_query::SelectStatement,
        timing: &Timing,
    ) -> StoreResult<i64> {
        let rows = self.fetch(statement, &[Kind::Integer], timing).await?;
        match rows.first().and_then(|r| r.first()) {
            Some(Cell::Integer(n)) => Ok(*n),
            _ => Ok(0),
        }
    }

    /// Runs a write on a bookkeeping table outside any transaction (a job's heartbeat): no
    /// version is bumped, because no cache depends on those tables. Returns the rows affected.
    /// On SQLite it runs in the write turn, on the connection writes run on, like every other
    /// write of this process ([`crate::write_turn`]).
    pub async fn execute_untracked<S>(&self, table: &str, statement: &S) -> StoreResult<u64>
    where
        S: SqlxBinder,
    {
        let affected =
            execute_outside_transaction(&self.pool, self.write_turn.as_ref(), table, statement)
                .await?;
        self.committed_on_pool();
        Ok(affected)
    }

    /// Counts a write committed on the pool's SQLite connections (see [`crate::checkpoint`]).
    fn committed_on_pool(&self) {
        if let Some(checkpoints) = &self.checkpoints {
            checkpoints.committed();
        }
    }

    /// Runs plain SQL without results (schema statements); `sql` must not contain input.
    pub(crate) async fn execute_raw(&self, sql: &str) -> StoreResult<()> {
        on_pool!(&self.pool, |pool, _builder| {
            let mut connection = pool
                .acquire()
                .await
                .map_err(|e| failed("cannot open a session for the schema", e))?;
            let done = sqlx::raw_sql(AssertSqlSafe(sql.to_string()))
                .execute(&mut *connection)
                .await;
            if let Err(error) = done {
                // A failed statement of a `BEGIN; …; COMMIT` leaves its transaction open
                // on the connection, which goes back to the pool: it is ended here.
                if sql.starts_with("BEGIN") {
                    let _ = sqlx::raw_sql("ROLLBACK").execute(&mut *connection).await;
                }
                return Err(failed(&format!("schema statement failed: {sql}"), error));
            }
        });
        Ok(())
    }

    /// On PostgreSQL, a session of its own (outside the pool, without a statement timeout)
    /// holding the advisory lock `key`; `None` on SQLite. The lock lasts until the session is
    /// closed or dropped, which also happens if the process dies, so it can never be left
    /// behind on a pooled connection.
    pub(crate) async fn pg_session_lock(
        &self,
        key: i64,
    ) -> StoreResult<Option<sqlx::PgConnection>> {
        let Pool::Postgres(pool) = &self.pool else {
            return Ok(None);
        };
        let mut session = pool
            .acquire()
            .await
            .map_err(|e| failed("cannot open a session for a lock", e))?
            .detach();
        sqlx::raw_sql("SET statement_timeout = 0")
            .execute(&mut session)
            .await
            .map_err(|e| failed("cannot set up a session for a lock", e))?;
        sqlx::query("SELECT pg_advisory_lock($1)")
            .bind(key)
            .execute(&mut session)
            .await
            .map_err(|e| failed("cannot take an advisory lock", e))?;
        Ok(Some(session))
    }

    /// A write on `tx`, with nothing written yet.
    pub(crate) fn write_tx(&self, tx: Tx) -> WriteTx {
        WriteTx {
            tx,
            checkpoints: self.checkpoints.clone(),
            touched: Vec::new(),
            updated_columns: Vec::new(),
            written_rows: Vec::new(),
            clock: self.clock.clone(),
            insecure_loopback: self.insecure_loopback,
            outbox: Default::default(),
            events_written: self.events_written.clone(),
            inserted: Vec::new(),
            known: Vec::new(),
            unanswered: Vec::new(),
            held_writes: Vec::new(),
            answer: None,
            answered: None,
            version_asked: false,
            version_written: None,
        }
    }
}

/// A SQLite store at `path` with its schema migrated and no page cache, for the store's own
/// tests.
#[cfg(test)]
pub(crate) async fn migrated_sqlite(path: &std::path::Path, max_connections: u32) -> Store {
    let store = Store::connect(&StoreOptions {
        url: format!("sqlite://{}", path.display()),
        max_connections,
        page_cache_bytes: 0,
        matches_first_limit: 40,
        pg_settings: Vec::new(),
        database_wait: crate::db::DEFAULT_DATABASE_WAIT,
    })
    .await
    .unwrap();
    store.migrate().await.unwrap();
    store
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::versions::Versions;
    use sea_query::{Alias, Expr, ExprTrait, Order, Query};

    #[test]
    fn a_bound_limit_is_written_behind_a_unary_plus_and_nothing_else_changes() {
        assert_eq!(
            limit_compiled_once(
                r#"SELECT "a" FROM "t" WHERE "b" IN (SELECT "c" FROM "u" LIMIT ?) LIMIT ? OFFSET ?"#
                    .to_string()
            ),
            r#"SELECT "a" FROM "t" WHERE "b" IN (SELECT "c" FROM "u" LIMIT +?) LIMIT +? OFFSET ?"#
        );
        let postgres = r#"SELECT "a" FROM "t" LIMIT $1 OFFSET $2"#;
        assert_eq!(limit_compiled_once(postgres.to_string()), postgres);
        let unlimited = r#"SELECT "a" FROM "t" WHERE "b" = ?"#;
        assert_eq!(limit_compiled_once(unlimited.to_string()), unlimited);
    }

    /// A request's writes make what they bumped unknown to its answer, and only to its own:
    /// a write of another task (another request) leaves the request's versions whole.
    #[tokio::test]
    async fn the_versions_a_requests_writes_bumped_are_unknown_to_its_answer() {
        let timing = std::sync::Arc::new(Timing::default());
        assert!(timing.versions_after_writes().is_none(), "no versions kept");
        timing.keep_request_versions(std::sync::Arc::new(Versions::parse("stock:3,variant:5")));
        let elsewhere = tokio::spawn(async { Timing::note_written_in_request(&["variant"]) });
        elsewhere.await.unwrap();
        Timing::scope(timing.clone(), async {
            Timing::note_written_in_request(&["stock", "stock#rows"]);
        })
        .await;
        let after = timing.versions_after_writes().expect("versions kept");
        assert!(!after.know_all(&["stock"]));
        assert!(after.know_all(&["variant"]));
    }

    /// The rewritten limit still limits, read by the pool and inside a write transaction, for
    /// every value bound to the one compiled statement.
    #[tokio::test]
    async fn pages_read_with_the_rewritten_limit_hold_what_the_limit_and_offset_say() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::connect(&StoreOptions {
            url: format!("sqlite://{}", dir.path().join("limit.db").display()),
            max_connections: 1,
            page_cache_bytes: 0,
            matches_first_limit: 40,
            pg_settings: Vec::new(),
            database_wait: crate::db::DEFAULT_DATABASE_WAIT,
        })
        .await
        .unwrap();
        // A write transaction marks itself in the schema's bookkeeping (`crate::external`).
        store.migrate().await.unwrap();
        store
            .execute_raw("CREATE TABLE numbers (n INTEGER PRIMARY KEY)")
            .await
            .unwrap();
        store
            .execute_raw("INSERT INTO numbers (n) VALUES (1), (2), (3), (4), (5), (6), (7), (8)")
            .await
            .unwrap();
        let page = |limit: u64, offset: u64| {
            Query::select()
                .column(Alias::new("n"))
                .from(Alias::new("numbers"))
                .and_where(Expr::col(Alias::new("n")).gt(1))
                .order_by(Alias::new("n"), Order::Asc)
                .limit(limit)
                .offset(offset)
                .to_owned()
        };
        let numbers = |rows: Vec<Vec<Cell>>| -> Vec<i64> {
            rows.into_iter()
                .map(|row| match row[0] {
                    Cell::Integer(n) => n,
                    ref other => panic!("not an integer: {other:?}"),
                })
                .collect()
        };
        let timing = Timing::default();
        for (limit, offset, expected) in [
            (3, 0, vec![2, 3, 4]),
            (2, 4, vec![6, 7]),
            (0, 0, vec![]),
            (10, 5, vec![7, 8]),
        ] {
            let rows = store
                .fetch(&page(limit, offset), &[Kind::Integer], &timing)
                .await
                .unwrap();
            assert_eq!(numbers(rows), expected, "LIMIT {limit} OFFSET {offset}");
        }
        let mut tx = store.begin().await.unwrap();
        let rows = tx.fetch(&page(1, 1), &[Kind::Integer]).await.unwrap();
        assert_eq!(numbers(rows), vec![3]);
        tx.commit().await.unwrap();
    }
}
