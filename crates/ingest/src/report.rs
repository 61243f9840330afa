//! What processing found in a file, written into its `detail.error` in the contract's words
//! (CONTRACT §8): one line per kind of problem, each starting with `Warning:`, such as
//! `Warning: 3 barcodes not found: 5012345678900, 5012345678901, 5012345678902`. Empty when
//! there was nothing to report. Long lists name the first few and count the rest.

/// Values a list names before it says how many more there are.
const LISTED: usize = 20;

/// Things a row names that the file's brand does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Missing {
    Barcode,
    ProductCode,
    Order,
    OrderItem,
}

impl Missing {
    fn nouns(self) -> (&'static str, &'static str) {
        match self {
            Missing::Barcode => ("barcode", "barcodes"),
            Missing::ProductCode => ("product code", "product codes"),
            Missing::Order => ("order", "orders"),
            Missing::OrderItem => ("order item", "order items"),
        }
    }
}

/// The counters and warnings of one file; rows read = rows applied + rows skipped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    pub rows_read: usize,
    pub rows_applied: usize,
    pub rows_skipped: usize,
    bad_rows: Vec<(u32, String)>,
    missing: Vec<(Missing, Vec<String>)>,
    unknown_columns: Vec<String>,
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The first [`LISTED`] items, then how many more there are.
fn listed(items: &[String]) -> String {
    let mut text = items
        .iter()
        .take(LISTED)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > LISTED {
        text.push_str(&format!(", … and {} more", items.len() - LISTED));
    }
    text
}

impl Report {
    /// A report for a file of `rows_read` data rows whose header had these unknown columns.
    pub fn new(rows_read: usize, unknown_columns: &[String]) -> Report {
        Report {
            rows_read,
            unknown_columns: unknown_columns.to_vec(),
            ..Report::default()
        }
    }

    /// A row that was applied (or already held what the file says).
    pub fn applied(&mut self) {
        self.rows_applied += 1;
    }

    /// A row skipped because it is not valid; `reason` names the column and the value.
    pub fn skip(&mut self, row: u32, reason: impl Into<String>) {
        self.rows_skipped += 1;
        self.bad_rows.push((row, reason.into()));
    }

    /// A row skipped because it names something the brand does not have; each value is
    /// listed once however many rows name it.
    pub fn not_found(&mut self, what: Missing, value: &str) {
        self.rows_skipped += 1;
        let position = match self.missing.iter().position(|(m, _)| *m == what) {
            Some(position) => position,
            None => {
                self.missing.push((what, Vec::new()));
                self.missing.sort_by_key(|(m, _)| *m);
                self.missing
                    .iter()
                    .position(|(m, _)| *m == what)
                    .expect("just added")
            }
        };
        let values = &mut self.missing[position].1;
        if !values.iter().any(|v| v == value) {
            values.push(value.to_string());
        }
    }

    /// The text for `detail.error`: one `Warning:` line per kind of problem, or `""`.
    pub fn text(&self) -> String {
        let mut lines = Vec::new();
        for (what, values) in &self.missing {
            let (one, many) = what.nouns();
            lines.push(format!(
                "Warning: {} not found: {}",
                plural(values.len(), one, many),
                listed(values)
            ));
        }
        if !self.bad_rows.is_empty() {
            let mut rows = self.bad_rows.clone();
            rows.sort_by_key(|(row, _)| *row);
            let items: Vec<String> = rows
                .iter()
                .map(|(row, reason)| format!("row {row} ({reason})"))
                .collect();
            lines.push(format!(
                "Warning: {} skipped: {}",
                plural(items.len(), "row", "rows"),
                listed(&items)
            ));
        }
        if !self.unknown_columns.is_empty() {
            lines.push(format!(
                "Warning: {} ignored: {}",
                plural(
                    self.unknown_columns.len(),
                    "unknown column",
                    "unknown columns"
                ),
                listed(&self.unknown_columns)
            ));
        }
        lines.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_to_report_is_empty() {
        let mut report = Report::new(2, &[]);
        report.applied();
        report.applied();
        assert_eq!(report.text(), "");
        assert_eq!((report.rows_applied, report.rows_skipped), (2, 0));
    }

    #[test]
    fn warnings_follow_the_contract() {
        let mut report = Report::new(6, &["Launch Date".to_string()]);
        report.skip(9, "Price \"abc\" is not a number");
        report.skip(7, "Barcode is empty");
        for barcode in [
            "5012345678900",
            "5012345678901",
            "5012345678900",
            "5012345678902",
        ] {
            report.not_found(Missing::Barcode, barcode);
        }
        assert_eq!(report.rows_skipped, 6);
        assert_eq!(
            report.text(),
            "Warning: 3 barcodes not found: 5012345678900, 5012345678901, 5012345678902\n\
             Warning: 2 rows skipped: row 7 (Barcode is empty), row 9 (Price \"abc\" is not a number)\n\
             Warning: 1 unknown column ignored: Launch Date"
        );
    }

    #[test]
    fn long_lists_are_cut() {
        let mut report = Report::new(25, &[]);
        for n in 0..25 {
            report.not_found(Missing::Order, &format!("ORD-{n}"));
        }
        let text = report.text();
        assert!(
            text.starts_with("Warning: 25 orders not found: ORD-0, ORD-1,"),
            "{text}"
        );
        assert!(text.ends_with("ORD-19, … and 5 more"), "{text}");
    }
}

/// The row each barcode of a file was first seen on. A barcode on two rows is applied once:
/// the later row is skipped, naming the first.
#[derive(Debug, Default)]
pub(crate) struct FirstRows(std::collections::HashMap<String, u32>);

impl FirstRows {
    /// Claims the barcode (folded `key`, as written `barcode`) for `row`; false, with the row
    /// reported as skipped, when an earlier row has it.
    pub(crate) fn claim(
        &mut self,
        key: &str,
        barcode: &str,
        row: u32,
        report: &mut Report,
    ) -> bool {
        if let Some(first) = self.0.get(key) {
            report.skip(row, format!("barcode {barcode} is already on row {first}"));
            return false;
        }
        self.0.insert(key.to_string(), row);
        true
    }
}
