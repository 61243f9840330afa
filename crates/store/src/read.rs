//! Executing a read plan: one statement for the page, the count (usually from the cache), then
//! one batched statement per expanded relation and per list field, level by level. Never one
//! statement per record.

use crate::db::{Backend, Kind, Store, Timing};
use crate::error::StoreResult;
use crate::versions::Versions;
use brandhub_catalog::{Cell, Field, FieldType, RelationKind, catalog};
use brandhub_query::plan::{CountPlan, ReadPlan, Selection, Viewer};
use brandhub_query::sql::{
    MOST_PARENTS, PageStrategy, list_statement, node_columns, page_statement, related_statement,
    scope_parents,
};
use sea_query::{Alias, Expr, ExprTrait, Query};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;

/// The rows of one node of a selection, loaded for one page.
#[derive(Debug, Default)]
pub struct NodeData {
    /// The fields whose values the rows hold, in order (the id first).
    pub columns: Vec<&'static Field>,
    pub rows: Vec<Vec<Cell>>,
    /// Row indexes by key: the id for the root and to-one nodes, the parent id for to-many.
    pub by_key: HashMap<String, Vec<usize>>,
    /// One entry per relation of the selection: `None` where it shows only `__KEY`.
    pub children: Vec<Option<NodeData>>,
    /// Elements of list fields, by owner id.
    pub lists: Vec<(&'static Field, HashMap<String, Vec<String>>)>,
}

impl NodeData {
    /// The position of a field among the columns.
    pub fn column_of(&self, field: &Field) -> Option<usize> {
        self.columns.iter().position(|c| std::ptr::eq(*c, field))
    }

    pub(crate) fn index_by(&mut self, column: usize) {
        for (i, row) in self.rows.iter().enumerate() {
            if let Cell::Text(key) = &row[column] {
                self.by_key.entry(key.clone()).or_default().push(i);
            }
        }
    }
}

/// A page of records with everything needed to render it.
#[derive(Debug)]
pub struct PageData {
    pub root: NodeData,
    /// How many records the request finds in all.
    pub found: u64,
}

pub(crate) fn kinds(columns: &[&'static Field]) -> Vec<Kind> {
    columns.iter().map(|f| Kind::of(f.ty)).collect()
}

fn distinct_texts(rows: &[Vec<Cell>], column: usize) -> Vec<String> {
    let mut keys: Vec<String> = rows
        .iter()
        .filter_map(|row| row[column].as_text().map(str::to_string))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

type Loading<'a> = Pin<Box<dyn Future<Output = StoreResult<()>> + Send + 'a>>;

impl Store {
    /// One text (or id) field of a record, ignoring scope: `Some(None)` when the record
    /// exists with the field unset, `None` when there is no such record. For checks that
    /// compare records the caller may not see in full (the company of a brand and of a
    /// warehouse), and for a field of a record already known to be visible.
    pub async fn text_field_of(
        &self,
        resource: brandhub_catalog::Res,
        field: &str,
        id: &str,
    ) -> StoreResult<Option<Option<String>>> {
        let resource = catalog().get(resource);
        let field = resource
            .field_at(field)
            .filter(|f| f.has_column())
            .unwrap_or_else(|| panic!("callers name a stored field of {}", resource.name));
        let select = Query::select()
            .column(Alias::new(field.column.as_str()))
            .from(Alias::new(resource.table))
            .and_where(Expr::col(Alias::new("id")).eq(id.to_ascii_uppercase()))
            .to_owned();
        let rows = self
            .fetch(&select, &[Kind::Text], &Timing::default())
            .await?;
        Ok(rows.first().map(|row| row[0].as_text().map(str::to_string)))
    }

    /// Reads a page, its count and its related entities. The exact count comes first (it is
    /// usually cached): it tells whether a page exists at all, and whether the page's ids are
    /// best found by walking the order or by collecting the few matches first.
    pub async fn read_page(
        &self,
        plan: &ReadPlan,
        viewer: &Viewer,
        versions: &Versions,
        timing: &Timing,
    ) -> StoreResult<PageData> {
        let count_plan = CountPlan {
            resource: plan.resource,
            scope: plan.scope.clone(),
            filter: plan.filter.clone(),
        };
        let columns = node_columns(&plan.selection, None);
        let (found, rows) = if plan.filter.pins_ids() {
            // Found by the primary key (a by-id read, a write's answer): the page is read
            // first, and unless it is full (or empty past the first page) it tells how many
            // match, so the count that every write of the table makes stale is not taken.
            let strategy = self.pinned_strategy();
            let rows = self
                .fetch(&page_statement(plan, strategy), &kinds(&columns), timing)
                .await?;
            let pinned = plan.filter.pinned_ids().map(|n| n as u64);
            match found_from_page(plan.page_size, plan.offset(), rows.len() as u64, pinned) {
                Some(found) => (found, rows),
                None => (self.count(&count_plan, versions, timing).await?, rows),
            }
        } else {
            let found = self.count(&count_plan, versions, timing).await?;
            let rows = if found == 0 || plan.offset() >= found {
                Vec::new()
            } else {
                let strategy = self.page_strategy(plan, found, versions, timing).await?;
                let statement = match self.by_parents(plan, strategy, timing).await? {
                    Some(by_parents) => page_statement(&by_parents, PageStrategy::ByParents),
                    None => page_statement(plan, strategy),
                };
                self.fetch(&statement, &kinds(&columns), timing).await?
            };
            (found, rows)
        };
        self.with_related(plan, (columns, rows), found, viewer, versions, timing)
            .await
    }

    /// The page of a plan whose ids, in order, and count are known (from the page cache's
    /// listing): the records read again by id, with their related records.
    pub(crate) async fn read_listed(
        &self,
        plan: &ReadPlan,
        ids: &[String],
        found: u64,
        viewer: &Viewer,
        versions: &Versions,
        timing: &Timing,
    ) -> StoreResult<PageData> {
        let columns = node_columns(&plan.selection, None);
        let rows = if ids.is_empty() {
            Vec::new()
        } else {
            let statement = page_statement(&plan.narrowed_to(ids), self.pinned_strategy());
            self.fetch(&statement, &kinds(&columns), timing).await?
        };
        self.with_related(plan, (columns, rows), found, viewer, versions, timing)
            .await
    }

    /// The page of a by-id plan whose rows were read already, by the statement of the write
    /// they answer: completed with their related records.
    pub(crate) async fn page_of_rows(
        &self,
        plan: &ReadPlan,
        rows: Vec<Vec<Cell>>,
        viewer: &Viewer,
        versions: &Versions,
        timing: &Timing,
    ) -> StoreResult<PageData> {
        let found = rows.len() as u64;
        let columns = node_columns(&plan.selection, None);
        self.with_related(plan, (columns, rows), found, viewer, versions, timing)
            .await
    }

    /// A page of root rows (with the fields they hold) completed with their lists and
    /// related records.
    async fn with_related(
        &self,
        plan: &ReadPlan,
        (columns, rows): (Vec<&'static Field>, Vec<Vec<Cell>>),
        found: u64,
        viewer: &Viewer,
        versions: &Versions,
        timing: &Timing,
    ) -> StoreResult<PageData> {
        let mut root = NodeData {
            columns,
            rows,
            ..NodeData::default()
        };
        root.index_by(0);
        self.load_node(&plan.selection, &mut root, viewer, versions, timing)
            .await?;
        Ok(PageData { root, found })
    }

    /// How to find the page of a filter that pins ids (a by-id read, a write's answer): the
    /// filter drives and the scope judges, without counting the scope or the table first.
    pub(crate) fn pinned_strategy(&self) -> PageStrategy {
        match self.backend() {
            Backend::Sqlite => PageStrategy::SortMatches { probe_scope: true },
            _ => PageStrategy::MatchesFirst { probe_scope: true },
        }
    }

    /// The plan scoped to its few parents, when a page that would walk the table in id order
    /// can walk each parent's records instead ([`PageStrategy::ByParents`]): its scope is one
    /// condition on the record a link leads to, met by at most [`MOST_PARENTS`] of them.
    async fn by_parents(
        &self,
        plan: &ReadPlan,
        strategy: PageStrategy,
        timing: &Timing,
    ) -> StoreResult<Option<ReadPlan>> {
        if !matches!(
            strategy,
            PageStrategy::InOrder | PageStrategy::InOrderProbing
        ) {
            return Ok(None);
        }
        let Some((fk, parents)) = scope_parents(plan) else {
            return Ok(None);
        };
        let parents: Vec<String> = self
            .fetch(&parents, &[Kind::Text], timing)
            .await?
            .into_iter()
            .filter_map(|row| row.into_iter().next()?.as_text().map(str::to_string))
            .collect();
        if parents.is_empty() || parents.len() as u64 > MOST_PARENTS {
            return Ok(None);
        }
        Ok(Some(plan.scoped_to_parents(fk, &parents)))
    }

    /// How to find a page's ids, from the exact count of matches and of visible records.
    /// PostgreSQL's planner, under a LIMIT, prefers walking an index in order and hopes to
    /// meet matches early, which fails badly when matches are few or clustered; there, few or
    /// rare matches are collected first (by the requested filter alone when it is rare within
    /// a wide scope, which then judges them). SQLite's planner errs the other way.
    async fn page_strategy(
        &self,
        plan: &ReadPlan,
        found: u64,
        versions: &Versions,
        timing: &Timing,
    ) -> StoreResult<PageStrategy> {
        let visible = self
            .count(
                &CountPlan::visible(plan.resource, plan.scope.clone()),
                versions,
                timing,
            )
            .await?;
        let strategy = PageStrategy::choose(found, visible, self.matches_first_limit);
        if self.backend() == Backend::Sqlite {
            // SQLite's planner already takes a selective filter's index and sorts, and
            // materializing only costs it; where matches are common it must be told to walk
            // the order instead of driving from a large subquery.
            if !matches!(strategy, PageStrategy::MatchesFirst { .. }) {
                return Ok(PageStrategy::InOrderProbing);
            }
            // Few matches, found and sorted. The requested filter drives, unless nothing is
            // asked but the scope or the scope itself is narrow (rare in its table).
            let probe_scope = !plan.filter.is_always()
                && self
                    .is_wide_scope(plan.resource, visible, versions, timing)
                    .await?;
            return Ok(PageStrategy::SortMatches { probe_scope });
        }
        if matches!(strategy, PageStrategy::MatchesFirst { .. }) {
            // Within a wide scope a rare filter collects its matches alone and the scope
            // judges them; PostgreSQL would otherwise scan the table to hash-join the scope.
            let count_plan = CountPlan {
                resource: plan.resource,
                scope: plan.scope.clone(),
                filter: plan.filter.clone(),
            };
            let probe_scope = self
                .filter_drives(&count_plan, visible, versions, timing)
                .await?;
            return Ok(PageStrategy::MatchesFirst { probe_scope });
        }
        Ok(strategy)
    }

    /// Loads the lists and expanded relations of a node whose rows are loaded; each
    /// relation's rows are taken from the cache ([`crate::related`]) while `versions` (when
    /// read) say they are still true.
    pub(crate) fn load_node<'a>(
        &'a self,
        selection: &'a Selection,
        node: &'a mut NodeData,
        viewer: &'a Viewer,
        versions: &'a Versions,
        timing: &'a Timing,
    ) -> Loading<'a> {
        Box::pin(async move {
            self.load_lists(selection, node, timing).await?;
            for selected in &selection.relations {
                let Some(sub) = &selected.expanded else {
                    node.children.push(None);
                    continue;
                };
                let target = catalog().target(selected.relation);
                let (key_field, keys) = match selected.relation.kind {
                    RelationKind::ToOne { fk } => {
                        let fk_field = selection.resource.field_named(fk).expect("catalog-checked");
                        let column = node
                            .column_of(fk_field)
                            .expect("fks of selected relations are read");
                        (
                            target.field_named("id").expect("every resource has an id"),
                            distinct_texts(&node.rows, column),
                        )
                    }
                    RelationKind::ToMany { target_fk } => (
                        target.field_named(target_fk).expect("catalog-checked"),
                        distinct_texts(&node.rows, 0),
                    ),
                };
                let link = (key_field.name != "id").then_some(key_field);
                let mut child = NodeData {
                    columns: node_columns(sub, link),
                    ..NodeData::default()
                };
                if !keys.is_empty() {
                    let scope = viewer.scope(target);
                    let statement = related_statement(
                        sub,
                        key_field,
                        &keys,
                        &scope,
                        self.backend() == Backend::Sqlite,
                    );
                    child.rows = self
                        .fetch_related(
                            &statement,
                            &kinds(&child.columns),
                            (target, &scope),
                            versions,
                            timing,
                        )
                        .await?;
                    let key_column = child.column_of(key_field).expect("the key column is read");
                    child.index_by(key_column);
                    self.load_node(sub, &mut child, viewer, versions, timing)
                        .await?;
                }
                node.children.push(Some(child));
            }
            Ok(())
        })
    }

    async fn load_lists(
        &self,
        selection: &Selection,
        node: &mut NodeData,
        timing: &Timing,
    ) -> StoreResult<()> {
        let owners = distinct_texts(&node.rows, 0);
        for field in selection.leaf_fields() {
            if field.ty != FieldType::List {
                continue;
            }
            let mut elements: HashMap<String, Vec<String>> = HashMap::new();
            if !owners.is_empty()
                && let Some(statement) = list_statement(field, &owners)
            {
                for row in self
                    .fetch(&statement, &[Kind::Text, Kind::Text], timing)
                    .await?
                {
                    if let [Cell::Text(owner), Cell::Text(value)] = row.as_slice() {
                        elements
                            .entry(owner.clone())
                            .or_default()
                            .push(value.clone());
                    }
                }
            }
            node.lists.push((field, elements));
        }
        Ok(())
    }
}

/// Whether [`Store::read_page`] learns a plan's count from its page alone (a first page that
/// can hold every record of the ids it names): then no version, and no cached count, is
/// consulted.
pub(crate) fn counts_itself(plan: &ReadPlan) -> bool {
    plan.offset() == 0
        && plan
            .filter
            .pinned_ids()
            .is_some_and(|most| most as u64 <= plan.page_size)
}

/// The number of matches a page of `rows` records proves: a page that is not full is the
/// last one, unless it is empty past the first page (the matches may end anywhere before);
/// a first page holding all of the `most` records the filter can match has them all.
fn found_from_page(page_size: u64, offset: u64, rows: u64, most: Option<u64>) -> Option<u64> {
    let all_found = offset == 0 && most.is_some_and(|most| rows >= most);
    let last_page = rows < page_size && (rows > 0 || offset == 0);
    (all_found || last_page).then_some(offset + rows)
}

#[cfg(test)]
mod page_count_tests {
    use super::found_from_page;

    #[test]
    fn a_page_that_is_not_full_tells_the_count() {
        assert_eq!(
            found_from_page(100, 0, 1, None),
            Some(1),
            "a short first page"
        );
        assert_eq!(
            found_from_page(1, 0, 0, Some(1)),
            Some(0),
            "no record by that id"
        );
        assert_eq!(
            found_from_page(1, 0, 1, Some(1)),
            Some(1),
            "the one record by id"
        );
        assert_eq!(
            found_from_page(3, 0, 3, Some(3)),
            Some(3),
            "every id named found"
        );
        assert_eq!(
            found_from_page(2, 2, 1, None),
            Some(3),
            "the last of several pages"
        );
        assert_eq!(
            found_from_page(2, 0, 2, None),
            None,
            "a full page: more may follow"
        );
        assert_eq!(
            found_from_page(2, 0, 2, Some(3)),
            None,
            "two of three ids on one page"
        );
        assert_eq!(
            found_from_page(2, 4, 0, None),
            None,
            "empty past the first page"
        );
    }

    #[test]
    fn a_first_page_by_ids_tells_its_count_however_many_are_found() {
        use super::counts_itself;
        use brandhub_query::plan::{Viewer, plan_by_ids, plan_read};
        use brandhub_query::request::ReadRequest;
        let stock = brandhub_catalog::catalog().get(brandhub_catalog::Res::Stock);
        let ids: Vec<String> = ["A", "B", "C"].map(String::from).to_vec();
        let by_ids = plan_by_ids(stock, &ids, &ReadRequest::default(), &Viewer::admin()).unwrap();
        assert!(
            counts_itself(&by_ids),
            "a write's answer: its ids on one page"
        );
        let list = plan_read(stock, &ReadRequest::default(), &Viewer::admin()).unwrap();
        assert!(!counts_itself(&list), "a list needs its count");
        // What `counts_itself` promises: such a page never falls back to a count.
        for most in 1..=5u64 {
            for page_size in most..=6 {
                for rows in 0..=most {
                    assert_eq!(
                        found_from_page(page_size, 0, rows, Some(most)),
                        Some(rows),
                        "{rows} of {most} ids on a page of {page_size}"
                    );
                }
            }
        }
    }
}
