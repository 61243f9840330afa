//! Workbook uploads (xlsx, xlsm, xls, ods) through calamine: the first sheet's cells, typed as
//! the workbook stored them. xlsx is streamed cell by cell so the row and memory limits stop a
//! hostile sheet early; xls and ods are read whole by calamine, within its own caps. Cells too
//! long to keep arrive as the XML guard's markers (xlsx, ods) or within the format's own bound
//! of 65,535 characters (xls), and are noted rather than kept.

use std::io::Cursor;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::str::FromStr;

use calamine::{Data, DataRef, ExcelDateTime, Ods, Range, Reader, Xls, Xlsx};
use chrono::{NaiveDate, NaiveDateTime, NaiveTime};

use crate::cell::Cell;
use crate::error::SheetError;
use crate::format::Format;
use crate::limits::Limits;
use crate::table::{Table, TableBuilder};
use crate::xml_guard;

/// Reads the first sheet of a workbook whose magic bytes and archive sizes were checked.
pub(crate) fn read(bytes: &[u8], format: Format, limits: &Limits) -> Result<Table, SheetError> {
    // A parser bug on a malformed file must not take the caller down: report it as unreadable.
    catch_unwind(AssertUnwindSafe(|| match format {
        Format::Xlsx | Format::Xlsm => read_xlsx(bytes, format, limits),
        Format::Xls => read_whole::<Xls<_>>(bytes, format, limits),
        Format::Ods => read_whole::<Ods<_>>(bytes, format, limits),
        Format::Csv => unreachable!("CSV is not a workbook"),
    }))
    .unwrap_or_else(|_| {
        Err(SheetError::unreadable(
            format,
            "its structure could not be understood",
        ))
    })
}

/// Streams the first worksheet's cells into the builder.
fn read_xlsx(bytes: &[u8], format: Format, limits: &Limits) -> Result<Table, SheetError> {
    let unreadable = |e: calamine::XlsxError| SheetError::unreadable(format, e);
    let mut workbook = Xlsx::new(Cursor::new(bytes)).map_err(unreadable)?;
    let name = first_sheet(&workbook, format)?;
    let mut cells = workbook.worksheet_cells_reader(&name).map_err(unreadable)?;
    let mut builder = TableBuilder::new(limits);
    while let Some(cell) = cells.next_cell().map_err(unreadable)? {
        let (row, column) = cell.get_position();
        push(&mut builder, row, column, from_data_ref(cell.get_value()))?;
    }
    builder.finish()
}

/// Reads the first sheet of a format that calamine only reads whole.
fn read_whole<R>(bytes: &[u8], format: Format, limits: &Limits) -> Result<Table, SheetError>
where
    R: Reader<Cursor<Vec<u8>>>,
    R::Error: std::fmt::Display,
{
    let unreadable = |e: R::Error| SheetError::unreadable(format, e);
    // calamine's `Reader` wants an owned reader; the copy is bounded by the upload size.
    let mut workbook = R::new(Cursor::new(bytes.to_vec())).map_err(unreadable)?;
    let name = first_sheet(&workbook, format)?;
    let range: Range<Data> = workbook.worksheet_range(&name).map_err(unreadable)?;
    let Some((top, left)) = range.start() else {
        return Err(SheetError::Empty);
    };
    let mut builder = TableBuilder::new(limits);
    for (row, column, data) in range.used_cells() {
        push(
            &mut builder,
            top + row as u32,
            left + column as u32,
            from_data(data),
        )?;
    }
    builder.finish()
}

/// Adds a cell; a marker left by the XML guard for a cell too long is noted as such.
fn push(builder: &mut TableBuilder, row: u32, column: u32, cell: Cell) -> Result<(), SheetError> {
    if let Cell::Text(text) = &cell
        && let Some(chars) = xml_guard::overlong(text)
    {
        return builder.push_long(row, column, chars);
    }
    builder.push(row, column, cell)
}

/// The name of the workbook's first sheet.
fn first_sheet<RS, R>(workbook: &R, format: Format) -> Result<String, SheetError>
where
    RS: std::io::Read + std::io::Seek,
    R: Reader<RS>,
{
    workbook
        .sheet_names()
        .into_iter()
        .next()
        .ok_or_else(|| SheetError::unreadable(format, "it has no sheet"))
}

/// A cell from calamine's owned value.
fn from_data(data: &Data) -> Cell {
    match data {
        Data::Empty => Cell::Empty,
        Data::String(text) => Cell::text(text),
        Data::Int(n) => Cell::Number(*n as f64),
        Data::Float(n) => Cell::Number(*n),
        Data::Bool(b) => Cell::Bool(*b),
        Data::DateTime(dt) => from_excel_datetime(dt),
        Data::DateTimeIso(text) => from_iso(text),
        Data::DurationIso(text) => Cell::text(text),
        Data::Error(error) => Cell::Text(error.to_string()),
    }
}

/// A cell from calamine's borrowed value (xlsx streaming).
fn from_data_ref(data: &DataRef<'_>) -> Cell {
    match data {
        DataRef::Empty => Cell::Empty,
        DataRef::String(text) => Cell::text(text),
        DataRef::SharedString(text) => Cell::text(text),
        DataRef::Int(n) => Cell::Number(*n as f64),
        DataRef::Float(n) => Cell::Number(*n),
        DataRef::Bool(b) => Cell::Bool(*b),
        DataRef::DateTime(dt) => from_excel_datetime(dt),
        DataRef::DateTimeIso(text) => from_iso(text),
        DataRef::DurationIso(text) => Cell::text(text),
        DataRef::Error(error) => Cell::Text(error.to_string()),
    }
}

/// The serial number of Excel's last date (9999-12-31), plus the 1904 system's offset: a
/// date-formatted number beyond it is no date, and calamine's conversion of it would overflow
/// (a panic that would refuse the whole file).
const LAST_DATE_SERIAL: f64 = 2_958_465.0 + 1_462.0;

/// A date-formatted number: a date; a duration, or a number no date has, stays the number
/// it is.
fn from_excel_datetime(dt: &ExcelDateTime) -> Cell {
    let serial = dt.as_f64();
    let a_date = dt.is_datetime() && serial.abs() <= LAST_DATE_SERIAL;
    match a_date.then(|| dt.as_datetime()).flatten() {
        Some(datetime) => Cell::Date(datetime),
        None => Cell::Number(dt.as_f64()),
    }
}

/// An ISO 8601 date or date and time, as OpenDocument stores them.
fn from_iso(text: &str) -> Cell {
    NaiveDateTime::from_str(text)
        .ok()
        .or_else(|| {
            NaiveDate::from_str(text)
                .ok()
                .map(|d| d.and_time(NaiveTime::MIN))
        })
        .map_or_else(|| Cell::text(text), Cell::Date)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inputs the fuzz targets found (fuzz/regressions/sheet_*): each reads to an answer.
    #[test]
    fn inputs_the_fuzzers_found_are_answered_without_a_panic_escaping() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions");
        let mut read_count = 0;
        for (dir, format) in [
            ("sheet_xls", Format::Xls),
            ("sheet_xlsx", Format::Xlsx),
            ("sheet_ods", Format::Ods),
            ("sheet_csv", Format::Csv),
        ] {
            let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
                continue;
            };
            for entry in entries {
                let bytes = std::fs::read(entry.unwrap().path()).unwrap();
                let _answer = crate::read(&bytes, format, &Limits::default());
                read_count += 1;
            }
        }
        // Among them sheet_xls/calamine-mulrk-overflow: a MULRK record whose column range runs
        // backwards, where calamine's subtraction overflows (a panic with overflow checks on,
        // caught and answered as an unreadable file).
        assert!(read_count >= 2, "the regressions are found");
    }

    /// sheet_xls/scattered-cells-grid: a few cells far apart, whose grid calamine would build
    /// whole, are refused before calamine opens the file.
    #[test]
    fn an_xls_with_scattered_cells_is_refused_before_its_grid_is_built() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/regressions/sheet_xls/scattered-cells-grid");
        let bytes = std::fs::read(path).unwrap();
        let err = crate::read(&bytes, Format::Xls, &Limits::default()).unwrap_err();
        assert!(
            err.to_string().contains("cells lie scattered over a grid"),
            "{err}"
        );
    }
    use calamine::{CellErrorType, ExcelDateTimeType};

    /// A CSV export opened and saved as a workbook keeps its `'`s in text cells: the upload
    /// removes them as it does from CSV.
    #[test]
    fn workbook_text_loses_the_quote_before_a_formula_character() {
        let mut workbook = rust_xlsxwriter::Workbook::new();
        let sheet = workbook.add_worksheet();
        for (c, text) in ["Title", "Note"].iter().enumerate() {
            sheet.write_string(0, c as u16, *text).unwrap();
        }
        sheet.write_string(1, 0, "'=HYPERLINK(\"x\")").unwrap();
        sheet.write_string(1, 1, "'x").unwrap();
        let bytes = workbook.save_to_buffer().unwrap();
        let table = crate::read(&bytes, Format::Xlsx, &Limits::default()).unwrap();
        assert_eq!(
            table.rows()[0].cells(),
            &[
                Cell::Text("=HYPERLINK(\"x\")".into()),
                Cell::Text("'x".into())
            ]
        );
    }

    #[test]
    fn values_are_typed() {
        assert_eq!(from_data(&Data::Int(7)), Cell::Number(7.0));
        assert_eq!(from_data(&Data::String("  x ".into())), Cell::text("x"));
        assert_eq!(from_data(&Data::String("   ".into())), Cell::Empty);
        assert_eq!(
            from_data(&Data::Error(CellErrorType::Div0)),
            Cell::Text("#DIV/0!".into())
        );
        let date = NaiveDate::from_ymd_opt(2024, 3, 15).unwrap();
        let serial = ExcelDateTime::new(45366.0, ExcelDateTimeType::DateTime, false);
        assert_eq!(
            from_data(&Data::DateTime(serial)),
            Cell::Date(date.and_time(NaiveTime::MIN))
        );
        // A date-formatted number past any date (found by the sheet_xls fuzzer): a number.
        let huge = ExcelDateTime::new(1e300, ExcelDateTimeType::DateTime, false);
        assert_eq!(from_data(&Data::DateTime(huge)), Cell::Number(1e300));
        let nan = ExcelDateTime::new(f64::NAN, ExcelDateTimeType::DateTime, false);
        assert!(matches!(from_data(&Data::DateTime(nan)), Cell::Number(n) if n.is_nan()));
        let last = ExcelDateTime::new(2_958_465.0, ExcelDateTimeType::DateTime, false);
        assert_eq!(
            from_data(&Data::DateTime(last)),
            Cell::Date(
                NaiveDate::from_ymd_opt(9999, 12, 31)
                    .unwrap()
                    .and_time(NaiveTime::MIN)
            )
        );
        let duration = ExcelDateTime::new(1.5, ExcelDateTimeType::TimeDelta, false);
        assert_eq!(from_data(&Data::DateTime(duration)), Cell::Number(1.5));
        assert_eq!(
            from_data(&Data::DateTimeIso("2024-03-15".into())),
            Cell::Date(date.and_time(NaiveTime::MIN))
        );
        assert_eq!(
            from_data(&Data::DateTimeIso("2024-03-15T10:30:00".into()))
                .as_text()
                .unwrap(),
            "2024-03-15T10:30:00"
        );
        assert_eq!(
            from_data_ref(&DataRef::SharedString("Ärmel")),
            Cell::text("Ärmel")
        );
    }
}
