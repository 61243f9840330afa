//! Keeping a cached page through writes that did not touch it. A page's stamp changes with
//! every write of every table it reads ([`crate::versions`]), so one `PATCH` of one stock
//! record would make every cached stock page stale. When it does, the rows written since are
//! read from the log ([`crate::row_log`]) and the page is kept if none of them is a record it
//! shows and, where the write may have moved records in the page's order, none of them is a
//! record it finds: one small statement, or two, instead of searching, sorting and reading
//! the page again.
//!
//! Which records match must not have changed (the versions of the filter and scope stand);
//! a table the page reads but whose written rows cannot be compared with what it shows (a
//! list table, a to-many relation, a table a related record's scope joins through) must not
//! have been written.

use crate::db::Kind;
use crate::db::{Store, Timing};
use crate::error::StoreResult;
use crate::read::{NodeData, PageData};
use crate::row_log::Span;
use crate::versions::{
    Versions, columns_key, field_key, matching_keys, ordering_keys, rows_key, rows_of,
};
use brandhub_catalog::RelationKind;
use brandhub_query::plan::{ReadPlan, Selection, Viewer};
use brandhub_query::sql::{any_satisfying, page_tables, tables_read};
use sea_query::{Alias, Expr, ExprTrait, Query};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// What a kept page or listing was made from.
#[derive(Debug, Clone)]
pub(crate) struct Recheck {
    /// The versions deciding which records match, each as it was.
    matching: Vec<(&'static str, i64)>,
    /// The stamp of the versions of the fields the order reads.
    ordering: i64,
    /// The own version of every table the page reads, row by row ([`rows_of`]: the log of
    /// written rows is kept by the row a write bumped), as it was: table, row, version.
    tables: Vec<(&'static str, &'static str, i64)>,
    /// The ids the page shows, by table, of the tables whose written rows can be compared
    /// (shared by the renewed copies of a page kept through writes).
    shown: Arc<HashMap<&'static str, HashSet<String>>>,
    /// The records the page shows through to-many relations, named by their parents.
    children: Arc<Vec<Children>>,
}

/// The records of one table a page shows as the children of records it shows (an order's
/// items): a row written since is one of them if its parent is.
#[derive(Debug, Clone)]
struct Children {
    table: &'static str,
    /// The column holding the parent's id.
    parent_column: &'static str,
    /// The version of the parent field as it was: a child moved to another parent bumps it,
    /// and its old parent is not in the log.
    parent_key: (&'static str, i64),
    /// The version of the table's rows rewritten whole (an upsert by id) as it was: such a
    /// row may have left a shown parent, which the log cannot tell.
    rewritten_key: (&'static str, i64),
    parents: Vec<String>,
}

impl Recheck {
    /// What a listing (a page's ids, in order) depends on: its root table's rows.
    pub(crate) fn of_listing(plan: &ReadPlan, ids: &[String], versions: &Versions) -> Recheck {
        let table = plan.resource.table;
        Recheck {
            matching: versions_of(&matching_keys(plan), versions),
            ordering: versions.stamp(&ordering_keys(plan)),
            tables: table_rows([table], versions),
            shown: Arc::new(HashMap::from([(table, ids.iter().cloned().collect())])),
            children: Arc::new(Vec::new()),
        }
    }

    /// What a rendered page depends on: every table it reads, and the ids it shows of those
    /// whose rows it shows by id.
    pub(crate) fn of_page(
        plan: &ReadPlan,
        viewer: &Viewer,
        data: &PageData,
        versions: &Versions,
    ) -> Recheck {
        let tables = table_rows(page_tables(plan, viewer), versions);
        let mut shown: HashMap<&'static str, HashSet<String>> = HashMap::new();
        let mut children: Vec<Children> = Vec::new();
        let mut unsure: HashSet<&'static str> = HashSet::new();
        let mut found = Found {
            shown: &mut shown,
            children: &mut children,
            unsure: &mut unsure,
            versions,
        };
        shown_ids(&plan.selection, &data.root, viewer, &mut found);
        shown.entry(plan.resource.table).or_default().extend(
            data.root
                .rows
                .iter()
                .filter_map(|row| row[0].as_text().map(str::to_string)),
        );
        shown.retain(|table, _| !unsure.contains(table));
        children.retain(|c| !unsure.contains(c.table));
        Recheck {
            matching: versions_of(&matching_keys(plan), versions),
            ordering: versions.stamp(&ordering_keys(plan)),
            tables,
            shown: Arc::new(shown),
            children: Arc::new(children),
        }
    }

    /// The same page, judged still true at `versions`: stamped with them.
    pub(crate) fn renewed(&self, plan: &ReadPlan, versions: &Versions) -> Recheck {
        let children = self
            .children
            .iter()
            .map(|c| Children {
                parent_key: (c.parent_key.0, versions.of(c.parent_key.0)),
                rewritten_key: (c.rewritten_key.0, versions.of(c.rewritten_key.0)),
                ..c.clone()
            })
            .collect();
        Recheck {
            matching: versions_of(&matching_keys(plan), versions),
            ordering: versions.stamp(&ordering_keys(plan)),
            tables: self
                .tables
                .iter()
                .map(|(table, row, _)| (*table, *row, versions.of_row(row)))
                .collect(),
            shown: self.shown.clone(),
            children: Arc::new(children),
        }
    }

    /// The bytes it holds, for the cache's bound.
    pub(crate) fn weight(&self) -> usize {
        self.shown
            .values()
            .map(|ids| ids.iter().map(|id| id.len() + 32).sum::<usize>())
            .sum::<usize>()
            + self
                .children
                .iter()
                .map(|c| c.parents.iter().map(|id| id.len() + 24).sum::<usize>() + 64)
                .sum::<usize>()
            + (self.tables.len() + self.matching.len()) * 24
    }
}

/// Each row of each table's own version, as `versions` hold it.
fn table_rows(
    tables: impl IntoIterator<Item = &'static str>,
    versions: &Versions,
) -> Vec<(&'static str, &'static str, i64)> {
    tables
        .into_iter()
        .flat_map(|table| rows_of(table).into_iter().map(move |row| (table, row)))
        .map(|(table, row)| (table, row, versions.of_row(row)))
        .collect()
}

fn versions_of(keys: &[&'static str], versions: &Versions) -> Vec<(&'static str, i64)> {
    keys.iter().map(|key| (*key, versions.of(key))).collect()
}

/// What [`shown_ids`] gathers.
struct Found<'a> {
    shown: &'a mut HashMap<&'static str, HashSet<String>>,
    children: &'a mut Vec<Children>,
    unsure: &'a mut HashSet<&'static str>,
    versions: &'a Versions,
}

/// Collects the ids of the related records a node shows through to-one relations (the
/// referenced ids, shown or hidden by scope), the parents of those it shows through to-many
/// relations, and the tables whose rows it cannot name: those a related record's scope joins
/// through.
fn shown_ids(selection: &Selection, node: &NodeData, viewer: &Viewer, found: &mut Found<'_>) {
    for (relation, child) in selection.relations.iter().zip(&node.children) {
        let (Some(sub), Some(child)) = (&relation.expanded, child) else {
            continue;
        };
        let table = sub.resource.table;
        for joined in tables_read(sub.resource, &viewer.scope(sub.resource)) {
            if joined != table {
                found.unsure.insert(joined);
            }
        }
        match relation.relation.kind {
            RelationKind::ToOne { fk } => {
                let column = selection
                    .resource
                    .field_named(fk)
                    .and_then(|field| node.column_of(field));
                let Some(column) = column else {
                    found.unsure.insert(table);
                    continue;
                };
                let ids = found.shown.entry(table).or_default();
                ids.extend(
                    node.rows
                        .iter()
                        .filter_map(|row| row[column].as_text().map(str::to_string)),
                );
                ids.extend(
                    child
                        .rows
                        .iter()
                        .filter_map(|row| row[0].as_text().map(str::to_string)),
                );
            }
            RelationKind::ToMany { target_fk } => {
                let Some(field) = sub.resource.field_named(target_fk) else {
                    found.unsure.insert(table);
                    continue;
                };
                let key = field_key(sub.resource, field);
                found.children.push(Children {
                    table,
                    parent_column: field.column.as_str(),
                    parent_key: (key, found.versions.of(key)),
                    rewritten_key: (columns_key(table), found.versions.of(columns_key(table))),
                    parents: node
                        .rows
                        .iter()
                        .filter_map(|row| row[0].as_text().map(str::to_string))
                        .collect(),
                });
            }
        }
        shown_ids(sub, child, viewer, found);
    }
}

/// Whether every order key is a field of the records themselves: then a write that moved
/// records in the order wrote those records, and the log names them.
fn ordered_by_own_fields(plan: &ReadPlan) -> bool {
    plan.order
        .iter()
        .all(|key| key.path.hops.is_empty() && key.path.field.list.is_none())
}

/// What a stale-looking page is, judged against the versions a request read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Judged {
    /// Made from versions read after the request's own (every version only grows, so each
    /// of its tables' is at least the request's): as fresh as the request can ask.
    Newer,
    /// No row written since touches it: still true, to be stamped anew.
    StillTrue,
    Stale,
}

impl Store {
    /// What a page or listing made as `recheck` says is at `versions`.
    pub(crate) async fn judge_kept(
        &self,
        plan: &ReadPlan,
        recheck: &Recheck,
        versions: &Versions,
        timing: &Timing,
    ) -> StoreResult<Judged> {
        if recheck
            .tables
            .iter()
            .any(|(_, row, was)| versions.of_row(row) < *was)
        {
            return Ok(Judged::Newer);
        }
        Ok(if self.still_true(plan, recheck, versions, timing).await? {
            Judged::StillTrue
        } else {
            Judged::Stale
        })
    }

    /// Whether a page or listing made as `recheck` says is still true at `versions`, which
    /// are not older than those it was made at.
    async fn still_true(
        &self,
        plan: &ReadPlan,
        recheck: &Recheck,
        versions: &Versions,
        timing: &Timing,
    ) -> StoreResult<bool> {
        // What matches may have changed only by rows inserted into the page's own table (to
        // be found by none of them, below).
        let root = plan.resource.table;
        let inserted = recheck
            .matching
            .iter()
            .filter(|(key, was)| versions.of(key) != *was)
            .map(|(key, _)| *key)
            .collect::<Vec<_>>();
        if inserted
            .iter()
            .any(|key| *key != rows_key(root) && *key != columns_key(root))
        {
            tracing::debug!("a kept page is stale: what matches changed");
            return Ok(false);
        }
        let reordered = versions.stamp(&ordering_keys(plan)) != recheck.ordering;
        if reordered && !ordered_by_own_fields(plan) {
            tracing::debug!("a kept page is stale: its order reads other records");
            return Ok(false);
        }
        let mut spans = Vec::new();
        for (table, row, was) in &recheck.tables {
            let now = versions.of_row(row);
            if now == *was {
                continue;
            }
            let parents = recheck.children.iter().filter(|c| c.table == *table);
            let mut parents_moved = false;
            let mut as_children = false;
            for children in parents {
                as_children = true;
                parents_moved |= versions.of(children.parent_key.0) != children.parent_key.1;
            }
            if parents_moved || !(recheck.shown.contains_key(table) || as_children) {
                tracing::debug!(
                    table,
                    "a kept page is stale: a table it cannot check was written"
                );
                return Ok(false);
            }
            spans.push(Span {
                table,
                row,
                since: *was,
                until: now,
            });
        }
        let Some(written) = self.rows_written(&spans, timing).await? else {
            tracing::debug!(
                ?spans,
                "a kept page is stale: the rows written are not all known"
            );
            return Ok(false);
        };
        for (table, rows) in &written {
            let Some(shown) = recheck.shown.get(table) else {
                continue;
            };
            if rows.ids.iter().any(|id| shown.contains(id)) {
                tracing::debug!(table, "a kept page is stale: a record it shows was written");
                return Ok(false);
            }
        }
        if !inserted.is_empty() && !written.get(root).is_some_and(|rows| rows.inserted_only) {
            tracing::debug!("a kept page is stale: rows it may find changed, not only came");
            return Ok(false);
        }
        for children in recheck.children.iter() {
            let Some(rows) = written.get(children.table) else {
                continue;
            };
            let rewritten = versions.of(children.rewritten_key.0) != children.rewritten_key.1;
            if rewritten && !rows.inserted_only {
                tracing::debug!(
                    table = children.table,
                    "a kept page is stale: a record it shows under another may have moved"
                );
                return Ok(false);
            }
            let statement = Query::select()
                .column(Alias::new("id"))
                .from(Alias::new(children.table))
                .and_where(Expr::col(Alias::new("id")).is_in(rows.ids.iter().cloned()))
                .and_where(
                    Expr::col(Alias::new(children.parent_column))
                        .is_in(children.parents.iter().cloned()),
                )
                .limit(1)
                .to_owned();
            if !self
                .fetch(&statement, &[Kind::Text], timing)
                .await?
                .is_empty()
            {
                tracing::debug!(
                    table = children.table,
                    "a kept page is stale: a record it shows under another was written"
                );
                return Ok(false);
            }
        }
        if reordered || !inserted.is_empty() {
            // A record written since may now sort into the page, or be found by it: none of
            // them may match.
            let Some(rows) = written.get(root) else {
                tracing::debug!("a kept page is stale: reordered, no record written");
                return Ok(false);
            };
            let mut ids: Vec<String> = rows.ids.clone();
            ids.sort_unstable();
            ids.dedup();
            let statement = any_satisfying(plan.resource, &ids, &plan.full_filter());
            if !self
                .fetch(&statement, &[Kind::Text], timing)
                .await?
                .is_empty()
            {
                tracing::debug!("a kept page is stale: a record it finds was written");
                return Ok(false);
            }
        }
        Ok(true)
    }
}
