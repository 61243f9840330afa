//! Per-table write versions: every committed write bumps the versions of the tables it wrote
//! (see [`crate::db::WriteTx::commit`]). A cached count is stamped with the sum of the versions
//! of the tables its query reads; versions only grow, so the sum changes exactly when one of
//! those tables was written, and a stale count is never served.

use sea_query::{Alias, Expr, ExprTrait, Func, Query, SelectStatement, UpdateStatement};

const TABLE: &str = "bh_table_version";

/// `UPDATE bh_table_version SET version = version + 1 WHERE table_name IN (…)`.
pub fn bump_statement(tables: &[&'static str]) -> UpdateStatement {
    Query::update()
        .table(Alias::new(TABLE))
        .value(
            Alias::new("version"),
            Expr::col(Alias::new("version")).add(1),
        )
        .and_where(Expr::col(Alias::new("table_name")).is_in(tables.iter().copied()))
        .to_owned()
}

/// `SELECT CAST(COALESCE(SUM(version), 0) AS BIGINT) FROM bh_table_version WHERE …`.
pub fn stamp_statement(tables: &[&'static str]) -> SelectStatement {
    Query::select()
        .expr(Func::cast_as(
            Func::coalesce([
                Func::sum(Expr::col(Alias::new("version"))).into(),
                Expr::val(0),
            ]),
            Alias::new("BIGINT"),
        ))
        .from(Alias::new(TABLE))
        .and_where(Expr::col(Alias::new("table_name")).is_in(tables.iter().copied()))
        .to_owned()
}
