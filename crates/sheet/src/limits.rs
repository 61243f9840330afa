//! Bounds on what a hostile upload may cost: rows, characters per cell, and bytes once
//! decompressed or decoded. Zip based workbooks are checked from their central directory before
//! any parser opens them.

use std::io::Cursor;

use crate::error::SheetError;
use crate::format::Format;

/// How much a single upload may cost to read; the defaults suit the server's 50 MiB uploads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most data rows (after the header) a sheet may have.
    pub max_rows: usize,
    /// Most bytes a workbook may expand to: the sum of a zip archive's uncompressed entries, and
    /// also the memory the decoded cells may take, for every format.
    pub max_decompressed_bytes: u64,
    /// Most characters a cell may hold. A longer cell is never read whole: its row is skipped
    /// with the reason, so that what a file costs is bounded by its rows times their width.
    pub max_cell_chars: usize,
}

/// The most characters an Excel cell can hold; no real sheet has longer cells.
pub const MAX_CELL_CHARS: usize = 32_767;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            // About 2.5 KB of memory a row at the peak of processing: ~600 MB.
            max_rows: 250_000,
            max_decompressed_bytes: 512 * 1024 * 1024,
            max_cell_chars: MAX_CELL_CHARS,
        }
    }
}

/// An entry may expand at most this many times its compressed size. Deflate cannot do much
/// better than 1032:1, and real sheets stay far below; only crafted runs of one byte come near.
const MAX_RATIO: u64 = 250;
/// Entries smaller than this are not judged by their ratio: tiny files compress oddly.
const RATIO_FLOOR: u64 = 1024 * 1024;

impl Limits {
    /// Refuses a zip archive whose central directory declares more than
    /// `max_decompressed_bytes` in all, or an entry with an absurd compression ratio. The zip
    /// reader then enforces each declared size while inflating, so the declaration binds.
    pub(crate) fn check_archive(&self, bytes: &[u8], format: Format) -> Result<(), SheetError> {
        let archive = zip::ZipArchive::new(Cursor::new(bytes))
            .map_err(|e| SheetError::unreadable(format, format!("broken zip archive ({e})")))?;
        let mut total: u64 = 0;
        for index in 0..archive.len() {
            let entry = archive
                .by_index_data(index)
                .map_err(|e| SheetError::unreadable(format, format!("broken zip archive ({e})")))?;
            let size = entry.size();
            let compressed = entry.compressed_size().max(1);
            if size > RATIO_FLOOR && size / compressed > MAX_RATIO {
                return Err(SheetError::TooLarge {
                    reason: format!(
                        "an archive entry expands {} times (at most {MAX_RATIO} allowed)",
                        size / compressed
                    ),
                });
            }
            total = total.saturating_add(size);
            if total > self.max_decompressed_bytes {
                return Err(SheetError::TooLarge {
                    reason: format!(
                        "it expands to more than {} once decompressed",
                        human_bytes(self.max_decompressed_bytes)
                    ),
                });
            }
        }
        Ok(())
    }
}

/// A byte count as people read it ("512 MiB").
pub(crate) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["bytes", "KiB", "MiB", "GiB"];
    let mut value = bytes;
    let mut unit = 0;
    while unit + 1 < UNITS.len() && value >= 1024 && value.is_multiple_of(1024) {
        value /= 1024;
        unit += 1;
    }
    format!("{value} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_bytes_reads_well() {
        assert_eq!(human_bytes(512 * 1024 * 1024), "512 MiB");
        assert_eq!(human_bytes(1000), "1000 bytes");
        assert_eq!(human_bytes(2048), "2 KiB");
    }

    #[test]
    fn not_a_zip_is_unreadable() {
        let err = Limits::default()
            .check_archive(b"PK\x03\x04 but nothing else", Format::Ods)
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("the file is not a readable .ods workbook: broken zip archive"),
            "{err}"
        );
    }
}
