//! `GET /api/openapi.json`: the OpenAPI 3.1 description, derived from the catalog and the error
//! table, so it can never disagree with what the server does.

use super::json;
use crate::problem::Problem;
use axum::extract::RawQuery;
use axum::http::StatusCode;
use axum::response::Response;
use brandhub_catalog::words::{Words, code_word, field_title, resource_names};
use brandhub_catalog::{
    Field, FieldType, Relation, RelationKind, Resource, Scope, UserType, catalog,
};
use brandhub_ingest::authority::may_upload;
use brandhub_problem::ApiError;
use brandhub_problem::Code;
use brandhub_query::limits;
use brandhub_query::parse::RESERVED_PARAMETERS;
use brandhub_sheet::FileType;
use serde_json::{Map, Value, json};
use std::sync::LazyLock;

/// Whose document it is: `None` for the document of every property (each restricted one
/// marked `x-hidden-from` with the user types that do not see it), or a user type's, without
/// what is hidden from that type (`?userType=`), so that a client (or a conformance tool) of
/// that type is told exactly what it may name.
type View = Option<UserType>;

/// Whether a property is in the document of `view`.
fn shows(view: View, field: &Field) -> bool {
    !field.internal && view.is_none_or(|t| field.visible_to(t))
}

/// The relations records of `resource` show in the document of `view` (a to-one relation
/// whose foreign key is hidden is hidden too).
fn relations_shown(view: View, resource: &Resource) -> Vec<&Relation> {
    resource
        .public_relations()
        .filter(|r| resource.fk_field(r).is_none_or(|fk| shows(view, fk)))
        .collect()
}

/// The relations paths and `fields` may go through in the document of `view`: those shown,
/// into resources the user type sees records of.
fn relations_traversed(view: View, resource: &Resource) -> Vec<&Relation> {
    relations_shown(view, resource)
        .into_iter()
        .filter(|r| view.is_none_or(|t| catalog().target(r).scope_of(t) != Scope::Nothing))
        .collect()
}

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

fn field_schema(view: View, resource: &Resource, field: &Field) -> Value {
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
fn link(resource: &Resource, field: &Field, schema: &mut Value) {
    let target = field
        .relation
        .and_then(|name| resource.relation(name))
        .map(|relation| catalog().target(relation).name);
    if let Some(target) = target {
        schema["x-brandhub-link"] = json!(target);
    }
}

fn schema_name(resource: &Resource) -> String {
    let mut name = resource.name.to_string();
    name[..1].make_ascii_uppercase();
    name
}

fn record_schema(view: View, resource: &Resource) -> Value {
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

/// The leaf properties of a record a filter or an order key can name (objects by their
/// subfields), without internal ones.
fn leaf_fields(view: View, fields: &[Field]) -> Vec<&Field> {
    let mut leaves = Vec::new();
    for field in fields.iter().filter(|f| shows(view, f)) {
        match field.ty {
            FieldType::Object => leaves.extend(leaf_fields(view, &field.subfields)),
            _ => leaves.push(field),
        }
    }
    leaves
}

/// The type of the values a field is compared with (a list's, its elements').
fn element_type(field: &Field) -> FieldType {
    match (field.ty, &field.list) {
        (FieldType::List, Some(list)) => list.element,
        (ty, _) => ty,
    }
}

/// The group of value forms a type takes in filters and conditions: text (and ids), numbers,
/// booleans, timestamps; [`GROUP_TYPES`] names a type of each.
fn value_group(ty: FieldType) -> usize {
    match ty {
        FieldType::Integer | FieldType::Number => 1,
        FieldType::Boolean => 2,
        FieldType::Timestamp | FieldType::PreciseTimestamp => 3,
        _ => 0,
    }
}

/// A type of each value group (see [`value_group`]).
const GROUP_TYPES: [FieldType; 4] = [
    FieldType::Text,
    FieldType::Integer,
    FieldType::Boolean,
    FieldType::Timestamp,
];

/// The paths through a resource's public relations to a field, two relations deep
/// (`stock_variant.barcode`, `stock_variant.variant_product.fk_brand`), each as an escaped
/// regular expression with the type of the field it ends at. Deeper paths are accepted too;
/// the document describes these.
fn relation_leaf_paths(view: View, resource: &Resource) -> Vec<(String, FieldType)> {
    let escaped = |path: &str| path.replace('.', "\\.");
    let mut paths = Vec::new();
    for relation in relations_traversed(view, resource) {
        let target = catalog().target(relation);
        for field in leaf_fields(view, &target.fields) {
            paths.push((
                format!("{}\\.{}", relation.name, escaped(&field.path)),
                element_type(field),
            ));
        }
        for further in relations_traversed(view, target) {
            for field in leaf_fields(view, &catalog().target(further).fields) {
                paths.push((
                    format!(
                        "{}\\.{}\\.{}",
                        relation.name,
                        further.name,
                        escaped(&field.path)
                    ),
                    element_type(field),
                ));
            }
        }
    }
    paths
}

/// [`relation_leaf_paths`] without their types.
fn relation_paths(view: View, resource: &Resource) -> Vec<String> {
    relation_leaf_paths(view, resource)
        .into_iter()
        .map(|(path, _)| path)
        .collect()
}

/// A regular-expression alternative of a resource's names: `leaves` (with their dots
/// escaped), and the paths through its relations ([`relation_paths`]).
fn names_pattern(view: View, resource: &Resource, leaves: &[String]) -> String {
    let mut alternatives: Vec<String> = leaves.iter().map(|p| p.replace('.', "\\.")).collect();
    alternatives.extend(relation_paths(view, resource));
    format!("(?:{})", alternatives.join("|"))
}

/// What a filter value of a field's type may be: anything for text and ids (no match is an
/// empty page, not an error), the number, boolean and timestamp forms the planner reads
/// (dates with days up to 28 and times within a day, so that every value the pattern allows
/// is a real moment). Numbers and timestamps may begin with a comparison (`>=`, `<=`, `>`,
/// `<`, `#` not equal, `=`), booleans with `#` or `=`; `#` or `=` alone compare with the
/// empty value.
fn filter_value_schema(ty: FieldType) -> Value {
    const COMPARED: &str = "(?:[<>]=?|[#=])?";
    match ty {
        FieldType::Integer | FieldType::Number => json!({"type": "string",
            "pattern": format!("^(?:{COMPARED}-?[0-9]{{1,15}}(?:\\.[0-9]{{1,6}})?|[#=]?)$")}),
        FieldType::Boolean => {
            let words = ["", "true", "false", "1", "0"];
            let forms: Vec<String> = ["", "#", "="]
                .iter()
                .flat_map(|prefix| words.iter().map(move |w| format!("{prefix}{w}")))
                .collect();
            json!({"type": "string", "enum": forms})
        }
        FieldType::Timestamp | FieldType::PreciseTimestamp => json!({"type": "string",
            "pattern": format!("^(?:{COMPARED}[0-9]{{4}}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])(T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9])?|[#=]?)$")}),
        // No NUL character: PostgreSQL's text cannot hold one.
        _ => json!({"type": "string", "pattern": "^[^\\u0000]*$"}),
    }
}

/// The read parameters of a resource's lists and counts. Names are given as patterns of the
/// resource's own properties and relations (a path past a relation is checked when the
/// request is planned), so that a client, or a conformance tool, can tell a valid request
/// from an invalid one; properties restricted for a user type (`x-hidden-from`) are unknown
/// to that type.
fn parameters(view: View, resource: &Resource) -> Value {
    let leaves = leaf_fields(view, &resource.fields);
    let sortable: Vec<String> = leaves
        .iter()
        .filter(|f| f.ty != FieldType::List)
        .map(|f| f.path.clone())
        .collect();
    let mut selectable: Vec<String> = leaves.iter().map(|f| f.path.clone()).collect();
    selectable.extend(
        resource
            .fields
            .iter()
            .filter(|f| shows(view, f) && f.ty == FieldType::Object)
            .map(|f| f.path.clone()),
    );
    // A relation alone selects (or removes) its target's template.
    selectable.extend(
        relations_traversed(view, resource)
            .iter()
            .map(|r| r.name.to_string()),
    );
    let removable = names_pattern(view, resource, &selectable);
    selectable.push("\\*".into());
    let key = names_pattern(view, resource, &sortable);
    let order_item = format!("(?:[<>]?{key}|{key}[<>])");
    let order_by = format!(
        "^{order_item}(?:;{order_item}){{0,{}}}$",
        limits::ORDER_KEYS.max - 1
    );
    let name = names_pattern(view, resource, &selectable);
    let name_list =
        |name: &str, limit: &limits::Limit| format!("^{name}(?:,{name}){{0,{}}}$", limit.max - 1);
    let mut filters = Map::new();
    for field in &leaves {
        filters.insert(field.path.clone(), filter_value_schema(element_type(field)));
    }
    // Paths through relations, by the type of the field they end at.
    let mut through = Map::new();
    let paths = relation_leaf_paths(view, resource);
    for (group, ty) in GROUP_TYPES.iter().enumerate() {
        let names: Vec<&str> = paths
            .iter()
            .filter(|(_, t)| value_group(*t) == group)
            .map(|(path, _)| path.as_str())
            .collect();
        if !names.is_empty() {
            through.insert(
                format!("^(?:{})$", names.join("|")),
                filter_value_schema(*ty),
            );
        }
    }
    json!([
        {"name": "page", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": limits::PAGE.max}, "description": "Page to return (default 1)."},
        {"name": "pageSize", "in": "query", "schema": {"type": "integer", "minimum": 1}, "description": "Records per page (default 100; above 1000 clamped to 1000)."},
        {"name": "order_by", "in": "query", "schema": {"type": "string", "pattern": order_by}, "description": "path[;path…], each with > (ascending) or < (descending) before or after it."},
        {"name": "fields", "in": "query", "schema": {"type": "string", "pattern": name_list(&name, &limits::FIELDS_ITEMS)}, "description": "Comma-separated properties and relations (dotted for sub-selection); * is the default template."},
        {"name": "exclude", "in": "query", "schema": {"type": "string", "pattern": name_list(&removable, &limits::EXCLUDE_ITEMS)}, "description": "Comma-separated names to remove."},
        {"name": "filters", "in": "query", "style": "form", "explode": true,
         "schema": {"type": "object", "properties": filters, "patternProperties": through, "additionalProperties": false},
         "description": "Any other parameter <path>=<value> is a filter (paths through relations are dotted): equality, or the comparison the value begins with (>=, <=, >, <, # not equal, = equal to the rest; a date alone compares with the start of its day for < and >=, its end for > and <=); @ is a wildcard in text; repeat a parameter for any of several values, each comparison narrowing them."}
    ])
}

/// What a complex query's value may be for a field of this type: the forms the planner reads
/// (see [`filter_value_schema`]), as JSON strings, numbers or booleans.
fn condition_value_schema(ty: FieldType) -> Value {
    let bytes = limits::VALUE_BYTES.max;
    match ty {
        FieldType::Integer | FieldType::Number => json!({"anyOf": [
            {"type": "number"}, {"type": "null"},
            {"type": "string", "pattern": "^(-?[0-9]{1,15}(\\.[0-9]{1,6})?)?$"}]}),
        FieldType::Boolean => json!({"anyOf": [
            {"type": "boolean"}, {"type": "null"},
            {"type": "string", "enum": ["", "true", "false", "1", "0"]}]}),
        FieldType::Timestamp | FieldType::PreciseTimestamp => json!({"type": ["string", "null"],
            "pattern": "^([0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])(T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9])?)?$"}),
        // Text: at most VALUE_BYTES bytes of UTF-8 (as many characters when ASCII), and no
        // NUL character (PostgreSQL's text cannot hold one).
        _ => json!({"type": ["string", "number", "boolean", "null"], "maxLength": bytes,
            "pattern": "^[^\\u0000]*$"}),
    }
}

/// The fields of a resource a condition can name, its own and through its relations, grouped
/// by the type of value they take: (pattern of the names, value schema, whether ordered).
fn condition_groups(view: View, resource: &Resource) -> Vec<(String, Value, bool)> {
    let leaves = leaf_fields(view, &resource.fields);
    let through = relation_leaf_paths(view, resource);
    let mut groups = Vec::new();
    for (group, ty) in GROUP_TYPES.iter().enumerate() {
        let names: Vec<String> = leaves
            .iter()
            .filter(|f| value_group(element_type(f)) == group)
            .map(|f| f.path.replace('.', "\\."))
            .chain(
                through
                    .iter()
                    .filter(|(_, t)| value_group(*t) == group)
                    .map(|(path, _)| path.clone()),
            )
            .collect();
        if names.is_empty() {
            continue;
        }
        // Booleans are not ordered: only = and # compare them.
        groups.push((
            format!("^(?:{})$", names.join("|")),
            condition_value_schema(*ty),
            *ty != FieldType::Boolean,
        ));
    }
    groups
}

/// The body of a complex query over a resource (docs/API.md, "Complex queries"): each condition names a field
/// and takes a value of that field's type; every condition after the first of a list needs
/// its conjunction; `query` and `querywitharray` exclude each other (a `null` list is an
/// absent one).
fn complex_query_schema(view: View, resource: &Resource) -> Value {
    let groups = condition_groups(view, resource);
    let condition = |conjunction: bool| {
        // Equality compares with any value, an empty one included (unset); an ordering
        // needs a value to order by.
        let operators = [
            (json!(["=", "#"]), None),
            (
                json!(["<", "<=", ">", ">="]),
                Some(json!({"enum": ["", null]})),
            ),
        ];
        let shapes: Vec<Value> = groups
            .iter()
            .flat_map(|(names, value, ordered)| {
                let operators = if *ordered {
                    &operators[..]
                } else {
                    &operators[..1]
                };
                operators.iter().map(move |(allowed, excluded)| {
                    let mut value = value.clone();
                    if let Some(excluded) = excluded {
                        value["not"] = excluded.clone();
                    }
                    let mut properties = json!({"field": {"type": "string", "pattern": names},
                        "operator": {"enum": allowed}, "value": value});
                    let mut required = vec!["field", "operator"];
                    if excluded.is_some() {
                        required.push("value");
                    }
                    if conjunction {
                        properties["conjunction"] = json!({"enum": ["&", "|", "#"]});
                        required.push("conjunction");
                    }
                    json!({"type": "object", "required": required, "additionalProperties": false, "properties": properties})
                })
            })
            .collect();
        json!({"anyOf": shapes})
    };
    let conditions = json!({"type": ["array", "null"], "prefixItems": [condition(false)],
        "items": condition(true), "maxItems": limits::CONDITIONS.max});
    let shapes: Vec<Value> = groups
        .iter()
        .map(|(names, value, _)| {
            json!({"type": "object", "required": ["field", "values"], "additionalProperties": false, "properties": {
                "field": {"type": "string", "pattern": names},
                "values": {"type": "array", "minItems": 1, "maxItems": limits::VALUES.max, "items": value},
                "operator": {"enum": ["=", "#", null]}}})
        })
        .collect();
    let values = json!({"anyOf": [{"type": "null"}, {"anyOf": shapes}]});
    json!({"type": "object", "additionalProperties": false, "properties": {
        "query": conditions.clone(), "queryselection": conditions,
        "querywitharray": values.clone(), "queryselectionwitharray": values},
        "not": {"required": ["query", "querywitharray"],
            "properties": {"query": {"type": "array"}, "querywitharray": {"type": "object"}}}})
}

fn responses(ok: Value) -> Value {
    responses_with(ok, "200")
}

/// `changedSince` (lists only): `0` or a cursor an earlier answer gave.
fn changed_since_parameter() -> Value {
    json!({"name": "changedSince", "in": "query", "schema": {"type": "string", "pattern": "^(0|([0-9a-f]{2}){1,512})$"},
        "description": "Sync by cursor: 0 for every record, then the cursor of each answer; the answer holds what changed since (deleted or no longer matching records as {id, deleted: true}), a cursor and more. Not with order_by, page or exports."})
}

/// The problem responses of every error code, and `ok` under the success status `status`.
fn responses_with(ok: Value, status: &str) -> Value {
    let mut responses = Map::new();
    responses.insert(status.into(), ok);
    for code in Code::ALL {
        let status = code.status().to_string();
        let entry = responses.entry(status).or_insert_with(|| {
            json!({"description": "", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}})
        });
        let description = entry["description"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let joined = if description.is_empty() {
            code.as_str().to_string()
        } else {
            format!("{description}, {}", code.as_str())
        };
        entry["description"] = json!(joined);
    }
    Value::Object(responses)
}

/// A JSON write body of these field paths (dotted paths nest, as records show them):
/// `required` must be given, `filled` may not be given empty (null, or "" for text).
fn write_body(
    view: View,
    resource: &Resource,
    paths: &[&str],
    required: &[&str],
    filled: &[&str],
) -> Value {
    let mut body = json!({"type": "object", "additionalProperties": false, "properties": {}});
    for path in paths {
        let field = resource
            .field_at(path)
            .expect("the catalog checks that writes name fields");
        if !shows(view, field) {
            continue;
        }
        let mut at = &mut body;
        let mut parts = path.split('.').peekable();
        while let Some(part) = parts.next() {
            if parts.peek().is_none() {
                let mut schema = field_schema(view, resource, field);
                link(resource, field, &mut schema);
                let must_fill = required.contains(path) || filled.contains(path);
                if field.ty == FieldType::Text {
                    // A write may send `null` for text: it stores "" (unset text, docs/API.md, "Values");
                    // no text holds a NUL character.
                    schema["type"] = json!(["string", "null"]);
                    schema["pattern"] = json!("^[^\\u0000]*$");
                    if must_fill {
                        schema["type"] = json!("string");
                        schema["minLength"] = json!(1);
                    }
                }
                if matches!(field.ty, FieldType::Timestamp | FieldType::PreciseTimestamp)
                    && !field.required
                    && !must_fill
                {
                    // null (or "") unsets a date.
                    schema["type"] = json!(["string", "null"]);
                }
                if field.ty == FieldType::Id && !field.required && !must_fill {
                    // Ids are read in either case; "" (like null) sets none.
                    schema["pattern"] = json!("^([0-9A-Fa-f]{32})?$");
                } else if field.ty == FieldType::Id {
                    schema["pattern"] = json!("^[0-9A-Fa-f]{32}$");
                }
                if (field.required || must_fill)
                    && field.ty != FieldType::Text
                    && let Some(types) = schema["type"].as_array_mut()
                {
                    // Always set: a write may not send null.
                    types.retain(|t| t != "null");
                }
                // A list's length and words bound its elements.
                let is_list = field.ty == FieldType::List;
                let bounded = if is_list {
                    &mut schema["items"]
                } else {
                    &mut schema
                };
                if let Some(max) = field.max_chars {
                    bounded["maxLength"] = json!(max);
                }
                // Quantities and amounts: their domain's range (docs/API.md, "Quantities and amounts").
                if let Some((least, most)) = field.domain.and_then(|d| d.bounds()) {
                    bounded["minimum"] = json!(least);
                    bounded["maximum"] = json!(most);
                }
                if let Some(words) = field.domain.and_then(|d| d.words()) {
                    let mut allowed = json!(words);
                    if !must_fill
                        && !field.required
                        && !is_list
                        && let Some(list) = allowed.as_array_mut()
                    {
                        list.push(Value::Null);
                    }
                    bounded["enum"] = allowed;
                }
                at["properties"][part] = schema;
            } else {
                if at["properties"].get(part).is_none() {
                    at["properties"][part] =
                        json!({"type": "object", "additionalProperties": false, "properties": {}});
                }
                at = &mut at["properties"][part];
            }
        }
    }
    if !required.is_empty() {
        body["required"] = json!(required);
    }
    json!({"required": true, "content": {"application/json": {"schema": body}}})
}

/// The JSON writes a resource accepts (docs/API.md, "Writes: master data and catalogue"), on its list and by-id paths.
fn add_write_paths(
    view: View,
    resource: &Resource,
    list: &mut Value,
    by_id: &mut Value,
    envelope: &Value,
) {
    let name = resource.name;
    let writes = &resource.writes;
    let id = json!([{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}]);
    if !writes.create.is_empty() {
        list["post"] = json!({
            "summary": format!("Create a {name} record"), "tags": [name],
            "requestBody": write_body(view, resource, &writes.create, &writes.create_required, &[]),
            "responses": responses_with(envelope.clone(), "201")});
    }
    if !writes.update.is_empty() {
        by_id["patch"] = json!({
            "summary": format!("Change fields of a {name} record"), "tags": [name],
            "parameters": id.clone(),
            "requestBody": write_body(view, resource, &writes.update, &[], &writes.create_required),
            "responses": responses(envelope.clone())});
    }
    if writes.delete {
        by_id["delete"] = json!({
            "summary": format!("Delete (for keys: revoke) a {name} record"), "tags": [name],
            "parameters": id,
            "responses": responses_with(json!({"description": "Done; no body."}), "204")});
    }
}

/// `POST /api/<resource>/<field>` of a field the catalog sets in bulk (docs/API.md, "Host
/// SKUs"): an array of up to 1,000 elements, each naming a record by `id` or by one of the
/// declared ways, with the field's value; all or nothing.
fn add_bulk_path(
    view: View,
    paths: &mut Map<String, Value>,
    resource: &Resource,
    envelope: &Value,
) {
    let Some(bulk) = resource.writes.bulk else {
        return;
    };
    let name = resource.name;
    let Some(set) = resource.field_at(bulk.field) else {
        return;
    };
    let mut ways = vec![json!({"required": ["id", bulk.field]})];
    let mut properties = Map::new();
    properties.insert(
        "id".into(),
        json!({"type": "string", "pattern": "^[0-9A-Fa-f]{32}$"}),
    );
    properties.insert(bulk.field.into(), field_schema(view, resource, set));
    for way in bulk.named_by {
        let mut required: Vec<&str> = way.to_vec();
        required.push(bulk.field);
        ways.push(json!({"required": required}));
        for path in *way {
            if let Some(field) = resource.field_at(path) {
                let mut schema = field_schema(view, resource, field);
                schema["type"] = json!("string");
                properties.insert((*path).into(), schema);
            }
        }
    }
    let item = json!({"type": "object", "additionalProperties": false,
        "properties": properties, "oneOf": ways});
    paths.insert(format!("/api/{name}/{}", bulk.field), json!({"post": {
        "summary": format!("Set {} on up to 1,000 {name} records, all or nothing", bulk.field),
        "description": format!("Each element names its {name} by id, or by {}, and gives its {}; one transaction, unique values judged on the records as they all end up (two may swap theirs); every problem in one 422, each with its element's index.",
            bulk.named_by.iter().map(|way| way.join(" and ")).collect::<Vec<_>>().join(", or by "), bulk.field),
        "tags": [name],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {
            "type": "array", "minItems": 1, "maxItems": 1000, "items": item}}}},
        "responses": responses(envelope.clone())}}));
}

/// A resource that moves through a lifecycle (orders, docs/API.md, "Orders: intake, lifecycle and stock"): its create is an intake
/// with lines, its PATCH an action, and each declared action a `POST` of an array of actions.
fn add_lifecycle_paths(
    view: View,
    paths: &mut Map<String, Value>,
    resource: &Resource,
    list: &mut Value,
    by_id: &mut Value,
    envelope: &Value,
) {
    let Some(lifecycle) = resource.lifecycle else {
        return;
    };
    let name = resource.name;
    let relation = resource
        .relation(lifecycle.lines)
        .expect("the catalog checks that a lifecycle names its lines");
    let line = catalog().target(relation);
    let with_lines = |mut body: Value, line_body: Value, min_items: u64| {
        let schema = &mut body["content"]["application/json"]["schema"];
        schema["properties"][lifecycle.lines] = json!({"type": "array", "minItems": min_items, "items": line_body["content"]["application/json"]["schema"]});
        body
    };
    let mut intake_line = write_body(
        view,
        line,
        lifecycle.line_intake,
        lifecycle.line_required,
        &[],
    );
    intake_line["content"]["application/json"]["schema"]["properties"]["barcode"] = json!({
        "type": "string", "description": "Names the variant (of the brand store's brand) instead of fk_variant or hostSku."});
    intake_line["content"]["application/json"]["schema"]["properties"]["hostSku"] = json!({
        "type": "string", "description": "Names the variant by the host's SKU of its offer in the brand store (letter case counts) instead of fk_variant or barcode; the line keeps it."});
    let intake = with_lines(
        write_body(
            view,
            resource,
            &resource.writes.create,
            &resource.writes.create_required,
            &[],
        ),
        intake_line,
        1,
    );
    if let Some(post) = list.get_mut("post") {
        post["requestBody"] = intake;
    }
    // An action field the record lacks is set on the lines it names (`returnDate`).
    let (own, on_lines): (Vec<&str>, Vec<&str>) = lifecycle
        .action
        .iter()
        .partition(|path| resource.field_at(path).is_some());
    let mut action = with_lines(
        write_body(view, resource, &own, &[lifecycle.status], &[]),
        write_body(view, line, lifecycle.line_action, &["id"], &[]),
        0,
    );
    for path in on_lines {
        let field = line
            .field_at(path)
            .expect("the catalog checks that actions name fields of the record or its lines");
        action["content"]["application/json"]["schema"]["properties"][path] =
            field_schema(view, line, field);
    }
    by_id["patch"] = json!({
        "summary": format!("A lifecycle action on a {name} record: the new status and what the step needs"),
        "tags": [name],
        "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
        "requestBody": action.clone(),
        "responses": responses(envelope.clone())});
    let mut one = action["content"]["application/json"]["schema"].clone();
    one["properties"]["id"] = json!({"type": "string", "pattern": "^[0-9A-Fa-f]{32}$"});
    one["required"] = json!(["id"]);
    for (action, step) in lifecycle.actions {
        paths.insert(format!("/api/{name}/{action}"), json!({"post": {
            "summary": format!("The {} of up to 1,000 {name} records, each applied or refused on its own", step.as_str()),
            "tags": [name],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {
                "type": "array", "minItems": 1, "maxItems": 1000, "items": one}}}},
            "responses": responses(json!({"description": "The outcome of each element, in order.",
                "content": {"application/json": {"schema": {"type": "object"}}}}))}}));
    }
}

/// `x-brandhub-lifecycle` of a resource that moves through a lifecycle: its statuses, its
/// lines' statuses and the reasons a line is rejected with, each with its word, and each step
/// of the catalog's table (`catalog::lifecycle`) with the statuses it is taken from and leads
/// to, the user types that may take it (admins and sponsors included, as the order engine
/// decides) and what an action taking it may give. Clients, the portal among them, offer the
/// steps from this rather than from a copy of the table.
fn lifecycle_extension(resource: &Resource) -> Option<Value> {
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

/// `x-brandhub-uploads` of `POST /api/file`: each file type with the user types that may
/// upload it (the catalog's write rules of what it writes), so that a client offers only those.
fn uploads_extension() -> Value {
    let types: Vec<Value> = FileType::ALL
        .into_iter()
        .map(|file_type| {
            let user_types: Vec<&str> = UserType::ALL
                .into_iter()
                .filter(|user_type| may_upload(file_type, *user_type))
                .map(UserType::as_str)
                .collect();
            json!({"fileType": file_type.as_str(), "userTypes": user_types})
        })
        .collect();
    json!(types)
}

/// `POST /api/file` (a multipart upload), the uploaded bytes and the templates (docs/API.md, "Files: uploads and processing").
fn add_upload_paths(
    paths: &mut Map<String, Value>,
    list: &mut Value,
    name: &str,
    envelope: &Value,
) {
    let created = responses_with(envelope.clone(), "201");
    list["post"] = json!({
        "summary": format!("Upload a spreadsheet as a new {name} record"),
        "tags": [name],
        "parameters": [{"name": "wait", "in": "query", "schema": {"type": "number", "minimum": 0, "maximum": 60},
            "description": "Seconds to wait for processing to finish before answering (at most 60)."}],
        "requestBody": {"required": true, "content": {"multipart/form-data": {"schema": {
            "type": "object", "description": "Exactly one file part, named <fileType>,<arguments> (product,<brand> | stock,<brand>,<warehouse> | price,<brand>,<host>,<DD/MM/YYYY>[,<DD/MM/YYYY>] | image,<brand> | orderDispatch,<brand>), with a filename ending .xlsx, .xlsm, .xls, .ods or .csv.",
            "additionalProperties": {"type": "string", "format": "binary"}}}}},
        "x-brandhub-uploads": uploads_extension(),
        "responses": created});
    let bytes = |description: &str| {
        responses(json!({"description": description,
            "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}}}))
    };
    paths.insert(format!("/api/{name}/{{id}}/content"), json!({"get": {
        "summary": "The uploaded bytes, with the content type of their format", "tags": [name],
        "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
        "responses": bytes("The uploaded file.")}}));
    paths.insert(format!("/api/{name}/{{id}}/report"), json!({"get": {
        "summary": "The rows processing skipped, each with its reason in an added Error column: CSV for a CSV upload, else .xlsx", "tags": [name],
        "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
        "responses": bytes("The error report.")}}));
    paths.insert(format!("/api/{name}/template/{{fileType}}"), json!({"get": {
        "summary": "An .xlsx template: the file type's header row and one example row", "tags": [name],
        "parameters": [{"name": "fileType", "in": "path", "required": true,
            "schema": {"enum": brandhub_catalog::FILE_TYPES}}],
        "responses": bytes("The template workbook.")}}));
}

fn document(view: View) -> Value {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for resource in catalog().resources() {
        let name = resource.name;
        let schema = schema_name(resource);
        let mut record = record_schema(view, resource);
        if let Some(lifecycle) = lifecycle_extension(resource) {
            record["x-brandhub-lifecycle"] = lifecycle;
        }
        schemas.insert(schema.clone(), record);
        let envelope = json!({"description": format!("A page of {name} records."), "content": {"application/json": {"schema": {
            "type": "object", "properties": {"response": {"type": "object", "properties": {
                "page": {"type": "integer"}, "pageCount": {"type": "integer"}, "recordsSent": {"type": "integer"}, "recordsFound": {"type": "integer"},
                "cursor": {"type": "string", "description": "With changedSince: the cursor to send next."},
                "more": {"type": "boolean", "description": "With changedSince: whether changes remain."},
                name: {"type": "array", "items": {"$ref": format!("#/components/schemas/{schema}")}}}}}}}}});
        let count = json!({"description": "The number of records found.", "content": {"application/json": {"schema": {
            "type": "object", "properties": {"count": {"type": "integer"}}}}}});
        schemas.insert(
            format!("{schema}Query"),
            complex_query_schema(view, resource),
        );
        let body = json!({"content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}Query")}}}});
        let mut listed = parameters(view, resource);
        if let Some(listed) = listed.as_array_mut() {
            listed.push(changed_since_parameter());
        }
        let mut list = json!({"get": {
            "summary": format!("List {name} records"), "tags": [name], "parameters": listed, "responses": responses(envelope.clone())}});
        let mut by_id = json!({"get": {
            "summary": format!("One {name} record"), "tags": [name],
            "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
            "responses": responses(envelope.clone())}});
        if resource.uploads {
            add_upload_paths(&mut paths, &mut list, name, &envelope);
        }
        add_write_paths(view, resource, &mut list, &mut by_id, &envelope);
        add_lifecycle_paths(view, &mut paths, resource, &mut list, &mut by_id, &envelope);
        add_bulk_path(view, &mut paths, resource, &envelope);
        paths.insert(format!("/api/{name}"), list);
        paths.insert(format!("/api/{name}/{{id}}"), by_id);
        paths.insert(format!("/api/{name}/count"), json!({
            "get": {"summary": format!("Count {name} records"), "tags": [name], "parameters": parameters(view, resource), "responses": responses(count.clone())},
            "post": {"summary": format!("Count {name} records of a complex query"), "tags": [name], "requestBody": body.clone(), "responses": responses(count)}}));
        paths.insert(format!("/api/{name}/query"), json!({"post": {
            "summary": format!("Complex query over {name}"), "tags": [name], "parameters": parameters(view, resource), "requestBody": body, "responses": responses(envelope)}}));
    }
    schemas.insert("Key".into(), json!({"type": "object", "properties": {"__KEY": {"type": "string"}}, "required": ["__KEY"]}));
    let codes: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
    schemas.insert("Problem".into(), json!({"type": "object", "properties": {
        "type": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "integer"}, "detail": {"type": "string"},
        "code": {"enum": codes}, "field": {"type": "string"},
        "errors": {"type": "array", "items": {"type": "object", "properties": {"field": {"type": "string"}, "message": {"type": "string"}}}}}}));
    json!({
        "openapi": "3.1.0",
        "info": {"title": "brandhub", "version": env!("CARGO_PKG_VERSION"),
                 "description": format!("The brandhub commerce-data API. Reserved parameters: {}.", RESERVED_PARAMETERS.join(", "))},
        "security": [{"basic": []}],
        "paths": paths,
        "components": {"schemas": schemas, "securitySchemes": {"basic": {"type": "http", "scheme": "basic",
            "description": "User email or id as the user name, the API key as the password."}}}
    })
}

/// The document of every property, then one per user type in `UserType::ALL`'s order.
static DOCUMENTS: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| {
    std::iter::once(None)
        .chain(UserType::ALL.into_iter().map(Some))
        .map(|view| serde_json::to_vec_pretty(&document(view)).unwrap_or_default())
        .collect()
});

/// `GET /api/openapi.json` (no key needed); `?userType=<type>` answers the document as that
/// user type sees the API (without the properties and relations restricted for it).
pub async fn openapi(RawQuery(query): RawQuery) -> Result<Response, Problem> {
    let mut view = None;
    for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match (name.as_ref(), UserType::parse(&value)) {
            ("userType", Some(user_type)) => view = Some(user_type),
            _ => {
                return Err(Problem(ApiError::new(
                    Code::InvalidParameter,
                    format!(
                        "/api/openapi.json takes one parameter, userType, one of {}.",
                        UserType::NAMES.join(", ")
                    ),
                )));
            }
        }
    }
    let index = view.map_or(0, |t| {
        1 + UserType::ALL.iter().position(|u| *u == t).unwrap_or(0)
    });
    Ok(json(StatusCode::OK, DOCUMENTS[index].clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_types_document_leaves_out_what_is_hidden_from_it() {
        let every = document(None);
        let warehouse = document(Some(UserType::Warehouse));
        let order = |doc: &Value| {
            doc["components"]["schemas"]["Order"]["properties"]["detail"]["properties"].clone()
        };
        assert!(order(&every).get("net").is_some());
        assert!(
            order(&warehouse).get("net").is_none(),
            "money is hidden from warehouses"
        );
        let host = document(Some(UserType::Host));
        assert!(
            every["components"]["schemas"]["Price"]["properties"]
                .get("fk_file")
                .is_some()
        );
        assert!(
            host["components"]["schemas"]["Price"]["properties"]
                .get("fk_file")
                .is_none()
        );
        let filters = |doc: &Value| {
            doc["paths"]["/api/price"]["get"]["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == "filters")
                .unwrap()["schema"]["properties"]
                .clone()
        };
        assert!(filters(&every).get("fk_file").is_some());
        assert!(
            filters(&host).get("fk_file").is_none(),
            "a host cannot filter on it"
        );
    }

    #[test]
    fn the_order_schema_carries_its_lifecycle_from_the_catalog() {
        use brandhub_catalog::lifecycle::{ORDER_STATUSES, REJECT_REASONS, TRANSITIONS};
        for view in [None, Some(UserType::Warehouse)] {
            let doc = document(view);
            let lifecycle = &doc["components"]["schemas"]["Order"]["x-brandhub-lifecycle"];
            assert_eq!(lifecycle["status"], "status", "{lifecycle}");
            assert_eq!(lifecycle["lines"], "order_orderItem");
            let codes = |list: &Value| -> Vec<String> {
                list.as_array()
                    .unwrap_or_else(|| panic!("a list: {list}"))
                    .iter()
                    .map(|s| {
                        let word = s["word"].as_str().unwrap_or_default();
                        assert!(!word.is_empty() && !word.contains('_'), "{s}");
                        s["code"].as_str().unwrap().to_string()
                    })
                    .collect()
            };
            assert_eq!(codes(&lifecycle["statuses"]), ORDER_STATUSES);
            assert_eq!(
                codes(&lifecycle["lineStatuses"]),
                ["ACC", "REJ", "DSP", "CAN", "RET"]
            );
            assert_eq!(codes(&lifecycle["reasons"]["codes"]), REJECT_REASONS);
            assert_eq!(lifecycle["reasons"]["field"], "detail.reason");
            assert_eq!(lifecycle["statuses"][3]["word"], "Part dispatched");
            let steps = lifecycle["steps"].as_array().unwrap();
            assert_eq!(steps.len(), TRANSITIONS.len());
            let step = |name: &str| steps.iter().find(|s| s["step"] == name).unwrap().clone();
            let dispatch = step("dispatch");
            assert_eq!(dispatch["from"], json!(["accepted", "partDispatched"]));
            assert_eq!(dispatch["to"], json!(["partDispatched", "dispatched"]));
            // Who may take it, admins and sponsors included, as the order engine decides.
            assert_eq!(
                dispatch["who"],
                json!(["admin", "sponsor", "company", "warehouse"])
            );
            assert_eq!(
                dispatch["fields"],
                json!(["carrier", "trackingRef", "shipDate"])
            );
            assert_eq!(dispatch["lineFields"], json!(["shipQty"]));
            assert_eq!(dispatch["byFile"], true);
            assert_eq!(
                step("cancellation")["who"],
                json!(["admin", "sponsor", "company", "host"])
            );
            assert_eq!(step("cancellation")["lineFields"], json!([]));
            assert_eq!(
                step("acknowledgement")["lineFields"],
                json!(["status", "detail.reason"])
            );
            assert_eq!(step("return")["lineFields"], json!(["returnQty"]));
            assert_eq!(
                lifecycle["actions"],
                json!([{"path": "/api/order/dispatch", "step": "dispatch"}])
            );
        }
        // Only resources with a lifecycle carry one.
        assert!(
            document(None)["components"]["schemas"]["Stock"]
                .get("x-brandhub-lifecycle")
                .is_none()
        );
    }

    #[test]
    fn a_field_set_in_bulk_has_its_path_with_the_ways_its_elements_name_records() {
        let doc = document(None);
        let post = &doc["paths"]["/api/offer/hostSku"]["post"];
        let body = &post["requestBody"]["content"]["application/json"]["schema"];
        assert_eq!(body["maxItems"], 1000);
        assert_eq!(
            body["items"]["oneOf"],
            json!([{"required": ["id", "hostSku"]},
                   {"required": ["fk_brandStore", "barcode", "hostSku"]},
                   {"required": ["fk_brandStore", "fk_variant", "hostSku"]}])
        );
        assert!(doc["paths"].get("/api/stock/hostSku").is_none());
        let line = &doc["paths"]["/api/order"]["post"]["requestBody"]["content"]["application/json"]
            ["schema"]["properties"]["order_orderItem"]["items"];
        assert_eq!(line["properties"]["hostSku"]["type"], "string", "{line}");
    }

    #[test]
    fn schemas_carry_labels_titles_words_and_currencies_from_the_catalog() {
        let doc = document(None);
        let schemas = &doc["components"]["schemas"];
        let stock = &schemas["Stock"];
        assert_eq!(
            stock["x-brandhub-label"]["template"],
            "{stock_variant} @ {stock_warehouse}"
        );
        assert_eq!(
            stock["x-brandhub-label"]["fields"][5],
            "stock_warehouse.name"
        );
        assert_eq!(stock["x-brandhub-names"]["de"]["many"], "Bestände");
        assert_eq!(stock["properties"]["stock_warehouse"]["title"], "Warehouse");
        assert_eq!(
            stock["properties"]["inStock"]["x-brandhub-titles"],
            json!({"en": "In stock", "de": "Am Lager"})
        );
        let order = &schemas["Order"];
        assert_eq!(
            order["properties"]["sentToWH"]["title"],
            "Sent to warehouse"
        );
        assert_eq!(
            order["properties"]["status"]["x-brandhub-words"]["dispatched"]["de"],
            "Versandt"
        );
        assert_eq!(
            order["properties"]["detail"]["properties"]["gross"]["x-brandhub-money"],
            json!({"currency": "order_orderItem.currency"})
        );
        assert_eq!(
            order["properties"]["order_orderItem"]["x-brandhub-titles"]["de"],
            "Bestellpositionen"
        );
        assert_eq!(
            order["x-brandhub-lifecycle"]["lineStatuses"][2]["words"],
            json!({"en": "Shipped", "de": "Versandt"})
        );
        assert_eq!(
            schemas["Price"]["properties"]["price"]["x-brandhub-money"],
            json!({"currency": "currency"})
        );
        // Every property of every record has a title in each language.
        for resource in catalog().resources() {
            let schema = &schemas[schema_name(resource)];
            for (name, property) in schema["properties"].as_object().unwrap() {
                assert!(
                    property["x-brandhub-titles"]["de"].is_string(),
                    "{}.{name}",
                    resource.name
                );
            }
        }
    }

    #[test]
    fn a_lists_words_and_length_bound_its_elements() {
        let doc = document(None);
        let events = &doc["paths"]["/api/webhook"]["post"]["requestBody"]["content"]["application/json"]
            ["schema"]["properties"]["events"];
        assert_eq!(events["type"], "array");
        assert!(events.get("enum").is_none(), "{events}");
        assert!(
            events["items"]["enum"]
                .as_array()
                .is_some_and(|w| !w.is_empty()),
            "{events}"
        );
    }

    #[test]
    fn every_resource_has_paths_and_a_schema() {
        let doc = document(None);
        for resource in catalog().resources() {
            assert!(doc["paths"][format!("/api/{}", resource.name)]["get"].is_object());
            assert!(doc["components"]["schemas"][schema_name(resource)].is_object());
        }
        let order = &doc["components"]["schemas"]["Order"]["properties"];
        assert_eq!(
            order["detail"]["properties"]["net"]["x-hidden-from"],
            json!(["warehouse"])
        );
        assert!(
            doc["components"]["schemas"]["ApiKey"]["properties"]
                .get("secretHash")
                .is_none()
        );
        assert!(doc["paths"]["/api/file"]["post"]["responses"]["201"].is_object());
        assert!(doc["paths"]["/api/file/{id}/content"]["get"].is_object());
        assert!(doc["paths"]["/api/file/template/{fileType}"]["get"].is_object());
        assert!(doc["paths"]["/api/stock"]["post"].is_object());
        let stock = &doc["paths"]["/api/stock/{id}"]["patch"]["requestBody"]["content"]["application/json"]
            ["schema"]["properties"];
        assert!(stock["inStock"].is_object() && stock.get("lastUpdate").is_none());
        assert!(doc["paths"]["/api/orderItem"].get("post").is_none());
        assert!(doc["paths"]["/api/orderItem/{id}"].get("patch").is_none());
        // Writes come from the catalog's declarations.
        for resource in catalog().resources() {
            let list = &doc["paths"][format!("/api/{}", resource.name)];
            let by_id = &doc["paths"][format!("/api/{}/{{id}}", resource.name)];
            assert_eq!(
                list.get("post").is_some(),
                resource.methods(false).contains(&"POST"),
                "{}",
                resource.name
            );
            assert_eq!(
                by_id.get("patch").is_some(),
                resource.methods(true).contains(&"PATCH")
            );
            assert_eq!(
                by_id.get("delete").is_some(),
                resource.methods(true).contains(&"DELETE")
            );
        }
        let user = &doc["paths"]["/api/user"]["post"]["requestBody"]["content"]["application/json"]
            ["schema"];
        assert_eq!(user["required"], json!(["name", "email", "type"]));
        assert!(user["properties"]["detail"]["properties"]["lang"].is_object());
        assert!(doc["paths"]["/api/user/{id}"]["patch"]["requestBody"].is_object());
        assert!(doc["paths"]["/api/apiKey/{id}"]["delete"]["responses"]["204"].is_object());
        assert!(doc["paths"]["/api/apiKey"]["post"]["responses"]["201"].is_object());
    }

    #[test]
    fn links_and_uploads_say_what_a_form_offers() {
        let doc = document(None);
        let user = &doc["paths"]["/api/user"]["post"]["requestBody"]["content"]["application/json"]
            ["schema"]["properties"];
        assert_eq!(user["fk_company"]["x-brandhub-link"], "company");
        assert_eq!(user["fk_warehouse"]["x-brandhub-link"], "warehouse");
        assert!(user["name"].get("x-brandhub-link").is_none());
        let store = &doc["components"]["schemas"]["BrandStore"]["properties"];
        assert_eq!(store["fk_store"]["x-brandhub-link"], "store");
        let uploads = doc["paths"]["/api/file"]["post"]["x-brandhub-uploads"]
            .as_array()
            .expect("a list of file types");
        let of = |user_type: &str| -> Vec<&str> {
            uploads
                .iter()
                .filter(|u| {
                    u["userTypes"]
                        .as_array()
                        .is_some_and(|t| t.iter().any(|t| t == user_type))
                })
                .filter_map(|u| u["fileType"].as_str())
                .collect()
        };
        assert_eq!(of("warehouse"), ["stock", "orderDispatch"]);
        assert_eq!(of("admin").len(), FileType::ALL.len());
        assert!(of("host").is_empty());
    }
}
