//! Sync by cursor (`changedSince`, docs/API.md, "Sync by cursor"): the cursor a client sends
//! back, and the statements that find what changed after it.
//!
//! Every resource table has a change column ([`CHANGE_COLUMN`]) that the database sets on each
//! insert and update (PostgreSQL: the writing transaction's id; SQLite, whose writers take
//! turns: a counter). A deleted row, or one whose scope columns changed, leaves a tombstone
//! ([`TOMBSTONE_TABLE`]) with the same mark and the scope columns it had. A sync reads in two
//! phases:
//! - **full** (`changedSince=0`): every record in scope and matching, by id, after noting the
//!   *horizon*: every change below it was committed before the first page was read;
//! - **changes**: rows and tombstones whose mark is at or past the horizon, in the order of
//!   (mark, id), only below the current horizon — on PostgreSQL the oldest transaction still
//!   running, so a transaction that commits late is never passed by a cursor.

use crate::plan::{Predicate, ReadPlan};
use crate::sql::{ROOT, Table, own_columns, predicate_expr};
use brandhub_problem::{ApiError, ApiResult, Code};
use sea_query::{Alias, Expr, ExprTrait, Order, Query, SelectStatement};

/// The column every resource table carries: the mark of the write that last changed the row.
pub const CHANGE_COLUMN: &str = "bh_change";

/// The table of tombstones: rows deleted, or moved out of a caller's scope, with their marks.
pub const TOMBSTONE_TABLE: &str = "bh_tombstone";

/// How long tombstones are kept, and so how old a cursor may be.
pub const KEPT_MILLIS: i64 = 30 * 24 * 3_600_000;

/// Where a sync stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Position {
    /// Reading every record by id, after `after` (`""` at first); what changed from `horizon`
    /// on comes next. A horizon of 0 is not yet taken (a sync from `changedSince=0`).
    Full { horizon: i64, after: String },
    /// Reading the changes after (`change`, `after`).
    Changes { change: i64, after: String },
}

/// A cursor: where a sync stands, when it was handed out, and what it is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub position: Position,
    /// When it was handed out (milliseconds since 1970).
    pub issued_millis: i64,
    /// The resource, caller and filters it was made for ([`binding`]).
    pub binding: String,
    /// The caller's scope when it was made: another one is `cursor_reset`.
    pub scope: String,
}

/// What a cursor is bound to: the resource, the caller and the request's filters (not its
/// page size or fields). Short and stable: a hex digest.
pub fn binding(resource: &str, caller: &str, request: &crate::request::ReadRequest) -> String {
    digest(&format!(
        "{resource}\u{1f}{caller}\u{1f}{:?}\u{1f}{:?}",
        request.filters, request.body
    ))
}

/// A short hex digest of `text`.
pub fn digest(text: &str) -> String {
    use sha2::{Digest, Sha256};
    let hash = Sha256::digest(text.as_bytes());
    hash[..8].iter().map(|b| format!("{b:02x}")).collect()
}

fn refused(detail: &str) -> ApiError {
    ApiError::new(
        Code::InvalidParameter,
        format!("changedSince: {detail} Start again with changedSince=0."),
    )
    .with_field("changedSince")
}

impl Cursor {
    /// The cursor as sent: opaque, URL-safe (hex of its parts).
    pub fn encode(&self) -> String {
        let (kind, mark, after) = match &self.position {
            Position::Full { horizon, after } => ("f", horizon, after),
            Position::Changes { change, after } => ("c", change, after),
        };
        let text = format!(
            "1|{kind}|{mark}|{after}|{}|{}|{}",
            self.issued_millis, self.binding, self.scope
        );
        text.bytes().map(|b| format!("{b:02x}")).collect()
    }

    /// A cursor sent back, or 400 when it is none that brandhub makes.
    pub fn decode(sent: &str) -> ApiResult<Cursor> {
        let bad = || refused("this is not a cursor brandhub handed out.");
        if !sent.len().is_multiple_of(2) || sent.len() > 1024 {
            return Err(bad());
        }
        let bytes: Option<Vec<u8>> = (0..sent.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(sent.get(i..i + 2)?, 16).ok())
            .collect();
        let text = bytes
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(bad)?;
        let parts: Vec<&str> = text.split('|').collect();
        let [version, kind, mark, after, issued, binding, scope] = parts[..] else {
            return Err(bad());
        };
        let mark: i64 = mark.parse().map_err(|_| bad())?;
        let after = after.to_string();
        let position = match (version, kind) {
            ("1", "f") => Position::Full {
                horizon: mark,
                after,
            },
            ("1", "c") => Position::Changes {
                change: mark,
                after,
            },
            _ => return Err(bad()),
        };
        Ok(Cursor {
            position,
            issued_millis: issued.parse().map_err(|_| bad())?,
            binding: binding.to_string(),
            scope: scope.to_string(),
        })
    }

    /// The position `changedSince` asks to start from: `0` is the beginning, anything else a
    /// cursor (checked by the caller against its binding, scope and age).
    pub fn start(sent: &str) -> ApiResult<Option<Cursor>> {
        if sent.trim() == "0" {
            return Ok(None);
        }
        Cursor::decode(sent.trim()).map(Some)
    }

    /// 400 when the cursor was made for another resource, caller or filters.
    pub fn check_binding(&self, expected: &str) -> ApiResult<()> {
        if self.binding == expected {
            Ok(())
        } else {
            Err(refused(
                "this cursor was made for another resource, caller or filters.",
            ))
        }
    }

    /// Whether the cursor is older than tombstones are kept (410 `cursor_expired`).
    pub fn expired(&self, now_millis: i64) -> bool {
        now_millis - self.issued_millis > KEPT_MILLIS
    }
}

/// The requests `changedSince` may not be combined with: an order, a page, an export.
pub fn check_request(request: &crate::request::ReadRequest) -> ApiResult<()> {
    let refuse = |name: &str, why: &str| {
        Err(ApiError::new(
            Code::InvalidParameter,
            format!("changedSince cannot be combined with {name}: {why}"),
        )
        .with_field(name))
    };
    if !request.order_by.is_empty() {
        return refuse("order_by", "changes come in the order they were made.");
    }
    if request.page.is_some() {
        return refuse("page", "send the cursor of each answer for the next.");
    }
    if let Some(format) = request.format
        && format != crate::request::Format::Json
    {
        return refuse("format", "a sync answers JSON; export the feed without it.");
    }
    Ok(())
}

fn col(name: &str) -> Expr {
    Expr::col((Alias::new(ROOT), Alias::new(name)))
}

/// Narrows the statement over the aliased root to what `predicate` admits.
fn narrowed(select: &mut SelectStatement, predicate: &Predicate) {
    if !predicate.is_always() {
        select.and_where(predicate_expr(predicate, Table::Aliased(ROOT), false));
    }
}

/// "After (`change`, `after`) and below `horizon`" over the aliased root.
fn after_mark(select: &mut SelectStatement, change: i64, after: &str, horizon: i64) {
    select
        .and_where(
            col(CHANGE_COLUMN)
                .gt(change)
                .or(col(CHANGE_COLUMN).eq(change).and(col("id").gt(after))),
        )
        .and_where(col(CHANGE_COLUMN).lt(horizon))
        .order_by_expr(col(CHANGE_COLUMN), Order::Asc)
        .order_by_expr(col("id"), Order::Asc);
}

/// The full phase: at most `limit` records in scope and matching, after `after`, by id, with
/// the columns of the plan's page (`node_columns`, the id first), so that a full page needs no
/// second statement.
pub fn full_statement(plan: &ReadPlan, after: &str, limit: u64) -> SelectStatement {
    let mut select = Query::select();
    select.from_as(Alias::new(plan.resource.table), Alias::new(ROOT));
    for field in crate::sql::node_columns(&plan.selection, None) {
        select.expr(col(field.column.as_str()));
    }
    narrowed(&mut select, &plan.scope);
    narrowed(&mut select, &plan.filter);
    select
        .and_where(col("id").gt(after))
        .order_by_expr(col("id"), Order::Asc)
        .limit(limit);
    select
}

/// Whether the request's filter reads only columns a tombstone keeps ([`scope_columns`]):
/// then a row that stopped matching it left a tombstone with the values it matched with, and
/// rows that do not match now need not be told.
fn judged_on_tombstones(plan: &ReadPlan) -> bool {
    let kept = scope_columns(plan.resource);
    own_columns(&plan.filter)
        .iter()
        .all(|c| c == "id" || kept.contains(c))
}

/// The changes phase, rows: the columns of the plan's page (`node_columns`, the id first),
/// then the mark and whether the row matches the request's filter (1 or 0), of at most
/// `limit` rows in scope changed after (`change`, `after`), below `horizon`. A row that does
/// not match is told as deleted (it may have matched before), unless the filter is [judged
/// on tombstones](judged_on_tombstones): then only matching rows come. The values and the
/// mark are read together, so the answer's records need no second statement and each is sent
/// as it was at its mark.
pub fn changed_statement(
    plan: &ReadPlan,
    change: i64,
    after: &str,
    horizon: i64,
    limit: u64,
) -> SelectStatement {
    let mut select = Query::select();
    let filtered = judged_on_tombstones(plan);
    // Bound as 64-bit integers, so that both backends answer a BIGINT.
    let matches: Expr = if plan.filter.is_always() || filtered {
        Expr::val(1i64)
    } else {
        Expr::case(
            predicate_expr(&plan.filter, Table::Aliased(ROOT), false),
            1i64,
        )
        .finally(0i64)
        .into()
    };
    select.from_as(Alias::new(plan.resource.table), Alias::new(ROOT));
    for field in crate::sql::node_columns(&plan.selection, None) {
        select.expr(col(field.column.as_str()));
    }
    select.expr(col(CHANGE_COLUMN)).expr(matches);
    narrowed(&mut select, &plan.scope);
    if filtered {
        narrowed(&mut select, &plan.filter);
    }
    after_mark(&mut select, change, after, horizon);
    select.limit(limit);
    select
}

/// The changes phase, tombstones: id and mark of at most `limit` tombstones of the plan's
/// resource after (`change`, `after`), below `horizon`, that the caller could see: its scope
/// judged over the columns each tombstone kept ([`scope_columns`]; `extract` reads one of them
/// from the tombstone's JSON, in the database's own dialect), and so is the request's filter
/// when it reads only those (a filter by warehouse, brand or store: a sync of one warehouse's
/// stock hears of that warehouse's deletions only).
pub fn tombstone_statement(
    plan: &ReadPlan,
    change: i64,
    after: &str,
    horizon: i64,
    limit: u64,
    extract: fn(&str) -> Expr,
) -> SelectStatement {
    let mut kept = Query::select();
    kept.from(Alias::new(TOMBSTONE_TABLE))
        .column(Alias::new("id"))
        .expr_as(Expr::col(Alias::new("change")), Alias::new(CHANGE_COLUMN))
        .and_where(Expr::col(Alias::new("table_name")).eq(plan.resource.table));
    for column in scope_columns(plan.resource) {
        kept.expr_as(extract(column), Alias::new(column.as_str()));
    }
    let mut select = Query::select();
    select
        .from_subquery(kept, Alias::new(ROOT))
        .expr(col("id"))
        .expr(col(CHANGE_COLUMN));
    narrowed(&mut select, &plan.scope);
    if judged_on_tombstones(plan) {
        narrowed(&mut select, &plan.filter);
    }
    after_mark(&mut select, change, after, horizon);
    select.limit(limit);
    select
}

/// The columns of a resource's own table that a tombstone keeps so that every caller's scope
/// can be judged over it later: those the scope rules of every user type read. Worked out once
/// per resource from the catalog (every sync call asks).
pub fn scope_columns(resource: &'static brandhub_catalog::Resource) -> &'static [String] {
    use brandhub_catalog::{UserType, catalog};
    use std::collections::HashMap;
    use std::sync::LazyLock;
    static KEPT: LazyLock<HashMap<&'static str, Vec<String>>> = LazyLock::new(|| {
        catalog()
            .resources()
            .iter()
            .map(|resource| {
                let mut columns = std::collections::BTreeSet::new();
                for user_type in UserType::ALL {
                    // Any ids will do: which columns a rule reads does not depend on them.
                    let viewer = crate::plan::Viewer::new(
                        user_type,
                        "X",
                        vec!["X".to_string()],
                        Some("X".to_string()),
                        Some("X".to_string()),
                    )
                    .with_sponsor(Some("X".to_string()));
                    columns.extend(own_columns(&viewer.scope(resource)));
                }
                columns.remove("id");
                (resource.table, columns.into_iter().collect())
            })
            .collect()
    });
    KEPT.get(resource.table).map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_query_string;
    use brandhub_catalog::catalog;

    fn cursor(position: Position) -> Cursor {
        Cursor {
            position,
            issued_millis: 1_765_000_000_000,
            binding: "0123456789abcdef".into(),
            scope: "fedcba9876543210".into(),
        }
    }

    #[test]
    fn a_cursor_comes_back_as_it_was_handed_out() {
        for position in [
            Position::Full {
                horizon: 0,
                after: String::new(),
            },
            Position::Full {
                horizon: 7_123,
                after: "0A1B".into(),
            },
            Position::Changes {
                change: 99,
                after: "FF".into(),
            },
        ] {
            let sent = cursor(position).encode();
            assert!(sent.bytes().all(|b| b.is_ascii_hexdigit()), "{sent}");
            assert_eq!(Cursor::decode(&sent).unwrap(), cursor_of(&sent));
        }
        fn cursor_of(sent: &str) -> Cursor {
            Cursor::decode(sent).unwrap()
        }
        assert_eq!(Cursor::start("0").unwrap(), None);
    }

    #[test]
    fn anything_else_is_400_naming_the_parameter() {
        for sent in ["", "xyz", "abc", "31", &"31".repeat(600), "317c637c"] {
            let error = Cursor::decode(sent).unwrap_err();
            assert_eq!(error.code, Code::InvalidParameter, "{sent}");
            assert_eq!(error.field.as_deref(), Some("changedSince"));
        }
    }

    #[test]
    fn a_cursor_is_bound_to_its_resource_caller_and_filters_and_ages() {
        let request = parse_query_string("status=active").unwrap();
        let other = parse_query_string("status=inactive").unwrap();
        let bound = binding("offer", "host|H", &request);
        assert_eq!(bound, binding("offer", "host|H", &request));
        assert_ne!(bound, binding("stock", "host|H", &request));
        assert_ne!(bound, binding("offer", "host|G", &request));
        assert_ne!(bound, binding("offer", "host|H", &other));
        let mut c = cursor(Position::Changes {
            change: 1,
            after: String::new(),
        });
        c.binding = bound.clone();
        assert!(c.check_binding(&bound).is_ok());
        assert!(
            c.check_binding(&binding("offer", "host|G", &request))
                .is_err()
        );
        assert!(!c.expired(c.issued_millis + KEPT_MILLIS));
        assert!(c.expired(c.issued_millis + KEPT_MILLIS + 1));
    }

    #[test]
    fn order_pages_and_exports_are_refused_with_it() {
        for query in ["order_by=id", "page=2", "format=csv"] {
            let request = parse_query_string(query).unwrap();
            assert_eq!(
                check_request(&request).unwrap_err().code,
                Code::InvalidParameter,
                "{query}"
            );
        }
        assert!(check_request(&parse_query_string("pageSize=10&format=json").unwrap()).is_ok());
    }

    #[test]
    fn tombstones_keep_the_columns_every_scope_rule_reads() {
        let offer = catalog().get(brandhub_catalog::Res::Offer);
        let columns = scope_columns(offer);
        for column in ["fk_brand", "fk_store"] {
            assert!(columns.iter().any(|c| c == column), "{columns:?}");
        }
        let stock = catalog().get(brandhub_catalog::Res::Stock);
        assert!(
            scope_columns(stock).iter().any(|c| c == "fk_warehouse"),
            "{:?}",
            scope_columns(stock)
        );
    }
}
