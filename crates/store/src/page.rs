//! Rendered pages, kept while they are still true. brandhub is the only writer of its data, so
//! a page rendered for a plan stays exactly right until one of the tables it reads is written
//! (see [`brandhub_query::sql::page_tables`] and [`crate::versions`]). Pages are kept in this
//! process's memory, bounded by their total size; every request checks the page's stamp against
//! the versions it read from the database, so processes sharing a database never serve a page
//! another process's write made stale.

use crate::db::{Store, Timing};
use crate::error::StoreResult;
use crate::read::kinds;
use crate::recheck::{Judged, Recheck};
use crate::render::render_envelope;
use crate::versions::Versions;
use brandhub_catalog::catalog;
use brandhub_query::plan::{ReadPlan, Viewer};
use brandhub_query::sql::{PageStrategy, node_columns, page_statement, page_tables, tables_read};
use sea_query::SqliteQueryBuilder;
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// A rendered envelope and how many records it holds.
#[derive(Debug, Clone)]
pub struct RenderedPage {
    pub body: Arc<Vec<u8>>,
    pub records: usize,
}

impl RenderedPage {
    /// The envelope of a plan's page read from the database.
    fn of(plan: &ReadPlan, data: &crate::read::PageData) -> RenderedPage {
        let mut body = Vec::with_capacity(16 * 1024);
        render_envelope(&mut body, &plan.selection, data, plan.page, plan.page_size);
        RenderedPage {
            body: Arc::new(body),
            records: data.root.rows.len(),
        }
    }
}

/// What the page cache keeps: rendered pages, and the ids (and count) each page listed.
#[derive(Debug, Clone)]
enum Kept {
    Rendered(RenderedPage),
    /// A page's ids in order and how many records its request found: while what decides
    /// them stands ([`crate::versions::listing_keys`]), the page is its ids' records, read
    /// again by id, when a write changed only what they hold.
    Listing {
        ids: Vec<String>,
        found: u64,
    },
}

/// A cached page or listing with the stamp it was made at.
#[derive(Debug, Clone)]
pub(crate) struct CachedPage {
    stamp: i64,
    kept: Kept,
    /// What it was made from, to keep it through writes that did not touch it.
    recheck: Option<Recheck>,
}

/// Weighs cached pages by their size, so the cache is bounded in bytes.
#[derive(Debug, Clone, Default)]
pub(crate) struct PageWeight;

impl quick_cache::Weighter<[u8; 32], Arc<CachedPage>> for PageWeight {
    fn weight(&self, _key: &[u8; 32], value: &Arc<CachedPage>) -> u64 {
        let bytes = match &value.kept {
            Kept::Rendered(page) => page.body.len(),
            Kept::Listing { ids, .. } => ids.iter().map(|id| id.len() + 24).sum(),
        };
        let recheck = value.recheck.as_ref().map_or(0, Recheck::weight);
        (bytes + recheck) as u64 + 64
    }
}

/// The page cache type held by the store.
pub(crate) type PageCache = quick_cache::sync::Cache<[u8; 32], Arc<CachedPage>, PageWeight>;

/// The pages some request of this process is reading and rendering now, each with a lock its
/// request holds meanwhile: a write makes a page stale for every connection at once, and
/// without this each of them would read and render it again (the misses of one page coalesce).
/// A page is locked at the versions it is made from ([`making_key`]): a request that read
/// other versions (later ones, while writes flow) could not take the page being made and
/// makes its own beside it instead of queueing behind every maker before it.
pub(crate) type InMaking =
    std::sync::Arc<std::sync::Mutex<HashMap<[u8; 32], Arc<tokio::sync::Mutex<()>>>>>;

/// Holds a page's making lock; dropping it lets the next request in and forgets the lock when
/// no request waits for it any more.
struct Making<'a> {
    key: [u8; 32],
    lock: Arc<tokio::sync::Mutex<()>>,
    _held: Option<tokio::sync::OwnedMutexGuard<()>>,
    all: &'a InMaking,
}

impl Drop for Making<'_> {
    fn drop(&mut self) {
        self._held = None;
        let mut all = self.all.lock().unwrap_or_else(|e| e.into_inner());
        // This guard's Arc and the map's: nobody else waits.
        if Arc::strong_count(&self.lock) <= 2 {
            all.remove(&self.key);
        }
    }
}

/// Waits until no other request of this process is making the page `key`, and keeps others
/// waiting until the returned guard is dropped.
async fn make_in_turn(all: &InMaking, key: [u8; 32]) -> Making<'_> {
    let lock = all
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(key)
        .or_default()
        .clone();
    let held = lock.clone().lock_owned().await;
    Making {
        key,
        lock,
        _held: Some(held),
        all,
    }
}

/// What a page in making is locked under: the page and the stamp of the versions it is made
/// from (mixed into the key's first bytes).
fn making_key(key: &[u8; 32], stamp: i64) -> [u8; 32] {
    let mut making = *key;
    for (byte, mix) in making.iter_mut().zip(stamp.to_le_bytes()) {
        *byte ^= mix;
    }
    making
}

/// A new page cache of at most `bytes`.
pub(crate) fn page_cache(bytes: u64) -> PageCache {
    PageCache::with_weighter(1024, bytes, PageWeight)
}

/// The expanded relations from which a fresh read without its request's versions (a
/// command's) reads them: one statement more, and as many fewer as the expansions' rows are
/// found kept.
const EXPANSIONS_WORTH_THE_VERSIONS: usize = 2;

/// Whether a fresh page of `plan` ([`Store::render_fresh`]) reads its expansions under
/// versions when its request kept none: it needs a count, or expands enough relations that
/// their kept rows save more statements than the versions read costs.
pub(crate) fn fresh_page_reads_versions(plan: &ReadPlan) -> bool {
    !crate::read::counts_itself(plan)
        || expansions(&plan.selection) >= EXPANSIONS_WORTH_THE_VERSIONS
}

/// The versions a fresh page of `plan` reads its expansions under, when it reads under any
/// ([`fresh_page_reads_versions`]): for every relation it expands, at every depth, those of
/// the tables [`crate::related`] stamps the relation's rows with (its own and what the
/// viewer's scope over it reads). A write's answer reads only these
/// ([`crate::versions::folded_statement_of`]); one missed here only costs its relation's
/// rows a statement ([`Versions::know_all`]).
pub(crate) fn versions_its_expansions_read(
    plan: &ReadPlan,
    viewer: &Viewer,
) -> Option<Vec<&'static str>> {
    fn add(
        selection: &brandhub_query::plan::Selection,
        viewer: &Viewer,
        names: &mut BTreeSet<&'static str>,
    ) {
        for selected in &selection.relations {
            let Some(sub) = &selected.expanded else {
                continue;
            };
            let target = catalog().target(selected.relation);
            names.extend(tables_read(target, &viewer.scope(target)));
            add(sub, viewer, names);
        }
    }
    if !fresh_page_reads_versions(plan) {
        return None;
    }
    let mut names = BTreeSet::new();
    add(&plan.selection, viewer, &mut names);
    Some(names.into_iter().collect())
}

/// How many relations a selection expands, at every depth.
fn expansions(selection: &brandhub_query::plan::Selection) -> usize {
    selection
        .relations
        .iter()
        .filter_map(|relation| relation.expanded.as_ref())
        .map(|sub| 1 + expansions(sub))
        .sum()
}

/// What identifies a page's listing: who sees it and the statement that reads its records
/// (filter, order, paging).
fn listing_key(plan: &ReadPlan, viewer: &Viewer) -> Sha256 {
    let mut hasher = Sha256::new();
    hasher.update(viewer.cache_key().as_bytes());
    hasher.update([0]);
    hasher.update(
        page_statement(plan, PageStrategy::InOrder)
            .to_string(SqliteQueryBuilder)
            .as_bytes(),
    );
    hasher
}

/// What identifies a rendered page: its listing and what it shows of the records.
fn page_key(listing: &Sha256, plan: &ReadPlan) -> [u8; 32] {
    let mut hasher = listing.clone();
    hasher.update([0]);
    hasher.update(plan.selection.signature().as_bytes());
    hasher.finalize().into()
}

impl Store {
    /// The rendered page kept under `key`, if it was rendered at `stamp` (counted as a hit).
    fn rendered(&self, key: &[u8; 32], stamp: i64) -> Option<RenderedPage> {
        let cached = self.pages.get(key).filter(|cached| cached.stamp == stamp)?;
        let Kept::Rendered(page) = &cached.kept else {
            return None;
        };
        self.tallies.page.record(true);
        Some(page.clone())
    }

    /// The rendered envelope of a plan's page read from the database, neither looked up in
    /// nor kept in the page cache: for the answer of a write and the checks before one. Those
    /// name records just written (no cached page is true for them) in a form no reader asks
    /// for again soon; kept, they would only push out the pages that readers do ask for.
    /// A first page by ids is read under the request's own versions with what its writes
    /// bumped unknown ([`Timing::versions_after_writes`]): its expansions of tables it did not
    /// write may come from [`crate::related`] without a statement. Without the request's
    /// versions (a command's write), they are read only when the page needs a count or expands
    /// relations enough that their kept rows save more statements than the read costs.
    pub async fn render_fresh(
        &self,
        plan: &ReadPlan,
        viewer: &Viewer,
        timing: &Timing,
    ) -> StoreResult<RenderedPage> {
        let versions = self.versions_of_fresh(plan, timing).await?;
        let data = self.read_page(plan, viewer, &versions, timing).await?;
        Ok(RenderedPage::of(plan, &data))
    }

    /// Has the commit of `tx`, a write of `plan`'s table, read `plan`'s page (a by-id answer)
    /// with the rows it wrote, and the versions its expansions read under
    /// ([`versions_its_expansions_read`]); [`Store::render_read_by_write`] renders it after.
    pub(crate) fn answer_within(
        &self,
        tx: &mut crate::db::WriteTx,
        plan: &ReadPlan,
        viewer: &Viewer,
    ) {
        let columns = node_columns(&plan.selection, None);
        tx.answer_with(
            plan.resource.table,
            page_statement(plan, self.pinned_strategy()),
            kinds(&columns),
            versions_its_expansions_read(plan, viewer),
        );
    }

    /// [`Store::render_fresh`] of a by-id plan whose records a write's own statement read
    /// (`rows`, the page's columns: [`Store::answer_within`]): only its expansions are read.
    pub(crate) async fn render_read_by_write(
        &self,
        plan: &ReadPlan,
        rows: Vec<Vec<brandhub_catalog::Cell>>,
        viewer: &Viewer,
        timing: &Timing,
    ) -> StoreResult<RenderedPage> {
        let versions = self.versions_of_fresh(plan, timing).await?;
        let data = self
            .page_of_rows(plan, rows, viewer, &versions, timing)
            .await?;
        Ok(RenderedPage::of(plan, &data))
    }

    /// The versions a fresh page reads its expansions under ([`Store::render_fresh`]).
    async fn versions_of_fresh(&self, plan: &ReadPlan, timing: &Timing) -> StoreResult<Versions> {
        Ok(match timing.versions_after_writes() {
            Some(versions) if crate::read::counts_itself(plan) => versions,
            _ if !fresh_page_reads_versions(plan) => Versions::default(),
            _ => self.versions(timing).await?,
        })
    }

    /// The rendered envelope of a plan's page: from the cache while it is true, else read,
    /// rendered and remembered. A page made stale by a write that changed only what its
    /// records hold (not which records it lists, or their order) is read again by its ids,
    /// without counting or searching.
    pub async fn render_page(
        &self,
        plan: &ReadPlan,
        viewer: &Viewer,
        versions: &Versions,
        timing: &Timing,
    ) -> StoreResult<RenderedPage> {
        let stamp = versions.stamp(&page_tables(plan, viewer));
        let listing = listing_key(plan, viewer);
        let key = page_key(&listing, plan);
        if let Some(page) = self.rendered(&key, stamp) {
            return Ok(page);
        }
        // Another request may be making this very page: wait for it, then look again.
        let _making = match &self.pages_in_making {
            Some(all) => Some(make_in_turn(all, making_key(&key, stamp)).await),
            None => None,
        };
        if let Some(page) = self.rendered(&key, stamp) {
            return Ok(page);
        }
        if let Some(page) = self.rechecked(plan, &key, stamp, versions, timing).await? {
            return Ok(page);
        }
        self.tallies.page.record(false);
        // By-id reads find their records by the primary key already: no listing for them.
        let listing: [u8; 32] = listing.finalize().into();
        let listing_stamp =
            (!plan.filter.pins_ids()).then(|| versions.stamp(&crate::versions::listing_keys(plan)));
        let known = match listing_stamp {
            Some(listing_stamp) => {
                self.listing_kept(plan, &listing, listing_stamp, versions, timing)
                    .await?
            }
            None => None,
        };
        let data = match known.as_deref() {
            Some(CachedPage {
                kept: Kept::Listing { ids, found },
                ..
            }) => {
                self.tallies.listing.record(true);
                self.read_listed(plan, ids, *found, viewer, versions, timing)
                    .await?
            }
            _ => {
                if listing_stamp.is_some() {
                    self.tallies.listing.record(false);
                }
                let data = self.read_page(plan, viewer, versions, timing).await?;
                if let Some(listing_stamp) = listing_stamp {
                    let ids: Vec<String> = data
                        .root
                        .rows
                        .iter()
                        .filter_map(|row| row[0].as_text().map(str::to_string))
                        .collect();
                    let recheck = Recheck::of_listing(plan, &ids, versions);
                    let kept = Kept::Listing {
                        ids,
                        found: data.found,
                    };
                    self.pages.insert(
                        listing,
                        Arc::new(CachedPage {
                            stamp: listing_stamp,
                            kept,
                            recheck: Some(recheck),
                        }),
                    );
                }
                data
            }
        };
        let page = RenderedPage::of(plan, &data);
        self.pages.insert(
            key,
            Arc::new(CachedPage {
                stamp,
                kept: Kept::Rendered(page.clone()),
                recheck: Some(Recheck::of_page(plan, viewer, &data, versions)),
            }),
        );
        Ok(page)
    }

    /// The stale rendered page kept under `key`, if the rows written since it was made do not
    /// touch it ([`crate::recheck`]): then stamped anew and served.
    async fn rechecked(
        &self,
        plan: &ReadPlan,
        key: &[u8; 32],
        stamp: i64,
        versions: &Versions,
        timing: &Timing,
    ) -> StoreResult<Option<RenderedPage>> {
        let Some(cached) = self.pages.get(key) else {
            return Ok(None);
        };
        if !matches!(cached.kept, Kept::Rendered(_)) {
            return Ok(None);
        }
        let kept = self
            .kept_if_true(plan, key, cached, stamp, versions, timing)
            .await?;
        let Some(Kept::Rendered(page)) = kept.as_deref().map(|c| &c.kept) else {
            return Ok(None);
        };
        // Served from the cache: a hit of the page cache too.
        self.tallies.page.record(true);
        Ok(Some(page.clone()))
    }

    /// The listing kept under `key` if it was made at `stamp`, or if the rows written since
    /// do not move it ([`crate::recheck`]).
    async fn listing_kept(
        &self,
        plan: &ReadPlan,
        key: &[u8; 32],
        stamp: i64,
        versions: &Versions,
        timing: &Timing,
    ) -> StoreResult<Option<Arc<CachedPage>>> {
        let Some(cached) = self.pages.get(key) else {
            return Ok(None);
        };
        if cached.stamp == stamp {
            return Ok(Some(cached));
        }
        if !matches!(cached.kept, Kept::Listing { .. }) {
            return Ok(None);
        }
        self.kept_if_true(plan, key, cached, stamp, versions, timing)
            .await
    }

    /// A cached page or listing whose stamp is not `stamp`, judged against the rows written
    /// since ([`Store::judge_kept`]): as it is when it is newer than the request's versions,
    /// stamped anew (and kept so) when still true, else `None`.
    async fn kept_if_true(
        &self,
        plan: &ReadPlan,
        key: &[u8; 32],
        cached: Arc<CachedPage>,
        stamp: i64,
        versions: &Versions,
        timing: &Timing,
    ) -> StoreResult<Option<Arc<CachedPage>>> {
        let Some(recheck) = &cached.recheck else {
            return Ok(None);
        };
        let judged = self.judge_kept(plan, recheck, versions, timing).await?;
        if judged == Judged::Newer {
            return Ok(Some(cached));
        }
        let still = judged == Judged::StillTrue;
        self.tallies.recheck.record(still);
        if !still {
            return Ok(None);
        }
        let renewed = Arc::new(CachedPage {
            stamp,
            kept: cached.kept.clone(),
            recheck: Some(recheck.renewed(plan, versions)),
        });
        self.pages.insert(*key, renewed.clone());
        Ok(Some(renewed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brandhub_catalog::UserType;
    use brandhub_query::plan::plan_by_id;
    use brandhub_query::request::ReadRequest;

    #[test]
    fn a_write_answer_reads_the_versions_of_what_it_expands_and_of_the_scope_over_it() {
        let stock = catalog().get(brandhub_catalog::Res::Stock);
        let company = Viewer::new(UserType::Company, "U1", vec!["C1".into()], None, None);
        let plan = plan_by_id(stock, "S1", &ReadRequest::default(), &company).unwrap();
        let names = versions_its_expansions_read(&plan, &company).expect("expands enough");
        for table in ["variant", "warehouse", "product", "brand"] {
            assert!(names.contains(&table), "{table} in {names:?}");
        }
        assert!(
            !names.contains(&"stock"),
            "the table written is not: {names:?}"
        );
        let request = ReadRequest {
            fields: Some(vec!["id".into(), "inStock".into()]),
            ..ReadRequest::default()
        };
        let plain = plan_by_id(stock, "S1", &request, &company).unwrap();
        assert_eq!(
            versions_its_expansions_read(&plain, &company),
            None,
            "expands nothing"
        );
    }

    #[tokio::test]
    async fn a_page_in_making_keeps_the_next_request_waiting_and_is_forgotten_after() {
        let all = InMaking::default();
        let first = make_in_turn(&all, [1; 32]).await;
        // Another page is made meanwhile.
        drop(make_in_turn(&all, [2; 32]).await);
        let waiting = {
            let all = all.clone();
            tokio::spawn(async move {
                let _second = make_in_turn(&all, [1; 32]).await;
            })
        };
        tokio::task::yield_now().await;
        assert!(
            !waiting.is_finished(),
            "the second request waits for the first"
        );
        drop(first);
        waiting.await.unwrap();
        assert!(
            all.lock().unwrap().is_empty(),
            "no lock is kept once nobody waits"
        );
    }
}
