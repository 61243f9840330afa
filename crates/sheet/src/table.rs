//! The rows read from a sheet, and the builder every reader feeds cell by cell. The builder keeps
//! the limits: it stops at too many rows and at too much memory, whatever the format.

use std::collections::BTreeMap;
use std::mem::size_of;

use crate::cell::Cell;
use crate::columns::{Column, ColumnMap};
use crate::error::SheetError;
use crate::limits::{Limits, human_bytes};

/// The first sheet of an upload: the header (its first non-empty row) and the data rows below
/// it, fully empty rows left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    header: Row,
    rows: Vec<Row>,
}

impl Table {
    /// A table from rows already typed, for tests of the code that consumes tables.
    pub fn new(header: Row, rows: Vec<Row>) -> Table {
        Table { header, rows }
    }

    /// The header row, to match with [`ColumnMap::match_headers`].
    pub fn header(&self) -> &Row {
        &self.header
    }

    /// The data rows, in sheet order.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }
}

/// One row of a sheet, with the number a user sees for it in a spreadsheet program, so a bad
/// row can be reported as "row 7".
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    number: u32,
    cells: Vec<Cell>,
}

impl Row {
    /// A row from its 1-based number and its cells from column A on.
    pub fn new(number: u32, cells: Vec<Cell>) -> Row {
        Row { number, cells }
    }

    /// The 1-based row number, as shown in a spreadsheet program.
    pub fn number(&self) -> u32 {
        self.number
    }

    /// The cells from column A up to the last non-empty one.
    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }

    /// The cell at a 0-based column index; [`Cell::Empty`] past the end of the row.
    pub fn cell(&self, index: usize) -> &Cell {
        self.cells.get(index).unwrap_or(&Cell::Empty)
    }

    /// The cell of a known column, as found by the header match; [`Cell::Empty`] when the file
    /// has no such column.
    pub fn get(&self, map: &ColumnMap, column: Column) -> &Cell {
        map.index(column)
            .map_or(&Cell::Empty, |index| self.cell(index))
    }
}

/// Collects the non-empty cells of a sheet in any order, then lays them out as a [`Table`].
pub(crate) struct TableBuilder {
    limits: Limits,
    /// Non-empty cells by 0-based row, each with its 0-based column.
    rows: BTreeMap<u32, Vec<(u32, Cell)>>,
    /// An estimate of the memory held so far, kept under `max_decompressed_bytes`.
    bytes: u64,
}

/// A row's own cost besides its cells (map node, vector header).
const ROW_OVERHEAD: u64 = 64;

impl TableBuilder {
    /// An empty builder bound by `limits`.
    pub(crate) fn new(limits: &Limits) -> TableBuilder {
        TableBuilder {
            limits: *limits,
            rows: BTreeMap::new(),
            bytes: 0,
        }
    }

    /// Adds a cell at a 0-based position; empty cells are dropped.
    pub(crate) fn push(&mut self, row: u32, column: u32, cell: Cell) -> Result<(), SheetError> {
        if cell.is_empty() {
            return Ok(());
        }
        let mut cost = (size_of::<(u32, Cell)>() + text_capacity(&cell)) as u64;
        let cells = match self.rows.get_mut(&row) {
            Some(cells) => cells,
            None => {
                if self.rows.len() > self.limits.max_rows {
                    // The header plus max_rows data rows are already here.
                    return Err(SheetError::TooManyRows {
                        max: self.limits.max_rows,
                    });
                }
                cost += ROW_OVERHEAD;
                self.rows.entry(row).or_default()
            }
        };
        self.bytes = self.bytes.saturating_add(cost);
        if self.bytes > self.limits.max_decompressed_bytes {
            return Err(self.too_large());
        }
        cells.push((column, cell));
        Ok(())
    }

    /// The table: the first non-empty row is the header; data rows keep only the columns under
    /// the header, and rows left with nothing are skipped.
    pub(crate) fn finish(self) -> Result<Table, SheetError> {
        let mut rows = self.rows.into_iter();
        let (header_row, header_cells) = rows.next().ok_or(SheetError::Empty)?;
        let header = lay_out(header_row, header_cells, u32::MAX);
        let width = header.cells.len() as u32;
        // Laying rows out densely costs one slot per column up to the last used one; check
        // before allocating, so that a few far-right cells cannot blow the memory up.
        let mut dense: u64 = 0;
        let mut kept = Vec::new();
        for (row, mut cells) in rows {
            cells.retain(|(column, _)| *column < width);
            let Some(last) = cells.iter().map(|(column, _)| *column).max() else {
                continue;
            };
            dense = dense.saturating_add(u64::from(last + 1) * size_of::<Cell>() as u64);
            if self.bytes.saturating_add(dense) > self.limits.max_decompressed_bytes {
                return Err(too_large(&self.limits));
            }
            kept.push((row, cells));
        }
        if kept.len() > self.limits.max_rows {
            return Err(SheetError::TooManyRows {
                max: self.limits.max_rows,
            });
        }
        let rows = kept
            .into_iter()
            .map(|(row, cells)| lay_out(row, cells, width))
            .collect();
        Ok(Table { header, rows })
    }

    fn too_large(&self) -> SheetError {
        too_large(&self.limits)
    }
}

/// The error for cells that would take more memory than allowed.
fn too_large(limits: &Limits) -> SheetError {
    SheetError::TooLarge {
        reason: format!(
            "its cells take more than {} of memory",
            human_bytes(limits.max_decompressed_bytes)
        ),
    }
}

/// The heap bytes a cell owns.
fn text_capacity(cell: &Cell) -> usize {
    match cell {
        Cell::Text(text) => text.capacity(),
        _ => 0,
    }
}

/// A dense row from sparse cells, columns at or past `width` left out.
fn lay_out(row: u32, cells: Vec<(u32, Cell)>, width: u32) -> Row {
    let last = cells
        .iter()
        .map(|(column, _)| *column)
        .filter(|column| *column < width)
        .max();
    let mut dense = vec![Cell::Empty; last.map_or(0, |last| last as usize + 1)];
    for (column, cell) in cells {
        if let Some(slot) = dense.get_mut(column as usize) {
            *slot = cell;
        }
    }
    Row {
        number: row.saturating_add(1),
        cells: dense,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_rows: usize, max_bytes: u64) -> Limits {
        Limits {
            max_rows,
            max_decompressed_bytes: max_bytes,
        }
    }

    #[test]
    fn cells_in_any_order_become_numbered_rows() {
        let mut builder = TableBuilder::new(&Limits::default());
        builder.push(4, 1, Cell::Number(2.0)).unwrap();
        builder.push(1, 0, Cell::text("Barcode")).unwrap();
        builder.push(1, 1, Cell::text("Qty")).unwrap();
        builder.push(2, 0, Cell::Empty).unwrap();
        builder.push(4, 0, Cell::text("123")).unwrap();
        builder.push(4, 7, Cell::text("beyond the header")).unwrap();
        builder
            .push(5, 9, Cell::text("only beyond the header"))
            .unwrap();
        let table = builder.finish().unwrap();
        assert_eq!(table.header().number(), 2);
        assert_eq!(table.header().cells().len(), 2);
        assert_eq!(table.rows().len(), 1);
        let row = &table.rows()[0];
        assert_eq!(row.number(), 5);
        assert_eq!(row.cells(), &[Cell::text("123"), Cell::Number(2.0)]);
        assert_eq!(row.cell(5), &Cell::Empty);
    }

    #[test]
    fn no_cells_is_an_empty_sheet() {
        let builder = TableBuilder::new(&Limits::default());
        assert_eq!(builder.finish().unwrap_err(), SheetError::Empty);
    }

    #[test]
    fn too_many_rows_are_refused_while_reading() {
        let mut builder = TableBuilder::new(&limits(2, u64::MAX));
        for row in 0..3 {
            builder.push(row, 0, Cell::Number(1.0)).unwrap();
        }
        let err = builder.push(3, 0, Cell::Number(1.0)).unwrap_err();
        assert_eq!(err, SheetError::TooManyRows { max: 2 });
    }

    #[test]
    fn memory_is_bounded() {
        let mut builder = TableBuilder::new(&limits(10, 1000));
        let long = "x".repeat(600);
        builder.push(0, 0, Cell::text(&long)).unwrap();
        let err = builder.push(1, 0, Cell::text(&long)).unwrap_err();
        assert!(matches!(err, SheetError::TooLarge { .. }), "{err}");
    }

    #[test]
    fn far_right_cells_cannot_blow_up_the_layout() {
        let mut builder = TableBuilder::new(&limits(100, 64 * 1024));
        builder.push(0, 16_000, Cell::text("wide header")).unwrap();
        for row in 1..50 {
            builder.push(row, 15_999, Cell::Number(1.0)).unwrap();
        }
        let err = builder.finish().unwrap_err();
        assert!(matches!(err, SheetError::TooLarge { .. }), "{err}");
    }
}
