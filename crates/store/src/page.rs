//! Rendered pages, kept while they are still true. brandhub is the only writer of its data, so
//! a page rendered for a plan stays exactly right until one of the tables it reads is written
//! (see [`brandhub_query::sql::page_tables`] and [`crate::versions`]). Pages are kept in this
//! process's memory, bounded by their total size; every request checks the page's stamp against
//! the versions it read from the database, so processes sharing a database never serve a page
//! another process's write made stale.

use crate::db::{Store, Timing};
use crate::error::StoreResult;
use crate::render::render_envelope;
use crate::versions::Versions;
use brandhub_query::plan::{ReadPlan, Viewer};
use brandhub_query::sql::{PageStrategy, page_statement, page_tables};
use sea_query::SqliteQueryBuilder;
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// A rendered envelope and how many records it holds.
#[derive(Debug, Clone)]
pub struct RenderedPage {
    pub body: Arc<Vec<u8>>,
    pub records: usize,
}

/// A cached page with the stamp it was rendered at.
#[derive(Debug, Clone)]
pub(crate) struct CachedPage {
    stamp: i64,
    page: RenderedPage,
}

/// Weighs cached pages by their size, so the cache is bounded in bytes.
#[derive(Debug, Clone, Default)]
pub(crate) struct PageWeight;

impl quick_cache::Weighter<[u8; 32], Arc<CachedPage>> for PageWeight {
    fn weight(&self, _key: &[u8; 32], value: &Arc<CachedPage>) -> u64 {
        value.page.body.len() as u64 + 64
    }
}

/// The page cache type held by the store.
pub(crate) type PageCache = quick_cache::sync::Cache<[u8; 32], Arc<CachedPage>, PageWeight>;

/// A new page cache of at most `bytes`.
pub(crate) fn page_cache(bytes: u64) -> PageCache {
    PageCache::with_weighter(1024, bytes, PageWeight)
}

/// What identifies a page: who sees it, the statement that reads its records (filter, order,
/// paging) and what it shows of them.
fn page_key(plan: &ReadPlan, viewer: &Viewer) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(viewer.cache_key().as_bytes());
    hasher.update([0]);
    hasher.update(
        page_statement(plan, PageStrategy::InOrder)
            .to_string(SqliteQueryBuilder)
            .as_bytes(),
    );
    hasher.update([0]);
    hasher.update(plan.selection.signature().as_bytes());
    hasher.finalize().into()
}

impl Store {
    /// The rendered envelope of a plan's page: from the cache while it is true, else read,
    /// rendered and remembered.
    pub async fn render_page(
        &self,
        plan: &ReadPlan,
        viewer: &Viewer,
        versions: &Versions,
        timing: &Timing,
    ) -> StoreResult<RenderedPage> {
        let stamp = versions.stamp(&page_tables(plan, viewer));
        let key = page_key(plan, viewer);
        if let Some(cached) = self.pages.get(&key)
            && cached.stamp == stamp
        {
            self.tallies.page.record(true);
            return Ok(cached.page.clone());
        }
        self.tallies.page.record(false);
        let data = self.read_page(plan, viewer, versions, timing).await?;
        let mut body = Vec::with_capacity(16 * 1024);
        render_envelope(&mut body, &plan.selection, &data, plan.page, plan.page_size);
        let page = RenderedPage {
            body: Arc::new(body),
            records: data.root.rows.len(),
        };
        self.pages.insert(
            key,
            Arc::new(CachedPage {
                stamp,
                page: page.clone(),
            }),
        );
        Ok(page)
    }
}
