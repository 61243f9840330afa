//! Stage 1 of the pipeline: the raw URL query and JSON body become a [`ReadRequest`]. Every
//! syntax error is decided here (bad page numbers, malformed order items, bodies of the wrong
//! shape); names are left for the planner to resolve against the catalog.

use crate::request::{
    ComplexQuery, Condition, Conjunction, Direction, Format, Operator, OrderItem, RawValue,
    ReadRequest, UrlFilter, ValuesCondition, WireBody, WireCondition, WireValues,
};
use brandhub_problem::{ApiError, ApiResult, Code};

/// Parameters with a meaning of their own; every other parameter is a filter.
pub const RESERVED_PARAMETERS: [&str; 6] = [
    "page", "pageSize", "order_by", "fields", "exclude", "format",
];

/// At most this many conditions in one body (`query` and `queryselection` together).
pub const MAX_CONDITIONS: usize = 100;

/// At most this many values in one body's arrays together.
pub const MAX_VALUES: usize = 10_000;

/// The largest page number accepted (keeps offsets far from overflow).
pub const MAX_PAGE: u64 = 1 << 31;

/// Parses a raw (still percent-encoded) URL query string.
pub fn parse_query_string(raw: &str) -> ApiResult<ReadRequest> {
    let mut request = ReadRequest::default();
    let mut seen_reserved: Vec<&str> = Vec::new();
    for (name, value) in form_urlencoded::parse(raw.as_bytes()) {
        if let Some(reserved) = RESERVED_PARAMETERS.iter().find(|r| **r == name) {
            if seen_reserved.contains(reserved) {
                return Err(ApiError::new(
                    Code::InvalidParameter,
                    format!("Parameter '{reserved}' is given more than once."),
                )
                .with_field(*reserved));
            }
            seen_reserved.push(reserved);
            apply_reserved(&mut request, reserved, &value)?;
            continue;
        }
        if name.is_empty() {
            return Err(ApiError::new(
                Code::InvalidParameter,
                format!("A parameter without a name (value '{value}') cannot be a filter."),
            ));
        }
        match request.filters.iter_mut().find(|f| f.path == name) {
            Some(filter) => filter.values.push(value.into_owned()),
            None => request.filters.push(UrlFilter {
                path: name.into_owned(),
                values: vec![value.into_owned()],
            }),
        }
    }
    Ok(request)
}

fn apply_reserved(request: &mut ReadRequest, name: &str, value: &str) -> ApiResult<()> {
    match name {
        "page" => request.page = Some(parse_positive(name, value, MAX_PAGE)?),
        "pageSize" => request.page_size = Some(parse_positive(name, value, u64::MAX)?),
        "order_by" => request.order_by = parse_order_by(value)?,
        "fields" => request.fields = Some(parse_name_list(name, value)?),
        "exclude" => request.exclude = parse_name_list(name, value)?,
        "format" => request.format = Some(parse_format(value)?),
        _ => unreachable!("only reserved names reach here"),
    }
    Ok(())
}

fn parse_format(value: &str) -> ApiResult<Format> {
    Format::named(value).ok_or_else(|| {
        let names: Vec<&str> = Format::ALL.iter().map(|(_, name)| *name).collect();
        ApiError::new(
            Code::InvalidParameter,
            format!(
                "Parameter 'format' must be one of {}; got '{value}'.",
                names.join(", ")
            ),
        )
        .with_field("format")
    })
}

fn parse_positive(name: &str, value: &str, max: u64) -> ApiResult<u64> {
    let invalid = || {
        ApiError::new(
            Code::InvalidParameter,
            format!("Parameter '{name}' must be a whole number of at least 1; got '{value}'."),
        )
        .with_field(name)
    };
    let trimmed = value.trim();
    if trimmed.is_empty() || !trimmed.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    // A number too large for u64 is still a number: saturate, then apply the bounds below.
    let number = trimmed.parse::<u64>().unwrap_or(u64::MAX);
    if number < 1 {
        return Err(invalid());
    }
    if number > max {
        return Err(ApiError::new(
            Code::InvalidParameter,
            format!("Parameter '{name}' must be at most {max}; got '{value}'."),
        )
        .with_field(name));
    }
    Ok(number)
}

/// `a;>b;c<` → items with directions; `>` ascending, `<` descending, before or after the path.
pub fn parse_order_by(value: &str) -> ApiResult<Vec<OrderItem>> {
    let mut items = Vec::new();
    for raw in value.split(';') {
        let item = raw.trim();
        let invalid = |why: &str| {
            ApiError::new(
                Code::InvalidParameter,
                format!("order_by item '{raw}' {why}. Write a path with an optional > (ascending) or < (descending) before or after it, items separated by ';'."),
            )
            .with_field("order_by")
        };
        if item.is_empty() {
            return Err(invalid("is empty"));
        }
        let mut path = item;
        let mut direction = None;
        for _ in 0..2 {
            let found = if let Some(rest) = path.strip_prefix(['>', '<']) {
                let d = path.as_bytes()[0];
                path = rest.trim_start();
                Some(d)
            } else if let Some(rest) = path.strip_suffix(['>', '<']) {
                let d = path.as_bytes()[path.len() - 1];
                path = rest.trim_end();
                Some(d)
            } else {
                None
            };
            if let Some(d) = found {
                let d = if d == b'>' {
                    Direction::Ascending
                } else {
                    Direction::Descending
                };
                if direction.is_some() {
                    return Err(invalid("has more than one direction"));
                }
                direction = Some(d);
            }
        }
        if path.is_empty() || path.contains(['>', '<']) {
            return Err(invalid("is not a path"));
        }
        items.push(OrderItem {
            path: path.to_string(),
            direction: direction.unwrap_or(Direction::Ascending),
        });
    }
    Ok(items)
}

fn parse_name_list(parameter: &str, value: &str) -> ApiResult<Vec<String>> {
    let names: Vec<String> = value.split(',').map(|n| n.trim().to_string()).collect();
    if names.iter().any(String::is_empty) {
        return Err(ApiError::new(
            Code::InvalidParameter,
            format!("Parameter '{parameter}' has an empty name in '{value}'; list names separated by commas."),
        )
        .with_field(parameter));
    }
    Ok(names)
}

/// Parses a complex-query body. An empty body (or only white space) means no body.
pub fn parse_body(bytes: &[u8]) -> ApiResult<Option<ComplexQuery>> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let wire: WireBody = serde_json::from_slice(bytes).map_err(|error| {
        ApiError::new(
            Code::InvalidQuery,
            format!("The body is not a valid complex query: {error}. Expected a JSON object with query, queryselection, querywitharray and queryselectionwitharray."),
        )
    })?;
    if wire.query.is_some() && wire.querywitharray.is_some() {
        return Err(ApiError::new(
            Code::InvalidQuery,
            "query and querywitharray cannot be used together; step 1 is one or the other.",
        ));
    }
    let query = conditions("query", wire.query.unwrap_or_default())?;
    let selection = conditions("queryselection", wire.queryselection.unwrap_or_default())?;
    if query.len() + selection.len() > MAX_CONDITIONS {
        return Err(ApiError::new(
            Code::InvalidQuery,
            format!(
                "A complex query takes at most {MAX_CONDITIONS} conditions; this one has {}.",
                query.len() + selection.len()
            ),
        ));
    }
    let query_with_array = wire
        .querywitharray
        .map(|v| values("querywitharray", v))
        .transpose()?;
    let selection_with_array = wire
        .queryselectionwitharray
        .map(|v| values("queryselectionwitharray", v))
        .transpose()?;
    let value_count = query_with_array
        .iter()
        .map(|v| v.values.len())
        .sum::<usize>()
        + selection_with_array
            .iter()
            .map(|v| v.values.len())
            .sum::<usize>();
    if value_count > MAX_VALUES {
        return Err(ApiError::new(
            Code::InvalidQuery,
            format!(
                "A complex query takes at most {MAX_VALUES} values in its arrays; this one has {value_count}."
            ),
        ));
    }
    Ok(Some(ComplexQuery {
        query,
        query_with_array,
        selection,
        selection_with_array,
    }))
}

fn conditions(list: &str, wire: Vec<WireCondition>) -> ApiResult<Vec<Condition>> {
    let mut out = Vec::with_capacity(wire.len());
    for (index, condition) in wire.into_iter().enumerate() {
        let position = format!("{list}[{index}]");
        let operator = Operator::parse(&condition.operator).ok_or_else(|| {
            ApiError::new(
                Code::InvalidQuery,
                format!(
                    "{position}: operator '{}' is not one of =, #, <, <=, >, >=.",
                    condition.operator
                ),
            )
            .with_field(condition.field.clone())
        })?;
        let conjunction = match condition.conjunction.as_deref().map(str::trim) {
            None | Some("") if index == 0 => None,
            Some(c) if index == 0 => {
                return Err(ApiError::new(
                    Code::InvalidQuery,
                    format!("{position}: the first condition takes no conjunction, but has '{c}'."),
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
                        "{position}: conjunction '{c}' is not one of & (and), | (or), # (except)."
                    ),
                )
            })?),
        };
        let value = raw_value(&position, condition.value)?;
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
    let negated = match wire.operator.as_deref().map(str::trim) {
        None | Some("") | Some("=") => false,
        Some("#") => true,
        Some(other) => {
            return Err(ApiError::new(
                Code::InvalidQuery,
                format!(
                    "{name}: operator '{other}' is not = (any of the values) or # (none of them)."
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
    let values = wire
        .values
        .into_iter()
        .enumerate()
        .map(|(i, v)| raw_value(&format!("{name}.values[{i}]"), v))
        .collect::<ApiResult<_>>()?;
    Ok(ValuesCondition {
        field: wire.field,
        values,
        negated,
    })
}

fn raw_value(position: &str, value: serde_json::Value) -> ApiResult<RawValue> {
    Ok(match value {
        serde_json::Value::Null => RawValue::Text(String::new()),
        serde_json::Value::String(s) => RawValue::Text(s),
        serde_json::Value::Number(n) => RawValue::Number(n),
        serde_json::Value::Bool(b) => RawValue::Bool(b),
        other => {
            return Err(ApiError::new(
                Code::InvalidQuery,
                format!(
                    "{position}: a value must be a string, a number or a boolean, not {other}."
                ),
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_is_reserved_and_checked() {
        assert_eq!(
            parse_query_string("format=CSV").unwrap().format,
            Some(Format::Csv)
        );
        assert_eq!(
            parse_query_string("format=xlsx").unwrap().format,
            Some(Format::Xlsx)
        );
        assert_eq!(parse_query_string("").unwrap().format, None);
        let error = parse_query_string("format=pdf").unwrap_err();
        assert_eq!(
            (error.code, error.field.as_deref()),
            (Code::InvalidParameter, Some("format"))
        );
        assert!(error.detail.contains("json, csv, xlsx"), "{}", error.detail);
    }

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

    #[test]
    fn reserved_parameters_and_filters_are_told_apart() {
        let r = parse_query_string(
            "page=2&pageSize=50&order_by=%3EcreatedDate;title%3C&fields=id,title&exclude=file_%40&status=a&status=b&stock_variant.barcode=501%40",
        )
        .unwrap();
        assert_eq!(r.page, Some(2));
        assert_eq!(r.page_size, Some(50));
        assert_eq!(
            r.order_by,
            vec![
                OrderItem {
                    path: "createdDate".into(),
                    direction: Direction::Ascending
                },
                OrderItem {
                    path: "title".into(),
                    direction: Direction::Descending
                },
            ]
        );
        assert_eq!(r.fields.unwrap(), vec!["id", "title"]);
        assert_eq!(r.exclude, vec!["file_@"]);
        assert_eq!(r.filters[0].values, vec!["a", "b"]);
        assert_eq!(r.filters[1].path, "stock_variant.barcode");
        assert_eq!(r.filters[1].values, vec!["501@"]);
    }

    #[test]
    fn raw_order_indicators_work_too() {
        let r = parse_query_string("order_by=lastUpdate<;>id").unwrap();
        assert_eq!(r.order_by[0].direction, Direction::Descending);
        assert_eq!(r.order_by[1].direction, Direction::Ascending);
    }

    #[test]
    fn bad_paging_is_invalid_parameter() {
        for query in [
            "page=0",
            "page=x",
            "pageSize=-1",
            "pageSize=",
            "page=1&page=2",
            "page=99999999999",
        ] {
            let error = parse_query_string(query).unwrap_err();
            assert_eq!(error.code, Code::InvalidParameter, "{query}");
        }
        assert_eq!(
            parse_query_string("pageSize=99999999999999999999999")
                .unwrap()
                .page_size,
            Some(u64::MAX)
        );
    }

    #[test]
    fn bad_order_items_are_invalid_parameter() {
        for value in ["", "a;;b", "<a>", ">", "a<b"] {
            assert_eq!(
                parse_order_by(value).unwrap_err().code,
                Code::InvalidParameter,
                "{value}"
            );
        }
    }

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
        ] {
            let error = parse_body(body).unwrap_err();
            assert_eq!(error.code, Code::InvalidQuery, "{}", String::from_utf8_lossy(body));
        }
        assert!(parse_body(b"  ").unwrap().is_none());
    }
}
