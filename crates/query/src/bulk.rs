//! A field set on many records at once read from JSON (`POST /api/<resource>/<field>`,
//! docs/API.md "Host SKUs"), before anything touches the database: each element names its
//! record by `id` or by one of the ways the catalog declares ([`BulkSet::named_by`]), and
//! gives the field's new value. A body that is not an array of 1 to
//! [`MAX_WRITE_RECORDS`] objects, or an element with a name the write does not know, is
//! 400; every other problem is kept, by the element's index, for the one 422 the store
//! answers once it has also checked what needs the database.

use crate::plan::Viewer;
use crate::write::{MAX_WRITE_RECORDS, WriteMode, WriteValues, parse_fields};
use brandhub_catalog::{BulkSet, Field, Resource};
use brandhub_problem::{ApiError, ApiResult, Code, FieldError, Words, words};
use serde_json::Value;

/// How an element names its record.
#[derive(Debug, Clone)]
pub enum Named {
    /// By its id.
    Id(String),
    /// By the fields of one of the declared ways, with the values given.
    By(Vec<(&'static Field, String)>),
}

/// One element of a bulk set, parsed.
#[derive(Debug, Clone)]
pub struct BulkElement {
    /// Its record, `None` when the element names none the write could look for (a problem
    /// of its values says why).
    pub named: Option<Named>,
    /// The field's new value, and the element's problems (each with its index).
    pub values: WriteValues,
}

/// Parses the body of `POST /api/<resource>/<field>` for the resource's [`BulkSet`].
pub fn parse_bulk(
    resource: &'static Resource,
    bulk: BulkSet,
    body: &[u8],
    viewer: &Viewer,
) -> ApiResult<Vec<BulkElement>> {
    let shape = || {
        ApiError::new(
            Code::InvalidValue,
            format!(
                "The body must be a JSON array of 1 to {MAX_WRITE_RECORDS} objects, each naming a {} by {} and giving its {}.",
                resource.name,
                ways(bulk),
                bulk.field
            ),
        )
    };
    let items = match serde_json::from_slice(body) {
        Ok(Value::Array(items)) if !items.is_empty() && items.len() <= MAX_WRITE_RECORDS => items,
        _ => return Err(shape()),
    };
    let known: Vec<&str> = std::iter::once("id")
        .chain(std::iter::once(bulk.field))
        .chain(bulk.named_by.iter().flat_map(|way| way.iter().copied()))
        .collect();
    let mut elements = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let Value::Object(mut object) = item else {
            return Err(ApiError::new(
                Code::InvalidValue,
                format!("Element {index} of the array must be a JSON object, not {item}."),
            ));
        };
        if let Some(unknown) = object.keys().find(|key| !known.contains(&key.as_str())) {
            let mut error = ApiError::unknown_field(
                &format!(
                    "Element {index}: {} has no field '{unknown}' here: the name",
                    resource.name
                ),
                unknown,
                known.iter().copied(),
            );
            error.field = Some(unknown.clone());
            return Err(error);
        }
        let mut problems = Vec::new();
        let at = |field: &str, message: Words| FieldError {
            field: field.to_string(),
            message,
            index: Some(index),
        };
        let value = object.remove(bulk.field);
        let mut values = match value {
            Some(value) => {
                let mut given = serde_json::Map::new();
                given.insert(bulk.field.to_string(), value);
                parse_fields(
                    resource,
                    WriteMode::Update,
                    &[bulk.field],
                    &[],
                    &given,
                    viewer,
                )?
            }
            None => {
                problems.push(at(bulk.field, brandhub_problem::required_message()));
                WriteValues::default()
            }
        };
        let mut named_keys: Vec<&str> = object.keys().map(String::as_str).collect();
        named_keys.sort_unstable();
        let text_of = |key: &str, problems: &mut Vec<FieldError>| match object.get(key) {
            Some(Value::String(text)) if !text.is_empty() => Some(text.clone()),
            other => {
                problems.push(at(
                    key,
                    words!(
                        "must be a non-empty text, not {}",
                        "muss ein nicht leerer Text sein, nicht {}",
                        other.cloned().unwrap_or(Value::Null)
                    ),
                ));
                None
            }
        };
        let way = bulk.named_by.iter().find(|way| {
            let mut sorted: Vec<&str> = way.to_vec();
            sorted.sort_unstable();
            sorted == named_keys
        });
        let named = if named_keys == ["id"] {
            text_of("id", &mut problems).map(Named::Id)
        } else if let Some(way) = way {
            let by: Vec<(&'static Field, String)> = way
                .iter()
                .filter_map(|path| {
                    let field = resource.field_at(path)?;
                    Some((field, text_of(path, &mut problems)?))
                })
                .collect();
            (by.len() == way.len()).then_some(Named::By(by))
        } else {
            problems.push(at(
                "id",
                words!(
                    "names no {}: give {}",
                    "nennt kein {}: {} angeben",
                    resource.name,
                    ways(bulk)
                ),
            ));
            None
        };
        for problem in &mut values.problems {
            problem.index = Some(index);
        }
        values.problems.extend(problems);
        elements.push(BulkElement { named, values });
    }
    Ok(elements)
}

/// The ways an element may name its record, as messages say them.
fn ways(bulk: BulkSet) -> String {
    let mut ways = vec!["id".to_string()];
    ways.extend(bulk.named_by.iter().map(|way| way.join(" and ")));
    let last = ways.pop().unwrap_or_default();
    if ways.is_empty() {
        last
    } else {
        format!("{}, or {last}", ways.join(", or "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brandhub_catalog::{Res, catalog};

    fn offer() -> (&'static Resource, BulkSet) {
        let offer = catalog().get(Res::Offer);
        (
            offer,
            offer.writes.bulk.expect("offers' SKUs are set in bulk"),
        )
    }

    #[test]
    fn elements_name_their_record_one_way_and_keep_their_problems_by_index() {
        let (offer, bulk) = offer();
        let body = br#"[{"id": "A", "hostSku": "X"},
                        {"fk_brandStore": "B", "barcode": "123", "hostSku": "Y"},
                        {"fk_brandStore": "B", "fk_variant": "V", "hostSku": ""},
                        {"fk_brandStore": "B", "hostSku": "Z"},
                        {"id": "A", "hostSku": 5},
                        {"id": "A"}]"#;
        let elements = parse_bulk(offer, bulk, body, &Viewer::admin()).unwrap();
        assert!(matches!(&elements[0].named, Some(Named::Id(id)) if id == "A"));
        assert!(
            matches!(&elements[1].named, Some(Named::By(by)) if by.len() == 2 && by[1].1 == "123")
        );
        assert!(elements[2].values.problems.is_empty());
        assert_eq!(elements[2].values.text("hostSku").as_deref(), Some(""));
        assert!(elements[3].named.is_none());
        assert_eq!(elements[3].values.problems[0].field, "id");
        for (i, field) in [(3, "id"), (4, "hostSku"), (5, "hostSku")] {
            assert!(
                elements[i]
                    .values
                    .problems
                    .iter()
                    .any(|p| p.index == Some(i) && p.field == field),
                "{i}: {:?}",
                elements[i].values.problems
            );
        }
    }

    #[test]
    fn bodies_that_are_no_array_of_up_to_a_thousand_objects_are_refused() {
        let (offer, bulk) = offer();
        let too_many = format!(
            "[{}]",
            vec![r#"{"id": "A", "hostSku": "X"}"#; MAX_WRITE_RECORDS + 1].join(",")
        );
        for body in [&b"[]"[..], too_many.as_bytes(), b"[1]", b"{}"] {
            let error = parse_bulk(offer, bulk, body, &Viewer::admin()).unwrap_err();
            assert_eq!(error.code, Code::InvalidValue);
        }
        let error = parse_bulk(
            offer,
            bulk,
            br#"[{"id": "A", "hostSKU": "X"}]"#,
            &Viewer::admin(),
        )
        .unwrap_err();
        assert_eq!(error.code, Code::UnknownField);
    }
}
