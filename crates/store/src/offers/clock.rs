//! Prices that start or end while nothing is written (docs/API.md, "Offers", dated changes):
//! the offers of a price record change at its `startDate` and `endDate`. Every `serve`
//! process ticks each second ([`Store::apply_price_dates`]); a tick derives again the offers
//! of the price records whose start or end fell since the last tick of any process, through
//! the executor like any write. The moment applied up to is one row, locked by the tick that
//! advances it: with several processes, one applies each moment and the others skip it (on
//! PostgreSQL `FOR UPDATE SKIP LOCKED`; SQLite has one writer at a time). The first tick of
//! a process applies what fell while none ran: one net change per offer, since the
//! derivation writes only offers whose values differ.

use super::derive::{DECIDED_BY_PRICE, Dialect, Drive, col, refresh_statement, table};
use crate::db::{Backend, Kind, Store};
use crate::error::StoreResult;
use crate::write::{EntryPoint, Outcome, WritePlan};
use brandhub_catalog::{Cell, Res};
use sea_query::QueryBuilder;
use sea_query_sqlx::{SqlxBinder, SqlxValues};

/// The `bh_meta` row that holds the moment dated prices are applied up to.
pub(crate) const APPLIED_UNTIL: &str = "offer_prices_applied_until";

/// A statement written as SQL text with its values bound: `{}` stands for each value, in
/// order, and becomes the backend's placeholder.
pub(crate) struct Raw {
    pub sql: String,
    pub values: Vec<sea_query::Value>,
}

impl SqlxBinder for Raw {
    fn build_sqlx<T: QueryBuilder>(&self, builder: T) -> (String, SqlxValues) {
        let (mark, numbered) = builder.placeholder();
        let mut sql = String::with_capacity(self.sql.len());
        let mut parts = self.sql.split("{}");
        sql.push_str(parts.next().unwrap_or_default());
        for (i, part) in parts.enumerate() {
            sql.push_str(mark);
            if numbered {
                sql.push_str(&(i + 1).to_string());
            }
            sql.push_str(part);
        }
        (sql, SqlxValues(sea_query::Values(self.values.clone())))
    }
}

/// The statement that makes the row of the moment applied, at the time of the migration
/// that made the offers (whose fill applied every price in effect then).
pub fn start_statement(backend: Backend) -> String {
    format!(
        "INSERT INTO \"bh_meta\" (\"name\", \"value\") VALUES ('{APPLIED_UNTIL}', {}) ON CONFLICT DO NOTHING",
        Dialect { backend }.now()
    )
}

/// The derivation of the offers of the price records whose start or end is in the
/// window (after the first value, up to the second), by (variant, host): the window's two
/// ends are bound twice, in [`due_values`]' order.
fn due_refresh(backend: Backend) -> Raw {
    let d = Dialect { backend };
    let start = col(Res::Price, "startDate");
    let end = col(Res::Price, "endDate");
    let due = |x: &str| {
        format!(
            "(({x}.{start} > {{}} AND {x}.{start} <= {{}}) OR ({x}.{end} > {{}} AND {x}.{end} <= {{}}))"
        )
    };
    // The variants of the prices due (by their dates' indexes), then the stores of the host
    // whose price of the variant is due: another host's stores keep their prices.
    let filter = format!(
        "v.\"id\" IN (SELECT x.{fk_variant} FROM {price} x WHERE {due_x}) \
         AND EXISTS (SELECT 1 FROM {price} y WHERE y.{fk_variant} = v.\"id\" AND y.{fk_host} = s.{store_host} AND {due_y})",
        price = table(Res::Price),
        fk_variant = col(Res::Price, "fk_variant"),
        fk_host = col(Res::Price, "fk_host"),
        store_host = col(Res::Store, "fk_host"),
        due_x = due("x"),
        due_y = due("y"),
    );
    Raw {
        sql: refresh_statement(&d, Drive::Variant, &filter, DECIDED_BY_PRICE),
        values: Vec::new(),
    }
}

/// The values of [`due_refresh`] for the window after `last` up to `now`.
fn due_values(last: &str, now: &str) -> Vec<sea_query::Value> {
    let window = [last, now, last, now];
    window.iter().chain(&window).map(|v| (*v).into()).collect()
}

/// Whether a text is a record timestamp as the database writes them: nothing else is
/// compared with price dates.
fn is_timestamp(text: &str) -> bool {
    chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S").is_ok()
}

impl Store {
    /// Applies the prices that started or ended since the last tick of any process: derives
    /// their offers again in one transaction (the executor's, [`EntryPoint::PriceDates`]) and
    /// moves the moment applied up to now. Returns how many offers changed; 0 when another
    /// process holds the moment (it applies it).
    pub async fn apply_price_dates(&self) -> StoreResult<u64> {
        let backend = self.backend();
        self.execute(WritePlan::locking(EntryPoint::PriceDates), move |mut tx, _| {
            Box::pin(async move {
                let result = async {
                    let lock = if backend == Backend::Postgres {
                        " FOR UPDATE SKIP LOCKED"
                    } else {
                        ""
                    };
                    let now_sql = Dialect { backend }.now();
                    let read = Raw {
                        sql: format!(
                            "SELECT \"value\", {now_sql} FROM \"bh_meta\" WHERE \"name\" = {{}}{lock}"
                        ),
                        values: vec![APPLIED_UNTIL.into()],
                    };
                    let rows = tx.fetch_statement(&read, &[Kind::Text, Kind::Text]).await?;
                    let Some([Cell::Text(last), Cell::Text(now)]) =
                        rows.into_iter().next().and_then(|r| <[Cell; 2]>::try_from(r).ok())
                    else {
                        return Ok(Outcome::RollBack(0));
                    };
                    if !is_timestamp(&last) || !is_timestamp(&now) || now <= last {
                        return Ok(Outcome::RollBack(0));
                    }
                    let mut refresh = due_refresh(backend);
                    refresh.values = due_values(&last, &now);
                    let changed = tx.execute_untracked(catalog_offer_table(), &refresh).await?;
                    if changed > 0 {
                        tx.touch(catalog_offer_table());
                    }
                    let advance = Raw {
                        sql: "UPDATE \"bh_meta\" SET \"value\" = {} WHERE \"name\" = {}".into(),
                        values: vec![now.into(), APPLIED_UNTIL.into()],
                    };
                    tx.execute_untracked("bh_meta", &advance).await?;
                    Ok(Outcome::Commit(changed))
                }
                .await;
                (tx, result)
            })
        })
        .await
    }
}

fn catalog_offer_table() -> &'static str {
    brandhub_catalog::catalog().get(Res::Offer).table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_due_price_derives_the_offers_of_its_own_hosts_stores_only() {
        for backend in [Backend::Sqlite, Backend::Postgres] {
            let refresh = due_refresh(backend);
            let values = due_values("2026-12-07T10:00:00", "2026-12-07T10:00:01");
            assert_eq!(refresh.sql.matches("{}").count(), values.len());
            // The stores' host is matched against a price of the variant that is itself due.
            let exists = refresh
                .sql
                .split("EXISTS (SELECT 1 FROM")
                .nth(1)
                .unwrap_or_default();
            assert!(
                exists.contains("y.\"start_date\" > {}") && exists.contains("y.\"end_date\" <= {}"),
                "{}",
                refresh.sql
            );
        }
    }
}
