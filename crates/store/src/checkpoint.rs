//! SQLite's checkpoints, taken off the write turn. In WAL mode a commit appends the pages it
//! changed to the log, and a checkpoint copies them back into the database file. SQLite's
//! own automatic checkpoint runs inside the commit that crosses 1,000 logged pages, on the
//! committing connection, so that commit's answer waits for the copy, and with it every
//! writer queued for this process's one write turn ([`crate::write::Begin::Locking`]): an
//! order intake logs some 75 pages, so every dozenth turn would be a checkpoint long
//! (docs/decisions/0017-sqlite-checkpoints-off-the-turn.md). brandhub turns the
//! automatic checkpoint off on its connections and asks for a passive checkpoint after a
//! commit instead, on a task of its own: it copies what no reader still needs, while the
//! next writers go on appending.
//!
//! The log only starts over (from its first page) when a writer begins after a checkpoint
//! copied all of it. Under a steady stream of writes the next writer always begins while
//! the checkpoint runs, so a log checkpointed only beside the writers would grow for as long
//! as they write. Once the log holds more than [`RESTART_AFTER_FRAMES`] pages, the next
//! checkpoint takes the write turn first: it copies the little the checkpoints beside the
//! writers left, and the writer after it starts the log over.

use sqlx::SqlitePool;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

/// Commits between two checkpoints under a steady stream of writes. About as many logged
/// pages as SQLite's automatic checkpoint lets grow (1,000) for the writes the benchmarks
/// make; a checkpoint copies each page once however often it was logged since the last.
pub(crate) const COMMITS_PER_CHECKPOINT: u32 = 16;

/// Under a trickle of writes (or after one large one, such as the demo data set), a commit
/// also starts a checkpoint once this long has passed since the last began.
pub(crate) const CHECKPOINT_EVERY_MILLIS: u64 = 1_000;

/// What the checkpoint setting of every SQLite connection brandhub opens is: no automatic
/// checkpoint (see the module docs).
pub(crate) const AUTOMATIC_CHECKPOINT_PAGES: &str = "0";

/// The pages (frames) the log may hold before a checkpoint takes the write turn so that the
/// log starts over: 16 MiB of 4 KiB pages.
pub(crate) const RESTART_AFTER_FRAMES: i64 = 4_096;

/// When and where this process checkpoints its SQLite database: shared by the clones of a
/// store.
#[derive(Debug)]
pub(crate) struct Checkpoints {
    /// The database's pool, where a checkpoint runs.
    pool: SqlitePool,
    /// The process's write turn ([`crate::write::Begin::Locking`]), taken when the log is long.
    gate: Arc<tokio::sync::Semaphore>,
    /// Commits since the last checkpoint began.
    commits: AtomicU32,
    /// Milliseconds from `epoch` at which the last checkpoint began.
    last_began: AtomicU64,
    epoch: Instant,
    /// Whether a checkpoint is running: never two at once.
    running: AtomicBool,
    /// The pages the log held at the last checkpoint (copied or not: see the module docs).
    log_frames: std::sync::atomic::AtomicI64,
    /// Commits since a checkpoint last ran: each logs a page at least, so past
    /// `restart_after_frames` of them the log is long even when no checkpoint could run to
    /// say so (every connection busy with writers that never pause).
    commits_since_checkpoint: std::sync::atomic::AtomicI64,
    /// See [`RESTART_AFTER_FRAMES`] (a test sets a smaller one).
    restart_after_frames: i64,
}

impl Checkpoints {
    /// Checkpoints of the database of `pool` that take the write turn `gate` once the log
    /// holds more than `frames` pages ([`RESTART_AFTER_FRAMES`] but in a test).
    pub(crate) fn new(
        pool: SqlitePool,
        gate: Arc<tokio::sync::Semaphore>,
        frames: i64,
    ) -> Checkpoints {
        Checkpoints {
            pool,
            gate,
            commits: AtomicU32::new(0),
            last_began: AtomicU64::new(0),
            epoch: Instant::now(),
            running: AtomicBool::new(false),
            log_frames: std::sync::atomic::AtomicI64::new(0),
            commits_since_checkpoint: std::sync::atomic::AtomicI64::new(0),
            restart_after_frames: frames,
        }
    }

    /// Counts a commit and, when one is due and none runs, starts a passive checkpoint on a
    /// task of its own. Called after the commit, so neither the committing request nor the
    /// write turn waits for it; the checkpoint itself takes the turn when the log has grown
    /// long (see the module docs).
    pub(crate) fn committed(self: &Arc<Self>) {
        let unchecked = self.commits_since_checkpoint.fetch_add(1, Ordering::AcqRel) + 1;
        if !self.due_after_commit(self.epoch.elapsed().as_millis() as u64) {
            return;
        }
        let this = Arc::clone(self);
        let long = this.log_frames.load(Ordering::Acquire) > this.restart_after_frames
            || unchecked > this.restart_after_frames;
        tokio::spawn(async move {
            // Behind the writers already waiting; none appends while it copies.
            let _turn = match long {
                true => this.gate.clone().acquire_owned().await.ok(),
                false => None,
            };
            match sqlx::query_as::<_, (i64, i64, i64)>("PRAGMA wal_checkpoint(PASSIVE)")
                .fetch_one(&this.pool)
                .await
            {
                // Copied whole or not, the log starts over only when a writer begins after
                // a whole copy: beside the writers, one always began before it ended.
                Ok((_, log, _)) => {
                    this.log_frames.store(log, Ordering::Release);
                    this.commits_since_checkpoint.store(0, Ordering::Release);
                }
                // A closed pool (shutdown) or a busy moment: the next commit tries again, and
                // the last connection to close checkpoints whatever is left.
                Err(error) => tracing::debug!(%error, "a checkpoint did not run"),
            }
            this.running.store(false, Ordering::Release);
        });
    }

    /// Counts a commit at `now` (milliseconds from the epoch); whether it starts a checkpoint,
    /// which is then marked running.
    fn due_after_commit(&self, now: u64) -> bool {
        let commits = self.commits.fetch_add(1, Ordering::AcqRel) + 1;
        let waited = now.saturating_sub(self.last_began.load(Ordering::Acquire));
        if commits < COMMITS_PER_CHECKPOINT && waited < CHECKPOINT_EVERY_MILLIS {
            return false;
        }
        if self.running.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.commits.store(0, Ordering::Release);
        self.last_began.store(now, Ordering::Release);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Store;
    use sea_query::{Alias, Query};

    fn finished(checkpoints: &Checkpoints) {
        checkpoints.running.store(false, Ordering::Release);
    }

    /// Checkpoints whose schedule alone is tested: a pool that never connects (sqlx makes
    /// even that one inside a runtime).
    fn schedule() -> Checkpoints {
        let pool = sqlx::sqlite::SqlitePoolOptions::new()
            .connect_lazy("sqlite::memory:")
            .unwrap();
        Checkpoints::new(
            pool,
            Arc::new(tokio::sync::Semaphore::new(1)),
            RESTART_AFTER_FRAMES,
        )
    }

    #[tokio::test]
    async fn a_steady_stream_of_commits_checkpoints_every_so_many() {
        let checkpoints = schedule();
        // The first commit of a process checkpoints once a second has passed since it began.
        assert!(checkpoints.due_after_commit(CHECKPOINT_EVERY_MILLIS));
        finished(&checkpoints);
        let now = CHECKPOINT_EVERY_MILLIS + 1;
        for _ in 1..COMMITS_PER_CHECKPOINT {
            assert!(!checkpoints.due_after_commit(now));
        }
        assert!(checkpoints.due_after_commit(now));
    }

    #[tokio::test]
    async fn a_trickle_of_commits_checkpoints_once_a_second() {
        let checkpoints = schedule();
        assert!(!checkpoints.due_after_commit(10));
        assert!(!checkpoints.due_after_commit(CHECKPOINT_EVERY_MILLIS - 1));
        assert!(checkpoints.due_after_commit(CHECKPOINT_EVERY_MILLIS));
        finished(&checkpoints);
        assert!(!checkpoints.due_after_commit(CHECKPOINT_EVERY_MILLIS + 10));
        assert!(checkpoints.due_after_commit(2 * CHECKPOINT_EVERY_MILLIS));
    }

    #[tokio::test]
    async fn never_two_checkpoints_at_once() {
        let checkpoints = schedule();
        assert!(checkpoints.due_after_commit(CHECKPOINT_EVERY_MILLIS));
        // Still running: neither many commits nor a long wait start another.
        for _ in 0..3 * COMMITS_PER_CHECKPOINT {
            assert!(!checkpoints.due_after_commit(10 * CHECKPOINT_EVERY_MILLIS));
        }
        finished(&checkpoints);
        assert!(checkpoints.due_after_commit(10 * CHECKPOINT_EVERY_MILLIS));
    }

    /// Waits until no checkpoint of `store` runs: the test takes its commits one after the
    /// other as a steady writer would, without racing the checkpoints it starts.
    async fn checkpointed(store: &Store) {
        let checkpoints = store.checkpoints.as_ref().expect("a SQLite store");
        while checkpoints.running.load(Ordering::Acquire) {
            tokio::task::yield_now().await;
        }
    }

    /// A SQLite store with the schema and a `filler` table, its log empty.
    async fn filler_store(path: &std::path::Path, max_connections: u32) -> Store {
        let store = crate::db::migrated_sqlite(path, max_connections).await;
        store
            .execute_raw("CREATE TABLE filler (n INTEGER PRIMARY KEY, text TEXT NOT NULL)")
            .await
            .unwrap();
        // The schema's own pages out of the log first: it starts empty.
        store
            .execute_raw("PRAGMA wal_checkpoint(TRUNCATE)")
            .await
            .unwrap();
        store
    }

    /// A row of 3,000 bytes, numbered `n`.
    fn filler_row(n: i64) -> sea_query::InsertStatement {
        Query::insert()
            .into_table(Alias::new("filler"))
            .columns([Alias::new("n"), Alias::new("text")])
            .values_panic([n.into(), "x".repeat(3_000).into()])
            .to_owned()
    }

    /// The log's size in bytes and the rows of `filler`, once no checkpoint runs.
    async fn log_and_rows(store: &Store, path: &std::path::Path) -> (u64, i64) {
        checkpointed(store).await;
        let log = std::fs::metadata(format!("{}-wal", path.display()))
            .map(|m| m.len())
            .unwrap_or(0);
        let rows = store
            .fetch_integer(
                &Query::select()
                    .expr(sea_query::Expr::cust("COUNT(*)"))
                    .from(Alias::new("filler"))
                    .to_owned(),
                &crate::db::Timing::default(),
            )
            .await
            .unwrap();
        (log, rows)
    }

    /// The pages the log holds since it last started over (a passive checkpoint's count).
    async fn log_pages(store: &Store) -> i64 {
        let crate::db::Pool::Sqlite(pool) = &store.pool else {
            unreachable!("a SQLite store")
        };
        let (_, pages, _) = sqlx::query_as::<_, (i64, i64, i64)>("PRAGMA wal_checkpoint(PASSIVE)")
            .fetch_one(pool)
            .await
            .unwrap();
        pages
    }

    /// Many commits, through write transactions and on the pool: the log is copied back and
    /// started over every few commits instead of growing with every one of them (SQLite's
    /// automatic checkpoint is off on brandhub's connections), and nothing written is lost.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_log_stays_short_under_many_commits_and_loses_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checkpoints.db");
        let store = filler_store(&path, 2).await;
        const COMMITS: i64 = 400;
        for n in 0..COMMITS {
            if n % 2 == 0 {
                let mut tx = store.begin().await.unwrap();
                tx.execute("filler", &filler_row(n)).await.unwrap();
                tx.commit().await.unwrap();
            } else {
                store
                    .execute_untracked("filler", &filler_row(n))
                    .await
                    .unwrap();
            }
            checkpointed(&store).await;
        }
        // Every commit logs at least the page of its row: 400 pages and more without
        // checkpoints. The pages since the log last started are counted (the file keeps the
        // size the log once reached, which one checkpoint held back on a busy machine sets).
        let (_, rows) = log_and_rows(&store, &path).await;
        let pages = log_pages(&store).await;
        assert!(
            pages < 100,
            "the log holds {pages} pages after {COMMITS} commits"
        );
        assert_eq!(rows, COMMITS);
        store.close().await;
    }

    /// Writers that never wait for one another or for the checkpoints: the log still starts
    /// over every so often (a checkpoint takes the write turn once it is long), instead of
    /// growing with every commit for as long as they write.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_log_starts_over_while_writers_never_stop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("restarts.db");
        let mut store = filler_store(&path, 4).await;
        const RESTART_AFTER: i64 = 64;
        let crate::db::Pool::Sqlite(pool) = &store.pool else {
            unreachable!("a SQLite store")
        };
        store.checkpoints = Some(Arc::new(Checkpoints::new(
            pool.clone(),
            store.write_turn.as_ref().expect("a SQLite store").gate(),
            RESTART_AFTER,
        )));
        const WRITERS: i64 = 4;
        const COMMITS: i64 = 150;
        let writers: Vec<_> = (0..WRITERS)
            .map(|writer| {
                let store = store.clone();
                tokio::spawn(async move {
                    for n in 0..COMMITS {
                        let mut tx = store.begin().await.unwrap();
                        tx.execute("filler", &filler_row(writer * COMMITS + n))
                            .await
                            .unwrap();
                        tx.commit().await.unwrap();
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.await.unwrap();
        }
        // 600 commits of a 3,000-byte row and the versions: some 1,800 pages logged in a
        // log that never started over. The pages since the log last started are counted
        // (the file keeps the size the log once reached: a checkpoint task kept from
        // running for a moment by a busy machine lets it grow before it starts over).
        let (_, rows) = log_and_rows(&store, &path).await;
        let pages = log_pages(&store).await;
        assert!(
            pages < 6 * RESTART_AFTER,
            "the log holds {pages} pages after {} commits",
            WRITERS * COMMITS
        );
        assert_eq!(rows, WRITERS * COMMITS);
        store.close().await;
    }
}
