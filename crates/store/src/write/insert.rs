//! Inserting records in multi-row statements sized to the parameter limits: new records
//! (with their list elements), new records that a concurrent write may have beaten to their
//! keys, and upserts by id, with the locked read of whole records that an upsert follows.

use super::{
    MAX_PARAMETERS, MAX_ROWS, Stamp, insert_columns, records_of, row_values, select_records,
};
use crate::db::WriteTx;
use crate::error::StoreResult;
use crate::schema::ROW_VERSION;
use brandhub_catalog::{
    Record, Resource,
    record::{list_fields, stored_fields},
};
use sea_query::{Alias, Condition, Expr, ExprTrait, InsertStatement, LockType, OnConflict, Query};

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
}
