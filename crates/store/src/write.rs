//! Writing records: every text value is stored with its folded copy, lists go to their own
//! tables, and rows are sent in multi-row statements sized to the backends' parameter limits.
//!
//! Every write of records runs as a [`plan::WritePlan`] through the one executor
//! ([`executor`]), which alone begins the transactions that change records ([`begin`]).

mod begin;
pub mod executor;
pub mod plan;

pub use executor::runs;
pub use plan::{Begin, EntryPoint, Outcome, RACE_ATTEMPTS, StepFuture, WritePlan};

use crate::db::{Kind, WriteTx};
use crate::error::StoreResult;
use crate::schema::ROW_VERSION;
use brandhub_catalog::{
    Cell, Field, FieldType, Record, Resource, catalog,
    record::{list_fields, stored_fields},
};
use brandhub_query::text::fold;
use sea_query::{
    Alias, Condition, Expr, ExprTrait, InsertStatement, LockType, OnConflict, Order, Query,
    SelectStatement, UpdateStatement, Value,
};
use std::collections::{HashMap, HashSet};

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

/// How the rows of a multi-row insert are logged ([`crate::row_log`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Logged {
    /// New rows (an insert that skips conflicts writes nothing else: a skipped row makes
    /// its caller roll back).
    Inserted,
    /// Rows inserted or overwritten by id.
    Written,
}

/// When an insert is sent to the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    /// At once, its answer awaited.
    Now,
    /// With the transaction's next statement ([`WriteTx::insert_unanswered`]).
    WithNext,
}

/// How many inserted records a transaction keeps for the derived fields of later inserts
/// ([`WriteTx::inserted`]): enough for an order and its lines, not a file's thousands.
const KEPT_INSERTED: usize = 64;

impl WriteTx {
    /// The time of this write as a record timestamp, from the store's clock.
    pub fn now_timestamp(&self) -> String {
        crate::ids::timestamp_at(self.clock.now_millis())
    }

    /// Inserts records of one resource (and their list elements) in as few statements as the
    /// parameter limits allow, their derived fields filled from their declarations.
    pub async fn insert_records(
        &mut self,
        resource: &'static Resource,
        records: &mut [Record],
    ) -> StoreResult<()> {
        self.insert_records_sent(resource, records, Sent::Now).await
    }

    /// [`WriteTx::insert_records`] for a caller that waits for no answer: on SQLite the
    /// inserts go with the transaction's next statement (one round trip fewer in the write
    /// turn each), so a unique key they find taken is that statement's error, a 409 of this
    /// resource's table.
    pub async fn insert_records_with_next(
        &mut self,
        resource: &'static Resource,
        records: &mut [Record],
    ) -> StoreResult<()> {
        self.insert_records_sent(resource, records, Sent::WithNext)
            .await
    }

    async fn insert_records_sent(
        &mut self,
        resource: &'static Resource,
        records: &mut [Record],
        sent: Sent,
    ) -> StoreResult<()> {
        self.fill_derived(resource, records).await?;
        match sent {
            Sent::Now => {
                self.insert_rows(resource, records, None, Stamp::IfUnset, Logged::Inserted)
                    .await?;
            }
            Sent::WithNext => self.insert_rows_with_next(resource, records).await?,
        }
        if self.inserted.len() + records.len() <= KEPT_INSERTED {
            self.inserted
                .extend(records.iter().map(|record| (resource, record.clone())));
        }
        self.announce(resource, records.iter().map(Record::id), true)
            .await?;
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

    /// Inserts new records of one resource, skipping any whose unique values (a natural key)
    /// a concurrent write took meanwhile; `false` when one was skipped, so that the caller
    /// rolls back and tries again, now seeing the other write's record.
    ///
    /// An optimistic write ([`WriteTx::is_optimistic`]) of one record holds its insert for
    /// the statement that commits it ([`WriteTx::insert_unanswered_if_new`]): a key taken
    /// meanwhile then ends the write with [`crate::StoreError::raced`] instead.
    pub async fn insert_new_records(
        &mut self,
        resource: &'static Resource,
        records: &mut [Record],
    ) -> StoreResult<bool> {
        self.fill_derived(resource, records).await?;
        let skip = OnConflict::new().do_nothing().to_owned();
        if self.is_optimistic()
            && let [record] = &*records
        {
            for (_, insert) in self.insert_statements(resource, records, Stamp::IfUnset) {
                self.insert_unanswered_if_new(resource.table, insert, &[record.id()])
                    .await?;
            }
        } else {
            let inserted = self
                .insert_rows(
                    resource,
                    records,
                    Some(skip),
                    Stamp::IfUnset,
                    Logged::Inserted,
                )
                .await?;
            if inserted < records.len() as u64 {
                return Ok(false);
            }
        }
        self.announce(resource, records.iter().map(Record::id), true)
            .await?;
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
        Ok(true)
    }

    /// Reads whole records of a resource (every stored column, list fields left empty) that
    /// satisfy `condition`, inside the transaction, ordered by id: file processors compare
    /// them with a file's rows and write back only the ones that change. The rows are locked
    /// until the transaction ends (`FOR NO KEY UPDATE` on PostgreSQL, in id order; SQLite's
    /// write transactions run one at a time): a read-modify-write never overwrites a change
    /// committed after its read (docs/API.md, "Writes: concurrency and idempotency": two writers never lose each other's changes).
    pub async fn load_records(
        &mut self,
        resource: &'static Resource,
        condition: Condition,
    ) -> StoreResult<Vec<Record>> {
        let (mut select, kinds) = select_records(resource, condition);
        select.lock(LockType::NoKeyUpdate);
        let rows = self.fetch_returning(None, &select, &kinds).await?;
        Ok(records_of(resource, rows))
    }

    /// Writes records by id in multi-row statements: new ids are inserted, existing ones have
    /// every stored column (and folded copy) overwritten, their version one up, their derived
    /// fields filled from their declarations. Every record given is stamped with the time of
    /// the write (callers pass changed records only). List fields are not written, so this
    /// serves resources without lists (products, variants, stock, prices, images, orders).
    pub async fn upsert_records(
        &mut self,
        resource: &'static Resource,
        records: &mut [Record],
    ) -> StoreResult<()> {
        self.fill_derived(resource, records).await?;
        let updated = insert_columns(resource)
            .into_iter()
            .filter(|c| c.as_str() != "id")
            .map(|c| Alias::new(c.as_str()));
        let overwrite = OnConflict::column(Alias::new("id"))
            .update_columns(updated)
            .value(
                Alias::new(ROW_VERSION),
                Expr::col((Alias::new(resource.table), Alias::new(ROW_VERSION))).add(1),
            )
            .to_owned();
        self.insert_rows(
            resource,
            records,
            Some(overwrite),
            Stamp::Always,
            Logged::Written,
        )
        .await?;
        self.announce(resource, records.iter().map(Record::id), false)
            .await?;
        Ok(())
    }

    /// The stored columns of `records` in multi-row INSERTs within the parameter limits, each
    /// with `on_conflict` when given.
    async fn insert_rows(
        &mut self,
        resource: &'static Resource,
        records: &[Record],
        on_conflict: Option<OnConflict>,
        stamp: Stamp,
        logged: Logged,
    ) -> StoreResult<u64> {
        let mut affected = 0;
        for (chunk, mut insert) in self.insert_statements(resource, records, stamp) {
            let inserted = match &on_conflict {
                Some(on_conflict) => {
                    insert.on_conflict(on_conflict.clone());
                    logged == Logged::Inserted
                }
                None => true,
            };
            let ids: Vec<&str> = chunk.iter().map(Record::id).collect();
            affected += self
                .execute_insert_of(resource.table, &insert, &ids, inserted)
                .await?;
        }
        Ok(affected)
    }

    /// [`WriteTx::insert_rows`] of new records, sent with the next statement
    /// ([`WriteTx::insert_unanswered`]).
    async fn insert_rows_with_next(
        &mut self,
        resource: &'static Resource,
        records: &[Record],
    ) -> StoreResult<()> {
        for (chunk, insert) in self.insert_statements(resource, records, Stamp::IfUnset) {
            let ids: Vec<&str> = chunk.iter().map(Record::id).collect();
            self.insert_unanswered(resource.table, insert, &ids).await?;
        }
        Ok(())
    }

    /// The multi-row inserts of `records`, as many rows each as the parameter limits allow,
    /// with the records each one holds.
    fn insert_statements<'r>(
        &self,
        resource: &'static Resource,
        records: &'r [Record],
        stamp: Stamp,
    ) -> Vec<(&'r [Record], InsertStatement)> {
        let fields = stored_fields(resource);
        let now = self.now_timestamp();
        let columns = insert_columns(resource);
        let rows_per_statement = (MAX_PARAMETERS / columns.len()).clamp(1, MAX_ROWS);
        records
            .chunks(rows_per_statement)
            .map(|chunk| {
                let mut insert = Query::insert();
                insert
                    .into_table(Alias::new(resource.table))
                    .columns(columns.iter().map(|c| Alias::new(c.as_str())));
                for record in chunk {
                    insert.values_panic(
                        row_values(&fields, record, stamp, &now)
                            .into_iter()
                            .map(Into::into),
                    );
                }
                (chunk, insert)
            })
            .collect()
    }

    /// The value at a to-one `path` (links, then an id field) of each record: one statement
    /// per link after the first, for all records at once.
    pub(crate) async fn follow(
        &mut self,
        resource: &'static Resource,
        records: &[Record],
        path: &str,
    ) -> StoreResult<Vec<Option<String>>> {
        let segments: Vec<&str> = path.split('.').collect();
        let (last, hops) = segments.split_last().expect("split yields one part");
        let own = |name: &str| -> Vec<Option<String>> {
            records
                .iter()
                .map(|r| {
                    cell_of(resource, r, name)
                        .and_then(Cell::as_text)
                        .filter(|t| !t.is_empty())
                        .map(str::to_string)
                })
                .collect()
        };
        let Some((first, further)) = hops.split_first() else {
            return Ok(own(last));
        };
        let relation = resource.relation(first).expect("checked to-one path");
        let fk = resource.fk_field(relation).expect("checked to-one path");
        let mut values = own(fk.name);
        let mut current = catalog().target(relation);
        // (the resource reached, the column of it that leads on), then the final field. Where
        // a resource reached stores the rest of the path as a derived field of its own (a
        // variant its brand, for a stock record's), that column ends the walk a link early.
        let mut steps = Vec::new();
        let mut rest = further;
        loop {
            let remaining = rest
                .iter()
                .chain([last])
                .copied()
                .collect::<Vec<_>>()
                .join(".");
            if let Some(stored) = current
                .fields
                .iter()
                .find(|f| f.derived_from == Some(remaining.as_str()))
            {
                steps.push((current, stored.column.clone()));
                break;
            }
            let Some((hop, more)) = rest.split_first() else {
                let field = current.field_at(last).expect("checked to-one path");
                steps.push((current, field.column.clone()));
                break;
            };
            let relation = current.relation(hop).expect("checked to-one path");
            let fk = current.fk_field(relation).expect("checked to-one path");
            steps.push((current, fk.column.clone()));
            current = catalog().target(relation);
            rest = more;
        }
        for (table_of, column) in steps {
            let mut ids: Vec<String> = values
                .iter()
                .flatten()
                .cloned()
                .collect::<HashSet<_>>()
                .into_iter()
                .collect();
            let mut found: HashMap<String, String> = HashMap::new();
            let position = stored_fields(table_of)
                .iter()
                .position(|f| f.column == column);
            ids.retain(|id| match self.held(table_of, &column, position, id) {
                Some(value) => {
                    found.extend(value.map(|v| (id.clone(), v)));
                    false
                }
                None => true,
            });
            for chunk in ids.chunks(1_000) {
                let statement = Query::select()
                    .column(Alias::new("id"))
                    .column(Alias::new(column.as_str()))
                    .from(Alias::new(table_of.table))
                    .and_where(Expr::col(Alias::new("id")).is_in(chunk.iter().cloned()))
                    .to_owned();
                for row in self.fetch(&statement, &[Kind::Text, Kind::Text]).await? {
                    if let (Some(id), Some(value)) = (row[0].as_text(), row[1].as_text()) {
                        found.insert(id.to_string(), value.to_string());
                    }
                }
            }
            values = values
                .into_iter()
                .map(|v| v.and_then(|id| found.get(&id).cloned()))
                .collect();
        }
        Ok(values)
    }

    /// The value of `column` (the stored field at `position`) of the record `id` of `table`
    /// that this transaction holds already, unset or not: a derived value it was told
    /// ([`WriteTx::knows`]) or a record it inserted. `None`: it must be read.
    fn held(
        &self,
        table: &Resource,
        column: &str,
        position: Option<usize>,
        id: &str,
    ) -> Option<Option<String>> {
        if let Some((.., value)) = self
            .known
            .iter()
            .find(|(known, at, of, _)| *known == table.table && *at == column && of == id)
        {
            return Some(Some(value.clone()));
        }
        let (_, record) = self
            .inserted
            .iter()
            .find(|(resource, record)| resource.table == table.table && record.id() == id)?;
        Some(record.cells[position?].as_text().map(str::to_string))
    }

    /// Tells the transaction the value of a derived field of a record, read before it began:
    /// inserts whose own derived fields follow that one take it from here instead of reading
    /// it again. Only derived fields qualify: their paths pass only links no update changes
    /// (the catalog refuses others), so a value read before is the value now, as long as the
    /// record exists (a record deleted since fails the insert's foreign key instead).
    pub fn knows(&mut self, resource: &'static Resource, id: &str, path: &str, value: &str) {
        let Some(field) = resource
            .field_at(path)
            .filter(|field| field.derived_from.is_some())
        else {
            debug_assert!(false, "{}.{path} is not a derived field", resource.name);
            return;
        };
        self.known.push((
            resource.table,
            field.column.as_str(),
            id.to_string(),
            value.to_string(),
        ));
    }

    /// Sets every derived field of the records (`Field::derived`: a shortcut equal to the
    /// value at its path) from what the database holds along that path.
    pub(crate) async fn fill_derived(
        &mut self,
        resource: &'static Resource,
        records: &mut [Record],
    ) -> StoreResult<()> {
        for (i, field) in stored_fields(resource).into_iter().enumerate() {
            let Some(path) = field.derived_from else {
                continue;
            };
            let values = self.follow(resource, records, path).await?;
            for (record, value) in records.iter_mut().zip(values) {
                record.cells[i] = value.map_or(Cell::Null, Cell::Text);
            }
        }
        Ok(())
    }

    /// Sets the given fields (and their folded copies) of the record `id`, column by column (a
    /// concurrent change of other columns is kept), its stamped fields to now and its version
    /// one up; whether it wrote (nothing to set writes nothing, and the version stays).
    /// `read_at`: the record's version when it was read, which an optimistic write
    /// ([`WriteTx::is_optimistic`]) makes a condition of the update.
    pub async fn update_cells(
        &mut self,
        resource: &'static Resource,
        id: &str,
        cells: &[(&'static Field, Cell)],
        read_at: Option<i64>,
    ) -> StoreResult<bool> {
        if cells.is_empty() {
            return Ok(false);
        }
        let mut update = self.cells_update(resource, id, cells);
        // Read unlocked, the record is written only while its version is still the one read.
        let read_at = self.is_optimistic().then_some(read_at).flatten();
        if let Some(version) = read_at {
            update.and_where(Expr::col(Alias::new(crate::schema::ROW_VERSION)).eq(version));
        }
        self.update_unanswered(resource.table, update, &[id], read_at.is_some())
            .await?;
        self.announce(resource, [id], false).await?;
        Ok(true)
    }

    /// [`WriteTx::update_cells`] of a record that was not read, for an optimistic write: the
    /// update writes only while the record satisfies every one of `conditions` (the caller's
    /// scope and rules, a precondition), and the commit tells the version it wrote
    /// ([`WriteTx::update_unread`]); if it writes nothing, the write fails with
    /// [`crate::StoreError::raced`] and nothing of it is written.
    pub(crate) async fn update_cells_unread(
        &mut self,
        resource: &'static Resource,
        id: &str,
        cells: &[(&'static Field, Cell)],
        conditions: Vec<Expr>,
    ) -> StoreResult<()> {
        let mut update = self.cells_update(resource, id, cells);
        for condition in conditions {
            update.and_where(condition);
        }
        self.update_unread(resource.table, update, id).await?;
        self.announce(resource, [id], false).await
    }

    /// The update of [`WriteTx::update_cells`]: the fields given and their folded copies,
    /// the stamped fields and the version, of the record `id`.
    fn cells_update(
        &self,
        resource: &'static Resource,
        id: &str,
        cells: &[(&'static Field, Cell)],
    ) -> UpdateStatement {
        let mut update = Query::update();
        update.table(Alias::new(resource.table));
        // The stamped field is set by `stamp_update` alone: PostgreSQL refuses a column
        // assigned twice in one UPDATE.
        for (field, cell) in cells.iter().filter(|(field, _)| !field.stamped) {
            set_field(&mut update, field, cell);
        }
        stamp_update(&mut update, resource, &self.now_timestamp());
        update.and_where(Expr::col(Alias::new("id")).eq(id));
        update
    }

    /// Adds to counters of records found by a key, creating those the key finds none of (a
    /// stock record for a variant its warehouse never had): each record's `add` fields are
    /// added to the stored ones (unset counting as 0), its stamped fields set to now and its
    /// version one up, in multi-row `INSERT … ON CONFLICT (key) DO UPDATE` statements (one for
    /// an order's lines), so that concurrent writers never lose each other's additions.
    /// Records are taken in key order, so concurrent transactions lock rows in the same order.
    pub async fn add_to_records(
        &mut self,
        resource: &'static Resource,
        key: &[&str],
        add: &[&str],
        records: &mut [Record],
    ) -> StoreResult<()> {
        if records.is_empty() {
            return Ok(());
        }
        self.fill_derived(resource, records).await?;
        let fields = stored_fields(resource);
        let key_at: Vec<usize> = key
            .iter()
            .map(|path| {
                fields
                    .iter()
                    .position(|f| f.path == *path)
                    .expect("the key names stored fields")
            })
            .collect();
        let key_of = |r: &Record| -> Vec<String> {
            key_at
                .iter()
                .map(|i| r.cells[*i].as_text().unwrap_or_default().to_string())
                .collect()
        };
        records.sort_by_key(key_of);
        let column = |field: &Field| {
            Expr::col((
                Alias::new(resource.table),
                Alias::new(field.column.as_str()),
            ))
        };
        let excluded =
            |field: &Field| Expr::col((Alias::new("excluded"), Alias::new(field.column.as_str())));
        let mut on_conflict = OnConflict::columns(key.iter().map(|path| {
            Alias::new(
                resource
                    .field_at(path)
                    .expect("the key names fields")
                    .column
                    .as_str(),
            )
        }));
        for path in add {
            let field = resource.field_at(path).expect("added fields exist");
            on_conflict.value(
                Alias::new(field.column.as_str()),
                sea_query::Func::coalesce([column(field), Expr::val(0)]).add(excluded(field)),
            );
        }
        for field in resource.stamped_fields() {
            on_conflict.value(Alias::new(field.column.as_str()), excluded(field));
        }
        on_conflict.value(
            Alias::new(ROW_VERSION),
            Expr::col((Alias::new(resource.table), Alias::new(ROW_VERSION))).add(1),
        );
        // What a conflict updates, for the versions of the fields it changes.
        let updated_columns: Vec<&str> = add
            .iter()
            .map(|path| resource.field_at(path).expect("added fields exist"))
            .chain(resource.stamped_fields())
            .map(|field| field.column.as_str())
            .chain([ROW_VERSION])
            .collect();
        let now = self.now_timestamp();
        let columns = insert_columns(resource);
        let rows_per_statement = (MAX_PARAMETERS / columns.len()).clamp(1, MAX_ROWS);
        let mut changed = Vec::with_capacity(records.len());
        // Multi-row statements in key order (rows are locked in the same order by every
        // transaction). A key given twice starts a new statement: one statement may not
        // update a row twice, and the second addition must see the first.
        let mut start = 0;
        while start < records.len() {
            let mut end = start + 1;
            while end < records.len()
                && end - start < rows_per_statement
                && key_of(&records[end]) != key_of(&records[end - 1])
            {
                end += 1;
            }
            let mut insert = Query::insert();
            insert
                .into_table(Alias::new(resource.table))
                .columns(columns.iter().map(|c| Alias::new(c.as_str())));
            for record in &records[start..end] {
                insert.values_panic(
                    row_values(&fields, record, Stamp::Always, &now)
                        .into_iter()
                        .map(Into::into),
                );
            }
            insert
                .on_conflict(on_conflict.clone())
                // The ids of the records added to: the existing ones' where the key was taken.
                .returning_col(Alias::new("id"));
            let rows = self
                .fetch_untracked(resource.table, &insert, &[Kind::Text])
                .await?;
            let returned: Vec<String> = rows
                .into_iter()
                .filter_map(|row| row[0].as_text().map(str::to_string))
                .collect();
            // Only a record's own new id coming back means a row was inserted; if every id is
            // an existing record's, rows were only updated and the count of the resource's
            // records stays cached (see `versions::rows_key`).
            let back: HashSet<&str> = returned.iter().map(String::as_str).collect();
            let inserted = records[start..end].iter().any(|r| back.contains(r.id()));
            if inserted {
                self.touch(resource.table);
            } else {
                let ids: Vec<&str> = returned.iter().map(String::as_str).collect();
                self.mark_updated_rows(resource.table, updated_columns.iter().copied(), Some(&ids));
            }
            changed.extend(returned);
            start = end;
        }
        self.announce(resource, changed.iter().map(String::as_str), false)
            .await?;
        Ok(())
    }

    /// [`WriteTx::add_to_records`] for records the caller found by their key before this
    /// write, by id (`additions`: each record's id and one value per `add` field): one
    /// `UPDATE` whose `CASE`s give each row its additions, rows locked in key order as
    /// [`WriteTx::add_to_records`] locks them, sent as an update nobody waits on
    /// ([`WriteTx::update_unanswered`]). So an optimistic write (an order's intake on
    /// PostgreSQL) sends it with the statement that commits it. A record deleted since it was
    /// found is not made again: the write is as if the deletion came after it.
    pub async fn add_to_known_records(
        &mut self,
        resource: &'static Resource,
        key: &[&str],
        add: &[&str],
        additions: &[(String, Vec<i64>)],
    ) -> StoreResult<()> {
        if additions.is_empty() {
            return Ok(());
        }
        let id = || Expr::col((Alias::new(resource.table), Alias::new("id")));
        let mut update = Query::update();
        update.table(Alias::new(resource.table));
        for (at, path) in add.iter().enumerate() {
            let field = resource.field_at(path).expect("added fields exist");
            let column = Expr::col((
                Alias::new(resource.table),
                Alias::new(field.column.as_str()),
            ));
            let mut by_id = Expr::case(id().eq(additions[0].0.as_str()), additions[0].1[at]);
            for (record, values) in &additions[1..] {
                by_id = by_id.case(id().eq(record.as_str()), values[at]);
            }
            update.value(
                Alias::new(field.column.as_str()),
                sea_query::Func::coalesce([column, Expr::val(0)]).add(by_id.finally(0i64)),
            );
        }
        stamp_update(&mut update, resource, &self.now_timestamp());
        let ids: Vec<&str> = additions.iter().map(|(id, _)| id.as_str()).collect();
        // Locked in key order, as every writer of these records locks them.
        let mut locked = Query::select();
        locked
            .column(Alias::new("id"))
            .from(Alias::new(resource.table))
            .and_where(Expr::col(Alias::new("id")).is_in(ids.iter().copied()))
            .lock(LockType::NoKeyUpdate);
        for path in key {
            let field = resource.field_at(path).expect("the key names fields");
            locked.order_by(Alias::new(field.column.as_str()), Order::Asc);
        }
        update.and_where(id().in_subquery(locked));
        self.update_unanswered(resource.table, update, &ids, false)
            .await?;
        self.announce(resource, ids, false).await
    }

    /// Reads the list fields of records (each record's elements in their order), inside the
    /// transaction.
    pub async fn load_lists(
        &mut self,
        resource: &'static Resource,
        records: &mut [Record],
    ) -> StoreResult<()> {
        let ids: Vec<String> = records.iter().map(|r| r.id().to_string()).collect();
        for (list_index, field) in list_fields(resource).into_iter().enumerate() {
            let Some(list) = &field.list else {
                continue;
            };
            let mut found: std::collections::HashMap<String, Vec<String>> =
                std::collections::HashMap::new();
            for chunk in ids.chunks(MAX_ROWS) {
                let select = Query::select()
                    .columns([Alias::new(list.owner_column), Alias::new(list.value_column)])
                    .from(Alias::new(list.table))
                    .and_where(
                        Expr::col(Alias::new(list.owner_column)).is_in(chunk.iter().cloned()),
                    )
                    .order_by(Alias::new(list.owner_column), Order::Asc)
                    .order_by(Alias::new("position"), Order::Asc)
                    .to_owned();
                for row in self.fetch(&select, &[Kind::Text, Kind::Text]).await? {
                    if let (Some(owner), Some(value)) = (row[0].as_text(), row[1].as_text()) {
                        found
                            .entry(owner.to_string())
                            .or_default()
                            .push(value.to_string());
                    }
                }
            }
            for record in records.iter_mut() {
                record.lists[list_index] = found.remove(record.id()).unwrap_or_default();
            }
        }
        Ok(())
    }

    /// Replaces the elements of a list field of the record `owner` with `values`.
    pub async fn replace_list(
        &mut self,
        field: &'static Field,
        owner: &str,
        values: &[String],
    ) -> StoreResult<()> {
        let Some(list) = &field.list else {
            return Ok(());
        };
        let delete = Query::delete()
            .from_table(Alias::new(list.table))
            .and_where(Expr::col(Alias::new(list.owner_column)).eq(owner))
            .to_owned();
        self.execute(list.table, &delete).await?;
        let elements: Vec<(&str, usize, &str)> = values
            .iter()
            .enumerate()
            .map(|(position, value)| (owner, position, value.as_str()))
            .collect();
        self.insert_list_elements(field, &elements).await
    }

    /// Inserts `(owner, position, value)` elements of a list field.
    pub async fn insert_list_elements(
        &mut self,
        field: &'static Field,
        elements: &[(&str, usize, &str)],
    ) -> StoreResult<()> {
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
