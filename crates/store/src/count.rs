//! Exact counts without counting on every request. A count is cached under a hash of its
//! statement and stamped with the versions of the tables it reads (see [`crate::versions`]);
//! one probe statement reads the current stamp and the cached count together, and a count
//! whose stamp is no longer current is never used. The cache lives in the database, so every
//! server process on one PostgreSQL shares it. Remembering a count is done by one background
//! writer, so that a read never waits for the database's write lock.

use crate::db::{Kind, Pool, Store, Timing, internal, on_pool};
use crate::versions::stamp_statement;
use brandhub_catalog::Cell;
use brandhub_problem::ApiResult;
use brandhub_query::plan::CountPlan;
use brandhub_query::sql::{count_statement, tables_read};
use sea_query::{Alias, Expr, ExprTrait, OnConflict, Query, SelectStatement, SqliteQueryBuilder};
use sea_query_sqlx::SqlxBinder;
use sha2::{Digest, Sha256};
use sqlx::AssertSqlSafe;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

/// Cached counts older than this are deleted (they are recounted when asked for again).
const KEEP_FOR: Duration = Duration::from_secs(3600);

/// A count to remember.
#[derive(Debug)]
pub(crate) struct CountEntry {
    key: String,
    stamp: i64,
    count: i64,
}

fn cache_key(statement: &SelectStatement) -> String {
    // The inlined form is unambiguous (values are quoted and escaped); it is only hashed.
    let text = statement.to_string(SqliteQueryBuilder);
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn probe_statement(key: &str, tables: &[&'static str]) -> SelectStatement {
    let cached = Query::select()
        .column(Alias::new("record_count"))
        .from(Alias::new("bh_count_cache"))
        .and_where(Expr::col(Alias::new("cache_key")).eq(key))
        .and_where(Expr::col(Alias::new("stamp")).in_subquery(stamp_statement(tables)))
        .to_owned();
    Query::select()
        .expr(Expr::SubQuery(
            None,
            Box::new(stamp_statement(tables).into()),
        ))
        .expr(Expr::SubQuery(None, Box::new(cached.into())))
        .to_owned()
}

fn now_seconds() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Starts the background writer of cached counts; returns where to send entries.
pub(crate) fn start_writer(pool: Pool) -> mpsc::Sender<CountEntry> {
    let (sender, mut receiver) = mpsc::channel::<CountEntry>(256);
    tokio::spawn(async move {
        let mut last_pruned = now_seconds();
        while let Some(entry) = receiver.recv().await {
            let now = now_seconds();
            let upsert = Query::insert()
                .into_table(Alias::new("bh_count_cache"))
                .columns([
                    Alias::new("cache_key"),
                    Alias::new("stamp"),
                    Alias::new("record_count"),
                    Alias::new("created_at"),
                ])
                .values_panic([
                    entry.key.into(),
                    entry.stamp.into(),
                    entry.count.into(),
                    now.into(),
                ])
                .on_conflict(
                    OnConflict::column(Alias::new("cache_key"))
                        .update_columns([
                            Alias::new("stamp"),
                            Alias::new("record_count"),
                            Alias::new("created_at"),
                        ])
                        .to_owned(),
                )
                .to_owned();
            let prune = (now - last_pruned > 600).then(|| {
                last_pruned = now;
                Query::delete()
                    .from_table(Alias::new("bh_count_cache"))
                    .and_where(
                        Expr::col(Alias::new("created_at")).lt(now - KEEP_FOR.as_secs() as i64),
                    )
                    .to_owned()
            });
            let mut result: Result<(), sqlx::Error> = on_pool!(&pool, |pool, builder| {
                let (sql, values) = upsert.build_sqlx(builder);
                sqlx::query_with(AssertSqlSafe(sql), values)
                    .execute(pool)
                    .await
                    .map(|_| ())
            });
            if let (Ok(()), Some(prune)) = (&result, &prune) {
                result = on_pool!(&pool, |pool, builder| {
                    let (sql, values) = prune.build_sqlx(builder);
                    sqlx::query_with(AssertSqlSafe(sql), values)
                        .execute(pool)
                        .await
                        .map(|_| ())
                });
            }
            if let Err(error) = result {
                tracing::debug!(%error, "a count was not cached");
            }
        }
    });
    sender
}

impl Store {
    /// The exact number of records a count plan admits, from the cache when it is current.
    pub async fn count(&self, plan: &CountPlan, timing: &Timing) -> ApiResult<u64> {
        let statement = count_statement(plan);
        let tables = tables_read(plan.resource, &plan.filter);
        let key = cache_key(&statement);
        let probe = self
            .fetch(
                &probe_statement(&key, &tables),
                &[Kind::Integer, Kind::Integer],
                timing,
            )
            .await?;
        let (stamp, cached) = match probe.first().map(Vec::as_slice) {
            Some([Cell::Integer(stamp), cached]) => (*stamp, cached.clone()),
            _ => return Err(internal("the count probe returned nothing", "no row")),
        };
        if let Cell::Integer(count) = cached {
            return Ok(u64::try_from(count).unwrap_or(0));
        }
        let count = self.fetch_integer(&statement, timing).await?;
        if let Some(writer) = &self.count_writer {
            // A full queue only means this count is computed again next time.
            let _ = writer.try_send(CountEntry { key, stamp, count });
        }
        Ok(u64::try_from(count).unwrap_or(0))
    }
}
