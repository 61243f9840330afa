//! The URL query string: the reserved parameters (paging, order, the fields shown, the
//! format), and every other parameter as a filter whose values may begin with a comparison.

use super::{RESERVED_PARAMETERS, Totals, check_path, check_value};
use crate::limits::{CONDITIONS, EXCLUDE_ITEMS, FIELDS_ITEMS, Limit, ORDER_KEYS, PAGE};
use crate::request::{Direction, Format, OrderItem, ReadRequest, UrlFilter, UrlValue};
use brandhub_problem::{ApiError, ApiResult, Code};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Operator;

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
}
