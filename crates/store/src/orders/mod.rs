//! Orders (docs/API.md, "Orders: intake, lifecycle and stock"): a host's intake ([`intake`]), the lifecycle steps taken on an order
//! ([`machine`] decides them from the catalog's transition table, [`ask`] reads them from
//! JSON), and the stock that follows them. Every step, from an order PATCH, a dispatch array
//! or an orderDispatch file row, is loaded, decided and written by the code here, in the
//! caller's one [`WriteTx`]; stock moves are single atomic statements
//! (`demand = demand + ?`), so concurrent orders of one variant never lose an update.

pub mod intake;
pub mod machine;

use crate::db::{Kind, Store, WriteTx};
use crate::error::{StoreError, StoreResult};
use crate::ids::{new_id, now_timestamp};
use crate::write::{EntryPoint, Outcome as WriteOutcome, WritePlan, records_of};
use brandhub_catalog::Res;
use brandhub_catalog::{Cell, Layout, Record, Resource, catalog, grouped, record::stored_fields};
use brandhub_problem::{FieldError, words};
use brandhub_query::conditions::IfMatch;
use brandhub_query::plan::Viewer;
use brandhub_query::sql::satisfying_ids;
use machine::{Ask, Line, Order, Outcome, StockMove};
use sea_query::{Alias, Condition, Expr, ExprTrait, LockType, Order as By, Query};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};

/// The declaration of a resource the order engine writes.
fn resource(res: Res) -> &'static Resource {
    catalog().get(res)
}

fn text(record: &Record, layout: &Layout, path: &str) -> String {
    record.cells[layout.cell(path)]
        .as_text()
        .unwrap_or_default()
        .to_string()
}

fn integer(record: &Record, layout: &Layout, path: &str) -> i64 {
    match record.cells[layout.cell(path)] {
        Cell::Integer(n) => n,
        Cell::Number(n) => n as i64,
        _ => 0,
    }
}

fn stamp(record: &Record, layout: &Layout, path: &str) -> Option<String> {
    Some(text(record, layout, path)).filter(|t| !t.is_empty())
}

/// An order's record and its lines' records, as loaded for a step.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub order: Record,
    pub lines: Vec<Record>,
}

impl Loaded {
    /// The order as the state machine sees it.
    pub fn state(&self) -> Order {
        let (o, l) = (
            Layout::of(resource(Res::Order)),
            Layout::of(resource(Res::OrderItem)),
        );
        Order {
            status: text(&self.order, &o, "status"),
            carrier: text(&self.order, &o, "carrier"),
            tracking_ref: text(&self.order, &o, "trackingRef"),
            ship_date: stamp(&self.order, &o, "shipDate"),
            sent_to_wh: stamp(&self.order, &o, "sentToWH"),
            delivery_date: stamp(&self.order, &o, "deliveryDate"),
            lines: self
                .lines
                .iter()
                .map(|r| Line {
                    id: r.id().to_string(),
                    variant: text(r, &l, "fk_variant"),
                    order_qty: integer(r, &l, "orderQty"),
                    ship_qty: integer(r, &l, "shipQty"),
                    return_qty: integer(r, &l, "returnQty"),
                    status: text(r, &l, "status"),
                    reason: text(r, &l, "detail.reason"),
                    return_date: stamp(r, &l, "returnDate"),
                })
                .collect(),
        }
    }

    /// The warehouse the order ships from (its stock moves there).
    pub fn warehouse(&self) -> Option<String> {
        stamp(
            &self.order,
            &Layout::of(resource(Res::Order)),
            "fk_warehouse",
        )
    }

    /// The order and its lines as `outcome` leaves them, and which of them it changed.
    pub fn after(&self, outcome: &Outcome) -> (Loaded, Changed) {
        let (o, l) = (
            Layout::of(resource(Res::Order)),
            Layout::of(resource(Res::OrderItem)),
        );
        let next = &outcome.order;
        let mut order = self.order.clone();
        let mut changed = false;
        changed |= set(&mut order, &o, "status", Cell::Text(next.status.clone()));
        changed |= set(&mut order, &o, "carrier", Cell::Text(next.carrier.clone()));
        changed |= set(
            &mut order,
            &o,
            "trackingRef",
            Cell::Text(next.tracking_ref.clone()),
        );
        changed |= set(&mut order, &o, "shipDate", stamp_cell(&next.ship_date));
        changed |= set(&mut order, &o, "sentToWH", stamp_cell(&next.sent_to_wh));
        changed |= set(
            &mut order,
            &o,
            "deliveryDate",
            stamp_cell(&next.delivery_date),
        );
        let mut lines = Vec::with_capacity(self.lines.len());
        let mut lines_changed = Vec::with_capacity(self.lines.len());
        for (before, after) in self.lines.iter().zip(&next.lines) {
            let mut record = before.clone();
            let mut changed = false;
            changed |= set(&mut record, &l, "status", Cell::Text(after.status.clone()));
            changed |= set(
                &mut record,
                &l,
                "detail.reason",
                Cell::Text(after.reason.clone()),
            );
            changed |= set(&mut record, &l, "shipQty", Cell::Integer(after.ship_qty));
            changed |= set(
                &mut record,
                &l,
                "returnQty",
                Cell::Integer(after.return_qty),
            );
            changed |= set(
                &mut record,
                &l,
                "returnDate",
                stamp_cell(&after.return_date),
            );
            lines.push(record);
            lines_changed.push(changed);
        }
        (
            Loaded { order, lines },
            Changed {
                order: changed,
                lines: lines_changed,
            },
        )
    }
}

/// What a step changed of an order: the order's own fields, and each line's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    pub order: bool,
    pub lines: Vec<bool>,
}

fn set(record: &mut Record, layout: &Layout, path: &str, value: Cell) -> bool {
    let at = layout.cell(path);
    if record.cells[at] == value {
        return false;
    }
    record.cells[at] = value;
    true
}

fn stamp_cell(value: &Option<String>) -> Cell {
    value.clone().map_or(Cell::Null, Cell::Text)
}

impl WriteTx {
    /// The orders with these ids and their lines, locked for this transaction (on
    /// PostgreSQL; SQLite's write transaction holds the database already).
    pub async fn load_orders(&mut self, ids: &[String]) -> StoreResult<Vec<Loaded>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let (order, item) = (resource(Res::Order), resource(Res::OrderItem));
        let fields = stored_fields(order);
        let select = Query::select()
            .columns(fields.iter().map(|f| Alias::new(f.column.as_str())))
            .from(Alias::new(order.table))
            .and_where(Expr::col(Alias::new("id")).is_in(ids.iter().cloned()))
            .order_by(Alias::new("id"), By::Asc)
            .lock(LockType::Update)
            .to_owned();
        let kinds: Vec<Kind> = fields.iter().map(|f| Kind::of(f.ty)).collect();
        let rows = self.fetch(&select, &kinds).await?;
        let orders = records_of(order, rows);
        let fk = Layout::of(item).cell("fk_order");
        let lines = self
            .load_records(
                item,
                Condition::all().add(Expr::col(Alias::new("fk_order")).is_in(ids.iter().cloned())),
            )
            .await?;
        Ok(orders
            .into_iter()
            .map(|order| {
                let own = lines
                    .iter()
                    .filter(|l| l.cells[fk].as_text() == Some(order.id()))
                    .cloned()
                    .collect();
                Loaded { order, lines: own }
            })
            .collect())
    }

    /// Writes what a step decided: the order's and its lines' changed fields, and the stock
    /// moves in the order's warehouse.
    pub async fn write_outcome(&mut self, loaded: &Loaded, outcome: &Outcome) -> StoreResult<()> {
        self.write_outcomes(&[(loaded, outcome)]).await
    }

    /// Writes what several steps decided, batched: every changed order in one multi-row
    /// statement, every changed line in another, the stock moves of all of them summed per
    /// warehouse and variant in a third (each within the parameter limits). A later step on
    /// the same order must be decided from the earlier one's result ([`Loaded::after`]); the
    /// last record of each order and line is the one written.
    pub async fn write_outcomes(&mut self, outcomes: &[(&Loaded, &Outcome)]) -> StoreResult<()> {
        let (order, item) = (resource(Res::Order), resource(Res::OrderItem));
        let mut orders: BTreeMap<String, Record> = BTreeMap::new();
        let mut lines: BTreeMap<String, Record> = BTreeMap::new();
        let mut moves: BTreeMap<(String, String), StockMove> = BTreeMap::new();
        let mut touched: Vec<String> = Vec::with_capacity(outcomes.len());
        for (loaded, outcome) in outcomes {
            let (after, changed) = loaded.after(outcome);
            if changed.order {
                orders.insert(after.order.id().to_string(), after.order.clone());
            }
            for (line, changed) in after.lines.iter().zip(&changed.lines) {
                if *changed {
                    lines.insert(line.id().to_string(), line.clone());
                }
            }
            touched.push(after.order.id().to_string());
            if let Some(warehouse) = loaded.warehouse() {
                sum_moves(&mut moves, &warehouse, &outcome.moves)?;
            }
        }
        let mut orders: Vec<Record> = orders.into_values().collect();
        let mut lines: Vec<Record> = lines.into_values().collect();
        self.upsert_records(order, &mut orders).await?;
        self.upsert_records(item, &mut lines).await?;
        // A change of its lines alone is a change of the order too.
        self.announce(order, touched.iter().map(String::as_str), false)
            .await?;
        self.add_to_stock(
            moves
                .into_iter()
                .filter(|(_, m)| m.in_stock != 0 || m.demand != 0)
                .collect(),
        )
        .await
    }

    /// Adds `moves` to the stock of their variants in `warehouse` ([`WriteTx::add_to_stock`]).
    pub async fn move_stock(
        &mut self,
        warehouse: &str,
        moves: &[(String, StockMove)],
    ) -> StoreResult<()> {
        let mut by_stock = BTreeMap::new();
        sum_moves(&mut by_stock, warehouse, moves)?;
        self.add_to_stock(by_stock.into_iter().collect()).await
    }

    /// [`WriteTx::move_stock`] for a caller that found, before this write, the stock records
    /// of `moves`' variants in `warehouse` (`known`: variant id → stock record id). An
    /// optimistic write ([`WriteTx::is_optimistic`]) whose every variant has one adds to them
    /// by id ([`WriteTx::add_to_known_records`]), which needs no answer, so the write stays
    /// one statement; otherwise the moves go through [`WriteTx::move_stock`]'s upsert.
    pub async fn move_known_stock(
        &mut self,
        warehouse: &str,
        moves: &[(String, StockMove)],
        known: &HashMap<String, String>,
    ) -> StoreResult<()> {
        let mut by_stock = BTreeMap::new();
        sum_moves(&mut by_stock, warehouse, moves)?;
        let additions: Option<Vec<(String, Vec<i64>)>> = by_stock
            .iter()
            .map(|((_, variant), m)| known.get(variant).map(|id| (id.clone(), moved(m).to_vec())))
            .collect();
        match additions {
            Some(additions) if self.is_optimistic() => {
                let stock = resource(Res::Stock);
                self.add_to_known_records(stock, &stock.writes.natural_key, &MOVED, &additions)
                    .await
            }
            _ => self.add_to_stock(by_stock.into_iter().collect()).await,
        }
    }

    /// Adds each move to the stock of its (warehouse, variant), in one atomic statement
    /// through the write layer's additive upsert (a stock record is created for a variant the
    /// warehouse has none of, its shortcuts filled from their declarations), in (warehouse,
    /// variant) order, so concurrent transactions lock rows in the same order. One move per
    /// stock record: a multi-row upsert may not touch a row twice.
    async fn add_to_stock(&mut self, moves: Vec<((String, String), StockMove)>) -> StoreResult<()> {
        let stock = resource(Res::Stock);
        let layout = Layout::of(stock);
        let mut records: Vec<Record> = moves
            .into_iter()
            .map(|((warehouse, variant), m)| {
                let mut record = Record::empty(stock);
                record.cells[layout.cell("id")] = Cell::Text(new_id());
                record.cells[layout.cell("fk_warehouse")] = Cell::Text(warehouse);
                record.cells[layout.cell("fk_variant")] = Cell::Text(variant);
                for (path, n) in MOVED.iter().zip(moved(&m)) {
                    record.cells[layout.cell(path)] = Cell::Integer(n);
                }
                record.cells[layout.cell("supply")] = Cell::Integer(0);
                record
            })
            .collect();
        self.add_to_records(stock, &stock.writes.natural_key, &MOVED, &mut records)
            .await
    }
}

impl WriteTx {
    /// Which of `outcomes`, taken in order, keep every stock count they move within the range
    /// the catalog holds it to (`Field::held`), each applied after the ones before it that
    /// do: `None` for those, the reason for one that would take a count outside. For a
    /// caller that refuses such a step on its own (a row of an orderDispatch file) rather
    /// than failing its whole write, which the database does for whatever passes this. The
    /// stock records are read locked, in key order as the stock moves lock them, so their
    /// counts stay as read until this transaction writes.
    pub async fn moves_out_of_range(
        &mut self,
        outcomes: &[(&Loaded, &Outcome)],
    ) -> StoreResult<Vec<Option<String>>> {
        let stock = resource(Res::Stock);
        let mut wanted: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (loaded, outcome) in outcomes {
            if let Some(warehouse) = loaded.warehouse() {
                let variants = wanted.entry(warehouse).or_default();
                variants.extend(outcome.moves.iter().map(|(v, _)| v.clone()));
            }
        }
        let mut counts: HashMap<(String, String), StockMove> = HashMap::new();
        let column = |path: &str| {
            Alias::new(
                stock
                    .field_at(path)
                    .expect("stock moves name stock fields")
                    .column
                    .as_str(),
            )
        };
        for (warehouse, variants) in &wanted {
            let variants: Vec<String> = variants.iter().cloned().collect();
            for chunk in variants.chunks(ORDERS_PER_STATEMENT) {
                let select = Query::select()
                    .columns(["fk_variant", MOVED[0], MOVED[1]].map(column))
                    .from(Alias::new(stock.table))
                    .and_where(Expr::col(column("fk_warehouse")).eq(warehouse.as_str()))
                    .and_where(Expr::col(column("fk_variant")).is_in(chunk.iter().cloned()))
                    .order_by(column("fk_warehouse"), By::Asc)
                    .order_by(column("fk_variant"), By::Asc)
                    .lock(LockType::Update)
                    .to_owned();
                let kinds = [Kind::Text, Kind::Integer, Kind::Integer];
                for row in self.fetch(&select, &kinds).await? {
                    let count = |cell: &Cell| match cell {
                        Cell::Integer(n) => *n,
                        _ => 0,
                    };
                    let variant = row[0].as_text().unwrap_or_default().to_string();
                    let found = StockMove {
                        in_stock: count(&row[1]),
                        demand: count(&row[2]),
                    };
                    counts.insert((warehouse.clone(), variant), found);
                }
            }
        }
        let mut verdicts = Vec::with_capacity(outcomes.len());
        for (loaded, outcome) in outcomes {
            let Some(warehouse) = loaded.warehouse() else {
                verdicts.push(None);
                continue;
            };
            let mut moved_to = Vec::with_capacity(outcome.moves.len());
            let mut refusal = None;
            for (variant, step) in &outcome.moves {
                let key = (warehouse.clone(), variant.clone());
                let now = counts.get(&key).copied().unwrap_or_default();
                let Some(after) = now.plus(*step) else {
                    refusal = Some("the move passes what a stock count can hold".to_string());
                    break;
                };
                let why = out_of_range(MOVED[0], variant, after.in_stock)
                    .or_else(|| out_of_range(MOVED[1], variant, after.demand));
                if why.is_some() {
                    refusal = why;
                    break;
                }
                moved_to.push((key, after));
            }
            if refusal.is_none() {
                counts.extend(moved_to);
            }
            verdicts.push(refusal);
        }
        Ok(verdicts)
    }
}

/// The stock fields a [`StockMove`] adds to, in the order of its numbers.
const MOVED: [&str; 2] = ["inStock", "demand"];

/// A move's numbers, in the order of [`MOVED`].
fn moved(m: &StockMove) -> [i64; 2] {
    [m.in_stock, m.demand]
}

/// Adds the stock moves of one order in `warehouse` to `sums`, one per (warehouse, variant):
/// a multi-row upsert may touch each stock record once. Checked: moves that do not add up
/// within what a count holds are refused (422), never wrapped.
fn sum_moves(
    sums: &mut BTreeMap<(String, String), StockMove>,
    warehouse: &str,
    moves: &[(String, StockMove)],
) -> StoreResult<()> {
    for (variant, step) in moves {
        let sum = sums
            .entry((warehouse.to_string(), variant.clone()))
            .or_default();
        *sum = sum.plus(*step).ok_or_else(|| {
            StoreError::invalid(vec![FieldError::new(
                "order_orderItem",
                "the steps move more stock than a count can hold",
            )])
        })?;
    }
    Ok(())
}

/// Why a stock count of `variant` would leave the range the catalog holds it to, if moved to
/// `value` (docs/API.md, "Quantities and amounts": a move outside ±1,000,000,000 is refused whole).
fn out_of_range(path: &str, variant: &str, value: i64) -> Option<String> {
    let field = resource(Res::Stock)
        .field_at(path)
        .expect("stock moves name stock fields");
    let (least, most) = field.held?;
    (value < least || value > most).then(|| {
        format!(
            "the move would take stock.{path} of variant {variant} to {}, outside {} to {}",
            grouped(value),
            grouped(least),
            grouped(most)
        )
    })
}

fn not_found(id: &str) -> StoreError {
    StoreError::NotFound(words!(
        "There is no order with id '{id}'.",
        "Es gibt keine Bestellung mit der Kennung '{id}'."
    ))
}

impl Store {
    /// Takes the lifecycle step `ask` on the order `id` for `viewer`, in one transaction: 404
    /// outside the caller's scope, else what [`machine::decide`] says. Returns the new status.
    pub async fn order_step(&self, id: &str, ask: &Ask, viewer: &Viewer) -> StoreResult<String> {
        self.execute(WritePlan::locking(EntryPoint::Lifecycle), |mut tx, _| {
            Box::pin(async move {
                let stepped = step_in(&mut tx, id, ask, viewer, None).await;
                (tx, stepped.map(WriteOutcome::Commit))
            })
        })
        .await
    }

    /// [`Store::order_step`] under an `If-Match` precondition (412 when the order's version
    /// is not one it names, checked with the order locked); returns the order's version after
    /// the step, for the answer's `ETag`.
    pub async fn order_step_if(
        &self,
        id: &str,
        ask: &Ask,
        viewer: &Viewer,
        if_match: Option<&IfMatch>,
    ) -> StoreResult<i64> {
        self.execute(WritePlan::locking(EntryPoint::Lifecycle), |mut tx, _| {
            Box::pin(async move {
                let stepped = async {
                    step_in(&mut tx, id, ask, viewer, if_match).await?;
                    let version = tx
                        .version_of(resource(Res::Order), id)
                        .await?
                        .ok_or_else(|| not_found(id))?;
                    Ok(WriteOutcome::Commit(version))
                }
                .await;
                (tx, stepped)
            })
        })
        .await
    }

    /// Takes one step on many orders (`POST /api/order/dispatch`), each applied or refused on
    /// its own, in one transaction: the orders the caller sees are found in one statement and
    /// loaded (and locked) in two, each step is decided in memory by the state machine (a
    /// later step on the same order from the earlier one's result), and the applied ones are
    /// written together ([`WriteTx::write_outcomes`]), so a refused order leaves nothing
    /// behind. Should the write itself fail (a database error), the transaction is dropped
    /// and every order is taken again in a transaction of its own. The outer `Err` is a
    /// failure of the transaction itself.
    pub async fn order_steps(
        &self,
        asks: &[(String, Ask)],
        viewer: &Viewer,
    ) -> StoreResult<Vec<StoreResult<String>>> {
        let ids: Vec<String> = asks
            .iter()
            .map(|(id, _)| id.to_ascii_uppercase())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        // Set once the steps are decided: a failure from then on (the writes, the commit) is
        // the transaction's, and every order is taken again on its own.
        let writing = AtomicBool::new(false);
        let plan = WritePlan::locking(EntryPoint::DispatchArray);
        let done = self
            .execute(plan, |mut tx, _| {
                let (ids, writing) = (&ids, &writing);
                Box::pin(async move {
                    let stepped = async {
                        let (results, decided) = decide_many(&mut tx, ids, asks, viewer).await?;
                        writing.store(true, Ordering::Relaxed);
                        let pairs: Vec<(&Loaded, &Outcome)> =
                            decided.iter().map(|(l, o)| (l, o)).collect();
                        tx.write_outcomes(&pairs).await?;
                        Ok(WriteOutcome::Commit(results))
                    }
                    .await;
                    (tx, stepped)
                })
            })
            .await;
        match done {
            Err(error) if writing.load(Ordering::Relaxed) => {
                tracing::warn!(%error, "a dispatch array's transaction failed; taking its orders one by one");
                let mut one_by_one = Vec::with_capacity(asks.len());
                for (id, ask) in asks {
                    one_by_one.push(self.order_step(id, ask, viewer).await);
                }
                Ok(one_by_one)
            }
            done => done,
        }
    }
}

/// The steps of [`Store::order_steps`] decided inside its transaction: each order's result,
/// and the orders that change with their outcomes.
async fn decide_many(
    tx: &mut WriteTx,
    ids: &[String],
    asks: &[(String, Ask)],
    viewer: &Viewer,
) -> StoreResult<(Vec<StoreResult<String>>, Vec<(Loaded, Outcome)>)> {
    let order = resource(Res::Order);
    let mut visible: HashSet<String> = HashSet::with_capacity(ids.len());
    for chunk in ids.chunks(ORDERS_PER_STATEMENT) {
        let rows = tx
            .fetch(
                &satisfying_ids(order, chunk, &viewer.scope(order)),
                &[Kind::Text],
            )
            .await?;
        visible.extend(
            rows.into_iter()
                .filter_map(|r| r[0].as_text().map(str::to_string)),
        );
    }
    let seen: Vec<String> = ids
        .iter()
        .filter(|id| visible.contains(*id))
        .cloned()
        .collect();
    let mut loaded: HashMap<String, Loaded> = HashMap::with_capacity(seen.len());
    for chunk in seen.chunks(ORDERS_PER_STATEMENT) {
        for one in tx.load_orders(chunk).await? {
            loaded.insert(one.order.id().to_string(), one);
        }
    }
    let now = now_timestamp();
    let mut results = Vec::with_capacity(asks.len());
    let mut decided: Vec<(Loaded, Outcome)> = Vec::new();
    for (id, ask) in asks {
        let id = id.to_ascii_uppercase();
        let Some(current) = loaded.get_mut(&id) else {
            results.push(Err(not_found(&id)));
            continue;
        };
        match machine::decide(&current.state(), ask, viewer.user_type(), &now) {
            Ok(outcome) => {
                let (after, _) = current.after(&outcome);
                results.push(Ok(outcome.order.status.clone()));
                decided.push((std::mem::replace(current, after), outcome));
            }
            Err(refusal) => results.push(Err(refusal)),
        }
    }
    Ok((results, decided))
}

/// Orders named in one statement of a many-order step (ids bound as parameters).
const ORDERS_PER_STATEMENT: usize = 500;

/// One lifecycle step inside a transaction (see [`Store::order_step`]).
async fn step_in(
    tx: &mut WriteTx,
    id: &str,
    ask: &Ask,
    viewer: &Viewer,
    if_match: Option<&IfMatch>,
) -> StoreResult<String> {
    let (loaded, outcome) = decide_in(tx, id, ask, viewer, if_match).await?;
    tx.write_outcome(&loaded, &outcome).await?;
    Ok(outcome.order.status)
}

/// What a step does to the order `id`, decided without writing: 404 outside the caller's
/// scope, 412 when `if_match` does not name its version, else the state machine's verdict
/// for the order as loaded (and locked).
async fn decide_in(
    tx: &mut WriteTx,
    id: &str,
    ask: &Ask,
    viewer: &Viewer,
    if_match: Option<&IfMatch>,
) -> StoreResult<(Loaded, machine::Outcome)> {
    let id = id.to_ascii_uppercase();
    let order = resource(Res::Order);
    let visible = tx
        .fetch(
            &satisfying_ids(order, std::slice::from_ref(&id), &viewer.scope(order)),
            &[Kind::Text],
        )
        .await?;
    if visible.is_empty() {
        return Err(not_found(&id));
    }
    if if_match.is_some() {
        tx.check_precondition(order, &id, if_match).await?;
    }
    let Some(loaded) = tx.load_orders(std::slice::from_ref(&id)).await?.pop() else {
        return Err(not_found(&id));
    };
    let outcome = machine::decide(&loaded.state(), ask, viewer.user_type(), &now_timestamp())?;
    Ok((loaded, outcome))
}
