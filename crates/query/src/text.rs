//! Case-insensitive text, the same on every backend: text is compared through a folded copy
//! (Unicode default case folding, NFC-normalised) that brandhub computes itself on every write
//! and applies to every filter value. SQLite's and PostgreSQL's own case rules never matter.

use caseless::default_case_fold_str;
use unicode_normalization::UnicodeNormalization;

/// The wildcard that stands for any run of characters in a text filter value.
pub const WILDCARD: char = '@';

/// The folded form of a text: `ÉCLAIR` and `éclair` fold alike, `STRASSE` and `straße` too.
pub fn fold(text: &str) -> String {
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    let decomposed: String = text.nfd().collect();
    default_case_fold_str(&decomposed).nfc().collect()
}

/// A text value with `@` wildcards, folded piece by piece.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    /// The literal pieces between wildcards; there are at least two (one wildcard or more).
    pieces: Vec<String>,
}

impl Pattern {
    /// Splits a value on `@`; `None` when it has no wildcard. `fold_case` is off for ids and
    /// timestamps, whose stored forms are upper case.
    pub fn parse(value: &str, fold_case: bool) -> Option<Pattern> {
        Pattern::split(value, |piece| {
            if fold_case {
                fold(piece)
            } else {
                piece.to_ascii_uppercase()
            }
        })
    }

    /// A pattern over names (of fields and relations), which keep their case.
    pub fn over_names(value: &str) -> Option<Pattern> {
        Pattern::split(value, str::to_string)
    }

    fn split(value: &str, normalise: impl Fn(&str) -> String) -> Option<Pattern> {
        if !value.contains(WILDCARD) {
            return None;
        }
        Some(Pattern {
            pieces: value.split(WILDCARD).map(normalise).collect(),
        })
    }

    /// The literal text every match starts with (may be empty).
    pub fn prefix(&self) -> &str {
        &self.pieces[0]
    }

    /// Whether the pattern is `text@`: a pure prefix search that a range on an index serves.
    pub fn is_prefix_only(&self) -> bool {
        self.pieces.len() == 2 && self.pieces[1].is_empty()
    }

    /// The SQL LIKE form, with `\` escaping LIKE's own wildcards in the literal pieces.
    pub fn to_like(&self) -> String {
        let mut like = String::new();
        for (i, piece) in self.pieces.iter().enumerate() {
            if i > 0 {
                like.push('%');
            }
            for c in piece.chars() {
                if matches!(c, '%' | '_' | '\\') {
                    like.push('\\');
                }
                like.push(c);
            }
        }
        like
    }

    /// Whether an (already folded) text matches; the reference for what the SQL must do.
    pub fn matches(&self, text: &str) -> bool {
        let first = &self.pieces[0];
        let last = &self.pieces[self.pieces.len() - 1];
        if !text.starts_with(first.as_str()) {
            return false;
        }
        let mut rest = &text[first.len()..];
        if rest.len() < last.len() {
            return false;
        }
        let middle = &self.pieces[1..self.pieces.len() - 1];
        for piece in middle {
            match rest.find(piece.as_str()) {
                Some(at) => rest = &rest[at + piece.len()..],
                None => return false,
            }
        }
        rest.len() >= last.len() && rest.ends_with(last.as_str())
    }
}

/// The smallest string greater than every string that starts with `prefix`, so that
/// `prefix <= x < bound` selects exactly the strings starting with `prefix` in byte order
/// (which is code point order for UTF-8). `None` when no such bound exists (all U+10FFFF).
pub fn prefix_upper_bound(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let mut next = last as u32 + 1;
        if (0xD800..0xE000).contains(&next) {
            next = 0xE000;
        }
        if let Some(c) = char::from_u32(next) {
            chars.push(c);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn folding_is_unicode_aware() {
        assert_eq!(fold("ÉCLAIR"), fold("éclair"));
        assert_eq!(fold("Crème"), "crème");
        assert_eq!(fold("ÄRMEL"), fold("Ärmel"));
        assert_eq!(fold("STRASSE"), fold("straße"));
        assert_eq!(fold("E\u{301}"), fold("é"));
        assert_eq!(fold("ABC-12"), "abc-12");
    }

    #[test]
    fn patterns_split_on_wildcards_and_escape_like() {
        let p = Pattern::parse("50_1%@", true).unwrap();
        assert!(p.is_prefix_only());
        assert_eq!(p.prefix(), "50_1%");
        assert_eq!(p.to_like(), "50\\_1\\%%");
        assert!(Pattern::parse("plain", true).is_none());
        let contains = Pattern::parse("@ÉCL@", true).unwrap();
        assert!(!contains.is_prefix_only());
        assert!(contains.matches(&fold("Chocolate éclair")));
        assert!(!contains.matches("chocolate"));
    }

    #[test]
    fn matching_follows_the_wildcard_rules() {
        let cases = [
            ("abc@", "abcdef", true),
            ("abc@", "xabc", false),
            ("@abc", "xxabc", true),
            ("@abc", "abcx", false),
            ("a@c", "abc", true),
            ("a@c", "ac", true),
            ("a@a", "a", false),
            ("@", "", true),
            ("a@b@c", "a-b-c", true),
            ("a@b@c", "acb", false),
        ];
        for (pattern, text, expected) in cases {
            let p = Pattern::parse(pattern, true).unwrap();
            assert_eq!(p.matches(text), expected, "{pattern} ~ {text}");
        }
    }

    #[test]
    fn upper_bound_closes_the_prefix_range() {
        assert_eq!(prefix_upper_bound("abc").unwrap(), "abd");
        assert_eq!(prefix_upper_bound("50101").unwrap(), "50102");
        assert_eq!(prefix_upper_bound("a\u{10FFFF}").unwrap(), "b");
        assert_eq!(prefix_upper_bound("\u{D7FF}").unwrap(), "\u{E000}");
        assert!(prefix_upper_bound("").is_none());
    }

    proptest! {
        #[test]
        fn prefix_range_equals_starts_with(prefix in "[a-cé]{1,3}", text in "[a-cé\u{10FFFF}]{0,5}") {
            let bound = prefix_upper_bound(&prefix).unwrap();
            let in_range = text.as_str() >= prefix.as_str() && text.as_str() < bound.as_str();
            prop_assert_eq!(in_range, text.starts_with(&prefix));
        }

        #[test]
        fn folding_is_idempotent(text in "\\PC{0,12}") {
            let once = fold(&text);
            prop_assert_eq!(fold(&once), once.clone());
        }
    }
}
