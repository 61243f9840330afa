//! Statements over sets of ids: which satisfy a filter, which a caller sees and may write,
//! related records and list fields of some owners.

use super::*;
use crate::plan::{Predicate, Selection};
use brandhub_catalog::{Field, Resource};
use sea_query::{Alias, Expr, ExprTrait, Order, Query, SelectStatement, Value};

/// The ids among `ids` of the records of `resource` that satisfy `predicate`: how known
/// records are checked against a rule (`crate::judge`), in one statement.
pub fn satisfying_ids(
    resource: &'static Resource,
    ids: &[String],
    predicate: &Predicate,
) -> SelectStatement {
    among_ids(resource, ids, predicate, Table::Aliased(ROOT))
}

/// The ids among `ids` of the records of `resource` that satisfy `seen`, each with 1 when it
/// also satisfies `writable` (else 0): what an update checks of the records it changes (the
/// caller's scope, then its write rule), in one statement instead of one per rule.
pub fn seen_and_writable_ids(
    resource: &'static Resource,
    ids: &[String],
    seen: &Predicate,
    writable: &Predicate,
) -> SelectStatement {
    let mut statement = among_ids(resource, ids, seen, Table::Aliased(ROOT));
    let flag: Expr = if writable.is_always() {
        Expr::val(1i64)
    } else {
        // Bound as 64-bit integers, so that both backends answer a BIGINT.
        Expr::case(predicate_expr(writable, Table::Aliased(ROOT), false), 1i64)
            .finally(0i64)
            .into()
    };
    statement.expr(flag);
    statement
}

/// The first of `ids` whose record satisfies `predicate`, if any: whether any of a few
/// known records (rows just written) is one a filter finds. Starts from those rows and looks
/// up each relation the predicate passes for each of them (`EXISTS`), so its cost follows
/// the rows given, not the records the predicate admits.
pub fn any_satisfying(
    resource: &'static Resource,
    ids: &[String],
    predicate: &Predicate,
) -> SelectStatement {
    let mut statement = among_ids(resource, ids, predicate, Table::Correlated(ROOT));
    statement.limit(1);
    statement
}

/// The ids among `ids` whose records satisfy `predicate`, its relations tested as `table`
/// says.
fn among_ids(
    resource: &'static Resource,
    ids: &[String],
    predicate: &Predicate,
    table: Table<'_>,
) -> SelectStatement {
    let mut statement = Query::select();
    statement
        .column((Alias::new(ROOT), Alias::new("id")))
        .from_as(Alias::new(resource.table), Alias::new(ROOT))
        .and_where(
            Expr::col((Alias::new(ROOT), Alias::new("id")))
                .is_in(ids.iter().map(|id| Value::from(id.to_ascii_uppercase()))),
        );
    if !predicate.is_always() {
        statement.and_where(predicate_expr(predicate, table, false));
    }
    statement
}

/// A predicate over a resource as the condition of a plain statement on its table (columns
/// unqualified), for code that selects records itself (file processing).
pub fn condition(predicate: &Predicate) -> Expr {
    predicate_expr(predicate, Table::Bare, false)
}

/// Pads a key list to the next power of two (repeating the last key), so that batched loads
/// of any size reuse a handful of prepared statements.
pub fn padded_keys(keys: &[String]) -> Vec<String> {
    let mut padded = keys.to_vec();
    if let Some(last) = keys.last() {
        padded.resize(keys.len().next_power_of_two(), last.clone());
    }
    padded
}

/// The statement loading the records of a relation node whose `key` column is one of `keys`
/// (the ids for to-one relations, the back reference for to-many ones), within `scope`.
/// With `probe_scope` (SQLite) the scope's semi-joins are only probed: the page's keys are
/// always the few rows to start from, never the caller's hundreds of thousands of visible ids.
pub fn related_statement(
    selection: &Selection,
    key: &'static Field,
    keys: &[String],
    scope: &Predicate,
    probe_scope: bool,
) -> SelectStatement {
    let link = (key.name != "id").then_some(key);
    let mut statement = Query::select();
    statement.from_as(Alias::new(selection.resource.table), Alias::new(ROOT));
    for field in node_columns(selection, link) {
        statement.column((Alias::new(ROOT), Alias::new(field.column.as_str())));
    }
    statement.and_where(
        Expr::col((Alias::new(ROOT), Alias::new(key.column.as_str())))
            .is_in(padded_keys(keys).into_iter().map(Value::from)),
    );
    if !scope.is_always() {
        let table = if probe_scope {
            Table::Probed(ROOT)
        } else {
            Table::Aliased(ROOT)
        };
        statement.and_where(predicate_expr(scope, table, false));
    }
    if link.is_some() {
        statement.order_by((Alias::new(ROOT), Alias::new("id")), Order::Asc);
    }
    statement
}

/// The statement loading the elements of a list field for some owners, in list order.
pub fn list_statement(field: &'static Field, owners: &[String]) -> Option<SelectStatement> {
    let list = field.list.as_ref()?;
    let mut statement = Query::select();
    statement
        .column(Alias::new(list.owner_column))
        .column(Alias::new(list.value_column))
        .from(Alias::new(list.table))
        .and_where(
            Expr::col(Alias::new(list.owner_column))
                .is_in(padded_keys(owners).into_iter().map(Value::from)),
        )
        .order_by(Alias::new(list.owner_column), Order::Asc)
        .order_by(Alias::new("position"), Order::Asc);
    Some(statement)
}
