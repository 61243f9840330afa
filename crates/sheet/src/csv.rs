//! CSV uploads: the encoding (UTF-8 with or without BOM, else Windows-1252) and the delimiter
//! (`,` `;` or tab) are detected, since users export from whatever program and locale they have.

use std::borrow::Cow;

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

/// Reads a CSV file into a table; every cell is text (CSV has no types), trimmed.
pub(crate) fn read(bytes: &[u8], limits: &Limits) -> Result<Table, SheetError> {
    let text = decode(bytes)?;
    let delimiter = detect_delimiter(&text);
    let mut reader = reader(delimiter, &text);
    let mut builder = TableBuilder::new(limits);
    let mut record = csv::StringRecord::new();
    let mut rows = RowCounter::new(&text);
    loop {
        let more = reader
            .read_record(&mut record)
            .map_err(|e| SheetError::unreadable(Format::Csv, e))?;
        if !more {
            break;
        }
        let start = record.position().map_or(0, |p| p.byte());
        let row = rows.row_at(start);
        for (column, field) in record.iter().enumerate() {
            rows.quoted_breaks(field);
            builder.push(row, to_u32(column as u64), Cell::text(field))?;
        }
    }
    builder.finish()
}

/// Tells the 0-based row a spreadsheet program shows a record on: the line breaks before it,
/// less those inside quoted fields. (The csv reader's own line count lags behind after `\r\n`.)
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

    /// The row of the record the reader says starts at byte `start`; it may point at the end of
    /// the previous line, so line-end bytes are skipped first.
    fn row_at(&mut self, start: u64) -> u32 {
        let mut at = usize::try_from(start)
            .unwrap_or(usize::MAX)
            .min(self.text.len());
        at = at.max(self.scanned);
        while matches!(self.text.get(at), Some(b'\r' | b'\n')) {
            at += 1;
        }
        let newlines = self.text[self.scanned..at].iter().filter(|&&b| b == b'\n');
        self.breaks += newlines.count() as u64;
        self.scanned = at;
        to_u32(self.breaks.saturating_sub(self.quoted))
    }

    /// Counts the line breaks of a field just read.
    fn quoted_breaks(&mut self, field: &str) {
        self.quoted += field.matches('\n').count() as u64;
    }
}

/// A CSV reader that leaves headers, ragged rows and empty rows to the table builder.
fn reader(delimiter: u8, text: &str) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(delimiter)
        .from_reader(text.as_bytes())
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
fn detect_delimiter(text: &str) -> u8 {
    let mut best = (DELIMITERS[0], (0, 0));
    for delimiter in DELIMITERS {
        let score = score(delimiter, text);
        if score > best.1 {
            best = (delimiter, score);
        }
    }
    best.0
}

/// How well a delimiter fits: (records as wide as the header, header width); zero when the
/// header would be a single column.
fn score(delimiter: u8, text: &str) -> (usize, usize) {
    let widths: Vec<usize> = reader(delimiter, text)
        .records()
        .map_while(Result::ok)
        .filter(|record| record.iter().any(|field| !field.trim().is_empty()))
        .take(SAMPLE_RECORDS)
        .map(|record| record.len())
        .collect();
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
        assert_eq!(detect_delimiter("a,b,c\n1,2,3\n"), b',');
        assert_eq!(detect_delimiter("a;b;c\n1,5;2,5;3\n"), b';');
        assert_eq!(detect_delimiter("a\tb\n1\t2\n"), b'\t');
        assert_eq!(
            detect_delimiter("Barcode;Description\n1;\"x, y, z\"\n"),
            b';'
        );
        assert_eq!(detect_delimiter("single\n1\n"), b',');
        assert_eq!(detect_delimiter(""), b',');
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
}
