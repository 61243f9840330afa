//! A resource: its fields, relations, indexes, events and rules, and what is asked of it.

use super::*;

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
        as_declared(user_type, |t| {
            self.authority
                .iter()
                .find(|(a, u, _)| *a == action && *u == t)
                .map(|(_, _, s)| s.clone())
        })
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
        as_declared(user_type, |t| {
            self.scopes
                .iter()
                .find(|(u, _)| *u == t)
                .map(|(_, s)| s.clone())
        })
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

/// What a user type gets from `declared` (a resource's scopes or write rules): an admin
/// everything, a sponsor what is declared for it or else for a company user (over its own
/// companies), any other type what is declared for it, and an undeclared type nothing.
fn as_declared(user_type: UserType, declared: impl Fn(UserType) -> Option<Scope>) -> Scope {
    if user_type == UserType::Admin {
        return Scope::Everything;
    }
    declared(user_type)
        .or_else(|| {
            (user_type == UserType::Sponsor)
                .then(|| declared(UserType::Company))
                .flatten()
        })
        .unwrap_or(Scope::Nothing)
}
