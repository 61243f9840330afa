//! Stage 1 of the pipeline: the raw URL query and JSON body become a [`ReadRequest`]. Every
//! syntax error is decided here (bad page numbers, malformed order items, bodies of the wrong
//! shape); names are left for the planner to resolve against the catalog.

use crate::limits::{
    CONDITIONS, EXCLUDE_ITEMS, FIELDS_ITEMS, Limit, ORDER_KEYS, PAGE, PATH_NAMES, VALUE_BYTES,
    VALUES, WILDCARD_VALUES, shorten,
};
use crate::request::{
    ComplexQuery, Condition, Conjunction, Direction, Format, Object, Operator, OrderItem, RawValue,
    ReadRequest, UrlFilter, UrlValue, ValuesCondition, WireBody, WireCondition, WireValues,
};
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

/// Parses a raw (still percent-encoded) URL query string. A filter's value may begin with a
/// comparison (`>=5`, `%23cancelled`): see [`UrlValue::parse`].
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
        check_value(&value, &name)?;
        let value = UrlValue::parse(&value);
        match request.filters.iter_mut().find(|f| f.path == name) {
            Some(filter) => filter.values.push(value),
            None => {
                check_path(Code::InvalidParameter, &name)?;
                request.filters.push(UrlFilter {
                    path: name.into_owned(),
                    values: vec![value],
                });
                // Each new filter is a linear search above: stop long before that matters.
                CONDITIONS.check(Code::InvalidParameter, "The URL", request.filters.len(), "")?;
            }
        }
    }
    Totals::of_url(&request.filters).check(Code::InvalidParameter, "The URL")?;
    Ok(request)
}

fn apply_reserved(request: &mut ReadRequest, name: &str, value: &str) -> ApiResult<()> {
    match name {
        "page" => request.page = Some(parse_positive(name, value, Some(PAGE))?),
        // Larger page sizes are clamped by the planner.
        "pageSize" => request.page_size = Some(parse_positive(name, value, None)?),
        "order_by" => request.order_by = parse_order_by(value)?,
        "fields" => request.fields = Some(parse_name_list(name, value)?),
        "exclude" => request.exclude = parse_name_list(name, value)?,
        "format" => request.format = Some(parse_format(value)?),
        // Checked as a cursor where it is used (`changes::Cursor::start`).
        "changedSince" => request.changed_since = Some(value.to_string()),
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

fn parse_positive(name: &str, value: &str, limit: Option<Limit>) -> ApiResult<u64> {
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
    if let Some(limit) = limit {
        let found = usize::try_from(number).unwrap_or(usize::MAX);
        limit.check(Code::InvalidParameter, name, found, name)?;
    }
    Ok(number)
}

/// `a;>b;c<` → items with directions; `>` ascending, `<` descending, before or after the path.
pub fn parse_order_by(value: &str) -> ApiResult<Vec<OrderItem>> {
    let keys = value.split(';').count();
    ORDER_KEYS.check(Code::InvalidParameter, "order_by", keys, "order_by")?;
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
        check_path(Code::InvalidParameter, path)?;
        items.push(OrderItem {
            path: path.to_string(),
            direction: direction.unwrap_or(Direction::Ascending),
        });
    }
    Ok(items)
}

fn parse_name_list(parameter: &str, value: &str) -> ApiResult<Vec<String>> {
    let limit = if parameter == "fields" {
        FIELDS_ITEMS
    } else {
        EXCLUDE_ITEMS
    };
    limit.check(
        Code::InvalidParameter,
        parameter,
        value.split(',').count(),
        parameter,
    )?;
    let names: Vec<String> = value.split(',').map(|n| n.trim().to_string()).collect();
    if names.iter().any(String::is_empty) {
        return Err(ApiError::new(
            Code::InvalidParameter,
            format!("Parameter '{parameter}' has an empty name in '{value}'; list names separated by commas."),
        )
        .with_field(parameter));
    }
    for name in &names {
        check_path(Code::InvalidParameter, name)?;
    }
    Ok(names)
}

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
        let texts = |f: &UrlFilter| f.values.iter().map(|v| v.value.clone()).collect::<Vec<_>>();
        assert_eq!(texts(&r.filters[0]), vec!["a", "b"]);
        assert_eq!(r.filters[1].path, "stock_variant.barcode");
        assert_eq!(texts(&r.filters[1]), vec!["501@"]);
    }

    #[test]
    fn a_filter_value_may_begin_with_a_comparison() {
        let r =
            parse_query_string("n=>=5&n=<=6&n=>7&n=%3C8&n=%239&n==%2310&n=11&n=%3E%3D12&n=%23&n=>")
                .unwrap();
        let found: Vec<(Operator, &str)> = r.filters[0]
            .values
            .iter()
            .map(|v| (v.operator, v.value.as_str()))
            .collect();
        assert_eq!(
            found,
            vec![
                (Operator::GreaterOrEqual, "5"),
                (Operator::LessOrEqual, "6"),
                (Operator::Greater, "7"),
                (Operator::Less, "8"),
                (Operator::NotEqual, "9"),
                (Operator::Equal, "#10"),
                (Operator::Equal, "11"),
                (Operator::GreaterOrEqual, "12"),
                (Operator::NotEqual, ""),
                (Operator::Greater, ""),
            ]
        );
        // The value past the operator is what the limits measure.
        let long = format!("name=%23{}", "b".repeat(4096));
        assert!(parse_query_string(&long).is_ok());
    }

    /// Each value of the URL's filters, as (path, operator, value compared).
    fn url_values(query: &str) -> Vec<(String, Operator, String)> {
        parse_query_string(query)
            .unwrap()
            .filters
            .iter()
            .flat_map(|f| {
                f.values
                    .iter()
                    .map(|v| (f.path.clone(), v.operator, v.value.clone()))
            })
            .collect()
    }

    #[test]
    fn an_equals_sign_first_escapes_the_operator_after_it() {
        let value = |query: &str| {
            let found = url_values(query);
            assert_eq!(found.len(), 1, "{query}");
            let (_, operator, value) = found.into_iter().next().unwrap();
            (operator, value)
        };
        assert_eq!(value("ref==%231001"), (Operator::Equal, "#1001".into()));
        assert_eq!(value("ref==>5"), (Operator::Equal, ">5".into()));
        assert_eq!(value("ref==%3C%3D5"), (Operator::Equal, "<=5".into()));
        assert_eq!(value("ref===5"), (Operator::Equal, "=5".into()));
        assert_eq!(value("ref=="), (Operator::Equal, String::new()));
        // Only the first operator is taken: what follows it is the value, whatever it is.
        assert_eq!(value("ref=%3E%3E5"), (Operator::Greater, ">5".into()));
        assert_eq!(
            value("ref=%23%231001"),
            (Operator::NotEqual, "#1001".into())
        );
        assert_eq!(value("ref=%3C=5"), (Operator::LessOrEqual, "5".into()));
        // Percent-decoding comes first: an encoded `#` is the operator, a `+` is a space.
        assert_eq!(
            value("orderDate=%3C2026-12-05+10:00:00"),
            (Operator::Less, "2026-12-05 10:00:00".into())
        );
        // A value that merely contains an operator character is equality with all of it.
        assert_eq!(value("title=a%3Eb%23c"), (Operator::Equal, "a>b#c".into()));
    }

    #[test]
    fn repeated_filters_keep_each_values_comparison_in_order() {
        assert_eq!(
            url_values(
                "orderDate=>=2026-11-01&status=new&orderDate=<2026-12-01&status=%23cancelled&status=accepted&orderDate==2026-11-15"
            ),
            vec![
                (
                    "orderDate".into(),
                    Operator::GreaterOrEqual,
                    "2026-11-01".into()
                ),
                ("orderDate".into(), Operator::Less, "2026-12-01".into()),
                ("orderDate".into(), Operator::Equal, "2026-11-15".into()),
                ("status".into(), Operator::Equal, "new".into()),
                ("status".into(), Operator::NotEqual, "cancelled".into()),
                ("status".into(), Operator::Equal, "accepted".into()),
            ]
        );
        // Dotted paths take comparisons as any path does.
        assert_eq!(
            url_values("stock_variant.variant_product.title=%3E%3Db"),
            vec![(
                "stock_variant.variant_product.title".into(),
                Operator::GreaterOrEqual,
                "b".into()
            )]
        );
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
        let error = parse_query_string("page=99999999999").unwrap_err();
        assert!(
            error
                .detail
                .contains("page is 99999999999; the limit page allows at most"),
            "{}",
            error.detail
        );
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
