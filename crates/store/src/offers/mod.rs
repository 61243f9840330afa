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

/// The tables of the resources kept from `table` (`offer`, for `stock`): a write of `table`
/// is a write of those too, whose versions its commit bumps.
pub(crate) fn kept_from(table: &str) -> impl Iterator<Item = &'static str> + '_ {
    catalog()
        .resources()
        .iter()
        .filter(move |kept| {
            kept.kept_from
                .iter()
                .any(|source| catalog().get(*source).table == table)
        })
        .map(|kept| kept.table)
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
    )
}
