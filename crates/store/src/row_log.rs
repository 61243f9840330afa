//! Which rows each write of a table wrote, by the version of the table's row it bumped: the
//! log that lets a cached page outlive writes that did not touch it ([`crate::page`]). A
//! table's own version ([`crate::versions`]) is held in one row per stripe
//! ([`crate::versions::STRIPES`]); each committed transaction that wrote the table bumps one
//! of them by one, and that row stays locked from the bump to the commit, so every version of
//! a stripe's row is one transaction's. That transaction logs the ids it wrote under the row's
//! name and new version, or one entry without an id when it cannot name them (inserts,
//! deletes, statements by other keys, more than [`LOGGED_ROWS`] rows). A reader that knows
//! each row's version when its page was made and each row's version now reads the entries
//! between, row by row: complete and all named, they are exactly the rows written since; a
//! version missing (pruned, or never logged) means "unknown".

use crate::db::{Kind, Store, Timing};
use crate::error::StoreResult;
use brandhub_catalog::Cell;
use sea_query::{
    Alias, CommonTableExpression, Cond, DeleteStatement, Expr, ExprTrait, InsertStatement, Query,
};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

/// The log's table.
pub const TABLE: &str = "bh_row_write";

/// The most ids one transaction logs for one table; beyond, it logs "unknown rows".
pub const LOGGED_ROWS: usize = 64;

/// The most versions of one table a reader looks back over; further back, rows are
/// "unknown" (recomputing is then as cheap as checking).
pub const LOOK_BACK: i64 = 256;

/// Every this many versions of a table, a writer deletes its entries older than
/// [`KEPT_VERSIONS`].
const PRUNE_EVERY: i64 = 128;
const KEPT_VERSIONS: i64 = 4 * LOOK_BACK;

/// The statements that create the log (bookkeeping, both backends).
pub fn statements() -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS \"{TABLE}\" (\"table_name\" TEXT NOT NULL, \"version\" BIGINT NOT NULL, \"row_id\" TEXT)"
        ),
        format!(
            "CREATE INDEX IF NOT EXISTS \"ix_{TABLE}\" ON \"{TABLE}\" (\"table_name\", \"version\")"
        ),
    ]
}

/// The rows a transaction wrote in one table: their ids while every write of the table named
/// them, else `None`.
pub(crate) type Written = Option<Vec<String>>;

/// The mark before the id of an inserted row in the log: a page that finds none of the rows
/// inserted since it was made (and no other row changed) still finds what it found.
const INSERTED: char = '+';

/// The log's entry for the inserted row `id`.
pub(crate) fn inserted(id: &str) -> String {
    format!("{INSERTED}{id}")
}

/// The rows written in one table over a span of its versions, as the log names them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rows {
    /// Their ids.
    pub ids: Vec<String>,
    /// Whether every one of them was inserted (none updated; deletes are never named).
    pub inserted_only: bool,
}

impl Rows {
    /// No rows (all of none inserted).
    fn none() -> Rows {
        Rows {
            ids: Vec::new(),
            inserted_only: true,
        }
    }

    fn add(&mut self, entry: &str) {
        match entry.strip_prefix(INSERTED) {
            Some(id) => self.ids.push(id.to_string()),
            None => {
                self.ids.push(entry.to_string());
                self.inserted_only = false;
            }
        }
    }
}

/// Adds rows written (`ids`, or `None` for rows a write cannot name) to what a transaction
/// wrote of a table.
pub(crate) fn note(written: &mut Written, ids: Option<&[&str]>) {
    match (written.as_mut(), ids) {
        (Some(known), Some(ids)) if known.len() + ids.len() <= LOGGED_ROWS => {
            for id in ids {
                if !known.iter().any(|k| k == id) {
                    known.push(id.to_string());
                }
            }
        }
        _ => *written = None,
    }
}

/// The entries of one committing transaction, each table it wrote (`written`) under the name
/// and new version of the table's row it bumped in `stripe`, as `versions` holds it: the
/// versions table itself after the bump (SQLite, where the transaction holds the only write
/// lock), or the bump's `RETURNING` rows as the common table expression [`bumped_versions`]
/// of the same statement (PostgreSQL: bump and log in one statement, so the version rows stay
/// locked for one round trip, not two).
pub(crate) fn log_statement(
    written: &[(&'static str, Written)],
    stripe: usize,
    versions: Versions,
) -> Option<InsertStatement> {
    if written.is_empty() {
        return None;
    }
    let mut rows: Vec<(String, Option<String>)> = Vec::new();
    for (table, ids) in written {
        let row = crate::versions::striped(table, stripe);
        match ids {
            Some(ids) if !ids.is_empty() => {
                rows.extend(ids.iter().map(|id| (row.to_string(), Some(id.clone()))))
            }
            _ => rows.push((row.to_string(), None)),
        }
    }
    let source = match versions {
        Versions::Table => crate::versions::TABLE,
        Versions::Bumped => BUMPED,
    };
    let mut select = Query::select();
    select
        .column((Alias::new(source), Alias::new("table_name")))
        .column((Alias::new(source), Alias::new("version")))
        .column((Alias::new("written"), Alias::new("column2")))
        .from_values(rows, Alias::new("written"))
        .from(Alias::new(source))
        .and_where(
            Expr::col((Alias::new(source), Alias::new("table_name")))
                .equals((Alias::new("written"), Alias::new("column1"))),
        );
    let mut insert = Query::insert();
    insert
        .into_table(Alias::new(TABLE))
        .columns([
            Alias::new("table_name"),
            Alias::new("version"),
            Alias::new("row_id"),
        ])
        .select_from(select)
        .expect("three columns from three");
    Some(insert.to_owned())
}

/// The name under which [`bumped_versions`] holds the new versions.
const BUMPED: &str = "bumped";

/// The bump as a common table expression returning the new versions, for a
/// [`log_statement`] under [`Versions::Bumped`] in the same statement.
pub(crate) fn bumped_versions(bump: &InsertStatement) -> CommonTableExpression {
    let mut returning = bump.clone();
    returning
        .returning(Query::returning().columns([Alias::new("table_name"), Alias::new("version")]));
    CommonTableExpression::new()
        .query(returning)
        .table_name(Alias::new(BUMPED))
        .to_owned()
}

/// Where [`log_statement`] finds the new versions.
pub(crate) enum Versions {
    /// In the versions table, bumped already by this transaction.
    Table,
    /// In [`bumped_versions`], a common table expression of the same statement.
    Bumped,
}

/// Commits of this process since it started, for pruning now and then.
static COMMITS: AtomicU64 = AtomicU64::new(0);

/// Every [`PRUNE_EVERY`]th commit of the process deletes the entries of the tables it wrote
/// that are older than [`KEPT_VERSIONS`]: for the row of each table it bumped in `stripe`, a
/// range of the log's index below the row's version now (read once, not per entry). Writes
/// take the stripes in turn, so every stripe's entries are pruned.
pub(crate) fn prune_statement(tables: &[&'static str], stripe: usize) -> Option<DeleteStatement> {
    let turn = COMMITS.fetch_add(1, Ordering::Relaxed) + 1;
    if tables.is_empty() || !turn.is_multiple_of(PRUNE_EVERY as u64) {
        return None;
    }
    let mut any = Cond::any();
    for table in tables
        .iter()
        .map(|table| crate::versions::striped(table, stripe))
    {
        let now = Query::select()
            .expr(Expr::col(Alias::new("version")).sub(KEPT_VERSIONS))
            .from(Alias::new(crate::versions::TABLE))
            .and_where(Expr::col(Alias::new("table_name")).eq(table))
            .to_owned();
        any = any.add(
            Cond::all()
                .add(Expr::col(Alias::new("table_name")).eq(table))
                .add(
                    Expr::col(Alias::new("version")).lt(Expr::SubQuery(None, Box::new(now.into()))),
                ),
        );
    }
    Some(
        Query::delete()
            .from_table(Alias::new(TABLE))
            .cond_where(any)
            .to_owned(),
    )
}

/// The versions of one row (`row`, [`crate::versions::striped`]) of the own version of
/// `table` to look between: after `since`, up to and including `until`.
#[derive(Debug, Clone, Copy)]
pub struct Span {
    pub table: &'static str,
    pub row: &'static str,
    pub since: i64,
    pub until: i64,
}

impl Store {
    /// The rows written in each span, by table (the spans of a table's version rows added
    /// up), or `None` if any span's rows are not all known (a write that could not name them,
    /// entries pruned, a span too long). One statement.
    pub async fn rows_written(
        &self,
        spans: &[Span],
        timing: &Timing,
    ) -> StoreResult<Option<HashMap<&'static str, Rows>>> {
        if spans.is_empty() {
            return Ok(Some(HashMap::new()));
        }
        if spans
            .iter()
            .any(|s| s.until <= s.since || s.until - s.since > LOOK_BACK)
        {
            return Ok(None);
        }
        let mut any = Cond::any();
        for span in spans {
            any = any.add(
                Cond::all()
                    .add(Expr::col(Alias::new("table_name")).eq(span.row))
                    .add(Expr::col(Alias::new("version")).gt(span.since))
                    .add(Expr::col(Alias::new("version")).lte(span.until)),
            );
        }
        let select = Query::select()
            .columns([
                Alias::new("table_name"),
                Alias::new("version"),
                Alias::new("row_id"),
            ])
            .from(Alias::new(TABLE))
            .cond_where(any)
            .to_owned();
        let rows = self
            .fetch(&select, &[Kind::Text, Kind::Integer, Kind::Text], timing)
            .await?;
        let mut versions: HashMap<&'static str, BTreeSet<i64>> = HashMap::new();
        let mut ids: HashMap<&'static str, Rows> = HashMap::new();
        for row in rows {
            let Some(span) = spans.iter().find(|s| row[0].as_text() == Some(s.row)) else {
                continue;
            };
            let Cell::Integer(version) = row[1] else {
                return Ok(None);
            };
            let Some(id) = row[2].as_text() else {
                return Ok(None);
            };
            versions.entry(span.row).or_default().insert(version);
            ids.entry(span.table).or_insert_with(Rows::none).add(id);
        }
        for span in spans {
            let logged = versions.get(span.row).map_or(0, BTreeSet::len) as i64;
            if logged != span.until - span.since {
                return Ok(None);
            }
        }
        Ok(Some(ids))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transaction_names_its_rows_until_one_write_cannot() {
        let mut written: Written = Some(Vec::new());
        note(&mut written, Some(&["A", "B"]));
        note(&mut written, Some(&["B"]));
        assert_eq!(written, Some(vec!["A".to_string(), "B".to_string()]));
        note(&mut written, None);
        assert_eq!(written, None);
        note(&mut written, Some(&["C"]));
        assert_eq!(written, None, "once unknown, a table's rows stay unknown");
        let many: Vec<String> = (0..=LOGGED_ROWS).map(|i| i.to_string()).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let mut written: Written = Some(Vec::new());
        note(&mut written, Some(&many));
        assert_eq!(written, None, "too many rows are logged as unknown");
    }

    #[test]
    fn old_entries_are_pruned_by_a_range_of_each_tables_versions() {
        use sea_query::SqliteQueryBuilder;
        // The turn counter is the process's: other tests may take turns meanwhile.
        let sql = std::iter::repeat_with(|| prune_statement(&["stock"], 0))
            .find_map(|prune| prune)
            .unwrap()
            .to_string(SqliteQueryBuilder);
        assert_eq!(
            sql,
            r#"DELETE FROM "bh_row_write" WHERE "table_name" = 'stock' AND "version" < (SELECT "version" - 1024 FROM "bh_table_version" WHERE "table_name" = 'stock')"#
        );
    }

    #[test]
    fn old_entries_are_pruned_now_and_then() {
        let pruned = (0..PRUNE_EVERY * 3)
            .filter(|_| prune_statement(&["stock"], 0).is_some())
            .count();
        assert!(pruned <= 3, "{pruned}");
        assert!(
            prune_statement(&[], 0).is_none(),
            "nothing written, nothing pruned"
        );
    }

    #[test]
    fn postgresql_bumps_and_logs_in_one_statement() {
        use sea_query::{PostgresQueryBuilder, SqliteQueryBuilder};
        let written = [("stock", Some(vec!["A".to_string()])), ("orders", None)];
        let bump = crate::versions::bump_statement(&["stock", "orders"], 2);
        let mut log = log_statement(&written, 2, Versions::Bumped).unwrap();
        log.with_cte(
            sea_query::WithClause::new()
                .cte(bumped_versions(&bump))
                .to_owned(),
        );
        let sql = log.to_string(PostgresQueryBuilder);
        assert!(
            sql.starts_with(r#"WITH "bumped" AS (INSERT INTO "bh_table_version""#),
            "{sql}"
        );
        assert!(
            sql.contains(r#"RETURNING "table_name", "version") INSERT INTO "bh_row_write""#),
            "{sql}"
        );
        assert!(
            sql.contains("('stock|2', 'A'), ('orders|2', NULL)"),
            "{sql}"
        );
        let sql = log_statement(&written, 0, Versions::Table)
            .unwrap()
            .to_string(SqliteQueryBuilder);
        assert!(sql.starts_with(r#"INSERT INTO "bh_row_write" ("table_name", "version", "row_id") SELECT "bh_table_version"."table_name""#), "{sql}");
    }

    #[test]
    fn inserted_rows_are_told_from_updated_ones() {
        let mut rows = Rows {
            ids: Vec::new(),
            inserted_only: true,
        };
        rows.add(&inserted("A"));
        assert_eq!(
            (rows.ids.clone(), rows.inserted_only),
            (vec!["A".to_string()], true)
        );
        rows.add("B");
        assert_eq!(rows.ids, vec!["A".to_string(), "B".to_string()]);
        assert!(!rows.inserted_only, "an update among them");
    }
}
