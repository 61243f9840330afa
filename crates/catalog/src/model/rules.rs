//! Who sees and writes what: scope anchors and terms, write actions and bounds, secrets and
//! the policies of restricted properties.

use super::*;
use brandhub_problem::{Words, words};

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
    pub(super) fn described(&self) -> Words {
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
pub(super) fn rule_groups(groups: &[&[(&'static str, Anchor)]]) -> Vec<Vec<ScopeTerm>> {
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
