//! Orders (CONTRACT §11): a host's intake ([`intake`]), the lifecycle steps taken on an order
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
use crate::write::records_of;
use brandhub_catalog::{Cell, Layout, Record, Resource, catalog, record::stored_fields};
use brandhub_query::plan::Viewer;
use brandhub_query::sql::satisfying_ids;
use machine::{Ask, Line, Order, Outcome, StockMove};
use sea_query::{Alias, Condition, Expr, ExprTrait, LockType, Order as By, Query};

fn resource(name: &str) -> &'static Resource {
    catalog()
        .resource(name)
        .expect("the order engine names resources of the catalog")
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
            Layout::of(resource("order")),
            Layout::of(resource("orderItem")),
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
        stamp(&self.order, &Layout::of(resource("order")), "fk_warehouse")
    }
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
        let (order, item) = (resource("order"), resource("orderItem"));
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
        let (order, item) = (resource("order"), resource("orderItem"));
        let (o, l) = (Layout::of(order), Layout::of(item));
        let next = &outcome.order;
        let mut record = loaded.order.clone();
        let mut changed = false;
        changed |= set(&mut record, &o, "status", Cell::Text(next.status.clone()));
        changed |= set(&mut record, &o, "carrier", Cell::Text(next.carrier.clone()));
        changed |= set(
            &mut record,
            &o,
            "trackingRef",
            Cell::Text(next.tracking_ref.clone()),
        );
        changed |= set(&mut record, &o, "shipDate", stamp_cell(&next.ship_date));
        changed |= set(&mut record, &o, "sentToWH", stamp_cell(&next.sent_to_wh));
        changed |= set(
            &mut record,
            &o,
            "deliveryDate",
            stamp_cell(&next.delivery_date),
        );
        if changed {
            self.upsert_records(order, &mut [record]).await?;
        }
        let mut lines = Vec::new();
        for (before, after) in loaded.lines.iter().zip(&next.lines) {
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
            if changed {
                lines.push(record);
            }
        }
        self.upsert_records(item, &mut lines).await?;
        // A change of its lines alone is a change of the order too.
        self.announce(order, [loaded.order.id()], false).await?;
        if let Some(warehouse) = loaded.warehouse() {
            self.move_stock(&warehouse, &outcome.moves).await?;
        }
        Ok(())
    }

    /// Adds `moves` to the stock of their variants in `warehouse`, each in one atomic
    /// statement through the write layer's additive upsert (a stock record is created for a
    /// variant the warehouse has none of, its shortcuts filled from their declarations), in
    /// variant order, so concurrent transactions lock rows in the same order.
    pub async fn move_stock(
        &mut self,
        warehouse: &str,
        moves: &[(String, StockMove)],
    ) -> StoreResult<()> {
        let stock = resource("stock");
        let layout = Layout::of(stock);
        let mut records: Vec<Record> = moves
            .iter()
            .map(|(variant, m)| {
                let mut record = Record::empty(stock);
                record.cells[layout.cell("id")] = Cell::Text(new_id());
                record.cells[layout.cell("fk_warehouse")] = Cell::Text(warehouse.to_string());
                record.cells[layout.cell("fk_variant")] = Cell::Text(variant.clone());
                record.cells[layout.cell("inStock")] = Cell::Integer(m.in_stock);
                record.cells[layout.cell("demand")] = Cell::Integer(m.demand);
                record.cells[layout.cell("supply")] = Cell::Integer(0);
                record
            })
            .collect();
        self.add_to_records(
            stock,
            &stock.writes.natural_key,
            &["inStock", "demand"],
            &mut records,
        )
        .await
    }
}

fn not_found(id: &str) -> StoreError {
    StoreError::NotFound(format!("There is no order with id '{id}'."))
}

impl Store {
    /// Takes the lifecycle step `ask` on the order `id` for `viewer`, in one transaction: 404
    /// outside the caller's scope, else what [`machine::decide`] says. Returns the new status.
    pub async fn order_step(&self, id: &str, ask: &Ask, viewer: &Viewer) -> StoreResult<String> {
        let mut tx = self.begin().await?;
        let status = step_in(&mut tx, id, ask, viewer).await?;
        tx.commit().await?;
        Ok(status)
    }

    /// Takes one step on many orders (`POST /api/order/dispatch`), each applied or refused on
    /// its own, in one transaction: a refusal is decided before its order is written (scope,
    /// then the state machine, which is pure), so a refused order leaves nothing behind and
    /// the applied ones commit together. Should a write itself fail (a database error), the
    /// transaction is dropped and every order is taken again in a transaction of its own. The
    /// outer `Err` is a failure of the transaction itself.
    pub async fn order_steps(
        &self,
        asks: &[(String, Ask)],
        viewer: &Viewer,
    ) -> StoreResult<Vec<StoreResult<String>>> {
        let mut tx = self.begin().await?;
        let mut results = Vec::with_capacity(asks.len());
        for (id, ask) in asks {
            let written = match decide_in(&mut tx, id, ask, viewer).await {
                Ok((loaded, outcome)) => tx
                    .write_outcome(&loaded, &outcome)
                    .await
                    .map(|()| outcome.order.status),
                // The database failed (the transaction may be unusable): not a refusal.
                Err(StoreError::Internal) => Err(StoreError::Internal),
                Err(refusal) => {
                    results.push(Err(refusal));
                    continue;
                }
            };
            match written {
                Ok(status) => results.push(Ok(status)),
                Err(error) => {
                    tracing::warn!(%error, order = %id, "a dispatch array's transaction failed; taking its orders one by one");
                    drop(tx);
                    let mut one_by_one = Vec::with_capacity(asks.len());
                    for (id, ask) in asks {
                        one_by_one.push(self.order_step(id, ask, viewer).await);
                    }
                    return Ok(one_by_one);
                }
            }
        }
        tx.commit().await?;
        Ok(results)
    }
}

/// One lifecycle step inside a transaction (see [`Store::order_step`]).
async fn step_in(tx: &mut WriteTx, id: &str, ask: &Ask, viewer: &Viewer) -> StoreResult<String> {
    let (loaded, outcome) = decide_in(tx, id, ask, viewer).await?;
    tx.write_outcome(&loaded, &outcome).await?;
    Ok(outcome.order.status)
}

/// What a step does to the order `id`, decided without writing: 404 outside the caller's
/// scope, else the state machine's verdict for the order as loaded (and locked).
async fn decide_in(
    tx: &mut WriteTx,
    id: &str,
    ask: &Ask,
    viewer: &Viewer,
) -> StoreResult<(Loaded, machine::Outcome)> {
    let id = id.to_ascii_uppercase();
    let order = resource("order");
    let visible = tx
        .fetch(
            &satisfying_ids(order, std::slice::from_ref(&id), &viewer.scope(order)),
            &[Kind::Text],
        )
        .await?;
    if visible.is_empty() {
        return Err(not_found(&id));
    }
    let Some(loaded) = tx.load_orders(std::slice::from_ref(&id)).await?.pop() else {
        return Err(not_found(&id));
    };
    let outcome = machine::decide(&loaded.state(), ask, viewer.user_type(), &now_timestamp())?;
    Ok((loaded, outcome))
}
