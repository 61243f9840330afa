//! Filters as SQL: semi-joins through relations, null-safe negation at the leaves.

use super::*;
use crate::plan::path::Hop;
use crate::plan::{Comparison, Leaf, Predicate, Test};
use crate::text::{Pattern, prefix_upper_bound};
use brandhub_catalog::{Field, FieldType, RelationKind};
use sea_query::{Alias, Expr, ExprTrait, LikeExpr, Query};

/// `SELECT id FROM table` of the rows holding any of `keys`, each key its columns' values
/// (all equal): many unique keys looked up in one statement. Keys that share every value but
/// their last column's become one `… AND last IN (…)`, which the key's unique index serves
/// in one range of lookups: ORed key by key, SQLite scanned the whole table for 1,000 host
/// SKUs of one store (150 s for 5 million offers). The groups are ORed as a balanced tree (a
/// flat `a OR b OR …` of 1,000 terms nests deeper than SQLite parses).
pub fn ids_with_any_key<'a>(
    table: &str,
    keys: impl IntoIterator<Item = Vec<(&'a str, &'a str)>>,
) -> sea_query::SelectStatement {
    // (the other columns' values, the last column) → the last column's values.
    type Group<'a> = (Vec<(&'a str, &'a str)>, &'a str);
    let mut groups: Vec<(Group<'a>, Vec<&'a str>)> = Vec::new();
    let mut at: std::collections::HashMap<Group<'a>, usize> = std::collections::HashMap::new();
    for mut key in keys {
        let Some((last, value)) = key.pop() else {
            continue;
        };
        let group = (key, last);
        match at.get(&group) {
            Some(&index) => groups[index].1.push(value),
            None => {
                at.insert(group.clone(), groups.len());
                groups.push((group, vec![value]));
            }
        }
    }
    let conditions = groups
        .into_iter()
        .map(|((others, last), values)| {
            let mut parts: Vec<Expr> = others
                .into_iter()
                .map(|(column, value)| Expr::col(Alias::new(column)).eq(value))
                .collect();
            parts.push(match values.as_slice() {
                [one] => Expr::col(Alias::new(last)).eq(*one),
                _ => Expr::col(Alias::new(last)).is_in(values),
            });
            all(parts)
        })
        .collect();
    sea_query::Query::select()
        .column(Alias::new("id"))
        .from(Alias::new(table))
        .and_where(any(conditions))
        .to_owned()
}

/// A predicate as an SQL condition; `negated` pushes NOT down to the leaves.
pub(crate) fn predicate_expr(predicate: &Predicate, table: Table<'_>, negated: bool) -> Expr {
    match predicate {
        Predicate::All(items) => {
            let parts = items
                .iter()
                .map(|p| predicate_expr(p, table, negated))
                .collect();
            if negated { any(parts) } else { all(parts) }
        }
        Predicate::Any(items) => {
            let parts = items
                .iter()
                .map(|p| predicate_expr(p, table, negated))
                .collect();
            if negated { all(parts) } else { any(parts) }
        }
        Predicate::Not(inner) => predicate_expr(inner, table, !negated),
        Predicate::Leaf(leaf) => leaf_expr(leaf, table, negated),
    }
}

fn leaf_expr(leaf: &Leaf, table: Table<'_>, negated: bool) -> Expr {
    hop_expr(
        &leaf.path.hops,
        &leaf.path.hop_scopes,
        leaf.path.field,
        &leaf.test,
        table,
        negated,
    )
}

/// Whether a path whose first entity is missing still satisfies the test: only `Empty`
/// through to-one relations (a missing record has every field unset).
fn unset_satisfies(hops: &[Hop], test: &Test) -> bool {
    test.matches_unset() && hops.iter().all(|hop| hop.relation.is_to_one())
}

fn hop_expr(
    hops: &[Hop],
    scopes: &[Predicate],
    field: &'static Field,
    test: &Test,
    table: Table<'_>,
    negated: bool,
) -> Expr {
    let Some((hop, rest)) = hops.split_first() else {
        return field_expr(field, test, table, negated);
    };
    let (scope, rest_scopes) = match scopes.split_first() {
        Some((scope, rest)) => (Some(scope), rest),
        None => (None, scopes),
    };
    let mut inner_where = hop_expr(rest, rest_scopes, field, test, Table::Bare, false);
    if let Some(scope) = scope.filter(|s| !s.is_always()) {
        // Related records outside the caller's scope never satisfy a condition.
        inner_where = inner_where.and(predicate_expr(scope, Table::Bare, false));
    }
    match hop.relation.kind {
        RelationKind::ToOne { fk } => {
            let fk_column = &hop
                .from
                .field_named(fk)
                .expect("checked by the catalog")
                .column;
            let fk_expr = semi_join_column(table, fk_column);
            let missing_matches = unset_satisfies(rest, test);
            if let (Table::Correlated(_), false, false) = (table, negated, missing_matches) {
                let mut related = Query::select();
                related
                    .expr(Expr::val(1))
                    .from(Alias::new(hop.to.table))
                    .and_where(Expr::col((Alias::new(hop.to.table), Alias::new("id"))).eq(fk_expr))
                    .and_where(inner_where);
                return Expr::exists(related);
            }
            let mut inner = Query::select();
            inner
                .column(Alias::new("id"))
                .from(Alias::new(hop.to.table))
                .and_where(inner_where);
            match (negated, missing_matches) {
                (false, false) => fk_expr.in_subquery(inner),
                (false, true) => fk_expr.clone().is_null().or(fk_expr.in_subquery(inner)),
                (true, false) => fk_expr.clone().is_null().or(fk_expr.not_in_subquery(inner)),
                (true, true) => fk_expr
                    .clone()
                    .is_not_null()
                    .and(fk_expr.not_in_subquery(inner)),
            }
        }
        RelationKind::ToMany { target_fk } => {
            let back_column = &hop
                .to
                .field_named(target_fk)
                .expect("checked by the catalog")
                .column;
            let id = semi_join_column(table, "id");
            if let (Table::Correlated(_), false) = (table, negated) {
                let mut related = Query::select();
                related
                    .expr(Expr::val(1))
                    .from(Alias::new(hop.to.table))
                    .and_where(
                        Expr::col((Alias::new(hop.to.table), Alias::new(back_column.as_str())))
                            .eq(id),
                    )
                    .and_where(inner_where);
                return Expr::exists(related);
            }
            let mut inner = Query::select();
            inner
                .column(Alias::new(back_column.as_str()))
                .from(Alias::new(hop.to.table))
                .and_where(Expr::col(Alias::new(back_column.as_str())).is_not_null())
                .and_where(inner_where);
            if negated {
                id.not_in_subquery(inner)
            } else {
                id.in_subquery(inner)
            }
        }
    }
}

/// A test on a field of the current table.
pub(super) fn field_expr(
    field: &'static Field,
    test: &Test,
    table: Table<'_>,
    negated: bool,
) -> Expr {
    if let Some(list) = &field.list {
        // "Some element satisfies the test"; Empty means "no elements".
        let mut inner = Query::select();
        inner
            .column(Alias::new(list.owner_column))
            .from(Alias::new(list.table));
        let element_matches = !matches!(test, Test::Empty);
        if element_matches {
            let value_column = match list.element {
                FieldType::Text => brandhub_catalog::naming::folded_column(list.value_column),
                _ => list.value_column.to_string(),
            };
            inner.and_where(value_expr(&value_column, test, Table::Bare));
        }
        let id = semi_join_column(table, "id");
        return if element_matches != negated {
            id.in_subquery(inner)
        } else {
            id.not_in_subquery(inner)
        };
    }
    let not_null = field.required || field.ty == FieldType::Text;
    let name = comparable_column(field);
    if let Test::Empty = test {
        let col = column(table, &name);
        return match (field.ty == FieldType::Text, negated) {
            (true, false) => col.eq(""),
            (true, true) => col.ne(""),
            (false, false) => col.is_null(),
            (false, true) => col.is_not_null(),
        };
    }
    let positive = value_expr(&name, test, table);
    if !negated {
        positive
    } else if not_null {
        positive.not()
    } else {
        column(table, &name).is_null().or(positive.not())
    }
}

/// The positive SQL form of a (non-empty) test on one column.
fn value_expr(name: &str, test: &Test, table: Table<'_>) -> Expr {
    let col = column(table, name);
    match test {
        Test::Empty => col.is_null(),
        Test::Never => always(false),
        Test::OneOf(operands) if operands.len() == 1 => col.eq(operand_value(&operands[0])),
        Test::OneOf(operands) => col.is_in(operands.iter().map(operand_value)),
        Test::Compare(comparison, operand) => {
            let value = operand_value(operand);
            match comparison {
                Comparison::Less => col.lt(value),
                Comparison::LessOrEqual => col.lte(value),
                Comparison::Greater => col.gt(value),
                Comparison::GreaterOrEqual => col.gte(value),
            }
        }
        Test::Within(low, high) => col
            .clone()
            .gte(operand_value(low))
            .and(col.lt(operand_value(high))),
        Test::Like(pattern) => like_expr(col, pattern),
    }
}

/// A wildcard pattern: a pure prefix is an index range; anything else is LIKE, with the
/// prefix range kept beside it so an index still narrows the scan.
fn like_expr(col: Expr, pattern: &Pattern) -> Expr {
    let prefix = pattern.prefix();
    let range = if prefix.is_empty() {
        None
    } else {
        Some(match prefix_upper_bound(prefix) {
            Some(bound) => col.clone().gte(prefix).and(col.clone().lt(bound)),
            None => col.clone().gte(prefix),
        })
    };
    if pattern.is_prefix_only() {
        return range.unwrap_or_else(|| col.is_not_null());
    }
    let like = col.like(LikeExpr::new(pattern.to_like()).escape('\\'));
    match range {
        Some(range) => range.and(like),
        None => like,
    }
}

#[cfg(test)]
mod key_lookup_tests {
    use super::ids_with_any_key;
    use sea_query::SqliteQueryBuilder;

    #[test]
    fn keys_sharing_all_but_their_last_value_become_one_in_list() {
        let keys = vec![
            vec![("fk_store", "S1"), ("host_sku", "A")],
            vec![("fk_store", "S1"), ("host_sku", "B")],
            vec![("fk_store", "S2"), ("host_sku", "A")],
            vec![("fk_store", "S1"), ("host_sku", "C")],
        ];
        let sql = ids_with_any_key("offer", keys).to_string(SqliteQueryBuilder);
        assert_eq!(
            sql,
            "SELECT \"id\" FROM \"offer\" WHERE (\"fk_store\" = 'S1' AND \"host_sku\" IN ('A', 'B', 'C')) \
             OR (\"fk_store\" = 'S2' AND \"host_sku\" = 'A')"
        );
    }

    #[test]
    fn single_column_keys_are_one_in_list() {
        let keys = (0..3).map(|n| vec![("barcode", ["1", "2", "3"][n])]);
        let sql = ids_with_any_key("variant", keys).to_string(SqliteQueryBuilder);
        assert_eq!(
            sql,
            "SELECT \"id\" FROM \"variant\" WHERE \"barcode\" IN ('1', '2', '3')"
        );
    }
}
