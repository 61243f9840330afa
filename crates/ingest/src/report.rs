//! What processing found in a file, written into its `detail.error` in the contract's words
//! (docs/API.md, "Files: uploads and processing"): one line per kind of problem, each starting with `Warning:`, such as
//! `Warning: 3 barcodes not found: 5012345678900, 5012345678901, 5012345678902`. Empty when
//! there was nothing to report. Long lists name the first few and count the rest.

use crate::lookup::VariantRef;
use brandhub_problem::{Lang, Words, words};
use brandhub_query::text::fold;
use std::collections::{BTreeMap, HashMap, HashSet};

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
    /// The noun of one missing value, as a skipped row's reason starts.
    fn noun(self) -> &'static str {
        self.nouns().0
    }

    fn nouns(self) -> (&'static str, &'static str) {
        self.nouns_in(Lang::En)
    }

    /// The nouns of one and of several missing values in `lang`.
    fn nouns_in(self, lang: Lang) -> (&'static str, &'static str) {
        match (self, lang) {
            (Missing::Barcode, Lang::En) => ("barcode", "barcodes"),
            (Missing::ProductCode, Lang::En) => ("product code", "product codes"),
            (Missing::Order, Lang::En) => ("order", "orders"),
            (Missing::OrderItem, Lang::En) => ("order item", "order items"),
            (Missing::Barcode, Lang::De) => ("Barcode", "Barcodes"),
            (Missing::ProductCode, Lang::De) => ("Produktcode", "Produktcodes"),
            (Missing::Order, Lang::De) => ("Bestellung", "Bestellungen"),
            (Missing::OrderItem, Lang::De) => ("Bestellposition", "Bestellpositionen"),
        }
    }
}

/// The counters and warnings of one file; rows read = rows applied + rows skipped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    pub rows_read: usize,
    pub rows_applied: usize,
    pub rows_skipped: usize,
    /// The first [`LISTED`] bad rows by row number, with their reasons, and how many in all.
    bad_rows: BTreeMap<u32, Words>,
    bad_row_count: usize,
    missing: BTreeMap<Missing, Named>,
    unknown_columns: Vec<String>,
    /// Every skipped row with its reason, in the order they were skipped: kept with the file
    /// for its error report (`GET /api/file/<id>/report`).
    every_skipped: Vec<(u32, Words)>,
}

/// The distinct values of one kind that rows named and the brand lacks: counted, and the
/// first [`LISTED`] kept in the order they came.
#[derive(Debug, Clone, Default, PartialEq)]
struct Named {
    seen: HashSet<String>,
    first: Vec<String>,
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The listed items (at most [`LISTED`]), then how many more of `total` there are.
fn listed(items: &[String], total: usize) -> String {
    let mut text = items.join(", ");
    if total > items.len() {
        text.push_str(&format!(", … and {} more", total - items.len()));
    }
    text
}

/// [`listed`] in `lang`.
fn listed_in(lang: Lang, items: &[String], total: usize) -> String {
    match lang {
        Lang::En => listed(items, total),
        Lang::De => {
            let mut text = items.join(", ");
            if total > items.len() {
                text.push_str(&format!(", … und {} weitere", total - items.len()));
            }
            text
        }
    }
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
    pub fn skip(&mut self, row: u32, reason: impl Into<Words>) {
        let reason = reason.into();
        self.rows_skipped += 1;
        self.bad_row_count += 1;
        self.every_skipped.push((row, reason.clone()));
        self.bad_rows.insert(row, reason);
        if self.bad_rows.len() > LISTED {
            self.bad_rows.pop_last();
        }
    }

    /// A row's checked values, or `None` with the row skipped for the reason it is not valid.
    pub(crate) fn checked<T>(&mut self, row: u32, line: Result<T, Words>) -> Option<T> {
        line.map_err(|reason| self.skip(row, reason)).ok()
    }

    /// Row `row` skipped because it names something the brand does not have; each value is
    /// listed once however many rows name it.
    pub fn not_found(&mut self, row: u32, what: Missing, value: &str) {
        self.rows_skipped += 1;
        let (en, de) = (what.noun(), what.nouns_in(Lang::De).0);
        self.every_skipped.push((
            row,
            words!("{en} {value} not found", "{de} {value} nicht gefunden"),
        ));
        let named = self.missing.entry(what).or_default();
        if named.seen.insert(value.to_string()) && named.first.len() < LISTED {
            named.first.push(value.to_string());
        }
    }

    /// Every skipped row with its reason in `lang`, as the file's error report keeps them.
    pub fn skipped_rows_in(&self, lang: Lang) -> Vec<(u32, String)> {
        self.every_skipped
            .iter()
            .map(|(row, reason)| (*row, reason.in_lang(lang).to_string()))
            .collect()
    }

    /// The text for `detail.error` in English: one `Warning:` line per kind of problem, or `""`.
    #[cfg(test)]
    pub fn text(&self) -> String {
        self.text_in(Lang::En)
    }

    /// The text for `detail.error` in `lang` (the uploader's): one warning line per kind of
    /// problem (`Warning:`, in German `Warnung:`), or `""`.
    pub fn text_in(&self, lang: Lang) -> String {
        let de = lang == Lang::De;
        let warning = if de { "Warnung" } else { "Warning" };
        let mut lines = Vec::new();
        for (what, named) in &self.missing {
            let (one, many) = what.nouns_in(lang);
            let not_found = if de { "nicht gefunden" } else { "not found" };
            lines.push(format!(
                "{warning}: {} {not_found}: {}",
                plural(named.seen.len(), one, many),
                listed_in(lang, &named.first, named.seen.len())
            ));
        }
        if self.bad_row_count > 0 {
            let row_word = if de { "Zeile" } else { "row" };
            let items: Vec<String> = self
                .bad_rows
                .iter()
                .map(|(row, reason)| format!("{row_word} {row} ({})", reason.in_lang(lang)))
                .collect();
            let (one, many, skipped) = if de {
                ("Zeile", "Zeilen", "übersprungen")
            } else {
                ("row", "rows", "skipped")
            };
            lines.push(format!(
                "{warning}: {} {skipped}: {}",
                plural(self.bad_row_count, one, many),
                listed_in(lang, &items, self.bad_row_count)
            ));
        }
        if !self.unknown_columns.is_empty() {
            let (one, many, ignored) = if de {
                ("unbekannte Spalte", "unbekannte Spalten", "ignoriert")
            } else {
                ("unknown column", "unknown columns", "ignored")
            };
            lines.push(format!(
                "{warning}: {} {ignored}: {}",
                plural(self.unknown_columns.len(), one, many),
                listed_in(
                    lang,
                    &self.unknown_columns[..self.unknown_columns.len().min(LISTED)],
                    self.unknown_columns.len()
                )
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
        report.skip(
            9,
            words!(
                "Price \"abc\" is not a number",
                "Price \"abc\" ist keine Zahl"
            ),
        );
        report.skip(7, words!("Barcode is empty", "Barcode ist leer"));
        for (row, barcode) in [
            (2, "5012345678900"),
            (3, "5012345678901"),
            (4, "5012345678900"),
            (5, "5012345678902"),
        ] {
            report.not_found(row, Missing::Barcode, barcode);
        }
        assert_eq!(report.rows_skipped, 6);
        // Every skipped row is kept, in the order skipped, for the error report.
        assert_eq!(
            report.skipped_rows_in(Lang::De)[..2],
            [
                (9, "Price \"abc\" ist keine Zahl".to_string()),
                (7, "Barcode ist leer".to_string()),
            ]
        );
        assert!(
            report.text_in(Lang::De).starts_with(
                "Warnung: 3 Barcodes nicht gefunden: 5012345678900, 5012345678901, 5012345678902"
            ),
            "{}",
            report.text_in(Lang::De)
        );
        assert_eq!(
            report.skipped_rows_in(Lang::En),
            [
                (9, "Price \"abc\" is not a number".to_string()),
                (7, "Barcode is empty".to_string()),
                (2, "barcode 5012345678900 not found".to_string()),
                (3, "barcode 5012345678901 not found".to_string()),
                (4, "barcode 5012345678900 not found".to_string()),
                (5, "barcode 5012345678902 not found".to_string()),
            ]
        );
        assert_eq!(
            report.text(),
            "Warning: 3 barcodes not found: 5012345678900, 5012345678901, 5012345678902\n\
             Warning: 2 rows skipped: row 7 (Barcode is empty), row 9 (Price \"abc\" is not a number)\n\
             Warning: 1 unknown column ignored: Launch Date"
        );
    }

    #[test]
    fn many_bad_rows_list_the_first_by_row_number_and_count_all() {
        let mut report = Report::new(30, &[]);
        for row in (2..32).rev() {
            report.skip(row, "Barcode is empty");
        }
        let text = report.text();
        assert!(
            text.starts_with("Warning: 30 rows skipped: row 2 (Barcode is empty), row 3 "),
            "{text}"
        );
        assert!(
            text.ends_with("row 21 (Barcode is empty), … and 10 more"),
            "{text}"
        );
        assert_eq!(report.rows_skipped, 30);
    }

    #[test]
    fn long_lists_are_cut() {
        let mut report = Report::new(25, &[]);
        for n in 0..25 {
            report.not_found(n + 2, Missing::Order, &format!("ORD-{n}"));
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
pub(crate) struct FirstRows(HashMap<String, u32>);

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

    /// The brand's variant a row names by `barcode`, the first time the file names it: `None`,
    /// with the row reported, when an earlier row has the barcode or no variant of the brand
    /// has it.
    pub(crate) fn variant<'a>(
        &mut self,
        barcodes: &'a HashMap<String, VariantRef>,
        barcode: &str,
        row: u32,
        report: &mut Report,
    ) -> Option<&'a VariantRef> {
        self.variant_in(barcodes, barcode, "", row, report)
    }

    /// [`FirstRows::variant`] where a barcode may come once per `also` (a price file's
    /// currency: one row per barcode and currency); an empty `also` is the barcode alone.
    pub(crate) fn variant_in<'a>(
        &mut self,
        barcodes: &'a HashMap<String, VariantRef>,
        barcode: &str,
        also: &str,
        row: u32,
        report: &mut Report,
    ) -> Option<&'a VariantRef> {
        let key = fold(barcode);
        let claimed = if also.is_empty() {
            self.claim(&key, barcode, row, report)
        } else {
            self.claim(
                &format!("{key}\u{0}{}", fold(also)),
                &format!("{barcode} in {also}"),
                row,
                report,
            )
        };
        if !claimed {
            return None;
        }
        let found = barcodes.get(&key);
        if found.is_none() {
            report.not_found(row, Missing::Barcode, barcode);
        }
        found
    }
}
