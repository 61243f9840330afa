//! Sorting through a relation reveals nothing outside the caller's scope (the review found a
//! company user's `GET /api/file?order_by=file_user.detail.lang` ordered by the languages of
//! users it may not see). For every demo user type, every to-one relation of the catalog and
//! some fields of its target, the server's order is compared with the order the caller could
//! compute itself from what it sees: the related values its own reads show, a related record
//! shown only as `{"__KEY": …}` counting as unset (unset sorts first ascending, last
//! descending; ties by id in the direction of the key).

use crate::common::{self, Fixture};
use brandhub_catalog::{Field, FieldType, Resource, catalog};
use brandhub_query::text::fold;
use serde_json::Value;
use std::cmp::Ordering;
use std::collections::HashMap;

const USER_TYPES: [&str; 5] = ["admin", "sponsor", "company", "host", "warehouse"];
const PAGE_SIZE: usize = 1000;

/// A sort key as the caller can know it.
#[derive(Debug, Clone, PartialEq)]
enum Key {
    Unset,
    Bool(bool),
    Number(f64),
    Text(String),
}

impl Key {
    fn compare(&self, other: &Key) -> Ordering {
        match (self, other) {
            (Key::Unset, Key::Unset) => Ordering::Equal,
            (Key::Unset, _) => Ordering::Less,
            (_, Key::Unset) => Ordering::Greater,
            (Key::Bool(a), Key::Bool(b)) => a.cmp(b),
            (Key::Number(a), Key::Number(b)) => a.total_cmp(b),
            (Key::Text(a), Key::Text(b)) => a.cmp(b),
            (a, b) => panic!("keys of different kinds: {a:?} {b:?}"),
        }
    }

    /// The key of a rendered value of `field`: text compares folded; an unset timestamp
    /// renders as "" and sorts as unset.
    fn of(field: &Field, value: &Value) -> Key {
        match (field.ty, value) {
            (_, Value::Null) => Key::Unset,
            (FieldType::Text, Value::String(text)) => Key::Text(fold(text)),
            (FieldType::Timestamp | FieldType::PreciseTimestamp, Value::String(text)) => {
                if text.is_empty() {
                    Key::Unset
                } else {
                    Key::Text(text.clone())
                }
            }
            (FieldType::Boolean, Value::Bool(flag)) => Key::Bool(*flag),
            (FieldType::Integer | FieldType::Number, Value::Number(n)) => {
                Key::Number(n.as_f64().expect("a number"))
            }
            (ty, value) => panic!("a {ty:?} rendered as {value}"),
        }
    }
}

/// The fields of a relation's target to sort by, for a user type: its first text field, the
/// last text property of an object that always renders, and its first other scalar.
fn sort_fields(target: &'static Resource, user_type: &str) -> Vec<&'static Field> {
    let user_type = brandhub_catalog::UserType::parse(user_type).expect("a user type");
    let usable = |f: &&'static Field| {
        !f.internal && f.visible_to(user_type) && f.list.is_none() && f.ty != FieldType::Id
    };
    let mut fields = Vec::new();
    if let Some(text) = target
        .fields
        .iter()
        .filter(usable)
        .find(|f| f.ty == FieldType::Text)
    {
        fields.push(text);
    }
    let property = target
        .fields
        .iter()
        .filter(|f| f.ty == FieldType::Object && !f.nullable_object && f.visible_to(user_type))
        .flat_map(|f| f.subfields.iter())
        .filter(usable)
        .rfind(|f| f.ty == FieldType::Text);
    fields.extend(property);
    if let Some(other) = target.fields.iter().filter(usable).find(|f| {
        matches!(
            f.ty,
            FieldType::Integer | FieldType::Number | FieldType::Boolean | FieldType::Timestamp
        )
    }) {
        fields.push(other);
    }
    fields
}

/// The value at a dotted path inside a rendered record.
fn at<'a>(record: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(record, |value, name| &value[name])
}

/// Every record of a list, all pages; `None` when the request is refused (the path does not
/// exist for the caller).
async fn all_records(
    fx: &Fixture,
    user_type: &str,
    resource: &str,
    query: &str,
) -> Option<Vec<Value>> {
    let credential = fx.credential(user_type);
    let mut records = Vec::new();
    for page in 1.. {
        let url = format!(
            "{}/api/{resource}?{query}&pageSize={PAGE_SIZE}&page={page}",
            fx.base
        );
        let response = fx
            .client()
            .get(url)
            .basic_auth(&credential.email, Some(&credential.secret))
            .send()
            .await
            .expect("the server answers");
        let response = common::Response::read(response).await;
        if response.status == 400 {
            let body = response.json();
            assert_eq!(
                body["code"], "unknown_field",
                "{user_type} {resource}?{query}: {body}"
            );
            return None;
        }
        assert_eq!(
            response.status,
            200,
            "{user_type} {resource}?{query}: {}",
            String::from_utf8_lossy(&response.body)
        );
        let page_records = response.records(resource);
        let full = page_records.len() == PAGE_SIZE;
        records.extend(page_records);
        if !full {
            break;
        }
    }
    Some(records)
}

fn id_of(record: &Value) -> String {
    record["id"].as_str().expect("an id").to_string()
}

/// What one relation showed: how many records, and how many of them point at a related
/// record the caller may not see.
#[derive(Debug, Default)]
struct Seen {
    records: usize,
    hidden: usize,
}

/// Checks every sort field of one relation for one caller.
async fn check_relation(
    fx: &Fixture,
    user_type: &str,
    resource: &'static Resource,
    relation: &str,
    fields: &[&'static Field],
) -> Option<Seen> {
    // A relation of a resource to itself (a company's sponsor) may lead to a record listed at
    // the top, which the page then shows only as a reference: the list shows the fields too.
    let to_itself = catalog()
        .target(resource.relation(relation).expect("a relation"))
        .name
        == resource.name;
    let mut selected: Vec<String> = fields
        .iter()
        .map(|f| format!("{relation}.{}", f.path))
        .collect();
    if to_itself {
        selected.extend(fields.iter().map(|f| f.path.to_string()));
    }
    let query = format!("fields=id,{}", selected.join(","));
    let records = all_records(fx, user_type, resource.name, &query).await?;
    // The related records the caller was shown, by id: a record shown once is a `__KEY`
    // reference at every later place of the same page.
    let mut shown: HashMap<String, &Value> = HashMap::new();
    for record in &records {
        let related = &record[relation];
        if let Some(id) = related["id"].as_str() {
            shown.insert(id.to_string(), related);
        }
        if to_itself {
            shown.insert(id_of(record), record);
        }
    }
    let mut seen = Seen {
        records: records.len(),
        hidden: 0,
    };
    let related_of = |record: &Value| -> Option<&Value> {
        let related = &record[relation];
        if related.is_null() {
            return None;
        }
        let id = related["id"]
            .as_str()
            .or_else(|| related["__KEY"].as_str())
            .expect("a related record or a reference");
        shown.get(id).copied()
    };
    seen.hidden = records
        .iter()
        .filter(|r| !r[relation].is_null() && related_of(r).is_none())
        .count();
    for (index, field) in fields.iter().enumerate() {
        let descending = index % 2 == 1;
        let mut expected: Vec<(Key, String)> = records
            .iter()
            .map(|record| {
                let key = related_of(record)
                    .map(|related| Key::of(field, at(related, &field.path)))
                    .unwrap_or(Key::Unset);
                (key, id_of(record))
            })
            .collect();
        expected.sort_by(|a, b| a.0.compare(&b.0).then_with(|| a.1.cmp(&b.1)));
        if descending {
            expected.reverse();
        }
        let direction = if descending { "<" } else { ">" };
        let order = format!("fields=id&order_by={relation}.{}{direction}", field.path);
        let ordered = all_records(fx, user_type, resource.name, &order)
            .await
            .unwrap_or_else(|| panic!("{user_type}: {}?{order} was refused", resource.name));
        let ids: Vec<String> = ordered.iter().map(id_of).collect();
        let expected_ids: Vec<&String> = expected.iter().map(|(_, id)| id).collect();
        if let Some(at) =
            (0..ids.len().max(expected.len())).find(|&i| ids.get(i) != expected_ids.get(i).copied())
        {
            let around = |i: usize| {
                expected
                    .get(i)
                    .map(|(key, id)| format!("{id} {key:?}"))
                    .unwrap_or_default()
            };
            panic!(
                "{user_type}: {}?{order} differs from the caller's own order at {at} of {}: the server has {:?}, the caller's order {} (then {})",
                resource.name,
                ids.len(),
                ids.get(at),
                around(at),
                around(at + 1)
            );
        }
    }
    Some(seen)
}

crate::on_both_backends! { "order_scope";

async fn order_by_through_every_relation_reveals_nothing_out_of_scope(fx) {
    let mut checked = 0;
    let mut hidden = 0;
    for user_type in USER_TYPES {
        for resource in catalog().resources() {
            for relation in resource.public_relations().filter(|r| r.is_to_one()) {
                let fields = sort_fields(catalog().target(relation), user_type);
                let Some(seen) = check_relation(fx, user_type, resource, relation.name, &fields).await
                else {
                    continue;
                };
                checked += 1;
                if user_type != "admin" {
                    hidden += seen.hidden;
                } else {
                    assert_eq!(seen.hidden, 0, "an admin sees every {}", relation.name);
                }
            }
        }
    }
    assert!(checked > 60, "{checked} relations checked");
    assert!(hidden > 0, "some related records were out of scope, so the test can fail");
}

async fn the_reviews_request_sorts_hidden_users_as_unset(fx) {
    let user = catalog().resource("user").unwrap();
    let lang = user.field_at("detail.lang").expect("detail.lang");
    let file = catalog().resource("file").unwrap();
    let seen = check_relation(fx, "company", file, "file_user", &[lang])
        .await
        .expect("a company user may sort files by their users");
    assert!(seen.records > 0, "{seen:?}");
}
}
