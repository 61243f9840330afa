//! Natural keys: the unique index over a resource's natural key, on the folded copies.

use super::*;
use crate::db::Backend;
use brandhub_catalog::{Field, Resource};

/// The unique index of a resource's natural key (docs/API.md, "Writes: master data and catalogue"), unless a declared unique index
/// says the same: two writers creating one key at once (two requests, or a request and a
/// file) cannot both insert it. Records whose key is partly unset are not named by it, and
/// are left out.
pub fn natural_key_index(resource: &Resource, backend: Backend) -> Option<String> {
    let key = &resource.writes.natural_key;
    if key.is_empty()
        || resource
            .indexes
            .iter()
            .any(|index| index.unique && index.paths == *key)
    {
        return None;
    }
    let fields: Vec<&Field> = key
        .iter()
        .map(|path| resource.field_at(path).expect("natural keys are fields"))
        .collect();
    // A part with a default is always set (a price's currency: empty for any).
    let set: Vec<String> = fields
        .iter()
        .filter(|field| field.default.is_none())
        .map(|field| match field.folded_column() {
            Some(folded) => format!("{} <> ''", quote(&folded)),
            None => format!("{} IS NOT NULL", quote(&field.column)),
        })
        .collect();
    Some(format!(
        "CREATE UNIQUE INDEX IF NOT EXISTS {} ON {} ({}){}",
        quote(&natural_key_index_name(resource)),
        quote(resource.table),
        fields
            .iter()
            .map(|f| index_column(f, backend))
            .collect::<Vec<_>>()
            .join(", "),
        if set.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", set.join(" AND "))
        }
    ))
}

/// The name of a resource's natural key index (`nk_<table>_<columns>`): a key of other fields
/// is another index, and the migration drops the one of a key the catalog no longer declares
/// (a price's before its currency).
pub fn natural_key_index_name(resource: &Resource) -> String {
    let columns: Vec<&str> = resource
        .writes
        .natural_key
        .iter()
        .filter_map(|path| resource.field_at(path))
        .map(|field| field.column.as_str())
        .collect();
    format!("nk_{}_{}", resource.table, columns.join("_"))
}
