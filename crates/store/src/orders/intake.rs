//! Order intake (docs/API.md, "Orders: intake, lifecycle and stock"): a host pushes an order with its lines in one request. Every
//! problem (the order's fields, each line's, the brand store, the variants, the amounts) is
//! gathered into one 422 before the write transaction begins (the brand store and the
//! variants are read before it); a second push of the same (brand store, hostOrderRef) is
//! 409 naming the order it already made, found before the transaction or, when pushes race,
//! by the pair's unique index in it. brandhub sets the id,
//! `brandOrderRef` (from blocks of a counter row in the database, so every process draws
//! distinct numbers), the warehouse, the statuses and the totals, and adds each line's quantity to
//! the demand of its variant in that warehouse, all in one transaction. With an
//! `Idempotency-Key` the key is claimed in that transaction too ([`crate::idempotency`]): a
//! second push with the same key writes nothing and answers the first answer again.

use super::machine::intake_moves;
use super::resource;
use crate::db::{Backend, Kind, Store, WriteTx};
use crate::error::{StoreError, StoreResult};
use crate::idempotency::KeptAnswer;
use crate::ids::{new_id, now_timestamp};
use crate::write::{Begin, EntryPoint, Outcome, WritePlan};
use brandhub_catalog::Res;
use brandhub_catalog::lifecycle::{Step, transition};
use brandhub_catalog::{Cell, Domain, Layout, Record, Resource};
use brandhub_problem::{FieldError, Words, words};
use brandhub_query::conditions::IdempotencyKey;
use brandhub_query::intake::Intake;
use brandhub_query::plan::Viewer;
use brandhub_query::sql::satisfying_ids;
use brandhub_query::text::fold;
use brandhub_query::write::WriteValues;
use sea_query::{Alias, Condition, Expr, ExprTrait, OnConflict, Query, SelectStatement};
use std::collections::HashMap;

/// The counter row `brandOrderRef` numbers are drawn from.
const COUNTER: &str = "brandOrderRef";
/// The bookkeeping table of counters (see `schema::bookkeeping_statements`).
pub const COUNTER_TABLE: &str = "bh_counter";

/// How far a given amount may be from the one brandhub computes.
const TOLERANCE: f64 = 0.01;

/// The brand store an intake names, as the caller sees it.
struct Target {
    id: String,
    brand: Option<String>,
    warehouse: Option<String>,
    /// The currency of the brand store's store: a line's when it gives none.
    currency: String,
    /// The order the brand store has under the intake's `hostOrderRef` already, when asked.
    pushed: Option<String>,
}

/// The column of the field at `path` of `resource`, named with its table.
fn column(resource: &'static brandhub_catalog::Resource, path: &str) -> Expr {
    let field = resource.field_at(path).expect("the intake's fields exist");
    Expr::col((
        Alias::new(resource.table),
        Alias::new(field.column.as_str()),
    ))
}

/// The 409 of a second push of the order `reference`, naming the order `existing` that the
/// brand store has under it.
fn pushed_twice(reference: &str, existing: &str) -> StoreError {
    StoreError::conflict(
        format!(
            "This brand store has an order with hostOrderRef '{reference}' already: id '{existing}'."
        ),
        "hostOrderRef",
    )
}

/// The order a brand store has under `reference` (text folded as stored), as a statement;
/// `brand_store` is the brand store's id, a value or a column of an outer statement.
fn order_under(brand_store: Expr, reference: &str) -> SelectStatement {
    let order = resource(Res::Order);
    let column = |path: &str| {
        let field = order.field_at(path).expect("an order's fields");
        let column = field
            .folded_column()
            .unwrap_or_else(|| field.column.clone());
        Expr::col((Alias::new(order.table), Alias::new(column)))
    };
    Query::select()
        .expr(column("id"))
        .from(Alias::new(order.table))
        .and_where(column("fk_brandStore").eq(brand_store))
        .and_where(column("hostOrderRef").eq(fold(reference)))
        .limit(1)
        .to_owned()
}

fn problem(
    field: impl Into<String>,
    message: impl Into<Words>,
    index: Option<usize>,
) -> FieldError {
    FieldError {
        field: field.into(),
        message: message.into(),
        index,
    }
}

fn number(values: &WriteValues, path: &str) -> Option<f64> {
    match values.cell(path)? {
        Cell::Number(n) => Some(*n),
        Cell::Integer(n) => Some(*n as f64),
        _ => None,
    }
}

/// An amount as money is kept (docs/API.md, "Quantities and amounts": two decimals), by the catalog's one rule.
fn round(amount: f64) -> f64 {
    Domain::SIGNED_MONEY.kept(amount)
}

/// Adds the problem of an amount brandhub computed (`what`, for the field `shown` of
/// `resource`'s `path`) when it lies outside the field's domain, as a given one would.
fn check_computed(
    resource: &Resource,
    path: &str,
    shown: &str,
    what: &str,
    amount: f64,
    index: Option<usize>,
    problems: &mut Vec<FieldError>,
) {
    let field = resource
        .field_at(path)
        .expect("the intake's amounts are fields");
    if let Some(message) = field.value_problem(&Cell::Number(amount)) {
        problems.push(problem(
            shown,
            Words::english(format!("{what}, {amount:.2}, ")).then(&message),
            index,
        ));
    }
}

/// A line's amounts: (net, tax, gross), or the problems with the given ones and with those
/// computed from them (each within the money domain, docs/API.md, "Quantities and amounts"). The quantity and the
/// price were held to their domains when the line was read.
fn amounts(values: &WriteValues, index: usize, problems: &mut Vec<FieldError>) -> (f64, f64, f64) {
    let item = resource(Res::OrderItem);
    let qty = match values.cell("orderQty") {
        Some(Cell::Integer(n)) => *n,
        _ => 0,
    };
    let price = number(values, "itemPrice").unwrap_or(0.0);
    let computed = round(qty as f64 * price);
    let computed_within = |path: &str, what: &str, amount: f64, problems: &mut Vec<FieldError>| {
        let shown = format!("order_orderItem.{path}");
        check_computed(item, path, &shown, what, amount, Some(index), problems);
    };
    let gross = match number(values, "lineGross") {
        Some(given) if (given - computed).abs() > TOLERANCE + 1e-9 => {
            problems.push(problem(
                "order_orderItem.lineGross",
                words!(
                    "{given} does not agree with orderQty × itemPrice = {computed:.2}",
                    "{given} stimmt nicht mit orderQty × itemPrice = {computed:.2} überein"
                ),
                Some(index),
            ));
            given
        }
        Some(given) => given,
        None => {
            computed_within("lineGross", "orderQty × itemPrice", computed, problems);
            computed
        }
    };
    let (net, tax) = match (number(values, "lineNet"), number(values, "lineTax")) {
        (Some(net), Some(tax)) => {
            if (net + tax - gross).abs() > TOLERANCE + 1e-9 {
                problems.push(problem(
                    "order_orderItem.lineNet",
                    words!(
                        "lineNet {net} + lineTax {tax} does not agree with lineGross {gross:.2}", "lineNet {net} + lineTax {tax} stimmt nicht mit lineGross {gross:.2} überein"
                    ),
                    Some(index),
                ));
            }
            (net, tax)
        }
        (Some(net), None) => {
            let tax = round(gross - net);
            computed_within("lineTax", "lineGross − lineNet", tax, problems);
            (net, tax)
        }
        (None, Some(tax)) => {
            let net = round(gross - tax);
            computed_within("lineNet", "lineGross − lineTax", net, problems);
            (net, tax)
        }
        (None, None) => (gross, 0.0),
    };
    (net, tax, gross)
}

impl Store {
    /// The 409 of a second push of the same order, naming the order the brand store has
    /// under `reference` already; `None` when it has none.
    async fn pushed_before(
        &self,
        brand_store: &str,
        reference: &str,
    ) -> StoreResult<Option<StoreError>> {
        let holder = order_under(Expr::val(brand_store), reference);
        let rows = self.fetch_in_request(&holder, &[Kind::Text]).await?;
        Ok(rows
            .first()
            .and_then(|r| r[0].as_text())
            .map(|existing| pushed_twice(reference, existing)))
    }
}

/// How many `brandOrderRef` numbers a process reserves at once: intakes then draw them from
/// memory instead of each taking the counter row's lock until it commits, which would make
/// every intake of every process wait for the one before it
/// (docs/decisions/0023-order-numbers-reserved-per-process.md).
const NUMBERS_RESERVED: i64 = 32;

impl WriteTx {
    /// Moves the counter row `n` numbers on and returns the last of them. The first
    /// reservation starts past the highest `BO-` reference already stored (the demo's).
    async fn reserve_order_numbers(&mut self, n: i64) -> StoreResult<i64> {
        // Every reservation but the first: one statement.
        let bump = Query::update()
            .table(Alias::new(COUNTER_TABLE))
            .value(Alias::new("value"), Expr::col(Alias::new("value")).add(n))
            .and_where(Expr::col(Alias::new("name")).eq(COUNTER))
            .returning_col(Alias::new("value"))
            .to_owned();
        if let Some(Cell::Integer(last)) = self
            .fetch_returning(None, &bump, &[Kind::Integer])
            .await?
            .first()
            .map(|r| &r[0])
        {
            return Ok(*last);
        }
        let order = resource(Res::Order);
        let highest = self
            .fetch(
                &Query::select()
                    .expr(Expr::col(Alias::new("brand_order_ref_ci")).max())
                    .from(Alias::new(order.table))
                    .and_where(Expr::col(Alias::new("brand_order_ref_ci")).like("bo-%"))
                    .to_owned(),
                &[Kind::Text],
            )
            .await?;
        let stored = highest
            .first()
            .and_then(|row| row[0].as_text())
            .and_then(|r| r.get(3..))
            .and_then(|n| n.parse::<i64>().ok())
            .unwrap_or(0);
        let mut on_conflict = OnConflict::column(Alias::new("name"));
        on_conflict.value(
            Alias::new("value"),
            Expr::col((Alias::new(COUNTER_TABLE), Alias::new("value"))).add(n),
        );
        let statement = Query::insert()
            .into_table(Alias::new(COUNTER_TABLE))
            .columns([Alias::new("name"), Alias::new("value")])
            .values_panic([COUNTER.into(), (stored + n).into()])
            .on_conflict(on_conflict)
            .returning_col(Alias::new("value"))
            .to_owned();
        let rows = self
            .fetch_returning(None, &statement, &[Kind::Integer])
            .await?;
        match rows.first().map(|r| &r[0]) {
            Some(Cell::Integer(last)) => Ok(*last),
            _ => Err(StoreError::Internal),
        }
    }
}

impl Store {
    /// The next `brandOrderRef` number: from this process's reserved block, else from a new
    /// block reserved in a transaction of its own (committed at once, before the intake's
    /// own transaction begins, so no intake holds the counter row). Numbers are unique across
    /// processes; a block a process did not use up, or a number drawn by an intake that was
    /// refused, is a gap.
    pub(crate) async fn next_order_number(&self) -> StoreResult<i64> {
        let mut numbers = self.order_numbers.lock().await;
        if let Some(number) = numbers.next() {
            return Ok(number);
        }
        let mut tx = self.begin_apart(EntryPoint::OrderNumbers).await?;
        let last = tx.reserve_order_numbers(NUMBERS_RESERVED).await?;
        tx.commit().await?;
        *numbers = (last - NUMBERS_RESERVED + 1)..(last + 1);
        numbers.next().ok_or(StoreError::Internal)
    }
}

impl Store {
    /// Creates the order of an intake for `viewer` (see the module docs); returns its id, or,
    /// when `key` was used before for the same request, what that request kept (nothing is
    /// written then).
    pub async fn intake_order(
        &self,
        intake: &Intake,
        viewer: &Viewer,
        key: Option<&IdempotencyKey>,
    ) -> StoreResult<Result<String, KeptAnswer>> {
        if !transition(Step::Intake).allows(viewer.user_type()) {
            return Err(StoreError::Refused(words!(
                "A {} user may not push orders: intake is for hosts (see the order lifecycle in the API reference).",
                "Ein Benutzer vom Typ {} darf keine Bestellungen senden: das tun Verkaufskanäle (siehe den Bestellablauf in der API-Referenz).",
                viewer.user_type().as_str()
            )));
        }
        let order = resource(Res::Order);
        let (brand_store, store, variant) = (
            resource(Res::BrandStore),
            resource(Res::Store),
            resource(Res::Variant),
        );
        let mut problems: Vec<FieldError> = intake.order.problems.clone();
        for line in &intake.lines {
            problems.extend(line.values.problems.iter().cloned());
        }
        // Drawn before the intake's transaction: see `next_order_number`.
        let number = self.next_order_number().await?;

        let reference = intake.order.text("hostOrderRef");
        // The brand store (one the caller sees: a host's, of one of its stores), its brand,
        // its warehouse and its store's currency, in one statement.
        let mut target: Option<Target> = None;
        if let Some(id) = intake.order.text("fk_brandStore") {
            // A second push of the same order, told in the same statement. With an
            // idempotency key the push may be the first one again, which the key's claim
            // answers: then the unique index of (brand store, hostOrderRef) refuses a second
            // order.
            let pushed: Expr = match (key, &reference) {
                (None, Some(reference)) => Expr::SubQuery(
                    None,
                    Box::new(order_under(column(brand_store, "id"), reference).into()),
                ),
                _ => Expr::val(Option::<String>::None),
            };
            let statement = Query::select()
                .expr(column(brand_store, "id"))
                .expr(column(brand_store, "fk_brand"))
                .expr(column(brand_store, "fk_warehouse"))
                .expr(column(store, "currency"))
                .expr(pushed)
                .from(Alias::new(brand_store.table))
                .left_join(
                    Alias::new(store.table),
                    column(store, "id").equals((
                        Alias::new(brand_store.table),
                        Alias::new(
                            brand_store
                                .field_at("fk_store")
                                .expect("a brand store's store")
                                .column
                                .as_str(),
                        ),
                    )),
                )
                .and_where(column(brand_store, "id").in_subquery(satisfying_ids(
                    brand_store,
                    std::slice::from_ref(&id),
                    &viewer.scope(brand_store),
                )))
                .to_owned();
            let rows = self
                .fetch_in_request(
                    &statement,
                    &[Kind::Text, Kind::Text, Kind::Text, Kind::Text, Kind::Text],
                )
                .await?;
            let text = |cell: &Cell| cell.as_text().map(str::to_string);
            match rows.first() {
                Some(row) => {
                    target = Some(Target {
                        id: text(&row[0]).unwrap_or_default(),
                        brand: text(&row[1]),
                        warehouse: text(&row[2]),
                        currency: text(&row[3]).unwrap_or_default(),
                        pushed: text(&row[4]),
                    })
                }
                None => problems.push(problem(
                    "fk_brandStore",
                    words!(
                        "no brandStore with id '{id}' exists for the caller",
                        "für den Aufrufer gibt es keinen brandStore mit der Kennung '{id}'"
                    ),
                    None,
                )),
            }
        }
        let brand = target.as_ref().and_then(|t| t.brand.clone());
        let warehouse = target.as_ref().and_then(|t| t.warehouse.clone());

        // The store's currency, for lines that give none.
        let currency = target
            .as_ref()
            .map(|t| t.currency.clone())
            .unwrap_or_default();

        // The variants, by id, barcode or the host's SKU (the offers of the brand store's),
        // within the brand store's brand.
        let mut variants: Vec<Option<String>> = vec![None; intake.lines.len()];
        let mut stock_ids: HashMap<String, String> = HashMap::new();
        if let Some(brand) = &brand {
            let skus = match &target {
                Some(target) => self.variants_by_sku(&target.id, intake).await?,
                None => HashMap::new(),
            };
            let ids: Vec<String> = intake
                .lines
                .iter()
                .filter_map(|l| l.values.text("fk_variant"))
                .chain(skus.values().cloned())
                .collect();
            let barcodes: Vec<String> = intake
                .lines
                .iter()
                .filter_map(|l| l.barcode.as_deref().map(fold))
                .collect();
            // Only the lists that hold something: an empty list's `IN ()` is rendered as a
            // comparison of two bound values, which the planner cannot see is false, and it
            // would then walk the brand's variants. No list, no statement.
            let named = Condition::any()
                .add_option((!ids.is_empty()).then(|| Expr::col(Alias::new("id")).is_in(ids)))
                .add_option(
                    (!barcodes.is_empty())
                        .then(|| Expr::col(Alias::new("barcode_ci")).is_in(barcodes)),
                );
            // With each variant on PostgreSQL, its stock record in the brand store's
            // warehouse, if it has one: the intake adds to it by id in the statement that
            // commits it (see `WriteTx::move_known_stock`). SQLite's intake is a
            // transaction, whose upsert finds the records itself.
            let stock = resource(Res::Stock);
            let stocked: Expr = match self.backend() {
                Backend::Postgres => Expr::SubQuery(
                    None,
                    Box::new(
                        Query::select()
                            .expr(column(stock, "id"))
                            .from(Alias::new(stock.table))
                            .and_where(column(stock, "fk_warehouse").eq(warehouse.clone()))
                            .and_where(
                                column(stock, "fk_variant")
                                    .equals((Alias::new(variant.table), Alias::new("id"))),
                            )
                            .to_owned()
                            .into(),
                    ),
                ),
                Backend::Sqlite => Expr::val(Option::<String>::None),
            };
            let rows = if named.is_empty() {
                Vec::new()
            } else {
                self.fetch_in_request(
                    &Query::select()
                        .columns([Alias::new("id"), Alias::new("barcode_ci")])
                        .expr(stocked)
                        .from(Alias::new(variant.table))
                        .and_where(Expr::col(Alias::new("fk_scope_brand")).eq(brand.as_str()))
                        .cond_where(named)
                        .to_owned(),
                    &[Kind::Text, Kind::Text, Kind::Text],
                )
                .await?
            };
            let found: Vec<(String, String)> = rows
                .iter()
                .map(|r| {
                    (
                        r[0].as_text().unwrap_or_default().to_string(),
                        r[1].as_text().unwrap_or_default().to_string(),
                    )
                })
                .collect();
            stock_ids.extend(
                rows.iter().filter_map(|r| {
                    Some((r[0].as_text()?.to_string(), r[2].as_text()?.to_string()))
                }),
            );
            for (index, line) in intake.lines.iter().enumerate() {
                if let Some(sku) = &line.host_sku {
                    let variant = skus
                        .get(sku)
                        .filter(|v| found.iter().any(|(id, _)| id == *v));
                    match variant {
                        Some(variant) => variants[index] = Some(variant.clone()),
                        None => problems.push(problem(
                            "order_orderItem.hostSku",
                            words!("no offer of the brand store has hostSku '{sku}' (letter case counts)", "kein Angebot des Markenshops hat hostSku '{sku}' (Groß- und Kleinschreibung zählt)"),
                            Some(index),
                        )),
                    }
                    continue;
                }
                let by_id = line.values.text("fk_variant");
                let by_barcode = line.barcode.as_deref().map(fold);
                let id_match = by_id
                    .as_ref()
                    .and_then(|id| found.iter().find(|(v, _)| v == id));
                let code_match = by_barcode
                    .as_ref()
                    .and_then(|b| found.iter().find(|(_, c)| c == b));
                match (&by_id, &by_barcode, id_match, code_match) {
                    (None, None, _, _) => {
                        if !line.values.has_problem("order_orderItem.fk_variant") {
                            problems.push(problem(
                                "order_orderItem.fk_variant",
                                words!("is required (or barcode, or hostSku)", "ist Pflicht (oder barcode, oder hostSku)"),
                                Some(index),
                            ))
                        }
                    }
                    (Some(id), _, None, _) => problems.push(problem(
                        "order_orderItem.fk_variant",
                        words!("no variant with id '{id}' exists in the brand store's brand", "in der Marke des Markenshops gibt es keine Variante mit der Kennung '{id}'"),
                        Some(index),
                    )),
                    (_, Some(_), _, None) => problems.push(problem(
                        "order_orderItem.barcode",
                        words!(
                            "no variant with barcode '{}' exists in the brand store's brand", "in der Marke des Markenshops gibt es keine Variante mit dem Barcode '{}'",
                            line.barcode.as_deref().unwrap_or_default()
                        ),
                        Some(index),
                    )),
                    (_, _, a, b) => variants[index] = a.or(b).map(|(v, _)| v.clone()),
                }
            }
        }

        // Amounts and totals.
        let mut line_amounts = Vec::with_capacity(intake.lines.len());
        for (index, line) in intake.lines.iter().enumerate() {
            line_amounts.push(amounts(&line.values, index, &mut problems));
        }
        let (net, tax, gross) = line_amounts
            .iter()
            .fold((0.0, 0.0, 0.0), |(n, t, g), (a, b, c)| {
                (n + a, t + b, g + c)
            });
        let (net, tax, gross) = (round(net), round(tax), round(gross));
        for (path, total) in [
            ("detail.net", net),
            ("detail.vat", tax),
            ("detail.gross", gross),
        ] {
            check_computed(
                order,
                path,
                path,
                "the sum of the lines",
                total,
                None,
                &mut problems,
            );
        }
        if !problems.is_empty() {
            problems.sort_by(|a, b| (a.index, &a.field).cmp(&(b.index, &b.field)));
            problems.dedup();
            return Err(StoreError::invalid(problems));
        }
        let (Some(target), Some(warehouse)) = (target, warehouse) else {
            return Err(StoreError::Internal);
        };

        // A second push of the same order, found with the brand store.
        if let (Some(reference), Some(existing)) = (&reference, &target.pushed) {
            return Err(pushed_twice(reference, existing));
        }

        // The writes, in one transaction. What they depend on was read before it (on SQLite,
        // writers take turns: reads inside would lengthen every turn); a brand store or
        // variant deleted meanwhile fails the insert's foreign key, a 409, and a push of the
        // same order made meanwhile fails the unique index, the 409 above.
        // The records, made before it.
        let made = intake_records(
            intake,
            &warehouse,
            &currency,
            (net, tax, gross),
            &variants,
            &line_amounts,
            number,
        );
        let known = Known {
            brand: &brand,
            variants: &variants,
            warehouse: &warehouse,
            stock_ids: &stock_ids,
        };
        let written = self.write_intake(&made, &known, key).await;
        let written = match written {
            Ok(Err(kept)) => return Ok(Err(kept)),
            Ok(Ok(())) => Ok(()),
            Err(error) => Err(error),
        };
        if let Err(error) = written {
            // A push of the same order committed since the check above (the unique index
            // waited for it), or, with a key, before: told as the check tells it. (The
            // transaction was given up with the error: this read waits for nothing of it.)
            if let (StoreError::Conflict { .. }, Some(reference)) = (&error, &reference)
                && let Some(conflict) = self.pushed_before(&target.id, reference).await?
            {
                return Err(conflict);
            }
            return Err(error);
        }
        Ok(Ok(made.order_id))
    }
}

impl Store {
    /// The variants of the offers of `brand_store` whose host's SKU lines of the intake name
    /// (compared exactly: SKUs are unique within a store, letter case counting), by SKU.
    async fn variants_by_sku(
        &self,
        brand_store: &str,
        intake: &Intake,
    ) -> StoreResult<HashMap<String, String>> {
        let skus: Vec<&str> = intake
            .lines
            .iter()
            .filter_map(|l| l.host_sku.as_deref())
            .filter(|sku| !sku.is_empty())
            .collect();
        if skus.is_empty() {
            return Ok(HashMap::new());
        }
        let offer = resource(Res::Offer);
        let rows = self
            .fetch_in_request(
                &Query::select()
                    .expr(column(offer, "hostSku"))
                    .expr(column(offer, "fk_variant"))
                    .from(Alias::new(offer.table))
                    .and_where(column(offer, "fk_brandStore").eq(brand_store))
                    .and_where(column(offer, "hostSku").is_in(skus))
                    .to_owned(),
                &[Kind::Text, Kind::Text],
            )
            .await?;
        Ok(rows
            .iter()
            .filter_map(|r| Some((r[0].as_text()?.to_string(), r[1].as_text()?.to_string())))
            .collect())
    }
}

/// An intake's order and lines as they will be written, and the stock they demand.
struct IntakeRecords {
    order: Record,
    lines: Vec<Record>,
    demand: Vec<(String, i64)>,
    order_id: String,
}

/// What an intake read before its transaction and its writes rely on.
struct Known<'k> {
    /// The variants' brand: the stock records' scope (fixed once a variant is made).
    brand: &'k Option<String>,
    variants: &'k [Option<String>],
    warehouse: &'k str,
    stock_ids: &'k HashMap<String, String>,
}

/// The records of an intake, made without I/O from its checked body and what was read:
/// the order (status `new`, its totals and `brandOrderRef`) and its accepted lines.
fn intake_records(
    intake: &Intake,
    warehouse: &str,
    currency: &str,
    (net, tax, gross): (f64, f64, f64),
    variants: &[Option<String>],
    line_amounts: &[(f64, f64, f64)],
    number: i64,
) -> IntakeRecords {
    let (order, item) = (resource(Res::Order), resource(Res::OrderItem));
    let now = now_timestamp();
    let o = Layout::of(order);
    let mut record = Record::empty(order);
    record.cells[0] = Cell::Text(new_id());
    for (field, cell) in &intake.order.cells {
        record.cells[o.cell(&field.path)] = cell.clone();
    }
    record.cells[o.cell("fk_warehouse")] = Cell::Text(warehouse.to_string());
    record.cells[o.cell("status")] = Cell::Text("new".into());
    if record.cells[o.cell("orderDate")].is_unset() {
        record.cells[o.cell("orderDate")] = Cell::Text(now.clone());
    }
    record.cells[o.cell("detail.net")] = Cell::Number(net);
    record.cells[o.cell("detail.vat")] = Cell::Number(tax);
    record.cells[o.cell("detail.gross")] = Cell::Number(gross);
    record.cells[o.cell("brandOrderRef")] = Cell::Text(format!("BO-{number:07}"));
    let order_id = record.id().to_string();

    let l = Layout::of(item);
    let mut lines = Vec::with_capacity(intake.lines.len());
    let mut demand = Vec::with_capacity(intake.lines.len());
    for ((line, variant), (net, tax, gross)) in intake.lines.iter().zip(variants).zip(line_amounts)
    {
        let mut r = Record::empty(item);
        r.cells[0] = Cell::Text(new_id());
        for (field, cell) in &line.values.cells {
            r.cells[l.cell(&field.path)] = cell.clone();
        }
        let variant = variant.clone().unwrap_or_default();
        r.cells[l.cell("fk_order")] = Cell::Text(order_id.clone());
        r.cells[l.cell("fk_variant")] = Cell::Text(variant.clone());
        r.cells[l.cell("hostSku")] = Cell::Text(line.host_sku.clone().unwrap_or_default());
        r.cells[l.cell("lineNet")] = Cell::Number(*net);
        r.cells[l.cell("lineTax")] = Cell::Number(*tax);
        r.cells[l.cell("lineGross")] = Cell::Number(*gross);
        r.cells[l.cell("shipQty")] = Cell::Integer(0);
        r.cells[l.cell("returnQty")] = Cell::Integer(0);
        r.cells[l.cell("status")] = Cell::Text("ACC".into());
        if r.cells[l.cell("currency")].is_unset() {
            r.cells[l.cell("currency")] = Cell::Text(currency.to_string());
        }
        if let Cell::Integer(qty) = r.cells[l.cell("orderQty")] {
            demand.push((variant, qty));
        }
        lines.push(r);
    }
    IntakeRecords {
        order: record,
        lines,
        demand,
        order_id,
    }
}

impl Store {
    /// An intake's records written as one plan: the key claimed (its kept answer when it was
    /// used before), the order, its lines and the stock they demand.
    async fn write_intake(
        &self,
        made: &IntakeRecords,
        known: &Known<'_>,
        key: Option<&IdempotencyKey>,
    ) -> StoreResult<Result<(), KeptAnswer>> {
        let (order, item, variant) = (
            resource(Res::Order),
            resource(Res::OrderItem),
            resource(Res::Variant),
        );
        // Without a key, on PostgreSQL, the writes and their bookkeeping are one statement
        // that commits itself ([`Begin::Optimistic`]): the version rows stay locked for that
        // statement only. Nothing it writes depends on a row it read but the stock records',
        // and those it adds to ([`WriteTx::move_known_stock`]).
        let begin = match key {
            Some(_) => Begin::Locking,
            None => Begin::Optimistic,
        };
        let plan = WritePlan::once(EntryPoint::Intake, begin);
        self.execute(plan, |mut tx, _| {
            let (mut record, mut lines) = (made.order.clone(), made.lines.clone());
            Box::pin(async move {
                let stepped = async {
                    if let Some(key) = key
                        && let Some(kept) = tx.claim_key(key).await?
                    {
                        return Ok(Outcome::RollBack(Err(kept)));
                    }
                    // Not read again inside the transaction.
                    if let Some(brand) = known.brand {
                        for id in known.variants.iter().flatten() {
                            tx.knows(variant, id, "fk_scopeBrand", brand);
                        }
                    }
                    // The order and its lines go with the stock's statement (on SQLite, one
                    // round trip of the write turn for the three), so a unique key they find
                    // taken is that statement's error, or the commit's. The stock last:
                    // concurrent intakes of the same variants wait on those stock rows'
                    // locks only from their update to the commit.
                    tx.insert_records_with_next(order, std::slice::from_mut(&mut record))
                        .await?;
                    tx.insert_records_with_next(item, &mut lines).await?;
                    let moves = intake_moves(&made.demand)?;
                    tx.move_known_stock(known.warehouse, &moves, known.stock_ids)
                        .await?;
                    if let Some(key) = key {
                        tx.keep_written(key, &[(made.order_id.clone(), true)])
                            .await?;
                    }
                    Ok(Outcome::Commit(Ok(())))
                }
                .await;
                (tx, stepped)
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use crate::{Store, StoreOptions};

    async fn open(url: &str) -> Store {
        Store::connect(&StoreOptions {
            url: url.to_string(),
            max_connections: 2,
            page_cache_bytes: 0,
            matches_first_limit: 40,
            pg_settings: Vec::new(),
            database_wait: crate::db::DEFAULT_DATABASE_WAIT,
        })
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn two_processes_on_one_database_never_draw_the_same_order_number() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("numbers.db").display());
        let first = open(&url).await;
        first.migrate().await.unwrap();
        let second = open(&url).await;
        let mut drawn = Vec::new();
        let (mut last_first, mut last_second) = (0, 0);
        for turn in 0..150 {
            // Uneven turns, so each process runs out of its block at other moments.
            if turn % 3 == 0 {
                let n = first.next_order_number().await.unwrap();
                assert!(n > last_first, "numbers grow within a process");
                last_first = n;
                drawn.push(n);
            } else {
                let n = second.next_order_number().await.unwrap();
                assert!(n > last_second, "numbers grow within a process");
                last_second = n;
                drawn.push(n);
            }
        }
        let mut distinct = drawn.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), drawn.len(), "a number was drawn twice");
        assert!(distinct[0] >= 1);
    }
}
