//! Product files: one row per variant. Products are upserted by (brand, product code), variants
//! by (brand, barcode); both are matched case-insensitively. A product takes its fields from the
//! first row that names it. A column the file lacks leaves its field as it is; an empty cell
//! clears it. Only records whose values change are written, and those get `detail.importFile`
//! = this file, so uploading the same file again changes nothing.

use crate::lookup::{
    equals, fitting, optional_amount, optional_bool, optional_integer, optional_text,
    required_text, resource, take_changed, text_in,
};
use crate::process::{FileJob, ProcessError};
use crate::report::{FirstRows, Report};
use brandhub_catalog::Res;
use brandhub_catalog::{Cell, Layout, Record};
use brandhub_problem::Words;
use brandhub_query::text::fold;
use brandhub_sheet::{Column as C, ColumnMap, Row, Table};
use brandhub_store::WriteTx;
use brandhub_store::ids::{new_id, now_timestamp};
use sea_query::Cond;
use std::collections::{BTreeSet, HashMap};

/// The product fields a row may set, after the required code and title.
pub(crate) const PRODUCT_TEXTS: [(C, &str); 7] = [
    (C::Category, "category"),
    (C::Description, "description"),
    (C::Season, "season"),
    (C::Origin, "origin"),
    (C::Composition, "composition"),
    (C::CareInstructions, "careInstructions"),
    (C::CommodityCode, "commodityCode"),
];

/// The variant text fields a row may set, besides the barcode.
pub(crate) const VARIANT_TEXTS: [(C, &str); 3] = [
    (C::VariantCode, "code"),
    (C::Colour, "colour"),
    (C::Size, "size"),
];

/// A row's values, checked (texts against their fields' lengths too).
struct Line {
    code: String,
    title: String,
    barcode: String,
    sequence: Option<Cell>,
    rrp: Option<Cell>,
    price: Option<Cell>,
    vatable: Option<Cell>,
    /// The optional product and variant texts the file has, by field path.
    product_texts: Vec<(&'static str, Cell)>,
    variant_texts: Vec<(&'static str, Cell)>,
}

fn read_line(row: &Row, map: &ColumnMap) -> Result<Line, Words> {
    let product = resource(Res::Product);
    let variant = resource(Res::Variant);
    let texts = |resource, columns: &[(C, &'static str)]| {
        let mut texts = Vec::new();
        for &(column, path) in columns {
            if let Some(cell) = optional_text(row, map, column, resource, path)? {
                texts.push((path, cell));
            }
        }
        Ok::<_, Words>(texts)
    };
    Ok(Line {
        code: fitting(
            product,
            "code",
            C::ProductCode,
            required_text(row, map, C::ProductCode)?,
        )?,
        title: fitting(
            product,
            "title",
            C::Title,
            required_text(row, map, C::Title)?,
        )?,
        barcode: fitting(
            variant,
            "barcode",
            C::Barcode,
            required_text(row, map, C::Barcode)?,
        )?,
        sequence: optional_integer(row, map, C::Sequence, variant, "sequence")?,
        rrp: optional_amount(row, map, C::Rrp, variant, "rrp")?,
        price: optional_amount(row, map, C::Price, variant, "detail.price")?,
        vatable: optional_bool(row, map, C::Vatable)?,
        product_texts: texts(product, &PRODUCT_TEXTS)?,
        variant_texts: texts(variant, &VARIANT_TEXTS)?,
    })
}

/// Applies a product file inside `tx`.
pub(crate) async fn apply(
    tx: &mut WriteTx,
    job: &FileJob,
    table: &Table,
    map: &ColumnMap,
    report: &mut Report,
) -> Result<(), ProcessError> {
    let product = resource(Res::Product);
    let variant = resource(Res::Variant);
    let p = Layout::of(product);
    let v = Layout::of(variant);
    let mut products = tx
        .load_records(
            product,
            Cond::all().add(equals(product, "fk_brand", &job.brand)),
        )
        .await?;
    let mut variants = tx
        .load_records(
            variant,
            Cond::all().add(equals(variant, "fk_scopeBrand", &job.brand)),
        )
        .await?;
    let mut by_code: HashMap<String, usize> = products
        .iter()
        .enumerate()
        .map(|(i, r)| (fold(text_in(r, p.cell("code"))), i))
        .collect();
    let mut by_barcode: HashMap<String, usize> = HashMap::new();
    for (i, r) in variants.iter().enumerate() {
        by_barcode
            .entry(fold(text_in(r, v.cell("barcode"))))
            .or_insert(i);
    }
    let mut changed_products = BTreeSet::new();
    let mut changed_variants = BTreeSet::new();
    let mut described = BTreeSet::new();
    let mut first_rows = FirstRows::default();
    let now = now_timestamp();
    let file_id = Cell::Text(job.id.clone());

    for row in table.rows() {
        let Some(line) = report.checked(row.number(), read_line(row, map)) else {
            continue;
        };
        let barcode_key = fold(&line.barcode);
        if !first_rows.claim(&barcode_key, &line.barcode, row.number(), report) {
            continue;
        }

        // The product: found by code, or new.
        let code_key = fold(&line.code);
        let pi = match by_code.get(&code_key) {
            Some(i) => *i,
            None => {
                let mut record = Record::empty(product);
                record.cells[p.cell("id")] = Cell::Text(new_id());
                record.cells[p.cell("fk_brand")] = Cell::Text(job.brand.clone());
                record.cells[p.cell("createdDate")] = Cell::Text(now.clone());
                record.cells[p.cell("status")] = Cell::Text("active".into());
                products.push(record);
                by_code.insert(code_key, products.len() - 1);
                changed_products.insert(products.len() - 1);
                products.len() - 1
            }
        };
        if described.insert(pi) {
            let record = &mut products[pi];
            let before = record.cells.clone();
            record.cells[p.cell("code")] = Cell::Text(line.code.clone());
            record.cells[p.cell("title")] = Cell::Text(line.title.clone());
            for (path, cell) in &line.product_texts {
                record.cells[p.cell(path)] = cell.clone();
            }
            if record.cells != before {
                changed_products.insert(pi);
            }
            if changed_products.contains(&pi) {
                record.cells[p.cell("detail.importFile")] = file_id.clone();
            }
        }
        let product_id = products[pi].id().to_string();

        // The variant: found by barcode within the brand, or new.
        let (vi, new) = match by_barcode.get(&barcode_key) {
            Some(i) => (*i, false),
            None => {
                let mut record = Record::empty(variant);
                record.cells[v.cell("id")] = Cell::Text(new_id());
                variants.push(record);
                by_barcode.insert(barcode_key, variants.len() - 1);
                (variants.len() - 1, true)
            }
        };
        let record = &mut variants[vi];
        let before = record.cells.clone();
        record.cells[v.cell("fk_product")] = Cell::Text(product_id);
        record.cells[v.cell("barcode")] = Cell::Text(line.barcode.clone());
        for (path, cell) in &line.variant_texts {
            record.cells[v.cell(path)] = cell.clone();
        }
        if let Some(cell) = line.sequence {
            record.cells[v.cell("sequence")] = cell;
        }
        if let Some(cell) = line.rrp {
            record.cells[v.cell("rrp")] = cell.clone();
            record.cells[v.cell("detail.rrp")] = cell;
        }
        if let Some(cell) = line.price {
            record.cells[v.cell("detail.price")] = cell;
        }
        if let Some(cell) = line.vatable {
            record.cells[v.cell("vatable")] = cell;
        }
        if new || record.cells != before {
            record.cells[v.cell("detail.importFile")] = file_id.clone();
            changed_variants.insert(vi);
        }
        report.applied();
    }

    tx.upsert_records(product, &mut take_changed(products, &changed_products))
        .await?;
    tx.upsert_records(variant, &mut take_changed(variants, &changed_variants))
        .await?;
    Ok(())
}
