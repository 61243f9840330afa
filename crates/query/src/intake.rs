//! An order intake read from JSON (docs/API.md, "Orders: intake, lifecycle and stock"), before anything touches the database: the
//! order's fields (those the catalog lets an intake set) and its lines (the lifecycle's line
//! fields, plus `barcode` naming a variant). Unknown names and bodies that are not an object
//! are 400; every other problem is kept for the one 422 the store answers once it has also
//! checked what needs the database.

use crate::plan::Viewer;
use crate::write::{Expected, WriteMode, WriteValues, expected_got, parse_fields, parse_object};
use brandhub_catalog::{Resource, catalog};
use brandhub_problem::{ApiError, ApiResult, Code, FieldError, Words, words};
use serde_json::Value;

/// The most lines one order may have.
pub const MAX_LINES: usize = 1_000;

/// One line of an intake, parsed.
#[derive(Debug, Clone)]
pub struct LineIntake {
    pub values: WriteValues,
    /// The variant named by barcode (instead of `fk_variant`).
    pub barcode: Option<String>,
    /// The variant named by the host's SKU in the brand store's store (instead of
    /// `fk_variant` or `barcode`); the line keeps it.
    pub host_sku: Option<String>,
}

/// The names a line may name its variant by: exactly one of them.
pub const VARIANT_NAMES: [&str; 3] = ["fk_variant", "barcode", "hostSku"];

/// An order intake, parsed and checked against the catalog (no database yet).
#[derive(Debug, Clone)]
pub struct Intake {
    pub order: WriteValues,
    pub lines: Vec<LineIntake>,
}

fn problem(
    field: impl Into<String>,
    message: impl Into<Words>,
    index: Option<usize>,
) -> FieldError {
    FieldError {
        field: field.into(),
        message: message.into(),
        index,
    }
}

/// Parses an intake body: the order's fields (those the catalog lets an intake set) and its
/// lines in `order_orderItem` (the lifecycle's line fields, plus `barcode` or `hostSku`:
/// exactly one of [`VARIANT_NAMES`] names the line's variant). Unknown names
/// and bodies that are not an object are 400; everything else is left as problems.
pub fn parse_intake(order: &'static Resource, body: &[u8], viewer: &Viewer) -> ApiResult<Intake> {
    let lifecycle = order
        .lifecycle
        .expect("intakes are of resources that move through a lifecycle");
    let item = order
        .relation(lifecycle.lines)
        .map(|relation| catalog().target(relation))
        .expect("the catalog checks that a lifecycle names its lines");
    let value: Value = serde_json::from_slice(body).map_err(|error| {
        ApiError::new(
            Code::InvalidValue,
            format!("The body must be a JSON object of an order with its order_orderItem lines: {error}."),
        )
    })?;
    let Value::Object(mut object) = value else {
        return Err(ApiError::new(
            Code::InvalidValue,
            "The body must be one JSON object: an order with its order_orderItem lines (one order per request).",
        ));
    };
    let lines_value = object.remove("order_orderItem");
    let mut parsed = parse_object(order, WriteMode::Create, &object, viewer)?;
    let mut lines = Vec::new();
    match lines_value {
        Some(Value::Array(items)) if !items.is_empty() && items.len() <= MAX_LINES => {
            for (index, line) in items.into_iter().enumerate() {
                let Value::Object(mut line) = line else {
                    parsed.problems.push(problem(
                        "order_orderItem",
                        words!(
                            "each line must be a JSON object",
                            "jede Position muss ein JSON-Objekt sein"
                        ),
                        Some(index),
                    ));
                    continue;
                };
                let mut named_by = |name: &str| match line.remove(name) {
                    None | Some(Value::Null) => None,
                    Some(Value::String(text)) => Some(text),
                    Some(other) => {
                        parsed.problems.push(problem(
                            format!("order_orderItem.{name}"),
                            expected_got(&Expected::Text.words(), &other),
                            Some(index),
                        ));
                        None
                    }
                };
                let barcode = named_by("barcode");
                let host_sku = named_by("hostSku");
                let given: Vec<&str> = VARIANT_NAMES
                    .into_iter()
                    .filter(|name| match *name {
                        "barcode" => barcode.is_some(),
                        "hostSku" => host_sku.is_some(),
                        other => line.get(other).is_some_and(|v| !v.is_null()),
                    })
                    .collect();
                if given.len() > 1 {
                    parsed.problems.push(problem(
                        "order_orderItem",
                        Words::new(
                            format!(
                                "names its variant by {}: give exactly one of {}",
                                given.join(" and "),
                                VARIANT_NAMES.join(", ")
                            ),
                            format!(
                                "nennt seine Variante durch {}: genau eines von {} angeben",
                                given.join(" und "),
                                VARIANT_NAMES.join(", ")
                            ),
                        ),
                        Some(index),
                    ));
                }
                let mut values = parse_fields(
                    item,
                    WriteMode::Create,
                    lifecycle.line_intake,
                    lifecycle.line_required,
                    &line,
                    viewer,
                )
                .map_err(|mut error| {
                    error.detail = error
                        .detail
                        .led_by(words!("Line {index}: ", "Position {index}: "));
                    error.field = error.field.map(|f| format!("order_orderItem.{f}"));
                    error
                })?;
                for p in &mut values.problems {
                    p.field = format!("order_orderItem.{}", p.field);
                    p.index = Some(index);
                }
                lines.push(LineIntake {
                    values,
                    barcode,
                    host_sku,
                });
            }
        }
        Some(_) => parsed.problems.push(problem(
            "order_orderItem",
            words!(
                "must be an array of 1 to {MAX_LINES} lines",
                "muss eine Liste von 1 bis {MAX_LINES} Positionen sein"
            ),
            None,
        )),
        None => parsed.problems.push(problem(
            "order_orderItem",
            words!(
                "is required: an order has at least one line",
                "ist Pflicht: eine Bestellung hat mindestens eine Position"
            ),
            None,
        )),
    }
    let ship_given = parsed
        .cells
        .iter()
        .any(|(f, c)| f.path.starts_with("shipAddress.") && !c.is_unset());
    if !ship_given && !parsed.has_problem("shipAddress") {
        parsed.problems.push(problem(
            "shipAddress",
            brandhub_problem::required_message(),
            None,
        ));
    }
    Ok(Intake {
        order: parsed,
        lines,
    })
}
