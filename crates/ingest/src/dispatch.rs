//! Order-dispatch files: shipped quantities of the brand's orders. A row names an order (by
//! brandOrderRef, hostOrderRef or id) and one of its items (by Item Ref, the item's
//! hostItemRef or id, or by barcode); it sets the item's `shipQty` (the quantity shipped so far,
//! so a file applied twice changes nothing), and the order's carrier, tracking ref and
//! `shipDate` (the Ship Date, or today). An order whose every item is fully shipped becomes
//! `dispatched`, one with some shipped `partDispatched`; fully shipped items become `DSP`.
//!
//! Only orders the uploader may dispatch are touched (the catalog's dispatch rule, CONTRACT
//! §11): an order it does not see is not found; one it sees but may not dispatch skips its
//! rows with that reason.

use crate::lookup::{
    CHUNK, brand_barcodes, column, either_text, fitting, folded, refers_to, required_integer,
    required_text, resource, text_in, text_of,
};
use crate::process::{FileJob, ProcessError};
use crate::report::{Missing, Report};
use brandhub_catalog::{Cell, Layout, Record, WriteAction};
use brandhub_query::plan::Viewer;
use brandhub_query::sql::{condition as sql_condition, satisfying_ids};
use brandhub_query::text::fold;
use brandhub_sheet::{Column as C, ColumnMap, Table};
use brandhub_store::WriteTx;
use brandhub_store::db::Kind;
use brandhub_store::ids::now_timestamp;
use sea_query::{Alias, Cond, Expr, ExprTrait};
use std::collections::{BTreeSet, HashMap, HashSet};

/// Order statuses a dispatch cannot change.
const CLOSED: [&str; 2] = ["cancelled", "returned"];

/// A row's values, checked.
struct Line {
    order_ref: String,
    item_ref: String,
    barcode: String,
    ship_qty: i64,
    carrier: String,
    tracking: String,
    ship_date: Option<String>,
}

fn read_line(row: &brandhub_sheet::Row, map: &ColumnMap) -> Result<Line, String> {
    let order_ref = required_text(row, map, C::OrderRef)?;
    let (item_ref, barcode) = either_text(row, map, C::ItemRef, C::Barcode)?;
    let ship_qty = required_integer(row, map, C::ShipQty, Some(0))?;
    let date_cell = row.get(map, C::ShipDate);
    let ship_date = if date_cell.is_empty() {
        None
    } else {
        let date = date_cell.as_date().ok_or_else(|| {
            format!(
                "{} \"{}\" is not a date",
                C::ShipDate.label(),
                text_of(date_cell)
            )
        })?;
        Some(date.format("%Y-%m-%dT00:00:00").to_string())
    };
    Ok(Line {
        order_ref,
        item_ref,
        barcode,
        ship_qty,
        carrier: fitting(
            resource("order"),
            "carrier",
            C::Carrier,
            text_of(row.get(map, C::Carrier)),
        )?,
        tracking: fitting(
            resource("order"),
            "trackingRef",
            C::TrackingRef,
            text_of(row.get(map, C::TrackingRef)),
        )?,
        ship_date,
    })
}

fn integer(record: &Record, index: usize) -> i64 {
    match record.cells[index] {
        Cell::Integer(n) => n,
        _ => 0,
    }
}

/// Applies an order-dispatch file inside `tx`.
pub(crate) async fn apply(
    tx: &mut WriteTx,
    job: &FileJob,
    table: &Table,
    map: &ColumnMap,
    report: &mut Report,
    uploader: &Viewer,
) -> Result<(), ProcessError> {
    let order = resource("order");
    let item = resource("orderItem");
    let brand_store = resource("brandStore");
    let o = Layout::of(order);
    let it = Layout::of(item);

    // Every order of the brand that some row names, found a chunk of references at a time.
    let mut references: Vec<String> = table
        .rows()
        .iter()
        .map(|row| fold(&text_of(row.get(map, C::OrderRef))))
        .filter(|r| !r.is_empty())
        .collect();
    references.sort();
    references.dedup();
    let mut orders: Vec<Record> = Vec::new();
    let mut seen = HashSet::new();
    let visible = uploader.scope(order);
    for chunk in references.chunks(CHUNK) {
        let ids: Vec<String> = chunk.iter().map(|r| r.to_ascii_uppercase()).collect();
        let condition = Cond::all()
            .add(refers_to(
                order,
                "fk_brandStore",
                brand_store,
                "fk_brand",
                &job.brand,
            ))
            .add(sql_condition(&visible))
            .add(
                Cond::any()
                    .add(Expr::col(folded(order, "brandOrderRef")).is_in(chunk.iter().cloned()))
                    .add(Expr::col(folded(order, "hostOrderRef")).is_in(chunk.iter().cloned()))
                    .add(Expr::col(Alias::new("id")).is_in(ids)),
            );
        for record in tx.load_records(order, condition).await? {
            if seen.insert(record.id().to_string()) {
                orders.push(record);
            }
        }
    }
    let mut by_reference: HashMap<String, BTreeSet<usize>> = HashMap::new();
    for (i, record) in orders.iter().enumerate() {
        for key in [
            fold(text_in(record, o.cell("brandOrderRef"))),
            fold(text_in(record, o.cell("hostOrderRef"))),
            fold(record.id()),
        ] {
            if !key.is_empty() {
                by_reference.entry(key).or_default().insert(i);
            }
        }
    }

    // Those the uploader may dispatch.
    let order_ids: Vec<String> = orders.iter().map(|r| r.id().to_string()).collect();
    let rule = uploader.authority(order, WriteAction::Dispatch);
    let mut dispatchable: HashSet<String> = HashSet::new();
    for chunk in order_ids.chunks(CHUNK) {
        let statement = satisfying_ids(order, chunk, &rule);
        for row in tx.fetch(&statement, &[Kind::Text]).await? {
            if let Some(id) = row[0].as_text() {
                dispatchable.insert(id.to_string());
            }
        }
    }

    // Their items, and the barcode of each item's variant.
    let mut items: Vec<Record> = Vec::new();
    for chunk in order_ids.chunks(CHUNK) {
        let condition =
            Cond::all().add(Expr::col(column(item, "fk_order")).is_in(chunk.iter().cloned()));
        items.extend(tx.load_records(item, condition).await?);
    }
    let mut items_of: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, record) in items.iter().enumerate() {
        items_of
            .entry(text_in(record, it.cell("fk_order")).to_string())
            .or_default()
            .push(i);
    }
    // Items named by barcode need the brand's barcodes; a file without the column does not.
    let barcode_of: HashMap<String, String> = if map.has(C::Barcode) {
        brand_barcodes(tx, &job.brand)
            .await?
            .into_iter()
            .map(|(key, variant)| (variant.id, key))
            .collect()
    } else {
        HashMap::new()
    };

    let originals_orders: Vec<Vec<Cell>> = orders.iter().map(|r| r.cells.clone()).collect();
    let originals_items: Vec<Vec<Cell>> = items.iter().map(|r| r.cells.clone()).collect();
    let mut touched = BTreeSet::new();
    let mut rows_of_items: HashMap<usize, u32> = HashMap::new();
    let now = now_timestamp();
    for row in table.rows() {
        let Some(line) = report.checked(row.number(), read_line(row, map)) else {
            continue;
        };
        let candidates = by_reference.get(&fold(&line.order_ref));
        let oi = match candidates {
            None => {
                report.not_found(Missing::Order, &line.order_ref);
                continue;
            }
            Some(found) if found.len() > 1 => {
                report.skip(
                    row.number(),
                    format!(
                        "order ref {} matches {} orders; use the order id",
                        line.order_ref,
                        found.len()
                    ),
                );
                continue;
            }
            Some(found) => *found.first().expect("a reference names at least one order"),
        };
        if !dispatchable.contains(orders[oi].id()) {
            report.skip(
                row.number(),
                format!(
                    "order {} may not be dispatched by a {} user",
                    line.order_ref,
                    uploader.user_type().as_str()
                ),
            );
            continue;
        }
        let status = text_in(&orders[oi], o.cell("status")).to_string();
        if CLOSED.contains(&status.as_str()) {
            report.skip(
                row.number(),
                format!("order {} is {status}", line.order_ref),
            );
            continue;
        }
        let order_id = orders[oi].id().to_string();
        let own_items = items_of.get(&order_id).map_or(&[][..], Vec::as_slice);
        let found = if !line.item_ref.is_empty() {
            let wanted = fold(&line.item_ref);
            own_items.iter().copied().find(|&i| {
                fold(text_in(&items[i], it.cell("hostItemRef"))) == wanted
                    || fold(items[i].id()) == wanted
            })
        } else {
            let wanted = fold(&line.barcode);
            own_items.iter().copied().find(|&i| {
                barcode_of.get(text_in(&items[i], it.cell("fk_variant"))) == Some(&wanted)
            })
        };
        let Some(ii) = found else {
            let named = if line.item_ref.is_empty() {
                &line.barcode
            } else {
                &line.item_ref
            };
            report.not_found(Missing::OrderItem, &format!("{} {named}", line.order_ref));
            continue;
        };
        if let Some(first) = rows_of_items.get(&ii) {
            report.skip(row.number(), format!("the item is already on row {first}"));
            continue;
        }
        let ordered = integer(&items[ii], it.cell("orderQty"));
        if line.ship_qty > ordered {
            report.skip(
                row.number(),
                format!(
                    "{} {} is more than the {ordered} ordered",
                    C::ShipQty.label(),
                    line.ship_qty
                ),
            );
            continue;
        }
        rows_of_items.insert(ii, row.number());
        let record = &mut items[ii];
        record.cells[it.cell("shipQty")] = Cell::Integer(line.ship_qty);
        if ordered > 0 && line.ship_qty >= ordered {
            record.cells[it.cell("status")] = Cell::Text("DSP".into());
        }
        let record = &mut orders[oi];
        if !line.carrier.is_empty() {
            record.cells[o.cell("carrier")] = Cell::Text(line.carrier);
        }
        if !line.tracking.is_empty() {
            record.cells[o.cell("trackingRef")] = Cell::Text(line.tracking);
        }
        match line.ship_date {
            Some(date) => record.cells[o.cell("shipDate")] = Cell::Text(date),
            None if line.ship_qty > 0 && record.cells[o.cell("shipDate")].is_unset() => {
                record.cells[o.cell("shipDate")] = Cell::Text(now.clone());
            }
            None => {}
        }
        touched.insert(oi);
        report.applied();
    }

    // The status of each order the file touched, from all its items.
    for &oi in &touched {
        let own_items = items_of.get(orders[oi].id()).cloned().unwrap_or_default();
        let shipped = |i: &usize| integer(&items[*i], it.cell("shipQty"));
        let ordered = |i: &usize| integer(&items[*i], it.cell("orderQty"));
        let all = own_items.iter().all(|i| shipped(i) >= ordered(i));
        let some = own_items.iter().any(|i| shipped(i) > 0);
        let status = if all && some {
            Some("dispatched")
        } else if some {
            Some("partDispatched")
        } else {
            None
        };
        if let Some(status) = status {
            orders[oi].cells[o.cell("status")] = Cell::Text(status.into());
        }
    }
    tx.upsert_records(order, &changed(orders, &originals_orders))
        .await?;
    tx.upsert_records(item, &changed(items, &originals_items))
        .await?;
    Ok(())
}

/// The records whose cells differ from what they were before (in the same order).
fn changed(records: Vec<Record>, before: &[Vec<Cell>]) -> Vec<Record> {
    records
        .into_iter()
        .zip(before)
        .filter(|(record, before)| record.cells != **before)
        .map(|(record, _)| record)
        .collect()
}
