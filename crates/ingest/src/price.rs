//! Price files: one price per variant of the file's brand and currency for the host and the
//! dates of the upload's part name. The optional Currency column names each price's currency
//! (ISO 4217, kept in capitals); an empty cell or no such column means any currency (docs/API.md,
//! "Offers"). A price with the same variant, host, currency and start date (its natural key,
//! docs/API.md, "Writes: master data and catalogue") is updated in place, its end date included;
//! only prices whose values change are written, and those get `fk_file` = this file.

use crate::lookup::{
    brand_barcodes, equals, optional_amount, optional_text, refers_to, required_amount,
    required_text, resource, text_in,
};
use crate::process::{FileJob, ProcessError};
use crate::report::{FirstRows, Report};
use brandhub_catalog::Res;
use brandhub_catalog::{Cell, Layout, Record};
use brandhub_problem::{Words, words};
use brandhub_query::text::fold;
use brandhub_sheet::{Column as C, ColumnMap, FileType, Table};
use brandhub_store::WriteTx;
use brandhub_store::ids::new_id;
use sea_query::Cond;
use std::collections::HashMap;

/// Applies a price file inside `tx`.
pub(crate) async fn apply(
    tx: &mut WriteTx,
    job: &FileJob,
    table: &Table,
    map: &ColumnMap,
    report: &mut Report,
) -> Result<(), ProcessError> {
    let (Some(host), Some(start)) = (job.host.clone(), job.start.clone()) else {
        return Err(ProcessError::Fail(words!(
            "the file names no host or start date; upload it as {}",
            "die Datei nennt keinen Verkaufskanal oder kein Startdatum; als {} hochladen",
            FileType::Price.part_usage()
        )));
    };
    let price = resource(Res::Price);
    let variant = resource(Res::Variant);
    let l = Layout::of(price);
    let barcodes = brand_barcodes(tx, &job.brand).await?;
    let existing = tx
        .load_records(
            price,
            Cond::all()
                .add(equals(price, "fk_host", &host))
                .add(equals(price, "startDate", &start))
                .add(refers_to(
                    price,
                    "fk_variant",
                    variant,
                    "fk_scopeBrand",
                    &job.brand,
                )),
        )
        .await?;
    // By variant and currency (folded, as the natural key compares it).
    let mut by_variant: HashMap<(String, String), Record> = HashMap::new();
    for record in existing {
        let key = (
            text_in(&record, l.cell("fk_variant")).to_string(),
            fold(text_in(&record, l.cell("currency"))),
        );
        by_variant.entry(key).or_insert(record);
    }
    let mut first_rows = FirstRows::default();
    let mut written = Vec::new();
    for row in table.rows() {
        let line = (|| -> Result<_, Words> {
            let barcode = required_text(row, map, C::Barcode)?;
            let amount = required_amount(row, map, C::Price, resource(Res::Price), "price")?;
            let rrp = optional_amount(row, map, C::Rrp, resource(Res::Price), "rrp")?;
            let currency = optional_text(row, map, C::Currency, price, "currency")?
                .and_then(|cell| cell.as_text().map(|t| t.trim().to_ascii_uppercase()))
                .unwrap_or_default();
            Ok((barcode, amount, rrp, currency))
        })();
        let Some((barcode, amount, rrp, currency)) = report.checked(row.number(), line) else {
            continue;
        };
        let Some(found) =
            first_rows.variant_in(&barcodes, &barcode, &currency, row.number(), report)
        else {
            continue;
        };
        let (mut record, new) = match by_variant.remove(&(found.id.clone(), fold(&currency))) {
            Some(record) => (record, false),
            None => {
                let mut record = Record::empty(price);
                record.cells[l.cell("id")] = Cell::Text(new_id());
                record.cells[l.cell("fk_variant")] = Cell::Text(found.id.clone());
                record.cells[l.cell("fk_host")] = Cell::Text(host.clone());
                record.cells[l.cell("currency")] = Cell::Text(currency.clone());
                record.cells[l.cell("startDate")] = Cell::Text(start.clone());
                (record, true)
            }
        };
        let before = record.cells.clone();
        record.cells[l.cell("endDate")] = job.end.clone().map_or(Cell::Null, Cell::Text);
        record.cells[l.cell("price")] = Cell::Number(amount);
        if let Some(rrp) = rrp {
            record.cells[l.cell("rrp")] = rrp;
        }
        if new || record.cells != before {
            record.cells[l.cell("fk_file")] = Cell::Text(job.id.clone());
            written.push(record);
        }
        report.applied();
    }
    tx.upsert_records(price, &mut written).await?;
    Ok(())
}
