//! Records as the rows of a table, for exports (docs/API.md, "Exports: CSV and XLSX"). The columns are the selected
//! fields, objects flattened (`detail.net`) and expanded relations dotted
//! (`stock_variant.variant_product.title`); a relation shown only as a reference gives no
//! column (its foreign key is a field). A column through a to-many relation holds the values
//! of every related record as a JSON array. Unlike the JSON envelope, every row shows its
//! related records in full: a table has no "shown earlier".

use crate::read::NodeData;
use crate::render::ZERO_ID;
use brandhub_catalog::{Cell, Field, FieldType, NoneAs, RelationKind};
use brandhub_query::plan::{SelectedField, Selection};
use std::borrow::Cow;

/// One value of a table; a text is borrowed from the records read where it can be, so a
/// table's rows are written without copying their texts.
#[derive(Debug, Clone, PartialEq)]
pub enum TableCell<'a> {
    Empty,
    Text(Cow<'a, str>),
    Integer(i64),
    Number(f64),
    Bool(bool),
}

impl TableCell<'_> {
    /// The value as JSON, for the arrays of to-many columns.
    fn to_json(&self) -> serde_json::Value {
        match self {
            TableCell::Empty => serde_json::Value::Null,
            TableCell::Text(text) => text.to_string().into(),
            TableCell::Integer(n) => (*n).into(),
            TableCell::Number(n) => (*n).into(),
            TableCell::Bool(b) => (*b).into(),
        }
    }
}

/// Where a column's value comes from, starting at a record of a node.
#[derive(Debug, Clone)]
enum Source {
    /// A stored field of the record.
    Field(&'static Field),
    /// A list field's elements (a JSON array).
    List(&'static Field),
    /// Through the relation at `index` of the node's selection.
    Related {
        index: usize,
        /// The record's foreign key for a to-one relation; `None` for to-many (by the id).
        fk: Option<&'static Field>,
        inner: Box<Source>,
    },
}

/// A column: its header and where its values come from.
#[derive(Debug, Clone)]
pub struct TableColumn {
    /// The dotted path of the value (`stock_variant.barcode`).
    pub path: String,
    source: Source,
    /// Whether the path crosses a to-many relation (the cell is then a JSON array).
    many: bool,
}

/// The columns of a selection, in the order records show their fields and relations.
pub fn table_columns(selection: &Selection) -> Vec<TableColumn> {
    let mut columns = Vec::new();
    collect(selection, "", &mut columns);
    columns
}

fn collect(selection: &Selection, prefix: &str, out: &mut Vec<TableColumn>) {
    fn leaves(selected: &SelectedField, prefix: &str, out: &mut Vec<TableColumn>) {
        match &selected.subfields {
            Some(subs) => subs.iter().for_each(|sub| leaves(sub, prefix, out)),
            None => {
                let field = selected.field;
                out.push(TableColumn {
                    path: format!("{prefix}{}", field.path),
                    source: if field.ty == FieldType::List {
                        Source::List(field)
                    } else {
                        Source::Field(field)
                    },
                    many: false,
                });
            }
        }
    }
    for selected in &selection.fields {
        leaves(selected, prefix, out);
    }
    for (index, selected) in selection.relations.iter().enumerate() {
        let Some(sub) = &selected.expanded else {
            continue;
        };
        let (fk, many) = match selected.relation.kind {
            RelationKind::ToOne { fk } => (
                Some(
                    selection
                        .resource
                        .field_named(fk)
                        .expect("checked by the catalog"),
                ),
                false,
            ),
            RelationKind::ToMany { .. } => (None, true),
        };
        let mut inner = Vec::new();
        collect(
            sub,
            &format!("{prefix}{}.", selected.relation.name),
            &mut inner,
        );
        out.extend(inner.into_iter().map(|column| TableColumn {
            path: column.path,
            many: many || column.many,
            source: Source::Related {
                index,
                fk,
                inner: Box::new(column.source),
            },
        }));
    }
}

fn cell_value<'a>(field: &Field, cell: &'a Cell) -> TableCell<'a> {
    match (cell, field.ty) {
        (Cell::Null, FieldType::Id) if field.none_as == NoneAs::ZeroId => {
            TableCell::Text(Cow::Borrowed(ZERO_ID))
        }
        (Cell::Null, _) => TableCell::Empty,
        (Cell::Text(text), _) if text.is_empty() => TableCell::Empty,
        (Cell::Text(text), _) => TableCell::Text(Cow::Borrowed(text)),
        (Cell::Integer(n), FieldType::Boolean) => TableCell::Bool(*n != 0),
        (Cell::Integer(n), _) => TableCell::Integer(*n),
        (Cell::Number(n), _) => TableCell::Number(*n),
        (Cell::Boolean(b), _) => TableCell::Bool(*b),
    }
}

impl Source {
    /// The values this source has for the record at `row` of `node` (none, one, or one per
    /// related record of a to-many relation).
    fn values<'a>(&self, node: &'a NodeData, row: usize, out: &mut Vec<TableCell<'a>>) {
        let record = &node.rows[row];
        match self {
            Source::Field(field) => out.push(
                node.column_of(field)
                    .map_or(TableCell::Empty, |i| cell_value(field, &record[i])),
            ),
            Source::List(field) => {
                let owner = record[0].as_text().unwrap_or_default();
                let elements = node
                    .lists
                    .iter()
                    .find(|(f, _)| std::ptr::eq(*f, *field))
                    .and_then(|(_, by_owner)| by_owner.get(owner))
                    .cloned()
                    .unwrap_or_default();
                out.push(TableCell::Text(Cow::Owned(
                    serde_json::to_string(&elements).expect("strings serialise"),
                )));
            }
            Source::Related { index, fk, inner } => {
                // A related record outside the caller's scope was not loaded: no value.
                let Some(child) = node.children.get(*index).and_then(Option::as_ref) else {
                    return;
                };
                let key = match fk {
                    Some(fk) => node.column_of(fk).and_then(|i| record[i].as_text()),
                    None => record[0].as_text(),
                };
                let Some(rows) = key.and_then(|key| child.by_key.get(key)) else {
                    return;
                };
                let rows = if fk.is_some() { &rows[..1] } else { &rows[..] };
                for &child_row in rows {
                    inner.values(child, child_row, out);
                }
            }
        }
    }
}

impl Source {
    /// The one value of a source that crosses no to-many relation (`None` when a related
    /// record is not there), without gathering values in a list.
    fn value<'a>(&self, node: &'a NodeData, row: usize) -> Option<TableCell<'a>> {
        let record = &node.rows[row];
        match self {
            Source::Field(field) => Some(
                node.column_of(field)
                    .map_or(TableCell::Empty, |i| cell_value(field, &record[i])),
            ),
            Source::List(_) => {
                let mut values = Vec::with_capacity(1);
                self.values(node, row, &mut values);
                values.pop()
            }
            Source::Related { index, fk, inner } => {
                let child = node.children.get(*index).and_then(Option::as_ref)?;
                let key = match fk {
                    Some(fk) => node.column_of(fk).and_then(|i| record[i].as_text()),
                    None => record[0].as_text(),
                }?;
                let &first = child.by_key.get(key)?.first()?;
                inner.value(child, first)
            }
        }
    }
}

impl TableColumn {
    /// This column's cell for the record at `row` of `node` (a chunk's root node).
    pub fn cell<'a>(&self, node: &'a NodeData, row: usize) -> TableCell<'a> {
        if !self.many {
            return self.source.value(node, row).unwrap_or(TableCell::Empty);
        }
        let mut values = Vec::new();
        self.source.values(node, row, &mut values);
        let array: Vec<serde_json::Value> = values.iter().map(TableCell::to_json).collect();
        TableCell::Text(Cow::Owned(serde_json::Value::Array(array).to_string()))
    }
}
