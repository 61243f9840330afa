//! The shapes the catalog is made of. Everything that describes a resource (its SQL, its
//! validation, its rendering, its OpenAPI schema and its documentation) is derived from these.

use crate::address::{is_loopback_literal, non_public};
use crate::naming::{folded_column, snake_case};
use brandhub_problem::{Words, words};
use std::net::IpAddr;

/// The kinds of user a key can belong to; they decide scope and restricted properties.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UserType {
    Admin,
    Sponsor,
    Company,
    Host,
    Warehouse,
}

impl UserType {
    /// Every user type, in the order the docs list them.
    pub const ALL: [UserType; 5] = [
        UserType::Admin,
        UserType::Sponsor,
        UserType::Company,
        UserType::Host,
        UserType::Warehouse,
    ];

    /// The values of `user.type`, in the order of [`UserType::ALL`].
    pub const NAMES: [&'static str; 5] = ["admin", "sponsor", "company", "host", "warehouse"];

    /// The value stored in `user.type` and accepted on the command line.
    pub fn as_str(self) -> &'static str {
        let at = UserType::ALL
            .iter()
            .position(|t| *t == self)
            .expect("every type is in ALL");
        UserType::NAMES[at]
    }

    /// Parses the stored or typed form.
    pub fn parse(text: &str) -> Option<UserType> {
        UserType::ALL.into_iter().find(|t| t.as_str() == text)
    }

    /// The types a user of this type may give the users it writes (docs/API.md, "Writes: master data and catalogue": "never of a
    /// wider type"). An admin gives any type; a sponsor its own type or company; a company
    /// user company; host and warehouse users write no users.
    pub fn writable_types(self) -> &'static [UserType] {
        match self {
            UserType::Admin => &UserType::ALL,
            UserType::Sponsor => &[UserType::Sponsor, UserType::Company],
            UserType::Company => &[UserType::Company],
            UserType::Host | UserType::Warehouse => &[],
        }
    }
}

/// The value type of a field: it decides how filters parse values, how SQL compares them, how
/// rows are decoded and how values are rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldType {
    /// A 32-hex uppercase identifier (own id or foreign key).
    Id,
    /// Free text: compared case-insensitively through a folded copy column.
    Text,
    /// A whole number.
    Integer,
    /// A decimal number (prices, quantities with fractions).
    Number,
    /// true / false.
    Boolean,
    /// `YYYY-MM-DDTHH:MM:SS` in UTC; unset renders as `""`.
    Timestamp,
    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`, used inside file details.
    PreciseTimestamp,
    /// A JSON object of subfields, each stored in its own column.
    Object,
    /// An array of ids or texts, stored one row per element in a list table.
    List,
}

impl FieldType {
    /// The name used in error messages, the docs and the OpenAPI description.
    pub fn describe(self) -> &'static str {
        match self {
            FieldType::Id => "id",
            FieldType::Text => "text",
            FieldType::Integer => "integer",
            FieldType::Number => "number",
            FieldType::Boolean => "boolean",
            FieldType::Timestamp => "timestamp",
            FieldType::PreciseTimestamp => "timestamp (ms)",
            FieldType::Object => "object",
            FieldType::List => "array",
        }
    }

    /// What a value of the type is, as messages refusing another say it.
    pub fn described(self) -> Words {
        let german = match self {
            FieldType::Id => "eine Kennung (id)",
            FieldType::Text => "ein Text",
            FieldType::Integer => "eine ganze Zahl",
            FieldType::Number => "eine Zahl",
            FieldType::Boolean => "true oder false",
            FieldType::Timestamp => "ein Zeitpunkt",
            FieldType::PreciseTimestamp => "ein Zeitpunkt (ms)",
            FieldType::Object => "ein Objekt",
            FieldType::List => "eine Liste",
        };
        Words::new(self.describe(), german)
    }

    /// Whether the field has a stored column of its own (objects and lists do not).
    pub fn has_column(self) -> bool {
        !matches!(self, FieldType::Object | FieldType::List)
    }
}

/// Where the elements of a list field live: `table(owner, position, value)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListStorage {
    pub table: &'static str,
    pub owner_column: &'static str,
    pub value_column: &'static str,
    /// The type of each element (`Id` or `Text`).
    pub element: FieldType,
}

/// How a missing foreign key is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoneAs {
    /// `null` (the contract's default).
    Null,
    /// 32 zeros (the user record's `fk_*` fields, as the seed shows them).
    ZeroId,
}

/// One property of a resource, or one subfield of an object property.
#[derive(Debug, Clone)]
pub struct Field {
    /// The API name within its parent (`net` for `detail.net`).
    pub name: &'static str,
    /// The full API path from the record (`detail.net`).
    pub path: String,
    /// The stored column (`detail_net`); empty for objects and lists.
    pub column: String,
    pub ty: FieldType,
    /// Subfields of an object, in render order.
    pub subfields: Vec<Field>,
    /// Storage of a list's elements.
    pub list: Option<ListStorage>,
    /// Filters and ordering on it deserve an index (fold column for text).
    pub indexed: bool,
    /// Always set: the column is NOT NULL (text is never null anyway: unset text is `""`).
    pub required: bool,
    /// How `None` renders for foreign keys.
    pub none_as: NoneAs,
    /// An object that renders as `null` when every subfield is unset.
    pub nullable_object: bool,
    /// Stored but never exposed (hashes, bookkeeping).
    pub internal: bool,
    /// For a stored shortcut: the path (through to-one relations) whose value this column
    /// always equals. Scope rules go through the shortcut in one hop where the path would
    /// take several over large tables; writers keep it equal (see `derived`).
    pub derived_from: Option<&'static str>,
    /// User types for whom this property does not exist (docs/API.md, "Scope: who sees what", restricted properties).
    pub hidden_from: Vec<UserType>,
    /// The name of the to-one relation this foreign key feeds, if any.
    pub relation: Option<&'static str>,
    /// One line for the docs and the OpenAPI schema.
    pub doc: &'static str,
    /// The most characters a value (for a list, each element) may have when a client writes
    /// it, through JSON or a file; `None` for fields that are not text.
    pub max_chars: Option<usize>,
    /// Set by the server to the time of every write of its record (`updatedDate`, a stock
    /// record's `lastUpdate`), never given by a client.
    pub stamped: bool,
    /// A rule a written value must satisfy beyond its type (422 otherwise).
    pub domain: Option<Domain>,
    /// A value the database computes from other columns of the row (never written by
    /// brandhub, so no writer can leave it stale); read, filtered and sorted like any column.
    pub generated: Option<Generated>,
    /// What a create sets when the field is not given.
    pub default: Option<FieldDefault>,
    /// The range the database holds a stored count to, whoever writes it (`least`, `most`):
    /// a statement that would take it outside fails, and its whole write with it. For counts
    /// that writes move by addition in SQL (stock moved by orders, docs/API.md, "Quantities and amounts"), so that no
    /// sum can pass what the column holds and read back.
    pub held: Option<(i64, i64)>,
    /// For an amount of money: the path (from the record, through relations) of the
    /// currency it is in, when the record says (`currency` of an order line); `None` when
    /// the amount has no currency of its own.
    pub currency: Option<&'static str>,
    /// For an id (or a list of ids) that is not a foreign key: the resource whose records
    /// it names (a file's `detail.host`), so that clients can show them by label.
    pub refers_to: Option<&'static str>,
    /// For a text field with a domain of words: what a stored value outside the domain
    /// becomes when the database is migrated (a brand store's unknown `stockType` becomes
    /// `live`, an unknown `adjustType` empty), so that a value written before the domain was
    /// declared, or beside brandhub, reads as one the domain allows.
    pub repaired_to: Option<&'static str>,
}

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
    fn must(self) -> Words {
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

/// The value a create gives a field it was not sent (docs/API.md, "Writes: master data and catalogue": a new user is `active`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldDefault {
    Text(&'static str),
    Boolean(bool),
    /// The writer's own id of this anchor (a key is the caller's own when no user is named).
    Writer(Anchor),
    /// The id of the API key the record is created with; unset when it is made in a session
    /// or from the command line (a webhook's deliveries are bounded by that key, docs/API.md, "Events and webhooks").
    WriterKey,
}

/// Why a URL is not one a client can fetch, if it is not: only absolute http and https URLs
/// with a host and without spaces (image URLs, from JSON or from files).
pub fn web_url_problem(url: &str) -> Option<Words> {
    let lower = url.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"));
    let Some(rest) = rest else {
        return Some(words!(
            "is not an http or https URL",
            "ist keine http- oder https-Adresse"
        ));
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() || host.starts_with(':') || host.starts_with('@') {
        return Some(words!("has no host", "nennt keinen Server"));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some(words!("contains spaces", "enthält Leerzeichen"));
    }
    None
}

/// Why `url` may not receive webhooks, if it may not (docs/API.md, "Events and webhooks"), whatever the server
/// allows: [`webhook_url_problem`], and a host named `localhost` or `*.localhost` (this
/// machine by definition, refused without asking DNS). A literal loopback address passes here:
/// only a server started to allow it accepts one ([`is_insecure_loopback_url`]). The addresses
/// a name resolves to are checked when a delivery connects.
pub fn secure_url_problem(url: &str) -> Option<String> {
    let parsed = match receiver(url) {
        Ok(parsed) => parsed,
        Err(problem) => return Some(problem),
    };
    if let Some(url::Host::Domain(name)) = parsed.host() {
        let name = name.trim_end_matches('.');
        if name == "localhost" || name.ends_with(".localhost") {
            return Some(format!(
                "names {name}, which is this machine, not a public address: {PUBLIC_ONLY}"
            ));
        }
    }
    receiver_problem(&parsed, true)
}

/// Why deliveries are only sent to public addresses, as problems say it.
const PUBLIC_ONLY: &str = "webhooks are delivered to public addresses only";

/// `url` parsed as a client parses it (WHATWG: `0x7f000001`, `2130706433` and `127.1` are
/// 127.0.0.1; what precedes an `@` is a user name, not the host), if it is an absolute http or
/// https URL with a host and neither a user name nor a password.
fn receiver(url: &str) -> Result<url::Url, String> {
    if let Some(problem) = web_url_problem(url) {
        return Err(problem.to_string());
    }
    let parsed = url::Url::parse(url).map_err(|error| format!("is not a valid URL ({error})"))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(
            "must not hold a user name or password (what precedes an @ is not the host)".into(),
        );
    }
    if parsed.host().is_none() {
        return Err("has no host".into());
    }
    Ok(parsed)
}

/// The address a parsed URL names, when its host is one rather than a name.
fn literal_address(parsed: &url::Url) -> Option<IpAddr> {
    match parsed.host()? {
        url::Host::Ipv4(v4) => Some(IpAddr::V4(v4)),
        url::Host::Ipv6(v6) => Some(IpAddr::V6(v6)),
        url::Host::Domain(_) => None,
    }
}

/// Why a delivery may not be sent to `url`, if it may not, before any name is resolved: not
/// http or https, a user name or password in it, an address that is not public
/// ([`crate::address::non_public`]), or plain http; `allow_loopback` (a server started with
/// `--webhook-allow-insecure-localhost`, for tests) accepts a literal loopback address over
/// http or https, and nothing else. A name's addresses are the resolver's to check.
pub fn webhook_url_problem(url: &str, allow_loopback: bool) -> Option<String> {
    match receiver(url) {
        Ok(parsed) => receiver_problem(&parsed, allow_loopback),
        Err(problem) => Some(problem),
    }
}

/// [`webhook_url_problem`] of a URL [`receiver`] accepted.
fn receiver_problem(parsed: &url::Url, allow_loopback: bool) -> Option<String> {
    if let Some(ip) = literal_address(parsed) {
        if is_loopback_literal(ip) {
            return (!allow_loopback).then(|| {
                format!(
                    "names {ip}, a loopback address, not a public one: {PUBLIC_ONLY} (only a server started with --webhook-allow-insecure-localhost accepts a loopback address, for tests)"
                )
            });
        }
        if let Some(why) = non_public(ip) {
            return Some(format!(
                "names {ip}, {why}, not a public address: {PUBLIC_ONLY}"
            ));
        }
    }
    (parsed.scheme() != "https").then(|| "is not an https URL".to_string())
}

/// Whether `url` names this machine's loopback address as written (`127.0.0.0/8`, `[::1]`,
/// however a client spells them), over http or https: accepted for webhooks only by a server
/// started with `--webhook-allow-insecure-localhost`, for tests with a local receiver.
pub fn is_insecure_loopback_url(url: &str) -> bool {
    receiver(url)
        .ok()
        .and_then(|parsed| literal_address(&parsed))
        .is_some_and(is_loopback_literal)
}

/// What a change of a resource's records is announced as (docs/API.md, "Events and webhooks"): the event
/// type of a create and of any later change. Deletes announce nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Events {
    pub created: &'static str,
    pub updated: &'static str,
    /// The event a record's removal is announced as, for a resource that announces removals
    /// (an offer that goes with its variant or brand store).
    pub deleted: Option<&'static str>,
}

/// How the database computes a generated column from other fields of the same record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generated {
    /// `max(0, minuend - subtrahend)`, unset values counting as 0 (stock's `available`).
    ClampedDifference {
        minuend: &'static str,
        subtrahend: &'static str,
    },
}

/// Text lengths (in characters) the catalog gives its text fields. Short: codes, references,
/// barcodes, statuses, currencies. Names: names, titles, addresses, the default. Long:
/// descriptions and other free text, up to what a spreadsheet cell can hold.
pub mod lengths {
    /// Codes, references, barcodes, statuses, currencies, languages.
    pub const SHORT: usize = 100;
    /// An email address (RFC 5321's path limit).
    pub const EMAIL: usize = 254;
    /// Names, titles, addresses: the default of a text field.
    pub const NAME: usize = 500;
    /// A URL, as browsers and servers commonly accept them.
    pub const URL: usize = 2048;
    /// Descriptions and other free text: a spreadsheet cell's maximum.
    pub const LONG: usize = 32_767;
}

impl Field {
    fn new(name: &'static str, ty: FieldType) -> Field {
        Field {
            name,
            path: name.to_string(),
            column: if ty.has_column() {
                snake_case(name)
            } else {
                String::new()
            },
            ty,
            subfields: Vec::new(),
            list: None,
            indexed: false,
            required: false,
            none_as: NoneAs::Null,
            nullable_object: false,
            internal: false,
            derived_from: None,
            hidden_from: Vec::new(),
            relation: None,
            doc: "",
            max_chars: matches!(ty, FieldType::Text).then_some(lengths::NAME),
            stamped: false,
            domain: None,
            generated: None,
            default: None,
            held: None,
            currency: None,
            refers_to: None,
            repaired_to: None,
        }
    }

    /// Makes the field one the database computes (see [`Generated`]): read-only for every
    /// writer.
    pub fn generated(mut self, how: Generated) -> Self {
        self.generated = Some(how);
        self
    }

    /// Whether a text (or list element) of this many characters is too long for the field:
    /// the problem to report when it is.
    pub fn length_problem(&self, text: &str) -> Option<Words> {
        let max = self.max_chars?;
        // Bytes bound characters from above: most texts are settled without counting.
        if text.len() <= max {
            return None;
        }
        let chars = text.chars().count();
        (chars > max).then(|| {
            words!(
                "has {chars} characters; at most {max} are allowed",
                "hat {chars} Zeichen; erlaubt sind höchstens {max}"
            )
        })
    }

    /// Why a value of the field's type may not be written to it, if it may not: a text too
    /// long or outside the field's domain, a number outside its domain (docs/API.md, "Quantities and amounts"). JSON
    /// writes and spreadsheet rows are checked by this one rule.
    pub fn value_problem(&self, cell: &crate::record::Cell) -> Option<Words> {
        use crate::record::Cell;
        match cell {
            Cell::Text(text) => self
                .length_problem(text)
                .or_else(|| self.domain.and_then(|d| d.problem(text))),
            Cell::Integer(n) => self.domain.and_then(|d| d.number_problem(*n as f64)),
            Cell::Number(n) => self.domain.and_then(|d| d.number_problem(*n)),
            Cell::Boolean(_) | Cell::Null => None,
        }
    }

    /// The value as the field keeps it ([`Domain::kept`]: an amount to two decimals), or why
    /// it may not be written ([`Field::value_problem`]).
    pub fn admit(&self, cell: crate::record::Cell) -> Result<crate::record::Cell, Words> {
        use crate::record::Cell;
        if let Some(problem) = self.value_problem(&cell) {
            return Err(problem);
        }
        Ok(match (cell, self.domain) {
            (Cell::Number(n), Some(domain)) => Cell::Number(domain.kept(n)),
            (Cell::Text(text), Some(domain)) => Cell::Text(domain.kept_word(text)),
            (cell, _) => cell,
        })
    }

    /// What a written value of the field must be, for messages that refuse a value of the
    /// wrong type: its domain's description for numbers (`a whole number from 0 to
    /// 1,000,000,000`), else its type's.
    pub fn expected(&self) -> Words {
        match (self.domain.and_then(Domain::described), self.ty) {
            (Some(described), _) => described,
            (None, FieldType::Integer) => words!("a whole number", "eine ganze Zahl"),
            (None, FieldType::Number) => words!("a number", "eine Zahl"),
            (None, ty) => ty.described(),
        }
    }

    /// Whether the field is stored in a column of its own.
    pub fn has_column(&self) -> bool {
        self.ty.has_column()
    }

    /// The column holding the case-folded copy, for text fields.
    pub fn folded_column(&self) -> Option<String> {
        (self.ty == FieldType::Text && !self.internal).then(|| folded_column(&self.column))
    }

    /// Whether a user of this type may see the field.
    pub fn visible_to(&self, user_type: UserType) -> bool {
        !self.internal && !self.hidden_from.contains(&user_type)
    }

    /// The subfield with this name.
    pub fn subfield(&self, name: &str) -> Option<&Field> {
        self.subfields.iter().find(|f| f.name == name)
    }

    /// Every stored leaf under this field (itself if it has a column).
    pub fn leaves(&self) -> Vec<&Field> {
        if self.ty == FieldType::Object {
            self.subfields.iter().flat_map(Field::leaves).collect()
        } else {
            vec![self]
        }
    }

    // ---- declaration helpers: used by `resources.rs` ----

    /// A text field of codes, references or statuses ([`lengths::SHORT`]).
    pub fn short(self) -> Self {
        self.max_chars(lengths::SHORT)
    }

    /// A free-text field such as a description ([`lengths::LONG`]).
    pub fn long(self) -> Self {
        self.max_chars(lengths::LONG)
    }

    /// The most characters a client may write into this text field.
    pub fn max_chars(mut self, max: usize) -> Self {
        self.max_chars = Some(max);
        self
    }

    /// Marks the field as served by an index.
    pub fn indexed(mut self) -> Self {
        self.indexed = true;
        self
    }

    /// Marks the field as always set.
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// Marks a foreign key as optional (a missing relation is `null`).
    pub fn optional(mut self) -> Self {
        self.required = false;
        self
    }

    /// Adds the line the docs show for this field.
    pub fn doc(mut self, doc: &'static str) -> Self {
        self.doc = doc;
        self
    }

    /// Renders a missing id as 32 zeros.
    pub fn zero_when_none(mut self) -> Self {
        self.none_as = NoneAs::ZeroId;
        self
    }

    /// Renders an object as `null` when all its subfields are unset.
    pub fn nullable(mut self) -> Self {
        self.nullable_object = true;
        self
    }

    /// Keeps the field out of the API entirely.
    pub fn internal(mut self) -> Self {
        self.internal = true;
        self
    }

    /// Makes the field an internal copy of the value at `path` (a foreign key reached through
    /// to-one relations), kept so that scope needs one hop instead of a chain of joins over
    /// the largest tables. Never exposed; whoever writes the record sets it, and migration
    /// fills it from `path` when the column is new.
    pub fn derived(mut self, path: &'static str) -> Self {
        self.internal = true;
        // Nullable, so that migration can add it to filled tables and then fill it.
        self.required = false;
        self.derived_from = Some(path);
        self
    }

    /// Makes the field a time the server sets on every write of its record (see
    /// [`Field::stamped`]); `updatedDate` stays nullable so that migration can add it to filled
    /// tables and then fill it.
    pub fn stamped(mut self) -> Self {
        self.stamped = true;
        self
    }

    /// Makes the database hold the stored count from `least` to `most`, whoever writes it
    /// (see [`Field::held`]).
    pub fn held_within(mut self, least: i64, most: i64) -> Self {
        self.held = Some((least, most));
        self
    }

    /// What a create sets when the field is not given.
    pub fn or_else(mut self, default: FieldDefault) -> Self {
        self.default = Some(default);
        self
    }

    /// Restricts the values a client may write beyond the field's type.
    pub fn domain(mut self, domain: Domain) -> Self {
        self.domain = Some(domain);
        self
    }

    /// Declares what a stored value outside the field's domain of words becomes on migration
    /// (see [`Field::repaired_to`]).
    pub fn repaired_to(mut self, word: &'static str) -> Self {
        self.repaired_to = Some(word);
        self
    }

    /// Declares that an amount of money is in the currency at `path` (from the record).
    pub fn priced_in(mut self, path: &'static str) -> Self {
        self.currency = Some(path);
        self
    }

    /// Declares that an id (or a list of ids) names records of `resource`.
    pub fn refers_to(mut self, resource: &'static str) -> Self {
        self.refers_to = Some(resource);
        self
    }

    /// Whether the field holds an amount of money (docs/API.md, "Quantities and amounts").
    pub fn is_money(&self) -> bool {
        matches!(self.domain, Some(Domain::Money { .. }))
    }

    /// Makes the field not exist for the given user types.
    pub fn hidden_from(mut self, user_types: &[UserType]) -> Self {
        self.hidden_from.extend_from_slice(user_types);
        for sub in &mut self.subfields {
            sub.hidden_from.extend_from_slice(user_types);
        }
        self
    }

    fn nest_under(mut self, parent: &str) -> Self {
        self.path = format!("{parent}.{}", self.path);
        if self.has_column() {
            self.column = snake_case(&self.path);
        }
        self.subfields = self
            .subfields
            .into_iter()
            .map(|sub| sub.nest_under(parent))
            .collect();
        self
    }
}

/// The primary key every resource has.
pub fn id() -> Field {
    Field::new("id", FieldType::Id)
        .required()
        .doc("Unique id: 32 uppercase hex characters (UUIDv7).")
}

/// A text field.
pub fn text(name: &'static str) -> Field {
    Field::new(name, FieldType::Text)
}

/// A whole-number field.
pub fn integer(name: &'static str) -> Field {
    Field::new(name, FieldType::Integer)
}

/// A decimal-number field.
pub fn number(name: &'static str) -> Field {
    Field::new(name, FieldType::Number)
}

/// A true/false field.
pub fn boolean(name: &'static str) -> Field {
    Field::new(name, FieldType::Boolean)
}

/// A `YYYY-MM-DDTHH:MM:SS` field.
pub fn timestamp(name: &'static str) -> Field {
    Field::new(name, FieldType::Timestamp)
}

/// A `YYYY-MM-DDTHH:MM:SS.mmmZ` field (file details).
pub fn precise_timestamp(name: &'static str) -> Field {
    Field::new(name, FieldType::PreciseTimestamp)
}

/// A plain id field that is not a relation (for example a file id kept for reference).
pub fn id_field(name: &'static str) -> Field {
    Field::new(name, FieldType::Id)
}

/// A foreign key and the to-one relation it feeds; required unless marked `optional()`.
pub fn fk(name: &'static str, relation: &'static str) -> Field {
    let mut field = Field::new(name, FieldType::Id).indexed().required();
    field.relation = Some(relation);
    field
}

/// An object whose subfields are stored as columns `<name>_<sub>`.
pub fn object(name: &'static str, subfields: Vec<Field>) -> Field {
    let mut field = Field::new(name, FieldType::Object);
    field.subfields = subfields
        .into_iter()
        .map(|sub| sub.nest_under(name))
        .collect();
    field
}

/// An array field whose elements live in `table(owner_column, position, value_column)`.
pub fn list(
    name: &'static str,
    element: FieldType,
    table: &'static str,
    owner_column: &'static str,
    value_column: &'static str,
) -> Field {
    let mut field = Field::new(name, FieldType::List);
    field.max_chars = (element == FieldType::Text).then_some(lengths::SHORT);
    field.list = Some(ListStorage {
        table,
        owner_column,
        value_column,
        element,
    });
    field
}

/// Whether a relation points at one record or gathers many.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelationKind {
    /// This resource's `fk` field holds the target's id.
    ToOne { fk: &'static str },
    /// The target's `target_fk` field holds this resource's id.
    ToMany { target_fk: &'static str },
}

/// A named way from one resource to another (`stock_variant`, `order_orderItem`).
#[derive(Debug, Clone)]
pub struct Relation {
    pub name: &'static str,
    pub target: &'static str,
    pub kind: RelationKind,
}

impl Relation {
    /// Whether the relation yields at most one record.
    pub fn is_to_one(&self) -> bool {
        matches!(self.kind, RelationKind::ToOne { .. })
    }
}

/// The caller's own ids that scope rules compare with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Anchor {
    /// The caller's companies: a company user's `fk_company` and `detail.companies`; a sponsor
    /// user's sponsor company and every company it sponsors.
    Companies,
    /// A host user's host.
    Host,
    /// A warehouse user's warehouse.
    Warehouse,
    /// The caller's own user id.
    Own,
    /// A sponsor user's sponsor company (alone, without the companies it sponsors).
    Sponsor,
    /// The user types the caller may give the users it writes ([`UserType::writable_types`]):
    /// a rule over a user's `type` keeps a writer from the users of wider types (an admin
    /// that a company's users must not reach, though it keeps the company's id).
    WritableTypes,
}

impl Anchor {
    /// How the docs and refusals name these ids.
    pub fn describe(self) -> &'static str {
        match self {
            Anchor::Companies => "one of the caller's companies",
            Anchor::Host => "the caller's host",
            Anchor::Warehouse => "the caller's warehouse",
            Anchor::Own => "the caller's own user id",
            Anchor::Sponsor => "the caller's sponsor company",
            Anchor::WritableTypes => "a user type the caller may give",
        }
    }

    /// The type of the values a rule term compares with these: ids, or words for the types.
    pub fn value_type(self) -> FieldType {
        match self {
            Anchor::WritableTypes => FieldType::Text,
            _ => FieldType::Id,
        }
    }
}

/// One condition of a scope rule: the value at `path` is one of the caller's `anchor` ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeTerm {
    pub path: &'static str,
    pub anchor: Anchor,
}

/// Which records of a resource a user type sees (docs/API.md, "Scope: who sees what").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Everything,
    Nothing,
    /// The records that satisfy any of these groups; a group holds when all its terms do.
    AnyOf(Vec<Vec<ScopeTerm>>),
}

/// What a write does, for the rules of who may write which records (docs/API.md, "Who writes
/// what"). Most resources know one kind of write; orders move through a lifecycle whose steps
/// each have their own writers (docs/API.md, "Orders: intake, lifecycle and stock").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WriteAction {
    /// Creating, changing or removing records of the resource.
    Write,
    /// Shipping an order's items (a dispatch, or a row of an orderDispatch file).
    Dispatch,
}

impl WriteAction {
    /// Every action, in the order the docs list them.
    pub const ALL: [WriteAction; 2] = [WriteAction::Write, WriteAction::Dispatch];

    /// The word the docs use.
    pub fn as_str(self) -> &'static str {
        match self {
            WriteAction::Write => "write",
            WriteAction::Dispatch => "dispatch",
        }
    }
}

/// What a resource accepts as writes (docs/API.md, "Writes: master data and catalogue"): the fields a create may set (and which of
/// them it must), the fields an update may change, and whether DELETE removes (or revokes).
#[derive(Debug, Clone, Default)]
pub struct Writes {
    pub create: Vec<&'static str>,
    pub create_required: Vec<&'static str>,
    pub update: Vec<&'static str>,
    pub delete: bool,
    /// The fields that name a record besides its id (docs/API.md, "Writes: master data and catalogue", natural keys): a create
    /// whose key is taken is a conflict, or with `?upsert=true` an update of that record.
    pub natural_key: Vec<&'static str>,
    /// `(path, field)` pairs that must agree when both are set: the value reached through
    /// the path's links equals the record's own field (an image's variant is one of its
    /// product's: `image_variant.fk_product` agrees with `fk_product`).
    pub agreements: Vec<(&'static str, &'static str)>,
    /// A boolean field that DELETE sets instead of removing the record (a key is revoked and
    /// stays listed, so its use can still be traced).
    pub revoked_by: Option<&'static str>,
    /// A secret the server makes for every new record and shows in the create's answer only.
    pub secret: Option<Secret>,
    /// Checks of the resource's own that fields and rules cannot express, run by the write
    /// pipeline with every other check.
    pub policy: Option<Policy>,
    /// One field set on many records in one request, all or nothing (a host's SKUs).
    pub bulk: Option<BulkSet>,
    /// Bounds a number field keeps while another field holds a word (a brand store's
    /// percentage adjustment is at least −100), judged on the record as the write leaves it.
    pub bounds: Vec<Bound>,
}

/// A field that `POST /api/<resource>/<field>` sets on up to 1,000 records at once, in one
/// transaction, all or nothing, unique rules judged on the records as they all end up (two
/// records may swap values); every problem told in one 422, by the element's index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkSet {
    /// The field set, among those an update may change; also the path's last segment.
    pub field: &'static str,
    /// The ways besides `id` an element may name its record: each a set of fields whose
    /// values together name at most one record (text compared folded, as filters do).
    pub named_by: &'static [&'static [&'static str]],
}

/// A least value a number field takes while another field of the record holds a word, in any
/// case (`detail.adjustValue` is at least −100 while `detail.adjustType` is `percent`): a
/// rule across two fields, judged on the record as a write leaves it (an update's merged
/// record), by every path that writes the resource.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    /// The number field bounded.
    pub field: &'static str,
    /// Its least value while the rule holds.
    pub least: f64,
    /// The text field whose word makes the rule hold.
    pub when: &'static str,
    /// That word (compared in any case).
    pub is: &'static str,
}

impl Bound {
    /// Why a record of `resource` breaks the bound, if it does: the message for the bounded
    /// field.
    pub fn problem(&self, resource: &Resource, record: &crate::record::Record) -> Option<Words> {
        use crate::record::Cell;
        let cell = |path: &str| {
            crate::record::stored_fields(resource)
                .iter()
                .position(|f| f.path == path)
                .map(|i| &record.cells[i])
        };
        let holds = cell(self.when)
            .and_then(Cell::as_text)
            .is_some_and(|word| word.eq_ignore_ascii_case(self.is));
        let value = match cell(self.field)? {
            Cell::Number(n) => *n,
            Cell::Integer(n) => *n as f64,
            _ => return None,
        };
        (holds && value < self.least).then(|| self.described())
    }

    /// What the bound asks, for the docs (`must be at least -100 while detail.adjustType is
    /// percent`).
    pub fn describe(&self) -> String {
        self.described().to_string()
    }

    /// What the bound asks, in each language, for messages.
    fn described(&self) -> Words {
        words!(
            "must be at least {} while {} is {}",
            "muss mindestens {} sein, solange {} {} ist",
            self.least,
            self.when,
            self.is
        )
    }
}

impl Writes {
    /// Whether an `Idempotency-Key` may replay a create's answer: not when the answer shows a
    /// secret, which is never kept.
    pub fn replayable(&self) -> bool {
        self.secret.is_none()
    }
}

/// A secret made by the server for a new record (an API key's, a webhook's signing secret):
/// random, starting with `prefix`, shown once in the create's answer as `shown_as`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Secret {
    /// The start of every such secret (`bhk_`), so that a leaked one can be recognised.
    pub prefix: &'static str,
    /// The name the create's answer shows it under.
    pub shown_as: &'static str,
    /// How it is kept: its hash (a key only needs to be checked) or itself (a webhook's
    /// signing secret must sign every delivery).
    pub kept: SecretKept,
    /// A field that keeps the secret's first 8 characters, so that a user can tell keys apart.
    pub start_in: Option<&'static str>,
    /// An indexed timestamp field the server sets when the secret authenticates (a key's
    /// `lastUsed`, at most once a minute per key). Indexed, so that its writes bump a version
    /// of their own and leave what depends on the record's other fields (a remembered
    /// caller) valid, and keys unused since a date are found fast.
    pub used_in: Option<&'static str>,
}

/// Where a [`Secret`] is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretKept {
    /// Only its SHA-256 hash, in this internal field.
    HashIn(&'static str),
    /// Itself, in this internal field.
    In(&'static str),
}

/// Checks a resource needs beyond its fields and write rules, each implemented once by the
/// store and run by the write pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// A webhook delivers only what the key it was made with may read; a key that may read
    /// less does not change it; a user has at most a fixed number of webhooks (docs/API.md, "Events and webhooks").
    WebhookBounds,
    /// A user's type decides which links it needs; a writer never gives a wider type than
    /// its own, nor companies, hosts or warehouses beyond its own (docs/API.md, "Writes: master data and catalogue").
    UserProfile,
    /// A key's grants lie within what its user's type may have and what the writing key
    /// allows; a user has at most a fixed number of active keys (docs/API.md, "Transport and authentication" and "Writes: users and keys").
    KeyGrants,
}

/// `(path, anchor)` groups as scope terms.
fn rule_groups(groups: &[&[(&'static str, Anchor)]]) -> Vec<Vec<ScopeTerm>> {
    groups
        .iter()
        .map(|group| {
            group
                .iter()
                .map(|(path, anchor)| ScopeTerm {
                    path,
                    anchor: *anchor,
                })
                .collect()
        })
        .collect()
}

/// A composite index or uniqueness rule over API paths (for lookups the fields alone don't say).
#[derive(Debug, Clone)]
pub struct IndexDef {
    pub paths: Vec<&'static str>,
    pub unique: bool,
    /// Values compared exactly (letter case counts: `ABC` and `abc` differ) rather than by
    /// their folded copies, among records whose fields are all set (no text empty, no id
    /// unset): a unique rule over the values as written (a host's SKU within its store).
    pub exact: bool,
}

/// One resource of the API (`/api/<name>`) and the table behind it.
#[derive(Debug, Clone)]
pub struct Resource {
    pub name: &'static str,
    pub table: &'static str,
    pub doc: &'static str,
    pub fields: Vec<Field>,
    pub relations: Vec<Relation>,
    /// Relation paths (in `fields` syntax) that the default template expands.
    pub template: Vec<&'static str>,
    /// Properties that `fields` and `exclude` never remove.
    pub mandatory: Vec<&'static str>,
    pub indexes: Vec<IndexDef>,
    /// Scope rules by user type; a type without a rule sees nothing (admin sees everything,
    /// a sponsor follows the company rules over its own set of companies).
    pub scopes: Vec<(UserType, Scope)>,
    /// Who may write which records, per action and user type, in the same terms as scope:
    /// the paths whose value must be one of the caller's ids. A type without a rule writes
    /// nothing (admins write everything; a sponsor follows the company rules unless it has
    /// its own). Uploads and JSON writes derive their checks from these.
    pub authority: Vec<(WriteAction, UserType, Scope)>,
    /// The writes the resource accepts; reads only when empty.
    pub writes: Writes,
    /// Records are created by a multipart upload (`POST /api/file`, docs/API.md, "Files: uploads and processing") rather than
    /// by a JSON write.
    pub uploads: bool,
    /// Records move through a lifecycle (orders, docs/API.md, "Orders: intake, lifecycle and stock"): creates, changes and the
    /// lifecycle's actions go to the order engine instead of the generic pipeline.
    pub lifecycle: Option<&'static crate::lifecycle::Lifecycle>,
    /// The events a change of a record is announced as to webhooks, if any.
    pub events: Option<Events>,
    /// How a record is named to people (its display label): a template of `{path}`
    /// placeholders, each a field or a to-one relation (named by the label of the record it
    /// leads to), `|` between alternatives taken in turn until one is set
    /// (`{brandOrderRef|hostOrderRef}`). Text between two placeholders shows only between
    /// values that are set. See [`crate::Catalog::label_fields`].
    pub label: &'static str,
    /// The resources this one is kept from, when brandhub derives its records from theirs
    /// (offers, from the stock, prices, catalogue and brand stores): the database keeps them
    /// current in the transaction of every write of those, a write of one of those changes
    /// this resource's versions too, and its records never keep one of those from being
    /// deleted (they go with it). Empty for a resource its writers write.
    pub kept_from: &'static [crate::Res],
}

impl Resource {
    /// Whether this is the resource of the handle `res`.
    pub fn is(&self, res: crate::Res) -> bool {
        self.name == res.name()
    }

    /// The handle of this resource (the catalog checks that every resource has one).
    pub fn handle(&self) -> crate::Res {
        crate::Res::named(self.name).expect("the catalog checks that every resource has a handle")
    }

    /// Starts a resource declaration; `id` comes first and is mandatory.
    pub fn new(name: &'static str, table: &'static str, doc: &'static str) -> Resource {
        Resource {
            name,
            table,
            doc,
            fields: vec![id()],
            relations: Vec::new(),
            template: Vec::new(),
            mandatory: vec!["id"],
            indexes: Vec::new(),
            scopes: Vec::new(),
            authority: Vec::new(),
            writes: Writes::default(),
            uploads: false,
            lifecycle: None,
            events: None,
            label: "",
            kept_from: &[],
        }
    }

    /// Declares that brandhub keeps this resource's records from the records of `sources`
    /// (see [`Resource::kept_from`]).
    pub fn kept_from(mut self, sources: &'static [crate::Res]) -> Self {
        self.kept_from = sources;
        self
    }

    /// Declares the display label (see [`Resource::label`]).
    pub fn labelled(mut self, template: &'static str) -> Self {
        self.label = template;
        self
    }

    /// The placeholders of the display label, each as its alternatives.
    pub fn label_parts(&self) -> Vec<Vec<&'static str>> {
        let mut parts = Vec::new();
        let mut rest = self.label;
        while let Some(start) = rest.find('{') {
            let Some(length) = rest[start..].find('}') else {
                break;
            };
            parts.push(rest[start + 1..start + length].split('|').collect());
            rest = &rest[start + length + 1..];
        }
        parts
    }

    /// Declares that a create is announced as the event `created` and every later change as
    /// `updated` (both must be among [`crate::EVENT_TYPES`]).
    pub fn announces(mut self, created: &'static str, updated: &'static str) -> Self {
        self.events = Some(Events {
            created,
            updated,
            deleted: None,
        });
        self
    }

    /// Declares that a record's removal is announced as `deleted` (after
    /// [`Resource::announces`]).
    pub fn announces_removal(mut self, deleted: &'static str) -> Self {
        let events = self.events.as_mut().expect("announces comes first");
        events.deleted = Some(deleted);
        self
    }

    /// Declares that records move through `lifecycle` (after [`Resource::writable`], which
    /// says what an intake may set).
    pub fn moves_through(mut self, lifecycle: &'static crate::lifecycle::Lifecycle) -> Self {
        self.lifecycle = Some(lifecycle);
        self
    }

    /// Declares that records are created by uploading a file (`POST` with multipart/form-data).
    pub fn uploaded(mut self) -> Self {
        self.uploads = true;
        self
    }

    /// Adds a field; a foreign key also adds its to-one relation to `target`.
    pub fn field(mut self, field: Field) -> Self {
        self.fields.push(field);
        self
    }

    /// Adds a foreign key field and its relation to `target` in one step.
    pub fn relation_fk(mut self, field: Field, target: &'static str) -> Self {
        let relation = field
            .relation
            .expect("relation_fk takes a field built with fk()");
        self.relations.push(Relation {
            name: relation,
            target,
            kind: RelationKind::ToOne { fk: field.name },
        });
        self.fields.push(field);
        self
    }

    /// Adds a to-many relation: records of `target` whose `target_fk` is this record's id.
    pub fn has_many(
        mut self,
        name: &'static str,
        target: &'static str,
        target_fk: &'static str,
    ) -> Self {
        self.relations.push(Relation {
            name,
            target,
            kind: RelationKind::ToMany { target_fk },
        });
        self
    }

    /// Sets the relation paths the default template expands.
    pub fn template(mut self, paths: &[&'static str]) -> Self {
        self.template = paths.to_vec();
        self
    }

    /// Declares what the given user types see: the records satisfying any of `groups`, where a
    /// group is a list of `(path, anchor)` terms that must all hold.
    pub fn scope(mut self, user_types: &[UserType], groups: &[&[(&'static str, Anchor)]]) -> Self {
        let groups = rule_groups(groups);
        for user_type in user_types {
            self.scopes.retain(|(t, _)| t != user_type);
            self.scopes.push((*user_type, Scope::AnyOf(groups.clone())));
        }
        self
    }

    /// Declares which records the given user types may `action` (docs/API.md, "Writes: master data and catalogue"): those
    /// satisfying any of `groups`, in the terms of [`Resource::scope`]. Paths of these rules
    /// follow to-one relations only and end at an id, so that a record about to be written can
    /// be judged from the records it hangs from.
    pub fn writable_by(
        mut self,
        action: WriteAction,
        user_types: &[UserType],
        groups: &[&[(&'static str, Anchor)]],
    ) -> Self {
        let groups = rule_groups(groups);
        for user_type in user_types {
            self.authority
                .retain(|(a, t, _)| !(*a == action && t == user_type));
            self.authority
                .push((action, *user_type, Scope::AnyOf(groups.clone())));
        }
        self
    }

    /// Which records a user type may `action`: admins everything, a sponsor as a company
    /// user (over its own companies) unless declared otherwise, an undeclared type nothing.
    pub fn authority_of(&self, action: WriteAction, user_type: UserType) -> Scope {
        if user_type == UserType::Admin {
            return Scope::Everything;
        }
        let declared = |t: UserType| {
            self.authority
                .iter()
                .find(|(a, u, _)| *a == action && *u == t)
                .map(|(_, _, s)| s.clone())
        };
        declared(user_type)
            .or_else(|| {
                (user_type == UserType::Sponsor)
                    .then(|| declared(UserType::Company))
                    .flatten()
            })
            .unwrap_or(Scope::Nothing)
    }

    /// Declares the writes the resource accepts.
    pub fn writable(
        mut self,
        create: &[&'static str],
        create_required: &[&'static str],
        update: &[&'static str],
        delete: bool,
    ) -> Self {
        let create = self.leaf_paths(create);
        let update = self.leaf_paths(update);
        self.writes = Writes {
            create,
            create_required: create_required.to_vec(),
            update,
            delete,
            ..std::mem::take(&mut self.writes)
        };
        self
    }

    /// The declared paths with every object among them replaced by the paths of its stored
    /// leaves, so that a declaration names a whole address once instead of each of its parts.
    /// The leaf paths are leaked once: the catalog is built once per process and lives as long.
    fn leaf_paths(&self, paths: &[&'static str]) -> Vec<&'static str> {
        let mut leaves = Vec::with_capacity(paths.len());
        for path in paths {
            match self.field_at(path) {
                Some(field) if field.ty == FieldType::Object => leaves.extend(
                    field
                        .leaves()
                        .into_iter()
                        .map(|leaf| &*Box::leak(leaf.path.clone().into_boxed_str())),
                ),
                _ => leaves.push(*path),
            }
        }
        leaves
    }

    /// Declares that DELETE sets the boolean `field` instead of removing the record.
    pub fn revoked_by(mut self, field: &'static str) -> Self {
        self.writes.revoked_by = Some(field);
        self
    }

    /// Declares the secret every new record gets (see [`Secret`]).
    pub fn with_secret(mut self, secret: Secret) -> Self {
        self.writes.secret = Some(secret);
        self
    }

    /// Declares the resource's own checks (see [`Policy`]).
    pub fn policy(mut self, policy: Policy) -> Self {
        self.writes.policy = Some(policy);
        self
    }

    /// Declares that the number `field` is at least `least` while the text field `when` holds
    /// the word `is`, in any case (see [`Bound`]; after [`Resource::writable`]).
    pub fn bounded(
        mut self,
        field: &'static str,
        least: f64,
        when: &'static str,
        is: &'static str,
    ) -> Self {
        self.writes.bounds.push(Bound {
            field,
            least,
            when,
            is,
        });
        self
    }

    /// Declares that the value reached through `path` (to-one links) must equal the record's
    /// own `field` whenever both are set (after [`Resource::writable`]).
    pub fn agreeing(mut self, path: &'static str, field: &'static str) -> Self {
        self.writes.agreements.push((path, field));
        self
    }

    /// Declares the resource's natural key (after [`Resource::writable`]).
    pub fn natural_key(mut self, natural_key: &[&'static str]) -> Self {
        self.writes.natural_key = natural_key.to_vec();
        self
    }

    /// The parts of the natural key as the API names them: a derived shortcut by the
    /// resource it points to (a variant's `fk_scopeBrand` is its brand).
    pub fn natural_key_names(&self) -> Vec<&'static str> {
        self.writes
            .natural_key
            .iter()
            .map(|path| {
                self.field_named(path)
                    .filter(|f| f.derived_from.is_some())
                    .and_then(|f| f.relation)
                    .and_then(|name| self.relation(name))
                    .map_or(*path, |relation| relation.target)
            })
            .collect()
    }

    /// Whether records are created by a JSON write through the write pipeline (rather than
    /// by an upload, or an intake of a lifecycle).
    pub fn written_as_json(&self) -> bool {
        !self.writes.create.is_empty() && self.lifecycle.is_none() && !self.uploads
    }

    /// Whether a set-up document (`brandhub import`) may hold records of the resource: what
    /// is written as JSON, except records whose create shows a secret nobody would see.
    pub fn importable(&self) -> bool {
        self.written_as_json() && self.writes.secret.is_none()
    }

    /// The HTTP methods `/api/<resource>` and `/api/<resource>/<id>` accept, for `Allow`.
    pub fn methods(&self, with_id: bool) -> Vec<&'static str> {
        let mut methods = vec!["GET", "HEAD"];
        if !with_id && (!self.writes.create.is_empty() || self.uploads) {
            methods.push("POST");
        }
        if with_id && (!self.writes.update.is_empty() || self.lifecycle.is_some()) {
            methods.push("PATCH");
        }
        if with_id && self.writes.delete {
            methods.push("DELETE");
        }
        methods
    }

    /// The scope of a user type for this resource.
    pub fn scope_of(&self, user_type: UserType) -> Scope {
        if user_type == UserType::Admin {
            return Scope::Everything;
        }
        let declared = |t: UserType| {
            self.scopes
                .iter()
                .find(|(u, _)| *u == t)
                .map(|(_, s)| s.clone())
        };
        declared(user_type)
            .or_else(|| {
                (user_type == UserType::Sponsor)
                    .then(|| declared(UserType::Company))
                    .flatten()
            })
            .unwrap_or(Scope::Nothing)
    }

    /// Declares a composite index (or uniqueness rule) over API paths.
    pub fn index(mut self, paths: &[&'static str], unique: bool) -> Self {
        self.indexes.push(IndexDef {
            paths: paths.to_vec(),
            unique,
            exact: false,
        });
        self
    }

    /// Declares that `paths` are unique together as written, letter case counting, among
    /// records whose fields are all set (see [`IndexDef::exact`]): the database holds it by
    /// a partial unique index, and a write taking a value another record holds is a
    /// conflict naming that record.
    pub fn unique_exactly(mut self, paths: &[&'static str]) -> Self {
        self.indexes.push(IndexDef {
            paths: paths.to_vec(),
            unique: true,
            exact: true,
        });
        self
    }

    /// Declares that `field` may be set on many records at once, `POST
    /// /api/<resource>/<field>` (see [`BulkSet`]), each record named by its id or by one of
    /// `named_by`.
    pub fn set_in_bulk(
        mut self,
        field: &'static str,
        named_by: &'static [&'static [&'static str]],
    ) -> Self {
        self.writes.bulk = Some(BulkSet { field, named_by });
        self
    }

    /// The unique rules compared exactly ([`IndexDef::exact`]).
    pub fn exact_keys(&self) -> impl Iterator<Item = &IndexDef> {
        self.indexes
            .iter()
            .filter(|index| index.unique && index.exact)
    }

    /// The top-level field with this API name.
    pub fn field_named(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The field at a dotted path inside this resource (`detail.net`), not through relations.
    pub fn field_at(&self, path: &str) -> Option<&Field> {
        let mut parts = path.split('.');
        let mut field = self.field_named(parts.next()?)?;
        for part in parts {
            field = field.subfield(part)?;
        }
        Some(field)
    }

    /// The fields every write stamps with its time: `updatedDate`, and a stock record's
    /// `lastUpdate` (the time of its count).
    pub fn stamped_fields(&self) -> impl Iterator<Item = &Field> {
        self.fields.iter().filter(|f| f.stamped)
    }

    /// The relation with this name.
    pub fn relation(&self, name: &str) -> Option<&Relation> {
        self.relations.iter().find(|r| r.name == name)
    }

    /// Every stored leaf field, in declaration order (objects flattened).
    pub fn leaf_fields(&self) -> impl Iterator<Item = &Field> {
        self.fields.iter().flat_map(Field::leaves)
    }

    /// The relations the API knows: all but those fed by an internal foreign key.
    pub fn public_relations(&self) -> impl Iterator<Item = &Relation> {
        self.relations
            .iter()
            .filter(|r| self.fk_field(r).is_none_or(|fk| !fk.internal))
    }

    /// The field its secret's use is kept in (`Secret::used_in`).
    pub fn secret_use(&self) -> Option<&Field> {
        self.field_at(self.writes.secret?.used_in?)
    }

    /// The foreign key field of a to-one relation.
    pub fn fk_field(&self, relation: &Relation) -> Option<&Field> {
        match relation.kind {
            RelationKind::ToOne { fk } => self.field_named(fk),
            RelationKind::ToMany { .. } => None,
        }
    }
}
