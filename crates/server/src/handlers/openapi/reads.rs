//! What a read may ask of a resource: the parameters of its lists and counts and the body of
//! a complex query, as patterns of the names it has and schemas of the values each takes.

use super::{View, relations_traversed, shows};
use brandhub_catalog::{Field, FieldType, Resource, catalog};
use brandhub_query::limits;
use serde_json::{Map, Value, json};

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
pub(super) fn parameters(view: View, resource: &Resource) -> Value {
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
pub(super) fn complex_query_schema(view: View, resource: &Resource) -> Value {
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
