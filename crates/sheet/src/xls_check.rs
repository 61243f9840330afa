//! A pre-flight check of `.xls` workbooks. calamine parses every sheet the workbook lists when
//! it opens the file and builds each one as a whole grid, sized from the declared dimensions
//! and the furthest cells, so a few crafted bytes can ask for gigabytes. This walks the BIFF
//! records as calamine will (each sheet from the position the globals give it, embedded charts
//! skipped) and refuses a workbook whose grids its cells do not pay for, or that would not fit
//! the memory limit.

use std::io::{Cursor, Read};
use std::mem::size_of;

use crate::error::SheetError;
use crate::format::Format;
use crate::limits::{Limits, human_bytes};

/// What calamine holds per cell it collects, and per slot it reserves from the dimensions.
const CELL: u64 = size_of::<calamine::Cell<calamine::Data>>() as u64;
/// What calamine holds per slot of a sheet's value grid.
const VALUE_SLOT: u64 = size_of::<calamine::Data>() as u64;
/// What calamine holds per slot of a sheet's formula grid, and per formula it collects.
const FORMULA_SLOT: u64 = size_of::<String>() as u64;
const FORMULA_CELL: u64 = size_of::<calamine::Cell<String>>() as u64;

/// A grid this small is allowed however few cells fill it (at most ~20 MB).
const GRID_FLOOR: u64 = 1 << 18;
/// Above the floor, the slots a sheet's grid may have per cell the file stores: a table that
/// is at least one sixteenth filled passes; a handful of cells far apart does not.
const SLOTS_PER_CELL: u64 = 16;

/// BIFF record types this check reads.
const BOF: u16 = 0x0809;
const EOF: u16 = 0x000A;
const BOUNDSHEET: u16 = 0x0085;
const DIMENSIONS: u16 = 0x0200;
const BLANK: u16 = 0x0201;
const MULBLANK: u16 = 0x00BE;
const MULRK: u16 = 0x00BD;
const FORMULA: u16 = 0x0006;
/// The text result of the formula before it; calamine puts it at that formula's cell, or at
/// A1 when no formula came first.
const FORMULA_STRING: u16 = 0x0207;
/// Records that start with the row and column of one value cell (number, label, rich string,
/// bool/error, RK, shared string label).
const VALUE_CELLS: [u16; 6] = [0x0203, 0x0204, 0x00D6, 0x0205, 0x027E, 0x00FD];

/// Refuses an `.xls` whose sheets would need cell grids out of proportion to the cells the
/// file holds, or more than `max_decompressed_bytes` in all.
pub(crate) fn check(bytes: &[u8], limits: &Limits) -> Result<(), SheetError> {
    check_stream(&workbook_stream(bytes)?, limits)
}

/// The check on the workbook's BIFF stream.
fn check_stream(stream: &[u8], limits: &Limits) -> Result<(), SheetError> {
    // Sheets that do not overlap are walked once between them, within the stream's length;
    // more means the globals point several sheets into the same records, which only a
    // crafted file does (and which would make this walk, and calamine's, quadratic).
    let walk_budget = stream.len() as u64;
    let mut walked = 0u64;
    let mut memory = 0u64;
    for position in sheet_positions(stream) {
        // calamine refuses a position past the stream; there is nothing to build.
        let Some(records) = stream.get(position..) else {
            continue;
        };
        let sheet = Sheet::walk(records);
        walked += sheet.walked;
        if walked > walk_budget {
            return Err(SheetError::unreadable(
                Format::Xls,
                "its sheets overlap one another",
            ));
        }
        sheet.check_density()?;
        memory = memory.saturating_add(sheet.memory());
        if memory > limits.max_decompressed_bytes {
            return Err(SheetError::TooLarge {
                reason: format!(
                    "its sheets' cell grids would take more than {} of memory",
                    human_bytes(limits.max_decompressed_bytes)
                ),
            });
        }
    }
    Ok(())
}

/// The BIFF stream of the compound file ("Workbook", or "Book" for Excel 5).
fn workbook_stream(bytes: &[u8]) -> Result<Vec<u8>, SheetError> {
    let unreadable = |e: std::io::Error| SheetError::unreadable(Format::Xls, e);
    let mut file = cfb::CompoundFile::open(Cursor::new(bytes)).map_err(unreadable)?;
    let name = ["/Workbook", "/Book"]
        .into_iter()
        .find(|name| file.is_stream(name))
        .ok_or_else(|| SheetError::unreadable(Format::Xls, "it has no workbook stream"))?;
    let stream = file.open_stream(name).map_err(unreadable)?;
    let mut data = Vec::new();
    // A stream cannot hold more than the file; the bound keeps a looping chain finite.
    stream
        .take(bytes.len() as u64)
        .read_to_end(&mut data)
        .map_err(unreadable)?;
    Ok(data)
}

/// The records of a stream as calamine iterates them: type and data, until the stream ends or
/// a record runs past it (where calamine stops with an error).
fn records(stream: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    let mut rest = stream;
    std::iter::from_fn(move || {
        if rest.len() < 4 {
            return None;
        }
        let typ = u16_at(rest, 0);
        let len = usize::from(u16_at(rest, 2));
        let (record, next) = rest.split_at_checked(4 + len)?;
        rest = next;
        Some((typ, &record[4..]))
    })
}

/// Where the globals substream says each sheet starts (BOUNDSHEET records, read until the
/// globals' EOF as calamine reads them), duplicates included: calamine builds each.
fn sheet_positions(stream: &[u8]) -> Vec<usize> {
    records(stream)
        .take_while(|(typ, _)| *typ != EOF)
        .filter(|(typ, data)| *typ == BOUNDSHEET && data.len() >= 4)
        .map(|(_, data)| u32_at(data, 0) as usize)
        .collect()
}

/// What calamine will build for one sheet, counted from its records.
#[derive(Default)]
struct Sheet {
    /// Bytes of records walked, for the overlap budget.
    walked: u64,
    /// Slots reserved from the DIMENSIONS record.
    declared: u64,
    /// Cells the file stores, blanks included: what pays for a grid.
    stored: u64,
    /// Value cells calamine collects, and the box they span.
    values: u64,
    value_box: Span,
    /// Formulas calamine collects, and the box they span.
    formulas: u64,
    formula_box: Span,
}

impl Sheet {
    /// Walks a sheet's records from its position to its EOF, skipping nested substreams
    /// (embedded charts) as calamine does.
    fn walk(stream: &[u8]) -> Sheet {
        let mut sheet = Sheet::default();
        let mut seen_bof = false;
        let mut depth = 0usize;
        let mut formula_at = (0u32, 0u32);
        for (typ, data) in records(stream) {
            sheet.walked += 4 + data.len() as u64;
            if depth > 0 {
                match typ {
                    BOF => depth += 1,
                    EOF => depth -= 1,
                    _ => {}
                }
                continue;
            }
            match typ {
                BOF if seen_bof => depth += 1,
                BOF => seen_bof = true,
                EOF => break,
                DIMENSIONS => sheet.declared = sheet.declared.max(declared_slots(data)),
                BLANK => sheet.stored += 1,
                MULBLANK if data.len() >= 6 => sheet.stored += (data.len() as u64 - 6) / 2,
                MULRK if data.len() >= 6 => {
                    let count = (data.len() as u32 - 6) / 6;
                    if count > 0 {
                        let (row, first) = (u32::from(u16_at(data, 0)), u32::from(u16_at(data, 2)));
                        sheet.value(row, first, u64::from(count));
                        sheet.value_box.include(row, first + count - 1);
                        sheet.stored += u64::from(count);
                    }
                }
                FORMULA if data.len() >= 20 => {
                    formula_at = (u32::from(u16_at(data, 0)), u32::from(u16_at(data, 2)));
                    sheet.value(formula_at.0, formula_at.1, 1);
                    sheet.formulas += 1;
                    sheet.formula_box.include(formula_at.0, formula_at.1);
                    sheet.stored += 1;
                }
                FORMULA_STRING => sheet.value(formula_at.0, formula_at.1, 1),
                _ if VALUE_CELLS.contains(&typ) && data.len() >= 4 => {
                    sheet.value(u32::from(u16_at(data, 0)), u32::from(u16_at(data, 2)), 1);
                    sheet.stored += 1;
                }
                _ => {}
            }
        }
        sheet
    }

    fn value(&mut self, row: u32, column: u32, count: u64) {
        self.values += count;
        self.value_box.include(row, column);
    }

    /// The largest grid calamine will make for this sheet.
    fn slots(&self) -> u64 {
        self.declared
            .max(self.value_box.slots())
            .max(self.formula_box.slots())
    }

    /// Refuses a grid its stored cells do not pay for.
    fn check_density(&self) -> Result<(), SheetError> {
        let slots = self.slots();
        if slots <= GRID_FLOOR.max(self.stored.saturating_mul(SLOTS_PER_CELL)) {
            return Ok(());
        }
        Err(SheetError::TooLarge {
            reason: format!(
                "a sheet's {} cells lie scattered over a grid of {slots} cells, which an .xls \
                 is read as; delete the stray cells far from the table, or save the file as \
                 .xlsx or .csv",
                self.stored
            ),
        })
    }

    /// The bytes calamine will hold for this sheet once built.
    fn memory(&self) -> u64 {
        let collected = self.declared.max(self.values).saturating_mul(CELL);
        let grids = self
            .value_box
            .slots()
            .saturating_mul(VALUE_SLOT)
            .saturating_add(self.formula_box.slots().saturating_mul(FORMULA_SLOT));
        collected
            .saturating_add(grids)
            .saturating_add(self.formulas.saturating_mul(FORMULA_CELL))
    }
}

/// The bounding box of some cells: (first row, last row), (first column, last column).
#[derive(Default, Clone, Copy)]
struct Span(Option<((u32, u32), (u32, u32))>);

impl Span {
    fn include(&mut self, row: u32, column: u32) {
        let widen = |(low, high): (u32, u32), at: u32| (low.min(at), high.max(at));
        self.0 = Some(match self.0 {
            None => ((row, row), (column, column)),
            Some((rows, columns)) => (widen(rows, row), widen(columns, column)),
        });
    }

    /// The slots of the grid between the furthest cells, as `Range::from_sparse` allocates.
    fn slots(&self) -> u64 {
        self.0.map_or(0, |((top, bottom), (left, right))| {
            (u64::from(bottom) - u64::from(top) + 1)
                .saturating_mul(u64::from(right) - u64::from(left) + 1)
        })
    }
}

/// The slots calamine reserves for a DIMENSIONS record, computed as it does (including its
/// wrap-around when the first row is past the last).
fn declared_slots(data: &[u8]) -> u64 {
    let (first_row, last_row, mut first_col, last_col) = match data.len() {
        10 => (
            u32::from(u16_at(data, 0)),
            u32::from(u16_at(data, 2)),
            u32::from(u16_at(data, 4)),
            u32::from(u16_at(data, 6)),
        ),
        14 | 16 => (
            u32_at(data, 0),
            u32_at(data, 4),
            u32::from(u16_at(data, 8)),
            u32::from(u16_at(data, 10)),
        ),
        _ => return 0,
    };
    if first_col > 0xFF || last_col < first_col {
        first_col = 0;
    }
    if last_row == 0 || last_col == 0 {
        return 0;
    }
    let rows = (last_row - 1).wrapping_sub(first_row).wrapping_add(1);
    let cols = (last_col - 1).wrapping_sub(first_col).wrapping_add(1);
    u64::from(rows).saturating_mul(u64::from(cols))
}

fn u16_at(data: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([data[at], data[at + 1]])
}

fn u32_at(data: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dimensions(first_row: u32, last_row: u32, first_col: u16, last_col: u16) -> Vec<u8> {
        let mut data = Vec::new();
        data.extend_from_slice(&first_row.to_le_bytes());
        data.extend_from_slice(&last_row.to_le_bytes());
        data.extend_from_slice(&first_col.to_le_bytes());
        data.extend_from_slice(&last_col.to_le_bytes());
        data.extend_from_slice(&[0, 0]);
        data
    }

    #[test]
    fn declared_dimensions_are_counted_as_calamine_does() {
        assert_eq!(declared_slots(&dimensions(0, 5, 0, 10)), 50);
        assert_eq!(declared_slots(&dimensions(0, 0, 0, 0)), 0);
        assert_eq!(
            declared_slots(&dimensions(0, u32::MAX, 0, u16::MAX)),
            u64::from(u32::MAX) * u64::from(u16::MAX)
        );
        // First row past the last: calamine's arithmetic wraps to a huge count.
        assert!(declared_slots(&dimensions(10, 5, 0, 1)) > 1 << 31);
    }

    /// One BIFF record.
    fn record(typ: u16, data: &[u8]) -> Vec<u8> {
        let mut bytes = typ.to_le_bytes().to_vec();
        bytes.extend_from_slice(&(data.len() as u16).to_le_bytes());
        bytes.extend_from_slice(data);
        bytes
    }

    /// A cell record of `typ` at a row and column, with `rest` bytes of value.
    fn cell(typ: u16, row: u16, column: u16, rest: usize) -> Vec<u8> {
        let mut data = row.to_le_bytes().to_vec();
        data.extend_from_slice(&column.to_le_bytes());
        data.resize(4 + rest, 0);
        record(typ, &data)
    }

    /// A MULRK of `count` numbers from a row and column.
    fn mulrk(row: u16, first: u16, count: u16) -> Vec<u8> {
        let mut data = row.to_le_bytes().to_vec();
        data.extend_from_slice(&first.to_le_bytes());
        data.resize(4 + 6 * usize::from(count), 0);
        data.extend_from_slice(&(first + count - 1).to_le_bytes());
        record(MULRK, &data)
    }

    const NUMBER: u16 = 0x0203;
    const LABELSST: u16 = 0x00FD;

    fn sheet(records: &[Vec<u8>]) -> Vec<u8> {
        let mut bytes = record(BOF, &[0; 16]);
        bytes.extend(records.concat());
        bytes.extend(record(EOF, &[]));
        bytes
    }

    /// Globals listing sheets at `positions`, followed by the sheets' bytes.
    fn workbook(positions: &[u32], sheets: &[u8]) -> Vec<u8> {
        let mut globals = record(BOF, &[0; 16]);
        for position in positions {
            let mut data = position.to_le_bytes().to_vec();
            data.extend_from_slice(&[0, 0, 1, 0, b'S']);
            globals.extend(record(BOUNDSHEET, &data));
        }
        globals.extend(record(EOF, &[]));
        globals.extend_from_slice(sheets);
        globals
    }

    #[test]
    fn a_sheet_is_walked_as_calamine_walks_it() {
        let chart = sheet(&[cell(NUMBER, 60_000, 200, 10)]);
        let walked = Sheet::walk(&sheet(&[
            record(DIMENSIONS, &dimensions(0, 3, 0, 3)),
            cell(NUMBER, 0, 0, 10),
            mulrk(1, 0, 3),
            chart,
            cell(LABELSST, 2, 1, 6),
            cell(BLANK, 2, 2, 2),
        ]));
        assert_eq!(
            walked.value_box.slots(),
            9,
            "the chart's cell is not counted"
        );
        assert_eq!(walked.values, 5);
        assert_eq!(walked.stored, 6);
        assert_eq!(walked.slots(), 9);
        walked.check_density().unwrap();

        // The text of a formula with no formula before it lands at A1.
        let walked = Sheet::walk(&sheet(&[
            cell(LABELSST, 60_000, 200, 6),
            record(FORMULA_STRING, &[1, 0, 0, b'x']),
        ]));
        assert_eq!(walked.value_box.slots(), 60_001 * 201);
    }

    #[test]
    fn cells_far_apart_are_refused_and_a_filled_table_is_not() {
        let scattered = Sheet::walk(&sheet(&[
            cell(NUMBER, 0, 0, 10),
            cell(NUMBER, 65_535, 255, 10),
        ]));
        let err = scattered.check_density().unwrap_err();
        assert!(matches!(err, SheetError::TooLarge { .. }), "{err}");
        assert!(err.to_string().contains("2 cells lie scattered"), "{err}");

        // Two thousand rows of two hundred numbers: far above the floor, and full.
        let rows: Vec<Vec<u8>> = (0..2_000).map(|row| mulrk(row, 0, 200)).collect();
        let table = Sheet::walk(&sheet(&rows));
        assert_eq!(table.slots(), 400_000);
        table.check_density().unwrap();
        check_stream(&workbook(&[41], &sheet(&rows)), &Limits::default()).unwrap();
    }

    #[test]
    fn every_sheet_the_globals_list_is_counted() {
        // Each sheet alone is within the memory limit; the same records listed as many sheets
        // are built as many times by calamine.
        let rows: Vec<Vec<u8>> = (0..2_000).map(|row| mulrk(row, 0, 200)).collect();
        let limits = Limits {
            max_decompressed_bytes: 48 * 1024 * 1024,
            ..Limits::default()
        };
        let globals_len = workbook(&[0], &[]).len() as u32;
        check_stream(&workbook(&[globals_len], &sheet(&rows)), &limits).unwrap();
        let twice = workbook(&[0, 0], &[]).len() as u32;
        let err = check_stream(&workbook(&[twice, twice], &sheet(&rows)), &limits).unwrap_err();
        assert!(
            err.to_string().contains("overlap"),
            "the second walk of the same records is refused: {err}"
        );

        // Three sheets of their own, each within the limit, together over it.
        let sheet_len = sheet(&rows).len() as u32;
        let at = workbook(&[0, 0, 0], &[]).len() as u32;
        let three = workbook(
            &[at, at + sheet_len, at + 2 * sheet_len],
            &[sheet(&rows), sheet(&rows), sheet(&rows)].concat(),
        );
        let err = check_stream(&three, &limits).unwrap_err();
        assert!(
            err.to_string()
                .contains("cell grids would take more than 48 MiB"),
            "{err}"
        );

        // A position past the stream is skipped, as calamine cannot build it.
        check_stream(&workbook(&[u32::MAX], &[]), &limits).unwrap();
    }

    #[test]
    fn a_sheet_position_inside_a_record_is_walked_from_there() {
        // The globals point into the middle of a record whose bytes read as a far-away cell.
        let far = cell(NUMBER, 65_535, 255, 10);
        let mut hidden = 0u16.to_le_bytes().to_vec();
        hidden.extend(cell(NUMBER, 0, 0, 10));
        hidden.extend(&far);
        let globals_len = workbook(&[0], &[]).len() as u32;
        let mut sheets = sheet(&[record(0x1234, &hidden)]);
        sheets.extend(record(EOF, &[]));
        // BOF (20 bytes) + the unknown record's header (4) + the 2 leading bytes.
        let err =
            check_stream(&workbook(&[globals_len + 26], &sheets), &Limits::default()).unwrap_err();
        assert!(matches!(err, SheetError::TooLarge { .. }), "{err}");
    }

    #[test]
    fn not_a_compound_file_is_unreadable() {
        let err = check(
            b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1 and then nothing",
            &Limits::default(),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("the file is not a readable .xls workbook:"),
            "{err}"
        );
    }
}
