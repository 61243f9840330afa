//! The rows read from a sheet, and the builder every reader feeds cell by cell. The builder keeps
//! the limits: it stops at too many rows and at too much memory, whatever the format, and keeps
//! no cell longer than a cell may be (the row is skipped with the reason instead).

use std::collections::{BTreeMap, BTreeSet};
use std::mem::size_of;

use crate::cell::Cell;
use crate::columns::{Column, ColumnMap};
use crate::error::{SheetError, column_letters, grouped};
use crate::limits::{Limits, human_bytes};

/// The first sheet of an upload: the header (its first non-empty row) and the data rows below
/// it, fully empty rows left out, and the rows skipped while reading (with their reasons).
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    header: Row,
    rows: Vec<Row>,
    skipped: Vec<SkippedRow>,
}

/// A data row left out while reading because a cell under the header is longer than
/// [`Limits::max_cell_chars`]; that cell was never held in memory whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedRow {
    /// The 1-based row number, as shown in a spreadsheet program.
    pub number: u32,
    /// Why, naming the column: for the file's report.
    pub reason: String,
}

impl Table {
    /// A table from rows already typed, for tests of the code that consumes tables.
    pub fn new(header: Row, rows: Vec<Row>) -> Table {
        Table {
            header,
            rows,
            skipped: Vec::new(),
        }
    }

    /// The rows skipped while reading, in sheet order; they are data rows too (rows read =
    /// [`Table::rows`] + these).
    pub fn skipped(&self) -> &[SkippedRow] {
        &self.skipped
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
    /// Cells longer than `max_cell_chars` by 0-based row: their columns and lengths. Only the
    /// length is kept; the row is skipped if one of them is under the header.
    long: BTreeMap<u32, Vec<(u32, u64)>>,
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
            long: BTreeMap::new(),
        }
    }

    /// Adds a cell at a 0-based position; empty cells are dropped, and a text longer than the
    /// cell limit is only noted ([`TableBuilder::push_long`]).
    pub(crate) fn push(&mut self, row: u32, column: u32, cell: Cell) -> Result<(), SheetError> {
        if cell.is_empty() {
            return Ok(());
        }
        if let Cell::Text(text) = &cell
            && text.len() > self.limits.max_cell_chars
        {
            let chars = text.chars().count();
            if chars > self.limits.max_cell_chars {
                return self.push_long(row, column, chars as u64);
            }
        }
        let mut cost = (size_of::<(u32, Cell)>() + text_capacity(&cell)) as u64;
        let cells = match self.rows.get_mut(&row) {
            Some(cells) => cells,
            None => {
                self.check_new_row(row)?;
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

    /// Notes a cell of `chars` characters, more than a cell may hold, that the reader did not
    /// keep: its row is skipped if the cell is under the header.
    pub(crate) fn push_long(
        &mut self,
        row: u32,
        column: u32,
        chars: u64,
    ) -> Result<(), SheetError> {
        if !self.long.contains_key(&row) {
            self.check_new_row(row)?;
        }
        self.bytes = self
            .bytes
            .saturating_add(ROW_OVERHEAD + size_of::<(u32, u64)>() as u64);
        if self.bytes > self.limits.max_decompressed_bytes {
            return Err(self.too_large());
        }
        self.long.entry(row).or_default().push((column, chars));
        Ok(())
    }

    /// Refuses a row that would be one more than the header and `max_rows` data rows.
    fn check_new_row(&self, row: u32) -> Result<(), SheetError> {
        if self.rows.contains_key(&row) || self.long.contains_key(&row) {
            return Ok(());
        }
        let rows = self.rows.len() + self.long.len();
        if rows > self.limits.max_rows {
            return Err(SheetError::TooManyRows {
                max: self.limits.max_rows,
            });
        }
        Ok(())
    }

    /// The table: the first non-empty row is the header; data rows keep only the columns under
    /// the header, rows left with nothing are left out, and rows with a cell too long under
    /// the header are skipped with the reason. A header with a cell too long fails the file.
    pub(crate) fn finish(mut self) -> Result<Table, SheetError> {
        let numbers: BTreeSet<u32> = self.rows.keys().chain(self.long.keys()).copied().collect();
        let mut numbers = numbers.into_iter();
        let header_row = numbers.next().ok_or(SheetError::Empty)?;
        if let Some(&(column, chars)) = self.long.get(&header_row).and_then(|l| l.first()) {
            return Err(SheetError::LongHeader {
                cell: format!("{}{}", column_letters(column as usize), header_row + 1),
                chars,
                max: self.limits.max_cell_chars,
            });
        }
        let header_cells = self.rows.remove(&header_row).unwrap_or_default();
        let header = lay_out(header_row, header_cells, u32::MAX);
        let width = header.cells.len() as u32;
        // Laying rows out densely costs one slot per column up to the last used one; check
        // before allocating, so that a few far-right cells cannot blow the memory up.
        let mut dense: u64 = 0;
        let mut kept = Vec::new();
        let mut skipped = Vec::new();
        for row in numbers {
            let mut cells = self.rows.remove(&row).unwrap_or_default();
            if let Some(&(column, chars)) = self
                .long
                .get(&row)
                .and_then(|long| long.iter().find(|(column, _)| *column < width))
            {
                skipped.push(SkippedRow {
                    number: row.saturating_add(1),
                    reason: format!(
                        "column {} holds {} characters, more than the {} a cell may hold",
                        column_letters(column as usize),
                        grouped(chars),
                        grouped(self.limits.max_cell_chars as u64)
                    ),
                });
                continue;
            }
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
        if kept.len() + skipped.len() > self.limits.max_rows {
            return Err(SheetError::TooManyRows {
                max: self.limits.max_rows,
            });
        }
        let rows = kept
            .into_iter()
            .map(|(row, cells)| lay_out(row, cells, width))
            .collect();
        Ok(Table {
            header,
            rows,
            skipped,
        })
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
            ..Limits::default()
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

    #[test]
    fn a_long_cell_under_the_header_skips_its_row_only() {
        let mut builder = TableBuilder::new(&Limits {
            max_cell_chars: 5,
            ..Limits::default()
        });
        builder.push(0, 0, Cell::text("Code")).unwrap();
        builder.push(0, 1, Cell::text("Title")).unwrap();
        builder.push(1, 0, Cell::text("1")).unwrap();
        builder.push(1, 1, Cell::text("ÄÖÜäö")).unwrap();
        builder.push(2, 0, Cell::text("2")).unwrap();
        builder.push(2, 1, Cell::text("ÄÖÜäöü")).unwrap();
        builder.push(3, 0, Cell::text("3")).unwrap();
        builder.push_long(3, 7, 1_000_000).unwrap();
        builder.push_long(4, 1, 400_000_000).unwrap();
        let table = builder.finish().unwrap();
        let kept: Vec<u32> = table.rows().iter().map(Row::number).collect();
        assert_eq!(
            kept,
            vec![2, 4],
            "a long cell past the header is ignored like its column"
        );
        assert_eq!(
            table.skipped(),
            &[
                SkippedRow {
                    number: 3,
                    reason: "column B holds 6 characters, more than the 5 a cell may hold".into()
                },
                SkippedRow {
                    number: 5,
                    reason:
                        "column B holds 400,000,000 characters, more than the 5 a cell may hold"
                            .into()
                },
            ]
        );
    }

    #[test]
    fn a_long_header_cell_fails_the_sheet() {
        let mut builder = TableBuilder::new(&Limits::default());
        builder.push(1, 0, Cell::text("Barcode")).unwrap();
        builder.push_long(1, 2, 40_000).unwrap();
        builder.push(2, 0, Cell::text("1")).unwrap();
        assert_eq!(
            builder.finish().unwrap_err().to_string(),
            "the header row has a cell (C2) of 40,000 characters; a cell may hold at most 32,767"
        );
    }

    #[test]
    fn long_cells_count_as_rows() {
        let mut builder = TableBuilder::new(&limits(2, u64::MAX));
        builder.push(0, 0, Cell::text("Barcode")).unwrap();
        builder.push_long(1, 0, 1 << 20).unwrap();
        builder.push_long(1, 1, 1 << 20).unwrap();
        builder.push(2, 0, Cell::Number(1.0)).unwrap();
        let err = builder.push_long(3, 0, 1 << 20).unwrap_err();
        assert_eq!(err, SheetError::TooManyRows { max: 2 });
    }
}
