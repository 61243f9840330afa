//! The record filter: URL filters and complex-query conditions become one [`Predicate`] tree,
//! evaluated in the contract's order (step 1 `query`, step 2 `queryselection`, step 3 URL
//! filters), each step narrowing the one before. Conditions chain strictly left to right; a
//! URL filter's values are "any of", narrowed by those that begin with a comparison.

use super::Viewer;
use super::path::{FieldPath, PathUse, resolve};
use super::value::{Operand, Test, test_for};
use crate::request::{
    ComplexQuery, Condition, Conjunction, Operator, RawValue, UrlFilter, UrlValue, ValuesCondition,
};
use brandhub_catalog::Resource;
use brandhub_problem::{ApiResult, Code};

/// One comparison of the value at a path.
#[derive(Debug, Clone)]
pub struct Leaf {
    pub path: FieldPath,
    pub test: Test,
}

/// A boolean combination of leaves. `All([])` is true, `Any([])` is false.
#[derive(Debug, Clone)]
pub enum Predicate {
    All(Vec<Predicate>),
    Any(Vec<Predicate>),
    Not(Box<Predicate>),
    Leaf(Box<Leaf>),
}

impl Predicate {
    /// The predicate every record satisfies.
    pub fn always() -> Predicate {
        Predicate::All(Vec::new())
    }

    /// Whether it admits only records of a few given ids (an `id` equality among its
    /// top-level conditions), as a by-id read or a write's answer asks: such a filter finds
    /// its records by the primary key, so how to find them needs no counts of the table or
    /// the scope, which every write of the table would make stale.
    pub fn pins_ids(&self) -> bool {
        self.pinned_ids().is_some()
    }

    /// The most records a filter that [pins ids](Self::pins_ids) can match: the number of ids
    /// it names (the fewest, where several conditions pin ids). A page of a by-id read that
    /// holds that many has found them all, and needs no count.
    pub fn pinned_ids(&self) -> Option<usize> {
        match self {
            Predicate::All(items) => items.iter().filter_map(Predicate::pinned_ids).min(),
            Predicate::Leaf(leaf) => match &leaf.test {
                Test::OneOf(values)
                    if leaf.path.hops.is_empty() && leaf.path.field.path == "id" =>
                {
                    Some(values.len())
                }
                _ => None,
            },
            Predicate::Any(_) | Predicate::Not(_) => None,
        }
    }

    /// The predicate no record satisfies.
    pub fn never() -> Predicate {
        Predicate::Any(Vec::new())
    }

    /// Whether this is trivially true.
    pub fn is_always(&self) -> bool {
        matches!(self, Predicate::All(items) if items.is_empty())
    }

    /// `self AND other`, flattening nested conjunctions.
    pub fn and(self, other: Predicate) -> Predicate {
        match (self, other) {
            (a, b) if b.is_always() => a,
            (a, b) if a.is_always() => b,
            (Predicate::All(mut a), Predicate::All(b)) => {
                a.extend(b);
                Predicate::All(a)
            }
            (Predicate::All(mut a), b) => {
                a.push(b);
                Predicate::All(a)
            }
            (a, b) => Predicate::All(vec![a, b]),
        }
    }

    /// `self OR other`, flattening nested disjunctions.
    pub fn or(self, other: Predicate) -> Predicate {
        match (self, other) {
            (Predicate::Any(mut a), Predicate::Any(b)) => {
                a.extend(b);
                Predicate::Any(a)
            }
            (Predicate::Any(mut a), b) => {
                a.push(b);
                Predicate::Any(a)
            }
            (a, b) => Predicate::Any(vec![a, b]),
        }
    }

    /// `NOT self`.
    pub fn negate(self) -> Predicate {
        match self {
            Predicate::Not(inner) => *inner,
            other => Predicate::Not(Box::new(other)),
        }
    }

    /// Visits every leaf.
    pub fn leaves(&self) -> Vec<&Leaf> {
        match self {
            Predicate::All(items) | Predicate::Any(items) => {
                items.iter().flat_map(Predicate::leaves).collect()
            }
            Predicate::Not(inner) => inner.leaves(),
            Predicate::Leaf(leaf) => vec![leaf],
        }
    }
}

fn leaf(path: FieldPath, test: Test) -> Predicate {
    Predicate::Leaf(Box::new(Leaf { path, test }))
}

/// "The value at `path` is any of `values`": equal values gather into one `OneOf` leaf
/// (an SQL `IN` list); patterns and empties are leaves of their own, joined by OR.
fn any_of(
    resource: &'static Resource,
    path: &str,
    values: &[RawValue],
    viewer: &Viewer,
) -> ApiResult<Predicate> {
    let resolved = resolve(resource, path, viewer, PathUse::Filter)?;
    let mut equal: Vec<Operand> = Vec::new();
    let mut others: Vec<Predicate> = Vec::new();
    for value in values {
        match test_for(resolved.field, path, Operator::Equal, value)? {
            Test::OneOf(operands) => equal.extend(operands),
            Test::Never => {}
            test => others.push(leaf(resolved.clone(), test)),
        }
    }
    if !equal.is_empty() {
        equal.dedup();
        others.insert(0, leaf(resolved, Test::OneOf(equal)));
    }
    Ok(match others.len() {
        1 => others.pop().expect("one element"),
        _ => Predicate::Any(others),
    })
}

/// "The value at `path` compares so with `value`" (`#`: does not equal it).
fn compare(
    resource: &'static Resource,
    path: &str,
    operator: Operator,
    value: &RawValue,
    viewer: &Viewer,
) -> ApiResult<Predicate> {
    let resolved = resolve(resource, path, viewer, PathUse::Filter)?;
    let (operator, negated) = match operator {
        Operator::NotEqual => (Operator::Equal, true),
        other => (other, false),
    };
    let test = test_for(resolved.field, path, operator, value)?;
    let predicate = leaf(resolved, test);
    Ok(if negated {
        predicate.negate()
    } else {
        predicate
    })
}

fn condition(resource: &'static Resource, c: &Condition, viewer: &Viewer) -> ApiResult<Predicate> {
    compare(resource, &c.field, c.operator, &c.value, viewer)
}

/// One URL filter: its values compared for equality are "any of"; each value with another
/// comparison (`>=`, `<`, `#`, …) narrows them. A comparison the field's type does not take
/// is a value that does not fit it (`invalid_value`), as the URL has no operators of its own.
fn url_filter(
    resource: &'static Resource,
    filter: &UrlFilter,
    viewer: &Viewer,
) -> ApiResult<Predicate> {
    let (equal, compared): (Vec<&UrlValue>, Vec<&UrlValue>) = filter
        .values
        .iter()
        .partition(|v| v.operator == Operator::Equal);
    let mut predicate = Predicate::always();
    if !equal.is_empty() {
        let values: Vec<RawValue> = equal
            .iter()
            .map(|v| RawValue::Text(v.value.clone()))
            .collect();
        predicate = any_of(resource, &filter.path, &values, viewer)?;
    }
    for value in compared {
        let text = RawValue::Text(value.value.clone());
        let narrowed = compare(resource, &filter.path, value.operator, &text, viewer).map_err(
            |mut error| {
                if error.code == Code::InvalidQuery {
                    error.code = Code::InvalidValue;
                }
                error
            },
        )?;
        predicate = predicate.and(narrowed);
    }
    Ok(predicate)
}

/// A condition list, applied strictly left to right: `a | b & c` is `(a OR b) AND c`.
fn chain(
    resource: &'static Resource,
    conditions: &[Condition],
    viewer: &Viewer,
) -> ApiResult<Option<Predicate>> {
    let mut result: Option<Predicate> = None;
    for c in conditions {
        let next = condition(resource, c, viewer)?;
        result = Some(match (result, c.conjunction) {
            (None, _) => next,
            (Some(so_far), Some(Conjunction::Or)) => so_far.or(next),
            (Some(so_far), Some(Conjunction::Except)) => so_far.and(next.negate()),
            (Some(so_far), Some(Conjunction::And) | None) => so_far.and(next),
        });
    }
    Ok(result)
}

fn values_condition(
    resource: &'static Resource,
    v: &ValuesCondition,
    viewer: &Viewer,
) -> ApiResult<Predicate> {
    let predicate = any_of(resource, &v.field, &v.values, viewer)?;
    Ok(if v.negated {
        predicate.negate()
    } else {
        predicate
    })
}

/// The whole record filter of a request (without scope, which the planner adds).
pub fn record_filter(
    resource: &'static Resource,
    url_filters: &[UrlFilter],
    body: Option<&ComplexQuery>,
    viewer: &Viewer,
) -> ApiResult<Predicate> {
    let mut filter = Predicate::always();
    if let Some(body) = body {
        // Step 1: query or querywitharray (absent: every record).
        if let Some(step1) = chain(resource, &body.query, viewer)? {
            filter = filter.and(step1);
        }
        if let Some(values) = &body.query_with_array {
            filter = filter.and(values_condition(resource, values, viewer)?);
        }
        // Step 2: queryselection and queryselectionwitharray narrow step 1.
        if let Some(step2) = chain(resource, &body.selection, viewer)? {
            filter = filter.and(step2);
        }
        if let Some(values) = &body.selection_with_array {
            filter = filter.and(values_condition(resource, values, viewer)?);
        }
    }
    // Step 3: URL filters narrow step 2; a repeated filter means any of its plain values,
    // narrowed by each of its comparisons.
    for each in url_filters {
        filter = filter.and(url_filter(resource, each, viewer)?);
    }
    Ok(filter)
}
