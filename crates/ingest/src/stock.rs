//! Stock files: the stock of the file's warehouse, by barcode within the file's brand. Each
//! row upserts the (warehouse, variant) stock record with `lastUpdate` = now; Demand and Supply
//! are written when the file has them (new records start at 0).

use crate::lookup::{
    brand_barcodes, equals, optional_integer, refers_to, required_integer, required_text, resource,
};
use crate::process::{FileJob, ProcessError};
use crate::report::{FirstRows, Report};
use brandhub_catalog::Res;
use brandhub_catalog::{Cell, Layout, Record};
use brandhub_problem::{Words, words};
use brandhub_sheet::{Column as C, ColumnMap, FileType, Table};
use brandhub_store::WriteTx;
use brandhub_store::ids::{new_id, now_timestamp};
use sea_query::Cond;
use std::collections::HashMap;

/// Applies a stock file inside `tx`.
pub(crate) async fn apply(
    tx: &mut WriteTx,
    job: &FileJob,
    table: &Table,
    map: &ColumnMap,
    report: &mut Report,
) -> Result<(), ProcessError> {
    let Some(warehouse) = job.warehouse.clone() else {
        return Err(ProcessError::Fail(words!(
            "the file names no warehouse; upload it as {}",
            "die Datei nennt kein Lager; als {} hochladen",
            FileType::Stock.part_usage()
        )));
    };
    let stock = resource(Res::Stock);
    let variant = resource(Res::Variant);
    let s = Layout::of(stock);
    let barcodes = brand_barcodes(tx, &job.brand).await?;
    // Through the variants (not the brand shortcut): the (warehouse, variant) pair is unique,
    // whatever a record's shortcut says.
    let existing = tx
        .load_records(
            stock,
            Cond::all()
                .add(equals(stock, "fk_warehouse", &warehouse))
                .add(refers_to(
                    stock,
                    "fk_variant",
                    variant,
                    "fk_scopeBrand",
                    &job.brand,
                )),
        )
        .await?;
    let mut by_variant: HashMap<String, Record> = existing
        .into_iter()
        .map(|r| {
            (
                r.cells[s.cell("fk_variant")]
                    .as_text()
                    .unwrap_or_default()
                    .to_string(),
                r,
            )
        })
        .collect();
    let now = now_timestamp();
    let mut first_rows = FirstRows::default();
    let mut written = Vec::new();
    for row in table.rows() {
        let line = (|| -> Result<_, Words> {
            let barcode = required_text(row, map, C::Barcode)?;
            let in_stock = required_integer(row, map, C::InStock, stock, "inStock")?;
            let demand = optional_integer(row, map, C::Demand, stock, "demand")?;
            let supply = optional_integer(row, map, C::Supply, stock, "supply")?;
            Ok((barcode, in_stock, demand, supply))
        })();
        let Some((barcode, in_stock, demand, supply)) = report.checked(row.number(), line) else {
            continue;
        };
        let Some(found) = first_rows.variant(&barcodes, &barcode, row.number(), report) else {
            continue;
        };
        let mut record = by_variant.remove(&found.id).unwrap_or_else(|| {
            let mut record = Record::empty(stock);
            record.cells[s.cell("id")] = Cell::Text(new_id());
            record.cells[s.cell("fk_warehouse")] = Cell::Text(warehouse.clone());
            record.cells[s.cell("fk_variant")] = Cell::Text(found.id.clone());
            record.cells[s.cell("demand")] = Cell::Integer(0);
            record.cells[s.cell("supply")] = Cell::Integer(0);
            record
        });
        record.cells[s.cell("inStock")] = Cell::Integer(in_stock);
        if let Some(demand) = demand {
            record.cells[s.cell("demand")] = demand;
        }
        if let Some(supply) = supply {
            record.cells[s.cell("supply")] = supply;
        }
        record.cells[s.cell("lastUpdate")] = Cell::Text(now.clone());
        written.push(record);
        report.applied();
    }
    tx.upsert_records(stock, &mut written).await?;
    Ok(())
}
