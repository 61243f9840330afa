//! Sync by cursor (`changedSince`, docs/API.md, "Sync by cursor"): what changed in a
//! resource after a cursor, as the caller may see it. The database marks every write
//! ([`triggers`]); the statements that read the marks are in [`brandhub_query::changes`].

mod triggers;

pub use triggers::{CLOCK_TABLE, statements, update_of};

use crate::db::{Backend, Kind, Store, Timing};
use crate::error::StoreResult;
use crate::read::PageData;
use crate::versions::Versions;
use brandhub_catalog::{Anchor, Cell, Res, UserType, catalog};
use brandhub_query::changes::{
    KEPT_MILLIS, Position, TOMBSTONE_TABLE, changed_statement, digest, full_statement,
    tombstone_statement,
};
use brandhub_query::plan::{ReadPlan, Viewer};
use sea_query::{Alias, Expr, ExprTrait, Query};
use std::collections::{HashMap, HashSet};

/// One entry of a sync's answer, in the order of the changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A record in scope that matches: sent with its current values.
    Record(String),
    /// A record deleted, moved out of the caller's scope, or no longer matching.
    Deleted(String),
}

impl Entry {
    /// The record's id.
    pub fn id(&self) -> &str {
        match self {
            Entry::Record(id) | Entry::Deleted(id) => id,
        }
    }
}

/// What a sync answers: the records' rows, the entries in order, where the next call starts,
/// and whether changes remain.
#[derive(Debug)]
pub struct Changes {
    pub data: PageData,
    pub entries: Vec<Entry>,
    pub next: Position,
    pub more: bool,
}

/// A change found: its mark, whether it is a tombstone, the id, whether it matches, and a
/// row's values (the page's columns) as they were at its mark.
#[derive(Debug, Clone, PartialEq)]
struct Found {
    change: i64,
    id: String,
    /// Tombstones first: a row moved out of one scope and into another (the same mark and
    /// id) ends as it is now.
    row: bool,
    matches: bool,
    values: Vec<Cell>,
}

impl Found {
    /// The order of changes: by mark, then id, tombstones first.
    fn key(&self) -> (i64, &str, bool) {
        (self.change, &self.id, self.row)
    }
}

fn text(cell: &Cell) -> String {
    cell.as_text().unwrap_or_default().to_string()
}

fn integer(cell: &Cell) -> i64 {
    cell.as_integer().unwrap_or(0)
}

/// A tombstone's scope column, read from its JSON in the database's dialect.
fn pg_extract(column: &str) -> Expr {
    Expr::cust(format!("(\"scope\"::jsonb ->> '{column}')"))
}

fn sqlite_extract(column: &str) -> Expr {
    Expr::cust(format!("json_extract(\"scope\", '$.{column}')"))
}

/// Keeps the last entry of each id: it says how the record is now.
fn last_of_each(entries: Vec<Entry>) -> Vec<Entry> {
    let mut seen = HashSet::new();
    let mut kept: Vec<Entry> = entries
        .into_iter()
        .rev()
        .filter(|e| seen.insert(e.id().to_string()))
        .collect();
    kept.reverse();
    kept
}

/// The first `room` changes of the merged streams, and a run of the same (mark, id) past it
/// (a move's tombstone and row are never split: the cursor passes both).
fn first_changes(mut found: Vec<Found>, room: usize) -> (Vec<Found>, bool) {
    found.sort_by(|a, b| a.key().cmp(&b.key()));
    let mut taken = found.len().min(room);
    while taken > 0
        && taken < found.len()
        && (found[taken].change, &found[taken].id)
            == (found[taken - 1].change, &found[taken - 1].id)
    {
        taken += 1;
    }
    let more = found.len() > taken;
    found.truncate(taken);
    (found, more)
}

impl Store {
    /// Where changes are final: marks below it belong to writes that have all ended. On
    /// PostgreSQL the oldest transaction still running; SQLite's writers take turns, so every
    /// committed mark is.
    async fn horizon(&self, timing: &Timing) -> StoreResult<i64> {
        match self.backend() {
            Backend::Postgres => {
                let select = Query::select()
                    .expr(Expr::cust("txid_snapshot_xmin(txid_current_snapshot())"))
                    .to_owned();
                self.fetch_integer(&select, timing).await
            }
            Backend::Sqlite => Ok(i64::MAX),
        }
    }

    /// Where a full sync's changes start: every mark below it was committed before.
    async fn start_of_full(&self, timing: &Timing) -> StoreResult<i64> {
        match self.backend() {
            Backend::Postgres => self.horizon(timing).await,
            Backend::Sqlite => {
                let select = Query::select()
                    .column(Alias::new("n"))
                    .from(Alias::new(CLOCK_TABLE))
                    .to_owned();
                Ok(self.fetch_integer(&select, timing).await? + 1)
            }
        }
    }

    /// Up to a page of what changed after `from` among the plan's records: first, for a full
    /// sync, every record by id; then rows and tombstones by mark. Each statement reads the
    /// page's columns of the records it finds; their related records are read as for a page.
    pub async fn read_changes(
        &self,
        plan: &ReadPlan,
        viewer: &Viewer,
        from: Position,
        versions: &Versions,
        timing: &Timing,
    ) -> StoreResult<Changes> {
        let limit = Ord::max(plan.page_size, 1) as usize;
        let mut values: HashMap<String, Vec<Cell>> = HashMap::new();
        let (mut entries, change, after) = match from {
            Position::Full { horizon, after } => {
                let horizon = match horizon {
                    0 => self.start_of_full(timing).await?,
                    noted => noted,
                };
                let columns = brandhub_query::sql::node_columns(&plan.selection, None);
                let mut rows = self
                    .fetch(
                        &full_statement(plan, &after, limit as u64 + 1),
                        &crate::read::kinds(&columns),
                        timing,
                    )
                    .await?;
                if rows.len() > limit {
                    // A full page of the full phase: its rows are the answer's records.
                    rows.truncate(limit);
                    let ids: Vec<String> = rows.iter().map(|r| text(&r[0])).collect();
                    let next = Position::Full {
                        horizon,
                        after: ids.last().cloned().unwrap_or_default(),
                    };
                    let data = self
                        .page_of_rows(plan, rows, viewer, versions, timing)
                        .await?;
                    return Ok(Changes {
                        data,
                        entries: ids.into_iter().map(Entry::Record).collect(),
                        next,
                        more: true,
                    });
                }
                let ids = rows.iter().map(|r| Entry::Record(text(&r[0]))).collect();
                values.extend(rows.into_iter().map(|r| (text(&r[0]), r)));
                (ids, horizon, String::new())
            }
            Position::Changes { change, after } => (Vec::new(), change, after),
        };
        let room = limit - entries.len();
        let (found, more) = match room {
            0 => (Vec::new(), true),
            _ => {
                self.changes_after(plan, change, &after, room, timing)
                    .await?
            }
        };
        let next = match found.last() {
            Some(last) => Position::Changes {
                change: last.change,
                after: last.id.clone(),
            },
            None => Position::Changes { change, after },
        };
        for f in found {
            entries.push(match f.row && f.matches {
                true => {
                    values.insert(f.id.clone(), f.values);
                    Entry::Record(f.id)
                }
                false => Entry::Deleted(f.id),
            });
        }
        let entries = last_of_each(entries);
        let rows: Vec<Vec<Cell>> = entries
            .iter()
            .filter_map(|e| match e {
                Entry::Record(id) => values.remove(id),
                Entry::Deleted(_) => None,
            })
            .collect();
        let data = match rows.is_empty() {
            true => PageData {
                root: Default::default(),
                found: 0,
            },
            false => {
                self.page_of_rows(plan, rows, viewer, versions, timing)
                    .await?
            }
        };
        Ok(Changes {
            data,
            entries,
            next,
            more,
        })
    }

    /// The first `room` rows and tombstones changed after (`change`, `after`), below the
    /// horizon, and whether more remain.
    async fn changes_after(
        &self,
        plan: &ReadPlan,
        change: i64,
        after: &str,
        room: usize,
        timing: &Timing,
    ) -> StoreResult<(Vec<Found>, bool)> {
        let horizon = self.horizon(timing).await?;
        let wanted = room as u64 + 1;
        let mut kinds =
            crate::read::kinds(&brandhub_query::sql::node_columns(&plan.selection, None));
        kinds.extend([Kind::Integer, Kind::Integer]);
        let rows = self
            .fetch(
                &changed_statement(plan, change, after, horizon, wanted),
                &kinds,
                timing,
            )
            .await?;
        let extract = match self.backend() {
            Backend::Postgres => pg_extract,
            Backend::Sqlite => sqlite_extract,
        };
        let tombstones = self
            .fetch(
                &tombstone_statement(plan, change, after, horizon, wanted, extract),
                &[Kind::Text, Kind::Integer],
                timing,
            )
            .await?;
        let found: Vec<Found> = rows
            .into_iter()
            .map(|mut values| {
                let matches = values.pop().as_ref().map(integer) == Some(1);
                let change = values.pop().as_ref().map_or(0, integer);
                Found {
                    change,
                    row: true,
                    id: text(&values[0]),
                    matches,
                    values,
                }
            })
            .chain(tombstones.iter().map(|r| Found {
                change: integer(&r[1]),
                row: false,
                id: text(&r[0]),
                matches: false,
                values: Vec::new(),
            }))
            .collect();
        Ok(first_changes(found, room))
    }

    /// What the caller's scope is made of, as a digest: its own ids (user, companies, host,
    /// warehouse, sponsor) and, for a host, its stores' brand stores (which brands and
    /// warehouses it sees). A cursor made under another one is `cursor_reset`.
    pub async fn scope_fingerprint(&self, viewer: &Viewer, timing: &Timing) -> StoreResult<String> {
        let mut text = viewer.cache_key();
        if viewer.user_type() == UserType::Host {
            let brand_store = catalog().get(Res::BrandStore);
            let store = catalog().get(Res::Store);
            let column = |resource: &brandhub_catalog::Resource, name: &str| {
                Alias::new(
                    resource
                        .field_named(name)
                        .expect("a field of the catalog")
                        .column
                        .as_str(),
                )
            };
            let stores = Query::select()
                .column(Alias::new("id"))
                .from(Alias::new(store.table))
                .and_where(
                    Expr::col(column(store, "fk_host")).is_in(viewer.anchor_ids(Anchor::Host)),
                )
                .to_owned();
            let select = Query::select()
                .column(Alias::new("id"))
                .column(column(brand_store, "fk_store"))
                .column(column(brand_store, "fk_brand"))
                .column(column(brand_store, "fk_warehouse"))
                .from(Alias::new(brand_store.table))
                .and_where(Expr::col(column(brand_store, "fk_store")).in_subquery(stores))
                .order_by(Alias::new("id"), sea_query::Order::Asc)
                .to_owned();
            let rows = self
                .fetch(
                    &select,
                    &[Kind::Text, Kind::Text, Kind::Text, Kind::Text],
                    timing,
                )
                .await?;
            for row in rows {
                for cell in row {
                    text.push('|');
                    text.push_str(cell.as_text().unwrap_or_default());
                }
            }
        }
        Ok(digest(&text))
    }

    /// Removes tombstones older than they are kept (a cursor that old is `cursor_expired`).
    pub async fn prune_tombstones(&self, now_millis: i64) -> StoreResult<u64> {
        let delete = Query::delete()
            .from_table(Alias::new(TOMBSTONE_TABLE))
            .and_where(Expr::col(Alias::new("deleted_millis")).lt(now_millis - KEPT_MILLIS))
            .to_owned();
        self.execute_untracked(TOMBSTONE_TABLE, &delete).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(change: i64, row: bool, id: &str) -> Found {
        Found {
            change,
            row,
            id: id.into(),
            matches: true,
            values: Vec::new(),
        }
    }

    #[test]
    fn changes_come_by_mark_then_id_tombstones_first_and_a_move_is_never_split() {
        let all = vec![
            found(5, true, "B"),
            found(3, true, "C"),
            found(5, false, "B"),
            found(5, true, "A"),
            found(9, true, "A"),
        ];
        let (first, more) = first_changes(all.clone(), 3);
        assert_eq!(
            first,
            vec![
                found(3, true, "C"),
                found(5, true, "A"),
                found(5, false, "B"),
                found(5, true, "B")
            ]
        );
        assert!(more);
        let (every, more) = first_changes(all, 10);
        assert_eq!(every.len(), 5);
        assert!(!more);
    }

    #[tokio::test]
    async fn tombstones_older_than_they_are_kept_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::db::migrated_sqlite(&dir.path().join("prune.db"), 2).await;
        let now = 1_800_000_000_000_i64;
        for (id, age) in [("OLD", KEPT_MILLIS + 1), ("KEPT", KEPT_MILLIS - 1)] {
            store
                .execute_raw(&format!(
                    "INSERT INTO \"{TOMBSTONE_TABLE}\" (\"table_name\", \"id\", \"change\", \"deleted_millis\", \"scope\") \
                     VALUES ('stock', '{id}', 1, {}, '{{}}')",
                    now - age
                ))
                .await
                .unwrap();
        }
        assert_eq!(store.prune_tombstones(now).await.unwrap(), 1);
        let left = Query::select()
            .column(Alias::new("id"))
            .from(Alias::new(TOMBSTONE_TABLE))
            .to_owned();
        let rows = store
            .fetch(&left, &[Kind::Text], &Timing::default())
            .await
            .unwrap();
        assert_eq!(rows, vec![vec![Cell::Text("KEPT".into())]]);
        store.close().await;
    }

    #[test]
    fn each_record_comes_once_as_it_is_last() {
        let entries = vec![
            Entry::Record("A".into()),
            Entry::Record("B".into()),
            Entry::Deleted("A".into()),
            Entry::Record("C".into()),
            Entry::Record("B".into()),
        ];
        assert_eq!(
            last_of_each(entries),
            vec![
                Entry::Deleted("A".into()),
                Entry::Record("C".into()),
                Entry::Record("B".into())
            ]
        );
    }
}
