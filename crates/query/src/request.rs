//! The typed form of a read request: what the client asked for, with names still unresolved.
//! Building it decides every syntax error; resolving names against the catalog is the planner's.

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use std::fmt;

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

/// One URL filter: a path and its values (repeating the parameter adds values). Of the
/// values, those compared for equality are "any of"; each other comparison narrows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlFilter {
    pub path: String,
    pub values: Vec<UrlValue>,
}

/// One value of a URL filter: the comparison its first characters name (`>=`, `<=`, `>`,
/// `<`, `#`, or `=`; equality when none) and the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlValue {
    pub operator: Operator,
    pub value: String,
}

impl UrlValue {
    /// Splits a decoded URL value into its comparison and the value compared: `>=5` is
    /// `>=` and `5`, `=#1001` is equality with `#1001`, `abc` is equality with `abc`.
    pub fn parse(text: &str) -> UrlValue {
        // Two-character operators first, so that `>=` is not read as `>` and `=…`.
        for (prefix, operator) in [
            (">=", Operator::GreaterOrEqual),
            ("<=", Operator::LessOrEqual),
            (">", Operator::Greater),
            ("<", Operator::Less),
            ("#", Operator::NotEqual),
            ("=", Operator::Equal),
        ] {
            if let Some(rest) = text.strip_prefix(prefix) {
                return UrlValue {
                    operator,
                    value: rest.to_string(),
                };
            }
        }
        UrlValue {
            operator: Operator::Equal,
            value: text.to_string(),
        }
    }
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
/// or every matching record as a table (docs/API.md, "Exports: CSV and XLSX").
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
    /// `changedSince=`, if given: `0` or a cursor (docs/API.md, "Sync by cursor").
    pub changed_since: Option<String>,
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

/// The body exactly as JSON, before its rules are checked (serde rejects unknown keys). The
/// body and each of its conditions must be JSON objects ([`Object`]).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WireBody {
    #[serde(default, deserialize_with = "objects")]
    pub query: Option<Vec<WireCondition>>,
    #[serde(default, deserialize_with = "objects")]
    pub queryselection: Option<Vec<WireCondition>>,
    #[serde(default, deserialize_with = "object")]
    pub querywitharray: Option<WireValues>,
    #[serde(default, deserialize_with = "object")]
    pub queryselectionwitharray: Option<WireValues>,
}

/// A value that must be a JSON object. serde's derived structs also accept an array of their
/// fields in order (`[]` or `[null, null]` would pass for a body with every key optional);
/// this only accepts a map.
#[derive(Debug)]
pub(crate) struct Object<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Visit<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        deserializer
            .deserialize_map(Visit(std::marker::PhantomData))
            .map(Object)
    }
}

/// An optional list whose elements must be JSON objects.
fn objects<'de, D, T>(deserializer: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    let list: Option<Vec<Object<T>>> = Deserialize::deserialize(deserializer)?;
    Ok(list.map(|l| l.into_iter().map(|o| o.0).collect()))
}

/// An optional value that must be a JSON object.
fn object<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    let value: Option<Object<T>> = Deserialize::deserialize(deserializer)?;
    Ok(value.map(|o| o.0))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WireCondition {
    pub field: String,
    pub operator: String,
    #[serde(default)]
    pub value: WireScalar,
    #[serde(default)]
    pub conjunction: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WireValues {
    pub field: String,
    pub values: Vec<WireScalar>,
    #[serde(default)]
    pub operator: Option<String>,
}

/// A condition value as JSON may send it: a scalar or null. An array or an object is refused
/// where it starts, without reading into it, so no nesting of a body is ever walked.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) enum WireScalar {
    #[default]
    Null,
    Text(String),
    Number(serde_json::Number),
    Bool(bool),
}

impl From<WireScalar> for RawValue {
    fn from(value: WireScalar) -> RawValue {
        match value {
            WireScalar::Null => RawValue::Text(String::new()),
            WireScalar::Text(text) => RawValue::Text(text),
            WireScalar::Number(number) => RawValue::Number(number),
            WireScalar::Bool(flag) => RawValue::Bool(flag),
        }
    }
}

impl<'de> Deserialize<'de> for WireScalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<WireScalar, D::Error> {
        struct Scalar;

        impl<'de> Visitor<'de> for Scalar {
            type Value = WireScalar;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value that is a string, a number, a boolean or null")
            }

            fn visit_unit<E: de::Error>(self) -> Result<WireScalar, E> {
                Ok(WireScalar::Null)
            }

            fn visit_none<E: de::Error>(self) -> Result<WireScalar, E> {
                Ok(WireScalar::Null)
            }

            fn visit_bool<E: de::Error>(self, flag: bool) -> Result<WireScalar, E> {
                Ok(WireScalar::Bool(flag))
            }

            fn visit_i64<E: de::Error>(self, n: i64) -> Result<WireScalar, E> {
                Ok(WireScalar::Number(n.into()))
            }

            fn visit_u64<E: de::Error>(self, n: u64) -> Result<WireScalar, E> {
                Ok(WireScalar::Number(n.into()))
            }

            fn visit_f64<E: de::Error>(self, n: f64) -> Result<WireScalar, E> {
                serde_json::Number::from_f64(n)
                    .map(WireScalar::Number)
                    .ok_or_else(|| E::custom("a number must be finite"))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<WireScalar, E> {
                Ok(WireScalar::Text(text.to_string()))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<WireScalar, E> {
                Ok(WireScalar::Text(text))
            }
        }

        deserializer.deserialize_any(Scalar)
    }
}
