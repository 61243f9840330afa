//! An export's statement: keyset chunks in the order asked.

use super::*;
use crate::plan::{Operand, ReadPlan};
use crate::request::Direction;
use sea_query::{Alias, Expr, ExprTrait, Query, SelectStatement, Value};

/// Where the previous chunk of an export ended: its last record's order-key values, as the
/// export statement returned them (folded text for text keys; `None` for unset), and its id.
#[derive(Debug, Clone, PartialEq)]
pub struct Keyset {
    pub keys: Vec<Option<Operand>>,
    pub id: String,
}

/// The condition "comes after `value` in this key's order": unset sorts as the smallest value
/// (first ascending, last descending), as [`sort_key`] orders.
fn after_key(expr: Expr, direction: Direction, value: &Option<Operand>) -> Expr {
    match (direction, value) {
        (Direction::Ascending, None) => expr.is_not_null(),
        (Direction::Ascending, Some(v)) => expr.gt(operand_value(v)),
        (Direction::Descending, None) => always(false),
        (Direction::Descending, Some(v)) => expr.clone().lt(operand_value(v)).or(expr.is_null()),
    }
}

/// The condition "sorts equal to `value`" (unset equals unset).
fn same_key(expr: Expr, value: &Option<Operand>) -> Expr {
    match value {
        None => expr.is_null(),
        Some(v) => expr.eq(operand_value(v)),
    }
}

/// One chunk of an export: at most `limit` records of the plan, in its order, after `after`
/// (keyset pagination: each chunk continues where the last ended, by the order's keys and the
/// id, never by an offset, so a whole export reads each record once). Unlike a page, which
/// finds its ids first and reads the selected columns for just those (an offset skips rows
/// unread), a chunk skips nothing: it reads the selected columns in the same walk of the index
/// that orders it, each row once (docs/decisions/0035-export-chunks-in-one-walk.md). The key
/// values follow the selected columns (as `k0`, `k1`, …) so the next chunk can start after the
/// last row. With `probe` (SQLite) semi-joins are only probed, so the order is walked.
pub fn export_statement(
    plan: &ReadPlan,
    after: Option<&Keyset>,
    limit: u64,
    probe: bool,
) -> SelectStatement {
    let resource = plan.resource;
    let table = if probe {
        Table::Probed(ROOT)
    } else {
        Table::Aliased(ROOT)
    };
    let mut inner = Query::select();
    inner.from_as(Alias::new(resource.table), Alias::new(ROOT));
    for field in node_columns(&plan.selection, None) {
        inner.column((Alias::new(ROOT), Alias::new(field.column.as_str())));
    }
    if !plan.scope.is_always() {
        inner.and_where(predicate_expr(&plan.scope, table, false));
    }
    if !plan.filter.is_always() {
        inner.and_where(predicate_expr(&plan.filter, table, false));
    }
    let mut joins = Joins {
        aliases: Vec::new(),
    };
    let keys: Vec<(String, SortKey, Direction)> = plan
        .order
        .iter()
        .enumerate()
        .map(|(i, key)| {
            (
                format!("k{i}"),
                sort_key(&mut inner, &mut joins, key),
                key.direction,
            )
        })
        .collect();
    for (name, sort, _) in &keys {
        inner.expr_as(sort.expr.clone(), Alias::new(name.as_str()));
    }
    let tie = plan.tie_break();
    let id = Expr::col((Alias::new(ROOT), Alias::new("id")));
    if let Some(after) = after {
        let id_after = match tie {
            Direction::Ascending => id.clone().gt(after.id.clone()),
            Direction::Descending => id.clone().lt(after.id.clone()),
        };
        let uniform = keys
            .iter()
            .all(|(_, sort, direction)| sort.nulls.is_none() && *direction == tie);
        let condition = if uniform && !keys.is_empty() {
            // One row comparison, which an index on (keys…, id) serves as a range.
            let mut left: Vec<Expr> = keys.iter().map(|(_, sort, _)| sort.expr.clone()).collect();
            left.push(id.clone());
            let mut right: Vec<Expr> = after
                .keys
                .iter()
                .map(|v| {
                    v.as_ref().map_or(Expr::value(Value::String(None)), |v| {
                        Expr::value(operand_value(v))
                    })
                })
                .collect();
            right.push(Expr::value(after.id.clone()));
            match tie {
                Direction::Ascending => Expr::tuple(left).gt(Expr::tuple(right)),
                Direction::Descending => Expr::tuple(left).lt(Expr::tuple(right)),
            }
        } else {
            // After on the first key, or equal on it and after on the next, …, or equal on
            // every key and after by id.
            let mut alternatives = Vec::new();
            let mut equal_so_far = Vec::new();
            for ((_, sort, direction), value) in keys.iter().zip(&after.keys) {
                let mut alternative = equal_so_far.clone();
                alternative.push(after_key(sort.expr.clone(), *direction, value));
                alternatives.push(all(alternative));
                equal_so_far.push(same_key(sort.expr.clone(), value));
            }
            equal_so_far.push(id_after);
            alternatives.push(all(equal_so_far));
            any(alternatives)
        };
        inner.and_where(condition);
    }
    for (_, sort, _) in &keys {
        apply_order(
            &mut inner,
            sort.expr.clone(),
            sort.order.clone(),
            sort.nulls,
        );
    }
    inner.order_by_expr(id, order(tie));
    inner.limit(limit);
    inner
}
