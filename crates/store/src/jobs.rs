//! The durable queue of uploaded files (docs/API.md, "Files: uploads and processing"), and the file records it feeds.
//!
//! One job per file, inserted in the same transaction as the file record. A job is `pending`
//! until a worker claims it (`running`, with the worker's name and a heartbeat), and `done` once
//! its file is processed or failed: in the same transaction that applies the file, so a worker
//! that dies mid-file leaves nothing applied and the job `running` with a heartbeat that grows
//! old; after the timeout any worker claims it again.
//!
//! Claiming is one statement, `UPDATE … WHERE file_id IN (SELECT … LIMIT 1) RETURNING …`. On
//! PostgreSQL the inner select is `FOR UPDATE SKIP LOCKED`, so concurrent workers of several
//! processes never take the same job and never wait on each other; on SQLite it runs inside a
//! write transaction (`BEGIN IMMEDIATE`: SQLite serialises writers).
//!
//! Times are milliseconds since the Unix epoch, from the store's [`Clock`](crate::clock::Clock)
//! (the system clock of the process that writes them, or a test's).

use crate::db::{Kind, Store, Timing, WriteTx};
use crate::error::StoreResult;
use crate::write::EntryPoint;
use crate::write::{records_of, select_records};
use brandhub_catalog::Res;
use brandhub_catalog::{Cell, FileStatus, Record, Resource, catalog, file_paths};
use sea_query::{
    Alias, Cond, Condition, Expr, ExprTrait, LockBehavior, LockType, Order, Query, UpdateStatement,
};

/// The queue's table.
pub const JOB_TABLE: &str = "bh_job";
/// The rows a file's processing skipped, with their reasons (for its error report).
pub const SKIPPED_ROWS_TABLE: &str = "bh_file_skipped_row";
/// A job waiting for a worker (or released for a retry after `available_at`).
pub const PENDING: &str = "pending";
/// A job a worker holds; its heartbeat says the worker is alive.
pub const RUNNING: &str = "running";
/// A job whose file is processed or failed.
pub const DONE: &str = "done";

/// A job a worker has claimed: the file to process and how often it was claimed (this claim
/// included), so that a file that keeps killing its workers is failed instead of retried forever.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedJob {
    pub file_id: String,
    pub attempts: i64,
}

fn col(name: &str) -> Expr {
    Expr::col(Alias::new(name))
}

/// Jobs a worker may take now: pending and available, or running with a heartbeat older than
/// `stale_before` (their worker is taken for dead).
fn claimable(now: i64, stale_before: i64) -> Condition {
    Cond::any()
        .add(col("state").eq(PENDING).and(col("available_at").lte(now)))
        .add(
            col("state")
                .eq(RUNNING)
                .and(col("heartbeat_at").lt(stale_before)),
        )
}

/// An update of a job that applies only while `worker` still holds it (running, claimed by
/// it): whatever the caller sets, a worker that lost its claim changes nothing.
fn held_job(file_id: &str, worker: &str) -> UpdateStatement {
    Query::update()
        .table(Alias::new(JOB_TABLE))
        .and_where(col("file_id").eq(file_id))
        .and_where(col("claimed_by").eq(worker))
        .and_where(col("state").eq(RUNNING))
        .to_owned()
}

/// Claims the oldest claimable job for `worker`: one statement, returning the job's id and
/// attempts (no row when there is none).
fn claim_statement(worker: &str, now: i64, stale_after_ms: i64) -> UpdateStatement {
    let next = Query::select()
        .column(Alias::new("file_id"))
        .from(Alias::new(JOB_TABLE))
        .cond_where(claimable(now, now - stale_after_ms))
        .order_by(Alias::new("available_at"), Order::Asc)
        .order_by(Alias::new("file_id"), Order::Asc)
        .limit(1)
        .lock_with_behavior(LockType::Update, LockBehavior::SkipLocked)
        .to_owned();
    Query::update()
        .table(Alias::new(JOB_TABLE))
        .value(Alias::new("state"), RUNNING)
        .value(Alias::new("attempts"), col("attempts").add(1))
        .value(Alias::new("claimed_by"), worker)
        .value(Alias::new("heartbeat_at"), now)
        // A scalar subquery, evaluated once. With `IN (…)` PostgreSQL may run the SKIP LOCKED
        // subquery again while updating and claim several jobs at once, which then wait, never
        // processed, until their claims expire.
        .and_where(col("file_id").eq(Expr::SubQuery(None, Box::new(next.into()))))
        // Checked again on the row itself: a concurrent claim may have changed it.
        .cond_where(claimable(now, now - stale_after_ms))
        .returning(Query::returning().columns(["file_id", "attempts"].map(Alias::new)))
        .to_owned()
}

/// The file resource, from the catalog.
fn file_resource() -> &'static Resource {
    catalog().get(Res::File)
}

impl WriteTx {
    /// Queues the job of a new file; call it in the transaction that inserts the file record.
    pub async fn enqueue_job(&mut self, file_id: &str) -> StoreResult<()> {
        let now = self.clock.now_millis();
        let insert = Query::insert()
            .into_table(Alias::new(JOB_TABLE))
            .columns(["file_id", "state", "attempts", "available_at", "created_at"].map(Alias::new))
            .values_panic([
                file_id.into(),
                PENDING.into(),
                0i64.into(),
                now.into(),
                now.into(),
            ])
            .to_owned();
        self.execute_untracked(JOB_TABLE, &insert).await?;
        Ok(())
    }

    /// Marks a claimed job done, if `worker` still holds it. Run first in the transaction that
    /// applies the file: it takes the job's row lock (on PostgreSQL no other worker can claim
    /// it until the transaction ends), and `false` means another worker took the job over, so
    /// this one must roll back.
    pub async fn finish_job(&mut self, file_id: &str, worker: &str) -> StoreResult<bool> {
        let update = held_job(file_id, worker)
            .value(Alias::new("state"), DONE)
            .value(Alias::new("heartbeat_at"), self.clock.now_millis())
            .to_owned();
        Ok(self.execute_untracked(JOB_TABLE, &update).await? == 1)
    }

    /// Locks a record for the rest of the transaction (PostgreSQL `FOR NO KEY UPDATE`, which
    /// still lets other transactions insert records referring to it; SQLite's write
    /// transaction already excludes other writers). Files of one brand are applied one after
    /// the other this way, so two workers never insert the same new product or barcode.
    pub async fn lock_record(&mut self, table: &'static str, id: &str) -> StoreResult<bool> {
        let select = Query::select()
            .column(Alias::new("id"))
            .from(Alias::new(table))
            .and_where(col("id").eq(id))
            .lock(LockType::NoKeyUpdate)
            .to_owned();
        Ok(!self
            .fetch_returning(None, &select, &[Kind::Text])
            .await?
            .is_empty())
    }

    /// Sets the status (and other cells) of a file record, by catalog path.
    pub async fn update_file(&mut self, file_id: &str, values: &[(&str, Cell)]) -> StoreResult<()> {
        let resource = file_resource();
        let mut update = Query::update();
        update
            .table(Alias::new(resource.table))
            .and_where(col("id").eq(file_id));
        for (path, cell) in values {
            let field = resource
                .field_at(path)
                .expect("callers name fields of the file resource");
            crate::write::set_field(&mut update, field, cell);
        }
        crate::write::stamp_update(&mut update, resource, &self.now_timestamp());
        self.execute_update(resource.table, &update).await?;
        let event = values
            .iter()
            .filter(|(path, _)| *path == file_paths::STATUS)
            .find_map(|(_, cell)| FileStatus::named(cell.as_text()?)?.event());
        if let Some(event) = event {
            self.announce_event(event, resource, file_id).await?;
        }
        Ok(())
    }
}

impl WriteTx {
    /// Keeps the rows a file's processing skipped with their reasons (a row named twice keeps
    /// its first reason), in the transaction that applies the file.
    pub async fn record_skipped_rows(
        &mut self,
        file_id: &str,
        rows: &[(u32, String)],
    ) -> StoreResult<()> {
        for chunk in rows.chunks(500) {
            let mut insert = Query::insert()
                .into_table(Alias::new(SKIPPED_ROWS_TABLE))
                .columns(["file_id", "row_number", "reason"].map(Alias::new))
                .on_conflict(
                    sea_query::OnConflict::columns(["file_id", "row_number"].map(Alias::new))
                        .do_nothing()
                        .to_owned(),
                )
                .to_owned();
            for (row, reason) in chunk {
                insert.values_panic([
                    file_id.into(),
                    i64::from(*row).into(),
                    reason.clone().into(),
                ]);
            }
            self.execute_untracked(SKIPPED_ROWS_TABLE, &insert).await?;
        }
        Ok(())
    }
}

impl Store {
    /// The rows a file's processing skipped, by row number, with their reasons.
    pub async fn skipped_rows(&self, file_id: &str) -> StoreResult<Vec<(u32, String)>> {
        let select = Query::select()
            .columns(["row_number", "reason"].map(Alias::new))
            .from(Alias::new(SKIPPED_ROWS_TABLE))
            .and_where(col("file_id").eq(file_id))
            .order_by(Alias::new("row_number"), Order::Asc)
            .to_owned();
        let rows = self
            .fetch(&select, &[Kind::Integer, Kind::Text], &Timing::default())
            .await?;
        Ok(rows
            .into_iter()
            .filter_map(|row| match (&row[0], &row[1]) {
                (Cell::Integer(n), Cell::Text(reason)) => {
                    Some((u32::try_from(*n).ok()?, reason.clone()))
                }
                _ => None,
            })
            .collect())
    }

    /// Stores a new file record and queues its job, in one transaction.
    pub async fn create_file(&self, record: Record) -> StoreResult<()> {
        let resource = file_resource();
        let id = record.id().to_string();
        let mut tx = self.begin_apart(EntryPoint::FileQueue).await?;
        tx.insert_records(resource, &mut [record]).await?;
        tx.enqueue_job(&id).await?;
        tx.commit().await
    }

    /// Whether some job could be claimed now: a cheap read, so idle workers do not take the
    /// write lock (on SQLite) just to find the queue empty.
    pub async fn has_claimable_job(&self, stale_after_ms: i64) -> StoreResult<bool> {
        let now = self.clock.now_millis();
        let select = Query::select()
            .column(Alias::new("file_id"))
            .from(Alias::new(JOB_TABLE))
            .cond_where(claimable(now, now - stale_after_ms))
            .limit(1)
            .to_owned();
        Ok(!self
            .fetch(&select, &[Kind::Text], &Timing::default())
            .await?
            .is_empty())
    }

    /// Claims the oldest claimable job for `worker` and sets its file to `processing`, or
    /// `None` when there is none. A running job whose heartbeat is older than `stale_after_ms`
    /// is claimable again.
    pub async fn claim_job(
        &self,
        worker: &str,
        stale_after_ms: i64,
    ) -> StoreResult<Option<ClaimedJob>> {
        let claim = claim_statement(worker, self.clock.now_millis(), stale_after_ms);
        let mut tx = self.begin_apart(EntryPoint::FileQueue).await?;
        let rows = tx
            .fetch_returning(None, &claim, &[Kind::Text, Kind::Integer])
            .await?;
        debug_assert!(rows.len() <= 1, "one claim takes one job");
        let job = match rows.first().map(Vec::as_slice) {
            Some([Cell::Text(file_id), Cell::Integer(attempts)]) => ClaimedJob {
                file_id: file_id.clone(),
                attempts: *attempts,
            },
            _ => return Ok(None),
        };
        tx.update_file(
            &job.file_id,
            &[(file_paths::STATUS, FileStatus::Processing.as_str().into())],
        )
        .await?;
        tx.commit().await?;
        Ok(Some(job))
    }

    /// Renews a claimed job's heartbeat; `false` when `worker` no longer holds it.
    pub async fn heartbeat_job(&self, file_id: &str, worker: &str) -> StoreResult<bool> {
        let update = held_job(file_id, worker)
            .value(Alias::new("heartbeat_at"), self.clock.now_millis())
            .to_owned();
        Ok(self.execute_untracked(JOB_TABLE, &update).await? == 1)
    }

    /// Gives a claimed job back for a retry at `available_at` (after a passing failure such as
    /// a lost connection), and sets its file back to `pending`.
    pub async fn release_job(
        &self,
        file_id: &str,
        worker: &str,
        available_at: i64,
    ) -> StoreResult<()> {
        let update = held_job(file_id, worker)
            .value(Alias::new("state"), PENDING)
            .value(Alias::new("claimed_by"), Option::<String>::None)
            .value(Alias::new("available_at"), available_at)
            .to_owned();
        let mut tx = self.begin_apart(EntryPoint::FileQueue).await?;
        if tx.execute_untracked(JOB_TABLE, &update).await? == 1 {
            tx.update_file(
                file_id,
                &[(file_paths::STATUS, FileStatus::Pending.as_str().into())],
            )
            .await?;
        }
        tx.commit().await
    }

    /// A whole file record by id (every stored column), for the worker that processes it.
    pub async fn file_record(&self, file_id: &str) -> StoreResult<Option<Record>> {
        let file = file_resource();
        let (select, kinds) = select_records(file, Cond::all().add(col("id").eq(file_id)));
        let rows = self.fetch(&select, &kinds, &Timing::default()).await?;
        Ok(records_of(file, rows).pop())
    }

    /// A file's status, or `None` if there is no such file; for answers that wait until
    /// processing ends.
    pub async fn file_status(&self, file_id: &str) -> StoreResult<Option<FileStatus>> {
        let file = file_resource();
        let status = file
            .field_at(file_paths::STATUS)
            .expect("files have a status");
        let select = Query::select()
            .column(Alias::new(&status.column))
            .from(Alias::new(file.table))
            .and_where(col("id").eq(file_id))
            .to_owned();
        let rows = self
            .fetch(&select, &[Kind::Text], &Timing::default())
            .await?;
        Ok(rows
            .first()
            .and_then(|row| row[0].as_text())
            .and_then(FileStatus::named))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sea_query::{PostgresQueryBuilder, SqliteQueryBuilder};

    #[test]
    fn a_claim_takes_one_job_skipping_locked_ones_on_postgres() {
        let claim = claim_statement("w-1", 10, 5);
        let pg = claim.to_string(PostgresQueryBuilder);
        assert!(
            pg.contains("\"file_id\" = (SELECT \"file_id\" FROM \"bh_job\""),
            "one job, by a scalar subquery: {pg}"
        );
        assert!(pg.contains("LIMIT 1 FOR UPDATE SKIP LOCKED)"), "{pg}");
        assert!(pg.contains("\"heartbeat_at\" < 5"), "{pg}");
        assert!(pg.ends_with("RETURNING \"file_id\", \"attempts\""), "{pg}");
        let sqlite = claim.to_string(SqliteQueryBuilder);
        assert!(!sqlite.contains("FOR UPDATE"), "{sqlite}");
        assert!(sqlite.contains("\"file_id\" = (SELECT"), "{sqlite}");
    }
}
