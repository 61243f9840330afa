//! Which tables a plan reads, for the caches' versions.

use crate::plan::path::FieldPath;
use crate::plan::{Predicate, ReadPlan, Selection, Viewer};
use brandhub_catalog::Resource;
use std::collections::BTreeSet;

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
    pub(super) fn walk(
        selection: &Selection,
        viewer: &Viewer,
        tables: &mut BTreeSet<&'static str>,
    ) {
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
