//! Writing records: every text value is stored with its folded copy, lists go to their own
//! tables, and rows are sent in multi-row statements sized to the backends' parameter limits.

use crate::db::{Kind, WriteTx};
use brandhub_catalog::{
    Cell, Field, FieldType, Record, Resource,
    record::{list_fields, stored_fields},
};
use brandhub_problem::ApiResult;
use brandhub_query::text::fold;
use sea_query::{Alias, Condition, OnConflict, Order, Query, SelectStatement, Value};

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
    for field in stored_fields(resource) {
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

fn row_values(fields: &[&Field], record: &Record) -> Vec<Value> {
    let mut values = Vec::with_capacity(fields.len() * 2);
    for (field, cell) in fields.iter().zip(&record.cells) {
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
    /// Inserts records of one resource (and their list elements) in as few statements as the
    /// parameter limits allow.
    pub async fn insert_records(
        &mut self,
        resource: &'static Resource,
        records: &[Record],
    ) -> ApiResult<()> {
        self.insert_rows(resource, records, None).await?;
        for (list_index, field) in list_fields(resource).into_iter().enumerate() {
            let elements: Vec<(&str, usize, &str)> = records
                .iter()
                .flat_map(|record| {
                    record.lists[list_index]
                        .iter()
                        .enumerate()
                        .map(move |(position, value)| (record.id(), position, value.as_str()))
                })
                .collect();
            self.insert_list_elements(field, &elements).await?;
        }
        Ok(())
    }

    /// Reads whole records of a resource (every stored column, list fields left empty) that
    /// satisfy `condition`, inside the transaction, ordered by id: file processors compare
    /// them with a file's rows and write back only the ones that change.
    pub async fn load_records(
        &mut self,
        resource: &'static Resource,
        condition: Condition,
    ) -> ApiResult<Vec<Record>> {
        let (select, kinds) = select_records(resource, condition);
        let rows = self.fetch(&select, &kinds).await?;
        Ok(records_of(resource, rows))
    }

    /// Writes records by id in multi-row statements: new ids are inserted, existing ones have
    /// every stored column (and folded copy) overwritten. List fields are not written, so this
    /// serves resources without lists (products, variants, stock, prices, images, orders).
    pub async fn upsert_records(
        &mut self,
        resource: &'static Resource,
        records: &[Record],
    ) -> ApiResult<()> {
        let updated = insert_columns(resource)
            .into_iter()
            .filter(|c| c.as_str() != "id")
            .map(|c| Alias::new(c.as_str()));
        let overwrite = OnConflict::column(Alias::new("id"))
            .update_columns(updated)
            .to_owned();
        self.insert_rows(resource, records, Some(overwrite)).await
    }

    /// The stored columns of `records` in multi-row INSERTs within the parameter limits, each
    /// with `on_conflict` when given.
    async fn insert_rows(
        &mut self,
        resource: &'static Resource,
        records: &[Record],
        on_conflict: Option<OnConflict>,
    ) -> ApiResult<()> {
        let fields = stored_fields(resource);
        let columns = insert_columns(resource);
        let rows_per_statement = (MAX_PARAMETERS / columns.len()).clamp(1, MAX_ROWS);
        for chunk in records.chunks(rows_per_statement) {
            let mut insert = Query::insert();
            insert
                .into_table(Alias::new(resource.table))
                .columns(columns.iter().map(|c| Alias::new(c.as_str())));
            for record in chunk {
                insert.values_panic(row_values(&fields, record).into_iter().map(Into::into));
            }
            if let Some(on_conflict) = &on_conflict {
                insert.on_conflict(on_conflict.clone());
            }
            self.execute(resource.table, &insert).await?;
        }
        Ok(())
    }

    /// Inserts `(owner, position, value)` elements of a list field.
    pub async fn insert_list_elements(
        &mut self,
        field: &'static Field,
        elements: &[(&str, usize, &str)],
    ) -> ApiResult<()> {
        let Some(list) = &field.list else {
            return Ok(());
        };
        let folded = list.element == FieldType::Text;
        for chunk in elements.chunks(MAX_ROWS) {
            let mut insert = Query::insert();
            let mut columns = vec![
                Alias::new(list.owner_column),
                Alias::new("position"),
                Alias::new(list.value_column),
            ];
            if folded {
                columns.push(Alias::new(brandhub_catalog::naming::folded_column(
                    list.value_column,
                )));
            }
            insert.into_table(Alias::new(list.table)).columns(columns);
            for (owner, position, value) in chunk {
                let mut values: Vec<Value> =
                    vec![(*owner).into(), (*position as i64).into(), (*value).into()];
                if folded {
                    values.push(fold(value).into());
                }
                insert.values_panic(values.into_iter().map(Into::into));
            }
            self.execute(list.table, &insert).await?;
        }
        Ok(())
    }
}
