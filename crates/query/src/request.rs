//! The typed form of a read request: what the client asked for, with names still unresolved.
//! Building it decides every syntax error; resolving names against the catalog is the planner's.

use serde::Deserialize;

/// Sort direction of one `order_by` item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Ascending,
    Descending,
}

/// One `order_by` item: a path and its direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderItem {
    pub path: String,
    pub direction: Direction,
}

/// One URL filter: a path and the values it accepts (repeating the parameter adds values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlFilter {
    pub path: String,
    pub values: Vec<String>,
}

/// A comparison operator of a complex-query condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    Equal,
    NotEqual,
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
}

impl Operator {
    /// Parses the wire form (`=`, `#`, `<`, `<=`, `>`, `>=`).
    pub fn parse(text: &str) -> Option<Operator> {
        Some(match text {
            "=" => Operator::Equal,
            "#" => Operator::NotEqual,
            "<" => Operator::Less,
            "<=" => Operator::LessOrEqual,
            ">" => Operator::Greater,
            ">=" => Operator::GreaterOrEqual,
            _ => return None,
        })
    }

    /// The wire form.
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Equal => "=",
            Operator::NotEqual => "#",
            Operator::Less => "<",
            Operator::LessOrEqual => "<=",
            Operator::Greater => ">",
            Operator::GreaterOrEqual => ">=",
        }
    }
}

/// How a condition joins the result of the conditions before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conjunction {
    And,
    Or,
    Except,
}

impl Conjunction {
    /// Parses the wire form (`&`, `|`, `#`).
    pub fn parse(text: &str) -> Option<Conjunction> {
        Some(match text {
            "&" => Conjunction::And,
            "|" => Conjunction::Or,
            "#" => Conjunction::Except,
            _ => return None,
        })
    }
}

/// A condition value as sent: text, a number or a boolean (null counts as empty text).
#[derive(Debug, Clone, PartialEq)]
pub enum RawValue {
    Text(String),
    Number(serde_json::Number),
    Bool(bool),
}

/// One condition of `query` or `queryselection`.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub field: String,
    pub operator: Operator,
    pub value: RawValue,
    /// `None` only for the first condition of a list.
    pub conjunction: Option<Conjunction>,
}

/// `querywitharray` / `queryselectionwitharray`: the field is (or is not) any of the values.
#[derive(Debug, Clone, PartialEq)]
pub struct ValuesCondition {
    pub field: String,
    pub values: Vec<RawValue>,
    /// `true` for operator `#`: none of the values.
    pub negated: bool,
}

/// The JSON body of a complex query, checked for shape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ComplexQuery {
    pub query: Vec<Condition>,
    pub query_with_array: Option<ValuesCondition>,
    pub selection: Vec<Condition>,
    pub selection_with_array: Option<ValuesCondition>,
}

/// What a list answers with (`format`, or the `Accept` header): the JSON envelope of one page,
/// or every matching record as a table (CONTRACT §13).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Csv,
    Xlsx,
}

impl Format {
    /// Every format, with its name in `format=`.
    pub const ALL: [(Format, &'static str); 3] = [
        (Format::Json, "json"),
        (Format::Csv, "csv"),
        (Format::Xlsx, "xlsx"),
    ];

    /// The format a `format=` value names (any case).
    pub fn named(name: &str) -> Option<Format> {
        Format::ALL
            .into_iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(name.trim()))
            .map(|(format, _)| format)
    }

    /// The name in `format=`.
    pub fn as_str(self) -> &'static str {
        Format::ALL
            .into_iter()
            .find(|(f, _)| *f == self)
            .map(|(_, name)| name)
            .expect("every format is listed")
    }
}

/// A whole read request: URL parameters plus an optional complex-query body.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadRequest {
    pub page: Option<u64>,
    pub page_size: Option<u64>,
    pub order_by: Vec<OrderItem>,
    pub fields: Option<Vec<String>>,
    pub exclude: Vec<String>,
    pub filters: Vec<UrlFilter>,
    pub body: Option<ComplexQuery>,
    /// `format=`, if given.
    pub format: Option<Format>,
}

impl ReadRequest {
    /// The same request asked of a related resource's records through `relation`, a to-one
    /// relation of theirs back to this request's resource: every path of filters, conditions
    /// and order gets `relation.` in front. (An export of products lists their variants this
    /// way: `code=X` becomes `variant_product.code=X`.) `fields` and `exclude` name what to
    /// show, which the caller decides anew.
    pub fn through(&self, relation: &str) -> ReadRequest {
        let prefixed = |path: &str| format!("{relation}.{path}");
        let conditions = |list: &[Condition]| -> Vec<Condition> {
            list.iter()
                .map(|c| Condition {
                    field: prefixed(&c.field),
                    ..c.clone()
                })
                .collect()
        };
        let values = |v: &Option<ValuesCondition>| {
            v.as_ref().map(|v| ValuesCondition {
                field: prefixed(&v.field),
                ..v.clone()
            })
        };
        ReadRequest {
            order_by: self
                .order_by
                .iter()
                .map(|item| OrderItem {
                    path: prefixed(&item.path),
                    direction: item.direction,
                })
                .collect(),
            fields: None,
            exclude: Vec::new(),
            filters: self
                .filters
                .iter()
                .map(|f| UrlFilter {
                    path: prefixed(&f.path),
                    values: f.values.clone(),
                })
                .collect(),
            body: self.body.as_ref().map(|body| ComplexQuery {
                query: conditions(&body.query),
                query_with_array: values(&body.query_with_array),
                selection: conditions(&body.selection),
                selection_with_array: values(&body.selection_with_array),
            }),
            ..self.clone()
        }
    }
}

/// The body exactly as JSON, before its rules are checked (serde rejects unknown keys).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WireBody {
    #[serde(default)]
    pub query: Option<Vec<WireCondition>>,
    #[serde(default)]
    pub queryselection: Option<Vec<WireCondition>>,
    #[serde(default)]
    pub querywitharray: Option<WireValues>,
    #[serde(default)]
    pub queryselectionwitharray: Option<WireValues>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WireCondition {
    pub field: String,
    pub operator: String,
    #[serde(default)]
    pub value: serde_json::Value,
    #[serde(default)]
    pub conjunction: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WireValues {
    pub field: String,
    pub values: Vec<serde_json::Value>,
    #[serde(default)]
    pub operator: Option<String>,
}
