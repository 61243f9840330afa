//! What the store can tell an operator about itself (docs/API.md, "Operations: health, metrics, logs"): its caches' hits and
//! misses since the process started, its connection pool, the job queue's depth and whether
//! the schema is complete. The server turns these into metrics and readiness answers; the store
//! itself depends on no metrics library.

use crate::db::{Store, failed, on_pool};
use crate::error::StoreResult;
use std::sync::atomic::{AtomicU64, Ordering};

/// One cache's tallies.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    hits: AtomicU64,
    misses: AtomicU64,
}

impl Tally {
    /// Counts one lookup.
    pub(crate) fn record(&self, hit: bool) {
        let counter = if hit { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn read(&self) -> HitsMisses {
        HitsMisses {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }
}

/// The tallies of every cache of one store (shared by its clones).
#[derive(Debug, Default)]
pub(crate) struct CacheTallies {
    /// Rendered pages in this process's memory ([`crate::page`]).
    pub(crate) page: Tally,
    /// The ids and counts of pages, asked when a rendered page was stale ([`crate::page`]).
    pub(crate) listing: Tally,
    /// Stale pages and listings whose rows written since were checked ([`crate::page`]): a
    /// hit is one the writes did not touch, kept and served.
    pub(crate) recheck: Tally,
    /// Rows of expanded relations in this process's memory ([`crate::related`]).
    pub(crate) related: Tally,
    /// Counts in this process's memory ([`crate::count`]).
    pub(crate) count: Tally,
    /// Counts in the table shared by every process, asked when memory missed.
    pub(crate) shared_count: Tally,
}

/// Hits and misses of one cache since the process started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HitsMisses {
    pub hits: u64,
    pub misses: u64,
}

/// Every cache's hits and misses, by the cache's name as metrics label it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheStats {
    pub caches: Vec<(&'static str, HitsMisses)>,
}

/// The connection pool now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Connections open (idle or in use).
    pub open: u32,
    /// Connections open and idle.
    pub idle: u32,
    /// The most the pool opens.
    pub max: u32,
}

/// Jobs of the file queue not yet done, by state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueDepth {
    /// Waiting for a worker (or for their retry time).
    pub pending: u64,
    /// Held by a worker (whose heartbeat may have stopped).
    pub running: u64,
}

impl Store {
    /// The caches' hits and misses since this process opened the store.
    pub fn cache_stats(&self) -> CacheStats {
        let tallies = &self.tallies;
        CacheStats {
            caches: vec![
                ("page", tallies.page.read()),
                ("page_listing", tallies.listing.read()),
                ("page_recheck", tallies.recheck.read()),
                ("related", tallies.related.read()),
                ("count", tallies.count.read()),
                ("count_shared", tallies.shared_count.read()),
            ],
        }
    }

    /// Bytes of rendered pages the page cache holds now (bounded by `--page-cache-mb`): what
    /// a process's memory may grow by as it serves more distinct pages.
    pub fn page_cache_bytes(&self) -> u64 {
        self.pages.weight()
    }

    /// The connection pool's use now.
    pub fn pool_stats(&self) -> PoolStats {
        on_pool!(&self.pool, |pool, _builder| PoolStats {
            open: pool.size(),
            idle: u32::try_from(pool.num_idle()).unwrap_or(u32::MAX),
            max: pool.options().get_max_connections(),
        })
    }

    /// How many jobs of the file queue wait or run, over every process on the database.
    pub async fn queue_depth(&self) -> StoreResult<QueueDepth> {
        let sql = format!(
            "SELECT \"state\", count(*) FROM \"{}\" WHERE \"state\" IN ('{}', '{}') GROUP BY \"state\"",
            crate::jobs::JOB_TABLE,
            crate::jobs::PENDING,
            crate::jobs::RUNNING
        );
        let rows: Vec<(String, i64)> = on_pool!(&self.pool, |pool, _builder| {
            // Constant SQL: no input in it.
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .fetch_all(pool)
                .await
                .map_err(|e| failed("cannot read the job queue's depth", e))?
        });
        let mut depth = QueueDepth::default();
        for (state, count) in rows {
            let count = u64::try_from(count).unwrap_or(0);
            match state.as_str() {
                crate::jobs::PENDING => depth.pending = count,
                crate::jobs::RUNNING => depth.running = count,
                _ => {}
            }
        }
        Ok(depth)
    }
}
