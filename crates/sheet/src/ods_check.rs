//! A pre-flight check of `.ods` workbooks. OpenDocument compresses repetition into attributes
//! (`number-columns-repeated`, `number-rows-repeated`) that calamine expands when it opens the
//! file, copying each repeated cell's text: a small `content.xml` can stand for terabytes. This
//! streams `content.xml` first and estimates what the expansion would take.

use std::io::{BufReader, Cursor};
use std::mem::size_of;

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use crate::error::SheetError;
use crate::format::Format;
use crate::limits::{Limits, human_bytes};

/// What calamine holds per expanded cell: its value and its formula text.
const SLOT: u64 = (size_of::<calamine::Data>() + size_of::<String>()) as u64;

/// Refuses an `.ods` whose cells, once expanded, would take more than `max_decompressed_bytes`.
pub(crate) fn check(bytes: &[u8], limits: &Limits) -> Result<(), SheetError> {
    let unreadable = |e: &dyn std::fmt::Display| SheetError::unreadable(Format::Ods, e);
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| unreadable(&e))?;
    let Ok(content) = archive.by_name("content.xml") else {
        return Err(unreadable(&"it has no content.xml"));
    };
    let mut reader = Reader::from_reader(BufReader::new(content));
    let mut estimate = Estimate {
        limit: limits.max_decompressed_bytes,
        ..Estimate::default()
    };
    let mut buf = Vec::new();
    let mut inner = Vec::new();
    loop {
        match reader
            .read_event_into(&mut buf)
            .map_err(|e| unreadable(&e))?
        {
            Event::Start(e) if e.name().as_ref() == "table:table-row" => {
                estimate.start_row(repeats(&e, "table:number-rows-repeated"));
            }
            Event::Empty(e) if e.name().as_ref() == "table:table-row" => {
                estimate.start_row(repeats(&e, "table:number-rows-repeated"));
                estimate.end_row()?;
            }
            Event::Start(e) if is_cell(&e) => {
                let count = repeats(&e, "table:number-columns-repeated");
                let tag = e.len() as u64;
                let name = e.name().as_ref().to_string();
                let span = reader
                    .read_to_end_into(quick_xml::name::QName(&name), &mut inner)
                    .map_err(|e| unreadable(&e))?;
                inner.clear();
                // Content inside the cell: counted as text that every repetition copies.
                estimate.cell(count, Some(tag + (span.end - span.start)));
            }
            Event::Empty(e) if is_cell(&e) => {
                let count = repeats(&e, "table:number-columns-repeated");
                let has_value =
                    has_attribute(&e, "office:value-type") || has_attribute(&e, "table:formula");
                estimate.cell(count, has_value.then_some(e.len() as u64));
            }
            Event::End(e) if e.name().as_ref() == "table:table-row" => estimate.end_row()?,
            Event::End(e) if e.name().as_ref() == "table:table" => estimate.end_table(),
            Event::Eof => return Ok(()),
            _ => {}
        }
        buf.clear();
    }
}

fn is_cell(e: &BytesStart<'_>) -> bool {
    matches!(
        e.name().as_ref(),
        "table:table-cell" | "table:covered-table-cell"
    )
}

fn has_attribute(e: &BytesStart<'_>, name: &str) -> bool {
    e.try_get_attribute(name).ok().flatten().is_some()
}

/// A repetition attribute's count; 1 when absent or unreadable (calamine refuses the latter).
fn repeats(e: &BytesStart<'_>, name: &str) -> u64 {
    e.try_get_attribute(name)
        .ok()
        .flatten()
        .and_then(|a| a.value.trim().parse().ok())
        .unwrap_or(1)
}

/// Mirrors how calamine expands cells: empty cells and rows cost only when something follows
/// them; each repetition of a non-empty cell copies its text.
#[derive(Default)]
struct Estimate {
    limit: u64,
    total: u64,
    row_repeats: u64,
    row_cost: u64,
    row_width: u64,
    pending_columns: u64,
    table_width: u64,
    pending_rows: u64,
}

impl Estimate {
    fn start_row(&mut self, repeats: u64) {
        self.row_repeats = repeats;
        self.row_cost = 0;
        self.row_width = 0;
        self.pending_columns = 0;
    }

    /// A cell repeated `count` times; `text` is its size when it holds something.
    fn cell(&mut self, count: u64, text: Option<u64>) {
        match text {
            None => self.pending_columns = self.pending_columns.saturating_add(count),
            Some(bytes) => {
                let columns = self.pending_columns.saturating_add(count);
                self.row_cost = self
                    .row_cost
                    .saturating_add(columns.saturating_mul(SLOT))
                    .saturating_add(count.saturating_mul(bytes));
                self.row_width = self.row_width.saturating_add(columns);
                self.pending_columns = 0;
            }
        }
    }

    fn end_row(&mut self) -> Result<(), SheetError> {
        if self.row_cost == 0 {
            self.pending_rows = self.pending_rows.saturating_add(self.row_repeats);
            return Ok(());
        }
        self.table_width = self.table_width.max(self.row_width);
        let gap = self
            .pending_rows
            .saturating_mul(self.table_width)
            .saturating_mul(SLOT);
        let rows = self.row_repeats.saturating_mul(self.row_cost);
        self.total = self.total.saturating_add(gap).saturating_add(rows);
        self.pending_rows = 0;
        if self.total > self.limit {
            return Err(SheetError::TooLarge {
                reason: format!(
                    "its repeated cells expand to more than {} of memory",
                    human_bytes(self.limit)
                ),
            });
        }
        Ok(())
    }

    fn end_table(&mut self) {
        self.pending_rows = 0;
        self.table_width = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimate(limit: u64) -> Estimate {
        Estimate {
            limit,
            ..Estimate::default()
        }
    }

    #[test]
    fn trailing_empty_cells_and_rows_cost_nothing() {
        let mut e = estimate(10_000);
        e.start_row(1);
        e.cell(1, Some(20));
        e.cell(1_000_000, None);
        e.end_row().unwrap();
        e.start_row(1_000_000);
        e.cell(1024, None);
        e.end_row().unwrap();
        e.end_table();
        assert_eq!(e.total, SLOT + 20);
    }

    #[test]
    fn repeated_text_is_counted_per_copy() {
        let mut e = estimate(1 << 30);
        e.start_row(1000);
        e.cell(16_384, Some(100_000));
        assert!(matches!(e.end_row(), Err(SheetError::TooLarge { .. })));
    }

    #[test]
    fn gaps_before_content_are_counted() {
        let mut e = estimate(u64::MAX);
        e.start_row(1);
        e.cell(3, None);
        e.cell(1, Some(0));
        e.end_row().unwrap();
        e.start_row(10);
        e.end_row().unwrap();
        e.start_row(1);
        e.cell(1, Some(0));
        e.end_row().unwrap();
        assert_eq!(e.total, 4 * SLOT + 10 * 4 * SLOT + SLOT);
    }
}
