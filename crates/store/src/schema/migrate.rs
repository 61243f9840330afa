//! The migration: brings a database to the schema, additively, one process at a time.

use super::*;
use crate::db::{Backend, Store, failed, on_pool};
use crate::error::{StoreError, StoreResult};
use brandhub_catalog::{Resource, catalog};
use brandhub_problem::Words;
use sqlx::AssertSqlSafe;

/// The PostgreSQL advisory lock key under which one process at a time migrates.
const MIGRATION_LOCK: i64 = 4_242_001;

/// How often the migration's trigger transaction runs when PostgreSQL aborts it for a write.
const MIGRATION_ATTEMPTS: u32 = 5;

impl Store {
    /// Repairs stored values outside their domain ([`repair_statements`]) in one write through
    /// the executor, which bumps the versions of what it changed: another process's caches
    /// (and this one's) see the repaired records.
    async fn repair_values(&self) -> StoreResult<()> {
        use crate::write::{EntryPoint, Outcome, WritePlan};
        let now = crate::ids::timestamp_at(self.clock.now_millis());
        let repairs: Vec<(&'static str, String)> = catalog()
            .resources()
            .iter()
            .flat_map(|r| {
                repair_statements(r, &now)
                    .into_iter()
                    .map(move |sql| (r.table, sql))
            })
            .collect();
        if repairs.is_empty() {
            return Ok(());
        }
        self.execute(
            WritePlan::locking(EntryPoint::Migration),
            move |mut tx, _| {
                let repairs = repairs.clone();
                Box::pin(async move {
                    let result = async {
                        for (table, sql) in repairs {
                            let statement = crate::offers::clock::Raw {
                                sql,
                                values: Vec::new(),
                            };
                            if tx.execute_untracked(table, &statement).await? > 0 {
                                tx.touch(table);
                            }
                        }
                        Ok(Outcome::Commit(()))
                    }
                    .await;
                    (tx, result)
                })
            },
        )
        .await
    }

    /// Drops the natural key indexes of `resource` that name another key than the catalog's
    /// (made by an earlier version: a price's `(variant, host, startDate)` would refuse a price
    /// in a second currency).
    async fn drop_stale_key_indexes(&self, resource: &Resource) -> StoreResult<()> {
        let prefix = format!("nk_{}_", resource.table);
        let current =
            natural_key_index(resource, self.backend()).map(|_| natural_key_index_name(resource));
        let names: Vec<String> = on_pool!(&self.pool, |pool, _builder| {
            let sql = match self.backend() {
                Backend::Sqlite => {
                    "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = $1"
                }
                Backend::Postgres => {
                    "SELECT indexname::text FROM pg_indexes WHERE schemaname = current_schema() AND tablename = $1"
                }
            };
            sqlx::query_scalar(sql)
                .bind(resource.table)
                .fetch_all(pool)
                .await
                .map_err(|e| failed("cannot read the schema", e))?
        });
        for name in names {
            if name.starts_with(&prefix) && Some(&name) != current.as_ref() {
                self.execute_raw(&format!("DROP INDEX IF EXISTS {}", quote(&name)))
                    .await?;
            }
        }
        Ok(())
    }

    async fn existing_columns(&self, table: &str) -> StoreResult<Vec<String>> {
        let columns: Vec<String> = on_pool!(&self.pool, |pool, _builder| {
            let sql = match self.backend() {
                Backend::Sqlite => "SELECT name FROM pragma_table_xinfo($1)",
                Backend::Postgres => {
                    "SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1"
                }
            };
            sqlx::query_scalar(sql)
                .bind(table)
                .fetch_all(pool)
                .await
                .map_err(|e| failed("cannot read the schema", e))?
        });
        Ok(columns)
    }

    /// What the schema lacks of what this build needs (`"table stock"`, `"column
    /// stock.available"`), empty when migrations are applied: every resource's table with every
    /// column, its list tables, the bookkeeping tables and the job queue. One statement, so
    /// it also says whether the database answers; for readiness checks.
    pub async fn schema_gaps(&self) -> StoreResult<Vec<String>> {
        let backend = self.backend();
        let pairs: Vec<(String, String)> = on_pool!(&self.pool, |pool, _builder| {
            let sql = match backend {
                Backend::Sqlite => {
                    "SELECT m.name, p.name FROM sqlite_schema AS m, pragma_table_xinfo(m.name) AS p WHERE m.type = 'table'"
                }
                Backend::Postgres => {
                    "SELECT table_name::text, column_name::text FROM information_schema.columns WHERE table_schema = current_schema()"
                }
            };
            sqlx::query_as(sql)
                .fetch_all(pool)
                .await
                .map_err(|e| failed("cannot read the schema", e))?
        });
        let present: std::collections::HashSet<(&str, &str)> = pairs
            .iter()
            .map(|(table, column)| (table.as_str(), column.as_str()))
            .collect();
        let tables: std::collections::HashSet<&str> =
            pairs.iter().map(|(t, _)| t.as_str()).collect();
        let mut gaps = Vec::new();
        let need_table = |table: &str, gaps: &mut Vec<String>| {
            let there = tables.contains(table);
            if !there {
                gaps.push(format!("table {table}"));
            }
            there
        };
        for table in [
            "bh_table_version",
            crate::row_log::TABLE,
            crate::count::COUNT_TABLE,
            "bh_meta",
            crate::jobs::JOB_TABLE,
            crate::idempotency::IDEMPOTENCY_TABLE,
        ]
        .into_iter()
        .chain(crate::accounts::sessions::TABLES)
        {
            need_table(table, &mut gaps);
        }
        for resource in catalog().resources() {
            if need_table(resource.table, &mut gaps) {
                for (column, _) in table_columns(resource, backend) {
                    if !present.contains(&(resource.table, column.as_str())) {
                        gaps.push(format!("column {}.{column}", resource.table));
                    }
                }
            }
            for field in resource.leaf_fields() {
                if let Some(list) = &field.list {
                    need_table(list.table, &mut gaps);
                }
            }
        }
        Ok(gaps)
    }

    /// Brings the database to the catalog's schema (see the module docs); a database whose
    /// schema is this build's ([`schema_fingerprint`]) is left as it is.
    pub async fn migrate(&self) -> StoreResult<()> {
        self.migrate_with(false).await
    }

    /// [`Store::migrate`], and every table, index, function and trigger made again even where
    /// the schema is this build's: for `brandhub migrate`, which an operator runs after
    /// changing the schema by hand (a dropped index comes back).
    pub async fn migrate_fully(&self) -> StoreResult<()> {
        self.migrate_with(true).await
    }

    async fn migrate_with(&self, fully: bool) -> StoreResult<()> {
        let backend = self.backend();
        // Several servers may start together: one migrates while the others wait. (SQLite's
        // write transactions already serialise them.)
        let lock = self.pg_session_lock(MIGRATION_LOCK).await?;
        let result = self.migrate_locked(backend, fully).await;
        if let Some(session) = lock {
            use sqlx::Connection;
            // Closing the session releases the lock.
            if let Err(error) = session.close().await {
                tracing::warn!(%error, "the migration lock's session did not close cleanly");
            }
        }
        result
    }

    /// The triggers that keep offers; on the migration that made the offer table, every
    /// offer derived, and the moment dated prices are applied up to set to now.
    async fn migrate_offers(&self, backend: Backend) -> StoreResult<()> {
        let outbox = crate::events::EVENT_TABLE;
        if !self
            .existing_columns(outbox)
            .await?
            .iter()
            .any(|c| c == crate::events::REMOVED_COLUMN)
        {
            self.execute_raw(&format!(
                "ALTER TABLE \"{outbox}\" ADD COLUMN \"{}\" TEXT",
                crate::events::REMOVED_COLUMN
            ))
            .await?;
        }
        for statement in crate::offers::statements(backend) {
            self.execute_raw(&statement).await?;
        }
        use sea_query::{Alias, Expr, ExprTrait, Query};
        let offer = catalog().get(brandhub_catalog::Res::Offer).table;
        let any_offer = Query::select()
            .column(Alias::new("id"))
            .from(Alias::new(offer))
            .limit(1)
            .to_owned();
        let timing = crate::db::Timing::default();
        let empty = self
            .fetch(&any_offer, &[crate::db::Kind::Text], &timing)
            .await?
            .is_empty();
        let applied = Query::select()
            .column(Alias::new("value"))
            .from(Alias::new("bh_meta"))
            .and_where(Expr::col(Alias::new("name")).eq(crate::offers::clock::APPLIED_UNTIL))
            .to_owned();
        let started = !self
            .fetch(&applied, &[crate::db::Kind::Text], &timing)
            .await?
            .is_empty();
        if empty && !started {
            let fill = crate::offers::fill_statement(backend);
            let fill = match backend {
                Backend::Postgres => {
                    format!("BEGIN; SET LOCAL statement_timeout = 0; {fill}; COMMIT")
                }
                Backend::Sqlite => fill,
            };
            self.execute_raw(&fill).await?;
        }
        self.execute_raw(&crate::offers::clock::start_statement(backend))
            .await
    }

    /// The fingerprint the last migration stored ([`schema_fingerprint`]), if any.
    async fn stored_fingerprint(&self) -> StoreResult<Option<String>> {
        if self.existing_columns("bh_meta").await?.is_empty() {
            return Ok(None);
        }
        use sea_query::{Alias, Expr, ExprTrait, Query};
        let stored = Query::select()
            .column(Alias::new("value"))
            .from(Alias::new("bh_meta"))
            .and_where(Expr::col(Alias::new("name")).eq(FINGERPRINT_NAME))
            .to_owned();
        let rows = self
            .fetch(
                &stored,
                &[crate::db::Kind::Text],
                &crate::db::Timing::default(),
            )
            .await?;
        Ok(rows
            .into_iter()
            .next()
            .and_then(|row| row.into_iter().next())
            .and_then(|value| value.as_text().map(str::to_string)))
    }

    async fn store_fingerprint(&self, fingerprint: &str) -> StoreResult<()> {
        // Hexadecimal digits only: no quoting question.
        debug_assert!(fingerprint.bytes().all(|b| b.is_ascii_hexdigit()));
        self.execute_raw(&format!(
            "INSERT INTO \"bh_meta\" (\"name\", \"value\") VALUES ('{FINGERPRINT_NAME}', '{fingerprint}') \
             ON CONFLICT (\"name\") DO UPDATE SET \"value\" = excluded.\"value\""
        ))
        .await
    }

    async fn migrate_locked(&self, backend: Backend, fully: bool) -> StoreResult<()> {
        let fingerprint = schema_fingerprint(backend);
        if !fully
            && self.stored_fingerprint().await?.as_deref() == Some(fingerprint.as_str())
            && self.schema_gaps().await?.is_empty()
        {
            // The schema is this build's: nothing is created again (see `fingerprint`).
            return self.after_migration(backend).await;
        }
        self.make_schema(backend).await?;
        self.store_fingerprint(&fingerprint).await?;
        self.after_migration(backend).await
    }

    /// What every start-up does, whether or not the schema changed.
    async fn after_migration(&self, backend: Backend) -> StoreResult<()> {
        // After the triggers: a repaired rule changes its offers as any write of it does.
        self.repair_values().await?;
        if backend == Backend::Sqlite {
            // A database analyzed by an earlier version may still hold samples.
            self.forget_sqlite_samples().await?;
        }
        Ok(())
    }

    /// Creates what the schema lacks and makes every index, function and trigger again.
    async fn make_schema(&self, backend: Backend) -> StoreResult<()> {
        for statement in bookkeeping_statements(backend) {
            self.execute_raw(&statement).await?;
        }
        for resource in catalog().resources() {
            let existing = self.existing_columns(resource.table).await?;
            if !existing.is_empty() {
                for (name, ty) in table_columns(resource, backend) {
                    if existing.contains(&name) {
                        continue;
                    }
                    // A required column whose field has a constant default is added with it.
                    let ty = match constant_default(resource, &name) {
                        Some(default) if !ty.contains("DEFAULT") => {
                            format!("{ty} DEFAULT {default}")
                        }
                        _ => ty,
                    };
                    if ty.contains("NOT NULL") && !ty.contains("DEFAULT") {
                        return Err(StoreError::Conflict {
                            detail: Words::english(format!(
                                "table {} lacks the required column {name}; add it with a value for every row, then migrate again",
                                resource.table
                            )),
                            field: None,
                        });
                    }
                    self.execute_raw(&format!(
                        "ALTER TABLE {} ADD COLUMN {} {}",
                        quote(resource.table),
                        quote(&name),
                        ty
                    ))
                    .await?;
                    let now = crate::ids::timestamp_at(self.clock.now_millis());
                    let fill = derived_fill_statement(resource, &name)
                        .or_else(|| stamped_fill_statement(resource, &name, &now));
                    if let Some(fill) = fill {
                        // A fill touches every row: no statement timeout for it.
                        let fill = match backend {
                            Backend::Postgres => {
                                format!("BEGIN; SET LOCAL statement_timeout = 0; {fill}; COMMIT")
                            }
                            Backend::Sqlite => fill,
                        };
                        self.execute_raw(&fill).await?;
                    }
                }
            }
            for statement in resource_statements(resource, backend) {
                self.execute_raw(&statement).await?;
            }
            self.drop_stale_key_indexes(resource).await?;
        }
        for statement in super::fingerprint::service_statements(backend) {
            self.execute_raw(&statement).await?;
        }
        // Last, in one transaction: the triggers that see writes from outside brandhub and
        // those that keep the change marks need every table and version row. One transaction
        // because each schema change rewrites the schema's pages, which SQLite would
        // otherwise log once per statement. On SQLite it takes the write lock at once: a
        // transaction that began by reading is refused the lock without waiting when another
        // process (a running server, as `brandhub import` meets it) holds it.
        let begin = match backend {
            Backend::Sqlite => "BEGIN IMMEDIATE",
            Backend::Postgres => "BEGIN",
        };
        // On PostgreSQL, making the triggers again beside a running server's writes can
        // deadlock (the two take their tables' locks in different orders): PostgreSQL aborts
        // one side, and the migration, like the executor, runs again.
        let triggers = format!(
            "{begin}; {}; COMMIT",
            super::fingerprint::trigger_statements(backend).join("; ")
        );
        let mut attempt = 1;
        loop {
            match self.execute_raw(&triggers).await {
                Err(error) if error.is_raced() && attempt < MIGRATION_ATTEMPTS => {
                    tracing::warn!(attempt, "the migration lost its locks to a write; again");
                    attempt += 1;
                }
                done => break done?,
            }
        }
        self.migrate_offers(backend).await
    }

    /// Drops everything brandhub created (tests and `demo --fresh` only).
    pub async fn drop_everything(&self) -> StoreResult<()> {
        // The list is dropped from its end. The versions, the row log and the mark of
        // brandhub's own writes go last: the triggers of the resource tables write them
        // while a table is dropped (SQLite empties it first, and its foreign keys' actions
        // change other tables). The queue refers to files: it goes before them.
        let mut tables: Vec<&str> = vec![
            brandhub_query::changes::TOMBSTONE_TABLE,
            crate::changes::CLOCK_TABLE,
            crate::external::MARK_TABLE,
            "bh_table_version",
            crate::row_log::TABLE,
        ];
        tables.extend(versioned_tables());
        tables.extend([
            crate::count::COUNT_TABLE,
            "bh_meta",
            crate::orders::intake::COUNTER_TABLE,
            crate::jobs::JOB_TABLE,
            crate::idempotency::IDEMPOTENCY_TABLE,
        ]);
        tables.extend(crate::accounts::sessions::TABLES);
        for table in tables.iter().rev() {
            let cascade = if self.backend() == Backend::Postgres {
                " CASCADE"
            } else {
                ""
            };
            self.execute_raw(&format!("DROP TABLE IF EXISTS {}{cascade}", quote(table)))
                .await?;
        }
        Ok(())
    }

    /// Empties SQLite's `sqlite_stat4` (the key samples `ANALYZE` gathers where SQLite is
    /// built with STAT4, as the bundled one is), keeping `sqlite_stat1`'s averages. While
    /// samples exist, SQLite compiles a statement again whenever a value bound in its WHERE
    /// clause changes, which for brandhub, whose every statement binds its values, is every
    /// execution (docs/decisions/0018-sqlite-statistics-without-stat4.md, which also shows that
    /// the plans the averages give are as good for the workloads). The connection that ran it reloads its
    /// statistics (`ANALYZE sqlite_schema`); connections opened later read them as they are.
    async fn forget_sqlite_samples(&self) -> StoreResult<()> {
        // The table exists only where SQLite gathers samples (and once ANALYZE has run).
        let sampled: bool = on_pool!(&self.pool, |pool, _builder| {
            sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'sqlite_stat4')",
            )
            .fetch_one(pool)
            .await
            .map_err(|e| failed("cannot read the schema", e))?
        });
        if sampled {
            self.execute_raw("DELETE FROM sqlite_stat4; ANALYZE sqlite_schema")
                .await?;
        }
        Ok(())
    }

    /// Updates the planner's statistics after a bulk load.
    pub async fn analyze(&self) -> StoreResult<()> {
        match &self.pool {
            crate::db::Pool::Sqlite(_) => {
                self.execute_raw("ANALYZE").await?;
                self.forget_sqlite_samples().await
            }
            crate::db::Pool::Postgres(pool) => {
                // VACUUM also sets the visibility map, which index-only scans need. It takes
                // minutes after a load of millions of rows, longer than the pool's statement
                // timeout: it runs on a connection of its own without one (VACUUM cannot run
                // in a transaction, so not under `SET LOCAL`), closed afterwards.
                let mut connection = pool
                    .acquire()
                    .await
                    .map_err(|e| failed("cannot connect to vacuum", e))?;
                connection.close_on_drop();
                sqlx::raw_sql("SET statement_timeout = 0")
                    .execute(&mut *connection)
                    .await
                    .map_err(|e| failed("cannot set up a connection to vacuum", e))?;
                sqlx::raw_sql(AssertSqlSafe("VACUUM ANALYZE".to_string()))
                    .execute(&mut *connection)
                    .await
                    .map_err(|e| failed("VACUUM ANALYZE failed", e))?;
                Ok(())
            }
        }
    }
}
