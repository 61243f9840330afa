//! The only code that begins a transaction which changes records: the executor
//! ([`super::executor`]) calls these, and nothing outside this module tree can.
//!
//! Writes that stay apart, because they change only bookkeeping no cache reads and bump no
//! version, run outside any transaction through [`Store::execute_untracked`]: a job's
//! heartbeat, a session's last use, a key's `lastUsed`, a delivery's claim and lease, kept
//! idempotent answers, the shared count cache.

use crate::db::{Pool, SqliteTx, Store, Tx, WriteTx, failed, internal};
use crate::error::StoreResult;

impl Store {
    /// Starts a write that checks before it locks: on PostgreSQL its reads run on a
    /// connection of its own outside any transaction, and if all it writes is one update of a
    /// record it read (a `PATCH`), that update goes with the version bump, the rows' log and
    /// the outbox as ONE statement that commits itself, on condition that the record's
    /// version is still the one read ([`WriteTx::is_optimistic`]): the version rows stay
    /// locked for that statement's execution only, not for a round trip to brandhub and
    /// back. A write that needs more begins the transaction at its first write statement. A
    /// record that changed meanwhile ends the write with [`StoreError::raced`], and the
    /// executor runs the write again, locking. On SQLite it is [`Store::begin_locking`].
    pub(super) async fn begin_optimistic(&self) -> StoreResult<WriteTx> {
        let Pool::Postgres(pool) = &self.pool else {
            return self.begin_locking().await;
        };
        let conn = pool
            .acquire()
            .await
            .map_err(|e| failed("cannot begin a transaction", e))?;
        Ok(self.write_tx(Tx::PostgresUnbegun(Some(conn))))
    }

    /// Starts a write of one record (a create or a `PATCH`) checked before it locks: on
    /// PostgreSQL [`Store::begin_optimistic`]. On SQLite its reads (the checks of the record)
    /// run on a pooled connection outside any transaction, beside other writes, and its
    /// writes are held back ([`WriteTx::insert_unanswered_if_new`], an update conditioned
    /// on the version read or on its own checks: [`WriteTx::update_unanswered`]), so that
    /// the write turn is taken only by the one batch that begins the transaction, writes,
    /// bumps the versions and commits ([`WriteTx::commit`]). A write that needs more (a
    /// statement that writes at once, a read of what it holds) takes the turn and begins the
    /// transaction there, as [`Store::begin_locking`] does. A natural key taken meanwhile, or a
    /// record changed since it was read, ends the write with [`StoreError::raced`], and the
    /// executor runs the write again, locking.
    pub(super) async fn begin_checking_first(&self) -> StoreResult<WriteTx> {
        let (Pool::Sqlite(pool), Some(turn)) = (&self.pool, &self.write_turn) else {
            return self.begin_optimistic().await;
        };
        let reader = pool
            .acquire()
            .await
            .map_err(|e| failed("cannot begin a transaction", e))?;
        Ok(self.write_tx(Tx::SqliteUnbegun {
            reader: Some(reader),
            turn: turn.clone(),
        }))
    }

    /// Starts a write transaction. On SQLite it takes this process's write turn
    /// ([`crate::write_turn`]) and then the write lock at once (`BEGIN IMMEDIATE`, sent with
    /// its first statement), so two writers never deadlock upgrading read locks.
    pub(super) async fn begin_locking(&self) -> StoreResult<WriteTx> {
        let tx = match (&self.pool, &self.write_turn) {
            (Pool::Sqlite(_), Some(turn)) => Tx::Sqlite(SqliteTx::in_turn(turn.take().await?)),
            (Pool::Sqlite(_), None) => {
                return Err(internal(
                    "cannot begin a transaction",
                    sqlx::Error::Protocol("a SQLite store without its write turn".into()),
                ));
            }
            (Pool::Postgres(pool), _) => Tx::Postgres(
                pool.begin()
                    .await
                    .map_err(|e| failed("cannot begin a transaction", e))?,
            ),
        };
        Ok(self.write_tx(tx))
    }

    /// A transaction outside the executor, for tests that write beside the API or test
    /// transactions themselves.
    #[cfg(any(test, feature = "testing"))]
    pub async fn begin(&self) -> StoreResult<WriteTx> {
        self.begin_locking().await
    }

    /// [`Store::begin_checking_first`], for the store's own tests of the write turn.
    #[cfg(test)]
    pub(crate) async fn begin_checking_first_for_test(&self) -> StoreResult<WriteTx> {
        self.begin_checking_first().await
    }
}
