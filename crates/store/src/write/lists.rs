//! List fields, kept in tables of their own: the elements of records read in their order,
//! replaced, and inserted with the folded copies of text elements.

use super::MAX_ROWS;
use crate::db::{Kind, WriteTx};
use crate::error::StoreResult;
use brandhub_catalog::{Field, FieldType, Record, Resource, record::list_fields};
use brandhub_query::text::fold;
use sea_query::{Alias, Expr, ExprTrait, Order, Query, Value};

impl WriteTx {
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
