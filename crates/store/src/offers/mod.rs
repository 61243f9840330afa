//! Offers (docs/API.md, "Offers"): what each store can sell of each variant of its brand
//! store's brand, how many and at what price, kept by the database from the stock, the
//! prices, the catalogue and the brand stores' rules.
//!
//! - [`rules`]: the rules, as plain functions: what the tests and the property test hold the
//!   database's derivation to.
//! - [`derive`]: the derivation as one SQL upsert of the offers of some (brand store,
//!   variant) pairs, writing only those that changed.
//! - [`triggers`]: the triggers that run it for every write of a source, in that write's
//!   transaction, remove offers with their variant or brand store, and write the events.
//! - [`clock`]: prices that start or end while nothing is written: their offers change at
//!   that moment, applied once across processes.

pub(crate) mod clock;
pub(crate) mod derive;
pub mod rules;
pub(crate) mod triggers;

use crate::db::Backend;
use brandhub_catalog::catalog;
use std::collections::HashMap;
use std::sync::LazyLock;

/// The tables of the resources kept from `table` (`offer`, for `stock`): a write of `table`
/// is a write of those too, whose versions its commit bumps. Asked by every write of every
/// table, so read from a map made once from the catalog.
pub(crate) fn kept_from(table: &str) -> &'static [&'static str] {
    static KEPT: LazyLock<HashMap<&'static str, Vec<&'static str>>> = LazyLock::new(|| {
        let mut kept: HashMap<&'static str, Vec<&'static str>> = HashMap::new();
        for resource in catalog().resources() {
            for source in resource.kept_from {
                kept.entry(catalog().get(*source).table)
                    .or_default()
                    .push(resource.table);
            }
        }
        kept
    });
    KEPT.get(table).map_or(&[], Vec::as_slice)
}

/// The statements of a migration: the triggers, made again each time so that they follow the
/// catalog.
pub fn statements(backend: Backend) -> Vec<String> {
    triggers::statements(backend)
}

/// The statement that derives every offer (the first migration that makes the offer table
/// fills it with this).
pub fn fill_statement(backend: Backend) -> String {
    derive::refresh_statement(
        &derive::Dialect { backend },
        derive::Drive::BrandStore,
        "1 = 1",
        derive::Rewrites::Every,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_of_a_source_is_a_write_of_the_offers_and_of_nothing_else() {
        let offer = catalog().get(brandhub_catalog::Res::Offer).table;
        for source in [
            "stock",
            "price",
            "brand_store",
            "variant",
            "product",
            "store",
        ] {
            assert_eq!(kept_from(source), [offer], "{source}");
        }
        assert!(kept_from(offer).is_empty());
        assert!(kept_from("orders").is_empty());
    }
}
