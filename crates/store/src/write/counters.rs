//! Additions to counters (a stock record's units), in statements that add to what is stored,
//! so that concurrent writers never lose each other's additions; records are locked in key
//! order.

use super::{MAX_PARAMETERS, MAX_ROWS, Stamp, insert_columns, row_values, stamp_update};
use crate::db::{Kind, WriteTx};
use crate::error::StoreResult;
use crate::schema::ROW_VERSION;
use brandhub_catalog::{Field, Record, Resource, record::stored_fields};
use sea_query::{Alias, Expr, ExprTrait, LockType, OnConflict, Order, Query};
use std::collections::HashSet;

impl WriteTx {
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
}
