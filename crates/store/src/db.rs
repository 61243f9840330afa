//! The connection to SQLite or PostgreSQL, and the few primitives everything else is built on:
//! run a sea-query statement, decode rows into [`Cell`]s by catalog type, time it, and write in
//! a transaction that bumps the written tables' versions.

use crate::error::{StoreError, StoreResult};
use brandhub_catalog::{Cell, FieldType};
use sea_query::{PostgresQueryBuilder, SqliteQueryBuilder};
use sea_query_sqlx::SqlxBinder;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{AssertSqlSafe, Row};
use std::fmt::Display;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
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

/// SQLite's connection settings with a page cache of `cache_kib`.
fn sqlite_options(url: &str, cache_kib: u32) -> StoreResult<SqliteConnectOptions> {
    Ok(SqliteConnectOptions::from_str(url)
        .map_err(|e| internal("bad SQLite URL", e))?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(30))
        .foreign_keys(true)
        .pragma("cache_size", format!("-{cache_kib}"))
        .pragma("temp_store", "memory")
        .statement_cache_capacity(256)
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
    /// write lock (see [`Store::begin`]).
    pub(crate) write_gate: Option<std::sync::Arc<tokio::sync::Semaphore>>,
}

/// How long a write transaction waits for SQLite's write lock in this process before it
/// gives up, as long as SQLite's own busy timeout for other processes.
const WRITE_GATE_WAIT: Duration = Duration::from_secs(30);

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
}

tokio::task_local! {
    /// The [`Timing`] of the request a task serves. Reads take their `Timing` as an argument;
    /// a write's transaction is opened deep inside the store (one per write, per intake, per
    /// file), so its statements report here instead, when the request's task set it
    /// ([`Timing::scope`]).
    static REQUEST_TIMING: std::sync::Arc<Timing>;
}

/// Database time spent for one request, reported in `Server-Timing`.
#[derive(Debug, Default)]
pub struct Timing {
    micros: AtomicU64,
    statements: AtomicU64,
}

impl Timing {
    /// Adds the time of one statement.
    pub fn add(&self, elapsed: Duration) {
        self.micros
            .fetch_add(elapsed.as_micros() as u64, Ordering::Relaxed);
        self.statements.fetch_add(1, Ordering::Relaxed);
    }

    /// Runs `work` (a request's handling) with `timing` as the request's timing, so that the
    /// statements of the write transactions it opens are counted in it too.
    pub async fn scope<F: std::future::Future>(
        timing: std::sync::Arc<Timing>,
        work: F,
    ) -> F::Output {
        REQUEST_TIMING.scope(timing, work).await
    }

    /// Adds a statement of a write transaction to the current request's timing, if any.
    fn add_to_request(elapsed: Duration) {
        let _ = REQUEST_TIMING.try_with(|timing| timing.add(elapsed));
    }

    /// Total database time so far.
    pub fn database_time(&self) -> Duration {
        Duration::from_micros(self.micros.load(Ordering::Relaxed))
    }

    /// Statements run so far.
    pub fn statements(&self) -> u64 {
        self.statements.load(Ordering::Relaxed)
    }
}

/// Logs a database failure with its cause and returns the client-facing 500.
pub(crate) fn internal(context: &str, error: impl Display) -> StoreError {
    tracing::error!(%error, "{context}");
    StoreError::Internal
}

/// How a column decodes, by the catalog type of its field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    Integer,
    Number,
    Boolean,
}

impl Kind {
    /// The decoding of a field type's column.
    pub fn of(ty: FieldType) -> Kind {
        match ty {
            FieldType::Integer => Kind::Integer,
            FieldType::Number => Kind::Number,
            FieldType::Boolean => Kind::Boolean,
            _ => Kind::Text,
        }
    }
}

fn decode_row<'r, R>(row: &'r R, kinds: &[Kind]) -> Result<Vec<Cell>, sqlx::Error>
where
    R: Row,
    usize: sqlx::ColumnIndex<R>,
    Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    Option<i64>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    Option<f64>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    Option<bool>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    kinds
        .iter()
        .enumerate()
        .map(|(i, kind)| {
            Ok(match kind {
                Kind::Text => row
                    .try_get::<Option<String>, _>(i)?
                    .map_or(Cell::Null, Cell::Text),
                Kind::Integer => row
                    .try_get::<Option<i64>, _>(i)?
                    .map_or(Cell::Null, Cell::Integer),
                Kind::Number => row
                    .try_get::<Option<f64>, _>(i)?
                    .map_or(Cell::Null, Cell::Number),
                Kind::Boolean => row
                    .try_get::<Option<bool>, _>(i)?
                    .map_or(Cell::Null, Cell::Boolean),
            })
        })
        .collect()
}

/// Runs `$body` with `$pool` bound to the concrete pool and `$builder` to its sea-query
/// backend, so that one piece of code serves both databases.
macro_rules! on_pool {
    ($pool_enum:expr, |$pool:ident, $builder:ident| $body:expr) => {
        match $pool_enum {
            $crate::db::Pool::Sqlite($pool) => {
                let $builder = sea_query::SqliteQueryBuilder;
                $body
            }
            $crate::db::Pool::Postgres($pool) => {
                let $builder = sea_query::PostgresQueryBuilder;
                $body
            }
        }
    };
}
pub(crate) use on_pool;

/// Like [`on_pool!`] for a write transaction: `$conn` is its connection, `$builder` the
/// sea-query backend.
macro_rules! on_tx {
    ($tx_enum:expr, |$conn:ident, $builder:ident| $body:expr) => {
        match $tx_enum {
            Tx::Sqlite(tx) => {
                let $conn = &mut **tx;
                let $builder = SqliteQueryBuilder;
                $body
            }
            Tx::Postgres(tx) => {
                let $conn = &mut **tx;
                let $builder = PostgresQueryBuilder;
                $body
            }
        }
    };
}

impl Store {
    /// Connects (creating an SQLite file if needed) with the settings each backend wants.
    pub async fn connect(options: &StoreOptions) -> StoreResult<Store> {
        let url = options.url.as_str();
        let mut export_pool = None;
        let pool = if url.starts_with("sqlite:") {
            let main = sqlite_options(url, SQLITE_CACHE_KIB)?;
            export_pool = Some(Pool::Sqlite(
                SqlitePoolOptions::new()
                    .max_connections(EXPORT_CONNECTIONS)
                    .test_before_acquire(false)
                    .min_connections(0)
                    .connect_lazy_with(sqlite_options(url, EXPORT_CACHE_KIB)?),
            ));
            Pool::Sqlite(
                SqlitePoolOptions::new()
                    .max_connections(options.max_connections)
                    // A ping before every checkout would double the round trips of a read.
                    .test_before_acquire(false)
                    .min_connections(1)
                    .connect_with(main)
                    .await
                    .map_err(|e| internal("cannot open the SQLite database", e))?,
            )
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            let mut settings: Vec<(&str, &str)> = vec![("statement_timeout", "60s")];
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
                    .test_before_acquire(false)
                    .min_connections(1)
                    .connect_with(connect)
                    .await
                    .map_err(|e| internal("cannot connect to PostgreSQL", e))?,
            )
        } else {
            return Err(StoreError::Config(format!(
                "database URL '{url}' is neither sqlite:// nor postgres://"
            )));
        };
        let count_writer = Some(crate::count::start_writer(pool.clone()));
        let write_gate = matches!(pool, Pool::Sqlite(_))
            .then(|| std::sync::Arc::new(tokio::sync::Semaphore::new(1)));
        Ok(Store {
            write_gate,
            pool,
            export_pool,
            count_writer,
            counts: std::sync::Arc::new(quick_cache::sync::Cache::new(16_384)),
            count_routes: std::sync::Arc::new(crate::count::RouteCache::with_weighter(
                16_384,
                crate::count::COUNT_ROUTE_BYTES,
                crate::count::RouteWeight,
            )),
            pages: std::sync::Arc::new(crate::page::page_cache(options.page_cache_bytes)),
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
            let (sql, values) = statement.build_sqlx(builder);
            let logged = tracing::enabled!(tracing::Level::DEBUG).then(|| sql.clone());
            // The SQL comes from sea-query over catalog names; every value is bound.
            let rows = sqlx::query_with(AssertSqlSafe(sql), values)
                .fetch_all(pool)
                .await
                .map_err(|e| internal("a read failed", e))?;
            let decoded = rows
                .iter()
                .map(|row| decode_row(row, kinds))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| internal("a row did not decode", e))?;
            if let Some(sql) = logged {
                tracing::debug!(%sql, rows = decoded.len(), micros = started.elapsed().as_micros() as u64, "read");
            }
            decoded
        });
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
    pub async fn execute_untracked<S>(&self, table: &str, statement: &S) -> StoreResult<u64>
    where
        S: SqlxBinder,
    {
        let affected = on_pool!(&self.pool, |pool, builder| {
            let (sql, values) = statement.build_sqlx(builder);
            sqlx::query_with(AssertSqlSafe(sql), values)
                .execute(pool)
                .await
                .map_err(|e| write_error(table, e))?
                .rows_affected()
        });
        Ok(affected)
    }

    /// Runs plain SQL without results (schema statements); `sql` must not contain input.
    pub(crate) async fn execute_raw(&self, sql: &str) -> StoreResult<()> {
        on_pool!(&self.pool, |pool, _builder| {
            sqlx::raw_sql(AssertSqlSafe(sql.to_string()))
                .execute(pool)
                .await
                .map_err(|e| internal(&format!("schema statement failed: {sql}"), e))?;
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
            .map_err(|e| internal("cannot open a session for a lock", e))?
            .detach();
        sqlx::raw_sql("SET statement_timeout = 0")
            .execute(&mut session)
            .await
            .map_err(|e| internal("cannot set up a session for a lock", e))?;
        sqlx::query("SELECT pg_advisory_lock($1)")
            .bind(key)
            .execute(&mut session)
            .await
            .map_err(|e| internal("cannot take an advisory lock", e))?;
        Ok(Some(session))
    }

    /// Starts a write transaction. On SQLite it takes the write lock at once (`BEGIN
    /// IMMEDIATE`), so two writers never deadlock upgrading read locks.
    pub async fn begin(&self) -> StoreResult<WriteTx> {
        // SQLite takes one writer at a time. Writers of this process queue for it here, in
        // order, and each finds the lock free: waiting in SQLite's busy handler instead means
        // sleeping between tries (up to 100 ms each), so the lock stays idle while the
        // waiters sleep and a busy moment's answers take hundreds of milliseconds.
        let gate = match &self.write_gate {
            Some(gate) => Some(
                tokio::time::timeout(WRITE_GATE_WAIT, gate.clone().acquire_owned())
                    .await
                    .map_err(|e| internal("waited too long to write", e))?
                    .map_err(|e| internal("the write gate closed", e))?,
            ),
            None => None,
        };
        let tx = match &self.pool {
            Pool::Sqlite(pool) => Tx::Sqlite(
                pool.begin_with("BEGIN IMMEDIATE")
                    .await
                    .map_err(|e| internal("cannot begin a transaction", e))?,
            ),
            Pool::Postgres(pool) => Tx::Postgres(
                pool.begin()
                    .await
                    .map_err(|e| internal("cannot begin a transaction", e))?,
            ),
        };
        Ok(WriteTx {
            tx,
            _gate: gate,
            touched: Vec::new(),
            updated_columns: Vec::new(),
            written_rows: Vec::new(),
            clock: self.clock.clone(),
            insecure_loopback: self.insecure_loopback,
            outbox: Default::default(),
            events_written: self.events_written.clone(),
            inserted: Vec::new(),
            known: Vec::new(),
        })
    }
}

enum Tx {
    Sqlite(sqlx::Transaction<'static, sqlx::Sqlite>),
    Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
}

/// A write transaction. It remembers which tables it wrote and bumps their versions just
/// before committing, so cached counts over those tables stop being used the moment the
/// change is visible, and not a moment before.
pub struct WriteTx {
    tx: Tx,
    /// SQLite: this process's turn to write, released when the transaction ends.
    _gate: Option<tokio::sync::OwnedSemaphorePermit>,
    /// Tables written by statements that may insert or delete rows: both their versions are
    /// bumped on commit (see [`crate::versions::rows_key`]).
    touched: Vec<&'static str>,
    /// Tables updated in named columns, with the versions of those columns' fields.
    updated_columns: Vec<(&'static str, Vec<&'static str>)>,
    /// Per table written, the ids of the rows written while every write of it named them:
    /// logged on commit ([`crate::row_log`]).
    written_rows: Vec<(&'static str, crate::row_log::Written)>,
    /// The store's clock, for the job queue's times.
    pub(crate) clock: crate::clock::Clock,
    /// See [`Store::allowing_insecure_loopback_urls`].
    pub(crate) insecure_loopback: bool,
    /// The records written that announce events, written to the outbox on commit.
    pub(crate) outbox: crate::events::Outbox,
    /// Told when this transaction committed events, so this process's senders start at once.
    events_written: std::sync::Arc<tokio::sync::Notify>,
    /// The first few records this transaction inserted, as written, until their table is
    /// written again: the derived fields of records inserted after them are read from here
    /// (an order's brand store for its lines, in an intake) instead of from the database.
    pub(crate) inserted: Vec<(
        &'static brandhub_catalog::Resource,
        brandhub_catalog::Record,
    )>,
    /// Derived fields' values read before this transaction began ([`WriteTx::knows`]), as
    /// (table, column, id, value): read from here as [`WriteTx::inserted`] is.
    pub(crate) known: Vec<(&'static str, &'static str, String, String)>,
}

impl WriteTx {
    /// Runs an insert, update or delete on `table`; returns the rows affected.
    pub async fn execute<S>(&mut self, table: &'static str, statement: &S) -> StoreResult<u64>
    where
        S: SqlxBinder,
    {
        self.touch(table);
        self.execute_untracked(table, statement).await
    }

    /// Runs an insert (`inserted`) or an upsert by id of the rows `ids` on `table`: counted
    /// as [`WriteTx::execute`] counts a write, but the rows are logged by id, inserted rows
    /// marked as such ([`crate::row_log`]), so that pages that neither show nor find them
    /// stay cached.
    pub async fn execute_insert_of<S>(
        &mut self,
        table: &'static str,
        statement: &S,
        ids: &[&str],
        inserted: bool,
    ) -> StoreResult<u64>
    where
        S: SqlxBinder,
    {
        if !self.touched.contains(&table) {
            self.touched.push(table);
        }
        if inserted {
            let marked: Vec<String> = ids.iter().map(|id| crate::row_log::inserted(id)).collect();
            let marked: Vec<&str> = marked.iter().map(String::as_str).collect();
            self.rows_written(table, Some(&marked));
        } else {
            self.rows_written(table, Some(ids));
        }
        self.execute_untracked(table, statement).await
    }

    /// Runs an update on `table` (rows change, their number does not); returns the rows
    /// affected.
    pub async fn execute_update(
        &mut self,
        table: &'static str,
        statement: &sea_query::UpdateStatement,
    ) -> StoreResult<u64> {
        self.execute_update_rows(table, statement, None).await
    }

    /// [`WriteTx::execute_update`] of the rows `ids` only (its `WHERE` names them): the
    /// rows are logged as written, so pages that do not show them stay cached.
    pub async fn execute_update_of(
        &mut self,
        table: &'static str,
        statement: &sea_query::UpdateStatement,
        ids: &[&str],
    ) -> StoreResult<u64> {
        self.execute_update_rows(table, statement, Some(ids)).await
    }

    async fn execute_update_rows(
        &mut self,
        table: &'static str,
        statement: &sea_query::UpdateStatement,
        ids: Option<&[&str]>,
    ) -> StoreResult<u64> {
        let columns: Vec<_> = statement
            .get_values()
            .iter()
            .map(|(c, _)| c.inner())
            .collect();
        self.mark_updated_rows(table, columns.iter().map(|c| c.as_ref()), ids);
        self.execute_untracked(table, statement).await
    }

    /// Remembers that rows of `table` changed in these SQL columns only (none came or went):
    /// the rows `ids`, or rows it cannot name (`None`),
    /// so its content version and the versions of those columns' fields are bumped on commit.
    pub(crate) fn mark_updated_rows<'a>(
        &mut self,
        table: &'static str,
        columns: impl IntoIterator<Item = &'a str>,
        ids: Option<&[&str]>,
    ) {
        let keys = crate::versions::written_keys(table, columns);
        self.rows_written(table, ids);
        match self.updated_columns.iter_mut().find(|(t, _)| *t == table) {
            Some((_, known)) => {
                for key in keys {
                    if !known.contains(&key) {
                        known.push(key);
                    }
                }
            }
            None => self.updated_columns.push((table, keys)),
        }
    }

    /// Remembers that `table` was written (rows may have come or gone), so its versions are
    /// bumped on commit.
    pub(crate) fn touch(&mut self, table: &'static str) {
        self.rows_written(table, None);
        if !self.touched.contains(&table) {
            self.touched.push(table);
        }
    }

    /// Remembers which rows of `table` were written (`None`: rows this write cannot name).
    /// A table's rows are logged by id on commit only if every write of it named them.
    pub(crate) fn rows_written(&mut self, table: &'static str, ids: Option<&[&str]>) {
        self.inserted
            .retain(|(resource, _)| resource.table != table);
        self.known.retain(|(known, ..)| *known != table);
        match self.written_rows.iter_mut().find(|(t, _)| *t == table) {
            Some((_, written)) => crate::row_log::note(written, ids),
            None => {
                let mut written = Some(Vec::new());
                crate::row_log::note(&mut written, ids);
                self.written_rows.push((table, written));
            }
        }
    }

    /// Runs a write on a bookkeeping table that no cache depends on (the job queue), without
    /// bumping any version; `table` names it in errors.
    pub async fn execute_untracked<S>(
        &mut self,
        table: &'static str,
        statement: &S,
    ) -> StoreResult<u64>
    where
        S: SqlxBinder,
    {
        let started = Instant::now();
        let affected = on_tx!(&mut self.tx, |conn, builder| {
            let (sql, values) = statement.build_sqlx(builder);
            sqlx::query_with(AssertSqlSafe(sql), values)
                .execute(conn)
                .await
                .map_err(|e| write_error(table, e))?
                .rows_affected()
        });
        Timing::add_to_request(started.elapsed());
        Ok(affected)
    }

    /// Runs a select inside the transaction.
    pub async fn fetch(
        &mut self,
        statement: &sea_query::SelectStatement,
        kinds: &[Kind],
    ) -> StoreResult<Vec<Vec<Cell>>> {
        self.fetch_rows(statement, kinds, |e| {
            internal("a read in a write failed", e)
        })
        .await
    }

    /// Runs a statement that returns rows and decodes them by `kinds`; `failed` turns a
    /// database error into the caller's error.
    async fn fetch_rows<S>(
        &mut self,
        statement: &S,
        kinds: &[Kind],
        failed: impl FnOnce(sqlx::Error) -> StoreError,
    ) -> StoreResult<Vec<Vec<Cell>>>
    where
        S: SqlxBinder,
    {
        let started = Instant::now();
        let rows = on_tx!(&mut self.tx, |conn, builder| {
            let (sql, values) = statement.build_sqlx(builder);
            let rows = sqlx::query_with(AssertSqlSafe(sql), values)
                .fetch_all(conn)
                .await
                .map_err(failed)?;
            rows.iter()
                .map(|r| decode_row(r, kinds))
                .collect::<Result<_, _>>()
                .map_err(|e| internal("a row did not decode", e))
        });
        Timing::add_to_request(started.elapsed());
        rows
    }

    /// Runs a statement that returns rows (`UPDATE … RETURNING`, `SELECT … FOR UPDATE`) and
    /// decodes them by `kinds`. `table`, when given, counts as written (its version is bumped
    /// on commit); bookkeeping tables pass `None`.
    pub async fn fetch_returning<S>(
        &mut self,
        table: Option<&'static str>,
        statement: &S,
        kinds: &[Kind],
    ) -> StoreResult<Vec<Vec<Cell>>>
    where
        S: SqlxBinder,
    {
        if let Some(table) = table {
            self.touch(table);
        }
        let name = table.unwrap_or("bookkeeping");
        self.fetch_rows(statement, kinds, |e| write_error(name, e))
            .await
    }

    /// [`WriteTx::fetch_returning`] on `table` without counting it as written: for a caller
    /// that learns from the rows whether rows came ([`WriteTx::touch`]) or only changed
    /// ([`WriteTx::mark_updated_rows`]).
    pub(crate) async fn fetch_untracked<S>(
        &mut self,
        table: &'static str,
        statement: &S,
        kinds: &[Kind],
    ) -> StoreResult<Vec<Vec<Cell>>>
    where
        S: SqlxBinder,
    {
        self.fetch_rows(statement, kinds, |e| write_error(table, e))
            .await
    }

    /// Writes the announced events to the outbox, bumps the versions of the written tables,
    /// then commits.
    pub async fn commit(mut self) -> StoreResult<()> {
        let announced = self.write_outbox().await?;
        let mut versions: Vec<&'static str> = Vec::new();
        let mut bump = |key: &'static str| {
            if !versions.contains(&key) {
                versions.push(key);
            }
        };
        for table in std::mem::take(&mut self.touched) {
            bump(table);
            bump(crate::versions::rows_key(table));
            bump(crate::versions::columns_key(table));
        }
        for (table, keys) in std::mem::take(&mut self.updated_columns) {
            bump(table);
            keys.into_iter().for_each(&mut bump);
        }
        if !versions.is_empty() {
            tracing::debug!(?versions, "committing a write");
            self.bump_and_log(&versions).await?;
        }
        let started = Instant::now();
        match self.tx {
            Tx::Sqlite(tx) => tx.commit().await,
            Tx::Postgres(tx) => tx.commit().await,
        }
        .map_err(|e| internal("commit failed", e))?;
        Timing::add_to_request(started.elapsed());
        if announced {
            self.events_written.notify_one();
        }
        Ok(())
    }
}

impl WriteTx {
    /// Bumps the versions and logs the rows written of each table under the table's new
    /// version ([`crate::row_log`]); now and then prunes the tables' old entries.
    async fn bump_and_log(&mut self, versions: &[&'static str]) -> StoreResult<()> {
        use crate::row_log::{TABLE, Versions, log_statement, prune_statement};
        let written = std::mem::take(&mut self.written_rows);
        let bump = crate::versions::bump_statement(versions);
        let postgres = matches!(self.tx, Tx::Postgres(_));
        match log_statement(&written, Versions::Bumped(&bump)) {
            Some(both) if postgres => {
                self.execute_untracked(TABLE, &both).await?;
            }
            _ => {
                self.execute_untracked(crate::versions::TABLE, &bump)
                    .await?;
                if let Some(log) = log_statement(&written, Versions::Table) {
                    self.execute_untracked(TABLE, &log).await?;
                }
            }
        }
        let tables: Vec<&'static str> = written.iter().map(|(table, _)| *table).collect();
        if let Some(prune) = prune_statement(&tables) {
            self.execute_untracked(TABLE, &prune).await?;
        }
        Ok(())
    }
}

/// A constraint violation is the client's conflict; anything else is ours.
fn write_error(table: &str, error: sqlx::Error) -> StoreError {
    if let sqlx::Error::Database(db) = &error {
        if db.is_unique_violation() {
            return StoreError::Conflict {
                detail: format!("A {table} record with the same unique values exists already."),
                field: None,
            };
        }
        if db.is_foreign_key_violation() {
            return StoreError::Conflict {
                detail: format!(
                    "The {table} change refers to a record that does not exist, or is still referred to."
                ),
                field: None,
            };
        }
    }
    internal(&format!("a write to {table} failed"), error)
}
