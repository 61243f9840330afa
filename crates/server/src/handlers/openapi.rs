//! `GET /api/openapi.json`: the OpenAPI 3.1 description, derived from the catalog and the error
//! table, so it can never disagree with what the server does.

use super::json;
use axum::http::StatusCode;
use axum::response::Response;
use brandhub_catalog::{Field, FieldType, RelationKind, Resource, catalog};
use brandhub_problem::Code;
use brandhub_query::parse::RESERVED_PARAMETERS;
use serde_json::{Map, Value, json};
use std::sync::LazyLock;

fn field_schema(field: &Field) -> Value {
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
        FieldType::List => json!({"type": "array", "items": {"type": "string"}}),
        FieldType::Object => {
            let properties: Map<String, Value> = field
                .subfields
                .iter()
                .filter(|s| !s.internal)
                .map(|s| (s.name.to_string(), field_schema(s)))
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
    schema
}

fn schema_name(resource: &Resource) -> String {
    let mut name = resource.name.to_string();
    name[..1].make_ascii_uppercase();
    name
}

fn record_schema(resource: &Resource) -> Value {
    let mut properties = Map::new();
    for field in resource.fields.iter().filter(|f| !f.internal) {
        properties.insert(field.name.to_string(), field_schema(field));
    }
    for relation in resource.public_relations() {
        let target = catalog().target(relation);
        let one = json!({"oneOf": [
            {"$ref": "#/components/schemas/Key"},
            {"$ref": format!("#/components/schemas/{}", schema_name(target))},
            {"type": "null"}
        ]});
        let schema = match relation.kind {
            RelationKind::ToOne { .. } => one,
            RelationKind::ToMany { .. } => json!({"type": "array", "items": one}),
        };
        properties.insert(relation.name.to_string(), schema);
    }
    json!({"type": "object", "description": resource.doc, "properties": properties})
}

fn parameters() -> Value {
    json!([
        {"name": "page", "in": "query", "schema": {"type": "integer", "minimum": 1}, "description": "Page to return (default 1)."},
        {"name": "pageSize", "in": "query", "schema": {"type": "integer", "minimum": 1}, "description": "Records per page (default 100; above 1000 clamped to 1000)."},
        {"name": "order_by", "in": "query", "schema": {"type": "string"}, "description": "path[;path…], each with > (ascending) or < (descending) before or after it."},
        {"name": "fields", "in": "query", "schema": {"type": "string"}, "description": "Comma-separated properties and relations (dotted for sub-selection); * is the default template."},
        {"name": "exclude", "in": "query", "schema": {"type": "string"}, "description": "Comma-separated names to remove; @ is a wildcard."},
        {"name": "filters", "in": "query", "style": "form", "explode": true, "schema": {"type": "object", "additionalProperties": {"type": "string"}},
         "description": "Any other parameter <path>=<value> is an equality filter; @ is a wildcard in text; repeat a parameter for any of several values."}
    ])
}

fn responses(ok: Value) -> Value {
    responses_with(ok, "200")
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

/// A JSON write body of these field paths (dotted paths nest, as records show them).
fn write_body(resource: &Resource, paths: &[&str], required: &[&str]) -> Value {
    let mut body = json!({"type": "object", "additionalProperties": false, "properties": {}});
    for path in paths {
        let field = resource
            .field_at(path)
            .expect("the catalog checks that writes name fields");
        let mut at = &mut body;
        let mut parts = path.split('.').peekable();
        while let Some(part) = parts.next() {
            if parts.peek().is_none() {
                at["properties"][part] = field_schema(field);
            } else {
                if at["properties"].get(part).is_none() {
                    at["properties"][part] = json!({"type": "object", "properties": {}});
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

/// The JSON writes a resource accepts (CONTRACT §9), on its list and by-id paths.
fn add_write_paths(resource: &Resource, list: &mut Value, by_id: &mut Value, envelope: &Value) {
    let name = resource.name;
    let writes = &resource.writes;
    let id = json!([{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}]);
    if !writes.create.is_empty() {
        list["post"] = json!({
            "summary": format!("Create a {name} record"), "tags": [name],
            "requestBody": write_body(resource, &writes.create, &writes.create_required),
            "responses": responses_with(envelope.clone(), "201")});
    }
    if !writes.update.is_empty() {
        by_id["patch"] = json!({
            "summary": format!("Change fields of a {name} record"), "tags": [name],
            "parameters": id.clone(),
            "requestBody": write_body(resource, &writes.update, &[]),
            "responses": responses(envelope.clone())});
    }
    if writes.delete {
        by_id["delete"] = json!({
            "summary": format!("Delete (for keys: revoke) a {name} record"), "tags": [name],
            "parameters": id,
            "responses": responses_with(json!({"description": "Done; no body."}), "204")});
    }
}

/// `POST /api/file` (a multipart upload), the uploaded bytes and the templates (CONTRACT §8).
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
        "responses": created});
    let bytes = |description: &str| {
        responses(json!({"description": description,
            "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}}}))
    };
    paths.insert(format!("/api/{name}/{{id}}/content"), json!({"get": {
        "summary": "The uploaded bytes, with the content type of their format", "tags": [name],
        "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
        "responses": bytes("The uploaded file.")}}));
    paths.insert(format!("/api/{name}/template/{{fileType}}"), json!({"get": {
        "summary": "An .xlsx template: the file type's header row and one example row", "tags": [name],
        "parameters": [{"name": "fileType", "in": "path", "required": true,
            "schema": {"enum": ["product", "stock", "price", "image", "orderDispatch"]}}],
        "responses": bytes("The template workbook.")}}));
}

fn document() -> Value {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for resource in catalog().resources() {
        let name = resource.name;
        let schema = schema_name(resource);
        schemas.insert(schema.clone(), record_schema(resource));
        let envelope = json!({"description": format!("A page of {name} records."), "content": {"application/json": {"schema": {
            "type": "object", "properties": {"response": {"type": "object", "properties": {
                "page": {"type": "integer"}, "pageCount": {"type": "integer"}, "recordsSent": {"type": "integer"}, "recordsFound": {"type": "integer"},
                name: {"type": "array", "items": {"$ref": format!("#/components/schemas/{schema}")}}}}}}}}});
        let count = json!({"description": "The number of records found.", "content": {"application/json": {"schema": {
            "type": "object", "properties": {"count": {"type": "integer"}}}}}});
        let body = json!({"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ComplexQuery"}}}});
        let mut list = json!({"get": {
            "summary": format!("List {name} records"), "tags": [name], "parameters": parameters(), "responses": responses(envelope.clone())}});
        let mut by_id = json!({"get": {
            "summary": format!("One {name} record"), "tags": [name],
            "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
            "responses": responses(envelope.clone())}});
        if resource.uploads {
            add_upload_paths(&mut paths, &mut list, name, &envelope);
        }
        add_write_paths(resource, &mut list, &mut by_id, &envelope);
        paths.insert(format!("/api/{name}"), list);
        paths.insert(format!("/api/{name}/{{id}}"), by_id);
        paths.insert(format!("/api/{name}/count"), json!({
            "get": {"summary": format!("Count {name} records"), "tags": [name], "parameters": parameters(), "responses": responses(count.clone())},
            "post": {"summary": format!("Count {name} records of a complex query"), "tags": [name], "requestBody": body.clone(), "responses": responses(count)}}));
        paths.insert(format!("/api/{name}/query"), json!({"post": {
            "summary": format!("Complex query over {name}"), "tags": [name], "parameters": parameters(), "requestBody": body, "responses": responses(envelope)}}));
    }
    let condition = json!({"type": "object", "required": ["field", "operator"], "additionalProperties": false, "properties": {
        "field": {"type": "string"}, "operator": {"enum": ["=", "#", "<", "<=", ">", ">="]},
        "value": {"type": ["string", "number", "boolean", "null"]}, "conjunction": {"enum": ["&", "|", "#"]}}});
    let values = json!({"type": "object", "required": ["field", "values"], "additionalProperties": false, "properties": {
        "field": {"type": "string"}, "values": {"type": "array", "maxItems": 10000}, "operator": {"enum": ["=", "#"]}}});
    schemas.insert(
        "ComplexQuery".into(),
        json!({"type": "object", "additionalProperties": false, "properties": {
        "query": {"type": "array", "items": condition.clone(), "maxItems": 100},
        "queryselection": {"type": "array", "items": condition, "maxItems": 100},
        "querywitharray": values.clone(), "queryselectionwitharray": values}}),
    );
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

static DOCUMENT: LazyLock<Vec<u8>> =
    LazyLock::new(|| serde_json::to_vec_pretty(&document()).unwrap_or_default());

/// `GET /api/openapi.json` (no key needed).
pub async fn openapi() -> Response {
    json(StatusCode::OK, DOCUMENT.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_resource_has_paths_and_a_schema() {
        let doc = document();
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
        assert!(doc["paths"]["/api/stock"].get("post").is_none());
        assert!(doc["paths"]["/api/stock/{id}"].get("patch").is_none());
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
}
