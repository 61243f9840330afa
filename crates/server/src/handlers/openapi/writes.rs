//! What a write may send: the JSON bodies of creates, changes and lifecycle actions, the bulk
//! setting of a field and the upload of a file, with the paths that take them.

use super::schemas::{field_schema, link};
use super::{View, responses, responses_with, shows};
use brandhub_catalog::{FieldType, Resource, UserType, catalog};
use brandhub_ingest::authority::may_upload;
use brandhub_sheet::FileType;
use serde_json::{Map, Value, json};

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
pub(super) fn add_write_paths(
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
pub(super) fn add_bulk_path(
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
pub(super) fn add_lifecycle_paths(
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
pub(super) fn add_upload_paths(
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
