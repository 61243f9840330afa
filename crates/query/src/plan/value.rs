//! Typing filter values by their field: text folds and may carry `@` wildcards, numbers compare
//! numerically, booleans take the usual spellings, and a date against a timestamp means the
//! whole day. Every value that does not fit its field is `invalid_value` here.

use crate::request::{Operator, RawValue};
use crate::text::{Pattern, fold};
use brandhub_catalog::{Field, FieldType};
use brandhub_problem::{ApiError, ApiResult, Code};
use chrono::{NaiveDate, NaiveDateTime};

/// A typed value to compare a column with; text is already folded (or upper-cased for ids).
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    Text(String),
    Integer(i64),
    Number(f64),
    Boolean(bool),
}

/// An ordering comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
}

/// What one leaf condition asks of a field's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Test {
    /// The value is unset, null or `""`.
    Empty,
    /// The value equals one of these (one or more).
    OneOf(Vec<Operand>),
    /// The (text) value matches a wildcard pattern.
    Like(Pattern),
    /// The value compares so with the operand.
    Compare(Comparison, Operand),
    /// `low <= value < high` (a whole day of a timestamp).
    Within(Operand, Operand),
    /// No value can satisfy it (an integer equal to 2.5).
    Never,
}

impl Test {
    /// Whether an unset value satisfies the test (only `Empty` does).
    pub fn matches_unset(&self) -> bool {
        matches!(self, Test::Empty)
    }
}

/// The text form of a raw value, for the types that read text.
fn raw_text(value: &RawValue) -> String {
    match value {
        RawValue::Text(text) => text.clone(),
        RawValue::Number(number) => number.to_string(),
        RawValue::Bool(flag) => flag.to_string(),
    }
}

fn invalid(field: &Field, path: &str, value: &RawValue, expected: &str) -> ApiError {
    ApiError::new(
        Code::InvalidValue,
        format!(
            "'{}' is not a valid value for {path} ({}): expected {expected}.",
            raw_text(value),
            field.ty.describe()
        ),
    )
    .with_field(path)
}

/// Types a value for `operator` on `field`. `path` is only used in messages.
pub fn test_for(
    field: &Field,
    path: &str,
    operator: Operator,
    value: &RawValue,
) -> ApiResult<Test> {
    let element_type = match (&field.ty, &field.list) {
        (FieldType::List, Some(list)) => list.element,
        (ty, _) => *ty,
    };
    if let RawValue::Text(text) = value
        && text.is_empty()
    {
        return match operator {
            Operator::Equal | Operator::NotEqual => Ok(Test::Empty),
            _ => Err(ApiError::new(
                Code::InvalidValue,
                format!("{path}: an empty value can only be compared with = or #."),
            )
            .with_field(path)),
        };
    }
    let comparison = match operator {
        Operator::Equal | Operator::NotEqual => None,
        Operator::Less => Some(Comparison::Less),
        Operator::LessOrEqual => Some(Comparison::LessOrEqual),
        Operator::Greater => Some(Comparison::Greater),
        Operator::GreaterOrEqual => Some(Comparison::GreaterOrEqual),
    };
    if comparison.is_some() && matches!(field.ty, FieldType::Boolean | FieldType::List) {
        return Err(ApiError::new(
            Code::InvalidQuery,
            format!(
                "Operator {} does not apply to {path} ({}); use = or #.",
                operator.as_str(),
                field.ty.describe()
            ),
        )
        .with_field(path));
    }
    match element_type {
        FieldType::Text | FieldType::Id => {
            let is_id = element_type == FieldType::Id;
            let text = raw_text(value);
            if let Some(pattern) = Pattern::parse(&text, !is_id) {
                if comparison.is_some() {
                    return Err(ApiError::new(
                        Code::InvalidValue,
                        format!(
                            "{path}: the wildcard @ works with = and # only, not with {}.",
                            operator.as_str()
                        ),
                    )
                    .with_field(path));
                }
                return Ok(Test::Like(pattern));
            }
            let operand = Operand::Text(if is_id {
                text.to_ascii_uppercase()
            } else {
                fold(&text)
            });
            Ok(match comparison {
                None => Test::OneOf(vec![operand]),
                Some(c) => Test::Compare(c, operand),
            })
        }
        FieldType::Integer | FieldType::Number => {
            let number = match value {
                RawValue::Number(n) => n.as_f64(),
                RawValue::Text(t) => t.trim().parse::<f64>().ok(),
                RawValue::Bool(_) => None,
            }
            .filter(|n| n.is_finite())
            .ok_or_else(|| invalid(field, path, value, "a number"))?;
            Ok(numeric_test(
                element_type == FieldType::Integer,
                number,
                comparison,
            ))
        }
        FieldType::Boolean => {
            let flag = match value {
                RawValue::Bool(b) => Some(*b),
                RawValue::Number(n) => match n.as_f64() {
                    Some(0.0) => Some(false),
                    Some(1.0) => Some(true),
                    _ => None,
                },
                RawValue::Text(t) => match t.trim() {
                    "true" | "True" | "TRUE" | "1" => Some(true),
                    "false" | "False" | "FALSE" | "0" => Some(false),
                    _ => None,
                },
            }
            .ok_or_else(|| invalid(field, path, value, "true, false, True, False, 1 or 0"))?;
            Ok(Test::OneOf(vec![Operand::Boolean(flag)]))
        }
        FieldType::Timestamp | FieldType::PreciseTimestamp => {
            let precise = element_type == FieldType::PreciseTimestamp;
            let text = raw_text(value);
            if let Some(pattern) = Pattern::parse(&text, false) {
                if comparison.is_some() {
                    return Err(ApiError::new(
                        Code::InvalidValue,
                        format!(
                            "{path}: the wildcard @ works with = and # only, not with {}.",
                            operator.as_str()
                        ),
                    )
                    .with_field(path));
                }
                return Ok(Test::Like(pattern));
            }
            let expected = "a date YYYY-MM-DD or a timestamp YYYY-MM-DDTHH:MM:SS";
            match parse_moment(text.trim(), precise)
                .ok_or_else(|| invalid(field, path, value, expected))?
            {
                Moment::Day { start, end } => {
                    let (start, end) = (Operand::Text(start), Operand::Text(end));
                    Ok(match comparison {
                        None => Test::Within(start, end),
                        Some(Comparison::Less) => Test::Compare(Comparison::Less, start),
                        Some(Comparison::LessOrEqual) => Test::Compare(Comparison::Less, end),
                        Some(Comparison::Greater) => Test::Compare(Comparison::GreaterOrEqual, end),
                        Some(Comparison::GreaterOrEqual) => {
                            Test::Compare(Comparison::GreaterOrEqual, start)
                        }
                    })
                }
                Moment::Instant(stamp) => {
                    let operand = Operand::Text(stamp);
                    Ok(match comparison {
                        None => Test::OneOf(vec![operand]),
                        Some(c) => Test::Compare(c, operand),
                    })
                }
                Moment::SubSecond => Err(invalid(field, path, value, "a timestamp to the second")),
            }
        }
        FieldType::Object | FieldType::List => Err(ApiError::new(
            Code::InvalidParameter,
            format!("{path} cannot be compared with a value."),
        )
        .with_field(path)),
    }
}

/// The test an integer or number comparison becomes; fractions against integers are rounded
/// to the equivalent whole bound so that an index on the integer column still serves.
fn numeric_test(integer: bool, number: f64, comparison: Option<Comparison>) -> Test {
    const I64_RANGE: f64 = 9.2e18;
    if !integer || number.abs() >= I64_RANGE {
        let operand = Operand::Number(number);
        return match comparison {
            None => Test::OneOf(vec![operand]),
            Some(c) => Test::Compare(c, operand),
        };
    }
    let whole = number.fract() == 0.0;
    match comparison {
        None if whole => Test::OneOf(vec![Operand::Integer(number as i64)]),
        None => Test::Never,
        Some(Comparison::Less) => {
            Test::Compare(Comparison::Less, Operand::Integer(number.ceil() as i64))
        }
        Some(Comparison::LessOrEqual) => Test::Compare(
            Comparison::LessOrEqual,
            Operand::Integer(number.floor() as i64),
        ),
        Some(Comparison::Greater) => {
            Test::Compare(Comparison::Greater, Operand::Integer(number.floor() as i64))
        }
        Some(Comparison::GreaterOrEqual) => Test::Compare(
            Comparison::GreaterOrEqual,
            Operand::Integer(number.ceil() as i64),
        ),
    }
}

/// A filter value for a timestamp: a whole day (as the stored forms of its first instant and
/// of the next day's), or one instant in stored form.
enum Moment {
    Day {
        start: String,
        end: String,
    },
    Instant(String),
    /// Milliseconds given for a field stored to the second.
    SubSecond,
}

/// The all-zero date the contract uses for "no end date" in file details.
const ZERO_DAY: &str = "0000-00-00";

fn parse_moment(text: &str, precise: bool) -> Option<Moment> {
    let suffix = if precise { ".000Z" } else { "" };
    if text.len() == 10 {
        if text == ZERO_DAY {
            return Some(Moment::Day {
                start: format!("{ZERO_DAY}T00:00:00{suffix}"),
                end: format!("0000-00-01T00:00:00{suffix}"),
            });
        }
        let day = NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
        let next = day.succ_opt()?;
        return Some(Moment::Day {
            start: format_stamp(day.and_hms_opt(0, 0, 0)?, precise),
            end: format_stamp(next.and_hms_opt(0, 0, 0)?, precise),
        });
    }
    let trimmed = text.strip_suffix('Z').unwrap_or(text);
    if let Some(rest) = trimmed.strip_prefix(ZERO_DAY) {
        let rest = rest.replace(' ', "T");
        return ["T00:00:00", "T00:00:00.000"]
            .contains(&rest.as_str())
            .then(|| Moment::Instant(format!("{ZERO_DAY}T00:00:00{suffix}")));
    }
    for format in [
        "%Y-%m-%dT%H:%M:%S%.3f",
        "%Y-%m-%d %H:%M:%S%.3f",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%d %H:%M:%S",
    ] {
        if let Ok(instant) = NaiveDateTime::parse_from_str(trimmed, format) {
            if !precise && instant.and_utc().timestamp_subsec_millis() > 0 {
                return Some(Moment::SubSecond);
            }
            return Some(Moment::Instant(format_stamp(instant, precise)));
        }
    }
    None
}

/// The stored form of a timestamp: `YYYY-MM-DDTHH:MM:SS`, or with `.mmmZ` for precise ones.
pub fn format_stamp(instant: NaiveDateTime, precise: bool) -> String {
    if precise {
        instant.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
    } else {
        instant.format("%Y-%m-%dT%H:%M:%S").to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brandhub_catalog::catalog;

    fn field(resource: &str, path: &str) -> &'static Field {
        catalog()
            .resource(resource)
            .unwrap()
            .field_at(path)
            .unwrap()
    }

    fn text(value: &str) -> RawValue {
        RawValue::Text(value.to_string())
    }

    #[test]
    fn text_folds_and_recognises_wildcards() {
        let title = field("product", "title");
        assert_eq!(
            test_for(title, "title", Operator::Equal, &text("ÉCLAIR")).unwrap(),
            Test::OneOf(vec![Operand::Text("éclair".into())])
        );
        assert!(matches!(
            test_for(title, "title", Operator::Equal, &text("Cr@")).unwrap(),
            Test::Like(_)
        ));
        assert_eq!(
            test_for(title, "title", Operator::Less, &text("a@"))
                .unwrap_err()
                .code,
            Code::InvalidValue
        );
        assert_eq!(
            test_for(title, "title", Operator::NotEqual, &text("")).unwrap(),
            Test::Empty
        );
    }

    #[test]
    fn ids_are_upper_cased() {
        let fk = field("stock", "fk_variant");
        assert_eq!(
            test_for(fk, "fk_variant", Operator::Equal, &text("abc")).unwrap(),
            Test::OneOf(vec![Operand::Text("ABC".into())])
        );
    }

    #[test]
    fn numbers_compare_numerically() {
        let in_stock = field("stock", "inStock");
        assert_eq!(
            test_for(in_stock, "inStock", Operator::Equal, &text("5.0")).unwrap(),
            Test::OneOf(vec![Operand::Integer(5)])
        );
        assert_eq!(
            test_for(in_stock, "inStock", Operator::Equal, &text("5.5")).unwrap(),
            Test::Never
        );
        assert_eq!(
            test_for(in_stock, "inStock", Operator::Less, &text("5.5")).unwrap(),
            Test::Compare(Comparison::Less, Operand::Integer(6))
        );
        assert_eq!(
            test_for(in_stock, "inStock", Operator::Equal, &text("five"))
                .unwrap_err()
                .code,
            Code::InvalidValue
        );
        assert_eq!(
            test_for(in_stock, "inStock", Operator::Equal, &text("NaN"))
                .unwrap_err()
                .code,
            Code::InvalidValue
        );
        let rrp = field("variant", "rrp");
        assert_eq!(
            test_for(
                rrp,
                "rrp",
                Operator::Equal,
                &RawValue::Number(serde_json::Number::from_f64(9.5).unwrap())
            )
            .unwrap(),
            Test::OneOf(vec![Operand::Number(9.5)])
        );
    }

    #[test]
    fn booleans_take_the_usual_spellings() {
        let vatable = field("variant", "vatable");
        for (raw, expected) in [("true", true), ("False", false), ("1", true), ("0", false)] {
            assert_eq!(
                test_for(vatable, "vatable", Operator::Equal, &text(raw)).unwrap(),
                Test::OneOf(vec![Operand::Boolean(expected)])
            );
        }
        assert_eq!(
            test_for(vatable, "vatable", Operator::Equal, &text("yes"))
                .unwrap_err()
                .code,
            Code::InvalidValue
        );
        assert_eq!(
            test_for(vatable, "vatable", Operator::Less, &text("true"))
                .unwrap_err()
                .code,
            Code::InvalidQuery
        );
    }

    #[test]
    fn a_date_means_the_whole_day() {
        let last_update = field("stock", "lastUpdate");
        assert_eq!(
            test_for(
                last_update,
                "lastUpdate",
                Operator::Equal,
                &text("2026-02-28")
            )
            .unwrap(),
            Test::Within(
                Operand::Text("2026-02-28T00:00:00".into()),
                Operand::Text("2026-03-01T00:00:00".into())
            )
        );
        assert_eq!(
            test_for(
                last_update,
                "lastUpdate",
                Operator::Greater,
                &text("2026-02-28")
            )
            .unwrap(),
            Test::Compare(
                Comparison::GreaterOrEqual,
                Operand::Text("2026-03-01T00:00:00".into())
            )
        );
        assert_eq!(
            test_for(
                last_update,
                "lastUpdate",
                Operator::Equal,
                &text("2026-02-28 10:11:12")
            )
            .unwrap(),
            Test::OneOf(vec![Operand::Text("2026-02-28T10:11:12".into())])
        );
        for bad in ["2026-02-30", "yesterday", "2026-2-1", "0000-00-00T01:00:00"] {
            assert_eq!(
                test_for(last_update, "lastUpdate", Operator::Equal, &text(bad))
                    .unwrap_err()
                    .code,
                Code::InvalidValue,
                "{bad}"
            );
        }
        let start = field("file", "detail.startDate");
        assert_eq!(
            test_for(
                start,
                "detail.startDate",
                Operator::Equal,
                &text("2026-01-02")
            )
            .unwrap(),
            Test::Within(
                Operand::Text("2026-01-02T00:00:00.000Z".into()),
                Operand::Text("2026-01-03T00:00:00.000Z".into())
            )
        );
        assert_eq!(
            test_for(
                start,
                "detail.startDate",
                Operator::Equal,
                &text("2026-01-02T03:04:05.678Z")
            )
            .unwrap(),
            Test::OneOf(vec![Operand::Text("2026-01-02T03:04:05.678Z".into())])
        );
    }
}
