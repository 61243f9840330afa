//! The rows of expanded relations, kept while they are still true. A page's expansions read
//! other tables than the page itself: a stock record's warehouse, its variant, the variant's
//! product and the product's brand. A write of a stock record makes its pages stale (they are
//! read again), but not those four records, which no write since has touched. Each expansion
//! statement's rows are kept under the statement (its text and bound values, so the caller's
//! scope and the keys asked for are part of it) with the stamp of the tables it reads (the
//! relation's table and those of the caller's scope over it, [`tables_read`]); read again
//! with the same stamp, they are the same rows. Like pages ([`crate::page`]), they are kept
//! in this process's memory, bounded by their size, and checked against the versions each
//! request reads from the database, so no process serves rows another process's write made
//! stale.

use crate::db::{Kind, Store, Timing};
use crate::error::StoreResult;
use crate::versions::Versions;
use brandhub_catalog::{Cell, Resource};
use brandhub_query::plan::Predicate;
use brandhub_query::sql::tables_read;
use sea_query::{SelectStatement, SqliteQueryBuilder};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// Rows of one expansion statement and the stamp they were read at.
#[derive(Debug)]
pub(crate) struct KeptRows {
    stamp: i64,
    rows: Vec<Vec<Cell>>,
}

/// Weighs kept rows by their size, so the cache is bounded in bytes.
#[derive(Debug, Clone, Default)]
pub(crate) struct RowsWeight;

impl quick_cache::Weighter<[u8; 32], Arc<KeptRows>> for RowsWeight {
    fn weight(&self, _key: &[u8; 32], value: &Arc<KeptRows>) -> u64 {
        let cells: usize = value
            .rows
            .iter()
            .flatten()
            .map(|cell| 32 + cell.as_text().map_or(0, str::len))
            .sum();
        (cells + 64) as u64
    }
}

/// The expansion rows cache type held by the store.
pub(crate) type RelatedCache = quick_cache::sync::Cache<[u8; 32], Arc<KeptRows>, RowsWeight>;

/// The share of the page cache's bytes ([`crate::db::StoreOptions::page_cache_bytes`]) that
/// expansion rows may hold besides: none when pages are not cached either.
pub(crate) const SHARE_OF_PAGE_CACHE: u64 = 4;

/// A cache of expansion rows of `bytes` at most; `None` for none.
pub(crate) fn related_cache(page_cache_bytes: u64) -> Option<Arc<RelatedCache>> {
    let bytes = page_cache_bytes / SHARE_OF_PAGE_CACHE;
    (bytes > 0).then(|| Arc::new(RelatedCache::with_weighter(1024, bytes, RowsWeight)))
}

/// What identifies an expansion statement's rows: its text with its values written in, as
/// pages are keyed ([`crate::page`]).
fn key_of(statement: &SelectStatement) -> [u8; 32] {
    Sha256::digest(statement.to_string(SqliteQueryBuilder).as_bytes()).into()
}

impl Store {
    /// The rows of `statement`, an expansion of `resource` within `scope`: kept ones while
    /// the tables it reads are as `versions` found them, else read and kept. Versions not read
    /// from the database (an export's, a command's write answer that expands little) neither
    /// find nor keep rows, nor does a write's answer that reads a table the write changed.
    pub(crate) async fn fetch_related(
        &self,
        statement: &SelectStatement,
        kinds: &[Kind],
        (resource, scope): (&'static Resource, &Predicate),
        versions: &Versions,
        timing: &Timing,
    ) -> StoreResult<Vec<Vec<Cell>>> {
        let Some(cache) = self.related.as_ref() else {
            return self.fetch(statement, kinds, timing).await;
        };
        let tables = tables_read(resource, scope);
        if !versions.know_all(&tables) {
            return self.fetch(statement, kinds, timing).await;
        }
        let stamp = versions.stamp(&tables);
        let key = key_of(statement);
        if let Some(kept) = cache.get(&key)
            && kept.stamp == stamp
        {
            self.tallies.related.record(true);
            return Ok(kept.rows.clone());
        }
        self.tallies.related.record(false);
        // Read after the versions were: rows at least as new as the stamp says.
        let rows = self.fetch(statement, kinds, timing).await?;
        cache.insert(
            key,
            Arc::new(KeptRows {
                stamp,
                rows: rows.clone(),
            }),
        );
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sea_query::{Alias, Expr, ExprTrait, Query};

    fn statement(id: &str) -> SelectStatement {
        Query::select()
            .column(Alias::new("id"))
            .from(Alias::new("variant"))
            .and_where(Expr::col(Alias::new("id")).is_in([id]))
            .to_owned()
    }

    #[test]
    fn statements_are_told_apart_by_their_values_as_well_as_their_text() {
        assert_eq!(key_of(&statement("A")), key_of(&statement("A")));
        assert_ne!(key_of(&statement("A")), key_of(&statement("B")));
        let mut other = statement("A");
        other.column(Alias::new("barcode"));
        assert_ne!(key_of(&statement("A")), key_of(&other));
    }

    #[test]
    fn no_rows_are_kept_when_no_page_is() {
        assert!(related_cache(0).is_none());
        assert!(related_cache(32 << 20).is_some());
    }
}
