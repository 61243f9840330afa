//! Stage 1 of the pipeline: the raw URL query and JSON body become a [`ReadRequest`]. Every
//! syntax error is decided here (bad page numbers, malformed order items, bodies of the wrong
//! shape); names are left for the planner to resolve against the catalog.
//!
//! The URL query string (`url`) and the body (`body`) are parsed apart; the limits on the
//! request as a whole, and the checks of values and paths both share, are here.

mod body;
mod url;

pub use body::parse_body;
pub use url::{parse_order_by, parse_query_string};

use crate::limits::{CONDITIONS, Limit, PATH_NAMES, VALUE_BYTES, VALUES, WILDCARD_VALUES, shorten};
use crate::request::{ComplexQuery, RawValue, ReadRequest, UrlFilter};
use crate::text::WILDCARD;
use brandhub_problem::{ApiError, ApiResult, Code};

/// Parameters with a meaning of their own; every other parameter is a filter.
pub const RESERVED_PARAMETERS: [&str; 7] = [
    "page",
    "pageSize",
    "order_by",
    "fields",
    "exclude",
    "format",
    "changedSince",
];

/// Parses a whole read request: the raw URL query string and the body (empty when none).
/// Besides each part's own limits, the limits on the request as a whole (conditions, values,
/// wildcard values) are checked here, so nothing past them reaches the planner.
pub fn parse_request(raw_query: &str, body: &[u8]) -> ApiResult<ReadRequest> {
    let mut request = parse_query_string(raw_query)?;
    request.body = parse_body(body)?;
    check_totals(&request)?;
    Ok(request)
}

/// How much a request asks for: what the request-wide limits count (and the longest value,
/// which is checked with them).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Totals {
    conditions: usize,
    values: usize,
    wildcard_values: usize,
    /// The bytes of the longest value.
    longest_value: usize,
}

impl Totals {
    fn of_url(filters: &[UrlFilter]) -> Totals {
        Totals {
            conditions: filters.len(),
            values: filters.iter().map(|f| f.values.len()).sum(),
            wildcard_values: filters
                .iter()
                .flat_map(|f| &f.values)
                .filter(|v| v.value.contains(WILDCARD))
                .count(),
            longest_value: filters
                .iter()
                .flat_map(|f| &f.values)
                .map(|v| v.value.len())
                .max()
                .unwrap_or(0),
        }
    }

    fn of_body(body: &ComplexQuery) -> Totals {
        let arrays = body
            .query_with_array
            .iter()
            .chain(&body.selection_with_array);
        let values = body
            .query
            .iter()
            .chain(&body.selection)
            .map(|c| &c.value)
            .chain(arrays.clone().flat_map(|a| &a.values));
        Totals {
            conditions: body.query.len() + body.selection.len(),
            values: arrays.map(|a| a.values.len()).sum(),
            wildcard_values: values.clone().filter(|v| has_wildcard(v)).count(),
            longest_value: values
                .map(|v| match v {
                    RawValue::Text(text) => text.len(),
                    _ => 0,
                })
                .max()
                .unwrap_or(0),
        }
    }

    fn add(self, other: Totals) -> Totals {
        Totals {
            conditions: self.conditions + other.conditions,
            values: self.values + other.values,
            wildcard_values: self.wildcard_values + other.wildcard_values,
            longest_value: self.longest_value.max(other.longest_value),
        }
    }

    /// Checks each total against its limit; `subject` and `code` say which part is counted.
    fn check(self, code: Code, subject: &str) -> ApiResult<()> {
        let checks: [(Limit, usize); 4] = [
            (CONDITIONS, self.conditions),
            (VALUES, self.values),
            (WILDCARD_VALUES, self.wildcard_values),
            (VALUE_BYTES, self.longest_value),
        ];
        for (limit, found) in checks {
            limit.check(code, subject, found, "")?;
        }
        Ok(())
    }
}

fn has_wildcard(value: &RawValue) -> bool {
    matches!(value, RawValue::Text(text) if text.contains(WILDCARD))
}

/// The request-wide limits over the URL filters and the body together.
pub fn check_totals(request: &ReadRequest) -> ApiResult<()> {
    let url = Totals::of_url(&request.filters);
    let body = request
        .body
        .as_ref()
        .map(Totals::of_body)
        .unwrap_or_default();
    url.add(body).check(
        Code::InvalidQuery,
        "The request (URL filters and body together)",
    )
}

/// Rejects a value no database can compare: PostgreSQL's text cannot hold a NUL character.
fn check_value(value: &str, field: &str) -> ApiResult<()> {
    if !value.contains('\0') {
        return Ok(());
    }
    Err(ApiError::new(
        Code::InvalidValue,
        format!(
            "A value of {} contains the NUL character (U+0000), which no field can hold.",
            shorten(field)
        ),
    )
    .with_field(shorten(field)))
}

/// Rejects a path with more names than [`PATH_NAMES`] allows, before anything walks it.
fn check_path(code: Code, path: &str) -> ApiResult<()> {
    let names = path.split('.').count();
    if names <= PATH_NAMES.max {
        return Ok(());
    }
    // The message is only worked out for a path past the limit: paths are checked often.
    Err(PATH_NAMES.exceeded(code, &format!("The path '{}'", shorten(path)), names, path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Direction;

    #[test]
    fn a_request_through_a_relation_prefixes_every_path() {
        let mut r = parse_query_string("code=A@&order_by=title%3C&fields=x&page=2").unwrap();
        r.body = parse_body(br#"{"query":[{"field":"status","operator":"=","value":"a"}],"queryselectionwitharray":{"field":"fk_brand","values":["B"]}}"#).unwrap();
        let t = r.through("variant_product");
        assert_eq!(t.filters[0].path, "variant_product.code");
        assert_eq!(t.order_by[0].path, "variant_product.title");
        assert_eq!(t.order_by[0].direction, Direction::Descending);
        let body = t.body.unwrap();
        assert_eq!(body.query[0].field, "variant_product.status");
        assert_eq!(
            body.selection_with_array.unwrap().field,
            "variant_product.fk_brand"
        );
        assert_eq!((t.fields, t.page), (None, Some(2)));
    }

    /// The limit a 400 names, from its detail.
    fn limit_named(error: &ApiError) -> &'static str {
        crate::limits::ALL
            .iter()
            .find(|l| error.detail.contains(&format!("the limit {} ", l.name)))
            .map_or("none", |l| l.name)
    }

    #[test]
    fn deep_paths_are_refused_before_anything_walks_them() {
        let deep = format!("{}name", "brand_product.product_brand.".repeat(250));
        let url = parse_query_string(&format!("{deep}=x")).unwrap_err();
        assert_eq!(url.code, Code::InvalidParameter);
        assert_eq!(limit_named(&url), "path_names");
        assert!(
            url.detail.len() < 400,
            "the message quotes a shortened path"
        );
        let body = format!(r#"{{"query":[{{"field":"{deep}","operator":"=","value":"x"}}]}}"#);
        let error = parse_body(body.as_bytes()).unwrap_err();
        assert_eq!(
            (error.code, limit_named(&error)),
            (Code::InvalidQuery, "path_names")
        );
        let body = format!(r#"{{"querywitharray":{{"field":"{deep}","values":["x"]}}}}"#);
        assert_eq!(
            limit_named(&parse_body(body.as_bytes()).unwrap_err()),
            "path_names"
        );
        for parameter in ["fields", "exclude", "order_by"] {
            let error = parse_query_string(&format!("{parameter}={deep}")).unwrap_err();
            assert_eq!(limit_named(&error), "path_names", "{parameter}");
        }
        // Ten names fit: eight relations, a field and a property.
        assert!(parse_query_string(&format!("{}detail.x=1", "a.".repeat(8))).is_ok());
        assert!(parse_query_string(&format!("{}detail.x=1", "a.".repeat(9))).is_err());
    }

    #[test]
    fn long_lists_are_refused_with_the_limit_they_pass() {
        let keys = vec!["code"; 3000].join(";");
        let error = parse_query_string(&format!("order_by={keys}")).unwrap_err();
        assert_eq!(
            (error.code, limit_named(&error)),
            (Code::InvalidParameter, "order_by_keys")
        );
        assert!(error.detail.contains("3000 keys"), "{}", error.detail);
        assert!(parse_order_by(&["code"; 8].join(";")).is_ok());
        assert!(parse_order_by(&["code"; 9].join(";")).is_err());
        let items = vec!["id"; 65].join(",");
        assert_eq!(
            limit_named(&parse_query_string(&format!("fields={items}")).unwrap_err()),
            "fields_items"
        );
        assert_eq!(
            limit_named(&parse_query_string(&format!("exclude={items}")).unwrap_err()),
            "exclude_items"
        );
        let filters: Vec<String> = (0..101).map(|i| format!("f{i}=1")).collect();
        assert_eq!(
            limit_named(&parse_query_string(&filters.join("&")).unwrap_err()),
            "conditions"
        );
    }

    #[test]
    fn many_values_are_refused_past_their_limits() {
        let patterns: Vec<String> = (0..5000).map(|i| format!("code={i}@")).collect();
        let error = parse_query_string(&patterns.join("&")).unwrap_err();
        assert_eq!(
            (error.code, limit_named(&error)),
            (Code::InvalidParameter, "wildcard_values")
        );
        let plain: Vec<String> = (0..10_001).map(|i| format!("code={i}")).collect();
        assert_eq!(
            limit_named(&parse_query_string(&plain.join("&")).unwrap_err()),
            "values"
        );
        assert!(parse_query_string(&plain[..10_000].join("&")).is_ok());
        let at: Vec<String> = (0..5000).map(|i| format!("\"{i}@\"")).collect();
        let body = format!(
            r#"{{"querywitharray":{{"field":"code","values":[{}]}}}}"#,
            at.join(",")
        );
        let error = parse_body(body.as_bytes()).unwrap_err();
        assert_eq!(
            (error.code, limit_named(&error)),
            (Code::InvalidQuery, "wildcard_values")
        );
        let many: Vec<String> = (0..10_001).map(|i| i.to_string()).collect();
        let body = format!(
            r#"{{"queryselectionwitharray":{{"field":"code","values":[{}]}}}}"#,
            many.join(",")
        );
        assert_eq!(
            limit_named(&parse_body(body.as_bytes()).unwrap_err()),
            "values"
        );
    }

    #[test]
    fn nul_characters_are_invalid_values() {
        assert_eq!(
            parse_query_string("name=a%00b").unwrap_err().code,
            Code::InvalidValue
        );
        for body in [
            &br#"{"query":[{"field":"a","operator":"=","value":"x\u0000"}]}"#[..],
            br#"{"querywitharray":{"field":"a","values":["x","\u0000@"]}}"#,
        ] {
            assert_eq!(parse_body(body).unwrap_err().code, Code::InvalidValue);
        }
    }

    #[test]
    fn long_values_are_refused() {
        let long = format!("a@{}", "b".repeat(60_000));
        let error = parse_query_string(&format!("name={long}")).unwrap_err();
        assert_eq!(
            (error.code, limit_named(&error)),
            (Code::InvalidParameter, "value_bytes")
        );
        let body = format!(r#"{{"query":[{{"field":"name","operator":"=","value":"{long}"}}]}}"#);
        assert_eq!(
            limit_named(&parse_body(body.as_bytes()).unwrap_err()),
            "value_bytes"
        );
        let body = format!(r#"{{"querywitharray":{{"field":"name","values":["x","{long}"]}}}}"#);
        assert_eq!(
            limit_named(&parse_body(body.as_bytes()).unwrap_err()),
            "value_bytes"
        );
        assert!(parse_query_string(&format!("name={}", "b".repeat(4096))).is_ok());
    }

    #[test]
    fn the_whole_request_counts_url_and_body_together() {
        let filters: Vec<String> = (0..60).map(|i| format!("f{i}=1")).collect();
        let conditions: Vec<String> = (0..50)
            .map(|i| {
                let conjunction = if i == 0 { "" } else { r#","conjunction":"&""# };
                format!(r#"{{"field":"f","operator":"=","value":"{i}"{conjunction}}}"#)
            })
            .collect();
        let body = format!(r#"{{"query":[{}]}}"#, conditions.join(","));
        assert!(parse_query_string(&filters.join("&")).is_ok());
        assert!(parse_body(body.as_bytes()).is_ok());
        let error = parse_request(&filters.join("&"), body.as_bytes()).unwrap_err();
        assert_eq!(
            (error.code, limit_named(&error)),
            (Code::InvalidQuery, "conditions")
        );
        assert!(error.detail.contains("110 conditions"), "{}", error.detail);
        assert!(parse_request(&filters[..50].join("&"), body.as_bytes()).is_ok());
    }
}
