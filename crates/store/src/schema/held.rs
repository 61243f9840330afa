//! Bounds the database holds: a numeric field's range as a rule of its own, and the refusal
//! told when a write breaks one.

use super::*;
use crate::db::Backend;
use crate::error::StoreError;
use brandhub_catalog::{Field, Resource, catalog, grouped, record::stored_fields};

/// The name of the database rule that holds `field` of `resource` within its range.
fn held_name(resource: &Resource, field: &Field) -> String {
    format!("bh_held_{}_{}", resource.table, field.column)
}

/// The rules that hold each count of `resource` declared `held` within its range, whoever
/// writes it (docs/API.md, "Quantities and amounts": a stock move past ±1,000,000,000 is refused whole, and a sum
/// that passes what an integer holds, which SQLite would store as a real, never reads back):
/// on PostgreSQL a `CHECK` constraint, added `NOT VALID` so that migrating a filled table
/// reads none of its rows; on SQLite, which adds no constraint to a table it made, a trigger
/// before each insert and each update of the column that refuses a value that is not such a
/// whole number. Either fails the statement, and the write with it, naming the rule
/// ([`held_refusal`]).
pub fn held_statements(resource: &Resource, backend: Backend) -> Vec<String> {
    let mut statements = Vec::new();
    for field in stored_fields(resource) {
        let Some((least, most)) = field.held else {
            continue;
        };
        let (table, column, name) = (
            quote(resource.table),
            quote(&field.column),
            held_name(resource, field),
        );
        match backend {
            Backend::Postgres => statements.push(format!(
                "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = '{name}' AND conrelid = '{table}'::regclass) THEN ALTER TABLE {table} ADD CONSTRAINT {} CHECK ({column} BETWEEN {least} AND {most}) NOT VALID; END IF; END $$",
                quote(&name)
            )),
            Backend::Sqlite => {
                let outside = format!(
                    "NEW.{column} IS NOT NULL AND (typeof(NEW.{column}) <> 'integer' OR NEW.{column} NOT BETWEEN {least} AND {most})"
                );
                for (when, on) in [("insert", "INSERT".to_string()), ("update", format!("UPDATE OF {column}"))] {
                    statements.push(format!(
                        "CREATE TRIGGER IF NOT EXISTS {} BEFORE {on} ON {table} WHEN {outside} BEGIN SELECT RAISE(ABORT, '{name}'); END",
                        quote(&format!("{name}_{when}"))
                    ));
                }
            }
        }
    }
    statements
}

/// The refusal of a write that a rule of [`held_statements`] stopped: 422 naming the count
/// and its range, nothing of the write kept. `None` for any other database error.
pub(crate) fn held_refusal(error: &dyn sqlx::error::DatabaseError) -> Option<StoreError> {
    // PostgreSQL names the constraint; SQLite's trigger raises its name as the message.
    let named = error.constraint().unwrap_or(error.message());
    catalog().resources().iter().find_map(|resource| {
        stored_fields(resource).into_iter().find_map(|field| {
            let (least, most) = field.held?;
            (held_name(resource, field) == named).then(|| {
                StoreError::invalid(vec![brandhub_problem::FieldError::new(
                    format!("{}.{}", resource.name, field.path),
                    format!(
                        "would be taken outside {} to {} by this change, so none of it was written",
                        grouped(least),
                        grouped(most)
                    ),
                )])
            })
        })
    })
}
