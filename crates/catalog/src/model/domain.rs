//! A field's domain: the values it admits, told in words when a value is outside.

use super::*;
use brandhub_problem::{Words, words};

/// Rules on written values beyond their type (docs/API.md, "Writes: master data and catalogue": "a value outside its domain").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Domain {
    /// An absolute http or https URL with a host and without spaces: what a client can fetch.
    WebUrl,
    /// An absolute https URL naming a public host (a webhook's receiver, docs/API.md, "Events and webhooks":
    /// [`secure_url_problem`]), or a URL naming the loopback address, which only a server
    /// started to allow it accepts ([`is_insecure_loopback_url`]).
    SecureUrl,
    /// One of these words, exactly (statuses, types, reasons).
    OneOf(&'static [&'static str]),
    /// One of these words in any letter case (a brand store's rules: `LIVE` is `live`).
    AnyCase(&'static [&'static str]),
    /// A whole number of units from `least` to `most` (quantities, docs/API.md, "Quantities and amounts").
    Units { least: i64, most: i64 },
    /// An amount of money (docs/API.md, "Quantities and amounts"): finite, at most [`limits::MOST_MONEY`] from zero,
    /// not negative unless `signed`, kept to [`limits::MONEY_DECIMALS`] decimals.
    Money { signed: bool },
}

/// The limits of quantities and amounts (docs/API.md, "Quantities and amounts"), named once.
pub mod limits {
    /// The most units one order line may order.
    pub const MOST_ORDERED: i64 = 1_000_000;
    /// The most units of any other quantity (stock counts, shipped, returned), and how far
    /// from zero a stock move may take a count.
    pub const MOST_UNITS: i64 = 1_000_000_000;
    /// The largest amount of money, in absolute value.
    pub const MOST_MONEY: f64 = 1_000_000_000.0;
    /// The decimals an amount of money is kept to.
    pub const MONEY_DECIMALS: i32 = 2;
}

/// A whole number with thousands separators (`1,000,000`), as limits are written.
pub fn grouped(n: i64) -> String {
    grouped_by(n, ',')
}

/// A whole number with its thousands grouped by `separator` (German groups by `.`).
fn grouped_by(n: i64, separator: char) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(separator);
        }
        out.push(digit);
    }
    out
}

impl Domain {
    /// An order line's quantity: 1 to [`limits::MOST_ORDERED`].
    pub const ORDERED: Domain = Domain::Units {
        least: 1,
        most: limits::MOST_ORDERED,
    };
    /// Every other quantity: 0 to [`limits::MOST_UNITS`].
    pub const UNITS: Domain = Domain::Units {
        least: 0,
        most: limits::MOST_UNITS,
    };
    /// A price or other amount that is never negative.
    pub const MONEY: Domain = Domain::Money { signed: false };
    /// An amount that may be negative (a line's tax, an adjustment).
    pub const SIGNED_MONEY: Domain = Domain::Money { signed: true };

    /// Why `text` is outside the domain, if it is (an empty text is unset, always allowed).
    /// Number domains hold numbers, never texts: a text is outside them.
    pub fn problem(self, text: &str) -> Option<Words> {
        match self {
            _ if text.is_empty() => None,
            Domain::WebUrl => web_url_problem(text),
            Domain::SecureUrl => secure_url_problem(text).map(Words::english),
            Domain::OneOf(words) if words.contains(&text) => None,
            Domain::OneOf(words) => Some(words!(
                "'{text}' is not one of {}",
                "'{text}' ist keiner der Werte {}",
                words.join(", ")
            )),
            Domain::AnyCase(words) if words.iter().any(|w| w.eq_ignore_ascii_case(text)) => None,
            Domain::AnyCase(words) => Some(words!(
                "'{text}' is not one of {} (in any case)",
                "'{text}' ist keiner der Werte {} (Groß- und Kleinschreibung egal)",
                words.join(", ")
            )),
            Domain::Units { .. } | Domain::Money { .. } => Some(self.must()),
        }
    }

    /// Why the number `n` is outside the domain, if it is: not finite, past its range, or
    /// (for units) not whole. Text domains hold no numbers.
    pub fn number_problem(self, n: f64) -> Option<Words> {
        let (least, most) = self.bounds()?;
        let whole = !matches!(self, Domain::Units { .. }) || n.fract() == 0.0;
        (!(n.is_finite() && whole && n >= least && n <= most)).then(|| self.must())
    }

    /// The least and the most a number of the domain may be; `None` for text domains.
    pub fn bounds(self) -> Option<(f64, f64)> {
        match self {
            Domain::Units { least, most } => Some((least as f64, most as f64)),
            Domain::Money { signed } => Some((
                if signed { -limits::MOST_MONEY } else { 0.0 },
                limits::MOST_MONEY,
            )),
            Domain::WebUrl | Domain::SecureUrl | Domain::OneOf(_) | Domain::AnyCase(_) => None,
        }
    }

    /// What a value of a number domain is, for messages and the docs (`a whole number from 1
    /// to 1,000,000`); `None` for text domains.
    pub fn describe(self) -> Option<String> {
        self.described().map(|words| words.to_string())
    }

    /// [`Domain::describe`] in each language.
    pub fn described(self) -> Option<Words> {
        let (least, most) = self.bounds()?;
        let (least, most) = (least as i64, most as i64);
        let (least_en, most_en) = (grouped(least), grouped(most));
        let (least_de, most_de) = (grouped_by(least, '.'), grouped_by(most, '.'));
        let decimals = limits::MONEY_DECIMALS;
        Some(match self {
            Domain::Units { .. } => Words::new(
                format!("a whole number from {least_en} to {most_en}"),
                format!("eine ganze Zahl von {least_de} bis {most_de}"),
            ),
            _ => Words::new(
                format!("an amount from {least_en} to {most_en}, kept to {decimals} decimals"),
                format!(
                    "ein Betrag von {least_de} bis {most_de} mit höchstens {decimals} Nachkommastellen"
                ),
            ),
        })
    }

    /// The message of a value outside a number domain.
    pub(super) fn must(self) -> Words {
        self.described()
            .unwrap_or_default()
            .led_by(words!("must be ", "muss "))
            .then(&words!("", " sein"))
    }

    /// The value a number of the domain is kept as: an amount rounded to
    /// [`limits::MONEY_DECIMALS`] decimals (half away from zero, never `-0`); anything else
    /// as it is.
    pub fn kept(self, n: f64) -> f64 {
        match self {
            Domain::Money { .. } => {
                let scale = 10f64.powi(limits::MONEY_DECIMALS);
                // Adding 0.0 turns -0.0 into 0.0.
                (n * scale).round() / scale + 0.0
            }
            _ => n,
        }
    }

    /// The text a word of the domain is kept as: a word of [`Domain::AnyCase`] in the case
    /// the domain spells it (`LIVE` is kept as `live`); any other text as it is.
    pub fn kept_word(self, text: String) -> String {
        match self {
            Domain::AnyCase(words) => words
                .iter()
                .find(|w| w.eq_ignore_ascii_case(&text))
                .map_or(text, |w| (*w).to_string()),
            _ => text,
        }
    }

    /// The words of an enumerated domain, for OpenAPI's `enum` and the docs.
    pub fn words(self) -> Option<&'static [&'static str]> {
        match self {
            Domain::OneOf(words) | Domain::AnyCase(words) => Some(words),
            Domain::WebUrl | Domain::SecureUrl | Domain::Units { .. } | Domain::Money { .. } => {
                None
            }
        }
    }

    /// Whether the domain is one of numbers (its field is an integer or a number).
    pub fn holds_numbers(self) -> bool {
        self.bounds().is_some()
    }
}
