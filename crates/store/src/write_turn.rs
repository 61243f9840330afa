//! SQLite's one write turn. SQLite lets one writer at a time hold its write lock, so this
//! process's write transactions queue for it here, in arrival order, and each finds the lock
//! free: waiting in SQLite's busy handler instead means sleeping between tries (up to 100 ms
//! each), so the lock stays idle while the waiters sleep and a busy moment's answers take
//! hundreds of milliseconds.
//!
//! The transactions all run on one connection kept for writing. A SQLite connection keeps
//! its own cache of pages, and in WAL mode it empties that cache whenever it begins to read
//! after another connection's commit changed the database. A write on a pooled connection
//! would begin with a cache some other write had just emptied, and read the pages of every
//! index it writes from the file again (a product's create writes eleven B-trees); on the
//! one connection that made the last commits the cache stays warm from one write to the
//! next (docs/decisions/0010-sqlite-write-turn-on-one-connection.md).

use crate::error::{StoreError, StoreResult};
use sqlx::Sqlite;
use sqlx::pool::PoolConnection;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The page cache of the connection kept for writing, in KiB: the index pages that writes
/// touch, kept between writes.
pub(crate) const WRITER_CACHE_KIB: u32 = 65_536;

/// This process's turn to write to its SQLite database, and the connection writes run on.
#[derive(Debug, Clone)]
pub(crate) struct WriteTurn {
    gate: Arc<Semaphore>,
    /// How long a write transaction waits for its turn in this process before it gives up
    /// ([`StoreError::Unavailable`]): the store's wait for the database, as long as SQLite's
    /// own busy timeout for other processes ([`crate::StoreOptions::database_wait`]).
    wait: Duration,
    /// A pool of one connection, opened when first needed and opened again if it is closed
    /// (a transaction that could not be rolled back closes it).
    writer: SqlitePool,
}

/// A write's turn: the write lock is this process's until it is dropped.
pub(crate) struct Turn {
    /// Given back when the turn is dropped.
    pub(crate) permit: OwnedSemaphorePermit,
    pub(crate) conn: PoolConnection<Sqlite>,
}

impl WriteTurn {
    /// The turn of a database whose connections `options` open (with their page cache set to
    /// [`WRITER_CACHE_KIB`] by the caller), waited for at most `wait`.
    pub(crate) fn new(options: SqliteConnectOptions, wait: Duration) -> WriteTurn {
        WriteTurn {
            gate: Arc::new(Semaphore::new(1)),
            wait,
            writer: SqlitePoolOptions::new()
                .max_connections(1)
                .min_connections(0)
                // A ping before every write would be one more round trip in the turn.
                .test_before_acquire(false)
                .acquire_timeout(wait)
                .connect_lazy_with(options),
        }
    }

    /// Waits for the turn, then takes the connection writes run on.
    pub(crate) async fn take(&self) -> StoreResult<Turn> {
        let permit = tokio::time::timeout(self.wait, self.gate.clone().acquire_owned())
            .await
            .map_err(|_| {
                tracing::warn!(
                    "waited {} ms for the turn to write: the database cannot be reached",
                    self.wait.as_millis()
                );
                StoreError::Unavailable
            })?
            .map_err(|e| crate::db::internal("the write turn closed", e))?;
        let conn = self
            .writer
            .acquire()
            .await
            .map_err(|e| crate::db::failed("cannot open the connection writes run on", e))?;
        Ok(Turn { permit, conn })
    }

    /// The gate itself, for the checkpoints that take it ([`crate::checkpoint`]).
    pub(crate) fn gate(&self) -> Arc<Semaphore> {
        self.gate.clone()
    }

    /// Closes the connection writes run on (on shutdown).
    pub(crate) async fn close(&self) {
        self.writer.close().await;
    }
}

/// A table that keeps no row, for the assertions of a batch sent in the write turn. SQLite
/// has no function that raises an error, but a trigger may: a row whose `holds` is not true
/// fails the statement that offers it (`RAISE(ABORT)`), and with it the batch before its
/// `COMMIT`; every other row is dropped (`RAISE(IGNORE)`). PostgreSQL's one statement that
/// commits a write asks the same of its functions (`accounts::CALLER_CHECK`).
pub(crate) const ASSERTION_TABLE: &str = "bh_assertion";

/// The statements that make [`ASSERTION_TABLE`] and its trigger (SQLite's migrations).
pub(crate) fn assertion_statements() -> Vec<String> {
    vec![
        format!("CREATE TABLE IF NOT EXISTS \"{ASSERTION_TABLE}\" (\"holds\" BOOLEAN)"),
        format!(
            "CREATE TRIGGER IF NOT EXISTS \"{ASSERTION_TABLE}_check\" BEFORE INSERT ON \"{ASSERTION_TABLE}\" BEGIN SELECT RAISE(ABORT, 'an assertion of the write failed') WHERE NEW.\"holds\" IS NOT 1; SELECT RAISE(IGNORE); END"
        ),
    ]
}

/// The statement of a batch that fails it unless `holds` is true when it runs.
pub(crate) fn assertion(holds: sea_query::Expr) -> sea_query::InsertStatement {
    sea_query::Query::insert()
        .into_table(sea_query::Alias::new(ASSERTION_TABLE))
        .columns([sea_query::Alias::new("holds")])
        .values_panic([holds])
        .to_owned()
}

#[cfg(test)]
mod tests {
    use crate::db::{Kind, Store, Timing};
    use brandhub_catalog::Cell;
    use sea_query::{Alias, Expr, ExprTrait, Query};
    use std::time::Duration;

    /// A guard against a deadlock, not a time window: what it waits for needs no other task.
    const DEADLOCK: Duration = Duration::from_secs(20);

    /// A migrated SQLite store with a table `thing` of unique codes.
    async fn store_with_things(dir: &tempfile::TempDir) -> Store {
        let store = crate::db::migrated_sqlite(&dir.path().join("turn.db"), 3).await;
        store
            .execute_raw("CREATE TABLE thing (id TEXT PRIMARY KEY, code TEXT NOT NULL UNIQUE, row_version BIGINT NOT NULL DEFAULT 1)")
            .await
            .unwrap();
        store
    }

    fn thing(id: &str, code: &str) -> sea_query::InsertStatement {
        Query::insert()
            .into_table(Alias::new("thing"))
            .columns([Alias::new("id"), Alias::new("code")])
            .values_panic([id.into(), code.into()])
            .to_owned()
    }

    fn things_coded(code: &str) -> sea_query::SelectStatement {
        Query::select()
            .column(Alias::new("id"))
            .from(Alias::new("thing"))
            .and_where(Expr::col(Alias::new("code")).eq(code))
            .to_owned()
    }

    async fn ids(store: &Store) -> Vec<String> {
        let all = Query::select()
            .column(Alias::new("id"))
            .from(Alias::new("thing"))
            .order_by(Alias::new("id"), sea_query::Order::Asc)
            .to_owned();
        let rows = store
            .fetch(&all, &[Kind::Text], &Timing::default())
            .await
            .unwrap();
        rows.into_iter()
            .filter_map(|row| row[0].as_text().map(str::to_string))
            .collect()
    }

    async fn version_of_things(store: &Store) -> i64 {
        store
            .versions(&Timing::default())
            .await
            .unwrap()
            .of("thing")
    }

    /// A create's checks read while another write holds the turn (and SQLite's write lock),
    /// and its insert waits for the turn only to be sent, with its commit.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_creates_checks_read_beside_the_write_holding_the_turn() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_things(&dir).await;
        let mut holder = store.begin().await.unwrap();
        holder.execute("thing", &thing("A", "a")).await.unwrap();
        let mut create = store.begin_checking_first_for_test().await.unwrap();
        let seen = tokio::time::timeout(DEADLOCK, create.fetch(&things_coded("a"), &[Kind::Text]))
            .await
            .expect("a create's check waited for the write turn")
            .unwrap();
        assert!(
            seen.is_empty(),
            "the check saw an uncommitted write: {seen:?}"
        );
        tokio::time::timeout(
            DEADLOCK,
            create.insert_unanswered_if_new("thing", thing("B", "b"), &["B"]),
        )
        .await
        .expect("a held insert waited for the write turn")
        .unwrap();
        let committing = tokio::spawn(create.commit());
        holder.commit().await.unwrap();
        committing.await.unwrap().unwrap();
        assert_eq!(ids(&store).await, ["A", "B"]);
        assert_eq!(
            version_of_things(&store).await,
            2,
            "each commit bumps its table"
        );
    }

    /// A natural key taken by another write between a create's check and its commit: the
    /// insert fails inside the batch that would commit it, nothing of the create is written
    /// (not its row, not its bump), the create is told it raced, and the turn is free again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_key_taken_after_a_creates_check_writes_nothing_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_things(&dir).await;
        let mut create = store.begin_checking_first_for_test().await.unwrap();
        let seen = create
            .fetch(&things_coded("taken"), &[Kind::Text])
            .await
            .unwrap();
        assert!(seen.is_empty());
        let mut first = store.begin().await.unwrap();
        first
            .execute("thing", &thing("FIRST", "taken"))
            .await
            .unwrap();
        first.commit().await.unwrap();
        let before = version_of_things(&store).await;
        create
            .insert_unanswered_if_new("thing", thing("SECOND", "taken"), &["SECOND"])
            .await
            .unwrap();
        let error = tokio::time::timeout(DEADLOCK, create.commit())
            .await
            .expect("the commit waited for a turn nobody held")
            .unwrap_err();
        assert!(error.is_raced(), "{error:?}");
        assert_eq!(ids(&store).await, ["FIRST"]);
        assert_eq!(
            version_of_things(&store).await,
            before,
            "a create that raced bumped"
        );
        let mut next = tokio::time::timeout(DEADLOCK, store.begin())
            .await
            .expect("the raced create kept the turn")
            .unwrap();
        next.execute("thing", &thing("NEXT", "next")).await.unwrap();
        next.commit().await.unwrap();
        assert_eq!(ids(&store).await, ["FIRST", "NEXT"]);
    }

    /// Checked-first writes that wait for the turn hold no pooled connection meanwhile: as many
    /// of them as the pool has connections, waiting, leave the write holding the turn free to
    /// read beside it on the pool (a file's processing does), instead of both waiting until
    /// the turn's wait runs out.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_waiting_for_the_turn_leave_the_pool_to_the_write_holding_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_things(&dir).await;
        let holder = store.begin().await.unwrap();
        let mut waiting = Vec::new();
        for n in 0..3 {
            let mut create = store.begin_checking_first_for_test().await.unwrap();
            create
                .insert_unanswered_if_new("thing", thing(&format!("W{n}"), &format!("w{n}")), &[])
                .await
                .unwrap();
            waiting.push(tokio::spawn(create.commit()));
        }
        // Each waiting commit has asked for the turn by now or will soon; the holder's read on
        // the pool must not wait for them.
        tokio::task::yield_now().await;
        let read = tokio::time::timeout(DEADLOCK, ids(&store))
            .await
            .expect("a read on the pool waited for the writes waiting for the turn");
        assert!(read.is_empty());
        holder.commit().await.unwrap();
        for commit in waiting {
            tokio::time::timeout(DEADLOCK, commit)
                .await
                .expect("a waiting commit never got the turn")
                .unwrap()
                .unwrap();
        }
        assert_eq!(ids(&store).await, ["W0", "W1", "W2"]);
    }

    /// An assertion that holds leaves no row and lets the write go on; one that does not fails
    /// its statement, and the write's transaction writes nothing.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_assertion_that_does_not_hold_fails_the_write() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_things(&dir).await;
        let mut kept = store.begin().await.unwrap();
        kept.execute("thing", &thing("KEPT", "kept")).await.unwrap();
        kept.execute_untracked(
            super::ASSERTION_TABLE,
            &super::assertion(Expr::val(1).eq(1)),
        )
        .await
        .unwrap();
        kept.commit().await.unwrap();
        let mut failed = store.begin().await.unwrap();
        failed
            .execute("thing", &thing("LOST", "lost"))
            .await
            .unwrap();
        failed
            .execute_untracked(
                super::ASSERTION_TABLE,
                &super::assertion(Expr::val(1).eq(2)),
            )
            .await
            .unwrap_err();
        drop(failed);
        assert_eq!(ids(&store).await, ["KEPT"]);
        let rows = Query::select()
            .expr(sea_query::Func::count(Expr::col(sea_query::Asterisk)))
            .from(Alias::new(super::ASSERTION_TABLE))
            .to_owned();
        let count = store
            .fetch_integer(&rows, &Timing::default())
            .await
            .unwrap();
        assert_eq!(count, 0, "an assertion kept a row");
    }

    fn recode(id: &str, code: &str) -> sea_query::UpdateStatement {
        Query::update()
            .table(Alias::new("thing"))
            .value(Alias::new("code"), code)
            .value(
                Alias::new("row_version"),
                Expr::col(Alias::new("row_version")).add(1),
            )
            .and_where(Expr::col(Alias::new("id")).eq(id))
            .to_owned()
    }

    async fn code_of(store: &Store, id: &str) -> String {
        let select = Query::select()
            .column(Alias::new("code"))
            .from(Alias::new("thing"))
            .and_where(Expr::col(Alias::new("id")).eq(id))
            .to_owned();
        let rows = store
            .fetch(&select, &[Kind::Text], &Timing::default())
            .await
            .unwrap();
        rows[0][0].as_text().unwrap().to_string()
    }

    /// An update conditioned on the version its write read outside the turn: another write
    /// of the row since fails it inside the batch that would commit it, and nothing of it is
    /// written; the row as read is written, and an update that read nothing tells the
    /// version it wrote.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_conditional_update_writes_only_the_row_as_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_things(&dir).await;
        let mut first = store.begin().await.unwrap();
        first.execute("thing", &thing("A", "a")).await.unwrap();
        first.commit().await.unwrap();
        let read_at_one = || {
            let mut update = recode("A", "late");
            update.and_where(Expr::col(Alias::new("row_version")).eq(1));
            update
        };
        let mut late = store.begin_checking_first_for_test().await.unwrap();
        late.update_unanswered("thing", read_at_one(), &["A"], true)
            .await
            .unwrap();
        let mut other = store.begin().await.unwrap();
        other
            .execute_update("thing", &recode("A", "other"))
            .await
            .unwrap();
        other.commit().await.unwrap();
        let before = version_of_things(&store).await;
        let error = tokio::time::timeout(DEADLOCK, late.commit())
            .await
            .expect("the commit waited for a turn nobody held")
            .unwrap_err();
        assert!(error.is_raced(), "{error:?}");
        assert_eq!(code_of(&store, "A").await, "other");
        assert_eq!(
            version_of_things(&store).await,
            before,
            "a raced update bumped"
        );

        let mut unread = store.begin_checking_first_for_test().await.unwrap();
        unread
            .update_unread("thing", recode("A", "unread"), "A")
            .await
            .unwrap();
        let committed = unread.commit_answered().await.unwrap();
        assert_eq!(committed.version, Some(3), "the version the update wrote");
        assert_eq!(code_of(&store, "A").await, "unread");
    }

    /// A read of what a create holds back is made in its transaction, after the held
    /// insert: the create reads its own write.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_read_after_a_held_insert_sees_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_things(&dir).await;
        let mut create = store.begin_checking_first_for_test().await.unwrap();
        create
            .insert_unanswered_if_new("thing", thing("MINE", "mine"), &["MINE"])
            .await
            .unwrap();
        let seen = create
            .fetch(&things_coded("mine"), &[Kind::Text])
            .await
            .unwrap();
        assert_eq!(seen, vec![vec![Cell::Text("MINE".into())]]);
        create.commit().await.unwrap();
        assert_eq!(ids(&store).await, ["MINE"]);
    }

    /// A write outside a transaction (a job's heartbeat, a session's touch) takes the write
    /// turn like any other: while a transaction holds the turn it is not sent (on a pooled
    /// connection it would be, and then wait for SQLite's lock in the busy handler), and it
    /// runs as soon as the turn is given back.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_outside_a_transaction_waits_for_the_turn() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_things(&dir).await;
        let holder = store.begin().await.unwrap();
        let outside = {
            let store = store.clone();
            tokio::spawn(async move { store.execute_untracked("thing", &thing("U", "u")).await })
        };
        let mut outside = std::pin::pin!(outside);
        // Whatever this waits, the write cannot end while the turn is held: its end would be
        // the failure.
        assert!(
            tokio::time::timeout(Duration::from_millis(300), &mut outside)
                .await
                .is_err(),
            "a write outside a transaction ran while another held the turn"
        );
        assert!(ids(&store).await.is_empty());
        holder.commit().await.unwrap();
        let written = tokio::time::timeout(DEADLOCK, outside)
            .await
            .expect("the write outside a transaction waited past the turn's end")
            .unwrap()
            .unwrap();
        assert_eq!(written, 1);
        assert_eq!(ids(&store).await, ["U"]);
    }
}
