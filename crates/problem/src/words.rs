//! Words for people, in each language the API speaks: a problem's detail, a field's message, a
//! skipped row's reason. Each is written in English and German where it is made ([`words!`]),
//! and the language is chosen where it is answered or stored (the request's
//! `Accept-Language`, the user's `detail.lang`, a file uploader's language). A text made of
//! English only ([`Words::english`], or `From<String>`) reads in English in every language:
//! those are the texts about the API's own syntax, written for programmers.

use crate::Lang;
use serde::Serialize;
use std::fmt;
use std::ops::Deref;

/// One text in English and, where it has one, German. Boxed: it travels in every error
/// value, which stays small that way.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Words(Box<Texts>);

/// The sentences of [`Words`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Texts {
    en: String,
    de: Option<String>,
}

/// Words in English and German, each formatted like `format!`: the same arguments fill both
/// sentences (each must use every one), so a translation cannot drop a value.
///
/// ```
/// # use brandhub_problem::{words, Lang};
/// let n = 3;
/// let said = words!("{n} rows skipped", "{n} Zeilen übersprungen");
/// assert_eq!(said.in_lang(Lang::De), "3 Zeilen übersprungen");
/// ```
#[macro_export]
macro_rules! words {
    ($en:literal, $de:literal $(,)?) => {
        $crate::Words::new(format!($en), format!($de))
    };
    ($en:literal, $de:literal, $($arg:tt)+) => {
        $crate::Words::new(format!($en, $($arg)+), format!($de, $($arg)+))
    };
}

impl Words {
    /// A text in both languages.
    pub fn new(en: impl Into<String>, de: impl Into<String>) -> Words {
        Words(Box::new(Texts {
            en: en.into(),
            de: Some(de.into()),
        }))
    }

    /// A text in English only, read in English in every language.
    pub fn english(en: impl Into<String>) -> Words {
        Words(Box::new(Texts {
            en: en.into(),
            de: None,
        }))
    }

    /// The text in `lang` (English where it has no German).
    pub fn in_lang(&self, lang: Lang) -> &str {
        match lang {
            Lang::En => &self.0.en,
            Lang::De => self.0.de.as_deref().unwrap_or(&self.0.en),
        }
    }

    /// The English text (logs, the command line).
    pub fn as_str(&self) -> &str {
        &self.0.en
    }

    /// The text changed alike in each language (a sentence's first letter made capital).
    pub fn map(self, change: impl Fn(&str) -> String) -> Words {
        Words(Box::new(Texts {
            en: change(&self.0.en),
            de: self.0.de.as_deref().map(&change),
        }))
    }

    /// The text with its first letter made capital and a full stop after it, in each
    /// language: a reason (`a warehouse user may not …`) told as a sentence.
    pub fn as_sentence(self) -> Words {
        self.map(|text| {
            let mut chars = text.chars();
            match chars.next() {
                Some(first) => format!("{}{}.", first.to_uppercase(), chars.as_str()),
                None => String::new(),
            }
        })
    }

    /// This text and then `other`, in each language.
    pub fn then(self, other: &Words) -> Words {
        let (mine, theirs) = (*self.0, &other.0);
        let de = match (&mine.de, &theirs.de) {
            (None, None) => None,
            (de, theirs_de) => Some(format!(
                "{}{}",
                de.as_deref().unwrap_or(&mine.en),
                theirs_de.as_deref().unwrap_or(&theirs.en)
            )),
        };
        Words(Box::new(Texts {
            en: format!("{}{}", mine.en, theirs.en),
            de,
        }))
    }

    /// The text led by `lead` (`Element 2: `, `company: `), in each language.
    pub fn led_by(self, lead: Words) -> Words {
        lead.then(&self)
    }

    /// The texts joined by `separator` (which reads the same in both languages).
    pub fn join<'a>(parts: impl IntoIterator<Item = &'a Words>, separator: &str) -> Words {
        let mut joined: Option<Words> = None;
        for part in parts {
            joined = Some(match joined {
                None => part.clone(),
                Some(so_far) => so_far.then(&Words::english(separator)).then(part),
            });
        }
        joined.unwrap_or_default()
    }
}

impl Deref for Words {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0.en
    }
}

impl fmt::Display for Words {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.en)
    }
}

impl From<String> for Words {
    fn from(en: String) -> Words {
        Words::english(en)
    }
}

impl From<&str> for Words {
    fn from(en: &str) -> Words {
        Words::english(en)
    }
}

impl PartialEq<str> for Words {
    fn eq(&self, other: &str) -> bool {
        self.0.en == other
    }
}

impl PartialEq<&str> for Words {
    fn eq(&self, other: &&str) -> bool {
        self.0.en == *other
    }
}

/// Serialised in English: a text that leaves without a language chosen (a command's output).
impl Serialize for Words {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0.en)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_language_reads_its_own_and_english_fills_in_where_there_is_no_german() {
        let row = 4;
        let said = words!("row {row} skipped", "Zeile {row} übersprungen");
        assert_eq!(said.in_lang(Lang::En), "row 4 skipped");
        assert_eq!(said.in_lang(Lang::De), "Zeile 4 übersprungen");
        let led = said.clone().led_by(words!("File: ", "Datei: "));
        assert_eq!(led.in_lang(Lang::De), "Datei: Zeile 4 übersprungen");
        let programmers = Words::english("order_by=x is not a field");
        assert_eq!(programmers.in_lang(Lang::De), "order_by=x is not a field");
        let mixed = Words::join([&said, &programmers], "; ");
        assert_eq!(
            mixed.in_lang(Lang::De),
            "Zeile 4 übersprungen; order_by=x is not a field"
        );
        assert_eq!(mixed, "row 4 skipped; order_by=x is not a field");
        assert_eq!(programmers.in_lang(Lang::De), programmers.in_lang(Lang::En));
    }

    #[test]
    fn an_argument_fills_both_sentences_in_their_own_order() {
        let (field, limit) = ("quantity", 10);
        let said = words!(
            "{} may be at most {}",
            "{0} darf höchstens {1} sein",
            field,
            limit
        );
        assert_eq!(said.in_lang(Lang::De), "quantity darf höchstens 10 sein");
        assert_eq!(said.in_lang(Lang::En), "quantity may be at most 10");
    }
}
