//! Rendering a loaded page as the response envelope, written straight into one buffer.
//!
//! Related entities follow the contract's rules: a relation that is not expanded is
//! `{"__KEY": id}`; a missing one is `null`; an entity outside the caller's scope (not loaded)
//! is only `{"__KEY": id}`; and an entity already shown expanded earlier in the response, in
//! document order, is `{"__KEY": id}` at every later place.

use crate::read::{NodeData, PageData};
use brandhub_catalog::{Cell, FieldType, NoneAs, RelationKind};
use brandhub_query::plan::{SelectedField, Selection};
use std::collections::HashSet;

/// The id shown for "none" in user records.
pub const ZERO_ID: &str = "00000000000000000000000000000000";

fn write_str(out: &mut Vec<u8>, text: &str) {
    serde_json::to_writer(&mut *out, text).expect("writing to a Vec cannot fail");
}

fn write_key(out: &mut Vec<u8>, name: &str) {
    write_str(out, name);
    out.push(b':');
}

fn write_reference(out: &mut Vec<u8>, id: &str) {
    out.extend_from_slice(b"{\"__KEY\":");
    write_str(out, id);
    out.push(b'}');
}

fn write_cell(out: &mut Vec<u8>, selected: &SelectedField, cell: &Cell) {
    let field = selected.field;
    match (cell, field.ty) {
        (Cell::Null, FieldType::Text | FieldType::Timestamp | FieldType::PreciseTimestamp) => {
            out.extend_from_slice(b"\"\"")
        }
        (Cell::Null, FieldType::Id) if field.none_as == NoneAs::ZeroId => write_str(out, ZERO_ID),
        (Cell::Null, _) => out.extend_from_slice(b"null"),
        (Cell::Text(text), _) => write_str(out, text),
        (Cell::Integer(n), FieldType::Boolean) => {
            out.extend_from_slice(if *n != 0 { b"true" } else { b"false" })
        }
        (Cell::Integer(n), _) => serde_json::to_writer(&mut *out, n).expect("Vec write"),
        (Cell::Number(n), _) => serde_json::to_writer(&mut *out, n).expect("Vec write"),
        (Cell::Boolean(b), _) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
    }
}

struct Renderer<'a> {
    out: &'a mut Vec<u8>,
    shown: HashSet<(&'static str, String)>,
}

impl Renderer<'_> {
    fn field(&mut self, selected: &SelectedField, node: &NodeData, row: &[Cell], owner: &str) {
        let field = selected.field;
        match (field.ty, &selected.subfields) {
            (FieldType::Object, Some(subs)) => {
                let leaves = selected_leaves(selected);
                let all_unset = leaves
                    .iter()
                    .all(|leaf| node.column_of(leaf.field).is_none_or(|i| row[i].is_unset()));
                if field.nullable_object && all_unset {
                    self.out.extend_from_slice(b"null");
                    return;
                }
                self.out.push(b'{');
                for (i, sub) in subs.iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    write_key(self.out, sub.field.name);
                    self.field(sub, node, row, owner);
                }
                self.out.push(b'}');
            }
            (FieldType::List, _) => {
                self.out.push(b'[');
                let elements = node
                    .lists
                    .iter()
                    .find(|(f, _)| std::ptr::eq(*f, field))
                    .and_then(|(_, by_owner)| by_owner.get(owner));
                for (i, element) in elements.into_iter().flatten().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    write_str(self.out, element);
                }
                self.out.push(b']');
            }
            _ => match node.column_of(field) {
                Some(i) => write_cell(self.out, selected, &row[i]),
                None => self.out.extend_from_slice(b"null"),
            },
        }
    }

    /// One record: its fields, then its relations.
    fn record(&mut self, selection: &Selection, node: &NodeData, row: &[Cell]) {
        let id = row[0].as_text().unwrap_or_default().to_string();
        self.shown.insert((selection.resource.name, id.clone()));
        self.out.push(b'{');
        let mut first = true;
        for selected in &selection.fields {
            if !first {
                self.out.push(b',');
            }
            first = false;
            write_key(self.out, selected.field.name);
            self.field(selected, node, row, &id);
        }
        for (index, selected) in selection.relations.iter().enumerate() {
            if !first {
                self.out.push(b',');
            }
            first = false;
            write_key(self.out, selected.relation.name);
            let child = node.children.get(index).and_then(Option::as_ref);
            match selected.relation.kind {
                RelationKind::ToOne { fk } => {
                    let fk_field = selection.resource.field_named(fk).expect("catalog-checked");
                    let target_id = node.column_of(fk_field).and_then(|i| row[i].as_text());
                    let Some(target_id) = target_id else {
                        self.out.extend_from_slice(b"null");
                        continue;
                    };
                    self.related(selected.expanded.as_ref(), child, target_id);
                }
                RelationKind::ToMany { .. } => {
                    self.out.push(b'[');
                    if let (Some(sub), Some(child)) = (&selected.expanded, child)
                        && let Some(indexes) = child.by_key.get(&id)
                    {
                        for (n, &i) in indexes.iter().enumerate() {
                            if n > 0 {
                                self.out.push(b',');
                            }
                            let child_row = &child.rows[i];
                            let child_id = child_row[0].as_text().unwrap_or_default();
                            if self
                                .shown
                                .contains(&(sub.resource.name, child_id.to_string()))
                            {
                                write_reference(self.out, child_id);
                            } else {
                                self.record(sub, child, child_row);
                            }
                        }
                    }
                    self.out.push(b']');
                }
            }
        }
        self.out.push(b'}');
    }

    fn related(&mut self, expanded: Option<&Selection>, child: Option<&NodeData>, target_id: &str) {
        let (Some(sub), Some(child)) = (expanded, child) else {
            write_reference(self.out, target_id);
            return;
        };
        let already_shown = self
            .shown
            .contains(&(sub.resource.name, target_id.to_string()));
        match child.by_key.get(target_id).and_then(|rows| rows.first()) {
            Some(&i) if !already_shown => self.record(sub, child, &child.rows[i]),
            // Shown before, or outside the caller's scope: only the reference.
            _ => write_reference(self.out, target_id),
        }
    }
}

fn selected_leaves(selected: &SelectedField) -> Vec<&SelectedField> {
    match &selected.subfields {
        Some(subs) => subs.iter().flat_map(selected_leaves).collect(),
        None => vec![selected],
    }
}

/// Writes the envelope: `{"response": {page, pageCount, recordsSent, recordsFound, <name>: [...]}}`.
pub fn render_envelope(
    out: &mut Vec<u8>,
    selection: &Selection,
    data: &PageData,
    page: u64,
    page_size: u64,
) {
    let sent = data.root.rows.len();
    let page_count = data.found.div_ceil(page_size.max(1));
    out.extend_from_slice(b"{\"response\":{\"page\":");
    serde_json::to_writer(&mut *out, &page).expect("Vec write");
    out.extend_from_slice(b",\"pageCount\":");
    serde_json::to_writer(&mut *out, &page_count).expect("Vec write");
    out.extend_from_slice(b",\"recordsSent\":");
    serde_json::to_writer(&mut *out, &sent).expect("Vec write");
    out.extend_from_slice(b",\"recordsFound\":");
    serde_json::to_writer(&mut *out, &data.found).expect("Vec write");
    out.push(b',');
    write_key(out, selection.resource.name);
    out.push(b'[');
    let mut renderer = Renderer {
        out,
        shown: HashSet::new(),
    };
    for (i, row) in data.root.rows.iter().enumerate() {
        if i > 0 {
            renderer.out.push(b',');
        }
        renderer.record(selection, &data.root, row);
    }
    out.extend_from_slice(b"]}}");
}

/// Writes a sync's envelope (docs/API.md, "Sync by cursor"): one page holding every entry,
/// the cursor to send next and whether changes remain; each entry a record as a page shows
/// it, or `{"id": …, "deleted": true}`.
pub fn render_changes(
    out: &mut Vec<u8>,
    selection: &Selection,
    data: &PageData,
    entries: &[crate::changes::Entry],
    cursor: &str,
    more: bool,
) {
    use crate::changes::Entry;
    let rows: std::collections::HashMap<&str, &Vec<Cell>> = data
        .root
        .rows
        .iter()
        .filter_map(|row| Some((row[0].as_text()?, row)))
        .collect();
    out.extend_from_slice(b"{\"response\":{\"page\":1,\"pageCount\":1,\"recordsSent\":");
    serde_json::to_writer(&mut *out, &entries.len()).expect("Vec write");
    out.extend_from_slice(b",\"recordsFound\":");
    serde_json::to_writer(&mut *out, &entries.len()).expect("Vec write");
    out.extend_from_slice(b",\"cursor\":");
    write_str(out, cursor);
    out.extend_from_slice(if more {
        b",\"more\":true,"
    } else {
        b",\"more\":false,"
    });
    write_key(out, selection.resource.name);
    out.push(b'[');
    let mut renderer = Renderer {
        out,
        shown: HashSet::new(),
    };
    for (i, entry) in entries.iter().enumerate() {
        if i > 0 {
            renderer.out.push(b',');
        }
        match entry {
            Entry::Record(id) => match rows.get(id.as_str()) {
                Some(row) => renderer.record(selection, &data.root, row),
                None => unreachable!("the store keeps only entries it read"),
            },
            Entry::Deleted(id) => {
                renderer.out.extend_from_slice(b"{\"id\":");
                write_str(renderer.out, id);
                renderer.out.extend_from_slice(b",\"deleted\":true}");
            }
        }
    }
    out.extend_from_slice(b"]}}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use brandhub_catalog::catalog;
    use brandhub_query::parse::parse_query_string;
    use brandhub_query::plan::{Viewer, plan_read};
    use brandhub_query::sql::node_columns;
    use std::collections::HashMap;

    fn text(s: &str) -> Cell {
        Cell::Text(s.to_string())
    }

    fn node(
        columns: Vec<&'static brandhub_catalog::Field>,
        rows: Vec<Vec<Cell>>,
        key: usize,
    ) -> NodeData {
        let mut by_key: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, row) in rows.iter().enumerate() {
            by_key
                .entry(row[key].as_text().unwrap().to_string())
                .or_default()
                .push(i);
        }
        NodeData {
            columns,
            rows,
            by_key,
            children: Vec::new(),
            lists: Vec::new(),
        }
    }

    #[test]
    fn related_entities_shown_earlier_become_key_references() {
        let brand = catalog().get(brandhub_catalog::Res::Brand);
        let request = parse_query_string("fields=name,brand_company.name").unwrap();
        let plan = plan_read(brand, &request, &Viewer::admin()).unwrap();
        let columns = node_columns(&plan.selection, None);
        assert_eq!(
            columns.iter().map(|f| f.name).collect::<Vec<_>>(),
            vec!["id", "name", "fk_company"]
        );
        let company_selection = plan.selection.relations[0].expanded.as_ref().unwrap();
        let company_columns = node_columns(company_selection, None);
        let mut company = node(
            company_columns,
            vec![vec![text("C1"), text("Crème Ltd")]],
            0,
        );
        company.children = vec![];
        let mut root = node(
            columns,
            vec![
                vec![text("B1"), text("Ärmel"), text("C1")],
                vec![text("B2"), text("Two"), text("C1")],
                vec![text("B3"), text("Three"), text("C9")],
            ],
            0,
        );
        root.children = vec![Some(company)];
        let data = PageData { root, found: 7 };
        let mut out = Vec::new();
        render_envelope(&mut out, &plan.selection, &data, 1, 3);
        let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let response = &json["response"];
        assert_eq!(response["pageCount"], 3);
        assert_eq!(response["recordsSent"], 3);
        assert_eq!(response["recordsFound"], 7);
        let brands = response["brand"].as_array().unwrap();
        assert_eq!(
            brands[0]["brand_company"],
            serde_json::json!({"id": "C1", "name": "Crème Ltd"})
        );
        assert_eq!(
            brands[1]["brand_company"],
            serde_json::json!({"__KEY": "C1"}),
            "shown earlier"
        );
        assert_eq!(
            brands[2]["brand_company"],
            serde_json::json!({"__KEY": "C9"}),
            "not loaded: out of scope"
        );
        assert_eq!(brands[0]["name"], "Ärmel");
    }

    #[test]
    fn unset_values_render_by_type() {
        let user = catalog().get(brandhub_catalog::Res::User);
        let request = parse_query_string("fields=name,fk_host,createdDate").unwrap();
        let plan = plan_read(user, &request, &Viewer::admin()).unwrap();
        let columns = node_columns(&plan.selection, None);
        let root = node(
            columns,
            vec![vec![text("U1"), Cell::Null, Cell::Null, Cell::Null]],
            0,
        );
        let mut out = Vec::new();
        render_envelope(
            &mut out,
            &plan.selection,
            &PageData { root, found: 1 },
            1,
            100,
        );
        let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let record = &json["response"]["user"][0];
        assert_eq!(record["name"], "");
        assert_eq!(record["fk_host"], ZERO_ID);
        assert_eq!(record["createdDate"], "");
    }
}
