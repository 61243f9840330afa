//! The generic write pipeline (docs/API.md, "Writes: master data and catalogue") for the
//! resources the catalog marks as written by it: creates (one record or many, all or nothing), upserts on natural keys, updates and
//! deletes. Everything a write needs to know comes from the catalog (writable fields, foreign
//! keys and their targets, natural keys, write and scope rules); nothing here names a
//! resource. Every problem of a write is gathered before anything is written, and each write
//! runs in one [`WriteTx`], so table versions are bumped and caches stay correct.

use crate::accounts::grants::Grant;
use crate::db::{Kind, Store, Timing, WriteTx};
use crate::error::{StoreError, StoreResult};
use crate::idempotency::KeptAnswer;
use crate::ids::new_id;
use crate::page::RenderedPage;
use crate::policy;
use crate::precondition::precondition_failed;
use crate::rights::seen_ids;
use crate::schema::ROW_VERSION;
use crate::write::{Begin, EntryPoint, Outcome, WritePlan, cell_of, records_of};
use brandhub_catalog::{
    Cell, Domain, Field, FieldDefault, FieldType, Record, RelationKind, Resource, Scope,
    SecretKept, UserType, WriteAction, catalog, is_insecure_loopback_url,
    record::{list_fields, stored_fields},
};
use brandhub_problem::{FieldError, Words, words};
use brandhub_query::conditions::IdempotencyKey;
use brandhub_query::conditions::IfMatch;
use brandhub_query::judge::{Judgement, Known, Verdict, judge};
use brandhub_query::plan::ReadPlan;
use brandhub_query::plan::{Predicate, Viewer};
use brandhub_query::sql::{condition, reaches_own_table, satisfying_ids, seen_and_writable_ids};
use brandhub_query::text::fold;
use brandhub_query::write::WriteValues;
use sea_query::{Alias, Condition, Expr, ExprTrait, LockType, Query, SqliteQueryBuilder};
use std::collections::{HashMap, HashSet};

mod bulk;
mod checks;
mod create;
mod entry;
mod update;

pub use create::create_in;
use create::*;
use update::*;

/// What a create did with one record of its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub id: String,
    /// `false` when an upsert changed an existing record instead.
    pub created: bool,
    /// The record's new secret (`Writes::secret`), for the create's answer only: it is kept
    /// nowhere in the clear.
    pub secret: Option<String>,
}

/// Who writes: the caller's view of the data and, for a write through the API, the id and the
/// grants of its key (a key never makes or revokes a key wider than itself; a webhook
/// remembers the key it was made with). Set-up commands write as an admin without a key.
#[derive(Debug, Clone, Copy)]
pub struct Writer<'a> {
    pub viewer: &'a Viewer,
    pub key_grants: Option<&'a [Grant]>,
    /// The caller's `Caller::key_id`: an API key's id, or a session's (`session:…`).
    pub key_id: Option<&'a str>,
}

impl<'a> Writer<'a> {
    /// A writer bounded by its view alone (an admin's set-up, or a check without a key).
    pub fn of(viewer: &'a Viewer) -> Writer<'a> {
        Writer {
            viewer,
            key_grants: None,
            key_id: None,
        }
    }

    /// A writer through the API: its view, and the id and grants of its key (or session).
    pub fn with_key(viewer: &'a Viewer, key_id: &'a str, key_grants: &'a [Grant]) -> Writer<'a> {
        Writer {
            viewer,
            key_grants: Some(key_grants),
            key_id: Some(key_id),
        }
    }

    /// The API key this writer writes with: none in a session or from the command line
    /// (`FieldDefault::WriterKey`).
    pub fn api_key(&self) -> Option<&'a str> {
        self.key_id
            .filter(|id| crate::accounts::sessions::session_of(id).is_none())
    }
}

/// The resource a foreign key field points to.
fn target_of(resource: &'static Resource, field: &Field) -> Option<&'static Resource> {
    resource
        .relations
        .iter()
        .find_map(|relation| match relation.kind {
            RelationKind::ToOne { fk } if fk == field.name => Some(catalog().target(relation)),
            _ => None,
        })
}

/// The public foreign keys of a resource with their targets: each must name a record the
/// writer sees ([`crate::rights::seen_ids`]), in a JSON write and in an upload's part name.
pub fn links(resource: &'static Resource) -> Vec<(&'static Field, &'static Resource)> {
    resource
        .fields
        .iter()
        .filter(|f| f.ty == FieldType::Id && f.relation.is_some() && !f.internal)
        .filter_map(|f| target_of(resource, f).map(|t| (f, t)))
        .collect()
}

fn not_found(resource: &Resource, id: &str) -> StoreError {
    StoreError::NotFound(words!(
        "There is no {} with id '{id}'.",
        "Es gibt kein {} mit der Kennung '{id}'.",
        resource.name
    ))
}

/// A problem of the record at `index` (array writes only carry it).
fn problem(field: &str, message: Words, index: Option<usize>) -> FieldError {
    FieldError {
        field: field.to_string(),
        message,
        index,
    }
}

/// Problems of the catalog's bounds across fields (`Writes::bounds`) in records about to be
/// written, as the write leaves them (an update's record merged with what it keeps), without
/// I/O; `given` are the writes' values, whose own problems with either field come first.
fn bound_problems(
    resource: &'static Resource,
    records: &[Record],
    given: &[&WriteValues],
    indexes: &[Option<usize>],
) -> Vec<FieldError> {
    let mut problems = Vec::new();
    for bound in &resource.writes.bounds {
        for ((record, values), index) in records.iter().zip(given).zip(indexes) {
            if values.has_problem(bound.field) || values.has_problem(bound.when) {
                continue;
            }
            if let Some(message) = bound.problem(resource, record) {
                problems.push(problem(bound.field, message, *index));
            }
        }
    }
    problems
}

/// The values of a record's ids, for judging a rule on it (its own id left unset when new).
fn known_of(resource: &'static Resource, record: &Record, own_id: Option<&str>) -> Known {
    let mut known = Known::new().value("id", own_id.map(str::to_string));
    for (field, cell) in stored_fields(resource).into_iter().zip(&record.cells) {
        if field.ty == FieldType::Id && field.path != "id" {
            known = known.value(&field.path, cell.as_text().map(str::to_string));
        }
    }
    known
}

/// The natural key of a record as the values its columns compare with (text folded, ids
/// upper-cased, timestamps as stored); `None` when the resource has none or a part is unset.
fn key_of(resource: &'static Resource, record: &Record) -> Option<Vec<String>> {
    let key = &resource.writes.natural_key;
    if key.is_empty() {
        return None;
    }
    key.iter()
        .map(|path| {
            let text = cell_of(resource, record, path)?.as_text()?;
            let field = resource.field_at(path);
            let ty = field.map(|f| f.ty);
            // A part with a default (a price's currency, empty for any) is always set.
            let always_set = field.is_some_and(|f| f.default.is_some());
            (always_set || !text.is_empty()).then(|| match ty {
                Some(FieldType::Text) => fold(text),
                Some(FieldType::Id) => text.to_ascii_uppercase(),
                _ => text.to_string(),
            })
        })
        .collect()
}

/// The natural key as messages name it (`brand and barcode`).
fn key_name(resource: &Resource) -> String {
    resource.natural_key_names().join(" and ")
}

/// The index of a stored field.
fn position_of(resource: &Resource, path: &str) -> Option<usize> {
    stored_fields(resource).iter().position(|f| f.path == path)
}

/// The outcomes of the record checks of rules already read within one write, by check: the
/// 1,000 variants of one product in an array ask the same question of that product once,
/// and a rule that asks of a link what the check of the link asked already (is this brand
/// one the caller sees?) is not asked again. Kept for the checks before anything of the write
/// is inserted, so no answer goes stale.
type RuleMemo = HashMap<String, bool>;

/// A check's key in a [`RuleMemo`]: the statement that reads it, so that two checks that
/// would read the same are one.
fn check_key(resource: &'static Resource, id: &str, predicate: &Predicate) -> String {
    satisfying_ids(resource, &[id.to_string()], predicate).to_string(SqliteQueryBuilder)
}

/// 409 for a natural key taken by another record, named by id only when the caller sees it
/// (`holder`): a key taken in another tenant's data tells that the key is taken, not which
/// record has it.
fn key_taken(resource: &Resource, holder: Option<&str>, index: Option<usize>) -> StoreError {
    let at = index.map(|i| format!(" (element {i})")).unwrap_or_default();
    let detail = match holder {
        Some(holder) => format!(
            "A {} with the same {} exists already{at}: id '{holder}'. Send ?upsert=true to change it instead.",
            resource.name,
            key_name(resource)
        ),
        None => format!(
            "The {} of this {}{at} is taken by a record the caller does not see; choose another.",
            key_name(resource),
            resource.name
        ),
    };
    StoreError::conflict(detail, resource.writes.natural_key.join(","))
}

/// One 422 with the problems in order, one per field of a record (the first found: a link
/// naming no record is not also outside the write rules).
/// The entry point of a create: an upsert, an array body, or one record.
fn create_entry(items: &[WriteValues], upsert: bool, indexed: bool) -> EntryPoint {
    match (upsert, indexed || items.len() != 1) {
        (true, _) => EntryPoint::Upsert,
        (false, true) => EntryPoint::Array,
        (false, false) => EntryPoint::Create,
    }
}

fn sorted(mut problems: Vec<FieldError>) -> StoreError {
    problems.sort_by(|a, b| (a.index, &a.field).cmp(&(b.index, &b.field)));
    problems.dedup_by(|later, first| later.index == first.index && later.field == first.field);
    StoreError::invalid(problems)
}

/// 403 for a write of a resource that the caller's user type never writes (docs/API.md,
/// "Writes: master data and catalogue", its table), before anything of the body is judged.
fn never_written_by(resource: &Resource, viewer: &Viewer) -> Option<StoreError> {
    let user_type = viewer.user_type();
    (resource.authority_of(WriteAction::Write, user_type) == Scope::Nothing).then(|| {
        StoreError::Refused(words!(
            "A {} user may not create, change or delete {} records.",
            "Ein Benutzer vom Typ {} darf keine Datensätze {} anlegen, ändern oder löschen.",
            user_type.as_str(),
            resource.name
        ))
    })
}

/// 403 for a record the caller sees but may not write, saying what the catalog's rule for
/// its user type asks.
fn forbidden(resource: &Resource, viewer: &Viewer) -> StoreError {
    if let Some(never) = never_written_by(resource, viewer) {
        return never;
    }
    let user_type = viewer.user_type();
    let rule = match resource.authority_of(WriteAction::Write, user_type) {
        Scope::AnyOf(groups) if !groups.is_empty() => {
            let groups: Vec<String> = groups
                .iter()
                .map(|group| {
                    group
                        .iter()
                        .map(|term| format!("{} is {}", term.path, term.anchor.describe()))
                        .collect::<Vec<_>>()
                        .join(" and ")
                })
                .collect();
            format!("it writes those whose {}", groups.join(", or whose "))
        }
        _ => format!("it writes no {}", resource.name),
    };
    StoreError::Refused(Words::english(format!(
        "A {} user may not write this {}: {rule}.",
        user_type.as_str(),
        resource.name
    )))
}

/// 409 for a create that lost the race for its natural keys [`crate::write::RACE_ATTEMPTS`]
/// times (each attempt sees the records of the writes that took them).
fn raced(resource: &Resource) -> StoreError {
    StoreError::Conflict {
        detail: Words::new(
            format!(
                "Concurrent writes kept taking the {} of these {} records; send the write again.",
                resource.writes.natural_key.join(" and "),
                resource.name
            ),
            format!(
                "Gleichzeitige Schreibvorgänge nahmen immer wieder {} dieser Datensätze {}; bitte erneut senden.",
                resource.writes.natural_key.join(" und "),
                resource.name
            ),
        ),
        field: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brandhub_query::write::{WriteMode, parse_write};

    fn parsed(resource: &'static Resource, body: &str) -> WriteValues {
        parse_write(
            resource,
            WriteMode::Create,
            body.as_bytes(),
            &Viewer::admin(),
        )
        .unwrap()
    }

    #[test]
    fn a_new_record_takes_its_values_an_id_and_a_creation_time() {
        let company = catalog().get(brandhub_catalog::Res::Company);
        let record = new_record(
            company,
            &parsed(company, r#"{"name": "Acme", "code": "AcMe"}"#),
            "2026-01-02T03:04:05",
            &Writer::of(&Viewer::admin()),
        );
        assert!(crate::ids::looks_like_id(record.id()));
        let created = cell_of(company, &record, "createdDate").and_then(Cell::as_text);
        assert_eq!(created.map(str::len), Some(19));
        assert_eq!(cell_of(company, &record, "fk_sponsor"), Some(&Cell::Null));
        assert_eq!(key_of(company, &record), Some(vec!["acme".to_string()]));
    }

    #[test]
    fn a_webhook_remembers_the_api_key_it_was_made_with_and_no_session() {
        let webhook = catalog().get(brandhub_catalog::Res::Webhook);
        let values = parsed(
            webhook,
            r#"{"url": "https://hooks.example.com/", "events": ["order.created"]}"#,
        );
        let admin = Viewer::admin();
        let made_with = |key_id: Option<&str>| {
            let writer = match key_id {
                Some(id) => Writer::with_key(&admin, id, &[]),
                None => Writer::of(&admin),
            };
            let record = new_record(webhook, &values, "2026-01-02T03:04:05", &writer);
            cell_of(webhook, &record, "madeWithKey").cloned()
        };
        let key = "0123456789ABCDEF0123456789ABCDEF";
        assert_eq!(made_with(Some(key)), Some(Cell::Text(key.into())));
        assert_eq!(made_with(Some(&format!("session:{key}"))), Some(Cell::Null));
        assert_eq!(made_with(None), Some(Cell::Null));
    }

    #[test]
    fn natural_keys_of_several_parts_need_every_part() {
        let store = catalog().get(brandhub_catalog::Res::Store);
        let host = "0123456789ABCDEF0123456789ABCDEF";
        let whole = new_record(
            store,
            &parsed(store, &format!(r#"{{"fk_host": "{host}", "code": "UK"}}"#)),
            "2026-01-02T03:04:05",
            &Writer::of(&Viewer::admin()),
        );
        assert_eq!(
            key_of(store, &whole),
            Some(vec![host.to_string(), "uk".to_string()])
        );
        let partial = new_record(
            store,
            &parsed(store, r#"{"code": "UK"}"#),
            "2026-01-02T03:04:05",
            &Writer::of(&Viewer::admin()),
        );
        assert_eq!(key_of(store, &partial), None);
    }

    #[test]
    fn natural_keys_compare_as_their_columns_store_them() {
        let price = catalog().get(brandhub_catalog::Res::Price);
        let variant = "0123456789abcdef0123456789abcdef";
        let host = "FEDCBA9876543210FEDCBA9876543210";
        let body = format!(
            r#"{{"fk_variant": "{variant}", "fk_host": "{host}", "price": 1, "startDate": "2026-01-02T03:04:05"}}"#
        );
        let record = new_record(
            price,
            &parsed(price, &body),
            "2026-01-01T00:00:00",
            &Writer::of(&Viewer::admin()),
        );
        assert_eq!(
            key_of(price, &record),
            Some(vec![
                variant.to_ascii_uppercase(),
                host.to_string(),
                String::new(),
                "2026-01-02T03:04:05".to_string()
            ]),
            "ids upper-cased, an unsent currency any (empty), timestamps as stored (not folded)"
        );
        let body = format!(
            r#"{{"fk_variant": "{variant}", "fk_host": "{host}", "price": 1, "currency": "Eur", "startDate": "2026-01-02T03:04:05"}}"#
        );
        let record = new_record(
            price,
            &parsed(price, &body),
            "2026-01-01T00:00:00",
            &Writer::of(&Viewer::admin()),
        );
        assert_eq!(key_of(price, &record).unwrap()[2], "eur", "text folded");
        let variant = catalog().get(brandhub_catalog::Res::Variant);
        assert_eq!(key_name(variant), "brand and barcode");
        let stock = catalog().get(brandhub_catalog::Res::Stock);
        let record = new_record(
            stock,
            &WriteValues::default(),
            "2026-01-01T00:00:00",
            &Writer::of(&Viewer::admin()),
        );
        assert_eq!(
            cell_of(stock, &record, "lastUpdate").and_then(Cell::as_text),
            Some("2026-01-01T00:00:00"),
            "stamped fields take the time of the write"
        );
    }

    #[test]
    fn links_are_the_public_foreign_keys_with_their_targets() {
        let brand_store = catalog().get(brandhub_catalog::Res::BrandStore);
        let names: Vec<(&str, &str)> = links(brand_store)
            .into_iter()
            .map(|(f, t)| (f.name, t.name))
            .collect();
        assert_eq!(
            names,
            vec![
                ("fk_brand", "brand"),
                ("fk_store", "store"),
                ("fk_warehouse", "warehouse")
            ]
        );
        let variant = catalog().get(brandhub_catalog::Res::Variant);
        assert!(
            links(variant)
                .iter()
                .all(|(f, _)| f.name != "fk_scopeBrand")
        );
    }
}
