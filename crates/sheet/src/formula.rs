//! Formula injection (docs/API.md, "Exports: CSV and XLSX"): a spreadsheet program runs a cell that begins with `=`,
//! `+`, `-` or `@` (and, in some programs, one after a tab or a carriage return) as a formula,
//! so a text that one tenant wrote, exported as CSV by another, could run in the other's
//! spreadsheet. A CSV export writes such a text with a leading `'` (the spreadsheet
//! programs' mark of a text, OWASP's advice); an upload removes that one `'` again, so an
//! export uploaded again keeps its texts. Both directions are here, so they cannot drift
//! apart: for every text, [`uploaded_text`] of [`csv_text`] (and of [`typed_text`]) is the
//! text.

use std::borrow::Cow;

/// The characters that make a spreadsheet program read a cell as a formula.
pub const FORMULA_STARTS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// The mark that keeps a cell text.
const QUOTE: char = '\'';

/// Whether `text` begins with a formula character once its leading `'`s are passed over:
/// such a text loses a `'` when uploaded ([`uploaded_text`]) unless it was given one.
fn formula_behind_quotes(text: &str) -> bool {
    text.trim_start_matches(QUOTE).starts_with(FORMULA_STARTS)
}

/// A text as a CSV export writes it: with a leading `'` when it begins with a formula
/// character, or with `'`s and then one (`'=x` is written `''=x`, so that its upload gives
/// `'=x` back); any other text as it is. Only texts pass through here: a number column's
/// `-5` is a number, never marked.
pub fn csv_text(text: &str) -> Cow<'_, str> {
    if formula_behind_quotes(text) {
        Cow::Owned(format!("{QUOTE}{text}"))
    } else {
        Cow::Borrowed(text)
    }
}

/// A text as a typed text cell (XLSX) holds it: a text cell is never a formula, so it is
/// marked only when it already begins with `'`s before a formula character (`'=x` is written
/// `''=x`), which an upload would otherwise shorten.
pub fn typed_text(text: &str) -> Cow<'_, str> {
    if text.starts_with(QUOTE) && formula_behind_quotes(text) {
        Cow::Owned(format!("{QUOTE}{text}"))
    } else {
        Cow::Borrowed(text)
    }
}

/// An uploaded text cell as the text it stands for: ONE leading `'` removed when a formula
/// character follows it, directly or after more `'`s (`'=x` → `=x`, `''=x` → `'=x`); any
/// other text as it is (`'x` stays `'x`).
pub fn uploaded_text(text: &str) -> &str {
    match text.strip_prefix(QUOTE) {
        Some(rest) if formula_behind_quotes(rest) => rest,
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upload_removes_one_quote_before_a_formula_character_only() {
        assert_eq!(uploaded_text("'=x"), "=x");
        assert_eq!(uploaded_text("''=x"), "'=x");
        assert_eq!(uploaded_text("'''=x"), "''=x");
        assert_eq!(uploaded_text("'x"), "'x");
        assert_eq!(uploaded_text("''x"), "''x");
        assert_eq!(uploaded_text("'"), "'");
        assert_eq!(uploaded_text("''"), "''");
        assert_eq!(uploaded_text("=x"), "=x");
        assert_eq!(uploaded_text("x'=y"), "x'=y");
        for start in FORMULA_STARTS {
            let text = format!("{start}HYPERLINK(\"https://example.test\")");
            assert_eq!(uploaded_text(&format!("'{text}")), text, "{start:?}");
        }
    }

    #[test]
    fn csv_marks_every_formula_start_and_nothing_else() {
        for start in FORMULA_STARTS {
            let text = format!("{start}cmd|' /C calc'!A0");
            assert_eq!(csv_text(&text), format!("'{text}"), "{start:?}");
        }
        assert_eq!(csv_text("'=x"), "''=x");
        assert_eq!(csv_text("Plain title"), "Plain title");
        assert_eq!(csv_text("'quoted"), "'quoted");
        assert_eq!(csv_text("a=b"), "a=b");
        assert_eq!(csv_text(""), "");
        assert!(matches!(csv_text("Plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn typed_text_marks_only_what_an_upload_would_shorten() {
        assert_eq!(typed_text("=HYPERLINK(\"x\")"), "=HYPERLINK(\"x\")");
        assert_eq!(typed_text("-5"), "-5");
        assert_eq!(typed_text("'=x"), "''=x");
        assert_eq!(typed_text("'x"), "'x");
    }

    #[test]
    fn exports_uploaded_again_give_every_text_back() {
        let texts = [
            "=1+2", "+44 20", "-5", "@SUM(A1)", "\tx", "\rx", "'=x", "''@x", "'x", "'", "x", "",
            "''", "'-",
        ];
        for text in texts {
            assert_eq!(uploaded_text(&csv_text(text)), text, "csv {text:?}");
            assert_eq!(uploaded_text(&typed_text(text)), text, "typed {text:?}");
        }
    }
}
