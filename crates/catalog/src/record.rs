//! One record of a resource as plain values, laid out by the catalog: the demo generator
//! produces these, the store writes and reads them, and the tests' reference evaluator reasons
//! over them. The layout is the resource's stored leaf fields in declaration order.

use crate::model::{Field, FieldType, Resource};

/// One stored value.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Text(String),
    Integer(i64),
    Number(f64),
    Boolean(bool),
}

impl Cell {
    /// The text inside, if any.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Cell::Text(text) => Some(text),
            _ => None,
        }
    }

    /// The integer inside, if any.
    pub fn as_integer(&self) -> Option<i64> {
        match self {
            Cell::Integer(n) => Some(*n),
            _ => None,
        }
    }

    /// Whether the value is unset: null, or empty text.
    pub fn is_unset(&self) -> bool {
        match self {
            Cell::Null => true,
            Cell::Text(text) => text.is_empty(),
            _ => false,
        }
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Cell {
        Cell::Text(text.to_string())
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell::Text(text)
    }
}

impl From<i64> for Cell {
    fn from(value: i64) -> Cell {
        Cell::Integer(value)
    }
}

impl From<f64> for Cell {
    fn from(value: f64) -> Cell {
        Cell::Number(value)
    }
}

impl From<bool> for Cell {
    fn from(value: bool) -> Cell {
        Cell::Boolean(value)
    }
}

impl<T: Into<Cell>> From<Option<T>> for Cell {
    fn from(value: Option<T>) -> Cell {
        value.map_or(Cell::Null, Into::into)
    }
}

/// The fields of a resource that have a column, in layout order.
pub fn stored_fields(resource: &Resource) -> Vec<&Field> {
    resource.leaf_fields().filter(|f| f.has_column()).collect()
}

/// The list fields of a resource, in layout order.
pub fn list_fields(resource: &Resource) -> Vec<&Field> {
    resource
        .leaf_fields()
        .filter(|f| f.ty == FieldType::List)
        .collect()
}

/// A record: one cell per stored field and one element list per list field.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub cells: Vec<Cell>,
    pub lists: Vec<Vec<String>>,
}

impl Record {
    /// A record with every value unset (text `""`, everything else null).
    pub fn empty(resource: &Resource) -> Record {
        Record {
            cells: stored_fields(resource)
                .iter()
                .map(|f| {
                    if f.ty == FieldType::Text {
                        Cell::Text(String::new())
                    } else {
                        Cell::Null
                    }
                })
                .collect(),
            lists: vec![Vec::new(); list_fields(resource).len()],
        }
    }

    /// The record's id (the first cell of every layout).
    pub fn id(&self) -> &str {
        self.cells[0].as_text().unwrap_or_default()
    }
}

/// Positions of named fields in a resource's layout, looked up once and used for many records.
#[derive(Debug, Clone)]
pub struct Layout {
    names: Vec<String>,
    lists: Vec<String>,
}

impl Layout {
    /// The layout of a resource.
    pub fn of(resource: &Resource) -> Layout {
        Layout {
            names: stored_fields(resource)
                .iter()
                .map(|f| f.path.clone())
                .collect(),
            lists: list_fields(resource)
                .iter()
                .map(|f| f.path.clone())
                .collect(),
        }
    }

    /// The cell index of a stored field's path (`detail.net`). Panics on a name that is not in
    /// the catalog: callers name fields in code, not from input.
    pub fn cell(&self, path: &str) -> usize {
        self.names
            .iter()
            .position(|n| n == path)
            .unwrap_or_else(|| panic!("no stored field {path}"))
    }

    /// The list index of a list field's path.
    pub fn list(&self, path: &str) -> usize {
        self.lists
            .iter()
            .position(|n| n == path)
            .unwrap_or_else(|| panic!("no list field {path}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog;

    #[test]
    fn layouts_follow_declaration_order_with_objects_flattened() {
        let user = catalog().resource("user").unwrap();
        let layout = Layout::of(user);
        assert_eq!(layout.cell("id"), 0);
        assert_eq!(layout.cell("detail.lang") + 1, layout.cell("fk_sponsor"));
        assert_eq!(layout.list("detail.companies"), 0);
        let record = Record::empty(user);
        assert_eq!(record.cells[layout.cell("name")], Cell::Text(String::new()));
        assert_eq!(record.cells[layout.cell("fk_host")], Cell::Null);
    }
}
