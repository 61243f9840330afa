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
use crate::versions::{Versions, matching_keys, ordering_keys};
use brandhub_catalog::RelationKind;
use brandhub_query::plan::{ReadPlan, Selection, Viewer};
use brandhub_query::sql::{any_satisfying, page_tables, tables_read};
use std::collections::{HashMap, HashSet};

/// What a kept page or listing was made from.
#[derive(Debug, Clone)]
pub(crate) struct Recheck {
    /// The stamp of the versions deciding which records match.
    matching: i64,
    /// The stamp of the versions of the fields the order reads.
    ordering: i64,
    /// The own version of every table the page reads, as it was.
    tables: Vec<(&'static str, i64)>,
    /// The ids the page shows, by table, of the tables whose written rows can be compared.
    shown: HashMap<&'static str, HashSet<String>>,
}

impl Recheck {
    /// What a listing (a page's ids, in order) depends on: its root table's rows.
    pub(crate) fn of_listing(plan: &ReadPlan, ids: &[String], versions: &Versions) -> Recheck {
        let table = plan.resource.table;
        Recheck {
            matching: versions.stamp(&matching_keys(plan)),
            ordering: versions.stamp(&ordering_keys(plan)),
            tables: vec![(table, versions.of(table))],
            shown: HashMap::from([(table, ids.iter().cloned().collect())]),
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
        let tables = page_tables(plan, viewer)
            .into_iter()
            .map(|table| (table, versions.of(table)))
            .collect();
        let mut shown: HashMap<&'static str, HashSet<String>> = HashMap::new();
        let mut unsure: HashSet<&'static str> = HashSet::new();
        shown_ids(&plan.selection, &data.root, viewer, &mut shown, &mut unsure);
        shown.entry(plan.resource.table).or_default().extend(
            data.root
                .rows
                .iter()
                .filter_map(|row| row[0].as_text().map(str::to_string)),
        );
        shown.retain(|table, _| !unsure.contains(table));
        Recheck {
            matching: versions.stamp(&matching_keys(plan)),
            ordering: versions.stamp(&ordering_keys(plan)),
            tables,
            shown,
        }
    }

    /// The same page, judged still true at `versions`: stamped with them.
    pub(crate) fn renewed(&self, plan: &ReadPlan, versions: &Versions) -> Recheck {
        Recheck {
            matching: versions.stamp(&matching_keys(plan)),
            ordering: versions.stamp(&ordering_keys(plan)),
            tables: self
                .tables
                .iter()
                .map(|(table, _)| (*table, versions.of(table)))
                .collect(),
            shown: self.shown.clone(),
        }
    }

    /// The bytes it holds, for the cache's bound.
    pub(crate) fn weight(&self) -> usize {
        self.shown
            .values()
            .map(|ids| ids.iter().map(|id| id.len() + 32).sum::<usize>())
            .sum::<usize>()
            + self.tables.len() * 24
    }
}

/// Collects the ids of the related records a node shows through to-one relations (the
/// referenced ids, shown or hidden by scope), and the tables whose rows it cannot name: those
/// of to-many relations and those a related record's scope joins through.
fn shown_ids(
    selection: &Selection,
    node: &NodeData,
    viewer: &Viewer,
    shown: &mut HashMap<&'static str, HashSet<String>>,
    unsure: &mut HashSet<&'static str>,
) {
    for (relation, child) in selection.relations.iter().zip(&node.children) {
        let (Some(sub), Some(child)) = (&relation.expanded, child) else {
            continue;
        };
        let table = sub.resource.table;
        for joined in tables_read(sub.resource, &viewer.scope(sub.resource)) {
            if joined != table {
                unsure.insert(joined);
            }
        }
        match relation.relation.kind {
            RelationKind::ToOne { fk } => {
                let column = selection
                    .resource
                    .field_named(fk)
                    .and_then(|field| node.column_of(field));
                let Some(column) = column else {
                    unsure.insert(table);
                    continue;
                };
                let ids = shown.entry(table).or_default();
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
            RelationKind::ToMany { .. } => {
                unsure.insert(table);
            }
        }
        shown_ids(sub, child, viewer, shown, unsure);
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
            .any(|(table, was)| versions.of(table) < *was)
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
        if versions.stamp(&matching_keys(plan)) != recheck.matching {
            tracing::debug!("a kept page is stale: what matches changed");
            return Ok(false);
        }
        let reordered = versions.stamp(&ordering_keys(plan)) != recheck.ordering;
        if reordered && !ordered_by_own_fields(plan) {
            tracing::debug!("a kept page is stale: its order reads other records");
            return Ok(false);
        }
        let mut spans = Vec::new();
        for (table, was) in &recheck.tables {
            let now = versions.of(table);
            if now == *was {
                continue;
            }
            if !recheck.shown.contains_key(table) {
                tracing::debug!(
                    table,
                    "a kept page is stale: a table it cannot check was written"
                );
                return Ok(false);
            }
            spans.push(Span {
                table,
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
        for (table, ids) in &written {
            let shown = &recheck.shown[table];
            if ids.iter().any(|id| shown.contains(id)) {
                tracing::debug!(table, "a kept page is stale: a record it shows was written");
                return Ok(false);
            }
        }
        if reordered {
            // A record written since may now sort into the page: none of them may match.
            let Some(ids) = written.get(plan.resource.table) else {
                tracing::debug!("a kept page is stale: reordered, no record written");
                return Ok(false);
            };
            let mut ids: Vec<String> = ids.clone();
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
