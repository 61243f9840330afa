//! Stage 3 of the pipeline: plans become sea-query statements. Every identifier comes from the
//! catalog and every value is a bound parameter; nothing the client sent becomes SQL text.
//!
//! Filters are semi-joins (`fk IN (SELECT id FROM target WHERE …)`), so a filter through a
//! relation never multiplies rows; order keys through relations become LEFT JOINs. Negation is
//! pushed down to the leaves and made null-safe there, so that `#` is always the exact
//! complement of `=` (an unset value is "not equal" to everything but the empty value).

use crate::plan::path::{FieldPath, Hop};
use crate::plan::{
    Comparison, CountPlan, Leaf, Operand, OrderKey, Predicate, ReadPlan, Selection, Test, Viewer,
};
use crate::request::Direction;
use crate::text::{Pattern, prefix_upper_bound};
use brandhub_catalog::{Field, FieldType, RelationKind, Resource};
use sea_query::{
    Alias, Asterisk, CommonTableExpression, Expr, ExprTrait, Func, JoinType, LikeExpr,
    NullOrdering, Order, Query, SelectStatement, Value, WithClause,
};
use std::collections::BTreeSet;

/// The alias of the queried table in a page or count statement.
pub const ROOT: &str = "t0";

/// Where a column lives: in the aliased root table (with joins around it) or unqualified (the
/// only table of an uncorrelated subquery).
#[derive(Clone, Copy)]
pub(crate) enum Table<'a> {
    Aliased(&'a str),
    /// Aliased, and its semi-joins may only be probed, never drive the query (SQLite's
    /// `+column IN (…)`): the page walks the records in order instead.
    Probed(&'a str),
    /// Aliased, for a statement that starts from a few known rows: a relation's condition is
    /// a correlated `EXISTS`, looked up for each of those rows, rather than a list of every
    /// related record that satisfies it (which SQLite builds in full first).
    Correlated(&'a str),
    Bare,
}

fn column(table: Table<'_>, name: &str) -> Expr {
    match table {
        Table::Aliased(alias) | Table::Probed(alias) | Table::Correlated(alias) => {
            Expr::col((Alias::new(alias), Alias::new(name)))
        }
        Table::Bare => Expr::col(Alias::new(name)),
    }
}

/// The left side of a semi-join (`column IN (subquery)`). SQLite's planner cannot know how
/// many ids a subquery yields and likes to drive from it; when brandhub knows matches are
/// common, a unary `+` keeps the column from being used that way, so the order is walked.
fn semi_join_column(table: Table<'_>, name: &str) -> Expr {
    match table {
        Table::Probed(_) => unindexed(column(table, name)),
        _ => column(table, name),
    }
}

/// `+expr`: the same value, which SQLite's planner cannot serve from an index, so it neither
/// drives a query from it nor walks an order by it. SQLite only (its placeholder is `?`);
/// the strategies that use it are chosen for SQLite.
fn unindexed(expr: Expr) -> Expr {
    Expr::cust_with_expr("+?", expr)
}

/// The column a field is compared and ordered by: the folded copy for text.
fn comparable_column(field: &Field) -> String {
    field
        .folded_column()
        .unwrap_or_else(|| field.column.clone())
}

fn operand_value(operand: &Operand) -> Value {
    match operand {
        Operand::Text(text) => text.clone().into(),
        Operand::Integer(n) => (*n).into(),
        Operand::Number(n) => (*n).into(),
        Operand::Boolean(b) => (*b).into(),
    }
}

fn always(truth: bool) -> Expr {
    Expr::cust(if truth { "1 = 1" } else { "1 = 0" })
}

/// Joins operands into a balanced tree of `join`s: the SQL of many conditions nests only
/// logarithmically deep (SQLite refuses expressions nested 1,000 deep, and every renderer and
/// parser walks them recursively). Paired left to right, so the order of operands stays.
fn balanced(mut exprs: Vec<Expr>, join: fn(Expr, Expr) -> Expr) -> Option<Expr> {
    while exprs.len() > 1 {
        let mut paired = Vec::with_capacity(exprs.len().div_ceil(2));
        let mut operands = exprs.into_iter();
        while let Some(left) = operands.next() {
            paired.push(match operands.next() {
                Some(right) => join(left, right),
                None => left,
            });
        }
        exprs = paired;
    }
    exprs.pop()
}

/// Every condition ([`balanced`]; true when there is none).
pub fn all(exprs: Vec<Expr>) -> Expr {
    balanced(exprs, Expr::and).unwrap_or_else(|| always(true))
}

/// Any of the conditions ([`balanced`]; false when there is none): what a statement that
/// looks up many keys at once ORs them with.
pub fn any(exprs: Vec<Expr>) -> Expr {
    balanced(exprs, Expr::or).unwrap_or_else(|| always(false))
}

/// `SELECT id FROM table` of the rows holding any of `keys`, each key its columns' values
/// (all equal): many unique keys looked up in one statement, ORed as a balanced tree (a flat
/// `a OR b OR …` of 1,000 keys nests deeper than SQLite parses).
pub fn ids_with_any_key<'a>(
    table: &str,
    keys: impl IntoIterator<Item = Vec<(&'a str, &'a str)>>,
) -> sea_query::SelectStatement {
    let keys = keys
        .into_iter()
        .map(|key| {
            all(key
                .into_iter()
                .map(|(column, value)| Expr::col(Alias::new(column)).eq(value))
                .collect())
        })
        .collect();
    sea_query::Query::select()
        .column(Alias::new("id"))
        .from(Alias::new(table))
        .and_where(any(keys))
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
fn field_expr(field: &'static Field, test: &Test, table: Table<'_>, negated: bool) -> Expr {
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

/// The columns a node of a selection reads: the id, its selected leaves, the foreign keys of
/// its selected to-one relations, and `link` (the back reference a to-many load groups by).
pub fn node_columns(selection: &Selection, link: Option<&'static Field>) -> Vec<&'static Field> {
    let resource = selection.resource;
    let mut columns: Vec<&'static Field> = vec![
        resource
            .field_named("id")
            .expect("every resource has an id"),
    ];
    let mut push = |field: &'static Field| {
        if !columns.iter().any(|c| std::ptr::eq(*c, field)) {
            columns.push(field);
        }
    };
    for field in selection.leaf_fields() {
        if field.has_column() {
            push(field);
        }
    }
    for selected in &selection.relations {
        if let Some(fk) = resource.fk_field(selected.relation) {
            push(fk);
        }
    }
    if let Some(link) = link {
        push(link);
    }
    columns
}

struct Joins {
    /// (relation path, alias) for each LEFT JOIN, in join order.
    aliases: Vec<(Vec<&'static str>, String)>,
}

impl Joins {
    /// The alias of the last relation of an order key's path, joining what is not joined yet.
    /// Each join admits only related records in the caller's scope (`scopes`, one per hop):
    /// a related record outside it sorts as a missing one, never by its values.
    fn alias_for(
        &mut self,
        statement: &mut SelectStatement,
        hops: &[Hop],
        scopes: &[Predicate],
    ) -> String {
        let mut parent = ROOT.to_string();
        for depth in 1..=hops.len() {
            let key: Vec<&'static str> = hops[..depth].iter().map(|h| h.relation.name).collect();
            if let Some((_, alias)) = self.aliases.iter().find(|(k, _)| *k == key) {
                parent = alias.clone();
                continue;
            }
            let hop = &hops[depth - 1];
            let alias = format!("j{}", self.aliases.len() + 1);
            let fk = hop
                .from
                .fk_field(hop.relation)
                .expect("order paths are to-one");
            let mut on = Expr::col((Alias::new(alias.as_str()), Alias::new("id")))
                .equals((Alias::new(parent.as_str()), Alias::new(fk.column.as_str())));
            if let Some(scope) = scopes.get(depth - 1).filter(|s| !s.is_always()) {
                on = on.and(predicate_expr(scope, Table::Aliased(&alias), false));
            }
            statement.join_as(
                JoinType::LeftJoin,
                Alias::new(hop.to.table),
                Alias::new(alias.as_str()),
                on,
            );
            self.aliases.push((key, alias.clone()));
            parent = alias;
        }
        parent
    }
}

fn order(direction: Direction) -> Order {
    match direction {
        Direction::Ascending => Order::Asc,
        Direction::Descending => Order::Desc,
    }
}

/// How one order key sorts: the expression, its direction, and where unset values go
/// (`None` when the value can never be unset).
struct SortKey {
    expr: Expr,
    order: Order,
    nulls: Option<NullOrdering>,
}

fn sort_key(statement: &mut SelectStatement, joins: &mut Joins, key: &OrderKey) -> SortKey {
    let alias = joins.alias_for(statement, &key.path.hops, &key.path.hop_scopes);
    let field = key.path.field;
    let expr = Expr::col((
        Alias::new(alias.as_str()),
        Alias::new(comparable_column(field)),
    ));
    // A related record may be missing: its key is optional, or the record is outside the
    // caller's scope and so not joined.
    let through_optional_relation =
        key.path
            .hops
            .iter()
            .zip(&key.path.hop_scopes)
            .any(|(hop, scope)| {
                !scope.is_always()
                    || hop
                        .from
                        .fk_field(hop.relation)
                        .is_some_and(|fk| !fk.required)
            });
    let never_null = (field.required || field.ty == FieldType::Text) && !through_optional_relation;
    // Unset sorts as the smallest value, like the empty text it renders as.
    let nulls = (!never_null).then_some(match key.direction {
        Direction::Ascending => NullOrdering::First,
        Direction::Descending => NullOrdering::Last,
    });
    SortKey {
        expr,
        order: order(key.direction),
        nulls,
    }
}

fn apply_order(
    statement: &mut SelectStatement,
    expr: Expr,
    order: Order,
    nulls: Option<NullOrdering>,
) {
    match nulls {
        Some(nulls) => statement.order_by_expr_with_nulls(expr, order, nulls),
        None => statement.order_by_expr(expr, order),
    };
}

/// The alias of the inner "which ids" query of a page statement.
const PAGE: &str = "page";
/// The name of the matches table of the `MatchesFirst` page and count statements.
const MATCHES: &str = "matches";

/// How a page statement finds its ids. Planners estimate how many records a filter matches;
/// brandhub knows exactly (the count comes first and is usually cached), so it chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageStrategy {
    /// Walk the records in order and stop after the page: best when matches are common.
    InOrder,
    /// As `InOrder`, and tell the planner so: semi-joins are only probed (SQLite, whose
    /// planner would otherwise drive from a large subquery and sort everything it yields).
    InOrderProbing,
    /// Few matches (SQLite): find them through the filters and sort them, never walk an
    /// index in order hoping to meet them (`ORDER BY +column`). With `probe_scope` a scope
    /// that holds much of the table is only probed, so the requested filter drives.
    SortMatches { probe_scope: bool },
    /// Collect every match first (a materialized CTE, which the planner cannot merge with the
    /// LIMIT), then sort just those: best when matches are few, where walking the order
    /// would pass over many records that do not match. With `probe_scope` the CTE holds the
    /// requested filter's matches and the scope judges just those (see [`filter_drives`]).
    MatchesFirst { probe_scope: bool },
}

/// Up to this many matches, collecting them first is cheap whatever the table's size.
pub const MATCHES_FIRST_LIMIT: u64 = 1_000;

/// Whether `part` records are rare among `whole`: at most 2%. Rare matches are collected
/// rather than met on a walk in order; a scope that is not rare never drives a query.
pub fn is_rare(part: u64, whole: u64) -> bool {
    part.saturating_mul(50) <= whole
}

/// Whether a requested filter should find its matches before the scope judges them: the
/// scope holds `visible` of the table's `total` records, more than a rare part, and the filter
/// alone matches `matched`, few (at most `limit`) or rare. No planner can know this: a scope
/// is a chain of semi-joins over small tables whose yield it cannot estimate, and PostgreSQL
/// would scan the whole table to hash-join it.
pub fn filter_drives(visible: u64, matched: u64, total: u64, limit: u64) -> bool {
    !is_rare(visible, total) && (matched <= limit || is_rare(matched, total))
}

/// The table of matches collected first, materialized so that the planner cannot merge it
/// into the query around it.
fn matches_cte(query: SelectStatement) -> WithClause {
    let mut cte = CommonTableExpression::new();
    cte.query(query)
        .table_name(Alias::new(MATCHES))
        .materialized(true);
    WithClause::new().cte(cte).to_owned()
}

/// The columns of a resource's own table that a predicate reads: the fields it tests, the
/// foreign keys of its first to-one hops, and the id for to-many hops and list fields. A
/// table of matches carrying them can be judged by the predicate without the table itself.
pub fn own_columns(predicate: &Predicate) -> BTreeSet<String> {
    predicate
        .leaves()
        .into_iter()
        .map(|leaf| match leaf.path.hops.first() {
            Some(hop) => match hop.relation.kind {
                RelationKind::ToOne { fk } => hop
                    .from
                    .field_named(fk)
                    .expect("checked by the catalog")
                    .column
                    .clone(),
                RelationKind::ToMany { .. } => "id".to_string(),
            },
            None if leaf.path.field.list.is_some() => "id".to_string(),
            None => comparable_column(leaf.path.field),
        })
        .collect()
}

impl PageStrategy {
    /// The strategy for `found` matches among the `total` records the caller could see:
    /// collect first when matches are few (at most `limit`) or rare (at most 2%).
    pub fn choose(found: u64, total: u64, limit: u64) -> PageStrategy {
        if found <= limit || is_rare(found, total) {
            PageStrategy::MatchesFirst { probe_scope: false }
        } else {
            PageStrategy::InOrder
        }
    }
}

/// The statement reading one page of records, as a deferred join: an inner query finds the
/// page's ids (with the values of its order keys) using only what filtering and ordering
/// need, and the outer query reads the selected columns of just those rows. Sorting and
/// skipping then handle narrow rows, however wide the resource's records are.
pub fn page_statement(plan: &ReadPlan, strategy: PageStrategy) -> SelectStatement {
    let resource = plan.resource;
    let mut select = Query::select();
    select
        .from_as(Alias::new(resource.table), Alias::new(ROOT))
        .expr_as(
            Expr::col((Alias::new(ROOT), Alias::new("id"))),
            Alias::new("id"),
        );
    let (scope_table, filter_table) = match strategy {
        PageStrategy::InOrderProbing => (Table::Probed(ROOT), Table::Probed(ROOT)),
        PageStrategy::SortMatches { probe_scope: true } => {
            (Table::Probed(ROOT), Table::Aliased(ROOT))
        }
        _ => (Table::Aliased(ROOT), Table::Aliased(ROOT)),
    };
    // The scope judges the collected matches rather than helping to find them.
    let scope_after =
        strategy == PageStrategy::MatchesFirst { probe_scope: true } && !plan.scope.is_always();
    if scope_after {
        for name in own_columns(&plan.scope) {
            if name != "id" {
                select.column((Alias::new(ROOT), Alias::new(name)));
            }
        }
    }
    if !plan.scope.is_always() && !scope_after {
        select.and_where(predicate_expr(&plan.scope, scope_table, false));
    }
    if !plan.filter.is_always() {
        select.and_where(predicate_expr(&plan.filter, filter_table, false));
    }
    let mut joins = Joins {
        aliases: Vec::new(),
    };
    let mut keys = Vec::new();
    for (i, key) in plan.order.iter().enumerate() {
        let sort = sort_key(&mut select, &mut joins, key);
        let name = format!("k{i}");
        select.expr_as(sort.expr.clone(), Alias::new(name.as_str()));
        keys.push((name, sort));
    }
    let tie = order(plan.tie_break());

    let (mut inner, cte) = match strategy {
        PageStrategy::InOrder | PageStrategy::InOrderProbing => {
            for (_, sort) in &keys {
                apply_order(
                    &mut select,
                    sort.expr.clone(),
                    sort.order.clone(),
                    sort.nulls,
                );
            }
            select.order_by_expr(Expr::col((Alias::new(ROOT), Alias::new("id"))), tie.clone());
            (select, None)
        }
        PageStrategy::SortMatches { .. } => {
            for (_, sort) in &keys {
                apply_order(
                    &mut select,
                    unindexed(sort.expr.clone()),
                    sort.order.clone(),
                    sort.nulls,
                );
            }
            select.order_by_expr(
                unindexed(Expr::col((Alias::new(ROOT), Alias::new("id")))),
                tie.clone(),
            );
            (select, None)
        }
        PageStrategy::MatchesFirst { .. } => {
            let cte = matches_cte(select);
            let mut sorted = Query::select();
            sorted
                .from_as(Alias::new(MATCHES), Alias::new(ROOT))
                .column(Alias::new("id"));
            if scope_after {
                sorted.and_where(predicate_expr(&plan.scope, Table::Aliased(ROOT), false));
            }
            for (name, sort) in &keys {
                sorted.column(Alias::new(name.as_str()));
                apply_order(
                    &mut sorted,
                    Expr::col(Alias::new(name.as_str())),
                    sort.order.clone(),
                    sort.nulls,
                );
            }
            sorted.order_by_expr(Expr::col(Alias::new("id")), tie.clone());
            (sorted, Some(cte))
        }
    };
    inner.limit(plan.page_size).offset(plan.offset());

    let mut outer = Query::select();
    outer.from_subquery(inner, Alias::new(PAGE)).join_as(
        JoinType::InnerJoin,
        Alias::new(resource.table),
        Alias::new(ROOT),
        Expr::col((Alias::new(ROOT), Alias::new("id")))
            .equals((Alias::new(PAGE), Alias::new("id"))),
    );
    for field in node_columns(&plan.selection, None) {
        outer.column((Alias::new(ROOT), Alias::new(field.column.as_str())));
    }
    for (name, sort) in keys {
        apply_order(
            &mut outer,
            Expr::col((Alias::new(PAGE), Alias::new(name))),
            sort.order,
            sort.nulls,
        );
    }
    outer.order_by_expr(Expr::col((Alias::new(PAGE), Alias::new("id"))), tie);
    if let Some(cte) = cte {
        outer.with_cte(cte);
    }
    outer
}

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
/// id, never by an offset, so a whole export reads each record once). Like a page, the ids and
/// key values are found first and the selected columns read for just those; the key values
/// follow the selected columns (as `k0`, `k1`, …) so the next chunk can start after the last
/// row. With `probe` (SQLite) semi-joins are only probed, so the order is walked.
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
    inner
        .from_as(Alias::new(resource.table), Alias::new(ROOT))
        .expr_as(
            Expr::col((Alias::new(ROOT), Alias::new("id"))),
            Alias::new("id"),
        );
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

    let mut outer = Query::select();
    outer.from_subquery(inner, Alias::new(PAGE)).join_as(
        JoinType::InnerJoin,
        Alias::new(resource.table),
        Alias::new(ROOT),
        Expr::col((Alias::new(ROOT), Alias::new("id")))
            .equals((Alias::new(PAGE), Alias::new("id"))),
    );
    for field in node_columns(&plan.selection, None) {
        outer.column((Alias::new(ROOT), Alias::new(field.column.as_str())));
    }
    for (name, _, _) in &keys {
        outer.column((Alias::new(PAGE), Alias::new(name.as_str())));
    }
    for (name, sort, _) in keys {
        apply_order(
            &mut outer,
            Expr::col((Alias::new(PAGE), Alias::new(name))),
            sort.order,
            sort.nulls,
        );
    }
    outer.order_by_expr(Expr::col((Alias::new(PAGE), Alias::new("id"))), order(tie));
    outer
}

/// How a count statement finds its records. Like [`PageStrategy`], chosen by the store from
/// exact counts (the records the caller sees, those the requested filter matches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountStrategy {
    /// Scope and requested filter are conditions of one pass; the planner chooses a driver.
    Plain,
    /// As `Plain`, with the scope's semi-joins only probed (SQLite's `+column IN (…)`), so
    /// the requested filter drives the count rather than hundreds of thousands of visible ids.
    ProbeScope,
    /// Collect the requested filter's matches first (a materialized CTE of the columns the
    /// scope reads), then count those the scope admits: the filter's indexes find the few
    /// matches and the scope only judges them (see [`filter_drives`]).
    MatchesFirst,
}

/// The statement counting every record a plan admits, in the form `strategy` asks for.
pub fn count_statement(plan: &CountPlan, strategy: CountStrategy) -> SelectStatement {
    let mut statement = Query::select();
    statement.expr(Func::count(Expr::col(Asterisk)));
    let scope_table = match strategy {
        CountStrategy::ProbeScope => Table::Probed(ROOT),
        CountStrategy::Plain | CountStrategy::MatchesFirst => Table::Aliased(ROOT),
    };
    if strategy == CountStrategy::MatchesFirst && !plan.scope.is_always() {
        // The filter's matches, with just what the scope needs to judge them; the count then
        // reads only those, never the table again.
        let mut matches = Query::select();
        matches.from_as(Alias::new(plan.resource.table), Alias::new(ROOT));
        let mut columns = own_columns(&plan.scope);
        if columns.is_empty() {
            columns.insert("id".to_string());
        }
        for name in columns {
            matches.column((Alias::new(ROOT), Alias::new(name)));
        }
        if !plan.filter.is_always() {
            matches.and_where(predicate_expr(&plan.filter, Table::Aliased(ROOT), false));
        }
        statement
            .from_as(Alias::new(MATCHES), Alias::new(ROOT))
            .and_where(predicate_expr(&plan.scope, scope_table, false))
            .with_cte(matches_cte(matches));
        return statement;
    }
    statement.from_as(Alias::new(plan.resource.table), Alias::new(ROOT));
    for (predicate, table) in [
        (&plan.scope, scope_table),
        (&plan.filter, Table::Aliased(ROOT)),
    ] {
        if !predicate.is_always() {
            statement.and_where(predicate_expr(predicate, table, false));
        }
    }
    statement
}

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

/// Every table whose contents can change the answer of a filter on `resource`: the resource's
/// own, and those its leaves reach through relations or lists, and what the scopes of those
/// relations read. Counts cached for a filter stay true while none of these tables is written.
pub fn tables_read(resource: &'static Resource, filter: &Predicate) -> Vec<&'static str> {
    let mut tables = BTreeSet::from([resource.table]);
    add_tables(filter, &mut tables);
    tables.into_iter().collect()
}

/// Whether a page of `plan` reads its resource's table again beyond its own rows: through a
/// relation of its scope, filter or order keys. A write's answer read in the write's own
/// statement, where the table's name stands for the rows just written, needs it not to.
pub fn reaches_own_table(plan: &ReadPlan) -> bool {
    let mut tables = BTreeSet::new();
    add_tables(&plan.scope, &mut tables);
    add_tables(&plan.filter, &mut tables);
    for key in &plan.order {
        add_path_tables(&key.path, &mut tables);
    }
    tables.contains(plan.resource.table)
}

/// The tables a path reaches beside its root's: its relations' and what their scopes read.
fn add_path_tables(path: &FieldPath, tables: &mut BTreeSet<&'static str>) {
    for (hop, scope) in path.hops.iter().zip(&path.hop_scopes) {
        tables.insert(hop.to.table);
        add_tables(scope, tables);
    }
    if let Some(list) = &path.field.list {
        tables.insert(list.table);
    }
}

fn add_tables(predicate: &Predicate, tables: &mut BTreeSet<&'static str>) {
    for leaf in predicate.leaves() {
        add_path_tables(&leaf.path, tables);
    }
}

/// Every table a page's answer depends on: what its filter reads, the tables its order keys
/// join, and for every expanded relation the related table, what that relation's scope reads,
/// and the list tables of shown arrays. A page rendered earlier is still true while none of
/// these tables has been written.
pub fn page_tables(plan: &ReadPlan, viewer: &Viewer) -> Vec<&'static str> {
    fn walk(selection: &Selection, viewer: &Viewer, tables: &mut BTreeSet<&'static str>) {
        for field in selection.leaf_fields() {
            if let Some(list) = &field.list {
                tables.insert(list.table);
            }
        }
        for relation in &selection.relations {
            if let Some(sub) = &relation.expanded {
                tables.extend(tables_read(sub.resource, &viewer.scope(sub.resource)));
                walk(sub, viewer, tables);
            }
        }
    }
    let mut tables: BTreeSet<&'static str> = tables_read(plan.resource, &plan.full_filter())
        .into_iter()
        .collect();
    for key in &plan.order {
        add_path_tables(&key.path, &mut tables);
    }
    walk(&plan.selection, viewer, &mut tables);
    tables.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{parse_body, parse_query_string};
    use crate::plan::{Viewer, plan_count, plan_read};
    use brandhub_catalog::catalog;
    use sea_query::{PostgresQueryBuilder, SqliteQueryBuilder};

    fn read(resource: &str, query: &str, body: &str) -> ReadPlan {
        let mut request = parse_query_string(query).unwrap();
        request.body = parse_body(body.as_bytes()).unwrap();
        plan_read(
            catalog().resource(resource).unwrap(),
            &request,
            &Viewer::admin(),
        )
        .unwrap()
    }

    fn sqlite(statement: &SelectStatement) -> String {
        statement.to_string(SqliteQueryBuilder)
    }

    #[test]
    fn a_plan_reaches_its_own_table_only_through_a_relation_back_to_it() {
        assert!(!reaches_own_table(&read("stock", "", "")));
        assert!(!reaches_own_table(&read(
            "stock",
            "stock_variant.barcode=5@&order_by=stock_warehouse.code",
            ""
        )));
        assert!(reaches_own_table(&read(
            "stock",
            "stock_variant.variant_stock.inStock=5",
            ""
        )));
        assert!(reaches_own_table(&read(
            "variant",
            "variant_product.product_variant.colour=Teal",
            ""
        )));
    }

    #[test]
    fn an_export_continues_after_the_last_id_without_an_offset() {
        let plan = read("variant", "fields=barcode", "");
        let first = sqlite(&export_statement(&plan, None, 500, false));
        assert_eq!(
            first,
            r#"SELECT "t0"."id", "t0"."barcode" FROM (SELECT "t0"."id" AS "id" FROM "variant" AS "t0" ORDER BY "t0"."id" ASC LIMIT 500) AS "page" INNER JOIN "variant" AS "t0" ON "t0"."id" = "page"."id" ORDER BY "page"."id" ASC"#
        );
        let after = Keyset {
            keys: Vec::new(),
            id: "0190".into(),
        };
        let next = sqlite(&export_statement(&plan, Some(&after), 500, false));
        assert!(
            next.contains(r#"WHERE "t0"."id" > '0190' ORDER BY "t0"."id" ASC LIMIT 500"#),
            "{next}"
        );
        assert!(!next.contains("OFFSET"), "{next}");
    }

    #[test]
    fn an_export_by_uniform_keys_compares_rows_and_by_nullable_keys_spells_it_out() {
        // Text keys are never unset: one row comparison over the folded column and the id.
        let plan = read("variant", "order_by=barcode", "");
        let after = Keyset {
            keys: vec![Some(Operand::Text("501".into()))],
            id: "0190".into(),
        };
        let sql = sqlite(&export_statement(&plan, Some(&after), 10, false));
        assert!(
            sql.contains(r#"("t0"."barcode_ci", "t0"."id") > ('501', '0190')"#),
            "{sql}"
        );
        assert!(
            sql.contains(r#""t0"."barcode_ci" AS "k0""#) && sql.contains(r#""page"."k0" FROM"#),
            "{sql}"
        );
        // A nullable key descending: after = smaller, or unset (last), or equal and a smaller id.
        let plan = read("stock", "order_by=inStock<&demand=1", "");
        let after = Keyset {
            keys: vec![Some(Operand::Integer(5))],
            id: "0190".into(),
        };
        let sql = sqlite(&export_statement(&plan, Some(&after), 10, false));
        assert!(
            sql.contains(r#"WHERE "t0"."demand" = 1 AND ("t0"."in_stock" < 5 OR "t0"."in_stock" IS NULL OR ("t0"."in_stock" = 5 AND "t0"."id" < '0190')) ORDER BY "t0"."in_stock" DESC NULLS LAST, "t0"."id" DESC LIMIT 10"#),
            "{sql}"
        );
        let unset = Keyset {
            keys: vec![None],
            id: "0190".into(),
        };
        let sql = sqlite(&export_statement(&plan, Some(&unset), 10, false));
        assert!(
            sql.contains(r#"((1 = 0) OR ("t0"."in_stock" IS NULL AND "t0"."id" < '0190'))"#),
            "{sql}"
        );
    }

    #[test]
    fn a_plain_page_reads_by_id_with_limit_and_offset() {
        let plan = read("variant", "fields=barcode&page=2&pageSize=10", "");
        assert_eq!(
            sqlite(&page_statement(&plan, PageStrategy::InOrder)),
            r#"SELECT "t0"."id", "t0"."barcode" FROM (SELECT "t0"."id" AS "id" FROM "variant" AS "t0" ORDER BY "t0"."id" ASC LIMIT 10 OFFSET 10) AS "page" INNER JOIN "variant" AS "t0" ON "t0"."id" = "page"."id" ORDER BY "page"."id" ASC"#
        );
    }

    #[test]
    fn few_matches_are_collected_first_and_then_sorted() {
        let plan = read(
            "variant",
            "fields=barcode&barcode=501234@&order_by=code<",
            "",
        );
        let sql = sqlite(&page_statement(
            &plan,
            PageStrategy::MatchesFirst { probe_scope: false },
        ));
        assert!(sql.starts_with(r#"WITH "matches" AS"#), "{sql}");
        assert!(sql.contains(r#"MATERIALIZED (SELECT "t0"."id" AS "id", "t0"."code_ci" AS "k0" FROM "variant" AS "t0" WHERE"#), "{sql}");
        assert!(sql.contains(r#"(SELECT "id", "k0" FROM "matches" AS "t0" ORDER BY "k0" DESC, "id" DESC LIMIT 100 OFFSET 0) AS "page""#), "{sql}");
        assert_eq!(
            PageStrategy::choose(10_000, 1_000_000, MATCHES_FIRST_LIMIT),
            PageStrategy::MatchesFirst { probe_scope: false }
        );
        assert_eq!(
            PageStrategy::choose(500_000, 1_000_000, MATCHES_FIRST_LIMIT),
            PageStrategy::InOrder
        );
        assert_eq!(
            PageStrategy::choose(30_000, 2_000_000, MATCHES_FIRST_LIMIT),
            PageStrategy::MatchesFirst { probe_scope: false }
        );
    }

    #[test]
    fn probing_pages_keep_semi_joins_from_driving() {
        let plan = read("stock", "fields=inStock&stock_variant.barcode=501@", "");
        let (sql, _) =
            page_statement(&plan, PageStrategy::InOrderProbing).build(SqliteQueryBuilder);
        assert!(
            sql.contains(r#"WHERE (+"t0"."fk_variant") IN (SELECT "id" FROM "variant" WHERE"#),
            "{sql}"
        );
        assert!(!sqlite(&page_statement(&plan, PageStrategy::InOrder)).contains('+'));
    }

    #[test]
    fn few_matches_on_sqlite_are_sorted_and_a_wide_scope_only_probed() {
        let mut plan = read(
            "stock",
            "fields=inStock&stock_variant.barcode=501@&order_by=lastUpdate<",
            "",
        );
        plan.scope = plan.filter.clone();
        let sql = sqlite(&page_statement(
            &plan,
            PageStrategy::SortMatches { probe_scope: true },
        ));
        assert!(
            sql.contains(r#"ORDER BY +"t0"."last_update" DESC, +"t0"."id" DESC LIMIT"#),
            "{sql}"
        );
        assert!(sql.contains(r#"WHERE (+"t0"."fk_variant") IN"#), "{sql}");
        assert!(sql.contains(r#" AND "t0"."fk_variant" IN"#), "{sql}");
    }

    #[test]
    fn prefix_filters_become_index_ranges_on_the_folded_column() {
        let plan = read("variant", "fields=barcode&barcode=501234@", "");
        let sql = sqlite(&page_statement(&plan, PageStrategy::InOrder));
        assert!(
            sql.contains(r#""t0"."barcode_ci" >= '501234' AND "t0"."barcode_ci" < '501235'"#),
            "{sql}"
        );
        assert!(!sql.contains("LIKE"), "{sql}");
    }

    #[test]
    fn dotted_filters_are_semi_joins_and_dotted_order_keys_are_left_joins() {
        let plan = read(
            "stock",
            "fields=inStock&stock_variant.barcode=501@&order_by=stock_variant.variant_product.title<",
            "",
        );
        let sql = sqlite(&page_statement(&plan, PageStrategy::InOrder));
        assert!(sql.contains(r#""t0"."fk_variant" IN (SELECT "id" FROM "variant" WHERE "barcode_ci" >= '501' AND "barcode_ci" < '502')"#), "{sql}");
        assert!(
            sql.contains(r#"LEFT JOIN "variant" AS "j1" ON "j1"."id" = "t0"."fk_variant""#),
            "{sql}"
        );
        assert!(
            sql.contains(r#"LEFT JOIN "product" AS "j2" ON "j2"."id" = "j1"."fk_product""#),
            "{sql}"
        );
        assert!(
            sql.contains(r#""j2"."title_ci" AS "k0""#),
            "the inner query carries the key: {sql}"
        );
        assert!(
            sql.contains(r#"ORDER BY "j2"."title_ci" DESC, "t0"."id" DESC LIMIT"#),
            "{sql}"
        );
        assert!(
            sql.ends_with(r#"ORDER BY "page"."k0" DESC, "page"."id" DESC"#),
            "the outer query keeps the order: {sql}"
        );
    }

    #[test]
    fn not_equal_is_the_null_safe_complement() {
        let plan = read(
            "order",
            "fields=id",
            r##"{"query":[{"field":"carrier","operator":"#","value":"dhl"},{"field":"shipDate","operator":"#","value":"2026-01-01","conjunction":"&"}]}"##,
        );
        let sql = sqlite(&page_statement(&plan, PageStrategy::InOrder));
        assert!(sql.contains(r#"(NOT "t0"."carrier_ci" = 'dhl')"#), "{sql}");
        assert!(sql.contains(r#""t0"."ship_date" IS NULL OR (NOT ("t0"."ship_date" >= '2026-01-01T00:00:00' AND "t0"."ship_date" < '2026-01-02T00:00:00'))"#), "{sql}");
    }

    #[test]
    fn empty_through_a_relation_matches_a_missing_relation() {
        let plan = read("image", "fields=id&image_variant.colour=", "");
        let sql = sqlite(&page_statement(&plan, PageStrategy::InOrder));
        assert!(sql.contains(r#""t0"."fk_variant" IS NULL OR "t0"."fk_variant" IN (SELECT "id" FROM "variant" WHERE "colour_ci" = '')"#), "{sql}");
    }

    #[test]
    fn to_many_filters_mean_any_related_record() {
        let plan = read("order", "fields=id&order_orderItem.status=ACC", "");
        let sql = sqlite(&page_statement(&plan, PageStrategy::InOrder));
        assert!(sql.contains(r#""t0"."id" IN (SELECT "fk_order" FROM "order_item" WHERE "fk_order" IS NOT NULL AND "status_ci" = 'acc')"#), "{sql}");
    }

    #[test]
    fn values_arrays_become_in_lists_and_counts_share_the_filter() {
        let request = {
            let mut r = parse_query_string("").unwrap();
            r.body =
                parse_body(br#"{"querywitharray":{"field":"fk_brandStore","values":["a","b"]}}"#)
                    .unwrap();
            r
        };
        let plan = plan_count(
            catalog().get(brandhub_catalog::Res::Order),
            &request,
            &Viewer::admin(),
        )
        .unwrap();
        let sql = count_statement(&plan, CountStrategy::Plain).to_string(PostgresQueryBuilder);
        assert_eq!(
            sql,
            r#"SELECT COUNT(*) FROM "orders" AS "t0" WHERE "t0"."fk_brand_store" IN ('A', 'B')"#
        );
    }

    fn host_count(resource: &str, query: &str) -> CountPlan {
        let viewer = Viewer::new(
            brandhub_catalog::UserType::Host,
            "U1",
            Vec::new(),
            Some("H1".to_string()),
            None,
        );
        plan_count(
            catalog().resource(resource).unwrap(),
            &parse_query_string(query).unwrap(),
            &viewer,
        )
        .unwrap()
    }

    #[test]
    fn a_wide_scope_counts_a_rare_filters_matches_first() {
        let plan = host_count("stock", "stock_variant.barcode=501000@");
        for sql in [
            count_statement(&plan, CountStrategy::MatchesFirst).to_string(PostgresQueryBuilder),
            sqlite(&count_statement(&plan, CountStrategy::MatchesFirst)),
        ] {
            // The filter alone finds the matches, with the columns the scope reads...
            assert!(sql.starts_with(r#"WITH "matches" AS"#), "{sql}");
            assert!(sql.contains(r#"MATERIALIZED (SELECT "t0"."fk_scope_brand", "t0"."fk_warehouse" FROM "stock" AS "t0" WHERE "t0"."fk_variant" IN (SELECT "id" FROM "variant" WHERE "barcode_ci" >= '501000' AND "barcode_ci" < '501001' AND "fk_scope_brand" IN"#), "{sql}");
            // ...and the scope judges only those: the table is not read again.
            assert!(sql.contains(r#") SELECT COUNT(*) FROM "matches" AS "t0" WHERE "t0"."fk_scope_brand" IN (SELECT "id" FROM "brand" WHERE"#), "{sql}");
            assert!(
                sql.contains(r#" AND "t0"."fk_warehouse" IN (SELECT "id" FROM "warehouse" WHERE"#),
                "{sql}"
            );
            assert_eq!(sql.matches(r#"FROM "stock""#).count(), 1, "{sql}");
        }
        // Values stay bound parameters.
        let (sql, values) =
            count_statement(&plan, CountStrategy::MatchesFirst).build(PostgresQueryBuilder);
        assert!(!sql.contains("501000") && !sql.contains("'H1'"), "{sql}");
        assert!(values.0.len() >= 3);
    }

    #[test]
    fn a_scope_read_through_to_many_hops_keeps_the_ids_of_the_matches() {
        let plan = host_count("brand", "code=BR00@");
        let sql = sqlite(&count_statement(&plan, CountStrategy::MatchesFirst));
        assert!(
            sql.contains(r#"MATERIALIZED (SELECT "t0"."id" FROM "brand" AS "t0" WHERE "t0"."code_ci" >= 'br00'"#),
            "{sql}"
        );
        assert!(
            sql.contains(r#"SELECT COUNT(*) FROM "matches" AS "t0" WHERE "t0"."id" IN (SELECT "fk_brand" FROM "brand_store""#),
            "{sql}"
        );
    }

    #[test]
    fn counts_probe_a_wide_scope_or_count_in_one_pass() {
        let plan = host_count("stock", "stock_variant.barcode=501000@");
        let probed = sqlite(&count_statement(&plan, CountStrategy::ProbeScope));
        assert!(
            probed.starts_with(
                r#"SELECT COUNT(*) FROM "stock" AS "t0" WHERE (+"t0"."fk_scope_brand") IN"#
            ),
            "{probed}"
        );
        assert!(probed.contains(r#" AND "t0"."fk_variant" IN"#), "{probed}");
        let plain = count_statement(&plan, CountStrategy::Plain).to_string(PostgresQueryBuilder);
        assert!(
            plain.starts_with(
                r#"SELECT COUNT(*) FROM "stock" AS "t0" WHERE "t0"."fk_scope_brand" IN"#
            ),
            "{plain}"
        );
        assert!(!plain.contains('+') && !plain.contains("WITH"), "{plain}");
    }

    #[test]
    fn a_rare_filter_drives_within_a_wide_scope() {
        let limit = MATCHES_FIRST_LIMIT;
        // A wide scope and a rare or small filter: the filter's matches first.
        assert!(filter_drives(790_000, 8_000, 1_000_000, limit));
        assert!(filter_drives(9_000, 900, 10_000, limit));
        // A narrow scope drives itself, whatever the filter.
        assert!(!filter_drives(10_000, 8_000, 1_000_000, limit));
        // A common filter does not.
        assert!(!filter_drives(790_000, 300_000, 1_000_000, limit));
    }

    #[test]
    fn a_wide_scope_judges_the_matches_of_a_page_collected_first() {
        let mut plan = read(
            "stock",
            "fields=inStock&stock_variant.barcode=501@&order_by=lastUpdate<",
            "",
        );
        plan.scope = host_count("stock", "").scope;
        let sql = page_statement(&plan, PageStrategy::MatchesFirst { probe_scope: true })
            .to_string(PostgresQueryBuilder);
        assert!(sql.contains(r#"MATERIALIZED (SELECT "t0"."id" AS "id", "t0"."fk_scope_brand", "t0"."fk_warehouse", "t0"."last_update" AS "k0" FROM "stock" AS "t0" WHERE "t0"."fk_variant" IN (SELECT "id" FROM "variant" WHERE "barcode_ci" >= '501' AND "barcode_ci" < '502'))"#), "{sql}");
        assert!(sql.contains(r#"(SELECT "id", "k0" FROM "matches" AS "t0" WHERE "t0"."fk_scope_brand" IN (SELECT "id" FROM "brand" WHERE"#), "{sql}");
        assert!(
            sql.contains(r#") ORDER BY "k0" DESC, "id" DESC LIMIT 100 OFFSET 0) AS "page""#),
            "{sql}"
        );
        // Without it the scope helps to find the matches.
        let sql = page_statement(&plan, PageStrategy::MatchesFirst { probe_scope: false })
            .to_string(PostgresQueryBuilder);
        assert!(sql.contains(r#"MATERIALIZED (SELECT "t0"."id" AS "id", "t0"."last_update" AS "k0" FROM "stock" AS "t0" WHERE "t0"."fk_scope_brand" IN"#), "{sql}");
        assert!(
            sql.contains(r#"(SELECT "id", "k0" FROM "matches" AS "t0" ORDER BY"#),
            "{sql}"
        );
    }

    #[test]
    fn related_loads_pad_their_key_lists() {
        let plan = read("stock", "", "");
        let variant = plan
            .selection
            .relations
            .iter()
            .find(|r| r.relation.name == "stock_variant")
            .unwrap();
        let sub = variant.expanded.as_ref().unwrap();
        let id = sub.resource.field_named("id").unwrap();
        let keys: Vec<String> = ["A", "B", "C"].iter().map(|s| s.to_string()).collect();
        let sql = sqlite(&related_statement(
            sub,
            id,
            &keys,
            &Predicate::always(),
            true,
        ));
        assert!(
            sql.ends_with(r#"WHERE "t0"."id" IN ('A', 'B', 'C', 'C')"#),
            "{sql}"
        );
    }

    #[test]
    fn a_page_depends_on_its_relations_order_joins_and_lists() {
        let plan = read("stock", "order_by=stock_variant.barcode", "");
        assert_eq!(
            page_tables(&plan, &Viewer::admin()),
            vec!["brand", "product", "stock", "variant", "warehouse"]
        );
        let plan = read("user", "fields=email,detail.companies", "");
        assert_eq!(
            page_tables(&plan, &Viewer::admin()),
            vec!["user_company", "users"]
        );
    }

    #[test]
    fn a_few_known_rows_look_their_relations_up_one_by_one() {
        let plan = read("stock", "stock_variant.barcode=501023@", "");
        let ids = vec!["a".to_string(), "B".to_string()];
        let sql = sqlite(&any_satisfying(plan.resource, &ids, &plan.full_filter()));
        assert!(
            sql.starts_with(r#"SELECT "t0"."id" FROM "stock" AS "t0" WHERE "t0"."id" IN ('A', 'B') AND EXISTS(SELECT 1 FROM "variant" WHERE "variant"."id" = "t0"."fk_variant" AND "#),
            "{sql}"
        );
        assert!(sql.ends_with("LIMIT 1"), "{sql}");
        // Through a to-many relation, the related records point back at the row.
        let plan = read("variant", "variant_stock.inStock=3", "");
        let sql = sqlite(&any_satisfying(plan.resource, &ids, &plan.full_filter()));
        assert!(
            sql.contains(
                r#"EXISTS(SELECT 1 FROM "stock" WHERE "stock"."fk_variant" = "t0"."id" AND "in_stock" = 3)"#
            ),
            "{sql}"
        );
        // A negated condition keeps its semi-join (a missing record satisfies it).
        let plan = read(
            "stock",
            "",
            r##"{"query":[{"field":"stock_variant.barcode","operator":"#","value":"501023"}]}"##,
        );
        let sql = sqlite(&any_satisfying(plan.resource, &ids, &plan.full_filter()));
        assert!(!sql.contains("EXISTS"), "{sql}");
    }

    #[test]
    fn tables_read_follow_the_filter() {
        let plan = read("stock", "stock_variant.variant_product.fk_brand=X", "");
        assert_eq!(
            tables_read(plan.resource, &plan.full_filter()),
            vec!["product", "stock", "variant"]
        );
    }

    fn company_read(resource: &str, query: &str) -> (ReadPlan, Viewer) {
        let viewer = Viewer::new(
            brandhub_catalog::UserType::Company,
            "U1",
            vec!["C1".to_string()],
            None,
            None,
        );
        let plan = plan_read(
            catalog().resource(resource).unwrap(),
            &parse_query_string(query).unwrap(),
            &viewer,
        )
        .unwrap();
        (plan, viewer)
    }

    #[test]
    fn order_keys_through_relations_join_only_related_records_in_scope() {
        let (plan, viewer) = company_read("file", "fields=id&order_by=file_user.detail.lang");
        let sql = sqlite(&page_statement(&plan, PageStrategy::InOrder));
        // The user joins only when the company user may see it; otherwise it sorts as null.
        assert!(
            sql.contains(r#"LEFT JOIN "users" AS "j1" ON "j1"."id" = "t0"."fk_user" AND ("j1"."id" = 'U1' OR "j1"."fk_company" = 'C1' OR "j1"."id" IN (SELECT "user_id" FROM "user_company" WHERE "company_id" = 'C1')) WHERE"#),
            "{sql}"
        );
        assert!(sql.contains(r#""j1"."detail_lang_ci" AS "k0""#), "{sql}");
        // A user outside scope sorts as unset: first, on PostgreSQL too (whose NULLs are last).
        let sql = page_statement(&plan, PageStrategy::InOrder).to_string(PostgresQueryBuilder);
        assert!(
            sql.contains(r#"ORDER BY "j1"."detail_lang_ci" ASC NULLS FIRST"#),
            "{sql}"
        );
        // What the scope reads makes the page's tables, so a cached page follows it.
        let tables = page_tables(&plan, &viewer);
        assert!(tables.contains(&"user_company"), "{tables:?}");
        // Admins see every user: a plain join.
        let plan = read("file", "fields=id&order_by=file_user.detail.lang", "");
        let sql = sqlite(&page_statement(&plan, PageStrategy::InOrder));
        assert!(
            sql.contains(r#"LEFT JOIN "users" AS "j1" ON "j1"."id" = "t0"."fk_user" ORDER BY"#),
            "{sql}"
        );
    }

    /// The deepest nesting of parentheses in an SQL text.
    fn nesting(sql: &str) -> usize {
        let mut depth = 0usize;
        let mut deepest = 0;
        for c in sql.chars() {
            match c {
                '(' => {
                    depth += 1;
                    deepest = Ord::max(deepest, depth);
                }
                ')' => depth -= 1,
                _ => {}
            }
        }
        deepest
    }

    #[test]
    fn many_conditions_nest_logarithmically() {
        let conditions: Vec<String> = (0..100)
            .map(|i| {
                let conjunction = if i == 0 { "" } else { r#","conjunction":"|""# };
                format!(r#"{{"field":"code","operator":"=","value":"a{i}@b"{conjunction}}}"#)
            })
            .collect();
        let plan = read(
            "product",
            "fields=id",
            &format!(r#"{{"query":[{}]}}"#, conditions.join(",")),
        );
        let sql = sqlite(&page_statement(&plan, PageStrategy::InOrder));
        assert_eq!(sql.matches(" LIKE ").count(), 100, "{sql}");
        assert!(nesting(&sql) <= 12, "nested {} deep: {sql}", nesting(&sql));
        let depth = crate::plan::cost::depth(&plan.filter);
        assert!(
            depth >= 7 + 8,
            "the estimate counts the tree and the leaf: {depth}"
        );
    }
}
