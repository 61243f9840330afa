//! Writing records: every text value is stored with its folded copy, lists go to their own
//! tables, and rows are sent in multi-row statements sized to the backends' parameter limits.
//!
//! Every write of records runs as a [`plan::WritePlan`] through the one executor
//! ([`executor`]), which alone begins the transactions that change records ([`begin`]).

mod begin;
mod counters;
mod derived;
pub mod executor;
mod insert;
mod lists;
pub mod plan;
mod update;

pub use executor::runs;
pub use plan::{Begin, EntryPoint, Outcome, RACE_ATTEMPTS, StepFuture, WritePlan};

use crate::db::{Kind, WriteTx};
use crate::schema::ROW_VERSION;
use brandhub_catalog::{
    Cell, Field, FieldType, Record, Resource,
    record::{list_fields, stored_fields},
};
use brandhub_query::text::fold;
use sea_query::{
    Alias, Condition, Expr, ExprTrait, Order, Query, SelectStatement, UpdateStatement, Value,
};

/// The most bound parameters one statement carries (SQLite allows 32766, PostgreSQL 65535).
const MAX_PARAMETERS: usize = 30_000;
/// The most rows one statement carries.
const MAX_ROWS: usize = 1_000;

/// A cell as a bound value of its field's column type (typed nulls keep PostgreSQL happy).
pub fn cell_value(field: &Field, cell: &Cell) -> Value {
    match (field.ty, cell) {
        (_, Cell::Text(text)) => Value::String(Some(text.clone())),
        (_, Cell::Integer(n)) if field.ty == FieldType::Number => Value::Double(Some(*n as f64)),
        (_, Cell::Integer(n)) => Value::BigInt(Some(*n)),
        (_, Cell::Number(n)) => Value::Double(Some(*n)),
        (_, Cell::Boolean(b)) => Value::Bool(Some(*b)),
        (FieldType::Integer, Cell::Null) => Value::BigInt(None),
        (FieldType::Number, Cell::Null) => Value::Double(None),
        (FieldType::Boolean, Cell::Null) => Value::Bool(None),
        (FieldType::Text, Cell::Null) => Value::String(Some(String::new())),
        (_, Cell::Null) => Value::String(None),
    }
}

/// The column names a record's values go to, folded copies right after their source.
fn insert_columns(resource: &Resource) -> Vec<String> {
    let mut columns = Vec::new();
    for field in written_fields(resource) {
        columns.push(field.column.clone());
        if let Some(folded) = field.folded_column() {
            columns.push(folded);
        }
    }
    columns
}

/// The value of a text field's folded copy (what case-insensitive filters compare).
pub(crate) fn folded_value(cell: &Cell) -> Value {
    Value::String(Some(fold(cell.as_text().unwrap_or_default())))
}

/// The value of a field in a record.
pub(crate) fn cell_of<'r>(resource: &Resource, record: &'r Record, path: &str) -> Option<&'r Cell> {
    stored_fields(resource)
        .into_iter()
        .position(|f| f.path == path)
        .map(|i| &record.cells[i])
}

/// The stored fields brandhub writes: all but those the database computes.
fn written_fields(resource: &Resource) -> Vec<&Field> {
    stored_fields(resource)
        .into_iter()
        .filter(|f| f.generated.is_none())
        .collect()
}

/// How a write treats the stamped field (`updatedDate`) of the records it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stamp {
    /// The time of the write where the record has none (the demo brings its own).
    IfUnset,
    /// Always the time of the write.
    Always,
}

fn row_values(fields: &[&Field], record: &Record, stamp: Stamp, now: &str) -> Vec<Value> {
    let mut values = Vec::with_capacity(fields.len() * 2);
    let now = Cell::Text(now.to_string());
    for (field, cell) in fields.iter().zip(&record.cells) {
        if field.generated.is_some() {
            continue;
        }
        let cell = if field.stamped && (stamp == Stamp::Always || cell.is_unset()) {
            &now
        } else {
            cell
        };
        values.push(cell_value(field, cell));
        if field.folded_column().is_some() {
            values.push(folded_value(cell));
        }
    }
    values
}

/// Every stored column of a resource's records that satisfy `condition`, ordered by id, with
/// the decoding of each column; [`records_of`] turns the rows into records.
pub(crate) fn select_records(
    resource: &Resource,
    condition: Condition,
) -> (SelectStatement, Vec<Kind>) {
    let fields = stored_fields(resource);
    let kinds = fields.iter().map(|f| Kind::of(f.ty)).collect();
    let select = Query::select()
        .columns(fields.iter().map(|f| Alias::new(f.column.as_str())))
        .from(Alias::new(resource.table))
        .cond_where(condition)
        .order_by(Alias::new("id"), Order::Asc)
        .to_owned();
    (select, kinds)
}

/// Adds what every change of a resource's records also sets: the stamped field
/// (`updatedDate`) to `now` and the record version one up. Every UPDATE of a resource table
/// goes through here, so `ETag`s and `updatedDate` move with every write.
pub fn stamp_update(update: &mut UpdateStatement, resource: &Resource, now: &str) {
    for field in resource.stamped_fields() {
        update.value(Alias::new(field.column.as_str()), now);
    }
    update.value(
        Alias::new(ROW_VERSION),
        Expr::col(Alias::new(ROW_VERSION)).add(1),
    );
}

/// Sets a field and its folded copy (which filters and ordering read) in an UPDATE.
pub(crate) fn set_field(update: &mut UpdateStatement, field: &Field, cell: &Cell) {
    update.value(Alias::new(field.column.as_str()), cell_value(field, cell));
    if let Some(folded) = field.folded_column() {
        update.value(Alias::new(folded), folded_value(cell));
    }
}

/// Rows of [`select_records`] as records (list fields left empty).
pub(crate) fn records_of(resource: &Resource, rows: Vec<Vec<Cell>>) -> Vec<Record> {
    let lists = list_fields(resource).len();
    rows.into_iter()
        .map(|cells| Record {
            cells,
            lists: vec![Vec::new(); lists],
        })
        .collect()
}

impl WriteTx {
    /// The time of this write as a record timestamp, from the store's clock.
    pub fn now_timestamp(&self) -> String {
        crate::ids::timestamp_at(self.clock.now_millis())
    }
}
