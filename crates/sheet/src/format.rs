//! Which spreadsheet format an upload is in: told by its file name, confirmed by its first bytes,
//! so that a renamed or corrupt file gets a clear message instead of a parser's confusion.

use std::fmt;

use crate::error::SheetError;

/// A spreadsheet format the file endpoints accept (docs/API.md, "Files: uploads and processing"); anything else is refused (415).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Office Open XML workbook.
    Xlsx,
    /// Office Open XML workbook with macros (read like `.xlsx`; macros are never run).
    Xlsm,
    /// Excel 97–2003 binary workbook (BIFF in a compound file).
    Xls,
    /// OpenDocument spreadsheet.
    Ods,
    /// Comma-, semicolon- or tab-separated text.
    Csv,
}

/// The zip local file header signature that starts `.xlsx`, `.xlsm` and `.ods` files.
const ZIP_MAGIC: &[u8] = b"PK\x03\x04";
/// The compound file binary signature that starts `.xls` files.
const CFB_MAGIC: &[u8] = &[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];

impl Format {
    /// Every accepted format, for listing them in messages and tests.
    pub const ALL: [Format; 5] = [
        Format::Xlsx,
        Format::Xlsm,
        Format::Xls,
        Format::Ods,
        Format::Csv,
    ];

    /// The format of an uploaded file, from its name's extension (any case); `None` means the
    /// server answers 415 `unsupported_media_type`.
    pub fn from_file_name(name: &str) -> Option<Format> {
        let (_, extension) = name.rsplit_once('.')?;
        Format::ALL
            .into_iter()
            .find(|format| extension.eq_ignore_ascii_case(&format.extension()[1..]))
    }

    /// The extension with its dot, as users know the format (".xlsx").
    pub fn extension(&self) -> &'static str {
        match self {
            Format::Xlsx => ".xlsx",
            Format::Xlsm => ".xlsm",
            Format::Xls => ".xls",
            Format::Ods => ".ods",
            Format::Csv => ".csv",
        }
    }

    /// The content type to serve the stored bytes back with (`GET /api/file/<id>/content`).
    pub fn mime(&self) -> &'static str {
        match self {
            Format::Xlsx => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            Format::Xlsm => "application/vnd.ms-excel.sheet.macroEnabled.12",
            Format::Xls => "application/vnd.ms-excel",
            Format::Ods => "application/vnd.oasis.opendocument.spreadsheet",
            Format::Csv => "text/csv",
        }
    }

    /// Whether the format is a zip archive, whose declared sizes are checked before opening.
    pub(crate) fn is_zip(&self) -> bool {
        matches!(self, Format::Xlsx | Format::Xlsm | Format::Ods)
    }

    /// "workbook" or "file", for messages.
    pub(crate) fn noun(&self) -> &'static str {
        match self {
            Format::Csv => "file",
            _ => "workbook",
        }
    }

    /// Refuses bytes whose start does not fit the format, naming what they look like instead.
    pub(crate) fn check_magic(&self, bytes: &[u8]) -> Result<(), SheetError> {
        let fits = match self {
            Format::Xlsx | Format::Xlsm | Format::Ods => bytes.starts_with(ZIP_MAGIC),
            Format::Xls => bytes.starts_with(CFB_MAGIC),
            // Text has no magic; only refuse what is plainly a workbook renamed.
            Format::Csv => !bytes.starts_with(ZIP_MAGIC) && !bytes.starts_with(CFB_MAGIC),
        };
        if fits {
            return Ok(());
        }
        let reason = if bytes.is_empty() {
            "it is empty".to_string()
        } else if bytes.starts_with(ZIP_MAGIC) {
            "it is a zip archive (perhaps an .xlsx or .ods file renamed)".to_string()
        } else if bytes.starts_with(CFB_MAGIC) {
            "it is an Excel 97-2003 file (perhaps an .xls file renamed)".to_string()
        } else if self.is_zip() || *self == Format::Csv {
            "it is not a zip archive".to_string()
        } else {
            "it is not an Excel 97-2003 compound file".to_string()
        };
        Err(SheetError::unreadable(*self, reason))
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.extension())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_file_name_ignores_case() {
        assert_eq!(Format::from_file_name("stock.XLSX"), Some(Format::Xlsx));
        assert_eq!(Format::from_file_name("a.b.Csv"), Some(Format::Csv));
        assert_eq!(Format::from_file_name("macro.xlsm"), Some(Format::Xlsm));
        assert_eq!(Format::from_file_name("old.xls"), Some(Format::Xls));
        assert_eq!(Format::from_file_name("calc.ods"), Some(Format::Ods));
        assert_eq!(Format::from_file_name("notes.txt"), None);
        assert_eq!(Format::from_file_name("xlsx"), None);
        assert_eq!(Format::from_file_name("sheet.xlsb"), None);
        assert_eq!(Format::from_file_name(""), None);
    }

    #[test]
    fn magic_bytes() {
        assert!(Format::Xlsx.check_magic(b"PK\x03\x04rest").is_ok());
        assert!(Format::Xls.check_magic(CFB_MAGIC).is_ok());
        assert!(Format::Csv.check_magic(b"anything").is_ok());
        assert!(Format::Csv.check_magic(b"").is_ok());
        let err = Format::Csv.check_magic(b"PK\x03\x04...").unwrap_err();
        assert_eq!(
            err.to_string(),
            "the file is not a readable .csv file: it is a zip archive (perhaps an .xlsx or .ods file renamed)"
        );
        let err = Format::Xlsx.check_magic(b"hello, world").unwrap_err();
        assert_eq!(
            err.to_string(),
            "the file is not a readable .xlsx workbook: it is not a zip archive"
        );
        let err = Format::Xls.check_magic(b"PK\x03\x04").unwrap_err();
        assert!(err.to_string().contains("zip archive"), "{err}");
    }

    #[test]
    fn mime_types_are_distinct() {
        let mut mimes: Vec<_> = Format::ALL.iter().map(Format::mime).collect();
        mimes.dedup();
        assert_eq!(mimes.len(), Format::ALL.len());
    }
}
