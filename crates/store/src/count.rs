//! Exact counts without counting on every request. A count is cached under a hash of its
//! statement and stamped with the versions of what it reads (see [`crate::versions`]);
//! a count whose stamp is no longer current is never used. Counts are kept in this process's
//! memory and in a table, so every server process on one PostgreSQL shares them. Remembering a
//! count in the table is done by one background writer, so a read never waits for the
//! database's write lock (on SQLite the writer takes the write turn, as every write does).

use crate::db::{Backend, Kind, Pool, Store, Timing, execute_outside_transaction};
use crate::error::StoreResult;
use crate::versions::Versions;
use brandhub_catalog::{Cell, Resource};
use brandhub_query::plan::{CountPlan, Predicate};
use brandhub_query::sql::{CountStrategy, count_statement, filter_drives, is_rare};
use sea_query::{Alias, Expr, ExprTrait, OnConflict, Query, SelectStatement, SqliteQueryBuilder};
use sha2::{Digest, Sha256};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

/// The table of remembered counts.
pub(crate) const COUNT_TABLE: &str = "bh_count_cache";

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

fn probe_statement(key: &str, stamp: i64) -> SelectStatement {
    Query::select()
        .column(Alias::new("record_count"))
        .from(Alias::new(COUNT_TABLE))
        .and_where(Expr::col(Alias::new("cache_key")).eq(key))
        .and_where(Expr::col(Alias::new("stamp")).eq(stamp))
        .to_owned()
}

fn now_seconds() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Starts the background writer of cached counts; returns where to send entries. On SQLite
/// it writes in `write_turn`, as every write of the process does.
pub(crate) fn start_writer(
    pool: Pool,
    write_turn: Option<crate::write_turn::WriteTurn>,
    checkpoints: Option<std::sync::Arc<crate::checkpoint::Checkpoints>>,
) -> mpsc::Sender<CountEntry> {
    let (sender, mut receiver) = mpsc::channel::<CountEntry>(256);
    tokio::spawn(async move {
        let mut last_pruned = now_seconds();
        while let Some(entry) = receiver.recv().await {
            let now = now_seconds();
            let upsert = Query::insert()
                .into_table(Alias::new(COUNT_TABLE))
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
                    .from_table(Alias::new(COUNT_TABLE))
                    .and_where(
                        Expr::col(Alias::new("created_at")).lt(now - KEEP_FOR.as_secs() as i64),
                    )
                    .to_owned()
            });
            let mut result =
                execute_outside_transaction(&pool, write_turn.as_ref(), COUNT_TABLE, &upsert).await;
            if let (Ok(_), Some(prune)) = (&result, &prune) {
                result =
                    execute_outside_transaction(&pool, write_turn.as_ref(), COUNT_TABLE, prune)
                        .await;
            }
            if let Err(error) = result {
                tracing::debug!(%error, "a count was not cached");
            }
            if let Some(checkpoints) = &checkpoints {
                checkpoints.committed();
            }
        }
    });
    sender
}

/// Where a count is remembered: the hash of its plain statement and the versions stamp of the
/// tables it reads.
struct CountKey {
    key: String,
    stamp: i64,
}

/// The bytes the count routes of a process may hold: a route is keyed by its whole request
/// (up to the URL and body limits), so the cache is bounded by bytes, not by entries.
pub(crate) const COUNT_ROUTE_BYTES: u64 = 4 << 20;

/// Weighs a count route by the bytes it holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RouteWeight;

impl quick_cache::Weighter<String, CountRoute> for RouteWeight {
    fn weight(&self, request: &String, route: &CountRoute) -> u64 {
        (request.len() + route.key.len() + route.depends_on.len() * 16 + 96) as u64
    }
}

/// The count routes of a process, request → route.
pub(crate) type RouteCache = quick_cache::sync::Cache<String, CountRoute, RouteWeight>;

/// Where a plan's count is remembered (the hash of its plain statement) and the versions
/// whose bumps make it stale: all a request needs to find its count again without planning.
#[derive(Debug, Clone)]
pub(crate) struct CountRoute {
    key: String,
    depends_on: Vec<&'static str>,
}

impl CountRoute {
    fn of(plan: &CountPlan) -> CountRoute {
        let filter = plan.full_filter();
        let key = cache_key(&count_statement(plan, CountStrategy::Plain));
        if filter.is_always() {
            // Every record of a table: only inserts and deletes change how many there are.
            // Its stamp counts another version, so its key is another too (a count stamped
            // with the table's version must never be taken for one of the rows' version).
            return CountRoute {
                key: format!("rows:{key}"),
                depends_on: vec![crate::versions::rows_key(plan.resource.table)],
            };
        }
        // Stamped with the versions of what the filter compares and joins through (see
        // `versions::predicate_keys`), not of whole tables: its key says so.
        let mut keys = std::collections::BTreeSet::new();
        crate::versions::predicate_keys(plan.resource, &filter, &mut keys);
        CountRoute {
            key: format!("fields:{key}"),
            depends_on: keys.into_iter().collect(),
        }
    }
}

impl Store {
    /// The count a request asks for. `request` identifies it completely (the caller's view,
    /// the resource, the parsed request); when this process has counted it before and no
    /// table it reads was written since, the count is answered without planning (planning a
    /// wide scope's subqueries and building the statement to find the count costs more than
    /// the answer). Otherwise `plan` plans it and it is counted as [`Store::count`] does.
    pub async fn count_request(
        &self,
        request: String,
        plan: impl FnOnce() -> brandhub_problem::ApiResult<CountPlan>,
        versions: &Versions,
        timing: &Timing,
    ) -> StoreResult<u64> {
        if let Some(route) = self.count_routes.get(&request)
            && let Some((at, count)) = self.counts.get(&route.key)
            && at == versions.stamp(&route.depends_on)
        {
            self.tallies.count.record(true);
            return Ok(count);
        }
        let plan = plan()?;
        let count = self.count(&plan, versions, timing).await?;
        self.count_routes.insert(request, CountRoute::of(&plan));
        Ok(count)
    }

    /// The exact number of records a count plan admits: from this process's memory, else from
    /// the shared cache table, else counted (and then remembered in both).
    pub async fn count(
        &self,
        plan: &CountPlan,
        versions: &Versions,
        timing: &Timing,
    ) -> StoreResult<u64> {
        let (key, cached) = self.cached_count(plan, versions, timing).await?;
        if let Some(count) = cached {
            return Ok(count);
        }
        let strategy = self.count_strategy(plan, versions, timing).await?;
        self.count_with(plan, key, strategy, timing).await
    }

    /// How to count a plan's records, from exact counts (usually cached). A scope that holds
    /// more than a rare part of the table is never a good driver, and planners cannot know
    /// it. PostgreSQL would scan the whole table to hash-join it: there a rare requested
    /// filter's matches are collected first and the scope judges just those, and a common
    /// filter is counted in one pass. SQLite would drive from the scope's ids: there the
    /// scope is only probed, so the filter drives and the scope is checked per row (the same
    /// matches-first order without materializing, and without counting the filter alone).
    async fn count_strategy(
        &self,
        plan: &CountPlan,
        versions: &Versions,
        timing: &Timing,
    ) -> StoreResult<CountStrategy> {
        if plan.scope.is_always() || plan.filter.is_always() {
            return Ok(CountStrategy::Plain);
        }
        if plan.filter.pins_ids() {
            // Found by the primary key: the filter drives, the scope judges what it found.
            return Ok(match self.backend() {
                Backend::Sqlite => CountStrategy::ProbeScope,
                _ => CountStrategy::MatchesFirst,
            });
        }
        let visible = self
            .plain_count(
                &CountPlan::visible(plan.resource, plan.scope.clone()),
                versions,
                timing,
            )
            .await?;
        if self.backend() == Backend::Sqlite {
            let wide = self
                .is_wide_scope(plan.resource, visible, versions, timing)
                .await?;
            return Ok(if wide {
                CountStrategy::ProbeScope
            } else {
                CountStrategy::Plain
            });
        }
        if self.filter_drives(plan, visible, versions, timing).await? {
            return Ok(CountStrategy::MatchesFirst);
        }
        Ok(CountStrategy::Plain)
    }

    /// Whether a plan's requested filter should find its matches before its scope, which
    /// holds `visible` records, judges them ([`filter_drives`]). The filter alone is counted
    /// (and cached) only for a wide scope.
    pub(crate) async fn filter_drives(
        &self,
        plan: &CountPlan,
        visible: u64,
        versions: &Versions,
        timing: &Timing,
    ) -> StoreResult<bool> {
        if plan.scope.is_always() || plan.filter.is_always() {
            return Ok(false);
        }
        let total = self
            .plain_count(&CountPlan::everything(plan.resource), versions, timing)
            .await?;
        if is_rare(visible, total) {
            return Ok(false);
        }
        let matched = self
            .plain_count(
                &CountPlan {
                    resource: plan.resource,
                    scope: Predicate::always(),
                    filter: plan.filter.clone(),
                },
                versions,
                timing,
            )
            .await?;
        Ok(filter_drives(
            visible,
            matched,
            total,
            self.matches_first_limit,
        ))
    }

    /// Whether `visible` records are more than a rare part of the resource's table: such a
    /// scope must only be probed, never drive a query (SQLite).
    pub(crate) async fn is_wide_scope(
        &self,
        resource: &'static Resource,
        visible: u64,
        versions: &Versions,
        timing: &Timing,
    ) -> StoreResult<bool> {
        let total = self
            .plain_count(&CountPlan::everything(resource), versions, timing)
            .await?;
        Ok(!is_rare(visible, total))
    }

    /// A count of a plan whose scope or filter is trivial, in its plain form.
    async fn plain_count(
        &self,
        plan: &CountPlan,
        versions: &Versions,
        timing: &Timing,
    ) -> StoreResult<u64> {
        let (key, cached) = self.cached_count(plan, versions, timing).await?;
        match cached {
            Some(count) => Ok(count),
            None => {
                self.count_with(plan, key, CountStrategy::Plain, timing)
                    .await
            }
        }
    }

    /// A remembered count, from memory or the shared table; the key to remember it under.
    /// Counts are keyed by their plain statement whichever form counts them.
    async fn cached_count(
        &self,
        plan: &CountPlan,
        versions: &Versions,
        timing: &Timing,
    ) -> StoreResult<(CountKey, Option<u64>)> {
        let CountRoute { key, depends_on } = CountRoute::of(plan);
        let stamp = versions.stamp(&depends_on);
        if let Some((at, count)) = self.counts.get(&key)
            && at == stamp
        {
            self.tallies.count.record(true);
            return Ok((CountKey { key, stamp }, Some(count)));
        }
        self.tallies.count.record(false);
        let cached = self
            .fetch(&probe_statement(&key, stamp), &[Kind::Integer], timing)
            .await?;
        if let Some(Cell::Integer(count)) = cached.first().and_then(|row| row.first()) {
            self.tallies.shared_count.record(true);
            let count = u64::try_from(*count).unwrap_or(0);
            self.counts.insert(key.clone(), (stamp, count));
            return Ok((CountKey { key, stamp }, Some(count)));
        }
        self.tallies.shared_count.record(false);
        Ok((CountKey { key, stamp }, None))
    }

    /// Counts a plan in the given form and remembers the count in both caches.
    async fn count_with(
        &self,
        plan: &CountPlan,
        CountKey { key, stamp }: CountKey,
        strategy: CountStrategy,
        timing: &Timing,
    ) -> StoreResult<u64> {
        let count = self
            .fetch_integer(&count_statement(plan, strategy), timing)
            .await?;
        let count = u64::try_from(count).unwrap_or(0);
        self.counts.insert(key.clone(), (stamp, count));
        if let Some(writer) = &self.count_writer {
            // A full queue only means another process counts this again.
            let _ = writer.try_send(CountEntry {
                key,
                stamp,
                count: count as i64,
            });
        }
        Ok(count)
    }
}
