//! A count's statement.

use super::*;
use crate::plan::CountPlan;
use sea_query::{Alias, Asterisk, Expr, Func, Query, SelectStatement};

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
