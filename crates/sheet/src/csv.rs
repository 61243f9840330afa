//! CSV uploads: the encoding (UTF-8 with or without BOM, else Windows-1252) and the delimiter
//! (`,` `;` or tab) are detected, since users export from whatever program and locale they have.
//! Fields are read one at a time into a buffer that holds a cell at its longest: a longer field
//! is only counted, never copied.

use std::borrow::Cow;

use csv_core::{ReadFieldResult, Reader, ReaderBuilder};
use encoding_rs::{Encoding, WINDOWS_1252};

use crate::cell::Cell;
use crate::error::SheetError;
use crate::format::Format;
use crate::limits::Limits;
#[cfg(test)]
use crate::table::Row;
use crate::table::{Table, TableBuilder};

/// Delimiters tried, in order of preference when several fit equally.
const DELIMITERS: [u8; 3] = [b',', b';', b'\t'];
/// Records looked at to choose the delimiter.
const SAMPLE_RECORDS: usize = 20;
/// The field buffer's first size; it doubles as long fields need, up to a cell's limit.
const INITIAL_BUFFER: usize = 4 * 1024;

/// Reads a CSV file into a table; every cell is text (CSV has no types), trimmed.
pub(crate) fn read(bytes: &[u8], limits: &Limits) -> Result<Table, SheetError> {
    let text = decode(bytes)?;
    let delimiter = detect_delimiter(&text, limits.max_cell_chars);
    let mut fields = Fields::new(&text, delimiter, limits.max_cell_chars);
    let mut builder = TableBuilder::new(limits);
    let mut rows = RowCounter::new(&text);
    let mut row = 0;
    while let Some(field) = fields.next_field() {
        if field.column == 0 {
            row = rows.row_at(field.record_start);
        }
        rows.quoted_breaks(field.newlines);
        let column = to_u32(field.column as u64);
        match field.value {
            Value::Text(text) => builder.push(row, column, Cell::text(text))?,
            Value::Long(chars) => builder.push_long(row, column, chars)?,
        }
    }
    builder.finish()
}

/// A field's content: its text, or only its length when it is longer than a cell may be.
enum Value<'a> {
    Text(&'a str),
    Long(u64),
}

/// One field of a record.
struct Field<'a> {
    /// The byte where its record starts.
    record_start: usize,
    /// Its 0-based position in the record.
    column: usize,
    value: Value<'a>,
    /// The line breaks inside it (quoted).
    newlines: u64,
}

/// The fields of a CSV text, one at a time, with at most `max_chars` characters of each kept.
struct Fields<'a> {
    reader: Reader,
    input: &'a [u8],
    at: usize,
    record_start: usize,
    column: usize,
    /// Grows as fields need, up to room for `max_chars` characters of 4 bytes and one more
    /// byte: a field that fills that has more than `max_chars` characters.
    buffer: Vec<u8>,
    capacity: usize,
    done: bool,
}

impl<'a> Fields<'a> {
    fn new(text: &'a str, delimiter: u8, max_chars: usize) -> Fields<'a> {
        let capacity = max_chars.saturating_mul(4).saturating_add(1);
        Fields {
            reader: ReaderBuilder::new().delimiter(delimiter).build(),
            input: text.as_bytes(),
            at: 0,
            record_start: 0,
            column: 0,
            buffer: vec![0; INITIAL_BUFFER.min(capacity)],
            capacity,
            done: false,
        }
    }

    /// The next field, or `None` at the end of the text.
    fn next_field(&mut self) -> Option<Field<'_>> {
        if self.done {
            return None;
        }
        if self.column == 0 {
            self.record_start = self.at;
        }
        let mut length = 0;
        // Once the buffer is full: the characters and line breaks counted so far.
        let mut long: Option<(u64, u64)> = None;
        let mut scratch = [0u8; 8 * 1024];
        loop {
            let input = &self.input[self.at..];
            let (result, read, written) = match long {
                None => self.reader.read_field(input, &mut self.buffer[length..]),
                Some(_) => self.reader.read_field(input, &mut scratch),
            };
            self.at += read;
            match &mut long {
                None => length += written,
                Some((chars, newlines)) => {
                    *chars += count_chars(&scratch[..written]);
                    *newlines += count_newlines(&scratch[..written]);
                }
            }
            match result {
                ReadFieldResult::InputEmpty => {}
                ReadFieldResult::OutputFull => {
                    if long.is_none() && self.buffer.len() < self.capacity {
                        let grown = self.buffer.len().saturating_mul(2).min(self.capacity);
                        self.buffer.resize(grown, 0);
                    } else if long.is_none() {
                        let kept = &self.buffer[..length];
                        long = Some((count_chars(kept), count_newlines(kept)));
                    }
                }
                ReadFieldResult::Field { record_end } => {
                    let column = self.column;
                    self.column = if record_end { 0 } else { column + 1 };
                    let (value, newlines) = match long {
                        Some((chars, newlines)) => (Value::Long(chars), newlines),
                        None => {
                            // Fields split a valid text at ASCII bytes: they are valid too.
                            let text = std::str::from_utf8(&self.buffer[..length]).unwrap_or("");
                            (Value::Text(text), count_newlines(text.as_bytes()))
                        }
                    };
                    return Some(Field {
                        record_start: self.record_start,
                        column,
                        value,
                        newlines,
                    });
                }
                ReadFieldResult::End => {
                    self.done = true;
                    return None;
                }
            }
        }
    }
}

/// The characters of UTF-8 bytes (those that do not continue a character).
fn count_chars(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|b| (**b & 0xC0) != 0x80).count() as u64
}

fn count_newlines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|b| **b == b'\n').count() as u64
}

/// Tells the 0-based row a spreadsheet program shows a record on: the line breaks before it,
/// less those inside quoted fields.
struct RowCounter<'a> {
    text: &'a [u8],
    /// Bytes already scanned for line breaks.
    scanned: usize,
    /// Line breaks before `scanned`.
    breaks: u64,
    /// Line breaks inside the quoted fields read so far.
    quoted: u64,
}

impl<'a> RowCounter<'a> {
    fn new(text: &'a str) -> RowCounter<'a> {
        RowCounter {
            text: text.as_bytes(),
            scanned: 0,
            breaks: 0,
            quoted: 0,
        }
    }

    /// The row of the record that starts at byte `start`; it may point at the end of the
    /// previous line, so line-end bytes are skipped first.
    fn row_at(&mut self, start: usize) -> u32 {
        let mut at = start.min(self.text.len()).max(self.scanned);
        while matches!(self.text.get(at), Some(b'\r' | b'\n')) {
            at += 1;
        }
        let newlines = self.text[self.scanned..at].iter().filter(|&&b| b == b'\n');
        self.breaks += newlines.count() as u64;
        self.scanned = at;
        to_u32(self.breaks.saturating_sub(self.quoted))
    }

    /// Counts the line breaks of a field just read.
    fn quoted_breaks(&mut self, newlines: u64) {
        self.quoted += newlines;
    }
}

/// The text of the file: after a byte order mark, its encoding (UTF-8, or UTF-16 as Excel's
/// "Unicode text" writes); without one, UTF-8 when valid, else Windows-1252.
fn decode(bytes: &[u8]) -> Result<Cow<'_, str>, SheetError> {
    if let Some((encoding, bom)) = Encoding::for_bom(bytes) {
        let (text, had_errors) = encoding.decode_without_bom_handling(&bytes[bom..]);
        if had_errors {
            return Err(SheetError::unreadable(
                Format::Csv,
                format!("it starts as {} but is not valid {0}", encoding.name()),
            ));
        }
        return Ok(text);
    }
    if bytes.contains(&0) {
        return Err(SheetError::unreadable(
            Format::Csv,
            "it contains binary data, not text",
        ));
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(Cow::Borrowed(text)),
        Err(_) => Ok(WINDOWS_1252.decode_without_bom_handling(bytes).0),
    }
}

/// The delimiter that splits the first non-empty records into the same number of fields, more
/// than one; the widest header wins a tie, then `,` before `;` before tab.
fn detect_delimiter(text: &str, max_chars: usize) -> u8 {
    let mut best = (DELIMITERS[0], (0, 0));
    for delimiter in DELIMITERS {
        let score = score(delimiter, text, max_chars);
        if score > best.1 {
            best = (delimiter, score);
        }
    }
    best.0
}

/// How well a delimiter fits: (records as wide as the header, header width); zero when the
/// header would be a single column.
fn score(delimiter: u8, text: &str, max_chars: usize) -> (usize, usize) {
    let mut fields = Fields::new(text, delimiter, max_chars);
    let mut widths = Vec::new();
    let mut width = 0;
    let mut filled = false;
    while widths.len() < SAMPLE_RECORDS {
        let Some(field) = fields.next_field() else {
            break;
        };
        if field.column == 0 {
            width = 0;
            filled = false;
        }
        width += 1;
        filled |= match field.value {
            Value::Text(text) => !text.trim().is_empty(),
            Value::Long(_) => true,
        };
        // The record ends when the next field starts a new one.
        if fields.column == 0 && filled {
            widths.push(width);
        }
    }
    match widths.first() {
        Some(&header) if header > 1 => (widths.iter().filter(|&&w| w == header).count(), header),
        _ => (0, 0),
    }
}

/// Positions past `u32::MAX` cannot occur in a file under the upload limit; saturate anyway.
fn to_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(table: &Table) -> Vec<(u32, Vec<String>)> {
        table
            .rows()
            .iter()
            .map(|row| {
                let texts = row
                    .cells()
                    .iter()
                    .map(|c| c.as_text().unwrap_or_default().into_owned())
                    .collect();
                (row.number(), texts)
            })
            .collect()
    }

    #[test]
    fn delimiters_are_detected() {
        let detect = |text: &str| detect_delimiter(text, 100);
        assert_eq!(detect("a,b,c\n1,2,3\n"), b',');
        assert_eq!(detect("a;b;c\n1,5;2,5;3\n"), b';');
        assert_eq!(detect("a\tb\n1\t2\n"), b'\t');
        assert_eq!(detect("Barcode;Description\n1;\"x, y, z\"\n"), b';');
        assert_eq!(detect("single\n1\n"), b',');
        assert_eq!(detect(""), b',');
        let long = format!("Barcode;Title\n1;\"{}\"\n2;x\n", "a, ".repeat(1000));
        assert_eq!(detect(&long), b';', "a long field counts as one field");
    }

    #[test]
    fn encodings_are_detected() {
        assert_eq!(decode(b"\xEF\xBB\xBFCr\xC3\xA8me").unwrap(), "Crème");
        assert_eq!(decode(b"Cr\xC3\xA8me").unwrap(), "Crème");
        assert_eq!(decode(b"Caf\xE9 \x80").unwrap(), "Café €");
        assert_eq!(decode(b"\xFF\xFEa\0;\0b\0").unwrap(), "a;b");
        let err = decode(b"a,b\0").unwrap_err();
        assert_eq!(
            err.to_string(),
            "the file is not a readable .csv file: it contains binary data, not text"
        );
    }

    #[test]
    fn rows_keep_their_spreadsheet_numbers() {
        let text = "\n  \nBarcode,Note\n1,\"two\nlines\"\n\n,\n2,plain\n";
        let table = read(text.as_bytes(), &Limits::default()).unwrap();
        assert_eq!(table.header().number(), 3);
        assert_eq!(
            cells(&table),
            vec![
                (4, vec!["1".to_string(), "two\nlines".to_string()]),
                (7, vec!["2".to_string(), "plain".to_string()]),
            ]
        );
    }

    #[test]
    fn crlf_lines_keep_their_numbers() {
        let text = "Barcode;Qty\r\n1;2\r\n\r\n;\r\n\"3\r\n\";4\r\n5;6";
        let table = read(text.as_bytes(), &Limits::default()).unwrap();
        assert_eq!(table.header().number(), 1);
        let numbers: Vec<u32> = table.rows().iter().map(Row::number).collect();
        assert_eq!(numbers, vec![2, 5, 6]);
    }

    #[test]
    fn csv_cells_stay_text() {
        let table = read(b"Barcode;Price\n0012345678905;12,50\n", &Limits::default()).unwrap();
        let row = &table.rows()[0];
        assert_eq!(row.cell(0), &Cell::text("0012345678905"));
        assert_eq!(row.cell(1).as_number(), Some(12.5));
    }

    #[test]
    fn the_quote_an_export_put_before_a_formula_is_removed() {
        let text = "Title,Note\n'=HYPERLINK(\"x\"),'x\n\"'\tTab\",''@y\n\"'\rCR\",'-5\n";
        let table = read(text.as_bytes(), &Limits::default()).unwrap();
        assert_eq!(
            cells(&table),
            vec![
                (2, vec!["=HYPERLINK(\"x\")".to_string(), "'x".to_string()]),
                (3, vec!["\tTab".to_string(), "'@y".to_string()]),
                (4, vec!["\rCR".to_string(), "-5".to_string()]),
            ]
        );
    }

    #[test]
    fn too_many_rows_are_refused() {
        let limits = Limits {
            max_rows: 2,
            ..Limits::default()
        };
        let err = read(b"a,b\n1,2\n3,4\n5,6\n", &limits).unwrap_err();
        assert_eq!(err, SheetError::TooManyRows { max: 2 });
        assert!(read(b"a,b\n1,2\n3,4\n", &limits).is_ok());
    }

    #[test]
    fn nothing_but_blanks_is_empty() {
        let err = read(b" \n,,\n\t\n", &Limits::default()).unwrap_err();
        assert_eq!(err, SheetError::Empty);
    }

    #[test]
    fn a_field_longer_than_a_cell_is_counted_not_kept() {
        let limits = Limits {
            max_cell_chars: 10,
            ..Limits::default()
        };
        let long = "ü\n".repeat(20);
        let text = format!("Barcode,Title\n1,\"{long}\"\n2,0123456789\n3,\"ok\"\n");
        let table = read(text.as_bytes(), &limits).unwrap();
        let numbers: Vec<u32> = table.rows().iter().map(Row::number).collect();
        assert_eq!(
            numbers,
            vec![3, 4],
            "a multi-line field is one row, as in a spreadsheet"
        );
        assert_eq!(table.skipped().len(), 1);
        assert_eq!(table.skipped()[0].number, 2);
        assert_eq!(
            table.skipped()[0].reason,
            "column B holds 40 characters, more than the 10 a cell may hold"
        );
        // Up to four bytes a character fit the buffer (the table counts them); more are
        // only counted.
        let text = format!("a,\"{}\",{}", "0123456789x", "y".repeat(100));
        let mut fields = Fields::new(&text, b',', 10);
        assert!(matches!(
            fields.next_field().unwrap().value,
            Value::Text("a")
        ));
        assert!(matches!(
            fields.next_field().unwrap().value,
            Value::Text("0123456789x")
        ));
        assert!(matches!(
            fields.next_field().unwrap().value,
            Value::Long(100)
        ));
        assert!(fields.next_field().is_none());
    }
}
