//! The complex-query body: a JSON object of condition lists, read into the conditions and
//! value lists of a [`ComplexQuery`], each condition checked where it is read.

use super::{Totals, check_path, check_value};
use crate::limits::{CONDITIONS, VALUES, shorten};
use crate::request::{
    ComplexQuery, Condition, Conjunction, Object, Operator, RawValue, ValuesCondition, WireBody,
    WireCondition, WireValues,
};
use brandhub_problem::{ApiError, ApiResult, Code};

/// Parses a complex-query body. An empty body (or only white space) means no body.
///
/// The body has a fixed shape (an object of lists of flat objects), and a condition's value
/// must be a scalar: an array or object there is refused where it starts, so nothing here
/// walks nested JSON (serde_json's own nesting limit bounds the parse itself).
pub fn parse_body(bytes: &[u8]) -> ApiResult<Option<ComplexQuery>> {
    let Some(&first) = bytes.iter().find(|b| !b.is_ascii_whitespace()) else {
        return Ok(None);
    };
    let expected = "Expected a JSON object with query, queryselection, querywitharray and queryselectionwitharray.";
    if first != b'{' {
        // serde would read a JSON array as the fields of the object, in order.
        return Err(ApiError::new(
            Code::InvalidQuery,
            format!("The body is not a valid complex query: it is not a JSON object. {expected}"),
        ));
    }
    let wire: WireBody = serde_json::from_slice::<Object<WireBody>>(bytes)
        .map(|o| o.0)
        .map_err(|error| {
            ApiError::new(
                Code::InvalidQuery,
                format!("The body is not a valid complex query: {error}. {expected}"),
            )
        })?;
    if wire.query.is_some() && wire.querywitharray.is_some() {
        return Err(ApiError::new(
            Code::InvalidQuery,
            "query and querywitharray cannot be used together; step 1 is one or the other.",
        ));
    }
    let wire_conditions =
        wire.query.as_ref().map_or(0, Vec::len) + wire.queryselection.as_ref().map_or(0, Vec::len);
    CONDITIONS.check(Code::InvalidQuery, "The body", wire_conditions, "")?;
    let query = conditions("query", wire.query.unwrap_or_default())?;
    let selection = conditions("queryselection", wire.queryselection.unwrap_or_default())?;
    let query_with_array = wire
        .querywitharray
        .map(|v| values("querywitharray", v))
        .transpose()?;
    let selection_with_array = wire
        .queryselectionwitharray
        .map(|v| values("queryselectionwitharray", v))
        .transpose()?;
    let body = ComplexQuery {
        query,
        query_with_array,
        selection,
        selection_with_array,
    };
    Totals::of_body(&body).check(Code::InvalidQuery, "The body")?;
    Ok(Some(body))
}

fn conditions(list: &str, wire: Vec<WireCondition>) -> ApiResult<Vec<Condition>> {
    let mut out = Vec::with_capacity(wire.len());
    for (index, condition) in wire.into_iter().enumerate() {
        let position = format!("{list}[{index}]");
        check_path(Code::InvalidQuery, &condition.field)?;
        let operator = Operator::parse(&condition.operator).ok_or_else(|| {
            ApiError::new(
                Code::InvalidQuery,
                format!(
                    "{position}: operator '{}' is not one of =, #, <, <=, >, >=.",
                    shorten(&condition.operator)
                ),
            )
            .with_field(shorten(&condition.field))
        })?;
        let conjunction = match condition.conjunction.as_deref().map(str::trim) {
            None | Some("") if index == 0 => None,
            Some(c) if index == 0 => {
                return Err(ApiError::new(
                    Code::InvalidQuery,
                    format!(
                        "{position}: the first condition takes no conjunction, but has '{}'.",
                        shorten(c)
                    ),
                ));
            }
            None | Some("") => {
                return Err(ApiError::new(
                    Code::InvalidQuery,
                    format!(
                        "{position}: every condition after the first needs a conjunction: & (and), | (or) or # (except)."
                    ),
                ));
            }
            Some(c) => Some(Conjunction::parse(c).ok_or_else(|| {
                ApiError::new(
                    Code::InvalidQuery,
                    format!(
                        "{position}: conjunction '{}' is not one of & (and), | (or), # (except).",
                        shorten(c)
                    ),
                )
            })?),
        };
        let value = RawValue::from(condition.value);
        if let RawValue::Text(text) = &value {
            check_value(text, &condition.field)?;
        }
        out.push(Condition {
            field: condition.field,
            operator,
            value,
            conjunction,
        });
    }
    Ok(out)
}

fn values(name: &str, wire: WireValues) -> ApiResult<ValuesCondition> {
    check_path(Code::InvalidQuery, &wire.field)?;
    let negated = match wire.operator.as_deref().map(str::trim) {
        None | Some("") | Some("=") => false,
        Some("#") => true,
        Some(other) => {
            return Err(ApiError::new(
                Code::InvalidQuery,
                format!(
                    "{name}: operator '{}' is not = (any of the values) or # (none of them).",
                    shorten(other)
                ),
            ));
        }
    };
    if wire.values.is_empty() {
        return Err(ApiError::new(
            Code::InvalidQuery,
            format!("{name}: values is empty; give at least one value."),
        ));
    }
    VALUES.check(Code::InvalidQuery, name, wire.values.len(), &wire.field)?;
    let values: Vec<RawValue> = wire.values.into_iter().map(RawValue::from).collect();
    for value in &values {
        if let RawValue::Text(text) = value {
            check_value(text, &wire.field)?;
        }
    }
    Ok(ValuesCondition {
        field: wire.field,
        values,
        negated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_keep_their_conditions_in_order() {
        let body = br##"{"query":[{"field":"status","operator":"=","value":"processed"},
                         {"field":"fileType","operator":"#","value":"image","conjunction":"&"}],
                        "queryselectionwitharray":{"field":"fk_brand","values":["A","B"],"operator":"#"}}"##;
        let q = parse_body(body).unwrap().unwrap();
        assert_eq!(q.query.len(), 2);
        assert_eq!(q.query[1].operator, Operator::NotEqual);
        assert_eq!(q.query[1].conjunction, Some(Conjunction::And));
        assert!(q.selection_with_array.unwrap().negated);
    }

    #[test]
    fn malformed_bodies_are_invalid_query() {
        for body in [
            &br#"{"query":[], "querywitharray":{"field":"a","values":["x"]}}"#[..],
            br#"{"nonsense":1}"#,
            br#"{"query":[{"field":"a","operator":"~","value":"x"}]}"#,
            br#"{"query":[{"field":"a","operator":"=","value":"x","conjunction":"&"}]}"#,
            br#"{"query":[{"field":"a","operator":"=","value":"x"},{"field":"b","operator":"=","value":"y"}]}"#,
            br#"{"query":[{"field":"a","operator":"=","value":[1]}]}"#,
            br#"{"querywitharray":{"field":"a","values":[]}}"#,
            br#"[1,2]"#,
            br#"{"query": "#,
            // Only objects: serde would take an array of a struct's fields in order.
            br#"[]"#,
            br#"[null,null]"#,
            br#"[null,null,null,null]"#,
            br#"5"#,
            br#""x""#,
            br#"null"#,
            br#"true"#,
            br#"{"query":[["a","=","x"]]}"#,
            br#"{"querywitharray":["a",["x"]]}"#,
            br#"{"queryselectionwitharray":[]}"#,
        ] {
            let error = parse_body(body).unwrap_err();
            assert_eq!(error.code, Code::InvalidQuery, "{}", String::from_utf8_lossy(body));
        }
        assert!(parse_body(b"  ").unwrap().is_none());
    }

    #[test]
    fn bodies_are_objects_of_flat_values() {
        for body in [&b"[]"[..], b"[null,null]", b"  [ {} ]", b"\"query\"", b"7"] {
            let error = parse_body(body).unwrap_err();
            assert_eq!(
                error.code,
                Code::InvalidQuery,
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        // Nesting is refused where it starts, however deep it goes.
        let deep = format!(
            r#"{{"query":[{{"field":"a","operator":"=","value":{}1{}}}]}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(
            parse_body(deep.as_bytes()).unwrap_err().code,
            Code::InvalidQuery
        );
        let deep_object = format!(
            r#"{{"querywitharray":{{"field":"a","values":[{}]}}}}"#,
            r#"{"a":"#.repeat(50_000)
        );
        assert_eq!(
            parse_body(deep_object.as_bytes()).unwrap_err().code,
            Code::InvalidQuery
        );
        // Elsewhere serde_json's own nesting limit stops the parse.
        let deep_list = format!(r#"{{"query":{}"#, "[".repeat(100_000));
        assert_eq!(
            parse_body(deep_list.as_bytes()).unwrap_err().code,
            Code::InvalidQuery
        );
        let null_value = parse_body(br#"{"query":[{"field":"a","operator":"=","value":null}]}"#)
            .unwrap()
            .unwrap();
        assert_eq!(null_value.query[0].value, RawValue::Text(String::new()));
        let numbers = parse_body(br#"{"querywitharray":{"field":"a","values":[1,-2,2.5,1e400]}}"#);
        assert_eq!(
            numbers.unwrap_err().code,
            Code::InvalidQuery,
            "1e400 is not a finite number"
        );
    }
}
