//! A pre-flight check of `.xls` workbooks. calamine parses every sheet when it opens the file
//! and sizes its cell grid from the declared dimensions and the furthest cell, so a few crafted
//! bytes can ask for terabytes and abort the process. This walks the BIFF records first and
//! refuses a grid that would not fit the memory limit.

use std::io::{Cursor, Read};
use std::mem::size_of;

use crate::error::SheetError;
use crate::format::Format;
use crate::limits::{Limits, human_bytes};

/// What calamine holds per grid slot while it builds a sheet.
const SLOT: u64 = size_of::<calamine::Cell<calamine::Data>>() as u64;

/// BIFF record types this check reads.
const BOF: u16 = 0x0809;
const EOF: u16 = 0x000A;
const DIMENSIONS: u16 = 0x0200;
const MULRK: u16 = 0x00BD;
/// Records that start with the row and column of one cell (number, label, rich string,
/// bool/error, RK, shared string label, formula).
const CELLS: [u16; 7] = [0x0203, 0x0204, 0x00D6, 0x0205, 0x027E, 0x00FD, 0x0006];

/// Refuses an `.xls` whose sheets would need a cell grid larger than `max_decompressed_bytes`.
pub(crate) fn check(bytes: &[u8], limits: &Limits) -> Result<(), SheetError> {
    let stream = workbook_stream(bytes)?;
    let mut sheet = Grid::default();
    let mut depth = 0usize;
    let mut at = 0usize;
    while at + 4 <= stream.len() {
        let typ = u16::from_le_bytes([stream[at], stream[at + 1]]);
        let len = usize::from(u16::from_le_bytes([stream[at + 2], stream[at + 3]]));
        let data = &stream[at + 4..(at + 4 + len).min(stream.len())];
        at += 4 + len;
        match typ {
            BOF => {
                depth += 1;
                if depth == 1 {
                    sheet = Grid::default();
                }
            }
            EOF => depth = depth.saturating_sub(1),
            // Records of embedded charts are skipped by calamine too.
            _ if depth != 1 => {}
            DIMENSIONS => sheet.declared = declared_slots(data),
            MULRK if data.len() >= 6 => {
                let row = u16_at(data, 0);
                sheet.include(row, u16_at(data, 2));
                sheet.include(row, u16_at(data, data.len() - 2));
            }
            _ if CELLS.contains(&typ) && data.len() >= 4 => {
                sheet.include(u16_at(data, 0), u16_at(data, 2));
            }
            _ => {}
        }
        let slots = sheet.declared.max(sheet.spanned());
        if slots.saturating_mul(SLOT) > limits.max_decompressed_bytes {
            return Err(SheetError::TooLarge {
                reason: format!(
                    "a sheet's cell grid would take more than {} of memory",
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

/// The bounding box of a sheet's cells, and the slots its dimensions declare.
#[derive(Default)]
struct Grid {
    declared: u64,
    rows: Option<(u16, u16)>,
    cols: Option<(u16, u16)>,
}

impl Grid {
    fn include(&mut self, row: u16, col: u16) {
        let widen = |span: Option<(u16, u16)>, at: u16| match span {
            None => Some((at, at)),
            Some((low, high)) => Some((low.min(at), high.max(at))),
        };
        self.rows = widen(self.rows, row);
        self.cols = widen(self.cols, col);
    }

    fn spanned(&self) -> u64 {
        match (self.rows, self.cols) {
            (Some((top, bottom)), Some((left, right))) => {
                (u64::from(bottom) - u64::from(top) + 1) * (u64::from(right) - u64::from(left) + 1)
            }
            _ => 0,
        }
    }
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

    #[test]
    fn the_grid_spans_its_furthest_cells() {
        let mut grid = Grid::default();
        assert_eq!(grid.spanned(), 0);
        grid.include(3, 2);
        assert_eq!(grid.spanned(), 1);
        grid.include(u16::MAX, u16::MAX);
        assert_eq!(grid.spanned(), 65533 * 65534);
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
