//! A write transaction's commit: the versions it bumps, the rows it logs, the events it
//! announces, and its answer read in the same statement.

use super::*;
use crate::error::{StoreError, StoreResult};
use crate::events::EVENT_TABLE;
use crate::versions::Versions;
use brandhub_catalog::Cell;
use sea_query::{
    Alias, Asterisk, CommonTableExpression, Expr, ExprTrait, Func, InsertStatement, Query,
    SqliteQueryBuilder, WithClause,
};

impl WriteTx {
    /// The versions the commit bumps: of every table written, and of the columns updated.
    pub(super) fn versions_to_bump(&mut self) -> Vec<&'static str> {
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
    pub(super) async fn commit_sqlite(&mut self, versions: &[&'static str]) -> StoreResult<bool> {
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
    pub(super) async fn commit_postgres(&mut self, versions: &[&'static str]) -> StoreResult<bool> {
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
    pub(super) async fn commit_alone(
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

/// `insert` as the common table expression `name` of a larger statement.
fn named_cte(insert: InsertStatement, name: &str) -> CommonTableExpression {
    CommonTableExpression::new()
        .query(insert)
        .table_name(Alias::new(name))
        .to_owned()
}
