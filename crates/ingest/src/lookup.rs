//! What every processor needs: catalog names as SQL names, typed values from sheet cells, and
//! the brand-wide lookups each done in one statement (a brand's barcodes, its product codes).

use brandhub_catalog::Res;
use brandhub_catalog::{Cell, Record, Resource, catalog};
use brandhub_problem::{Words, words};
use brandhub_query::text::fold;
use brandhub_sheet::{Cell as SheetCell, Column, ColumnMap, Row};
use brandhub_store::StoreResult;
use brandhub_store::WriteTx;
use brandhub_store::db::Kind;
use sea_query::{Alias, Expr, ExprTrait, Query};
use std::collections::{BTreeSet, HashMap};

/// Rows per `IN (…)` list when looking up many values at once.
pub(crate) const CHUNK: usize = 500;

/// A resource of the catalog, by its handle.
pub(crate) fn resource(res: Res) -> &'static Resource {
    catalog().get(res)
}

/// The column of a field, by its API path.
pub(crate) fn column(resource: &Resource, path: &str) -> Alias {
    let field = resource
        .field_at(path)
        .unwrap_or_else(|| panic!("{} has a field {path}", resource.name));
    Alias::new(field.column.as_str())
}

/// `<column of path> = value`.
pub(crate) fn equals(resource: &Resource, path: &str, value: &str) -> Expr {
    Expr::col(column(resource, path)).eq(value)
}

/// `<fk> IN (SELECT id FROM <target> WHERE <path> = value)`: the records of `resource` whose
/// foreign key `fk` points at a `target` record with that value (such as the stock of a
/// brand's variants).
pub(crate) fn refers_to(
    resource: &Resource,
    fk: &str,
    target: &'static Resource,
    path: &str,
    value: &str,
) -> Expr {
    Expr::col(column(resource, fk)).in_subquery(
        Query::select()
            .column(Alias::new("id"))
            .from(Alias::new(target.table))
            .and_where(equals(target, path, value))
            .to_owned(),
    )
}

/// A cell's text (numbers as their digits), `""` when empty.
pub(crate) fn text_of(cell: &SheetCell) -> String {
    cell.as_text().map(|t| t.into_owned()).unwrap_or_default()
}

/// The most characters of a cell a reason quotes: a report stays short whatever the cells.
const QUOTED: usize = 50;

/// A cell as a reason quotes it: `"abc"`, a long text cut with `…`.
pub(crate) fn shown(cell: &SheetCell) -> String {
    quoted(&text_of(cell))
}

/// A text as a reason quotes it: `"abc"`, a long one cut with `…`.
fn quoted(text: &str) -> String {
    match text.char_indices().nth(QUOTED) {
        Some((cut, _)) => format!("\"{}…\"", &text[..cut]),
        None => format!("\"{text}\""),
    }
}

fn field_of<'r>(resource: &'r Resource, path: &str) -> &'r brandhub_catalog::Field {
    resource
        .field_at(path)
        .unwrap_or_else(|| panic!("{} has a field {path}", resource.name))
}

/// A text for the field at `path` of `resource`, or the reason the field's rules refuse it
/// (`Field::value_problem`, the rule JSON writes are checked by), naming the column it came
/// from.
pub(crate) fn fitting(
    resource: &Resource,
    path: &str,
    column: Column,
    text: String,
) -> Result<String, Words> {
    let field = field_of(resource, path);
    if let Some(problem) = field.length_problem(&text) {
        let label = column.label();
        let name = resource.name;
        return Err(Words::english(format!("{label} "))
            .then(&problem)
            .then(&words!(
                " (the {name} {path} it sets)",
                " (das Feld {path} von {name}, das sie setzt)"
            )));
    }
    let cell = Cell::Text(text);
    match field.value_problem(&cell) {
        None => Ok(match cell {
            Cell::Text(text) => text,
            _ => String::new(),
        }),
        Some(problem) => Err(Words::english(format!(
            "{} {} ",
            column.label(),
            quoted(cell.as_text().unwrap_or_default())
        ))
        .then(&problem)),
    }
}

/// The text of a record's cell, `""` when unset.
pub(crate) fn text_in(record: &Record, index: usize) -> &str {
    record.cells[index].as_text().unwrap_or_default()
}

/// An optional text column for the field at `path` of `resource`: `None` when the file lacks
/// it (the field stays as it is), else the cell's text (`""` for an empty cell, which clears
/// the field), or the reason it is too long for the field.
pub(crate) fn optional_text(
    row: &Row,
    map: &ColumnMap,
    column: Column,
    resource: &Resource,
    path: &str,
) -> Result<Option<Cell>, Words> {
    if !map.has(column) {
        return Ok(None);
    }
    fitting(resource, path, column, text_of(row.get(map, column))).map(|t| Some(Cell::Text(t)))
}

/// An optional whole-number column for the field at `path` of `resource`: `None` when the
/// file lacks it, `Null` for an empty cell, or the reason the cell is not a whole number the
/// field takes (its domain, `Field::value_problem`).
pub(crate) fn optional_integer(
    row: &Row,
    map: &ColumnMap,
    column: Column,
    resource: &Resource,
    path: &str,
) -> Result<Option<Cell>, Words> {
    let field = field_of(resource, path);
    optional(row, map, column, |cell| {
        let not_whole = || {
            words!(
                "{} {} is not a whole number",
                "{} {} ist keine ganze Zahl",
                column.label(),
                shown(cell)
            )
        };
        let Some(n) = cell.as_number() else {
            return Err(not_whole());
        };
        match cell.as_integer() {
            Some(whole) => within(field, column, Cell::Integer(whole)),
            // A whole number past what an integer holds is outside any domain of units.
            None if n.fract() == 0.0 => {
                Err(
                    Words::english(format!("{} {} ", column.label(), text_of(cell)))
                        .then(&field.expected().led_by(words!("must be ", "muss ")))
                        .then(&words!("", " sein")),
                )
            }
            None => Err(not_whole()),
        }
    })
}

/// An optional decimal column for the field at `path` of `resource`: `None` when the file
/// lacks it, `Null` for an empty cell, or the reason the cell is not a number the field takes.
pub(crate) fn optional_amount(
    row: &Row,
    map: &ColumnMap,
    column: Column,
    resource: &Resource,
    path: &str,
) -> Result<Option<Cell>, Words> {
    let field = field_of(resource, path);
    optional(row, map, column, |cell| {
        let value = cell.as_number().map(Cell::Number).ok_or_else(|| {
            words!(
                "{} {} is not a number",
                "{} {} ist keine Zahl",
                column.label(),
                shown(cell)
            )
        })?;
        within(field, column, value)
    })
}

/// A number as the field keeps it, or the reason the field's rules refuse it
/// (`Field::admit`, the rule JSON writes are checked by).
fn within(field: &brandhub_catalog::Field, column: Column, value: Cell) -> Result<Cell, Words> {
    let shown = match &value {
        Cell::Integer(n) => n.to_string(),
        Cell::Number(n) => n.to_string(),
        _ => String::new(),
    };
    field
        .admit(value)
        .map_err(|problem| Words::english(format!("{} {shown} ", column.label())).then(&problem))
}

/// An optional yes/no column: `None` when the file lacks it, `Null` for an empty cell, or the
/// reason the cell is not a yes or no.
pub(crate) fn optional_bool(
    row: &Row,
    map: &ColumnMap,
    column: Column,
) -> Result<Option<Cell>, Words> {
    optional(row, map, column, |cell| {
        cell.as_bool().map(Cell::Boolean).ok_or_else(|| {
            words!(
                "{} {} is not yes or no",
                "{} {} ist weder ja noch nein (yes/no)",
                column.label(),
                shown(cell)
            )
        })
    })
}

/// An optional column's cell read by `parse`: `None` when the file lacks the column (the
/// field stays as it is), `Null` for an empty cell (it clears the field), else the parsed
/// value or the reason it cannot be one.
fn optional(
    row: &Row,
    map: &ColumnMap,
    column: Column,
    parse: impl FnOnce(&brandhub_sheet::Cell) -> Result<Cell, Words>,
) -> Result<Option<Cell>, Words> {
    if !map.has(column) {
        return Ok(None);
    }
    let cell = row.get(map, column);
    if cell.is_empty() {
        return Ok(Some(Cell::Null));
    }
    parse(cell).map(Some)
}

/// A required text column's value, or the reason the row is skipped.
pub(crate) fn required_text(row: &Row, map: &ColumnMap, column: Column) -> Result<String, Words> {
    let text = text_of(row.get(map, column));
    if text.is_empty() {
        Err(empty(column))
    } else {
        Ok(text)
    }
}

/// A required whole-number column for the field at `path` of `resource`: the reason when the
/// cell is empty or not such a number.
pub(crate) fn required_integer(
    row: &Row,
    map: &ColumnMap,
    column: Column,
    resource: &Resource,
    path: &str,
) -> Result<i64, Words> {
    match optional_integer(row, map, column, resource, path)? {
        Some(Cell::Integer(n)) => Ok(n),
        _ => Err(empty(column)),
    }
}

/// The reason of a row whose required cell is empty.
fn empty(column: Column) -> Words {
    words!("{} is empty", "{} ist leer", column.label())
}

/// A required amount column for the field at `path` of `resource`: the reason when the cell
/// is empty or not such a number.
pub(crate) fn required_amount(
    row: &Row,
    map: &ColumnMap,
    column: Column,
    resource: &Resource,
    path: &str,
) -> Result<f64, Words> {
    match optional_amount(row, map, column, resource, path)? {
        Some(Cell::Number(n)) => Ok(n),
        _ => Err(empty(column)),
    }
}

/// The texts of two columns of which a row needs at least one (such as Product Code or
/// Barcode): the reason, naming the columns the file has, when both are empty.
pub(crate) fn either_text(
    row: &Row,
    map: &ColumnMap,
    first: Column,
    second: Column,
) -> Result<(String, String), Words> {
    let texts = (text_of(row.get(map, first)), text_of(row.get(map, second)));
    if texts.0.is_empty() && texts.1.is_empty() {
        return Err(match (map.has(first), map.has(second)) {
            (true, true) => words!(
                "{} and {} are empty",
                "{} und {} sind leer",
                first.label(),
                second.label()
            ),
            (false, true) => empty(second),
            _ => empty(first),
        });
    }
    Ok(texts)
}

/// The records at the `changed` positions, moved out: what a processor writes back.
pub(crate) fn take_changed(records: Vec<Record>, changed: &BTreeSet<usize>) -> Vec<Record> {
    records
        .into_iter()
        .enumerate()
        .filter(|(i, _)| changed.contains(i))
        .map(|(_, record)| record)
        .collect()
}

/// A variant of the file's brand, found by barcode.
#[derive(Debug, Clone)]
pub(crate) struct VariantRef {
    pub id: String,
    pub product: String,
}

/// Every variant of a brand, by folded barcode, in one statement (through the variant's
/// brand shortcut). A barcode that two variants share goes to the first by id.
pub(crate) async fn brand_barcodes(
    tx: &mut WriteTx,
    brand: &str,
) -> StoreResult<HashMap<String, VariantRef>> {
    let variant = resource(Res::Variant);
    let select = Query::select()
        .column(Alias::new("id"))
        .column(column(variant, "barcode"))
        .column(column(variant, "fk_product"))
        .from(Alias::new(variant.table))
        .and_where(equals(variant, "fk_scopeBrand", brand))
        .order_by(Alias::new("id"), sea_query::Order::Asc)
        .to_owned();
    let rows = tx.fetch(&select, &[Kind::Text; 3]).await?;
    let mut barcodes = HashMap::with_capacity(rows.len());
    for row in rows {
        let text = |i: usize| row[i].as_text().unwrap_or_default().to_string();
        barcodes
            .entry(fold(&text(1)))
            .or_insert_with(|| VariantRef {
                id: text(0),
                product: text(2),
            });
    }
    Ok(barcodes)
}

/// Every product of a brand: folded product code → product id, in one statement.
pub(crate) async fn brand_product_codes(
    tx: &mut WriteTx,
    brand: &str,
) -> StoreResult<HashMap<String, String>> {
    let product = resource(Res::Product);
    let select = Query::select()
        .column(Alias::new("id"))
        .column(column(product, "code"))
        .from(Alias::new(product.table))
        .and_where(equals(product, "fk_brand", brand))
        .to_owned();
    let rows = tx.fetch(&select, &[Kind::Text; 2]).await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            (
                fold(row[1].as_text().unwrap_or_default()),
                row[0].as_text().unwrap_or_default().to_string(),
            )
        })
        .collect())
}

/// The folded copy of a text field's column (what case-insensitive lookups compare).
pub(crate) fn folded(resource: &Resource, path: &str) -> Alias {
    let field = resource
        .field_at(path)
        .unwrap_or_else(|| panic!("{} has a field {path}", resource.name));
    Alias::new(
        field
            .folded_column()
            .unwrap_or_else(|| panic!("{}.{path} is text", resource.name)),
    )
}

/// Records of `resource` (one with a name and a code) by id as a message names them:
/// `"name" (code)`; an id not found is left out.
pub(crate) async fn labels(
    tx: &mut WriteTx,
    resource: &Resource,
    ids: &[String],
) -> StoreResult<HashMap<String, String>> {
    let mut labels = HashMap::new();
    for chunk in ids.chunks(CHUNK) {
        let statement = Query::select()
            .column(Alias::new("id"))
            .column(column(resource, "name"))
            .column(column(resource, "code"))
            .from(Alias::new(resource.table))
            .and_where(
                Expr::col(Alias::new("id")).is_in(chunk.iter().map(|id| id.to_ascii_uppercase())),
            )
            .to_owned();
        for row in tx
            .fetch(&statement, &[Kind::Text, Kind::Text, Kind::Text])
            .await?
        {
            if let Some(id) = row[0].as_text() {
                let name = row[1].as_text().unwrap_or_default();
                let code = row[2].as_text().unwrap_or_default();
                labels.insert(id.to_string(), crate::authority::label_of(name, code, id));
            }
        }
    }
    Ok(labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_fit_their_fields_or_say_why_not() {
        let product = resource(Res::Product);
        assert_eq!(
            fitting(product, "title", Column::Title, "ü".repeat(500)),
            Ok("ü".repeat(500))
        );
        assert_eq!(
            fitting(product, "title", Column::Title, "x".repeat(501)).map_err(|e| e.to_string()),
            Err(
                "Title has 501 characters; at most 500 are allowed (the product title it sets)"
                    .to_string()
            )
        );
        assert!(
            fitting(
                product,
                "description",
                Column::Description,
                "x".repeat(32_767)
            )
            .is_ok()
        );
        assert!(fitting(product, "code", Column::ProductCode, "x".repeat(101)).is_err());
    }

    #[test]
    fn reasons_quote_long_cells_cut() {
        assert_eq!(shown(&SheetCell::text("abc")), "\"abc\"");
        let long = shown(&SheetCell::text(&"é".repeat(1000)));
        assert_eq!(long, format!("\"{}…\"", "é".repeat(QUOTED)));
    }
}
