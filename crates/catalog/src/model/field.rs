//! A field: its type, how it is stored, its default and what it derives from, and the
//! constructors the resources are declared with.

use super::*;
use crate::naming::{folded_column, snake_case};
use brandhub_problem::{Words, words};

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
    pub(super) fn new(name: &'static str, ty: FieldType) -> Field {
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

    // ---- declaration helpers: used by `resources/` ----

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
