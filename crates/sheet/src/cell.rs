//! One spreadsheet cell, typed as the file stored it, with the lenient conversions processors
//! need: a barcode stored as a number still reads as its digits, "12,50" still reads as 12.5.

use std::borrow::Cow;

use calamine::{ExcelDateTime, ExcelDateTimeType};

use crate::formula::uploaded_text;
use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime};

/// A cell's value as the file stored it: CSV cells are always text, workbook cells keep the type
/// the spreadsheet gave them. Text is trimmed, then loses the `'` an export put before a
/// formula character ([`crate::formula::uploaded_text`]); empty text is [`Cell::Empty`].
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Cell {
    /// Nothing in the cell (or only spaces).
    #[default]
    Empty,
    /// Text, trimmed (but a text kept by a leading `'` keeps what follows it, such as a
    /// leading tab), never empty.
    Text(String),
    /// A number (spreadsheets store integers as floating point too).
    Number(f64),
    /// A boolean cell (TRUE/FALSE).
    Bool(bool),
    /// A cell formatted as a date or date and time; a date alone is at midnight.
    Date(NaiveDateTime),
}

/// Excel's serial dates run from 1 (1900-01-01) up to this (the end of 9999-12-31).
const MAX_SERIAL: f64 = 2_958_466.0;

/// Date and time layouts accepted in text cells, besides RFC 3339 with an offset.
const DATETIME_FORMATS: [&str; 5] = [
    "%Y-%m-%dT%H:%M:%S%.f",
    "%Y-%m-%d %H:%M:%S%.f",
    "%Y-%m-%dT%H:%M",
    "%d/%m/%Y %H:%M:%S",
    "%d/%m/%Y %H:%M",
];
/// Date layouts accepted in text cells.
const DATE_FORMATS: [&str; 2] = ["%d/%m/%Y", "%Y-%m-%d"];

impl Cell {
    /// A text cell from raw text: trimmed, and [`Cell::Empty`] when nothing is left; one `'`
    /// before a formula character is removed ([`uploaded_text`]), whatever the format, since a
    /// CSV export opened and saved as a workbook still holds it.
    pub fn text(raw: &str) -> Cell {
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            Cell::Empty
        } else {
            Cell::Text(uploaded_text(trimmed).to_string())
        }
    }

    /// Whether the cell holds nothing.
    pub fn is_empty(&self) -> bool {
        matches!(self, Cell::Empty)
    }

    /// The cell as text: an integral number as its digits (a barcode stored as the number
    /// 5012345678900 is "5012345678900"), other numbers in their shortest exact form, booleans as
    /// "true"/"false", dates as ISO 8601. `None` when empty.
    pub fn as_text(&self) -> Option<Cow<'_, str>> {
        match self {
            Cell::Empty => None,
            Cell::Text(text) => Some(Cow::Borrowed(text)),
            Cell::Number(n) => Some(Cow::Owned(number_to_text(*n))),
            Cell::Bool(b) => Some(Cow::Borrowed(if *b { "true" } else { "false" })),
            Cell::Date(dt) if dt.time() == NaiveTime::MIN => {
                Some(Cow::Owned(dt.format("%Y-%m-%d").to_string()))
            }
            Cell::Date(dt) => Some(Cow::Owned(dt.format("%Y-%m-%dT%H:%M:%S").to_string())),
        }
    }

    /// The cell as a number: number cells, and text such as "12.50", "12,50", "1.234,50",
    /// "1,234.50" or "£12.50". `None` for anything else, and never NaN or infinite.
    pub fn as_number(&self) -> Option<f64> {
        match self {
            Cell::Number(n) => Some(*n),
            Cell::Text(text) => parse_number(text),
            _ => None,
        }
    }

    /// The cell as a whole number: [`Cell::as_number`] when it has no fractional part.
    pub fn as_integer(&self) -> Option<i64> {
        let n = self.as_number()?;
        // i64::MAX as f64 rounds up to 2^63, which is out of range: compare strictly.
        (n.fract() == 0.0 && n >= i64::MIN as f64 && n < i64::MAX as f64).then_some(n as i64)
    }

    /// The cell as a boolean: boolean cells, the numbers 1 and 0, and (in any case) the texts
    /// true/false, yes/no, y/n, 1/0.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Cell::Bool(b) => Some(*b),
            Cell::Number(n) if *n == 1.0 => Some(true),
            Cell::Number(n) if *n == 0.0 => Some(false),
            Cell::Text(text) => match text.to_lowercase().as_str() {
                "true" | "yes" | "y" | "1" => Some(true),
                "false" | "no" | "n" | "0" => Some(false),
                _ => None,
            },
            _ => None,
        }
    }

    /// The cell as a date: date cells, Excel serial numbers, and text `DD/MM/YYYY`,
    /// `YYYY-MM-DD` or an ISO 8601 timestamp (whose date is taken as written).
    pub fn as_date(&self) -> Option<NaiveDate> {
        match self {
            Cell::Text(text) => parse_date(text).or_else(|| parse_datetime(text).map(|d| d.date())),
            _ => self.as_datetime().map(|dt| dt.date()),
        }
    }

    /// The cell as a date and time: like [`Cell::as_date`], a date alone being at midnight; an
    /// offset in an RFC 3339 timestamp is dropped, keeping the time as written.
    pub fn as_datetime(&self) -> Option<NaiveDateTime> {
        match self {
            Cell::Date(dt) => Some(*dt),
            Cell::Number(n) if (1.0..MAX_SERIAL).contains(n) => {
                ExcelDateTime::new(*n, ExcelDateTimeType::DateTime, false).as_datetime()
            }
            Cell::Text(text) => parse_datetime(text)
                .or_else(|| parse_date(text).map(|d| d.and_time(NaiveTime::MIN))),
            _ => None,
        }
    }
}

/// A number as a person would type it: integral values as plain digits, others in the shortest
/// text that reads back to the same value, never in exponent notation.
pub fn number_to_text(n: f64) -> String {
    if n == 0.0 {
        // Also turns -0 into 0.
        return "0".to_string();
    }
    // Rust's `Display` for f64 prints the shortest round-trip digits and no exponent.
    format!("{n}")
}

/// Parses a number written with a decimal point or comma, optional thousands separators,
/// spaces and a currency sign.
fn parse_number(text: &str) -> Option<f64> {
    let mut s: String = text
        .chars()
        .filter(|c| !c.is_whitespace() && !matches!(c, '£' | '€' | '$'))
        .collect();
    let commas = s.matches(',').count();
    let points = s.matches('.').count();
    s = if commas + points <= 1 {
        // "12,50" or "12.50": the one separator is the decimal one.
        s.replace(',', ".")
    } else if points == 0 {
        // "1,234,567"
        s.replace(',', "")
    } else if commas == 0 {
        // "1.234.567"
        s.replace('.', "")
    } else if s.rfind(',') > s.rfind('.') {
        // "1.234,50"
        s.replace('.', "").replace(',', ".")
    } else {
        // "1,234.50"
        s.replace(',', "")
    };
    let plausible = s.bytes().any(|b| b.is_ascii_digit())
        && s.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'+' | b'-' | b'e' | b'E'));
    if !plausible {
        return None;
    }
    s.parse::<f64>().ok().filter(|n| n.is_finite())
}

/// A date in one of [`DATE_FORMATS`] with a four-digit year.
fn parse_date(text: &str) -> Option<NaiveDate> {
    DATE_FORMATS
        .iter()
        .find_map(|layout| NaiveDate::parse_from_str(text, layout).ok())
        .filter(four_digit_year)
}

/// A date and time in one of [`DATETIME_FORMATS`] or RFC 3339, with a four-digit year.
fn parse_datetime(text: &str) -> Option<NaiveDateTime> {
    DateTime::parse_from_rfc3339(text)
        .map(|dt| dt.naive_local())
        .ok()
        .or_else(|| {
            DATETIME_FORMATS
                .iter()
                .find_map(|layout| NaiveDateTime::parse_from_str(text, layout).ok())
        })
        .filter(|dt| four_digit_year(&dt.date()))
}

/// Refuses years such as 24 that a two-digit "15/03/24" would give.
fn four_digit_year(date: &NaiveDate) -> bool {
    use chrono::Datelike;
    (1000..=9999).contains(&date.year())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Cell {
        Cell::text(s)
    }

    fn date(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    #[test]
    fn text_is_trimmed_and_empty_text_is_empty() {
        assert_eq!(text("  Crème  "), Cell::Text("Crème".into()));
        assert_eq!(text(" \t\u{a0}"), Cell::Empty);
        assert_eq!(Cell::Empty.as_text(), None);
    }

    #[test]
    fn a_quote_before_a_formula_character_is_removed_once() {
        assert_eq!(text("'=x"), Cell::Text("=x".into()));
        assert_eq!(
            text("  '=HYPERLINK(\"x\") "),
            Cell::Text("=HYPERLINK(\"x\")".into())
        );
        assert_eq!(text("'x"), Cell::Text("'x".into()));
        assert_eq!(text("''=x"), Cell::Text("'=x".into()));
        assert_eq!(text("'-5").as_number(), Some(-5.0));
        // What the quote kept is kept whole: the tab it protected is not trimmed away.
        assert_eq!(text("'\tx"), Cell::Text("\tx".into()));
    }

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(
            Cell::Number(5_012_345_678_900.0).as_text().unwrap(),
            "5012345678900"
        );
        assert_eq!(Cell::Number(12.5).as_text().unwrap(), "12.5");
        assert_eq!(
            Cell::Number(0.1 + 0.2).as_text().unwrap(),
            "0.30000000000000004"
        );
        assert_eq!(Cell::Number(-0.0).as_text().unwrap(), "0");
        assert_eq!(
            Cell::Number(1e21).as_text().unwrap(),
            "1000000000000000000000"
        );
        assert_eq!(Cell::Number(-3.0).as_text().unwrap(), "-3");
    }

    #[test]
    fn as_number_accepts_decimal_commas_and_separators() {
        assert_eq!(text("12,50").as_number(), Some(12.5));
        assert_eq!(text("12.50").as_number(), Some(12.5));
        assert_eq!(text("1.234,50").as_number(), Some(1234.5));
        assert_eq!(text("1,234.50").as_number(), Some(1234.5));
        assert_eq!(text("1,234,567").as_number(), Some(1_234_567.0));
        assert_eq!(text("1 234,5").as_number(), Some(1234.5));
        assert_eq!(text("£19.99").as_number(), Some(19.99));
        assert_eq!(text("-4").as_number(), Some(-4.0));
        assert_eq!(text("1e3").as_number(), Some(1000.0));
        assert_eq!(text("NaN").as_number(), None);
        assert_eq!(text("inf").as_number(), None);
        assert_eq!(text("12a").as_number(), None);
        assert_eq!(text("-").as_number(), None);
        assert_eq!(Cell::Bool(true).as_number(), None);
    }

    #[test]
    fn as_integer_requires_a_whole_number() {
        assert_eq!(text("7").as_integer(), Some(7));
        assert_eq!(text("7.0").as_integer(), Some(7));
        assert_eq!(text("7.5").as_integer(), None);
        assert_eq!(Cell::Number(3.0).as_integer(), Some(3));
        assert_eq!(Cell::Number(1e300).as_integer(), None);
        assert_eq!(Cell::Empty.as_integer(), None);
    }

    #[test]
    fn as_bool_reads_common_spellings() {
        for yes in ["true", "TRUE", "Yes", "y", "1"] {
            assert_eq!(text(yes).as_bool(), Some(true), "{yes}");
        }
        for no in ["false", "No", "N", "0"] {
            assert_eq!(text(no).as_bool(), Some(false), "{no}");
        }
        assert_eq!(text("maybe").as_bool(), None);
        assert_eq!(Cell::Number(1.0).as_bool(), Some(true));
        assert_eq!(Cell::Number(2.0).as_bool(), None);
        assert_eq!(Cell::Bool(false).as_bool(), Some(false));
    }

    #[test]
    fn as_date_reads_cells_serials_and_text() {
        let midnight = date(2024, 3, 15).and_time(NaiveTime::MIN);
        assert_eq!(Cell::Date(midnight).as_date(), Some(date(2024, 3, 15)));
        assert_eq!(Cell::Number(45366.0).as_date(), Some(date(2024, 3, 15)));
        assert_eq!(text("15/03/2024").as_date(), Some(date(2024, 3, 15)));
        assert_eq!(text("5/3/2024").as_date(), Some(date(2024, 3, 5)));
        assert_eq!(text("2024-03-15").as_date(), Some(date(2024, 3, 15)));
        assert_eq!(
            text("2024-03-15T10:30:00").as_date(),
            Some(date(2024, 3, 15))
        );
        assert_eq!(
            text("2024-03-15T23:30:00-05:00").as_date(),
            Some(date(2024, 3, 15))
        );
        assert_eq!(
            text("2024-03-15 08:00:00").as_date(),
            Some(date(2024, 3, 15))
        );
        assert_eq!(text("15/03/24").as_date(), None);
        assert_eq!(text("31/02/2024").as_date(), None);
        assert_eq!(text("soon").as_date(), None);
        assert_eq!(Cell::Number(-1.0).as_date(), None);
    }

    #[test]
    fn as_datetime_keeps_the_time() {
        let dt = text("2024-03-15T10:30:00Z").as_datetime().unwrap();
        assert_eq!(dt.format("%H:%M").to_string(), "10:30");
        let noon = Cell::Number(45366.5).as_datetime().unwrap();
        assert_eq!(
            noon.format("%Y-%m-%d %H:%M").to_string(),
            "2024-03-15 12:00"
        );
        assert_eq!(Cell::Date(noon).as_text().unwrap(), "2024-03-15T12:00:00");
        assert_eq!(
            text("15/03/2024").as_datetime(),
            Some(date(2024, 3, 15).and_time(NaiveTime::MIN))
        );
    }
}
