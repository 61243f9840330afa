//! Per-table write versions: every committed write bumps the versions of the tables it wrote
//! (see [`crate::db::WriteTx::commit`]). A request reads all versions once ([`Versions`]);
//! anything cached for it (an authenticated key, a count, a rendered page) is stamped with the
//! sum of the versions of the tables it depends on. Versions only grow, so the sum changes
//! exactly when one of those tables was written, and nothing stale is ever served. The
//! versions live in the database, so this holds across server processes.

use crate::db::{Kind, Store, Timing};
use crate::error::StoreResult;
use brandhub_catalog::Cell;
use sea_query::{Alias, Expr, ExprTrait, Query, UpdateStatement};
use std::collections::HashMap;
use std::sync::LazyLock;

const TABLE: &str = "bh_table_version";

/// The name of a table's second version, of its rows rather than their contents: bumped by
/// every write that may insert or delete rows of the table, and not by an update, which
/// changes what rows hold but never how many there are. The count of every record of a
/// resource is stamped with it alone, so that `PATCH`es leave it cached. A table brandhub
/// does not version answers its own name (its one version).
pub fn rows_key(table: &'static str) -> &'static str {
    static KEYS: LazyLock<HashMap<&'static str, &'static str>> = LazyLock::new(|| {
        crate::schema::versioned_tables()
            .into_iter()
            .map(|table| {
                let key: &'static str = Box::leak(format!("{table}#rows").into_boxed_str());
                (table, key)
            })
            .collect()
    });
    KEYS.get(table).copied().unwrap_or(table)
}

/// `UPDATE bh_table_version SET version = version + 1 WHERE table_name IN (…)`.
pub fn bump_statement(tables: &[&'static str]) -> UpdateStatement {
    Query::update()
        .table(Alias::new(TABLE))
        .value(
            Alias::new("version"),
            Expr::col(Alias::new("version")).add(1),
        )
        .and_where(Expr::col(Alias::new("table_name")).is_in(tables.iter().copied()))
        .to_owned()
}

/// The write versions of every table, as read at one moment.
#[derive(Debug, Clone, Default)]
pub struct Versions {
    by_table: HashMap<String, i64>,
}

impl Versions {
    /// A number that changes whenever any of `tables` is written.
    pub fn stamp(&self, tables: &[&str]) -> i64 {
        let mut seen: Vec<&str> = Vec::with_capacity(tables.len());
        tables
            .iter()
            .filter(|t| {
                let fresh = !seen.contains(t);
                seen.push(t);
                fresh
            })
            .map(|t| self.by_table.get(*t).copied().unwrap_or(0))
            .sum()
    }
}

impl Store {
    /// Reads every table's version (one small statement per request).
    pub async fn versions(&self, timing: &Timing) -> StoreResult<Versions> {
        let statement = Query::select()
            .column(Alias::new("table_name"))
            .column(Alias::new("version"))
            .from(Alias::new(TABLE))
            .to_owned();
        let rows = self
            .fetch(&statement, &[Kind::Text, Kind::Integer], timing)
            .await?;
        let by_table = rows
            .into_iter()
            .filter_map(|row| match row.as_slice() {
                [Cell::Text(table), Cell::Integer(version)] => Some((table.clone(), *version)),
                _ => None,
            })
            .collect();
        Ok(Versions { by_table })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_counts_each_table_once_and_grows_with_any_write() {
        let mut versions = Versions::default();
        versions.by_table.insert("stock".into(), 3);
        versions.by_table.insert("variant".into(), 5);
        assert_eq!(versions.stamp(&["stock", "variant", "stock"]), 8);
        let before = versions.stamp(&["stock", "variant"]);
        *versions.by_table.get_mut("variant").unwrap() += 1;
        assert!(versions.stamp(&["stock", "variant"]) > before);
        assert_eq!(versions.stamp(&["stock"]), 3);
    }

    #[test]
    fn every_versioned_table_has_a_rows_key_and_others_their_own_version() {
        assert_eq!(rows_key("stock"), "stock#rows");
        assert_eq!(rows_key("bh_not_versioned"), "bh_not_versioned");
    }
}
