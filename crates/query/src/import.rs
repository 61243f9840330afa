//! A set-up document (`brandhub import`, docs/API.md, "Writes: master data and catalogue") read before anything touches the
//! database: a JSON object of arrays of records by resource name, each resource one whose
//! records a set-up may hold (`Resource::importable`). A document of another shape is 400,
//! an unknown section 400 `unknown_field`; the records themselves are checked by the write
//! pipeline, as any create.

use brandhub_catalog::{Resource, catalog};
use brandhub_problem::{ApiError, ApiResult, Code};
use serde_json::{Map, Value};

/// The records of a set-up document, by resource, in the catalog's order (so that links
/// may name records of resources listed earlier).
pub type Sections = Vec<(&'static Resource, Vec<Map<String, Value>>)>;

fn invalid(detail: String) -> ApiError {
    ApiError::new(Code::InvalidValue, detail)
}

/// Reads a set-up document into its sections.
pub fn parse_document(text: &[u8]) -> ApiResult<Sections> {
    let document: Value = serde_json::from_slice(text)
        .map_err(|e| invalid(format!("The import document is not JSON: {e}.")))?;
    let Value::Object(mut sections) = document else {
        return Err(invalid(
            "An import document is a JSON object of arrays by resource name.".into(),
        ));
    };
    let importable = || catalog().resources().iter().filter(|r| r.importable());
    if let Some(name) = sections
        .keys()
        .find(|name| !importable().any(|r| r.name == name.as_str()))
    {
        return Err(ApiError::unknown_field(
            "An import section",
            name,
            importable().map(|r| r.name),
        ));
    }
    let mut out = Vec::new();
    for resource in importable() {
        let Some(section) = sections.remove(resource.name) else {
            continue;
        };
        let Value::Array(items) = section else {
            return Err(invalid(format!(
                "The import section {} must be an array of records.",
                resource.name
            )));
        };
        let mut records = Vec::with_capacity(items.len());
        for (index, item) in items.into_iter().enumerate() {
            let Value::Object(object) = item else {
                return Err(invalid(format!(
                    "{}[{index}] must be a JSON object, not {item}.",
                    resource.name
                )));
            };
            records.push(object);
        }
        out.push((resource, records));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_come_in_the_catalog_order_and_unknown_ones_are_named() {
        let sections =
            parse_document(br#"{"brand": [{"code": "B"}], "company": [{"code": "C"}]}"#).unwrap();
        let names: Vec<&str> = sections.iter().map(|(r, _)| r.name).collect();
        assert_eq!(names, ["company", "brand"]);
        let error = parse_document(br#"{"compnay": []}"#).unwrap_err();
        assert_eq!(error.code, Code::UnknownField);
        assert!(
            error.detail.contains("Did you mean 'company'"),
            "{}",
            error.detail
        );
        for bad in [
            &b"[]"[..],
            b"{\"company\": {}}",
            b"{\"company\": [1]}",
            b"nope",
        ] {
            assert_eq!(parse_document(bad).unwrap_err().code, Code::InvalidValue);
        }
        // Keys show their secret once, to nobody in a set-up: not importable.
        assert_eq!(
            parse_document(br#"{"apiKey": []}"#).unwrap_err().code,
            Code::UnknownField
        );
    }
}
