//! The connection to SQLite or PostgreSQL, and the few primitives everything else is built on:
//! run a sea-query statement, decode rows into [`Cell`]s by catalog type, time it, and write in
//! a transaction that bumps the written tables' versions.

use crate::error::{StoreError, StoreResult};
use crate::events::EVENT_TABLE;
use crate::versions::Versions;
use brandhub_catalog::{Cell, FieldType};
use brandhub_problem::words;
use sea_query::{
    Alias, Asterisk, CommonTableExpression, Expr, ExprTrait, Func, InsertStatement,
    PostgresQueryBuilder, Query, SqliteQueryBuilder, WithClause,
};
use sea_query_sqlx::SqlxBinder;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{AssertSqlSafe, Row};
use std::fmt::Display;
use std::str::FromStr;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
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

tokio::task_local! {
    /// The [`Timing`] of the request a task serves. Reads take their `Timing` as an argument;
    /// a write's transaction is opened deep inside the store (one per write, per intake, per
    /// file), so its statements report here instead, when the request's task set it
    /// ([`Timing::scope`]).
    static REQUEST_TIMING: std::sync::Arc<Timing>;
}

/// Database time spent for one request, reported in `Server-Timing`; and, because a
/// request's write transactions report here, what a write's answer may take from the caches
/// ([`Timing::versions_after_writes`]).
#[derive(Debug, Default)]
pub struct Timing {
    micros: AtomicU64,
    statements: AtomicU64,
    /// The versions the request read when it began (its authentication's).
    request_versions: std::sync::OnceLock<std::sync::Arc<Versions>>,
    /// The versions the request's committed writes bumped.
    written: std::sync::Mutex<Vec<&'static str>>,
    /// PostgreSQL: the authentication stamp of a caller taken from memory unchecked, which
    /// the request's writes must still find when they commit ([`Timing::check_caller_at`]).
    caller_stamp: std::sync::Mutex<Option<i64>>,
    /// What the request's commits found of that stamp ([`CallerCheck`] as a number).
    caller_check: AtomicU8,
}

/// What the commits of a request found of its caller's authentication stamp
/// ([`Timing::check_caller_at`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallerCheck {
    /// No commit checked it (nothing was written, or no stamp was asked for).
    Unchecked,
    /// A commit found it unchanged: the caller was valid when its write committed.
    Held,
    /// A commit found it changed and failed: nothing was written.
    Changed,
}

impl CallerCheck {
    fn of(value: u8) -> CallerCheck {
        match value {
            1 => CallerCheck::Held,
            2 => CallerCheck::Changed,
            _ => CallerCheck::Unchecked,
        }
    }
}

impl Timing {
    /// Adds the time of one statement.
    pub fn add(&self, elapsed: Duration) {
        self.add_statements(elapsed, 1);
    }

    /// Adds the time of `count` statements sent together.
    fn add_statements(&self, elapsed: Duration, count: u64) {
        self.micros
            .fetch_add(elapsed.as_micros() as u64, Ordering::Relaxed);
        self.statements.fetch_add(count, Ordering::Relaxed);
    }

    /// Runs `work` (a request's handling) with `timing` as the request's timing, so that the
    /// statements of the write transactions it opens are counted in it too.
    pub async fn scope<F: std::future::Future>(
        timing: std::sync::Arc<Timing>,
        work: F,
    ) -> F::Output {
        REQUEST_TIMING.scope(timing, work).await
    }

    /// Keeps the versions the request read when it began, for its write's answer.
    pub fn keep_request_versions(&self, versions: std::sync::Arc<Versions>) {
        let _ = self.request_versions.set(versions);
    }

    /// The versions a write's answer reads under: the request's own, read before it wrote,
    /// with every version its writes bumped unknown (nothing kept of those tables is taken or
    /// kept). Rows of the other tables read now are at least as new as the request's
    /// versions say, as a read's are. `None` when the request kept no versions.
    pub fn versions_after_writes(&self) -> Option<Versions> {
        let versions = self.request_versions.get()?;
        let written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        Some(versions.with_unknown(&written))
    }

    /// Makes every write this request commits on PostgreSQL hold only while the caller's
    /// authentication stamp is still `stamp` (`None`: no such condition). A caller taken
    /// from memory then needs no versions read before it writes: its write's own statement
    /// checks it ([`crate::accounts::caller_unchanged`]), and fails if it moved
    /// ([`Timing::caller_check`]).
    pub fn check_caller_at(&self, stamp: Option<i64>) {
        *self.caller_stamp.lock().unwrap_or_else(|e| e.into_inner()) = stamp;
        self.caller_check.store(0, Ordering::Relaxed);
    }

    /// What the request's commits found of the stamp asked for by
    /// [`Timing::check_caller_at`].
    pub fn caller_check(&self) -> CallerCheck {
        CallerCheck::of(self.caller_check.load(Ordering::Relaxed))
    }

    /// The stamp the current request's commits must find ([`Timing::check_caller_at`]).
    fn caller_stamp_of_request() -> Option<i64> {
        REQUEST_TIMING
            .try_with(|timing| {
                *timing
                    .caller_stamp
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
            })
            .ok()
            .flatten()
    }

    /// Notes what a commit of the current request found of its caller's stamp; a change
    /// found is never forgotten.
    fn note_caller_check(check: CallerCheck) {
        let _ = REQUEST_TIMING.try_with(|timing| {
            let value = match check {
                CallerCheck::Unchecked => return,
                CallerCheck::Held => 1,
                CallerCheck::Changed => 2,
            };
            let _ = timing.caller_check.fetch_max(value, Ordering::Relaxed);
        });
    }

    /// Whether the current request read no versions (its caller was taken unchecked).
    fn request_lacks_versions() -> bool {
        REQUEST_TIMING
            .try_with(|timing| timing.request_versions.get().is_none())
            .unwrap_or(false)
    }

    /// Keeps `versions` as the current request's own ([`Timing::keep_request_versions`]).
    fn keep_versions_of_request(versions: Versions) {
        let _ = REQUEST_TIMING
            .try_with(|timing| timing.keep_request_versions(std::sync::Arc::new(versions)));
    }

    /// Notes the versions a transaction of the current request is about to bump.
    fn note_written_in_request(versions: &[&'static str]) {
        let _ = REQUEST_TIMING.try_with(|timing| {
            let mut written = timing.written.lock().unwrap_or_else(|e| e.into_inner());
            for version in versions {
                if !written.contains(version) {
                    written.push(version);
                }
            }
        });
    }

    /// Adds a statement of a write transaction to the current request's timing, if any.
    fn add_to_request(elapsed: Duration) {
        Timing::add_batch_to_request(elapsed, 1);
    }

    /// Adds `count` statements of a write transaction sent together (a SQLite batch).
    fn add_batch_to_request(elapsed: Duration, count: u64) {
        let _ = REQUEST_TIMING.try_with(|timing| timing.add_statements(elapsed, count));
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

/// A statement or connection that failed, logged with its cause: [`StoreError::raced`] when
/// PostgreSQL gave the transaction up for another ([`lost_to_another_transaction`]),
/// [`StoreError::Unavailable`] when the database cannot be reached now ([`unreachable`]),
/// else [`StoreError::Internal`].
/// Every failure the database driver returns is told here.
pub(crate) fn failed(context: &str, error: sqlx::Error) -> StoreError {
    if lost_to_another_transaction(&error) {
        tracing::warn!(%error, "{context}: lost to a concurrent transaction");
        return StoreError::raced();
    }
    if unreachable(&error) {
        tracing::warn!(%error, "{context}: the database cannot be reached");
        return StoreError::Unavailable;
    }
    internal(context, error)
}

/// PostgreSQL's error codes for a transaction it ended because another one touched the same
/// rows: 40P01 `deadlock_detected` and 40001 `serialization_failure`.
const PG_LOST_CODES: [&str; 2] = ["40P01", "40001"];

/// Whether PostgreSQL rolled the transaction back because of another one
/// ([`PG_LOST_CODES`]): nothing was written and the same transaction done again succeeds,
/// so it is [`StoreError::raced`], which the executor runs again.
pub fn lost_to_another_transaction(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db)
        if db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
            .is_some_and(|pg| PG_LOST_CODES.contains(&pg.code())))
}

/// PostgreSQL's error codes that say the session cannot go on or could not begin: class 08
/// (connection exceptions) is matched by its prefix; these are the server shutting down
/// (57P01 `admin_shutdown`, also what `pg_terminate_backend` sends; 57P02 `crash_shutdown`),
/// starting up (57P03 `cannot_connect_now`), or full (53300 `too_many_connections`).
const PG_UNREACHABLE_CODES: [&str; 4] = ["57P01", "57P02", "57P03", "53300"];

/// SQLite's primary result codes (the low byte of an extended one) for a database another
/// connection holds past the busy timeout: `SQLITE_BUSY` and `SQLITE_LOCKED`.
const SQLITE_BUSY: i32 = 5;
const SQLITE_LOCKED: i32 = 6;

/// Whether `error` says the database cannot be reached now, rather than that a statement was
/// wrong: the connection failed (refused, reset, closed: an I/O or TLS error), no pooled
/// connection came within the wait, the pool is closed (this process shuts down), PostgreSQL
/// ended or refused the session (an error of severity FATAL or PANIC, a connection
/// exception, the server shutting down or starting), or SQLite stayed busy or locked by
/// another connection past its busy timeout. The same request may succeed once it answers.
pub fn unreachable(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed => true,
        sqlx::Error::Database(db) => {
            if let Some(pg) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
                let code = pg.code();
                matches!(
                    pg.severity(),
                    sqlx::postgres::PgSeverity::Fatal | sqlx::postgres::PgSeverity::Panic
                ) || code.starts_with("08")
                    || PG_UNREACHABLE_CODES.contains(&code)
            } else if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                db.code()
                    .and_then(|code| code.parse::<i32>().ok())
                    .is_some_and(|code| matches!(code & 0xff, SQLITE_BUSY | SQLITE_LOCKED))
            } else {
                false
            }
        }
        _ => false,
    }
}

/// Logs a stored row that did not decode and returns [`StoreError::Unreadable`] saying why.
fn unreadable(error: impl Display) -> StoreError {
    tracing::error!(%error, "a row did not decode");
    StoreError::Unreadable(format!("a stored row did not decode: {error}"))
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

/// `sql` with each `LIMIT ?` written `LIMIT +?`, so that SQLite compiles it once.
///
/// SQLite (3.51, the bundled one) reads a bound `LIMIT` while it compiles a statement, for its
/// planner, and then marks the statement to be compiled again whenever that parameter is
/// bound, so every page read that missed the page cache would be compiled at each execution
/// (docs/decisions/0016-sqlite-limit-compiled-once.md). SQLite looks through a unary plus only
/// for literals, so `LIMIT +?` is compiled once and planned as for a limit not known in
/// advance. PostgreSQL's text numbers its parameters
/// (`$1`), so it is left as it is.
fn limit_compiled_once(sql: String) -> String {
    const BOUND_LIMIT: &str = " LIMIT ?";
    if sql.contains(BOUND_LIMIT) {
        sql.replace(BOUND_LIMIT, " LIMIT +?")
    } else {
        sql
    }
}

/// A statement's SQL and values for `builder`'s database, the limit written as
/// [`limit_compiled_once`] writes it: every statement the store runs on a pool is built here
/// (a transaction's SQLite batches are rewritten in [`WriteTx::send_sqlite`]).
pub(crate) fn built<S, B>(statement: &S, builder: B) -> (String, sea_query_sqlx::SqlxValues)
where
    S: SqlxBinder,
    B: sea_query::QueryBuilder,
{
    let (sql, values) = statement.build_sqlx(builder);
    (limit_compiled_once(sql), values)
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

/// Runs one write outside any transaction, returning the rows affected: on SQLite in the
/// write turn, on the connection writes run on ([`crate::write_turn`]), so it never waits for
/// the lock in SQLite's busy handler; on PostgreSQL on a pooled connection. For
/// [`Store::execute_untracked`] and the count cache's writer, which has no store.
pub(crate) async fn execute_outside_transaction<S>(
    pool: &Pool,
    write_turn: Option<&crate::write_turn::WriteTurn>,
    table: &str,
    statement: &S,
) -> StoreResult<u64>
where
    S: SqlxBinder,
{
    let done = match (pool, write_turn) {
        (Pool::Sqlite(_), Some(turn)) => {
            let mut turn = turn.take().await?;
            let (sql, values) = built(statement, sea_query::SqliteQueryBuilder);
            sqlx::query_with(AssertSqlSafe(sql), values)
                .execute(&mut *turn.conn)
                .await
                .map(|done| done.rows_affected())
        }
        _ => on_pool!(pool, |pool, builder| {
            let (sql, values) = built(statement, builder);
            sqlx::query_with(AssertSqlSafe(sql), values)
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
        }),
    };
    done.map_err(|e| write_error(table, e))
}

impl Store {
    /// Connects (creating an SQLite file if needed) with the settings each backend wants.
    pub async fn connect(options: &StoreOptions) -> StoreResult<Store> {
        let url = options.url.as_str();
        let mut export_pool = None;
        let mut write_turn = None;
        let wait = options.database_wait;
        let pool = if url.starts_with("sqlite:") {
            let main = sqlite_options(url, SQLITE_CACHE_KIB, wait)?;
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
            write_turn,
            checkpoints,
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
            sqlx::raw_sql(AssertSqlSafe(sql.to_string()))
                .execute(pool)
                .await
                .map_err(|e| failed(&format!("schema statement failed: {sql}"), e))?;
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

pub(crate) enum Tx {
    Sqlite(SqliteTx),
    /// [`crate::write::Begin::CheckingFirst`] on SQLite before it took the write turn: reads run on
    /// `reader`, a pooled connection, outside a transaction. `reader` is `None` once the
    /// write ended.
    SqliteUnbegun {
        reader: Option<sqlx::pool::PoolConnection<sqlx::Sqlite>>,
        turn: crate::write_turn::WriteTurn,
    },
    Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
    /// [`crate::write::Begin::Optimistic`] before its first write statement: reads run on the
    /// connection outside a transaction. `None` once it is ended.
    PostgresUnbegun(Option<sqlx::pool::PoolConnection<sqlx::Postgres>>),
}

/// A write transaction on SQLite, begun and ended by statements of its own: `BEGIN
/// IMMEDIATE` travels with the transaction's first statement and `COMMIT` with its last,
/// where sqlx's transactions send each alone. Every statement sent is a round trip to the
/// connection's thread, which costs about as much as a short statement itself.
pub(crate) struct SqliteTx {
    /// Held until the transaction ends; `None` once it has.
    conn: Option<sqlx::pool::PoolConnection<sqlx::Sqlite>>,
    /// `BEGIN IMMEDIATE` is still to be sent, with the first statement.
    unbegun: bool,
    /// This process's turn to write, given up when the transaction has ended.
    turn: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl SqliteTx {
    /// A transaction to begin on the connection of `turn`, which it holds until it ends.
    pub(crate) fn in_turn(turn: crate::write_turn::Turn) -> SqliteTx {
        SqliteTx {
            conn: Some(turn.conn),
            unbegun: true,
            turn: Some(turn.permit),
        }
    }
}

impl Drop for SqliteTx {
    /// A transaction dropped before its commit (an error, a request gone) is rolled back on
    /// its connection, behind any statement of it still running there, before the
    /// connection and the turn to write are given up.
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        let turn = self.turn.take();
        if self.unbegun {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if let Err(error) = sqlx::query("ROLLBACK").execute(&mut *conn).await {
                        // None was open: its commit ran after all (a request dropped while
                        // its commit was on the way), or its BEGIN failed. The connection is
                        // closed rather than trusted.
                        tracing::debug!(%error, "a write transaction found nothing to roll back; its connection is closed");
                        conn.close_on_drop();
                    }
                    drop(turn);
                });
            }
            Err(_) => conn.close_on_drop(),
        }
    }
}

/// How a SQLite write transaction begins: with the write lock taken at once, so that two
/// writers never deadlock upgrading read locks.
const BEGIN_SQL: &str = "BEGIN IMMEDIATE";

/// One statement of a batch sent to SQLite ([`WriteTx::send_sqlite`]), and what its error
/// is.
struct Batched {
    sql: String,
    values: sea_query::Values,
    part: Part,
}

/// Whose a statement of a batch is, for its error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// `BEGIN IMMEDIATE` or `COMMIT`.
    Transaction,
    /// Held back ([`WriteTx::update_unanswered`]), writing this table.
    Held(&'static str),
    /// The check of a caller taken from memory unchecked (`Timing::check_caller_at`), first
    /// in the batch that commits.
    CallerCheck,
    /// An optimistic write's insert held back ([`WriteTx::insert_unanswered_if_new`]): a
    /// unique value taken, or a record it refers to gone, means a concurrent write came
    /// first since the write's checks.
    HeldIfNew(&'static str),
    /// The assertion after an optimistic write's conditional update that it changed its row
    /// ([`WriteTx::update_unanswered`]): failing, a concurrent write came first, or the
    /// update's own conditions do not admit the row.
    ChangedItsRow,
    /// The statement the caller sends now.
    Own,
}

/// A write transaction. It remembers which tables it wrote and bumps their versions just
/// before committing, so cached counts over those tables stop being used the moment the
/// change is visible, and not a moment before.
pub struct WriteTx {
    tx: Tx,
    /// SQLite only: counts this transaction's commit towards the next checkpoint.
    checkpoints: Option<std::sync::Arc<crate::checkpoint::Checkpoints>>,
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
    /// SQLite: statements nobody waits on the answer of, sent with the next statement
    /// ([`WriteTx::update_unanswered`]).
    unanswered: Vec<Batched>,
    /// PostgreSQL: writes nobody waits on the answer of ([`WriteTx::update_unanswered`],
    /// and an optimistic write's inserts, [`WriteTx::insert_unanswered`]), with their table:
    /// sent alone before any other statement, or as parts of an optimistic write's one
    /// statement.
    held_writes: Vec<HeldWrite>,
    /// The read that answers the write, when its commit may carry it ([`WriteTx::answer_with`]).
    answer: Option<HeldAnswer>,
    /// The answer's rows, once a commit carried its read.
    answered: Option<Vec<Vec<Cell>>>,
    /// Whether the commit reads the version its one held update wrote
    /// ([`WriteTx::update_unread`]).
    version_asked: bool,
    /// That version, once the commit read it.
    version_written: Option<i64>,
}

/// What a commit read besides writing ([`WriteTx::commit_answered`]).
pub(crate) struct Committed {
    /// The answer's rows, when the commit carried its read ([`WriteTx::answer_with`]).
    pub(crate) answer: Option<Vec<Vec<Cell>>>,
    /// The version of the record an unread update wrote ([`WriteTx::update_unread`]).
    pub(crate) version: Option<i64>,
}

/// A write's answer read by its commit ([`WriteTx::answer_with`]): one statement fewer, and
/// the rows are the ones the write made, not read back.
struct HeldAnswer {
    /// The table written, whose name the answer's statement reads the written rows by.
    table: &'static str,
    statement: sea_query::SelectStatement,
    kinds: Vec<Kind>,
    /// The versions the answer's expansions read under, if they read under any
    /// ([`crate::page::versions_its_expansions_read`]).
    versions_read: Option<Vec<&'static str>>,
}

/// A write held back on PostgreSQL ([`WriteTx::held_writes`]).
struct HeldWrite {
    table: &'static str,
    statement: HeldStatement,
    /// Whether it must write its one row, or else a concurrent write came first: an
    /// optimistic write's update whose `WHERE` names the version its row was read at,
    /// unlocked, or its insert that skips a row whose unique values are taken.
    conditional: bool,
}

/// What a [`HeldWrite`] sends.
enum HeldStatement {
    Update(sea_query::UpdateStatement),
    /// Only an optimistic write holds inserts: a transaction sends them at once.
    Insert(sea_query::InsertStatement),
}

/// What a held write's part of a larger statement returns ([`HeldStatement::into_cte`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Returned {
    Ids,
    IdsAndVersions,
    Whole,
}

impl HeldStatement {
    fn build(&self) -> (String, sea_query_sqlx::SqlxValues) {
        match self {
            HeldStatement::Update(update) => update.build_sqlx(PostgresQueryBuilder),
            HeldStatement::Insert(insert) => insert.build_sqlx(PostgresQueryBuilder),
        }
    }

    /// The statement as the common table expression `name` of a larger one, returning its
    /// rows' ids, to be counted, or, for a write that answers with its row, its rows whole,
    /// or, for an update whose version is asked for, their ids and versions.
    fn into_cte(self, name: &str, returned: Returned) -> CommonTableExpression {
        let mut cte = CommonTableExpression::new();
        let ids = || Query::returning().column(Alias::new("id"));
        match self {
            HeldStatement::Update(mut update) => {
                update.returning(match returned {
                    Returned::Whole => Query::returning().all(),
                    Returned::IdsAndVersions => Query::returning()
                        .columns([Alias::new("id"), Alias::new(crate::schema::ROW_VERSION)]),
                    Returned::Ids => ids(),
                });
                cte.query(update);
            }
            HeldStatement::Insert(mut insert) => {
                insert.returning(if returned == Returned::Whole {
                    Query::returning().all()
                } else {
                    ids()
                });
                cte.query(insert);
            }
        }
        cte.table_name(Alias::new(name)).to_owned()
    }
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
        self.mark_insert(table, ids, inserted);
        self.execute_untracked(table, statement).await
    }

    /// [`WriteTx::execute_insert_of`] of new rows for a caller that needs no count (an
    /// insert that fails, fails whole): on SQLite it is sent with the transaction's next
    /// statement or its commit, as [`WriteTx::update_unanswered`] is; on PostgreSQL at once,
    /// or, in an optimistic write, as a part of the statement that commits it
    /// ([`WriteTx::commit_alone`]). A unique key taken is then that later statement's error,
    /// told as this table's.
    pub(crate) async fn insert_unanswered(
        &mut self,
        table: &'static str,
        statement: sea_query::InsertStatement,
        ids: &[&str],
    ) -> StoreResult<()> {
        match self.tx {
            Tx::Postgres(_) => self
                .execute_insert_of(table, &statement, ids, true)
                .await
                .map(|_| ()),
            Tx::PostgresUnbegun(_) => {
                self.mark_insert(table, ids, true);
                self.hold_write(table, HeldStatement::Insert(statement), false)
                    .await
            }
            Tx::Sqlite(_) | Tx::SqliteUnbegun { .. } => {
                self.mark_insert(table, ids, true);
                self.hold(Part::Held(table), statement.build(SqliteQueryBuilder));
                Ok(())
            }
        }
    }

    /// An insert of one new row of an optimistic write ([`WriteTx::is_optimistic`]), held for
    /// the statement that commits the write, on condition that the row's unique values (its
    /// natural key) are still free: if a concurrent write took them since the check, nothing
    /// is written and the write fails with [`StoreError::raced`]. On PostgreSQL the insert
    /// skips the row (`ON CONFLICT DO NOTHING`) and the rest of the statement is conditioned
    /// on it; on SQLite the taken key fails the insert, and with it the batch that would have
    /// committed the write. A write that is not optimistic inserts at once, skipping a row
    /// whose key is taken, and fails the same way.
    pub(crate) async fn insert_unanswered_if_new(
        &mut self,
        table: &'static str,
        mut statement: sea_query::InsertStatement,
        ids: &[&str],
    ) -> StoreResult<()> {
        if let Tx::SqliteUnbegun { .. } = self.tx {
            self.mark_insert(table, ids, true);
            self.hold(Part::HeldIfNew(table), statement.build(SqliteQueryBuilder));
            return Ok(());
        }
        statement.on_conflict(sea_query::OnConflict::new().do_nothing().to_owned());
        if !self.is_optimistic() {
            return match self.execute_insert_of(table, &statement, ids, true).await? {
                0 => Err(StoreError::raced()),
                _ => Ok(()),
            };
        }
        self.mark_insert(table, ids, true);
        self.hold_write(table, HeldStatement::Insert(statement), true)
            .await
    }

    /// PostgreSQL: holds a write back ([`WriteTx::held_writes`]). An optimistic write keeps
    /// it for the statement that commits it while that can still be one statement
    /// ([`WriteTx::committed_alone_if_now`]); otherwise (a transaction's, or a second
    /// conditional write: the write begins its transaction) every held write is sent now.
    async fn hold_write(
        &mut self,
        table: &'static str,
        statement: HeldStatement,
        conditional: bool,
    ) -> StoreResult<()> {
        self.held_writes.push(HeldWrite {
            table,
            statement,
            conditional,
        });
        if self.is_optimistic() && self.committed_alone_if_now() {
            return Ok(());
        }
        self.send_held_writes().await
    }

    /// SQLite: keeps a statement to send with the next one ([`WriteTx::send_sqlite`]); an
    /// error it meets is told as `part`'s.
    fn hold(&mut self, part: Part, (sql, values): (String, sea_query::Values)) {
        self.unanswered.push(Batched { sql, values, part });
    }

    /// Remembers rows `ids` of `table` as written (`inserted`: as new rows).
    fn mark_insert(&mut self, table: &'static str, ids: &[&str], inserted: bool) {
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

    /// [`WriteTx::execute_update_of`] for a caller that needs no count of the rows changed
    /// (it checked and locked them). On SQLite it is sent with the transaction's next
    /// statement or with its commit, one round trip for all; on PostgreSQL just before the
    /// next statement, or, for an optimistic write, inside the statement that commits it
    /// ([`WriteTx::hold_write`], [`WriteTx::commit_postgres`]). An error it meets (a unique
    /// key taken) comes from that statement or the commit instead.
    ///
    /// `conditional`: its `WHERE` names the version of the row as read by an optimistic
    /// write ([`WriteTx::is_optimistic`]); if it changes no row, the write fails with
    /// [`StoreError::raced`].
    pub(crate) async fn update_unanswered(
        &mut self,
        table: &'static str,
        statement: sea_query::UpdateStatement,
        ids: &[&str],
        conditional: bool,
    ) -> StoreResult<()> {
        self.mark_update(table, &statement, Some(ids));
        if matches!(self.tx, Tx::SqliteUnbegun { .. }) && conditional {
            // Conditioned on what was read outside the turn (or on nothing read: an unread
            // update's `WHERE` holds the checks): held, with the assertion that it changed
            // its row right after it, so that the batch fails before its `COMMIT` if it did
            // not. An unread update returns the version it wrote.
            let mut statement = statement;
            if self.version_asked {
                statement.returning(
                    Query::returning()
                        .columns([Alias::new("id"), Alias::new(crate::schema::ROW_VERSION)]),
                );
            }
            self.hold(Part::Held(table), statement.build(SqliteQueryBuilder));
            let changed =
                crate::write_turn::assertion(Expr::expr(Func::cust(Alias::new("changes"))).eq(1));
            self.hold(Part::ChangedItsRow, changed.build(SqliteQueryBuilder));
            return Ok(());
        }
        if matches!(self.tx, Tx::Sqlite(_) | Tx::SqliteUnbegun { .. }) {
            self.hold(Part::Held(table), statement.build(SqliteQueryBuilder));
            return Ok(());
        }
        self.hold_write(table, HeldStatement::Update(statement), conditional)
            .await
    }

    /// An optimistic write's ([`WriteTx::is_optimistic`]) update of the one row `id` of
    /// `table` that was not read first: its `WHERE` holds every condition the write needs
    /// (the caller's scope and rules, a precondition), so the record is checked and written
    /// by the statement that commits the write, and the commit reads the version it wrote
    /// ([`Committed::version`]). If it writes no row, nothing is written and the write fails
    /// with [`StoreError::raced`]: the caller then writes it the checked way, which tells why.
    pub(crate) async fn update_unread(
        &mut self,
        table: &'static str,
        statement: sea_query::UpdateStatement,
        id: &str,
    ) -> StoreResult<()> {
        self.version_asked = true;
        self.update_unanswered(table, statement, &[id], true).await
    }

    /// Whether an optimistic write's held writes can be one statement that commits itself
    /// ([`WriteTx::commit_alone`]): an update conditioned on its row's version must be the
    /// only write, because every other part is conditioned on it, and an insert cannot be.
    fn committed_alone_if_now(&self) -> bool {
        let writes = self.held_writes.len();
        let conditional = self.held_writes.iter().filter(|h| h.conditional).count();
        writes <= MAX_HELD && (writes == 1 || conditional == 0)
    }

    /// Whether this write checks before it locks ([`crate::write::Begin::Optimistic`]) and has not
    /// begun its transaction: what it reads is not locked, so an update names the version
    /// it read ([`WriteTx::update_unanswered`]).
    pub(crate) fn is_optimistic(&self) -> bool {
        matches!(self.tx, Tx::PostgresUnbegun(_) | Tx::SqliteUnbegun { .. })
    }

    /// Whether the statement that commits this write can read its answer too
    /// ([`WriteTx::answer_with`]): an optimistic write's on PostgreSQL.
    pub(crate) fn commit_can_answer(&self) -> bool {
        matches!(self.tx, Tx::PostgresUnbegun(_))
    }

    /// An optimistic write's transaction, begun before its first write statement: on
    /// PostgreSQL at once, on SQLite in the write turn, taken now (`BEGIN IMMEDIATE` goes
    /// with the next statement, after the writes held back).
    async fn begin_now(&mut self) -> StoreResult<()> {
        match &mut self.tx {
            Tx::PostgresUnbegun(conn) => {
                let conn = conn.take().ok_or_else(ended)?;
                let started = Instant::now();
                let tx = sqlx::Transaction::begin(conn, None)
                    .await
                    .map_err(|e| failed("cannot begin a transaction", e))?;
                Timing::add_to_request(started.elapsed());
                self.tx = Tx::Postgres(tx);
            }
            Tx::SqliteUnbegun { reader, turn } => {
                // The pooled connection goes back to the pool before the wait for the turn:
                // the write that holds the turn may need one to finish.
                if reader.take().is_none() {
                    return Err(ended());
                }
                let turn = turn.clone().take().await?;
                self.tx = Tx::Sqlite(SqliteTx::in_turn(turn));
            }
            Tx::Sqlite(_) | Tx::Postgres(_) => {}
        }
        Ok(())
    }

    /// PostgreSQL: sends the updates held back ([`WriteTx::update_unanswered`]), each alone,
    /// before a statement that may read what they write.
    async fn send_held_writes(&mut self) -> StoreResult<()> {
        if self.held_writes.is_empty() {
            return Ok(());
        }
        self.begin_now().await?;
        let Tx::Postgres(tx) = &mut self.tx else {
            return Ok(());
        };
        for held in std::mem::take(&mut self.held_writes) {
            let started = Instant::now();
            let (sql, values) = held.statement.build();
            let changed = sqlx::query_with(AssertSqlSafe(sql), values)
                .execute(&mut **tx)
                .await
                .map_err(|e| write_error(held.table, e))?
                .rows_affected();
            Timing::add_to_request(started.elapsed());
            if held.conditional && changed == 0 {
                return Err(StoreError::raced());
            }
        }
        Ok(())
    }

    /// SQLite: sends what waits to be sent (`BEGIN IMMEDIATE`, the statements held back),
    /// then `own`, then `COMMIT` if `commit`, as one batch: one round trip to the
    /// connection's thread. Returns the rows of every statement and the rows each of `own`
    /// affected; an error says whose statement failed.
    async fn send_sqlite(
        &mut self,
        own: Vec<(String, sea_query::Values)>,
        commit: bool,
    ) -> Result<(Vec<sqlx::sqlite::SqliteRow>, Vec<u64>), (Part, sqlx::Error)> {
        use futures_util::StreamExt;
        let Tx::Sqlite(tx) = &mut self.tx else {
            return Err((
                Part::Transaction,
                sqlx::Error::Protocol("statements are batched on SQLite only".into()),
            ));
        };
        let mut batch: Vec<Batched> = Vec::new();
        let begins = std::mem::take(&mut tx.unbegun);
        let ours = |sql: &str| Batched {
            sql: sql.into(),
            values: sea_query::Values(Vec::new()),
            part: Part::Transaction,
        };
        if begins {
            // The mark that tells the triggers seeing outside writes that this one is
            // brandhub's, held until just before the commit (`crate::external`).
            batch.push(ours(BEGIN_SQL));
            batch.push(ours(crate::external::MARK_SQL));
        }
        batch.append(&mut self.unanswered);
        batch.extend(own.into_iter().map(|(sql, values)| Batched {
            sql,
            values,
            part: Part::Own,
        }));
        if commit {
            batch.push(ours(crate::external::UNMARK_SQL));
            batch.push(ours("COMMIT"));
        }
        let parts: Vec<Part> = batch.iter().map(|b| b.part).collect();
        // Counted as statements, as sqlx's transactions were: all but the `BEGIN` and the
        // mark's two.
        let counted = (batch.len() - 2 * usize::from(begins) - usize::from(commit)) as u64;
        let mut sql = String::new();
        let mut values = Vec::new();
        for statement in batch {
            if !sql.is_empty() {
                sql.push_str(";\n");
            }
            sql.push_str(&limit_compiled_once(statement.sql));
            values.extend(statement.values.0);
        }
        let conn = tx
            .conn
            .as_mut()
            .expect("a transaction holds its connection until it ends");
        let started = Instant::now();
        // Several statements in one query: sqlx's SQLite driver prepares and runs them in
        // order, binding each its own values, and reports each one's end. sqlx deprecates
        // this (launchbadge/sqlx#3108) in favour of `raw_sql`, which binds no values; every
        // write test runs through here, so a driver that stopped doing it fails them all.
        #[allow(deprecated)]
        let mut steps = sqlx::query_with(
            AssertSqlSafe(sql),
            sea_query_sqlx::SqlxValues(sea_query::Values(values)),
        )
        .fetch_many(&mut **conn);
        let mut rows = Vec::new();
        let mut affected = Vec::new();
        let mut done = 0;
        while let Some(step) = steps.next().await {
            match step {
                Ok(sqlx::Either::Left(result)) => {
                    if parts.get(done) == Some(&Part::Own) {
                        affected.push(result.rows_affected());
                    }
                    done += 1;
                }
                Ok(sqlx::Either::Right(row)) => rows.push(row),
                Err(error) => return Err((parts.get(done).copied().unwrap_or(Part::Own), error)),
            }
        }
        drop(steps);
        if commit {
            // Committed: nothing to roll back when it is dropped.
            tx.conn = None;
            if let Some(checkpoints) = &self.checkpoints {
                checkpoints.committed();
            }
        }
        Timing::add_batch_to_request(started.elapsed(), counted);
        Ok((rows, affected))
    }

    async fn execute_update_rows(
        &mut self,
        table: &'static str,
        statement: &sea_query::UpdateStatement,
        ids: Option<&[&str]>,
    ) -> StoreResult<u64> {
        self.mark_update(table, statement, ids);
        self.execute_untracked(table, statement).await
    }

    /// [`WriteTx::mark_updated_rows`] with the columns `statement` sets.
    fn mark_update(
        &mut self,
        table: &'static str,
        statement: &sea_query::UpdateStatement,
        ids: Option<&[&str]>,
    ) {
        let columns: Vec<_> = statement
            .get_values()
            .iter()
            .map(|(c, _)| c.inner())
            .collect();
        self.mark_updated_rows(table, columns.iter().map(|c| c.as_ref()), ids);
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
        // What the database keeps from this table (offers) changes with it, by trigger:
        // rows this write cannot name.
        for &kept in crate::offers::kept_from(table) {
            self.touch(kept);
        }
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
        self.send_held_writes().await?;
        self.begin_now().await?;
        let Tx::Postgres(tx) = &mut self.tx else {
            let (sql, sea_query_sqlx::SqlxValues(values)) =
                statement.build_sqlx(SqliteQueryBuilder);
            let (_, affected) = self
                .send_sqlite(vec![(sql, values)], false)
                .await
                .map_err(|(part, e)| batch_error(part, e, |e| write_error(table, e)))?;
            return Ok(affected.first().copied().unwrap_or(0));
        };
        let started = Instant::now();
        let (sql, values) = statement.build_sqlx(PostgresQueryBuilder);
        let affected = sqlx::query_with(AssertSqlSafe(sql), values)
            .execute(&mut **tx)
            .await
            .map_err(|e| write_error(table, e))?
            .rows_affected();
        Timing::add_to_request(started.elapsed());
        Ok(affected)
    }

    /// Runs a select inside the transaction.
    pub async fn fetch(
        &mut self,
        statement: &sea_query::SelectStatement,
        kinds: &[Kind],
    ) -> StoreResult<Vec<Vec<Cell>>> {
        self.fetch_rows(statement, kinds, true, |e| {
            failed("a read in a write failed", e)
        })
        .await
    }

    /// Runs any statement that returns rows inside the transaction (begun first).
    pub(crate) async fn fetch_statement<S: SqlxBinder>(
        &mut self,
        statement: &S,
        kinds: &[Kind],
    ) -> StoreResult<Vec<Vec<Cell>>> {
        self.fetch_rows(statement, kinds, false, |e| {
            failed("a read in a write failed", e)
        })
        .await
    }

    /// Runs a statement that returns rows and decodes them by `kinds`; `failed` turns a
    /// database error into the caller's error. `reading`: it may run outside a transaction
    /// on an optimistic write (it writes and locks nothing, or it is the statement that
    /// commits that write by itself); otherwise the transaction is begun first.
    async fn fetch_rows<S>(
        &mut self,
        statement: &S,
        kinds: &[Kind],
        reading: bool,
        failed: impl FnOnce(sqlx::Error) -> StoreError,
    ) -> StoreResult<Vec<Vec<Cell>>>
    where
        S: SqlxBinder,
    {
        self.send_held_writes().await?;
        // On SQLite a read of what the write holds back is made in its transaction.
        if !reading || !self.unanswered.is_empty() {
            self.begin_now().await?;
        }
        let decoded = match &mut self.tx {
            Tx::SqliteUnbegun { reader, .. } => {
                // Outside a transaction, beside other writes: an optimistic write's checks.
                let reader = reader.as_mut().ok_or_else(ended)?;
                let started = Instant::now();
                let (sql, values) = built(statement, SqliteQueryBuilder);
                let rows = sqlx::query_with(AssertSqlSafe(sql), values)
                    .fetch_all(&mut **reader)
                    .await
                    .map_err(failed)?;
                Timing::add_to_request(started.elapsed());
                rows.iter()
                    .map(|r| decode_row(r, kinds))
                    .collect::<Result<_, _>>()
            }
            Tx::Sqlite(_) => {
                let (sql, sea_query_sqlx::SqlxValues(values)) =
                    statement.build_sqlx(SqliteQueryBuilder);
                let (rows, _) = self
                    .send_sqlite(vec![(sql, values)], false)
                    .await
                    .map_err(|(part, e)| batch_error(part, e, failed))?;
                rows.iter()
                    .map(|r| decode_row(r, kinds))
                    .collect::<Result<_, _>>()
            }
            Tx::Postgres(_) | Tx::PostgresUnbegun(_) => {
                // In the transaction, or outside one for an optimistic write's reads.
                let conn: &mut sqlx::PgConnection = match &mut self.tx {
                    Tx::Postgres(tx) => tx,
                    Tx::PostgresUnbegun(Some(conn)) => conn,
                    _ => return Err(ended()),
                };
                let started = Instant::now();
                let (sql, values) = statement.build_sqlx(PostgresQueryBuilder);
                let rows = sqlx::query_with(AssertSqlSafe(sql), values)
                    .fetch_all(conn)
                    .await
                    .map_err(failed)?;
                Timing::add_to_request(started.elapsed());
                rows.iter()
                    .map(|r| decode_row(r, kinds))
                    .collect::<Result<_, _>>()
            }
        };
        decoded.map_err(unreadable)
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
        self.fetch_rows(statement, kinds, false, |e| write_error(name, e))
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
        self.fetch_rows(statement, kinds, false, |e| write_error(table, e))
            .await
    }

    /// Writes the announced events to the outbox, bumps the versions of the written tables,
    /// then commits.
    pub async fn commit(self) -> StoreResult<()> {
        self.commit_answered().await.map(|_| ())
    }

    /// Asks the commit to read the write's answer too: `statement` (decoded as `kinds`),
    /// which reads `table` for the rows written to it. Only an optimistic write on
    /// PostgreSQL whose one write is of a row of `table`, on condition (an update's, that
    /// the row is as read or as its `WHERE` asks; an insert's, that its key is free),
    /// carries it, in the statement that writes and commits, where `table`'s name stands for
    /// the row written: the statement must read `table` only for the rows it answers with
    /// (`brandhub_query::sql::reaches_own_table`). [`WriteTx::commit_answered`] tells
    /// whether the commit read it. Not on SQLite: read inside the transaction, the answer
    /// would hold the one write lock longer, and writers queue for it
    /// (docs/decisions/0011-sqlite-few-round-trips.md). So only a write that
    /// [`WriteTx::commit_can_answer`] asks.
    ///
    /// `versions_read`: the versions the answer's expansions read under
    /// ([`crate::page::versions_its_expansions_read`]); a request that read none before it
    /// wrote (its caller taken unchecked, `Timing::check_caller_at`) then gets those from
    /// the same statement, as it saw them before its own bump.
    pub(crate) fn answer_with(
        &mut self,
        table: &'static str,
        statement: sea_query::SelectStatement,
        kinds: Vec<Kind>,
        versions_read: Option<Vec<&'static str>>,
    ) {
        self.answer = Some(HeldAnswer {
            table,
            statement,
            kinds,
            versions_read,
        });
    }

    /// [`WriteTx::commit`], with what the commit read: the rows of the answer asked for by
    /// [`WriteTx::answer_with`] (`None` when it did not read them, and the answer is to be
    /// read after it), and the version an unread update wrote ([`WriteTx::update_unread`]).
    pub(crate) async fn commit_answered(mut self) -> StoreResult<Committed> {
        let versions = self.versions_to_bump();
        // Before the commit is sent: a commit that fails leaves the versions unknown, which
        // costs only a cache lookup.
        Timing::note_written_in_request(&versions);
        let announced = if matches!(self.tx, Tx::Sqlite(_) | Tx::SqliteUnbegun { .. }) {
            self.commit_sqlite(&versions).await?
        } else {
            self.commit_postgres(&versions).await?
        };
        if let Tx::Postgres(tx) = self.tx {
            let started = Instant::now();
            tx.commit().await.map_err(|e| failed("commit failed", e))?;
            Timing::add_to_request(started.elapsed());
        }
        if announced {
            self.events_written.notify_one();
        }
        Ok(Committed {
            answer: self.answered,
            version: self.version_written,
        })
    }
}

impl WriteTx {
    /// The versions the commit bumps: of every table written, and of the columns updated.
    fn versions_to_bump(&mut self) -> Vec<&'static str> {
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
        if crate::accounts::moves_auth_stamp(&versions) {
            versions.push(crate::accounts::AUTH_STAMP);
        }
        if !versions.is_empty() {
            tracing::debug!(?versions, "committing a write");
        }
        versions
    }

    /// SQLite's commit: the statements held back, the outbox, the bump, the rows' log, a
    /// prune now and then, and `COMMIT`, in one round trip. Whether it wrote events.
    async fn commit_sqlite(&mut self, versions: &[&'static str]) -> StoreResult<bool> {
        use crate::row_log::{Versions, log_statement, prune_statement};
        let mut batch: Vec<(String, sea_query::Values)> = self
            .outbox_statements(None)
            .iter()
            .map(|insert| insert.build(SqliteQueryBuilder))
            .collect();
        let outbox = batch.len();
        if !versions.is_empty() {
            let written = std::mem::take(&mut self.written_rows);
            batch.push(crate::versions::bump_statement(versions, 0).build(SqliteQueryBuilder));
            if let Some(log) = log_statement(&written, 0, Versions::Table) {
                batch.push(log.build(SqliteQueryBuilder));
            }
            let tables: Vec<&'static str> = written.iter().map(|(table, _)| *table).collect();
            if let Some(prune) = prune_statement(&tables, 0) {
                batch.push(prune.build(SqliteQueryBuilder));
            }
        }
        // A caller taken from memory unchecked (`Timing::check_caller_at`): the batch that
        // commits holds only while its authentication stamp does, checked first.
        let caller = Timing::caller_stamp_of_request().filter(|_| !versions.is_empty());
        if let Some(stamp) = caller {
            let (sql, values) =
                crate::accounts::caller_unchanged_on_sqlite(stamp).build(SqliteQueryBuilder);
            self.unanswered.insert(
                0,
                Batched {
                    sql,
                    values,
                    part: Part::CallerCheck,
                },
            );
        }
        if batch.is_empty() && self.unanswered.is_empty() {
            match &mut self.tx {
                Tx::Sqlite(tx) if tx.unbegun => {
                    // Nothing was written or read: there is nothing to commit.
                    tx.conn = None;
                    return Ok(false);
                }
                Tx::SqliteUnbegun { reader, .. } => {
                    *reader = None;
                    return Ok(false);
                }
                _ => {}
            }
        }
        // An optimistic write takes its turn now, for this one batch.
        self.begin_now().await?;
        let (rows, affected) = self.send_sqlite(batch, true).await.map_err(|(part, e)| {
            batch_error(part, e, |e| failed("a commit's bookkeeping failed", e))
        })?;
        if self.version_asked {
            // The unread update's `RETURNING` is the only statement of the batch with rows.
            let written = rows
                .iter()
                .map(|row| decode_row(row, &[Kind::Text, Kind::Integer]))
                .collect::<Result<Vec<_>, _>>()
                .map_err(unreadable)?;
            self.version_written = written
                .iter()
                .filter_map(|row| match row.get(1) {
                    Some(Cell::Integer(version)) => Some(*version),
                    _ => None,
                })
                .max();
        }
        if caller.is_some() {
            Timing::note_caller_check(CallerCheck::Held);
        }
        Ok(affected.iter().take(outbox).sum::<u64>() > 0)
    }

    /// PostgreSQL's commit before `COMMIT`: the updates held back, the outbox, then the
    /// bump and the rows' log in one statement (the log reads the bump's `RETURNING` rows),
    /// and a prune now and then. The bump comes last because it locks the version rows until
    /// the commit: every write of the same tables waits for it. Whether it wrote events.
    ///
    /// An optimistic write ([`crate::write::Begin::Optimistic`]) whose one write is an update held
    /// back instead sends that update, the outbox, the bump and the log as ONE statement
    /// outside a transaction, which commits itself, every part on condition that the update
    /// changed its row; if it did not, nothing was written and the write fails with
    /// [`StoreError::raced`]. The version rows are then locked only while it executes.
    async fn commit_postgres(&mut self, versions: &[&'static str]) -> StoreResult<bool> {
        use crate::row_log::{TABLE, Versions, bumped_versions, log_statement, prune_statement};
        let alone = self.is_optimistic()
            && !versions.is_empty()
            && !self.held_writes.is_empty()
            && self.committed_alone_if_now()
            && self.outbox_statement_count() <= 1;
        if self.is_optimistic() && versions.is_empty() && self.held_writes.is_empty() {
            // Nothing was written (a write announces only what it wrote).
            return Ok(false);
        }
        let written = std::mem::take(&mut self.written_rows);
        let stripe = crate::versions::next_stripe();
        let log = log_statement(&written, stripe, Versions::Bumped);
        // A caller taken from memory unchecked: the bump, which every write makes, holds only
        // while its authentication stamp does (`Timing::check_caller_at`).
        let caller = Timing::caller_stamp_of_request()
            .filter(|_| !versions.is_empty())
            .map(crate::accounts::caller_unchanged);
        let checks_caller = caller.is_some();
        let mut announced = false;
        if alone {
            let held = std::mem::take(&mut self.held_writes);
            announced = self
                .commit_alone(held, versions, stripe, log, caller)
                .await?;
        } else {
            self.send_held_writes().await?;
            self.begin_now().await?;
            for insert in self.outbox_statements(None) {
                announced |= self.execute_untracked(EVENT_TABLE, &insert).await? > 0;
            }
            if !versions.is_empty() {
                let bump = match caller {
                    Some(caller) => crate::versions::bump_statement_after(versions, stripe, caller),
                    None => crate::versions::bump_statement(versions, stripe),
                };
                match log {
                    Some(mut log) => {
                        log.with_cte(WithClause::new().cte(bumped_versions(&bump)).to_owned());
                        self.execute_untracked(TABLE, &log).await?;
                    }
                    None => {
                        self.execute_untracked(crate::versions::TABLE, &bump)
                            .await?;
                    }
                }
            }
        }
        let tables: Vec<&'static str> = written.iter().map(|(table, _)| *table).collect();
        if let Some(prune) = prune_statement(&tables, stripe) {
            self.execute_untracked(TABLE, &prune).await?;
        }
        if checks_caller {
            // Before `COMMIT` on a transaction's path: a commit that then fails is a 500,
            // which no caller takes for a refusal.
            Timing::note_caller_check(CallerCheck::Held);
        }
        Ok(announced)
    }

    /// [`WriteTx::commit_postgres`] of an optimistic write whose writes are `held`: one
    /// statement outside a transaction, `held0`, `held1` … the writes, then the bump, the
    /// rows' `log` and the outbox. Whether it wrote events.
    ///
    /// The bump and the outbox are conditioned on the counts of the writes' rows: on an
    /// update conditioned on the version it read (then the only write), that it changed its
    /// row, else nothing is written and the write fails with [`StoreError::raced`]; on other
    /// writes only so that they run first, and the version rows are locked after every row
    /// the writes lock, as in a transaction, whose bump comes last (no deadlock with one).
    async fn commit_alone(
        &mut self,
        held: Vec<HeldWrite>,
        versions: &[&'static str],
        stripe: usize,
        log: Option<InsertStatement>,
        caller: Option<Expr>,
    ) -> StoreResult<bool> {
        let raced_if_none = held.len() == 1 && held[0].conditional;
        let names: Vec<String> = (0..held.len()).map(|i| format!("held{i}")).collect();
        // The answer rides along only on the one conditional write (an update or an insert)
        // of the table it reads.
        let mut answer = self
            .answer
            .take()
            .filter(|answer| raced_if_none && held[0].table == answer.table);
        let guard = if raced_if_none {
            count_of(&names[0]).eq(1)
        } else {
            names
                .iter()
                .map(|name| count_of(name).gte(0))
                .reduce(Expr::and)
                .unwrap_or_else(|| Expr::val(true))
        };
        let guard = match caller {
            Some(caller) => guard.and(caller),
            None => guard,
        };
        let mut outbox = self.outbox_statements(Some(&guard));
        // Only a conditional update, alone, tells the version it wrote.
        let versioned = raced_if_none
            && self.version_asked
            && matches!(held[0].statement, HeldStatement::Update(_));
        let returned = match (answer.is_some(), versioned) {
            (true, _) => Returned::Whole,
            (false, true) => Returned::IdsAndVersions,
            (false, false) => Returned::Ids,
        };
        let blamed = held[0].table;
        let mut with = WithClause::new();
        for (write, name) in held.into_iter().zip(&names) {
            with.cte(write.statement.into_cte(name, returned));
        }
        let bump = crate::versions::bump_statement_after(versions, stripe, guard);
        with.cte(crate::row_log::bumped_versions(&bump));
        if let Some(log) = log {
            with.cte(named_cte(log, "logged"));
        }
        let mut statement = Query::select();
        statement.expr(count_of(&names[0]));
        match outbox.pop() {
            Some(mut insert) => {
                insert.returning(Query::returning().column(Alias::new("id")));
                with.cte(named_cte(insert, "announced"));
                statement.expr(count_of("announced"));
            }
            None => {
                statement.expr(Expr::val(0i64));
            }
        }
        let mut kinds = vec![Kind::Integer, Kind::Integer];
        if versioned {
            statement.expr(Expr::SubQuery(
                None,
                Box::new(
                    Query::select()
                        .expr(Func::max(Expr::col(Alias::new(crate::schema::ROW_VERSION))))
                        .from(Alias::new(names[0].as_str()))
                        .to_owned()
                        .into(),
                ),
            ));
            kinds.push(Kind::Integer);
        }
        // The versions an answer's expansions read under, in a request that read none
        // (`Timing::versions_after_writes` then has them).
        let versions_at = kinds.len();
        let folded_versions = answer
            .as_mut()
            .and_then(|a| a.versions_read.take())
            .filter(|_| Timing::request_lacks_versions());
        if let Some(names) = &folded_versions {
            statement.expr(Expr::SubQuery(
                None,
                Box::new(crate::versions::folded_statement_of(Backend::Postgres, names).into()),
            ));
            kinds.push(Kind::Text);
        }
        let head = kinds.len();
        let answers = answer.is_some();
        if let Some(answer) = answer {
            // Last, so that only the answer reads it: the table's name now stands for the
            // row the update wrote (the statement's other parts see the rows as they were).
            with.cte(
                CommonTableExpression::new()
                    .query(
                        Query::select()
                            .column(Asterisk)
                            .from(Alias::new(names[0].as_str()))
                            .to_owned(),
                    )
                    .table_name(Alias::new(answer.table))
                    .to_owned(),
            );
            // One row whether or not the update wrote one: its counts, then the answer's
            // columns (null when there is no answer).
            statement
                .column((Alias::new(ANSWER), Asterisk))
                .from_subquery(
                    Query::select().expr(Expr::val(1)).to_owned(),
                    Alias::new("one"),
                )
                .join_subquery(
                    sea_query::JoinType::LeftJoin,
                    answer.statement,
                    Alias::new(ANSWER),
                    Expr::val(true),
                );
            kinds.extend(answer.kinds);
        }
        statement.with_cte(with);
        // Outside a transaction: the statement commits itself.
        let rows = self
            .fetch_rows(&statement, &kinds, true, |e| write_error(blamed, e))
            .await?;
        let count = |i: usize| match rows.first().and_then(|r| r.get(i)) {
            Some(Cell::Integer(n)) => *n,
            _ => 0,
        };
        let (written, announced) = (count(0), count(1));
        if raced_if_none && written == 0 {
            return Err(StoreError::raced());
        }
        if versioned && let Some(Cell::Integer(version)) = rows.first().and_then(|r| r.get(2)) {
            self.version_written = Some(*version);
        }
        if let Some(names) = &folded_versions {
            let text = match rows.first().and_then(|r| r.get(versions_at)) {
                Some(Cell::Text(text)) => text.as_str(),
                _ => "",
            };
            Timing::keep_versions_of_request(Versions::parse_of(text, names));
        }
        if answers {
            self.answered = Some(
                rows.into_iter()
                    .map(|mut row| row.split_off(head))
                    // A row without an id: the caller no longer sees the record.
                    .filter(|row| !matches!(row.first(), Some(Cell::Null) | None))
                    .collect(),
            );
        }
        Ok(announced > 0)
    }
}

/// The alias of a write's answer in its commit's statement ([`WriteTx::answer_with`]).
const ANSWER: &str = "answer";

/// `(SELECT COUNT(*) FROM name)`: a common table expression read to its end.
fn count_of(name: &str) -> Expr {
    Expr::SubQuery(
        None,
        Box::new(
            Query::select()
                .expr(Func::count(Expr::col(Asterisk)))
                .from(Alias::new(name))
                .to_owned()
                .into(),
        ),
    )
}

/// A statement sent on an optimistic write that ended already: a bug, told as ours.
fn ended() -> StoreError {
    internal(
        "a write ended",
        sqlx::Error::Protocol("the optimistic write ended".into()),
    )
}

/// `insert` as the common table expression `name` of a larger statement.
fn named_cte(insert: InsertStatement, name: &str) -> CommonTableExpression {
    CommonTableExpression::new()
        .query(insert)
        .table_name(Alias::new(name))
        .to_owned()
}

/// The error of a statement of a batch sent to SQLite: `own`'s for the caller's statement, a
/// write's for one held back, ours for `BEGIN` or `COMMIT`.
fn batch_error(
    part: Part,
    error: sqlx::Error,
    own: impl FnOnce(sqlx::Error) -> StoreError,
) -> StoreError {
    match part {
        Part::Own => own(error),
        Part::Held(table) => write_error(table, error),
        Part::HeldIfNew(table) => match &error {
            sqlx::Error::Database(db)
                if db.is_unique_violation() || db.is_foreign_key_violation() =>
            {
                StoreError::raced()
            }
            _ => write_error(table, error),
        },
        Part::Transaction => failed("cannot begin or commit a transaction", error),
        Part::CallerCheck => caller_changed(),
        Part::ChangedItsRow => StoreError::raced(),
    }
}

/// A write whose caller, taken from memory unchecked, changed before it committed: nothing
/// was written, and the server checks the caller again and makes the write as what it is
/// now (`server::auth::WriteCaller`); the conflict is told only if it does not.
fn caller_changed() -> StoreError {
    Timing::note_caller_check(CallerCheck::Changed);
    StoreError::Conflict {
        detail: words!(
            "The API key or its user changed while this write was made, so nothing was written; send the request again.",
            "Der API-Schlüssel oder sein Benutzer hat sich während dieses Schreibvorgangs geändert, daher wurde nichts geschrieben; bitte die Anfrage erneut senden."
        ),
        field: None,
    }
}

/// A constraint violation is the client's conflict; anything else is ours.
fn write_error(table: &str, error: sqlx::Error) -> StoreError {
    if let sqlx::Error::Database(db) = &error {
        if db.code().as_deref() == Some(crate::accounts::CALLER_CHANGED_STATE) {
            return caller_changed();
        }
        if db.is_unique_violation() {
            return StoreError::Conflict {
                detail: words!(
                    "A {table} record with the same unique values exists already.",
                    "Ein Datensatz {table} mit denselben eindeutigen Werten existiert schon."
                ),
                field: None,
            };
        }
        if db.is_foreign_key_violation() {
            return StoreError::Conflict {
                detail: words!(
                    "The {table} change refers to a record that does not exist, or is still referred to.",
                    "Die Änderung an {table} verweist auf einen Datensatz, der nicht existiert, oder wird noch verwendet."
                ),
                field: None,
            };
        }
        if let Some(refused) = crate::schema::held_refusal(db.as_ref()) {
            return refused;
        }
    }
    failed(&format!("a write to {table} failed"), error)
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
