//! Order-dispatch files: shipped quantities of the brand's orders. A row names an order (by
//! brandOrderRef, hostOrderRef or id) and one of its items (by Item Ref, the item's
//! hostItemRef or id, or by barcode) and the item's `shipQty` (the quantity shipped so far,
//! so a file applied twice changes nothing), with the order's carrier, tracking ref and
//! `shipDate` (the Ship Date, or today). The rows of one order are one dispatch, decided by
//! the order state machine (`store::orders::machine`) exactly as a dispatch through the API:
//! only accepted or part-dispatched orders ship, a line ships at most what was ordered, the
//! order becomes `dispatched` when every accepted line is shipped in full, and the shipped
//! quantities leave the warehouse's `inStock` and `demand`. A row the machine refuses is
//! skipped with its reason; the order's other rows still apply.
//!
//! Only orders the uploader may dispatch are touched (the catalog's dispatch rule, docs/API.md,
//! "Orders: intake, lifecycle and stock"): an order it does not see is not found; one it sees but may not dispatch skips its
//! rows with that reason.

use crate::lookup::{
    CHUNK, brand_barcodes, column, either_text, equals, fitting, folded, labels, refers_to,
    required_integer, required_text, resource, text_in, text_of,
};
use crate::process::{FileJob, ProcessError};
use crate::report::{Missing, Report};
use brandhub_catalog::Res;
use brandhub_catalog::{Layout, Record, WriteAction};
use brandhub_problem::{FieldError, Words, words};
use brandhub_query::plan::Viewer;
use brandhub_query::sql::{condition as sql_condition, satisfying_ids};
use brandhub_query::text::fold;
use brandhub_sheet::{Column as C, ColumnMap, Table};
use brandhub_store::StoreError;
use brandhub_store::WriteTx;
use brandhub_store::db::Kind;
use brandhub_store::ids::now_timestamp;
use brandhub_store::orders::machine::{Ask, LineAsk, decide};
use sea_query::{Alias, Cond, Expr, ExprTrait, Query};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

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

fn read_line(row: &brandhub_sheet::Row, map: &ColumnMap) -> Result<Line, Words> {
    let order_ref = required_text(row, map, C::OrderRef)?;
    let (item_ref, barcode) = either_text(row, map, C::ItemRef, C::Barcode)?;
    let ship_qty = required_integer(row, map, C::ShipQty, resource(Res::OrderItem), "shipQty")?;
    let date_cell = row.get(map, C::ShipDate);
    let ship_date = if date_cell.is_empty() {
        None
    } else {
        let date = date_cell.as_date().ok_or_else(|| {
            words!(
                "{} \"{}\" is not a date",
                "{} \"{}\" ist kein Datum",
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
            resource(Res::Order),
            "carrier",
            C::Carrier,
            text_of(row.get(map, C::Carrier)),
        )?,
        tracking: fitting(
            resource(Res::Order),
            "trackingRef",
            C::TrackingRef,
            text_of(row.get(map, C::TrackingRef)),
        )?,
        ship_date,
    })
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
    let order = resource(Res::Order);
    let item = resource(Res::OrderItem);
    let brand_store = resource(Res::BrandStore);
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

    // References no order of the brand has, which name an order of another brand the
    // uploader sees: their rows say which brand that is (by name), not just "not found".
    let missing: Vec<String> = references
        .iter()
        .filter(|r| !by_reference.contains_key(*r))
        .cloned()
        .collect();
    let elsewhere = other_brands(tx, job, &missing, &visible).await?;
    let own_brand = if elsewhere.is_empty() {
        String::new()
    } else {
        labels(tx, resource(Res::Brand), std::slice::from_ref(&job.brand))
            .await?
            .remove(&job.brand)
            .unwrap_or_else(|| job.brand.clone())
    };

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

    // Their items (the orders locked for this transaction), and each item's variant barcode.
    let loaded = tx.load_orders(&order_ids).await?;
    let loaded_at: HashMap<String, usize> = loaded
        .iter()
        .enumerate()
        .map(|(i, l)| (l.order.id().to_string(), i))
        .collect();
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

    // Each order's rows become one dispatch, decided by the order state machine.
    let mut asks: BTreeMap<usize, (Ask, Vec<u32>)> = BTreeMap::new();
    let mut rows_of_items: HashMap<String, u32> = HashMap::new();
    for row in table.rows() {
        let Some(line) = report.checked(row.number(), read_line(row, map)) else {
            continue;
        };
        let candidates = by_reference.get(&fold(&line.order_ref));
        let oi = match candidates {
            None => {
                match elsewhere.get(&fold(&line.order_ref)) {
                    Some(brand) => report.skip(
                        row.number(),
                        words!(
                            "order {} belongs to the brand {brand}, not to {}; upload it as a file of {brand}",
                            "Bestellung {} gehört zur Marke {brand}, nicht zu {}; als Datei von {brand} hochladen",
                            line.order_ref, own_brand
                        ),
                    ),
                    None => report.not_found(row.number(), Missing::Order, &line.order_ref),
                }
                continue;
            }
            Some(found) if found.len() > 1 => {
                report.skip(
                    row.number(),
                    words!(
                        "order ref {} matches {} orders; use the order id",
                        "Bestellreferenz {} passt zu {} Bestellungen; die Kennung der Bestellung verwenden",
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
                words!(
                    "order {} may not be dispatched by a {} user",
                    "Bestellung {} darf nicht von einem Benutzer vom Typ {} versendet werden",
                    line.order_ref,
                    uploader.user_type().as_str()
                ),
            );
            continue;
        }
        let Some(&li) = loaded_at.get(orders[oi].id()) else {
            report.not_found(row.number(), Missing::Order, &line.order_ref);
            continue;
        };
        let lines = &loaded[li].lines;
        let found = if !line.item_ref.is_empty() {
            let wanted = fold(&line.item_ref);
            lines.iter().find(|item| {
                fold(text_in(item, it.cell("hostItemRef"))) == wanted || fold(item.id()) == wanted
            })
        } else {
            let wanted = fold(&line.barcode);
            lines
                .iter()
                .find(|item| barcode_of.get(text_in(item, it.cell("fk_variant"))) == Some(&wanted))
        };
        let Some(item) = found else {
            let named = if line.item_ref.is_empty() {
                &line.barcode
            } else {
                &line.item_ref
            };
            report.not_found(
                row.number(),
                Missing::OrderItem,
                &format!("{} {named}", line.order_ref),
            );
            continue;
        };
        if let Some(first) = rows_of_items.get(item.id()) {
            report.skip(
                row.number(),
                words!(
                    "the item is already on row {first}",
                    "die Position steht schon in Zeile {first}"
                ),
            );
            continue;
        }
        rows_of_items.insert(item.id().to_string(), row.number());
        let (ask, rows) = asks.entry(li).or_insert_with(|| {
            (
                Ask {
                    status: "partDispatched".into(),
                    ..Ask::default()
                },
                Vec::new(),
            )
        });
        ask.lines.push(LineAsk {
            id: item.id().to_string(),
            ship_qty: Some(line.ship_qty),
            ..LineAsk::default()
        });
        rows.push(row.number());
        if !line.carrier.is_empty() {
            ask.carrier = Some(line.carrier);
        }
        if !line.tracking.is_empty() {
            ask.tracking_ref = Some(line.tracking);
        }
        if line.ship_date.is_some() {
            ask.ship_date = line.ship_date;
        }
    }

    // Decide each order's dispatch; rows with a problem of their own are skipped and the
    // rest decided again; a refusal of the whole order skips all its rows.
    let now = now_timestamp();
    let mut decided = Vec::with_capacity(asks.len());
    for (li, (mut ask, mut rows)) in asks {
        let reference = text_in(&loaded[li].order, o.cell("brandOrderRef")).to_string();
        loop {
            match decide(&loaded[li].state(), &ask, uploader.user_type(), &now) {
                Ok(outcome) => {
                    decided.push((li, outcome, rows, reference));
                    break;
                }
                Err(error) => {
                    let problems = match &error {
                        StoreError::Invalid { problems, .. } => problems.as_slice(),
                        _ => &[],
                    };
                    let own: BTreeSet<usize> = problems.iter().filter_map(|e| e.index).collect();
                    if !own.is_empty() {
                        for &at in own.iter().rev() {
                            let why: Vec<Words> = problems
                                .iter()
                                .filter(|e| e.index == Some(at))
                                .map(FieldError::said)
                                .collect();
                            report.skip(rows[at], of_order(&reference, &Words::join(&why, "; ")));
                            rows.remove(at);
                            ask.lines.remove(at);
                        }
                        if ask.lines.is_empty() {
                            break;
                        }
                        continue;
                    }
                    let why = if problems.is_empty() {
                        error.words()
                    } else {
                        let said: Vec<Words> = problems.iter().map(FieldError::said).collect();
                        Words::join(&said, "; ")
                    };
                    for &row in &rows {
                        report.skip(row, of_order(&reference, &why));
                    }
                    break;
                }
            }
        }
    }
    // An order whose dispatch would take a stock count outside its range skips its rows
    // (docs/API.md, "Quantities and amounts": the move is refused whole); the others are written together (one order
    // per dispatch).
    let outcomes: Vec<_> = decided
        .iter()
        .map(|(li, outcome, _, _)| (&loaded[*li], outcome))
        .collect();
    let verdicts = tx.moves_out_of_range(&outcomes).await?;
    let mut applied = Vec::with_capacity(outcomes.len());
    for ((_, _, rows, reference), (outcome, verdict)) in
        decided.iter().zip(outcomes.into_iter().zip(verdicts))
    {
        match verdict {
            None => {
                for _ in rows {
                    report.applied();
                }
                applied.push(outcome);
            }
            Some(why) => {
                for &row in rows {
                    report.skip(row, of_order(reference, &Words::english(why.as_str())));
                }
            }
        }
    }
    tx.write_outcomes(&applied).await?;
    Ok(())
}

/// The brands of other brands' orders that `references` (folded) name and `visible` lets the
/// uploader see: each reference with its order's brand as [`labels`] names it.
async fn other_brands(
    tx: &mut WriteTx,
    job: &FileJob,
    references: &[String],
    visible: &brandhub_query::plan::Predicate,
) -> Result<HashMap<String, String>, ProcessError> {
    let order = resource(Res::Order);
    let brand_store = resource(Res::BrandStore);
    let mut store_of: Vec<(Vec<String>, String)> = Vec::new();
    for chunk in references.chunks(CHUNK) {
        let ids: Vec<String> = chunk.iter().map(|r| r.to_ascii_uppercase()).collect();
        let statement = Query::select()
            .column(Alias::new("id"))
            .column(folded(order, "brandOrderRef"))
            .column(folded(order, "hostOrderRef"))
            .column(column(order, "fk_brandStore"))
            .from(Alias::new(order.table))
            .cond_where(
                Cond::all()
                    .add(sql_condition(visible))
                    .add(
                        Expr::col(column(order, "fk_brandStore")).not_in_subquery(
                            Query::select()
                                .column(Alias::new("id"))
                                .from(Alias::new(brand_store.table))
                                .and_where(equals(brand_store, "fk_brand", &job.brand))
                                .to_owned(),
                        ),
                    )
                    .add(
                        Cond::any()
                            .add(
                                Expr::col(folded(order, "brandOrderRef"))
                                    .is_in(chunk.iter().cloned()),
                            )
                            .add(
                                Expr::col(folded(order, "hostOrderRef"))
                                    .is_in(chunk.iter().cloned()),
                            )
                            .add(Expr::col(Alias::new("id")).is_in(ids)),
                    ),
            )
            .to_owned();
        for row in tx
            .fetch(
                &statement,
                &[Kind::Text, Kind::Text, Kind::Text, Kind::Text],
            )
            .await?
        {
            let keys: Vec<String> = row[..3]
                .iter()
                .filter_map(|c| c.as_text())
                .map(fold)
                .filter(|k| !k.is_empty())
                .collect();
            if let Some(store) = row[3].as_text() {
                store_of.push((keys, store.to_string()));
            }
        }
    }
    if store_of.is_empty() {
        return Ok(HashMap::new());
    }
    let mut stores: Vec<String> = store_of.iter().map(|(_, s)| s.clone()).collect();
    stores.sort();
    stores.dedup();
    let mut brand_of_store: HashMap<String, String> = HashMap::new();
    for chunk in stores.chunks(CHUNK) {
        let statement = Query::select()
            .column(Alias::new("id"))
            .column(column(brand_store, "fk_brand"))
            .from(Alias::new(brand_store.table))
            .and_where(Expr::col(Alias::new("id")).is_in(chunk.iter().cloned()))
            .to_owned();
        for row in tx.fetch(&statement, &[Kind::Text, Kind::Text]).await? {
            if let (Some(store), Some(brand)) = (row[0].as_text(), row[1].as_text()) {
                brand_of_store.insert(store.to_string(), brand.to_string());
            }
        }
    }
    let mut brands: Vec<String> = brand_of_store.values().cloned().collect();
    brands.sort();
    brands.dedup();
    let labels = labels(tx, resource(Res::Brand), &brands).await?;
    let mut named = HashMap::new();
    for (keys, store) in store_of {
        let Some(brand) = brand_of_store.get(&store) else {
            continue;
        };
        let label = labels.get(brand).cloned().unwrap_or_else(|| brand.clone());
        for key in keys {
            if references.contains(&key) {
                named.insert(key, label.clone());
            }
        }
    }
    Ok(named)
}

/// A skipped row's reason about its order: `order BO-0000012: <why>`.
fn of_order(reference: &str, why: &Words) -> Words {
    why.clone()
        .led_by(words!("order {reference}: ", "Bestellung {reference}: "))
}
