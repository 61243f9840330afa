//! One brandhub-shaped SQLite write transaction (`BEGIN IMMEDIATE`, a conditional `UPDATE` of a
//! stock row, the versions' bump, the row log, `COMMIT`) sent three ways, by writers taking
//! turns on one connection as brandhub's do:
//! - `sqlx-each`: one statement per round trip to sqlx's connection thread;
//! - `sqlx-batch`: the statements in one multi-statement query, one round trip (the store's
//!   `WriteTx::send_sqlite`);
//! - `rusqlite-each`: a rusqlite connection owned by a thread of its own, each statement one job
//!   sent over a channel (a round trip per statement, as sqlx's, without sqlx's machinery);
//! - `rusqlite-thread`: the same thread running the whole transaction as one job (one round
//!   trip, no batching code).
//! Prints transactions a second and latency percentiles for each, alternating the ways.
//!
//! Run: `cargo run --release --manifest-path bench/sqlite_driver/Cargo.toml -- [seconds] [writers] [rounds]`

use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

const ROWS: i64 = 100_000;

const UPDATE: &str = "UPDATE stock SET in_stock = ?1, row_version = row_version + 1, last_update = ?2 WHERE id = ?3 AND row_version >= 0";
const BUMP: &str = "INSERT INTO bh_table_version (table_name, version) VALUES ('stock', 1), ('stock.in_stock', 1) ON CONFLICT (table_name) DO UPDATE SET version = version + 1";
const LOG: &str = "INSERT INTO bh_row_write (table_name, version, row_id) SELECT 'stock', version, ?1 FROM bh_table_version WHERE table_name = 'stock'";

fn setup(path: &std::path::Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE stock (id TEXT PRIMARY KEY, in_stock INTEGER NOT NULL, demand INTEGER NOT NULL, row_version INTEGER NOT NULL, last_update TEXT NOT NULL);
         CREATE TABLE bh_table_version (table_name TEXT PRIMARY KEY, version BIGINT NOT NULL);
         CREATE TABLE bh_row_write (table_name TEXT NOT NULL, version BIGINT NOT NULL, row_id TEXT);
         CREATE INDEX ix_bh_row_write ON bh_row_write (table_name, version);",
    )
    .unwrap();
    let tx = conn.unchecked_transaction().unwrap();
    {
        let mut insert = tx
            .prepare("INSERT INTO stock VALUES (?1, ?2, 0, 1, '2026-12-06T00:00:00')")
            .unwrap();
        for n in 0..ROWS {
            insert.execute(rusqlite::params![id(n), n % 100]).unwrap();
        }
    }
    tx.commit().unwrap();
}

fn id(n: i64) -> String {
    format!("{n:032X}")
}

/// The row a writer changes on its `n`th transaction.
fn target(writer: usize, n: u64) -> String {
    id(((writer as u64 * 7919 + n * 104_729) % ROWS as u64) as i64)
}

async fn sqlx_connection(path: &std::path::Path) -> sqlx::SqliteConnection {
    use sqlx::ConnectOptions;
    sqlx::sqlite::SqliteConnectOptions::from_str(&format!("sqlite://{}", path.display()))
        .unwrap()
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
        .synchronous(sqlx::sqlite::SqliteSynchronous::Normal)
        .pragma("cache_size", "-65536")
        .connect()
        .await
        .unwrap()
}

/// sqlx: each statement its own round trip.
async fn sqlx_each(conn: &mut sqlx::SqliteConnection, row: &str, value: i64) {
    use sqlx::Executor;
    conn.execute("BEGIN IMMEDIATE").await.unwrap();
    sqlx::query(UPDATE)
        .bind(value)
        .bind("2026-12-06T10:00:00")
        .bind(row)
        .execute(&mut *conn)
        .await
        .unwrap();
    sqlx::query(BUMP).execute(&mut *conn).await.unwrap();
    sqlx::query(LOG).bind(row).execute(&mut *conn).await.unwrap();
    conn.execute("COMMIT").await.unwrap();
}

/// sqlx: the whole transaction as one multi-statement query, each statement bound its own
/// values, as the store sends it.
async fn sqlx_batch(conn: &mut sqlx::SqliteConnection, row: &str, value: i64) {
    use futures_lite::StreamExt;
    let sql = format!(
        "BEGIN IMMEDIATE;\n{};\n{BUMP};\n{};\nCOMMIT",
        UPDATE.replace("?1", "?").replace("?2", "?").replace("?3", "?"),
        LOG.replace("?1", "?")
    );
    #[allow(deprecated)]
    let mut steps = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(value)
        .bind("2026-12-06T10:00:00")
        .bind(row)
        .bind(row)
        .fetch_many(&mut *conn);
    while let Some(step) = steps.next().await {
        step.unwrap();
    }
}

type Job = Box<dyn FnOnce(&mut rusqlite::Connection) + Send>;

/// A rusqlite connection on a thread of its own, running jobs in arrival order.
fn rusqlite_thread(path: &std::path::Path) -> std::sync::mpsc::Sender<Job> {
    let (send, receive) = std::sync::mpsc::channel::<Job>();
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let mut conn = rusqlite::Connection::open(path).unwrap();
        conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA cache_size = -65536;")
            .unwrap();
        for job in receive {
            job(&mut conn);
        }
    });
    send
}

fn rusqlite_transaction(conn: &mut rusqlite::Connection, row: &str, value: i64) {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    tx.prepare_cached(UPDATE)
        .unwrap()
        .execute(rusqlite::params![value, "2026-12-06T10:00:00", row])
        .unwrap();
    tx.prepare_cached(BUMP).unwrap().execute([]).unwrap();
    tx.prepare_cached(LOG)
        .unwrap()
        .execute(rusqlite::params![row])
        .unwrap();
    tx.commit().unwrap();
}

/// Runs one job on the connection's thread and waits for it.
async fn on_thread<T: Send + 'static>(
    thread: &std::sync::mpsc::Sender<Job>,
    job: impl FnOnce(&mut rusqlite::Connection) -> T + Send + 'static,
) -> T {
    let (done, finished) = tokio::sync::oneshot::channel();
    thread
        .send(Box::new(move |conn: &mut rusqlite::Connection| {
            let _ = done.send(job(conn));
        }))
        .unwrap();
    finished.await.unwrap()
}

/// rusqlite: each statement its own job on the thread.
async fn rusqlite_each(thread: &std::sync::mpsc::Sender<Job>, row: String, value: i64) {
    on_thread(thread, |c| c.execute_batch("BEGIN IMMEDIATE").unwrap()).await;
    let updated = row.clone();
    on_thread(thread, move |c| {
        c.prepare_cached(UPDATE)
            .unwrap()
            .execute(rusqlite::params![value, "2026-12-06T10:00:00", updated])
            .unwrap()
    })
    .await;
    on_thread(thread, |c| c.prepare_cached(BUMP).unwrap().execute([]).unwrap()).await;
    on_thread(thread, move |c| {
        c.prepare_cached(LOG)
            .unwrap()
            .execute(rusqlite::params![row])
            .unwrap()
    })
    .await;
    on_thread(thread, |c| c.execute_batch("COMMIT").unwrap()).await;
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Way {
    SqlxEach,
    SqlxBatch,
    RusqliteEach,
    RusqliteThread,
}

impl Way {
    fn name(self) -> &'static str {
        match self {
            Way::SqlxEach => "sqlx-each",
            Way::SqlxBatch => "sqlx-batch",
            Way::RusqliteEach => "rusqlite-each",
            Way::RusqliteThread => "rusqlite-thread",
        }
    }
}

/// Writers taking turns for `seconds`: transactions a second and latencies (µs).
async fn run(way: Way, path: &std::path::Path, writers: usize, seconds: u64) -> (f64, Vec<u128>) {
    let turn = Arc::new(tokio::sync::Mutex::new(sqlx_connection(path).await));
    let thread = rusqlite_thread(path);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for writer in 0..writers {
        let turn = turn.clone();
        let thread = thread.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut n = 0u64;
            while Instant::now() < deadline {
                let row = target(writer, n);
                let value = (n % 1000) as i64;
                let at = Instant::now();
                match way {
                    Way::SqlxEach => sqlx_each(&mut *turn.lock().await, &row, value).await,
                    Way::SqlxBatch => sqlx_batch(&mut *turn.lock().await, &row, value).await,
                    Way::RusqliteEach => {
                        // The turn, as for sqlx: one transaction at a time on the connection.
                        let _turn = turn.lock().await;
                        rusqlite_each(&thread, row, value).await
                    }
                    Way::RusqliteThread => {
                        on_thread(&thread, move |c| rusqlite_transaction(c, &row, value)).await
                    }
                }
                latencies.push(at.elapsed().as_micros());
                n += 1;
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.unwrap());
    }
    let rate = latencies.len() as f64 / started.elapsed().as_secs_f64();
    latencies.sort_unstable();
    (rate, latencies)
}

fn percentile(sorted: &[u128], p: f64) -> u128 {
    sorted[((sorted.len() - 1) as f64 * p) as usize]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<u64> = std::env::args().skip(1).map(|a| a.parse().unwrap()).collect();
    let seconds = args.first().copied().unwrap_or(5);
    let writers = args.get(1).copied().unwrap_or(8) as usize;
    let rounds = args.get(2).copied().unwrap_or(3);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.db");
    setup(&path);
    println!("way\tround\ttx/s\tp50 us\tp99 us");
    for round in 1..=rounds {
        for way in [
            Way::SqlxEach,
            Way::SqlxBatch,
            Way::RusqliteEach,
            Way::RusqliteThread,
        ] {
            let (rate, latencies) = run(way, &path, writers, seconds).await;
            println!(
                "{}\t{round}\t{rate:.0}\t{}\t{}",
                way.name(),
                percentile(&latencies, 0.5),
                percentile(&latencies, 0.99)
            );
        }
    }
}
