//! Derived fields (`Field::derived`): the value at a record's to-one path, followed link by
//! link from what the transaction holds or the database stores, filled in before a write.

use super::cell_of;
use crate::db::{Kind, WriteTx};
use crate::error::StoreResult;
use brandhub_catalog::{Cell, Record, Resource, catalog, record::stored_fields};
use sea_query::{Alias, Expr, ExprTrait, Query};
use std::collections::{HashMap, HashSet};

impl WriteTx {
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
}
