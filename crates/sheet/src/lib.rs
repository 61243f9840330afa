//! Spreadsheet uploads for the file endpoints (docs/API.md, "Files: uploads and processing"): reads `.xlsx`, `.xlsm`, `.xls`,
//! `.ods` and `.csv` bytes into typed rows, matches their header row against the columns of a
//! file type, and writes each file type's `.xlsx` template.
//!
//! This crate does no I/O beyond the bytes it is given, and bounds what a hostile file may cost
//! ([`Limits`]): no cell longer than [`Limits::max_cell_chars`] is ever held whole (its row is
//! skipped, [`Table::skipped`]), so a file costs at most its rows times their width. Processors go: [`Format::from_file_name`] → [`read`] →
//! [`ColumnMap::match_headers`] → [`Row::get`] with a [`Column`] and the [`Cell`] accessors.

#![warn(missing_docs)]

mod cell;
mod columns;
mod csv;
mod error;
mod format;
mod formula;
mod limits;
mod ods_check;
mod table;
mod template;
mod upload_args;
mod workbook;
mod xls_check;
mod xml_guard;

pub use cell::{Cell, number_to_text};
pub use columns::{Column, ColumnMap, FileType, Need, normalize_header};
pub use error::SheetError;
pub use format::Format;
pub use formula::{FORMULA_STARTS, csv_text, typed_text, uploaded_text};
pub use limits::{Limits, MAX_CELL_CHARS};
pub use table::{Row, SkippedRow, Table};
pub use template::template;
pub use upload_args::{ArgumentError, MAX_WAIT, PartName, parse_part_name, parse_wait};

/// Reads the first sheet of an upload: its first non-empty row is the header, the rows below it
/// are data rows numbered as a spreadsheet program shows them, fully empty rows left out.
pub fn read(bytes: &[u8], format: Format, limits: &Limits) -> Result<Table, SheetError> {
    format.check_magic(bytes)?;
    if format.is_zip() {
        limits.check_archive(bytes, format)?;
    }
    // Cells too long to keep become markers before any XML reader holds them whole.
    let bytes = xml_guard::guard(bytes, format, limits.max_cell_chars)?;
    match format {
        Format::Xls => xls_check::check(&bytes, limits)?,
        Format::Ods => ods_check::check(&bytes, limits)?,
        _ => {}
    }
    match format {
        Format::Csv => csv::read(&bytes, limits),
        _ => workbook::read(&bytes, format, limits),
    }
}
