//! How an offer is derived from its sources, as SQL the database runs (docs/API.md, "Offers"):
//! one statement that computes the offers of some (brand store, variant) pairs from the
//! brand store, its store, the variant, its product, the warehouse's stock and the prices,
//! and writes those whose values changed, by an upsert on (brand store, variant).
//!
//! The triggers of [`super::triggers`] run it for the pairs a write of a source touches, the
//! clock of dated prices ([`super::clock`]) for the pairs whose price record started or ended.
//! The rules it computes are [`super::rules`]'s, which the tests hold it to.

use crate::db::Backend;
use brandhub_catalog::{Res, Resource, catalog};

/// The quoted column of the field at `path` of `res`.
pub(crate) fn col(res: Res, path: &str) -> String {
    format!("\"{}\"", field(catalog().get(res), path).column)
}

/// The quoted folded copy of the text field at `path` of `res`.
pub(crate) fn folded(res: Res, path: &str) -> String {
    let column = field(catalog().get(res), path)
        .folded_column()
        .unwrap_or_else(|| panic!("{res}.{path} is a text field with a folded copy"));
    format!("\"{column}\"")
}

fn field<'a>(resource: &'a Resource, path: &str) -> &'a brandhub_catalog::Field {
    resource
        .field_at(path)
        .unwrap_or_else(|| panic!("{}.{path} is declared", resource.name))
}

/// The quoted table of `res`.
pub(crate) fn table(res: Res) -> String {
    format!("\"{}\"", catalog().get(res).table)
}

/// What a dialect spells differently.
pub(crate) struct Dialect {
    pub backend: Backend,
}

impl Dialect {
    /// The current time as a record timestamp (`YYYY-MM-DDTHH:MM:SS`, UTC).
    pub fn now(&self) -> &'static str {
        match self.backend {
            Backend::Postgres => {
                "to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS')"
            }
            Backend::Sqlite => "strftime('%Y-%m-%dT%H:%M:%S', 'now')",
        }
    }

    /// The current time in milliseconds since the Unix epoch.
    pub fn now_millis(&self) -> &'static str {
        match self.backend {
            Backend::Postgres => "(extract(epoch FROM clock_timestamp()) * 1000)::bigint",
            Backend::Sqlite => "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
        }
    }

    /// A new id in the contract's shape (32 uppercase hex characters), starting with the
    /// time in milliseconds, so that ids made later sort later, as brandhub's own do.
    pub fn new_id(&self) -> String {
        match self.backend {
            Backend::Postgres => format!(
                "upper(lpad(to_hex({}), 12, '0') || substr(md5(random()::text || clock_timestamp()::text), 1, 20))",
                self.now_millis()
            ),
            Backend::Sqlite => format!(
                "(printf('%012X', {}) || upper(hex(randomblob(10))))",
                self.now_millis()
            ),
        }
    }

    /// The larger of two values (neither null).
    pub fn greatest(&self, a: &str, b: &str) -> String {
        match self.backend {
            Backend::Postgres => format!("GREATEST({a}, {b})"),
            Backend::Sqlite => format!("max({a}, {b})"),
        }
    }

    /// The smaller of two values (neither null).
    pub fn least(&self, a: &str, b: &str) -> String {
        match self.backend {
            Backend::Postgres => format!("LEAST({a}, {b})"),
            Backend::Sqlite => format!("min({a}, {b})"),
        }
    }

    /// `a` differs from `b`, nulls compared as values.
    pub fn differs(&self, a: &str, b: &str) -> String {
        match self.backend {
            Backend::Postgres => format!("{a} IS DISTINCT FROM {b}"),
            Backend::Sqlite => format!("{a} IS NOT {b}"),
        }
    }
}

/// How a brand store offers stock, folded: `live` (also when empty), `fixed` or `none`.
fn stock_type() -> String {
    format!(
        "lower(COALESCE(bs.{}, ''))",
        col(Res::BrandStore, "detail.stockType")
    )
}

/// The quantity an offer makes available, over the alias `bs` (its brand store) and
/// `on_hand` (SQL of the units the warehouse has available of its variant, never null): by the
/// brand store's stock type; live stock is the share (rounded down), less the buffer (never
/// below 0), capped.
fn available_value(d: &Dialect, on_hand: &str) -> String {
    let bs = |path: &str| format!("bs.{}", col(Res::BrandStore, path));
    let stock_type = stock_type();
    let shared = format!(
        "({on_hand} * COALESCE({}, 100)) / 100",
        bs("detail.stockPercent")
    );
    let buffered = d.greatest(
        "0",
        &format!("{shared} - COALESCE({}, 0)", bs("detail.stockBuffer")),
    );
    let capped = format!(
        "CASE WHEN {max} IS NULL THEN {buffered} ELSE {least} END",
        max = bs("detail.stockMax"),
        least = d.least(&buffered, &bs("detail.stockMax"))
    );
    format!(
        "CASE WHEN {stock_type} = 'none' THEN 0 WHEN {stock_type} = 'fixed' THEN COALESCE({}, 0) ELSE {capped} END",
        bs("detail.fixedQuantity")
    )
}

/// An offer's status (`inactive`, else `outOfStock` when nothing is available, else `active`)
/// from the SQL that says it is inactive and the SQL of its quantity available.
fn status_value(inactive: &str, available: &str) -> String {
    format!(
        "CASE WHEN {inactive} THEN 'inactive' WHEN ({available}) = 0 THEN 'outOfStock' ELSE 'active' END"
    )
}

/// The offer fields the derivation writes, as (offer path, the SQL of its value) over the
/// aliases `bs` (brand store), `s` (store), `v` (variant), `p` (product), `st` (stock, left
/// joined) and `pr` (the price record in effect, left joined). Text fields come with their
/// folded copies, taken from their sources'.
fn derived_values(d: &Dialect) -> Vec<(String, String)> {
    let bs = |path: &str| format!("bs.{}", col(Res::BrandStore, path));
    let stock_type = stock_type();
    let adjust_type = format!("lower(COALESCE({}, ''))", bs("detail.adjustType"));
    let available = available_value(
        d,
        &format!("COALESCE(st.{}, 0)", col(Res::Stock, "available")),
    );
    let base = format!(
        "COALESCE(pr.{}, v.{})",
        col(Res::Price, "price"),
        col(Res::Variant, "detail.price")
    );
    // In whole cents, so that both backends and the rules' tests compute the same decimal:
    // the base and the adjustment are kept to two decimals, a percentage of cents rounds
    // half away from zero (never below 0 before rounding: a price is never negative).
    let cents = |x: &str| format!("CAST(round({x} * 100) AS BIGINT)");
    let base_cents = cents(&base);
    let adjust_cents = cents(&format!("COALESCE({}, 0)", bs("detail.adjustValue")));
    // A percentage counts from -100% to +100,000%, which keeps the product in 64 bits.
    let percent_cents = d.greatest("-10000", &d.least(&adjust_cents, "10000000"));
    let scaled = format!("({base_cents} * (10000 + {percent_cents}))");
    let adjusted_cents = format!(
        "CASE WHEN {adjust_type} = 'percent' THEN CASE WHEN {scaled} <= 0 THEN 0 ELSE (2 * {scaled} + 10000) / 20000 END \
         WHEN {adjust_type} = 'fixed' THEN {} ELSE {base_cents} END",
        d.greatest("0", &format!("{base_cents} + {adjust_cents}"))
    );
    let price = format!("CASE WHEN {base} IS NULL THEN NULL ELSE ({adjusted_cents}) / 100.0 END");
    let rrp = format!(
        "COALESCE(pr.{}, v.{}, v.{})",
        col(Res::Price, "rrp"),
        col(Res::Variant, "rrp"),
        col(Res::Variant, "detail.rrp")
    );
    let status = status_value(
        &format!(
            "lower(COALESCE(p.{}, '')) <> 'active' OR ({base}) IS NULL OR {stock_type} = 'none'",
            col(Res::Product, "status")
        ),
        &available,
    );
    let text = |path: &str, source: &str, res: Res, from: &str| {
        [
            (path.to_string(), format!("{source}.{}", col(res, from))),
            (
                format!("{path}#folded"),
                format!("{source}.{}", folded(res, from)),
            ),
        ]
    };
    let mut values = vec![
        ("fk_brandStore".to_string(), "bs.\"id\"".to_string()),
        (
            "fk_store".to_string(),
            format!("bs.{}", col(Res::BrandStore, "fk_store")),
        ),
        ("fk_variant".to_string(), "v.\"id\"".to_string()),
        (
            "fk_product".to_string(),
            format!("v.{}", col(Res::Variant, "fk_product")),
        ),
        (
            "fk_brand".to_string(),
            format!("bs.{}", col(Res::BrandStore, "fk_brand")),
        ),
    ];
    values.extend(text("barcode", "v", Res::Variant, "barcode"));
    values.extend(text("title", "p", Res::Product, "title"));
    values.extend(text("colour", "v", Res::Variant, "colour"));
    values.extend(text("size", "v", Res::Variant, "size"));
    values.extend(text("currency", "s", Res::Store, "currency"));
    values.extend([
        ("available".to_string(), available),
        ("price".to_string(), price),
        ("rrp".to_string(), rrp),
        (
            "priceStart".to_string(),
            format!("pr.{}", col(Res::Price, "startDate")),
        ),
        (
            "priceEnd".to_string(),
            format!(
                "CASE WHEN pr.{end} IS NULL OR pr.{end} = '' OR pr.{end} LIKE '0000%' THEN NULL ELSE pr.{end} END",
                end = col(Res::Price, "endDate")
            ),
        ),
        ("status".to_string(), status.clone()),
        ("status#folded".to_string(), format!("lower({status})")),
    ]);
    values
}

/// The physical column of a derived value's path (`title#folded` is `title`'s folded copy).
fn offer_column(path: &str) -> String {
    match path.strip_suffix("#folded") {
        Some(path) => folded(Res::Offer, path),
        None => col(Res::Offer, path),
    }
}

/// The fields whose change is announced (`offer.updated`): what a host acts on.
pub(crate) const ANNOUNCED: [&str; 4] = ["available", "price", "status", "hostSku"];

/// The assignments that mark an existing offer as changed by a derivation: a new date
/// changed and the next record version.
fn changed_marks(d: &Dialect) -> String {
    let offer = table(Res::Offer);
    let version = format!("\"{}\"", crate::schema::ROW_VERSION);
    format!(
        "{} = {}, {version} = {offer}.{version} + 1",
        col(Res::Offer, brandhub_catalog::UPDATED_DATE),
        d.now()
    )
}

/// Which columns a derivation writes over an offer that exists (a new offer gets every one).
/// SQLite updates every index on a column an `UPDATE` sets, changed or not, and each index
/// page it touches is a page more in the write-ahead log: a source that decides only some of
/// an offer's values rewrites only those (docs/decisions/0032-offer-rewrites-by-source.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rewrites {
    /// Every derived value: a brand store's, a variant's, a product's or a store's change. (A
    /// stock row moves only quantities, by [`quantities_statement`].)
    Every,
    /// Only these derived values (paths of [`derived_values`]).
    Only(&'static [&'static str]),
}

/// What a price record decides of its offers, and so what the clock decides when a price
/// starts or ends: the price in effect, its dates and the recommended retail price, and the
/// status (an offer without a price is inactive).
pub(crate) const DECIDED_BY_PRICE: Rewrites = Rewrites::Only(&[
    "price",
    "rrp",
    "priceStart",
    "priceEnd",
    "status",
    "status#folded",
]);

/// Which table a derivation starts from: the one its filter names by key. SQLite keeps the
/// order of a `CROSS JOIN` (its planner, without statistics of these joins, would otherwise
/// start from the brand stores and scan every variant of their brands for one stock row);
/// PostgreSQL plans `CROSS JOIN … WHERE` as the inner joins they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Drive {
    /// From variants: a stock row's, a price's, a variant's own, a product's.
    Variant,
    /// From brand stores: a brand store's own, a store's, every offer.
    BrandStore,
}

/// The statement that derives the offers of the (brand store, variant) pairs that `filter`
/// (SQL over the aliases of [`derived_values`]) admits and writes those that are new or
/// changed: one upsert, starting from `drive`. A changed offer gets a new `updatedDate` and
/// record version.
pub(crate) fn refresh_statement(
    d: &Dialect,
    drive: Drive,
    filter: &str,
    rewrites: Rewrites,
) -> String {
    let values = derived_values(d);
    let columns: Vec<String> = values.iter().map(|(path, _)| offer_column(path)).collect();
    let rewritten: Vec<String> = match rewrites {
        Rewrites::Every => columns.clone(),
        Rewrites::Only(paths) => paths.iter().map(|path| offer_column(path)).collect(),
    };
    let exprs: Vec<&str> = values.iter().map(|(_, sql)| sql.as_str()).collect();
    let updated = col(Res::Offer, brandhub_catalog::UPDATED_DATE);
    let offer = table(Res::Offer);
    let price = table(Res::Price);
    let in_effect = format!(
        "SELECT x.\"id\" FROM {price} x WHERE x.{fk_variant} = v.\"id\" AND x.{fk_host} = s.{store_host} \
         AND (x.{cur} = s.{store_cur} OR x.{cur} = '') AND x.{start} <= {now} \
         AND (x.{end} IS NULL OR x.{end} = '' OR x.{end} LIKE '0000%' OR x.{end} > {now}) \
         ORDER BY x.{start} DESC, CASE WHEN x.{cur} = '' THEN 1 ELSE 0 END LIMIT 1",
        fk_variant = col(Res::Price, "fk_variant"),
        fk_host = col(Res::Price, "fk_host"),
        store_host = col(Res::Store, "fk_host"),
        cur = folded(Res::Price, "currency"),
        store_cur = folded(Res::Store, "currency"),
        start = col(Res::Price, "startDate"),
        end = col(Res::Price, "endDate"),
        now = d.now(),
    );
    let changed: Vec<String> = rewritten
        .iter()
        .map(|c| d.differs(&format!("{offer}.{c}"), &format!("excluded.{c}")))
        .collect();
    let set: Vec<String> = rewritten
        .iter()
        .filter(|c| *c != &col(Res::Offer, "fk_brandStore") && *c != &col(Res::Offer, "fk_variant"))
        .map(|c| format!("{c} = excluded.{c}"))
        .collect();
    let tables = (
        table(Res::Variant),
        table(Res::BrandStore),
        table(Res::Store),
        table(Res::Product),
    );
    let from = match drive {
        Drive::Variant => format!(
            "{} v CROSS JOIN {} bs CROSS JOIN {} s CROSS JOIN {} p",
            tables.0, tables.1, tables.2, tables.3
        ),
        Drive::BrandStore => format!(
            "{} bs CROSS JOIN {} s CROSS JOIN {} v CROSS JOIN {} p",
            tables.1, tables.2, tables.0, tables.3
        ),
    };
    let joined = format!(
        "s.\"id\" = bs.{} AND v.{} = bs.{} AND p.\"id\" = v.{}",
        col(Res::BrandStore, "fk_store"),
        col(Res::Variant, "fk_scopeBrand"),
        col(Res::BrandStore, "fk_brand"),
        col(Res::Variant, "fk_product"),
    );
    format!(
        "INSERT INTO {offer} (\"id\", {columns}, {updated}) \
         SELECT {id}, {exprs}, {now} \
         FROM {from} \
         LEFT JOIN {stock} st ON st.{st_warehouse} = bs.{bs_warehouse} AND st.{st_variant} = v.\"id\" \
         LEFT JOIN {price} pr ON pr.\"id\" = ({in_effect}) \
         WHERE {joined} AND {filter} \
         ON CONFLICT ({key_bs}, {key_v}) DO UPDATE SET {set}, {marks} \
         WHERE {changed}",
        from = from,
        joined = joined,
        columns = columns.join(", "),
        id = d.new_id(),
        exprs = exprs.join(", "),
        now = d.now(),
        stock = table(Res::Stock),
        st_warehouse = col(Res::Stock, "fk_warehouse"),
        bs_warehouse = col(Res::BrandStore, "fk_warehouse"),
        st_variant = col(Res::Stock, "fk_variant"),
        key_bs = col(Res::Offer, "fk_brandStore"),
        key_v = col(Res::Offer, "fk_variant"),
        set = set.join(", "),
        marks = changed_marks(d),
        changed = changed.join(" OR "),
    )
}

/// The statement that moves the offers of changed stock rows to their new quantities. `row`
/// names a changed row: a SQLite trigger's `NEW` or `OLD`, or the alias of the transition
/// table that `rows` puts in the FROM clause (`changed c`); `removed` says the rows are gone,
/// so their offers have nothing available. It updates the quantity available and the status
/// of each offer of the row's variant in a brand store of its brand and warehouse, where they
/// changed. A stock row decides nothing else of an offer, and never whether it exists (a
/// (brand store, variant) pair has its offer from the brand store's or the variant's write),
/// so it rewrites those two values of existing rows without an upsert's derivation of the
/// rest; an offer that is `inactive` stays so, as no stock value decides that
/// (docs/decisions/0032-offer-rewrites-by-source.md).
pub(crate) fn quantities_statement(
    d: &Dialect,
    rows: Option<&str>,
    row: &str,
    removed: bool,
) -> String {
    let rows = rows
        .map(|rows| format!("{rows} CROSS JOIN "))
        .unwrap_or_default();
    let on_hand = if removed {
        "0".to_string()
    } else {
        format!("COALESCE({row}.{}, 0)", col(Res::Stock, "available"))
    };
    let offer = table(Res::Offer);
    let available = col(Res::Offer, "available");
    let status = col(Res::Offer, "status");
    let status_folded = folded(Res::Offer, "status");
    let new_status = status_value(&format!("{offer}.{status_folded} = 'inactive'"), "q.av");
    format!(
        "UPDATE {offer} SET {available} = q.av, {status} = {new_status}, {status_folded} = lower({new_status}), \
         {marks} \
         FROM (SELECT bs.\"id\" AS bs_id, v.\"id\" AS variant_id, {value} AS av \
               FROM {rows}{variant} v \
               JOIN {brand_store} bs ON bs.{bs_warehouse} = {row}.{st_warehouse} AND bs.{bs_brand} = v.{v_brand} \
               WHERE v.\"id\" = {row}.{st_variant}) q \
         WHERE {offer}.{key_bs} = q.bs_id AND {offer}.{key_v} = q.variant_id \
         AND ({available_changed} OR {status_changed})",
        marks = changed_marks(d),
        value = available_value(d, &on_hand),
        variant = table(Res::Variant),
        brand_store = table(Res::BrandStore),
        bs_warehouse = col(Res::BrandStore, "fk_warehouse"),
        bs_brand = col(Res::BrandStore, "fk_brand"),
        v_brand = col(Res::Variant, "fk_scopeBrand"),
        st_warehouse = col(Res::Stock, "fk_warehouse"),
        st_variant = col(Res::Stock, "fk_variant"),
        key_bs = col(Res::Offer, "fk_brandStore"),
        key_v = col(Res::Offer, "fk_variant"),
        available_changed = d.differs(&format!("{offer}.{available}"), "q.av"),
        status_changed = d.differs(&format!("{offer}.{status}"), &new_status),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refresh_names_every_derived_column_of_the_offer_table_once() {
        for backend in [Backend::Sqlite, Backend::Postgres] {
            let d = Dialect { backend };
            let sql = refresh_statement(&d, Drive::BrandStore, "bs.\"id\" = 'X'", Rewrites::Every);
            let table: Vec<String> =
                crate::schema::table_columns(catalog().get(Res::Offer), backend)
                    .into_iter()
                    .map(|(name, _)| format!("\"{name}\""))
                    .collect();
            for (path, _) in derived_values(&d) {
                let column = offer_column(&path);
                assert!(table.contains(&column), "{column} is a column of offer");
            }
            assert!(sql.contains("ON CONFLICT"));
        }
    }

    #[test]
    fn a_stock_row_rewrites_only_the_quantity_and_the_status_of_existing_offers() {
        for backend in [Backend::Sqlite, Backend::Postgres] {
            let d = Dialect { backend };
            let sql = quantities_statement(&d, Some("changed c"), "c", false);
            assert!(!sql.contains("INSERT"), "{sql}");
            let set = sql
                .split_once(" SET ")
                .and_then(|(_, rest)| rest.split_once(" FROM "))
                .expect("an UPDATE … FROM")
                .0;
            for decided in ["available", "status"] {
                let column = col(Res::Offer, decided);
                assert!(set.contains(&format!("{column} = ")), "{set}");
            }
            for other in ["title", "price", "barcode", "fk_store", "hostSku"] {
                let column = col(Res::Offer, other);
                assert!(
                    !set.contains(&column),
                    "a stock row rewrites {other}: {set}"
                );
            }
        }
    }

    #[test]
    fn a_price_rewrites_only_what_it_decides_of_an_existing_offer() {
        for backend in [Backend::Sqlite, Backend::Postgres] {
            let d = Dialect { backend };
            let update_of = |rewrites| {
                let sql = refresh_statement(&d, Drive::Variant, "v.\"id\" = 'X'", rewrites);
                sql.split_once("DO UPDATE SET")
                    .expect("an upsert")
                    .1
                    .to_string()
            };
            let price = update_of(DECIDED_BY_PRICE);
            let every = update_of(Rewrites::Every);
            for decided in ["price", "status"] {
                let column = col(Res::Offer, decided);
                assert!(
                    price.contains(&format!("{column} = excluded.{column}")),
                    "{price}"
                );
            }
            for other in ["title", "available", "barcode", "fk_store"] {
                let column = col(Res::Offer, other);
                assert!(
                    !price.contains(&format!("{column} = excluded.{column}")),
                    "a price rewrites {other}: {price}"
                );
                assert!(
                    every.contains(&format!("{column} = excluded.{column}")),
                    "{every}"
                );
            }
        }
    }
}
