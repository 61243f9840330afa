//! A lifecycle action read from JSON, before anything touches the database (an order PATCH, or one element of a dispatch array):
//! `{"status", "carrier", "trackingRef", "shipDate", "deliveryDate", "returnDate",
//! "order_orderItem": [{"id", "status", "shipQty", "returnQty", "detail": {"reason"}}]}`.
//! A name the action does not know is 400 `unknown_field`; every wrong value is gathered into
//! one 422.

use crate::write::{Expected, expected_got, must_be_not, validation_failed, whole_number};
use brandhub_catalog::Res;
use brandhub_catalog::lifecycle::ORDER_LIFECYCLE;
use brandhub_catalog::{Cell, Resource, catalog};
use brandhub_problem::{ApiError, ApiResult, FieldError, Words, words};
use chrono::NaiveDateTime;
use serde_json::{Map, Value};

/// What a caller asks of one line (each part only where the step uses it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineAsk {
    pub id: String,
    pub status: Option<String>,
    pub reason: Option<String>,
    pub ship_qty: Option<i64>,
    pub return_qty: Option<i64>,
}

/// A lifecycle action: the status asked for and what it needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ask {
    pub status: String,
    pub lines: Vec<LineAsk>,
    pub carrier: Option<String>,
    pub tracking_ref: Option<String>,
    pub ship_date: Option<String>,
    pub delivery_date: Option<String>,
    pub return_date: Option<String>,
}

/// Every name an action object may carry: the lifecycle's action fields, the record's id
/// (a many-record action) and its lines.
fn order_names() -> Vec<&'static str> {
    let lifecycle = &ORDER_LIFECYCLE;
    let mut names = vec!["id"];
    names.extend(lifecycle.action);
    names.push(lifecycle.lines);
    names
}

fn order() -> &'static Resource {
    catalog().get(Res::Order)
}

struct Reader {
    problems: Vec<FieldError>,
    index: Option<usize>,
}

impl Reader {
    fn problem(&mut self, field: &str, message: Words) {
        self.problems.push(FieldError {
            field: field.to_string(),
            message,
            index: self.index,
        });
    }

    fn text(
        &mut self,
        resource: &Resource,
        field: &str,
        path: &str,
        value: &Value,
    ) -> Option<String> {
        match value {
            Value::Null => None,
            Value::String(text) => {
                // Too long, or not one of the field's words (a status, a reason).
                let problem = resource.field_at(path).and_then(|f| {
                    f.length_problem(text)
                        .or_else(|| f.domain.and_then(|d| d.problem(text)))
                });
                if let Some(message) = problem {
                    self.problem(field, message);
                    return None;
                }
                Some(text.clone())
            }
            other => {
                self.problem(field, expected_got(&Expected::Text.words(), other));
                None
            }
        }
    }

    fn stamp(&mut self, field: &str, value: &Value) -> Option<String> {
        match value {
            Value::Null => None,
            Value::String(text) if text.is_empty() => None,
            Value::String(text) => {
                match NaiveDateTime::parse_from_str(
                    text.trim_end_matches('Z'),
                    "%Y-%m-%dT%H:%M:%S%.f",
                ) {
                    Ok(t) => Some(t.format("%Y-%m-%dT%H:%M:%S").to_string()),
                    Err(_) => {
                        self.problem(field, expected_got(&Expected::TimestampForm.words(), value));
                        None
                    }
                }
            }
            other => {
                self.problem(field, expected_got(&Expected::Timestamp.words(), other));
                None
            }
        }
    }

    /// A line's quantity (`path` of an order item), within its field's domain (docs/API.md, "Quantities and amounts").
    fn quantity(&mut self, item: &Resource, field: &str, path: &str, value: &Value) -> Option<i64> {
        let declared = item
            .field_at(path)
            .expect("the lifecycle's quantities are order item fields");
        let whole = match value {
            Value::Null => return None,
            Value::Number(n) => whole_number(n),
            _ => None,
        };
        let problem = match whole {
            Some(n) => declared.value_problem(&Cell::Integer(n)),
            None => Some(must_be_not(&declared.expected(), value)),
        };
        match problem {
            None => whole,
            Some(message) => {
                self.problem(field, message);
                None
            }
        }
    }
}

fn unknown(name: &str, known: &[&str], within: &str) -> ApiError {
    let mut error = ApiError::unknown_field(
        &format!("{within} has no field '{name}': the name"),
        name,
        known.iter().copied(),
    );
    error.field = Some(name.to_string());
    error
}

/// Reads one action object. `index` is its position in a many-order body (problems carry
/// it there); `default_status` is the status asked when the object names none (a dispatch
/// array's own step), or `None` when `status` is required.
pub fn read_ask(
    object: &Map<String, Value>,
    default_status: Option<&str>,
) -> ApiResult<(Option<String>, Ask)> {
    let order = order();
    let item = catalog().get(Res::OrderItem);
    let mut reader = Reader {
        problems: Vec::new(),
        index: None,
    };
    let mut ask = Ask::default();
    let mut id = None;
    for (name, value) in object {
        match name.as_str() {
            "id" => id = reader.text(order, "id", "id", value),
            "status" => {
                ask.status = reader
                    .text(order, "status", "status", value)
                    .unwrap_or_default()
            }
            "carrier" => ask.carrier = reader.text(order, "carrier", "carrier", value),
            "trackingRef" => {
                ask.tracking_ref = reader.text(order, "trackingRef", "trackingRef", value)
            }
            "shipDate" => ask.ship_date = reader.stamp("shipDate", value),
            "deliveryDate" => ask.delivery_date = reader.stamp("deliveryDate", value),
            "returnDate" => ask.return_date = reader.stamp("returnDate", value),
            "order_orderItem" => {
                let Value::Array(lines) = value else {
                    reader.problem(
                        "order_orderItem",
                        expected_got(
                            &words!("an array of lines", "eine Liste von Positionen"),
                            value,
                        ),
                    );
                    continue;
                };
                for (i, line) in lines.iter().enumerate() {
                    let Value::Object(line) = line else {
                        reader.problem(
                            "order_orderItem",
                            words!(
                                "line {i} must be an object, not {line}",
                                "Position {i} muss ein Objekt sein, nicht {line}"
                            ),
                        );
                        continue;
                    };
                    let mut asked = LineAsk::default();
                    for (name, value) in line {
                        let field = format!("order_orderItem.{name}");
                        match name.as_str() {
                            "id" => {
                                asked.id =
                                    reader.text(item, &field, "id", value).unwrap_or_default()
                            }
                            "status" => asked.status = reader.text(item, &field, "status", value),
                            "shipQty" => {
                                asked.ship_qty = reader.quantity(item, &field, "shipQty", value)
                            }
                            "returnQty" => {
                                asked.return_qty = reader.quantity(item, &field, "returnQty", value)
                            }
                            "detail" => match value {
                                Value::Object(detail) => {
                                    for (name, value) in detail {
                                        if name != "reason" {
                                            return Err(unknown(
                                                &format!("order_orderItem.detail.{name}"),
                                                &["order_orderItem.detail.reason"],
                                                "An order line action",
                                            ));
                                        }
                                        asked.reason = reader.text(
                                            item,
                                            "order_orderItem.detail.reason",
                                            "detail.reason",
                                            value,
                                        );
                                    }
                                }
                                other => reader.problem(
                                    "order_orderItem.detail",
                                    expected_got(&Expected::Object.words(), other),
                                ),
                            },
                            _ => {
                                let known: Vec<String> = ORDER_LIFECYCLE
                                    .line_action
                                    .iter()
                                    .map(|n| format!("order_orderItem.{n}"))
                                    .collect();
                                let known: Vec<&str> = known.iter().map(String::as_str).collect();
                                return Err(unknown(&field, &known, "An order line action"));
                            }
                        }
                    }
                    if asked.id.is_empty() {
                        reader.problem(
                            "order_orderItem.id",
                            words!(
                                "line {i} names no line id",
                                "Position {i} nennt keine Positionskennung"
                            ),
                        );
                    }
                    ask.lines.push(asked);
                }
            }
            _ => return Err(unknown(name, &order_names(), "An order action")),
        }
    }
    if ask.status.is_empty() {
        match default_status {
            Some(status) => ask.status = status.to_string(),
            None => reader.problem(
                "status",
                words!(
                    "is required: it names the lifecycle step",
                    "ist Pflicht: er nennt den Schritt im Ablauf"
                ),
            ),
        }
    }
    if !reader.problems.is_empty() {
        return Err(validation_failed(reader.problems));
    }
    Ok((id, ask))
}

#[cfg(test)]
mod tests {
    use super::*;
    use brandhub_problem::Code;

    fn object(text: &str) -> Map<String, Value> {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn an_action_reads_its_lines() {
        let (_, ask) = read_ask(
            &object(r#"{"status": "accepted", "order_orderItem": [{"id": "A", "status": "REJ", "detail": {"reason": "OTHER"}}]}"#),
            None,
        )
        .unwrap();
        assert_eq!(ask.status, "accepted");
        assert_eq!(ask.lines[0].reason.as_deref(), Some("OTHER"));
    }

    #[test]
    fn line_quantities_are_held_to_their_domains() {
        let (_, ask) = read_ask(
            &object(r#"{"status": "partDispatched", "order_orderItem": [{"id": "A", "shipQty": 2.0}, {"id": "B", "shipQty": 1000000000}]}"#),
            None,
        )
        .unwrap();
        assert_eq!(ask.lines[0].ship_qty, Some(2));
        assert_eq!(ask.lines[1].ship_qty, Some(1_000_000_000));
        for qty in [
            "-1",
            "1000000001",
            "9223372036854775807",
            "1e308",
            "0.5",
            "\"3\"",
        ] {
            let body = format!(
                r#"{{"status": "returned", "order_orderItem": [{{"id": "A", "returnQty": {qty}}}]}}"#
            );
            let error = read_ask(&object(&body), None).unwrap_err();
            assert_eq!(error.code, Code::ValidationFailed, "{qty}");
            assert_eq!(error.errors[0].field, "order_orderItem.returnQty");
            assert!(
                error.errors[0]
                    .message
                    .contains("a whole number from 0 to 1,000,000,000"),
                "{qty}: {}",
                error.errors[0].message
            );
        }
    }

    #[test]
    fn unknown_names_are_400_and_bad_values_422() {
        let error = read_ask(&object(r#"{"status": "x", "colour": 1}"#), None).unwrap_err();
        assert_eq!(error.code, Code::UnknownField);
        // A status that is none of the lifecycle's is a bad value, not a transition.
        let error = read_ask(&object(r#"{"status": "AAA"}"#), None).unwrap_err();
        assert_eq!(error.code, Code::ValidationFailed);
        assert_eq!(error.errors[0].field, "status");
        let error = read_ask(
            &object(r#"{"shipDate": "soon", "order_orderItem": [{"id": "A", "shipQty": -1}]}"#),
            None,
        )
        .unwrap_err();
        assert_eq!(error.code, Code::ValidationFailed);
        let fields: Vec<&str> = error.errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            vec!["order_orderItem.shipQty", "shipDate", "status"]
        );
    }
}
