//! A page's statement: the order keys and their joins, and how a page is found (by the
//! order, or matches first).

use super::*;
use crate::plan::path::Hop;
use crate::plan::{OrderKey, Predicate, ReadPlan, Selection, Test};
use crate::request::Direction;
use brandhub_catalog::{Field, FieldType, RelationKind};
use sea_query::{
    Alias, CommonTableExpression, Expr, ExprTrait, JoinType, NullOrdering, Order, Query,
    SelectStatement, UnionType, Value, WithClause,
};
use std::collections::BTreeSet;

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

pub(super) struct Joins {
    /// (relation path, alias) for each LEFT JOIN, in join order.
    pub(super) aliases: Vec<(Vec<&'static str>, String)>,
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

pub(super) fn order(direction: Direction) -> Order {
    match direction {
        Direction::Ascending => Order::Asc,
        Direction::Descending => Order::Desc,
    }
}

/// How one order key sorts: the expression, its direction, and where unset values go
/// (`None` when the value can never be unset).
pub(super) struct SortKey {
    pub(super) expr: Expr,
    pub(super) order: Order,
    pub(super) nulls: Option<NullOrdering>,
}

pub(super) fn sort_key(
    statement: &mut SelectStatement,
    joins: &mut Joins,
    key: &OrderKey,
) -> SortKey {
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

pub(super) fn apply_order(
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
pub(super) const PAGE: &str = "page";
/// The name of the matches table of the `MatchesFirst` page and count statements.
pub(super) const MATCHES: &str = "matches";

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
    /// The plan's scope is a few parents' records (its scope a foreign key equal to one of
    /// them, [`scope_parents`]): each parent's records walked in id order on the foreign
    /// key's index, as far as the page reaches, and those few sorted. Best for a page in id
    /// order of a scope whose records cluster by parent (a host's offers, made store by
    /// store), which a walk of the whole table in order meets late (decision 0033).
    ByParents,
}

/// At most this many parents make a page by parents ([`PageStrategy::ByParents`]).
pub const MOST_PARENTS: u64 = 16;

/// At most this many values of the requested filter, repeated for each of
/// [`MOST_PARENTS`] parents, in a page by parents.
const MOST_VALUES_BY_PARENTS: u64 = 1_000;

/// When a plan's scope is one condition on the record a to-one link leads to (a host's
/// offers: `offer_store.fk_host`) and its page is in id order: the link's foreign key and
/// the statement reading the ids of the parents in scope, at most [`MOST_PARENTS`] + 1 of
/// them. The page can then be read by parents (`ReadPlan::scoped_to_parents`).
pub fn scope_parents(plan: &ReadPlan) -> Option<(&'static Field, SelectStatement)> {
    if !plan.order.is_empty() {
        return None;
    }
    let mut scope = &plan.scope;
    let leaf = loop {
        match scope {
            Predicate::All(items) | Predicate::Any(items) if items.len() == 1 => {
                scope = &items[0];
            }
            Predicate::Leaf(leaf) => break leaf,
            _ => return None,
        }
    };
    let [hop] = leaf.path.hops.as_slice() else {
        return None;
    };
    let RelationKind::ToOne { fk } = hop.relation.kind else {
        return None;
    };
    if !matches!(leaf.test, Test::OneOf(_)) {
        return None;
    }
    // Each parent's walk repeats the requested filter: one with many values stays a walk in
    // order, so that no statement holds more values than a database binds.
    if !plan.filter.is_always() {
        let (_, values) = Query::select()
            .expr(Expr::val(1))
            .and_where(predicate_expr(&plan.filter, Table::Aliased(ROOT), false))
            .build(sea_query::SqliteQueryBuilder);
        if values.0.len() as u64 * MOST_PARENTS > MOST_VALUES_BY_PARENTS {
            return None;
        }
    }
    let fk = hop.from.field_named(fk)?;
    let mut condition = field_expr(leaf.path.field, &leaf.test, Table::Bare, false);
    if let Some(scope) = leaf.path.hop_scopes.first().filter(|s| !s.is_always()) {
        condition = condition.and(predicate_expr(scope, Table::Bare, false));
    }
    let statement = Query::select()
        .column(Alias::new("id"))
        .from(Alias::new(hop.to.table))
        .and_where(condition)
        .limit(MOST_PARENTS + 1)
        .to_owned();
    Some((fk, statement))
}

/// The foreign key column and parent ids of a scope made by `ReadPlan::scoped_to_parents`.
fn parents_of(scope: &Predicate) -> Option<(&str, Vec<Value>)> {
    let Predicate::Leaf(leaf) = scope else {
        return None;
    };
    let Test::OneOf(parents) = &leaf.test else {
        return None;
    };
    leaf.path.hops.is_empty().then(|| {
        (
            leaf.path.field.column.as_str(),
            parents.iter().map(operand_value).collect(),
        )
    })
}

/// The ids of a page read by parents ([`PageStrategy::ByParents`]): for each parent, its
/// records that pass the filter, in id order, as far as the page reaches (`reach`), on the
/// foreign key's index (which ends in the id); then those few in order.
fn by_parents(plan: &ReadPlan, tie: Order) -> SelectStatement {
    let (fk, parents) = parents_of(&plan.scope).expect("a plan scoped to its parents");
    let reach = plan.offset() + plan.page_size;
    let mut union: Option<SelectStatement> = None;
    for (i, parent) in parents.into_iter().enumerate() {
        let mut branch = Query::select();
        branch
            .from_as(Alias::new(plan.resource.table), Alias::new(ROOT))
            .expr_as(
                Expr::col((Alias::new(ROOT), Alias::new("id"))),
                Alias::new("id"),
            )
            .and_where(Expr::col((Alias::new(ROOT), Alias::new(fk))).eq(parent));
        if !plan.filter.is_always() {
            branch.and_where(predicate_expr(&plan.filter, Table::Aliased(ROOT), false));
        }
        branch
            .order_by_expr(Expr::col((Alias::new(ROOT), Alias::new("id"))), tie.clone())
            .limit(reach);
        // A member of a compound select may not have its own order or limit in SQLite:
        // each is read from a subquery.
        let member = Query::select()
            .column(Alias::new("id"))
            .from_subquery(branch, Alias::new(format!("p{i}")))
            .to_owned();
        union = Some(match union {
            None => member,
            Some(mut union) => {
                union.union(UnionType::All, member);
                union
            }
        });
    }
    let mut sorted = Query::select();
    sorted
        .column(Alias::new("id"))
        .from_subquery(
            union.expect("a page by parents has parents"),
            Alias::new(MATCHES),
        )
        .order_by(Alias::new("id"), tie);
    sorted
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
pub(super) fn matches_cte(query: SelectStatement) -> WithClause {
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
        PageStrategy::ByParents => (by_parents(plan, tie.clone()), None),
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
