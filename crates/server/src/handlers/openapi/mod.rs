//! `GET /api/openapi.json`: the OpenAPI 3.1 description, derived from the catalog and the error
//! table, so it can never disagree with what the server does.
//!
//! The schemas of records are made in `schemas`, what a read may ask in `reads` and what a
//! write may send in `writes`; here they are put together, one document for each view.

mod reads;
mod schemas;
#[cfg(test)]
mod tests;
mod writes;

use super::json;
use crate::problem::Problem;
use axum::extract::RawQuery;
use axum::http::StatusCode;
use axum::response::Response;
use brandhub_catalog::{Field, Relation, Resource, Scope, UserType, catalog};
use brandhub_problem::ApiError;
use brandhub_problem::Code;
use brandhub_query::parse::RESERVED_PARAMETERS;
use reads::{complex_query_schema, parameters};
use schemas::{lifecycle_extension, record_schema, schema_name};
use serde_json::{Map, Value, json};
use std::sync::LazyLock;
use writes::{add_bulk_path, add_lifecycle_paths, add_upload_paths, add_write_paths};

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
