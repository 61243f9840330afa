//! The one error type of this crate: every message is written for the person who uploaded the
//! file, because the server stores it as the file's `detail.error`.

use crate::format::Format;
use brandhub_problem::Words;

/// Why a spreadsheet could not be turned into rows, or its header did not fit its file type.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SheetError {
    /// The bytes are not a readable file of the format their name claims (wrong magic bytes,
    /// truncated, corrupt, encrypted, or the first sheet is not a worksheet).
    #[error("the file is not a readable {format} {}: {reason}", .format.noun())]
    Unreadable {
        /// The format the file name announced.
        format: Format,
        /// What is wrong with the bytes.
        reason: String,
    },
    /// The file would take more than the configured memory once decompressed or decoded.
    #[error("the file is too large to read: {reason}")]
    TooLarge {
        /// Which limit was hit.
        reason: String,
    },
    /// The first sheet has more data rows than the configured limit.
    #[error("the sheet has more than {max} data rows")]
    TooManyRows {
        /// The limit in force.
        max: usize,
    },
    /// The first sheet has no non-empty row, so there is no header.
    #[error("the sheet is empty: no header row found")]
    Empty,
    /// A cell of the header row is longer than a cell may be, so the header cannot be read.
    #[error(
        "the header row has a cell ({cell}) of {} characters; a cell may hold at most {}",
        grouped(*.chars),
        grouped(*.max as u64)
    )]
    LongHeader {
        /// The cell, as a spreadsheet program names it ("C2").
        cell: String,
        /// How many characters it holds.
        chars: u64,
        /// The limit in force.
        max: usize,
    },
    /// Required columns are absent from the header row; every one is named.
    #[error("{}", missing_message(.0))]
    MissingColumns(Vec<String>),
    /// Two header cells name the same known column, so which one to use is unclear.
    #[error("column {column} appears twice: {first} and {second}")]
    DuplicateColumn {
        /// The label of the known column.
        column: &'static str,
        /// The first header naming it, quoted, with its column letter.
        first: String,
        /// The second header naming it, quoted, with its column letter.
        second: String,
    },
    /// A file type name that the contract does not define.
    #[error("unknown file type \"{0}\"")]
    UnknownFileType(String),
}

impl SheetError {
    /// An [`SheetError::Unreadable`] for `format` with the given reason.
    pub(crate) fn unreadable(format: Format, reason: impl std::fmt::Display) -> Self {
        SheetError::Unreadable {
            format,
            reason: reason.to_string(),
        }
    }

    /// The message in each language the API speaks (the uploader's is stored); the
    /// English is [`std::fmt::Display`]'s.
    pub fn words(&self) -> Words {
        let english = self.to_string();
        let german = match self {
            SheetError::Unreadable { format, reason } => {
                format!(
                    "die Datei ist keine lesbare Datei {}: {reason}",
                    format.noun()
                )
            }
            SheetError::TooLarge { reason } => {
                format!("die Datei ist zu groß zum Lesen: {reason}")
            }
            SheetError::TooManyRows { max } => {
                format!("das Blatt hat mehr als {max} Datenzeilen")
            }
            SheetError::Empty => "das Blatt ist leer: keine Kopfzeile gefunden".to_string(),
            SheetError::LongHeader { cell, chars, max } => format!(
                "die Kopfzeile hat eine Zelle ({cell}) mit {chars} Zeichen; eine Zelle darf höchstens {max} halten"
            ),
            SheetError::MissingColumns(columns) => {
                let plural = if columns.len() == 1 { "" } else { "n" };
                format!("fehlende Pflichtspalte{plural}: {}", columns.join(", "))
            }
            SheetError::DuplicateColumn {
                column,
                first,
                second,
            } => format!("Spalte {column} kommt zweimal vor: {first} und {second}"),
            SheetError::UnknownFileType(name) => format!("unbekannter Dateityp \"{name}\""),
        };
        Words::new(english, german)
    }
}

/// "missing required column: X" or "missing required columns: X, Y".
fn missing_message(columns: &[String]) -> String {
    let plural = if columns.len() == 1 { "" } else { "s" };
    format!("missing required column{plural}: {}", columns.join(", "))
}

/// A count with thousands separators, as people read it ("400,000,000").
pub(crate) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Spreadsheet column letters of a 0-based index: 0 is "A", 26 is "AA".
pub(crate) fn column_letters(index: usize) -> String {
    let mut letters = Vec::new();
    let mut n = index + 1;
    while n > 0 {
        let rem = (n - 1) % 26;
        letters.push(b'A' + rem as u8);
        n = (n - 1) / 26;
    }
    letters.reverse();
    String::from_utf8(letters).expect("ASCII letters")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters() {
        assert_eq!(column_letters(0), "A");
        assert_eq!(column_letters(25), "Z");
        assert_eq!(column_letters(26), "AA");
        assert_eq!(column_letters(16_383), "XFD");
    }

    #[test]
    fn counts_are_grouped() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(32_767), "32,767");
        assert_eq!(grouped(400_000_000), "400,000,000");
    }

    #[test]
    fn missing_messages() {
        let one = SheetError::MissingColumns(vec!["Barcode".into()]);
        assert_eq!(one.to_string(), "missing required column: Barcode");
        let two = SheetError::MissingColumns(vec!["Barcode".into(), "Title".into()]);
        assert_eq!(two.to_string(), "missing required columns: Barcode, Title");
    }

    #[test]
    fn unreadable_message() {
        let e = SheetError::unreadable(Format::Xlsx, "it is not a zip archive");
        assert_eq!(
            e.to_string(),
            "the file is not a readable .xlsx workbook: it is not a zip archive"
        );
        let e = SheetError::unreadable(Format::Csv, "it contains binary data");
        assert_eq!(
            e.to_string(),
            "the file is not a readable .csv file: it contains binary data"
        );
    }
}
