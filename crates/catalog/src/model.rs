//! The shapes the catalog is made of. Everything that describes a resource (its SQL, its
//! validation, its rendering, its OpenAPI schema and its documentation) is derived from these.

use crate::naming::{folded_column, snake_case};

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

    /// The value stored in `user.type` and accepted on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            UserType::Admin => "admin",
            UserType::Sponsor => "sponsor",
            UserType::Company => "company",
            UserType::Host => "host",
            UserType::Warehouse => "warehouse",
        }
    }

    /// Parses the stored or typed form.
    pub fn parse(text: &str) -> Option<UserType> {
        UserType::ALL.into_iter().find(|t| t.as_str() == text)
    }

    /// The types a user of this type may give the users it writes (CONTRACT §9: "never of a
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
    /// User types for whom this property does not exist (CONTRACT §5 restricted properties).
    pub hidden_from: Vec<UserType>,
    /// The name of the to-one relation this foreign key feeds, if any.
    pub relation: Option<&'static str>,
    /// One line for the docs and the OpenAPI schema.
    pub doc: &'static str,
    /// The most characters a value (for a list, each element) may have when a client writes
    /// it, through JSON or a file; `None` for fields that are not text.
    pub max_chars: Option<usize>,
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
        }
    }

    /// Whether a text (or list element) of this many characters is too long for the field:
    /// the problem to report when it is.
    pub fn length_problem(&self, text: &str) -> Option<String> {
        let max = self.max_chars?;
        // Bytes bound characters from above: most texts are settled without counting.
        if text.len() <= max {
            return None;
        }
        let chars = text.chars().count();
        (chars > max).then(|| format!("has {chars} characters; at most {max} are allowed"))
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
        }
    }
}

/// One condition of a scope rule: the value at `path` is one of the caller's `anchor` ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeTerm {
    pub path: &'static str,
    pub anchor: Anchor,
}

/// Which records of a resource a user type sees (CONTRACT §5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Everything,
    Nothing,
    /// The records that satisfy any of these groups; a group holds when all its terms do.
    AnyOf(Vec<Vec<ScopeTerm>>),
}

/// What a write does, for the rules of who may write which records (CONTRACT §9 "Who writes
/// what"). Most resources know one kind of write; orders move through a lifecycle whose steps
/// each have their own writers (§11).
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

/// What a resource accepts as writes (CONTRACT §9): the fields a create may set (and which of
/// them it must), the fields an update may change, and whether DELETE removes (or revokes).
#[derive(Debug, Clone, Default)]
pub struct Writes {
    pub create: Vec<&'static str>,
    pub create_required: Vec<&'static str>,
    pub update: Vec<&'static str>,
    pub delete: bool,
    /// The fields that name a record besides its id (CONTRACT §9 natural keys): a create
    /// whose key is taken is a conflict, or with `?upsert=true` an update of that record.
    pub natural_key: Vec<&'static str>,
    /// Whether the generic write pipeline (`store::records`) writes the resource; users and
    /// keys still have writers of their own.
    pub generic: bool,
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
    /// Records are created by a multipart upload (`POST /api/file`, CONTRACT §8) rather than
    /// by a JSON write.
    pub uploads: bool,
}

impl Resource {
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
        }
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

    /// Declares which records the given user types may `action` (CONTRACT §9): those
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
        self.writes = Writes {
            create: create.to_vec(),
            create_required: create_required.to_vec(),
            update: update.to_vec(),
            delete,
            natural_key: std::mem::take(&mut self.writes.natural_key),
            generic: self.writes.generic,
        };
        self
    }

    /// Declares that the generic write pipeline writes the resource, with its natural key
    /// (after [`Resource::writable`]).
    pub fn written_by_pipeline(mut self, natural_key: &[&'static str]) -> Self {
        self.writes.natural_key = natural_key.to_vec();
        self.writes.generic = true;
        self
    }

    /// The HTTP methods `/api/<resource>` and `/api/<resource>/<id>` accept, for `Allow`.
    pub fn methods(&self, with_id: bool) -> Vec<&'static str> {
        let mut methods = vec!["GET", "HEAD"];
        if !with_id && (!self.writes.create.is_empty() || self.uploads) {
            methods.push("POST");
        }
        if with_id && !self.writes.update.is_empty() {
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
        });
        self
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

    /// The foreign key field of a to-one relation.
    pub fn fk_field(&self, relation: &Relation) -> Option<&Field> {
        match relation.kind {
            RelationKind::ToOne { fk } => self.field_named(fk),
            RelationKind::ToMany { .. } => None,
        }
    }
}
