//! Statements that fill or repair values a migration adds: derived copies, stamps and
//! values outside their domain.

use super::*;
use brandhub_catalog::{Resource, catalog, record::stored_fields};

/// For a new column that is a shortcut (`Field::derived`), the statement giving every existing
/// row its value: nested lookups along the to-one path it copies.
pub fn derived_fill_statement(resource: &Resource, column: &str) -> Option<String> {
    let field = stored_fields(resource)
        .into_iter()
        .find(|f| f.column == column)?;
    let path = field.derived_from?;
    let segments: Vec<&str> = path.split('.').collect();
    let (last, hops) = segments.split_last()?;
    // Walk the hops, remembering (table, fk column that leads there) pairs.
    let mut current = resource;
    let mut steps = Vec::new();
    for hop in hops {
        let relation = current.relation(hop)?;
        let fk = current.fk_field(relation)?;
        let target = catalog().target(relation);
        steps.push((fk.column.clone(), target.table));
        current = target;
    }
    let mut value = quote(&current.field_named(last)?.column);
    let mut tables: Vec<&str> = vec![resource.table];
    tables.extend(steps.iter().map(|(_, table)| *table));
    // Innermost first: SELECT value FROM last WHERE last.id = previous.fk.
    for (i, (fk, table)) in steps.iter().enumerate().rev() {
        let outer = tables[i];
        value = format!(
            "(SELECT {value} FROM {} WHERE {}.\"id\" = {}.{})",
            quote(table),
            quote(table),
            quote(outer),
            quote(fk)
        );
    }
    Some(format!(
        "UPDATE {} SET {} = {value}",
        quote(resource.table),
        quote(column)
    ))
}

/// The statements that repair stored values outside their domain of words
/// (`Field::repaired_to`: a brand store's unknown `stockType` becomes `live`, an unknown
/// `adjustType` empty), with their folded copies, stamped fields and record versions, one per
/// such field. Run on every migration: once repaired, no row matches it again. Words are compared
/// in any case, as their domain compares them; an empty value is unset, never repaired.
pub fn repair_statements(resource: &Resource, now: &str) -> Vec<String> {
    let literal = |text: &str| format!("'{}'", text.replace('\'', "''"));
    let mut statements = Vec::new();
    for field in resource.leaf_fields() {
        let (Some(word), Some(words)) = (
            field.repaired_to,
            field.domain.and_then(brandhub_catalog::Domain::words),
        ) else {
            continue;
        };
        let column = quote(&field.column);
        let mut set = vec![format!("{column} = {}", literal(word))];
        if let Some(folded) = field.folded_column() {
            set.push(format!(
                "{} = {}",
                quote(&folded),
                literal(&brandhub_query::text::fold(word))
            ));
        }
        for stamped in resource.stamped_fields() {
            set.push(format!("{} = {}", quote(&stamped.column), literal(now)));
        }
        set.push(format!("{0} = {0} + 1", quote(ROW_VERSION)));
        let allowed: Vec<String> = words
            .iter()
            .map(|w| literal(&w.to_ascii_lowercase()))
            .collect();
        statements.push(format!(
            "UPDATE {} SET {} WHERE {column} <> '' AND lower({column}) NOT IN ({})",
            quote(resource.table),
            set.join(", "),
            allowed.join(", ")
        ));
    }
    statements
}

/// For a new stamped column (`updatedDate`), the statement giving every existing row a value:
/// its `createdDate` where the resource has one, else `now` (the time of the migration).
pub fn stamped_fill_statement(resource: &Resource, column: &str, now: &str) -> Option<String> {
    let field = resource.stamped_fields().find(|f| f.column == column)?;
    let value = match resource.field_named("createdDate") {
        Some(created) => format!(
            "COALESCE({}, '{}')",
            quote(&created.column),
            now.replace('\'', "")
        ),
        None => format!("'{}'", now.replace('\'', "")),
    };
    Some(format!(
        "UPDATE {} SET {} = {value} WHERE {} IS NULL",
        quote(resource.table),
        quote(&field.column),
        quote(&field.column)
    ))
}

/// Every table whose writes are versioned: resource tables and list tables.
pub fn versioned_tables() -> Vec<&'static str> {
    let mut tables = Vec::new();
    for resource in catalog().resources() {
        tables.push(resource.table);
        for field in resource.leaf_fields() {
            if let Some(list) = &field.list {
                tables.push(list.table);
            }
        }
    }
    tables
}
