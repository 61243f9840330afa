//! The schemas of records as a client reads them: each field's type, words and link, and a
//! record's relations, names, display label and lifecycle.

use super::{View, relations_shown, shows};
use brandhub_catalog::words::{Words, code_word, field_title, resource_names};
use brandhub_catalog::{Field, FieldType, RelationKind, Resource, UserType, catalog};
use serde_json::{Map, Value, json};

/// A title in each language as the description carries it: `title` in English, and
/// `x-brandhub-titles` with every language's.
fn titled(schema: &mut Value, words: Option<Words>) {
    if let Some(words) = words {
        schema["title"] = json!(words.en);
        schema["x-brandhub-titles"] = json!({"en": words.en, "de": words.de});
    }
}

/// What people read for a field: its title, the word of each code its domain allows
/// (`x-brandhub-words`), and for an amount of money the path of its currency
/// (`x-brandhub-money`).
fn worded(schema: &mut Value, resource: &Resource, field: &Field) {
    titled(schema, field_title(resource.name, &field.path));
    if let Some(codes) = field.domain.and_then(|d| d.words()) {
        let words: Map<String, Value> = codes
            .iter()
            .filter_map(|code| {
                code_word(code).map(|w| (code.to_string(), json!({"en": w.en, "de": w.de})))
            })
            .collect();
        schema["x-brandhub-words"] = Value::Object(words);
    }
    if field.is_money() {
        schema["x-brandhub-money"] = json!({"currency": field.currency});
    }
    if let Some(target) = field.refers_to {
        schema["x-brandhub-refers-to"] = json!(target);
    }
    if let Some(relation) = field.relation.filter(|_| !field.internal) {
        schema["x-brandhub-relation"] = json!(relation);
    }
}

pub(super) fn field_schema(view: View, resource: &Resource, field: &Field) -> Value {
    let mut schema = match field.ty {
        FieldType::Id => json!({"type": ["string", "null"], "pattern": "^[0-9A-F]{32}$"}),
        FieldType::Text => json!({"type": "string"}),
        FieldType::Integer => json!({"type": ["integer", "null"]}),
        FieldType::Number => json!({"type": ["number", "null"]}),
        FieldType::Boolean => json!({"type": ["boolean", "null"]}),
        FieldType::Timestamp => {
            json!({"type": "string", "description": "YYYY-MM-DDTHH:MM:SS (UTC), or \"\" when unset"})
        }
        FieldType::PreciseTimestamp => {
            json!({"type": "string", "description": "YYYY-MM-DDTHH:MM:SS.mmmZ"})
        }
        FieldType::List => match &field.list {
            Some(list) if list.element == FieldType::Id => {
                json!({"type": "array", "items": {"type": "string", "pattern": "^[0-9A-F]{32}$"}})
            }
            _ => json!({"type": "array", "items": {"type": "string"}}),
        },
        FieldType::Object => {
            let properties: Map<String, Value> = field
                .subfields
                .iter()
                .filter(|s| shows(view, s))
                .map(|s| (s.name.to_string(), field_schema(view, resource, s)))
                .collect();
            let ty = if field.nullable_object {
                json!(["object", "null"])
            } else {
                json!("object")
            };
            json!({"type": ty, "properties": properties})
        }
    };
    if !field.doc.is_empty() {
        schema["description"] = json!(field.doc);
    }
    if !field.hidden_from.is_empty() {
        let types: Vec<&str> = field.hidden_from.iter().map(|t| t.as_str()).collect();
        schema["x-hidden-from"] = json!(types);
    }
    worded(&mut schema, resource, field);
    schema
}

/// Marks a foreign key with `x-brandhub-link`, the name of the resource its value is an id
/// of, so that a client offers a choice of those records (the portal's forms do).
pub(super) fn link(resource: &Resource, field: &Field, schema: &mut Value) {
    let target = field
        .relation
        .and_then(|name| resource.relation(name))
        .map(|relation| catalog().target(relation).name);
    if let Some(target) = target {
        schema["x-brandhub-link"] = json!(target);
    }
}

pub(super) fn schema_name(resource: &Resource) -> String {
    let mut name = resource.name.to_string();
    name[..1].make_ascii_uppercase();
    name
}

pub(super) fn record_schema(view: View, resource: &Resource) -> Value {
    let mut properties = Map::new();
    for field in resource.fields.iter().filter(|f| shows(view, f)) {
        let mut schema = field_schema(view, resource, field);
        link(resource, field, &mut schema);
        properties.insert(field.name.to_string(), schema);
    }
    for relation in relations_shown(view, resource) {
        let target = catalog().target(relation);
        // anyOf, not oneOf: a `{"__KEY": …}` stub is also a valid (sparse) record.
        let one = json!({"anyOf": [
            {"$ref": "#/components/schemas/Key"},
            {"$ref": format!("#/components/schemas/{}", schema_name(target))},
            {"type": "null"}
        ]});
        let mut schema = match relation.kind {
            RelationKind::ToOne { .. } => one,
            RelationKind::ToMany { .. } => json!({"type": "array", "items": one}),
        };
        titled(&mut schema, catalog().relation_title(resource, relation));
        properties.insert(relation.name.to_string(), schema);
    }
    let mut schema =
        json!({"type": "object", "description": resource.doc, "properties": properties});
    let names = resource_names(resource.handle());
    schema["title"] = json!(names.one.en);
    schema["x-brandhub-names"] = json!({
        "en": {"one": names.one.en, "many": names.many.en},
        "de": {"one": names.one.de, "many": names.many.de}});
    schema["x-brandhub-label"] = json!({"template": resource.label,
        "fields": catalog().label_fields(resource)});
    schema
}

/// `x-brandhub-lifecycle` of a resource that moves through a lifecycle: its statuses, its
/// lines' statuses and the reasons a line is rejected with, each with its word, and each step
/// of the catalog's table (`catalog::lifecycle`) with the statuses it is taken from and leads
/// to, the user types that may take it (admins and sponsors included, as the order engine
/// decides) and what an action taking it may give. Clients, the portal among them, offer the
/// steps from this rather than from a copy of the table.
pub(super) fn lifecycle_extension(resource: &Resource) -> Option<Value> {
    use brandhub_catalog::lifecycle::{
        ITEM_STATUSES, ORDER_STATUSES, REASON_FIELD, REJECT_REASONS, TRANSITIONS, word,
    };
    let lifecycle = resource.lifecycle?;
    let words = |codes: &[&str]| -> Value {
        codes
            .iter()
            .map(|code| {
                let words = code_word(code);
                json!({"code": code, "word": word(code).unwrap_or(code),
                       "words": words.map(|w| json!({"en": w.en, "de": w.de}))})
            })
            .collect()
    };
    let steps: Vec<Value> = TRANSITIONS
        .iter()
        .map(|t| {
            let who: Vec<&str> = UserType::ALL
                .into_iter()
                .filter(|u| t.allows(*u))
                .map(UserType::as_str)
                .collect();
            json!({"step": t.step.as_str(), "from": t.from, "to": t.to, "who": who,
                   "byFile": t.by_file, "fields": t.fields, "lineFields": t.line_fields,
                   "does": t.effect})
        })
        .collect();
    let actions: Vec<Value> = lifecycle
        .actions
        .iter()
        .map(|(action, step)| {
            json!({"path": format!("/api/{}/{action}", resource.name), "step": step.as_str()})
        })
        .collect();
    Some(json!({
        "status": lifecycle.status,
        "lines": lifecycle.lines,
        "statuses": words(&ORDER_STATUSES),
        "lineStatuses": words(&ITEM_STATUSES),
        "reasons": {"field": REASON_FIELD, "codes": words(&REJECT_REASONS)},
        "steps": steps,
        "actions": actions,
    }))
}
