//! A write transaction's statements: inserts, updates and reads, sent at once or held for
//! the commit.

use super::*;
use crate::error::{StoreError, StoreResult};
use brandhub_catalog::Cell;
use sea_query::{Alias, Expr, ExprTrait, Func, PostgresQueryBuilder, Query, SqliteQueryBuilder};
use sea_query_sqlx::SqlxBinder;
use sqlx::AssertSqlSafe;
use std::time::Instant;

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
    pub(super) fn hold(&mut self, part: Part, (sql, values): (String, sea_query::Values)) {
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
    pub(super) fn committed_alone_if_now(&self) -> bool {
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
    pub(super) async fn begin_now(&mut self) -> StoreResult<()> {
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
    pub(super) async fn send_held_writes(&mut self) -> StoreResult<()> {
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
    pub(super) async fn send_sqlite(
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
    pub(super) async fn fetch_rows<S>(
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
