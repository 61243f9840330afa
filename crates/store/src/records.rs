//! The generic write pipeline (docs/API.md, "Writes: master data and catalogue") for the resources the catalog marks as written by
//! it: creates (one record or many, all or nothing), upserts on natural keys, updates and
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
use brandhub_problem::FieldError;
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
    StoreError::NotFound(format!("There is no {} with id '{id}'.", resource.name))
}

/// A problem of the record at `index` (array writes only carry it).
fn problem(field: &str, message: String, index: Option<usize>) -> FieldError {
    FieldError {
        field: field.to_string(),
        message,
        index,
    }
}

/// The record a create makes of its values: a new id, `createdDate` and stamped fields now,
/// the given values, the catalog's defaults for what was not given, and every other field
/// unset (derived fields are filled later, from the database: [`WriteTx::fill_derived`]).
fn new_record(
    resource: &'static Resource,
    values: &WriteValues,
    now: &str,
    writer: &Writer<'_>,
) -> Record {
    let mut record = Record::empty(resource);
    for (field, cell) in stored_fields(resource).into_iter().zip(&mut record.cells) {
        if field.path == "id" {
            *cell = Cell::Text(new_id());
        } else if field.path == "createdDate" || field.stamped {
            *cell = Cell::Text(now.to_string());
        } else if let Some(given) = values.cell(&field.path) {
            *cell = given.clone();
        } else if let Some(default) = field.default {
            *cell = match default {
                FieldDefault::Text(text) => Cell::Text(text.to_string()),
                FieldDefault::Boolean(value) => Cell::Boolean(value),
                FieldDefault::Writer(anchor) => writer
                    .viewer
                    .anchor_ids(anchor)
                    .into_iter()
                    .next()
                    .map_or(Cell::Null, Cell::Text),
                FieldDefault::WriterKey => writer
                    .api_key()
                    .map_or(Cell::Null, |id| Cell::Text(id.to_string())),
            };
        }
    }
    for (field, list) in list_fields(resource).into_iter().zip(&mut record.lists) {
        if let Some(given) = values.list(&field.path) {
            list.clone_from(given);
        }
    }
    record
}

/// Problems of fields a new record must have that neither the write nor a default gave.
fn unset_problems(
    resource: &'static Resource,
    record: &Record,
    values: &WriteValues,
    index: Option<usize>,
) -> Vec<FieldError> {
    stored_fields(resource)
        .into_iter()
        .zip(&record.cells)
        .filter(|(field, cell)| {
            field.required
                && cell.is_unset()
                && field.derived_from.is_none()
                && field.generated.is_none()
                && !values.has_problem(&field.path)
        })
        .map(|(field, _)| problem(&field.path, "is required".into(), index))
        .collect()
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
            let ty = resource.field_at(path).map(|f| f.ty);
            (!text.is_empty()).then(|| match ty {
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

/// [`outcomes`] through a [`RuleMemo`].
async fn remembered_outcomes(
    tx: &mut WriteTx,
    judgement: &Judgement,
    memo: &mut RuleMemo,
) -> StoreResult<Vec<bool>> {
    let mut found = Vec::new();
    for (resource, id, predicate) in judgement.record_checks() {
        let key = check_key(resource, id, predicate);
        let holds = match memo.get(&key) {
            Some(holds) => *holds,
            None => {
                let statement = satisfying_ids(resource, &[id.to_string()], predicate);
                let holds = !tx.fetch(&statement, &[Kind::Text]).await?.is_empty();
                memo.insert(key, holds);
                holds
            }
        };
        found.push(holds);
    }
    Ok(found)
}

/// Reads a rule's verdict on a record about to be written, as problems (nothing when it
/// holds). `why` says what the rule is.
#[allow(clippy::too_many_arguments)]
async fn rule_problems(
    tx: &mut WriteTx,
    resource: &'static Resource,
    rule: &Scope,
    viewer: &Viewer,
    known: &Known,
    why: &str,
    index: Option<usize>,
    memo: &mut RuleMemo,
) -> StoreResult<Vec<FieldError>> {
    let judgement = judge(resource, rule, viewer, known);
    let outcomes = remembered_outcomes(tx, &judgement, memo).await?;
    if judgement.verdict(&outcomes) == Verdict::Yes {
        return Ok(Vec::new());
    }
    let mut problems: Vec<FieldError> = judgement
        .refused(&outcomes)
        .into_iter()
        .filter(|term| term.path != "id")
        .map(|term| {
            // A rule through a link is the problem of the foreign key that feeds it.
            let first = term.path.split('.').next().unwrap_or(term.path);
            let field = resource
                .relation(first)
                .and_then(|r| resource.fk_field(r))
                .map_or(first, |f| f.name);
            problem(
                field,
                format!("is not {}: {why}", term.anchor.describe()),
                index,
            )
        })
        .collect();
    if problems.is_empty() {
        problems.push(problem(resource.name, why.to_string(), index));
    }
    Ok(problems)
}

impl WriteTx {
    /// Problems of foreign keys that name no record the caller sees (one statement per
    /// foreign key field, for every record of the write); what each check found is kept in
    /// `memo`, for the rules that ask the same.
    async fn link_problems(
        &mut self,
        resource: &'static Resource,
        records: &[(Option<usize>, &WriteValues)],
        viewer: &Viewer,
        memo: &mut RuleMemo,
    ) -> StoreResult<Vec<FieldError>> {
        let mut problems = Vec::new();
        for (field, target) in links(resource) {
            let given: Vec<(Option<usize>, String)> = records
                .iter()
                .filter(|(_, values)| !values.has_problem(&field.path))
                .filter_map(|(index, values)| values.text(&field.path).map(|id| (*index, id)))
                .collect();
            let ids: Vec<String> = given
                .iter()
                .map(|(_, id)| id.clone())
                .collect::<HashSet<_>>()
                .into_iter()
                .collect();
            let found = seen_ids(self, target, &ids, viewer).await?;
            let scope = viewer.scope(target);
            for id in &ids {
                memo.insert(check_key(target, id, &scope), found.contains(id));
            }
            for (index, id) in given {
                if !found.contains(&id) {
                    let message = if viewer.user_type() == UserType::Admin {
                        format!("no {} has id '{id}'", target.name)
                    } else {
                        format!("no {} the caller sees has id '{id}'", target.name)
                    };
                    problems.push(problem(&field.path, message, index));
                }
            }
        }
        Ok(problems)
    }

    /// Problems of the write and scope rules with a record as it would be written.
    async fn authority_problems(
        &mut self,
        resource: &'static Resource,
        record: &Record,
        own_id: Option<&str>,
        viewer: &Viewer,
        index: Option<usize>,
        memo: &mut RuleMemo,
    ) -> StoreResult<Vec<FieldError>> {
        if viewer.user_type() == UserType::Admin {
            return Ok(Vec::new());
        }
        let known = known_of(resource, record, own_id);
        let kind = viewer.user_type().as_str();
        let why = format!("a {kind} user may not write such a {}", resource.name);
        let rule = resource.authority_of(WriteAction::Write, viewer.user_type());
        let mut problems =
            rule_problems(self, resource, &rule, viewer, &known, &why, index, memo).await?;
        if problems.is_empty() {
            let why = format!(
                "the {} would be outside what the caller sees",
                resource.name
            );
            let scope = resource.scope_of(viewer.user_type());
            problems =
                rule_problems(self, resource, &scope, viewer, &known, &why, index, memo).await?;
        }
        Ok(problems)
    }

    /// The ids of the records holding each of many natural keys, in a few statements: keys
    /// are grouped by all their parts but the last (a brand, a warehouse), and each group is
    /// one `… AND last IN (…)` lookup per 500 keys, served by the natural key's unique index.
    /// Keys whose last part is not text or an id are looked up one by one.
    async fn holders_of(
        &mut self,
        resource: &'static Resource,
        keys: &[Vec<String>],
    ) -> StoreResult<HashMap<Vec<String>, String>> {
        const KEYS_PER_STATEMENT: usize = 500;
        let mut found = HashMap::new();
        let columns: Vec<(String, FieldType)> = resource
            .writes
            .natural_key
            .iter()
            .map(|path| {
                let field = resource.field_at(path).expect("natural keys are fields");
                let column = field
                    .folded_column()
                    .unwrap_or_else(|| field.column.clone());
                (column, field.ty)
            })
            .collect();
        let Some(((last, last_type), prefix)) = columns.split_last() else {
            return Ok(found);
        };
        if !matches!(last_type, FieldType::Text | FieldType::Id) {
            for key in keys {
                if let Some(holder) = self.holder_of(resource, key, None).await? {
                    found.insert(key.clone(), holder);
                }
            }
            return Ok(found);
        }
        let mut groups: HashMap<&[String], Vec<&str>> = HashMap::new();
        for key in keys {
            let (tail, head) = key.split_last().expect("a key has every part");
            groups.entry(head).or_default().push(tail.as_str());
        }
        for (head, tails) in groups {
            for chunk in tails.chunks(KEYS_PER_STATEMENT) {
                let mut condition = Condition::all();
                for ((column, _), value) in prefix.iter().zip(head) {
                    condition = condition.add(Expr::col(Alias::new(column)).eq(value.as_str()));
                }
                condition = condition
                    .add(Expr::col(Alias::new(last)).is_in(chunk.iter().map(|t| t.to_string())));
                let statement = Query::select()
                    .column(Alias::new("id"))
                    .column(Alias::new(last))
                    .from(Alias::new(resource.table))
                    .cond_where(condition)
                    .to_owned();
                for row in self.fetch(&statement, &[Kind::Text, Kind::Text]).await? {
                    if let (Some(id), Some(tail)) = (row[0].as_text(), row[1].as_text()) {
                        let mut key = head.to_vec();
                        key.push(tail.to_string());
                        found.insert(key, id.to_string());
                    }
                }
            }
        }
        Ok(found)
    }

    /// The id of the record that holds a natural key, other than `except`.
    async fn holder_of(
        &mut self,
        resource: &'static Resource,
        key: &[String],
        except: Option<&str>,
    ) -> StoreResult<Option<String>> {
        let mut condition = Condition::all();
        for (path, value) in resource.writes.natural_key.iter().zip(key) {
            let field = resource.field_at(path).expect("natural keys are fields");
            let column = field
                .folded_column()
                .unwrap_or_else(|| field.column.clone());
            condition = condition.add(Expr::col(Alias::new(column)).eq(value.as_str()));
        }
        if let Some(except) = except {
            condition = condition.add(Expr::col(Alias::new("id")).ne(except));
        }
        let statement = Query::select()
            .column(Alias::new("id"))
            .from(Alias::new(resource.table))
            .cond_where(condition)
            .limit(1)
            .to_owned();
        let rows = self.fetch(&statement, &[Kind::Text]).await?;
        Ok(rows
            .first()
            .and_then(|row| row[0].as_text().map(str::to_string)))
    }

    /// Whether the caller sees and may write the existing record `id`; a record it sees stays
    /// locked until the transaction ends.
    pub(crate) async fn may_write(
        &mut self,
        resource: &'static Resource,
        id: &str,
        viewer: &Viewer,
    ) -> StoreResult<(bool, bool)> {
        let found = self
            .seen_and_writable(resource, &[id.to_string()], viewer)
            .await?;
        let seen = found.values().next();
        Ok((seen.is_some(), seen.is_some_and(|f| f.writable)))
    }

    /// The records among `ids` (distinct) that the caller sees, by id, each with whether it
    /// may write it and its version: both rules in one statement
    /// (`sql::seen_and_writable_ids`), which locks those records until the transaction ends
    /// (`FOR NO KEY UPDATE` on PostgreSQL; SQLite writes one transaction at a time), so what
    /// it found holds until the write commits.
    async fn seen_and_writable(
        &mut self,
        resource: &'static Resource,
        ids: &[String],
        viewer: &Viewer,
    ) -> StoreResult<HashMap<String, Found>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let mut statement = seen_and_writable_ids(
            resource,
            ids,
            &viewer.scope(resource),
            &viewer.authority(resource, WriteAction::Write),
        );
        // The stored record comes with its check: an update compares it with the values it
        // was given, and reading it here spares a statement while the write waits its turn.
        let fields = stored_fields(resource);
        statement
            .column(Alias::new(ROW_VERSION))
            .columns(fields.iter().map(|f| Alias::new(f.column.as_str())));
        if !self.is_optimistic() {
            // An optimistic write names the version it read in its update instead.
            statement.lock(LockType::NoKeyUpdate);
        }
        let mut found = HashMap::with_capacity(ids.len());
        let mut kinds = vec![Kind::Text, Kind::Integer, Kind::Integer];
        kinds.extend(fields.iter().map(|f| Kind::of(f.ty)));
        for mut row in self.fetch(&statement, &kinds).await? {
            let stored = row.split_off(3);
            let (Some(id), Cell::Integer(version)) = (row[0].as_text(), &row[2]) else {
                continue;
            };
            let writable = row[1] == Cell::Integer(1);
            let record = records_of(resource, vec![stored]).pop();
            found.insert(
                id.to_string(),
                Found {
                    writable,
                    version: *version,
                    record,
                },
            );
        }
        Ok(found)
    }

    /// URLs naming the loopback address where the catalog asks for a public https receiver
    /// (`Domain::SecureUrl`), unless the store was opened to allow them
    /// (`--webhook-allow-insecure-localhost`, for tests).
    fn insecure_url_problems(
        &self,
        resource: &'static Resource,
        records: &[Record],
        indexes: &[Option<usize>],
    ) -> Vec<FieldError> {
        if self.insecure_loopback {
            return Vec::new();
        }
        let mut problems = Vec::new();
        for field in stored_fields(resource) {
            if field.domain != Some(Domain::SecureUrl) {
                continue;
            }
            for (record, index) in records.iter().zip(indexes) {
                if let Some(url) = cell_of(resource, record, &field.path).and_then(Cell::as_text)
                    && is_insecure_loopback_url(url)
                {
                    problems.push(problem(
                        &field.path,
                        brandhub_catalog::webhook_url_problem(url, false).unwrap_or_default(),
                        *index,
                    ));
                }
            }
        }
        problems
    }

    /// Problems of the catalog's agreements (`Writes::agreements`) in records about to be
    /// written: the value reached through a path differs from the record's own field.
    async fn agreement_problems(
        &mut self,
        resource: &'static Resource,
        records: &[Record],
        indexes: &[Option<usize>],
    ) -> StoreResult<Vec<FieldError>> {
        let mut problems = Vec::new();
        for (path, own) in &resource.writes.agreements {
            let reached = self.follow(resource, records, path).await?;
            let link = path.split('.').next().unwrap_or(path);
            let link_field = resource
                .relation(link)
                .and_then(|r| resource.fk_field(r))
                .map_or(*path, |f| f.name);
            for ((record, value), index) in records.iter().zip(reached).zip(indexes) {
                let mine = cell_of(resource, record, own).and_then(Cell::as_text);
                if let (Some(value), Some(mine)) = (value, mine)
                    && !value.eq_ignore_ascii_case(mine)
                {
                    problems.push(problem(
                        link_field,
                        format!("belongs to another {own} ('{value}', not '{mine}')"),
                        *index,
                    ));
                }
            }
        }
        Ok(problems)
    }
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

impl Store {
    /// Creates the records of a write (all or none); with `upsert`, a record whose natural key
    /// is taken changes that record instead (it must be one the caller may write). `indexed`
    /// says whether the body was an array (problems then carry each record's index).
    pub async fn create_records(
        &self,
        resource: &'static Resource,
        items: &[WriteValues],
        writer: &Writer<'_>,
        upsert: bool,
        indexed: bool,
    ) -> StoreResult<Vec<Written>> {
        let (written, _) = self
            .create_records_answered(resource, items, writer, upsert, indexed, None)
            .await?;
        Ok(written)
    }

    /// [`Store::create_records`], with the answer of one new record when the write's own
    /// statement could read it: `answer` (a read of the resource as the caller sees it, with
    /// its timing) narrowed to the new record's id, rendered. `None` when the write did not
    /// read it (SQLite, an array or an upsert, a retry after a race, a plan that reaches its
    /// own table again), and the caller reads it after the write.
    pub async fn create_records_answered(
        &self,
        resource: &'static Resource,
        items: &[WriteValues],
        writer: &Writer<'_>,
        upsert: bool,
        indexed: bool,
        answer: Option<(&ReadPlan, &Timing)>,
    ) -> StoreResult<(Vec<Written>, Option<RenderedPage>)> {
        // One new record is first checked unlocked and written by one statement that commits
        // itself (on SQLite one batch in the write turn: [`Begin::CheckingFirst`]), on
        // condition that its natural key is still free; a key taken meanwhile is checked
        // again in a transaction, which then finds its holder.
        let begin = if items.len() == 1 && !upsert {
            Begin::CheckingFirst
        } else {
            Begin::Locking
        };
        let plan = WritePlan::retrying(create_entry(items, upsert, indexed), begin);
        let created = self
            .execute_committed(plan, |mut tx, _| {
                Box::pin(async move {
                    let stepped = async {
                        let Some(written) =
                            try_create_in(&mut tx, resource, items, writer, upsert, indexed)
                                .await?
                        else {
                            return Ok(Outcome::Again);
                        };
                        // The one record created, read by the statement that writes it.
                        let plan = match (answer, written.as_slice()) {
                            (Some((template, _)), [one])
                                if one.created && tx.commit_can_answer() =>
                            {
                                Some(template.narrowed_to(std::slice::from_ref(&one.id)))
                            }
                            _ => None,
                        }
                        .filter(|plan| !reaches_own_table(plan));
                        if let Some(plan) = &plan {
                            self.answer_within(&mut tx, plan, writer.viewer);
                        }
                        Ok(Outcome::Commit((written, plan)))
                    }
                    .await;
                    (tx, stepped)
                })
            })
            .await;
        let ((written, plan), committed) = match created {
            Err(error) if error.is_raced() => return Err(raced(resource)),
            done => done?,
        };
        let read = plan.zip(committed.and_then(|c| c.answer));
        let page = match (read, answer) {
            (Some((plan, rows)), Some((_, timing))) => Some(
                self.render_read_by_write(&plan, rows, writer.viewer, timing)
                    .await?,
            ),
            _ => None,
        };
        Ok((written, page.filter(|page| page.records > 0)))
    }

    /// [`Store::create_records`] applied once per `key` (docs/API.md, "Writes: concurrency and idempotency"): the key is
    /// claimed in the write's own transaction; when the same request came first, nothing is
    /// written and its kept answer is returned instead (`Err` 409 when another request did).
    pub async fn create_records_once(
        &self,
        resource: &'static Resource,
        items: &[WriteValues],
        writer: &Writer<'_>,
        upsert: bool,
        indexed: bool,
        key: &IdempotencyKey,
    ) -> StoreResult<Result<Vec<Written>, KeptAnswer>> {
        let plan = WritePlan::retrying(create_entry(items, upsert, indexed), Begin::Locking);
        let done = self
            .execute(plan, |mut tx, _| {
                Box::pin(async move {
                    let stepped = async {
                        if let Some(kept) = tx.claim_key(key).await? {
                            return Ok(Outcome::RollBack(Err(kept)));
                        }
                        let Some(written) =
                            try_create_in(&mut tx, resource, items, writer, upsert, indexed)
                                .await?
                        else {
                            return Ok(Outcome::Again);
                        };
                        let pairs: Vec<(String, bool)> =
                            written.iter().map(|w| (w.id.clone(), w.created)).collect();
                        tx.keep_written(key, &pairs).await?;
                        Ok(Outcome::Commit(Ok(written)))
                    }
                    .await;
                    (tx, stepped)
                })
            })
            .await;
        match done {
            Err(error) if error.is_raced() => Err(raced(resource)),
            done => done,
        }
    }

    /// Changes the given fields of the record `id` of `answer`'s resource: 404 outside the
    /// caller's scope, 403 when the caller may not write it, 422 listing every problem, 409
    /// for a natural key taken, 412 under an `If-Match` precondition the record's version
    /// does not meet. Returns the record's version after the write and the answer: the
    /// record as `answer` (a by-id read of it, as the caller sees it) shows it after the
    /// write, `None` when the caller no longer sees it.
    ///
    /// The record is first checked unlocked and written on condition that its version did
    /// not move ([`Begin::CheckingFirst`]: on PostgreSQL a `PATCH` of one record is then
    /// two statements, the check and the write, neither of them `BEGIN` or `COMMIT`); a
    /// record that changed meanwhile is checked again with its row locked until the commit,
    /// as every other write does. On PostgreSQL the statement that writes and commits reads
    /// the answer's record too, from the row it wrote ([`WriteTx::answer_with`]), and only
    /// its expansions are read apart; on SQLite, and when the `PATCH` ran again the locking
    /// way, the record is read after the commit.
    pub async fn update_record_answered(
        &self,
        id: &str,
        values: &WriteValues,
        writer: &Writer<'_>,
        if_match: Option<&IfMatch>,
        answer: &ReadPlan,
        timing: &Timing,
    ) -> StoreResult<(i64, Option<RenderedPage>)> {
        let resource = answer.resource;
        let id = id.to_ascii_uppercase();
        let plan = WritePlan::retrying(EntryPoint::Update, Begin::CheckingFirst);
        let (checked, committed) = self
            .execute_committed(plan, |mut tx, attempt| {
                let id = id.as_str();
                Box::pin(async move {
                    let stepped = async {
                        if attempt > 0 {
                            // Again, locking: the record is read with its row locked.
                            let version =
                                update_in(&mut tx, resource, id, values, writer, if_match).await?;
                            return Ok(Outcome::Commit(Some(version)));
                        }
                        // Only a PostgreSQL write that checks before it locks can carry its
                        // answer.
                        if tx.commit_can_answer() && !reaches_own_table(answer) {
                            self.answer_within(&mut tx, answer, writer.viewer);
                        }
                        if update_unread_in(&mut tx, resource, id, values, writer, if_match).await?
                        {
                            return Ok(Outcome::Commit(None));
                        }
                        let version =
                            update_in(&mut tx, resource, id, values, writer, if_match).await?;
                        Ok(Outcome::Commit(Some(version)))
                    }
                    .await;
                    (tx, stepped)
                })
            })
            .await?;
        let committed = committed.ok_or(StoreError::Internal)?;
        let version = checked.or(committed.version).ok_or_else(|| {
            crate::db::internal("a PATCH", "its commit did not read the version it wrote")
        })?;
        let rows = committed.answer;
        let page = match rows {
            Some(rows) => {
                self.render_read_by_write(answer, rows, writer.viewer, timing)
                    .await?
            }
            None => self.render_fresh(answer, writer.viewer, timing).await?,
        };
        Ok((version, (page.records > 0).then_some(page)))
    }

    /// Removes the record `id`: 404 outside the caller's scope, 403 when the caller may not
    /// write it, 409 naming what still refers to it.
    pub async fn delete_record(
        &self,
        resource: &'static Resource,
        id: &str,
        writer: &Writer<'_>,
    ) -> StoreResult<()> {
        self.delete_record_if(resource, id, writer, None).await
    }

    /// [`Store::delete_record`] under an `If-Match` precondition (412 when the record's
    /// version is not one it names), checked with the record's row locked.
    pub async fn delete_record_if(
        &self,
        resource: &'static Resource,
        id: &str,
        writer: &Writer<'_>,
        if_match: Option<&IfMatch>,
    ) -> StoreResult<()> {
        let id = id.to_ascii_uppercase();
        self.execute(WritePlan::locking(EntryPoint::Delete), |mut tx, _| {
            let id = id.as_str();
            Box::pin(async move {
                let stepped = delete_in(&mut tx, resource, id, writer, if_match).await;
                (tx, stepped.map(Outcome::Commit))
            })
        })
        .await
    }
}

/// The delete of [`Store::delete_record_if`] inside its transaction.
async fn delete_in(
    tx: &mut WriteTx,
    resource: &'static Resource,
    id: &str,
    writer: &Writer<'_>,
    if_match: Option<&IfMatch>,
) -> StoreResult<()> {
    precondition_in(tx, resource, id, writer, if_match).await?;
    policy::before_removal(tx, resource, writer, id).await?;
    if let Some(flag) = resource.writes.revoked_by {
        // Revoked, not removed: the record stays listed with its flag set.
        let field = resource
            .field_at(flag)
            .expect("the catalog checks the flag");
        tx.update_cells(resource, id, &[(field, Cell::Boolean(true))], None)
            .await?;
        return Ok(());
    }
    let mut referrers = Vec::new();
    for other in catalog().resources() {
        for relation in &other.relations {
            let RelationKind::ToOne { fk } = relation.kind else {
                continue;
            };
            let Some(field) = other.field_named(fk).filter(|f| !f.internal) else {
                continue;
            };
            if relation.target != resource.name {
                continue;
            }
            let count = Query::select()
                .expr(Expr::col(Alias::new("id")).count())
                .from(Alias::new(other.table))
                .and_where(Expr::col(Alias::new(field.column.as_str())).eq(id))
                .to_owned();
            let rows = tx.fetch(&count, &[Kind::Integer]).await?;
            if let Some(Cell::Integer(n)) = rows.first().map(|r| &r[0])
                && *n > 0
            {
                referrers.push(format!("{n} {} ({fk})", other.name));
            }
        }
    }
    if !referrers.is_empty() {
        return Err(StoreError::Conflict {
            detail: format!(
                "The {} '{id}' is still referred to by {}; change or delete those first.",
                resource.name,
                referrers.join(", ")
            ),
            field: None,
        });
    }
    for field in list_fields(resource) {
        tx.replace_list(field, id, &[]).await?;
    }
    let delete = Query::delete()
        .from_table(Alias::new(resource.table))
        .and_where(Expr::col(Alias::new("id")).eq(id))
        .to_owned();
    tx.execute(resource.table, &delete).await?;
    Ok(())
}

/// Inside a write of the record `id`, which it locks: 404 outside the caller's scope, 403
/// when the caller may not write it, then 412 when `if_match` does not name its version (all
/// read by one statement). The scope comes first, so a precondition never tells whether a
/// record exists.
async fn precondition_in(
    tx: &mut WriteTx,
    resource: &'static Resource,
    id: &str,
    writer: &Writer<'_>,
    if_match: Option<&IfMatch>,
) -> StoreResult<()> {
    let found = tx
        .seen_and_writable(resource, &[id.to_string()], writer.viewer)
        .await?;
    let Some(found) = found.get(id) else {
        return Err(not_found(resource, id));
    };
    if !found.writable {
        return Err(forbidden(resource, writer.viewer));
    }
    // The version was read with the row locked, by the same statement.
    match if_match {
        Some(if_match) if !if_match.matches(found.version) => {
            Err(precondition_failed(resource, id, found.version))
        }
        _ => Ok(()),
    }
}

/// 403 for a write of a resource that the caller's user type never writes (docs/API.md, "Writes: master data and catalogue"
/// table), before anything of the body is judged.
fn never_written_by(resource: &Resource, viewer: &Viewer) -> Option<StoreError> {
    let user_type = viewer.user_type();
    (resource.authority_of(WriteAction::Write, user_type) == Scope::Nothing).then(|| {
        StoreError::Refused(format!(
            "A {} user may not create, change or delete {} records.",
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
    StoreError::Refused(format!(
        "A {} user may not write this {}: {rule}.",
        user_type.as_str(),
        resource.name
    ))
}

/// 409 for a create that lost the race for its natural keys [`crate::write::RACE_ATTEMPTS`]
/// times (each attempt sees the records of the writes that took them).
fn raced(resource: &Resource) -> StoreError {
    StoreError::Conflict {
        detail: format!(
            "Concurrent writes kept taking the {} of these {} records; send the write again.",
            resource.writes.natural_key.join(" and "),
            resource.name
        ),
        field: None,
    }
}

/// [`Store::create_records`] inside a transaction of the caller's (the import command runs
/// many resources in one).
pub async fn create_in(
    tx: &mut WriteTx,
    resource: &'static Resource,
    items: &[WriteValues],
    writer: &Writer<'_>,
    upsert: bool,
    indexed: bool,
) -> StoreResult<Vec<Written>> {
    try_create_in(tx, resource, items, writer, upsert, indexed)
        .await?
        .ok_or_else(|| raced(resource))
}

/// [`create_in`], or `None` when a concurrent write took a natural key between the check and
/// the insert (the unique index on natural keys refuses the second record; the caller rolls
/// back and tries again, and then finds the other write's record).
async fn try_create_in(
    tx: &mut WriteTx,
    resource: &'static Resource,
    items: &[WriteValues],
    writer: &Writer<'_>,
    upsert: bool,
    indexed: bool,
) -> StoreResult<Option<Vec<Written>>> {
    if let Some(never) = never_written_by(resource, writer.viewer) {
        return Err(never);
    }
    let index = |i: usize| indexed.then_some(i);
    let mut problems: Vec<FieldError> = items.iter().flat_map(|v| v.problems.clone()).collect();
    let given: Vec<(Option<usize>, &WriteValues)> = items
        .iter()
        .enumerate()
        .map(|(i, v)| (index(i), v))
        .collect();
    let mut memo = RuleMemo::new();
    problems.extend(
        tx.link_problems(resource, &given, writer.viewer, &mut memo)
            .await?,
    );
    let now = tx.now_timestamp();
    let mut records: Vec<Record> = items
        .iter()
        .map(|v| new_record(resource, v, &now, writer))
        .collect();
    for (i, (record, values)) in records.iter().zip(items).enumerate() {
        problems.extend(unset_problems(resource, record, values, index(i)));
    }
    tx.fill_derived(resource, &mut records).await?;
    let indexes: Vec<Option<usize>> = (0..items.len()).map(index).collect();
    problems.extend(tx.agreement_problems(resource, &records, &indexes).await?);
    problems.extend(tx.insecure_url_problems(resource, &records, &indexes));
    // Natural keys: taken by an existing record, or repeated within the write.
    let mut holders: Vec<Option<String>> = vec![None; items.len()];
    let mut seen: HashMap<Vec<String>, usize> = HashMap::new();
    let mut keyed: Vec<(usize, Vec<String>)> = Vec::new();
    for (i, record) in records.iter().enumerate() {
        let Some(key) = key_of(resource, record) else {
            continue;
        };
        if let Some(first) = seen.insert(key.clone(), i) {
            problems.push(problem(
                resource.writes.natural_key.last().copied().unwrap_or("id"),
                format!("repeats the {} of element {first}", key_name(resource)),
                index(i),
            ));
            continue;
        }
        keyed.push((i, key));
    }
    // An optimistic create (one new record, no upsert) leaves its key to the insert, which
    // writes nothing when the key is taken (`ON CONFLICT DO NOTHING`); the write then runs
    // again in a transaction, which finds the holder.
    let keys_left_to_the_insert = tx.is_optimistic() && !upsert;
    if !keys_left_to_the_insert {
        let keys: Vec<Vec<String>> = keyed.iter().map(|(_, key)| key.clone()).collect();
        let mut held = tx.holders_of(resource, &keys).await?;
        for (i, key) in keyed {
            holders[i] = held.remove(&key);
        }
    }
    for (i, record) in records.iter_mut().enumerate() {
        if holders[i].is_none() {
            problems.extend(
                tx.authority_problems(resource, record, None, writer.viewer, index(i), &mut memo)
                    .await?,
            );
            problems.extend(
                policy::problems(tx, resource, writer, record, None, &items[i], index(i)).await?,
            );
        }
    }
    if !problems.is_empty() {
        if keys_left_to_the_insert {
            // A record whose key is taken is not judged as a new one (its answer is 409):
            // the checked way, which knows the holder, tells which.
            return Err(StoreError::raced());
        }
        return Err(sorted(problems));
    }
    let held: Vec<String> = holders.iter().flatten().cloned().collect();
    let seen_holders = seen_ids(tx, resource, &held, writer.viewer).await?;
    let mut written = Vec::with_capacity(items.len());
    let mut fresh = Vec::new();
    let mut existing: Vec<(&str, &WriteValues, Option<usize>)> = Vec::new();
    for (i, record) in records.into_iter().enumerate() {
        match &holders[i] {
            None => {
                written.push(Written {
                    id: record.id().to_string(),
                    created: true,
                    secret: None,
                });
                fresh.push(record);
            }
            Some(holder) if !seen_holders.contains(holder) => {
                return Err(key_taken(resource, None, index(i)));
            }
            Some(holder) if !upsert => {
                return Err(key_taken(resource, Some(holder), index(i)));
            }
            Some(holder) => {
                // Checked above with the create's problems.
                existing.push((holder, &items[i], index(i)));
                written.push(Written {
                    id: holder.clone(),
                    created: false,
                    secret: None,
                });
            }
        }
    }
    update_many_in(tx, resource, &existing, writer).await?;
    policy::before_insert(tx, resource, &fresh).await?;
    let mut secrets = issue_secrets(resource, &mut fresh).into_iter();
    for written in written.iter_mut().filter(|w| w.created) {
        written.secret = secrets.next().flatten();
    }
    if !tx.insert_new_records(resource, &mut fresh).await? {
        return Ok(None);
    }
    Ok(Some(written))
}

/// Gives every new record of a resource with a secret (`Writes::secret`) a fresh one: kept
/// as the catalog says (its hash, or itself, in an internal field; its first characters where
/// declared) and returned, in the records' order, for the create's answer.
fn issue_secrets(resource: &'static Resource, records: &mut [Record]) -> Vec<Option<String>> {
    let Some(secret) = resource.writes.secret else {
        return vec![None; records.len()];
    };
    let (kept_in, hashed) = match secret.kept {
        SecretKept::HashIn(field) => (field, true),
        SecretKept::In(field) => (field, false),
    };
    let kept_at = position_of(resource, kept_in).expect("the catalog checks secret fields");
    let start_at = secret
        .start_in
        .map(|field| position_of(resource, field).expect("the catalog checks secret fields"));
    records
        .iter_mut()
        .map(|record| {
            let text = crate::accounts::new_secret(secret.prefix);
            record.cells[kept_at] = Cell::Text(if hashed {
                crate::accounts::secret_hash(&text)
            } else {
                text.clone()
            });
            if let Some(at) = start_at {
                record.cells[at] = Cell::Text(text.chars().take(8).collect());
            }
            Some(text)
        })
        .collect()
}

/// The write of [`Store::update_record_answered`] inside a transaction of the caller's; the
/// record's version after the write.
async fn update_in(
    tx: &mut WriteTx,
    resource: &'static Resource,
    id: &str,
    values: &WriteValues,
    writer: &Writer<'_>,
    if_match: Option<&IfMatch>,
) -> StoreResult<i64> {
    let versions = update_batch_in(tx, resource, &[(id, values, None)], writer, if_match).await?;
    Ok(versions.first().copied().unwrap_or_default())
}

/// A `PATCH` whose values need nothing of the record as stored, written without reading it
/// first: in an optimistic write ([`WriteTx::is_optimistic`]), an update whose `WHERE` asks
/// what [`update_batch_in`] checks before it writes (the record is in the caller's scope,
/// its write rule admits it, `If-Match` names its version), sent with the commit as one
/// statement on PostgreSQL, in the one batch of the write turn on SQLite: one statement
/// fewer. Whether it was; when it writes no row the
/// commit fails with [`StoreError::raced`], and the caller writes again the checked way,
/// which answers 404, 403 or 412 as the order of those checks says.
///
/// Only values that change neither a link (derived fields, the write rules), a natural key,
/// a list, a field another must agree with (`Writes::agreements`), nor a URL that is
/// checked, of a resource with no policy of its own, and with no problem found by the parse:
/// everything else [`update_batch_in`] checks is then about the record as stored.
async fn update_unread_in(
    tx: &mut WriteTx,
    resource: &'static Resource,
    id: &str,
    values: &WriteValues,
    writer: &Writer<'_>,
    if_match: Option<&IfMatch>,
) -> StoreResult<bool> {
    if !tx.is_optimistic() || !needs_no_stored_record(resource, values) {
        return Ok(false);
    }
    let viewer = writer.viewer;
    let mut conditions: Vec<Expr> = [
        viewer.scope(resource),
        viewer.authority(resource, WriteAction::Write),
    ]
    .iter()
    .filter(|rule| !rule.is_always())
    .map(condition)
    .collect();
    if let Some(IfMatch::Versions(versions)) = if_match {
        conditions.push(Expr::col(Alias::new(ROW_VERSION)).is_in(versions.iter().copied()));
    }
    tx.update_cells_unread(resource, id, &values.cells, conditions)
        .await?;
    Ok(true)
}

/// Whether an update's values can be written without the record as stored
/// ([`update_unread_in`]).
fn needs_no_stored_record(resource: &'static Resource, values: &WriteValues) -> bool {
    let writes = &resource.writes;
    writes.policy.is_none()
        && values.problems.is_empty()
        && values.lists.is_empty()
        && !values.cells.is_empty()
        && values.cells.iter().all(|(field, _)| {
            let path = field.path.as_str();
            field.ty != FieldType::Id
                && !field.stamped
                && field.derived_from.is_none()
                && field.domain != Some(Domain::SecureUrl)
                && writes.update.contains(&path)
                && !writes.natural_key.contains(&path)
                && !writes.agreements.iter().any(|(_, own)| *own == path)
        })
}

/// An upsert's records that exist already, at most this many checked and updated together.
const UPDATES_PER_BATCH: usize = 500;

/// Updates records of one resource, each `(id, values, index)` (`index` where the write was
/// an array) as [`Store::update_record_answered`] does one: reads, checks and derived fields
/// in batches, every problem of every record in one 422, then one `UPDATE` a record. An
/// upsert's existing records go through here together instead of one at a time.
async fn update_many_in(
    tx: &mut WriteTx,
    resource: &'static Resource,
    updates: &[(&str, &WriteValues, Option<usize>)],
    writer: &Writer<'_>,
) -> StoreResult<Vec<i64>> {
    let mut versions = Vec::with_capacity(updates.len());
    for batch in updates.chunks(UPDATES_PER_BATCH) {
        versions.extend(update_batch_in(tx, resource, batch, writer, None).await?);
    }
    Ok(versions)
}

/// [`update_many_in`] of one batch; for each update, its record's version after the write.
/// `if_match` (a single `PATCH`'s precondition) is checked against the version the scope
/// check read with the row locked: 404, then 403, then 412, in one statement.
async fn update_batch_in(
    tx: &mut WriteTx,
    resource: &'static Resource,
    updates: &[(&str, &WriteValues, Option<usize>)],
    writer: &Writer<'_>,
    if_match: Option<&IfMatch>,
) -> StoreResult<Vec<i64>> {
    let at = |error: StoreError, index: Option<usize>| match index {
        Some(i) => error.at_element(i),
        None => error,
    };
    let ids: Vec<String> = updates.iter().map(|(id, _, _)| id.to_string()).collect();
    let mut found = tx.seen_and_writable(resource, &ids, writer.viewer).await?;
    if let Some((id, _, index)) = updates.iter().find(|(id, _, _)| !found.contains_key(*id)) {
        return Err(at(not_found(resource, id), *index));
    }
    if let Some((_, _, index)) = updates
        .iter()
        .find(|(id, _, _)| !found.get(*id).is_some_and(|f| f.writable))
    {
        return Err(at(forbidden(resource, writer.viewer), *index));
    }
    // The versions were read with the rows locked, by the same statement; a precondition
    // comes after the scope, so it never tells whether a record exists.
    if let Some(if_match) = if_match {
        for (id, _, index) in updates {
            let version = found.get(*id).map_or(0, |f| f.version);
            if !if_match.matches(version) {
                return Err(at(precondition_failed(resource, id, version), *index));
            }
        }
    }
    let mut loaded: Vec<Record> = found.values_mut().filter_map(|f| f.record.take()).collect();
    tx.load_lists(resource, &mut loaded).await?;
    let mut by_id: HashMap<String, Record> = loaded
        .into_iter()
        .map(|record| (record.id().to_string(), record))
        .collect();
    let mut problems: Vec<FieldError> = Vec::new();
    let mut records = Vec::with_capacity(updates.len());
    let mut befores = Vec::with_capacity(updates.len());
    let mut all_changes = Vec::with_capacity(updates.len());
    let mut all_list_changes = Vec::with_capacity(updates.len());
    for (id, values, index) in updates {
        let Some(mut record) = by_id.remove(*id) else {
            return Err(at(not_found(resource, id), *index));
        };
        // Fields an update may not change are refused by the parse; an upsert's body may
        // repeat the natural key and its fixed links unchanged.
        let changes: Vec<(&'static Field, Cell)> = values
            .cells
            .iter()
            .filter(|(field, cell)| cell_of(resource, &record, &field.path) != Some(cell))
            .cloned()
            .collect();
        let list_changes: Vec<(usize, &'static Field, Vec<String>)> = list_fields(resource)
            .into_iter()
            .enumerate()
            .filter_map(|(i, field)| {
                values
                    .list(&field.path)
                    .filter(|given| **given != record.lists[i])
                    .map(|given| (i, field, given.clone()))
            })
            .collect();
        problems.extend(values.problems.iter().map(|p| FieldError {
            index: *index,
            ..p.clone()
        }));
        let changed_paths = changes
            .iter()
            .map(|(field, _)| *field)
            .chain(list_changes.iter().map(|(_, field, _)| *field));
        for field in changed_paths {
            if !resource.writes.update.contains(&field.path.as_str())
                && !values.has_problem(&field.path)
            {
                problems.push(problem(&field.path, "cannot be changed".into(), *index));
            }
        }
        befores.push(record.clone());
        for (field, cell) in &changes {
            if let Some(i) = position_of(resource, &field.path) {
                record.cells[i] = cell.clone();
            }
        }
        for (i, _, given) in &list_changes {
            record.lists[*i].clone_from(given);
        }
        records.push(record);
        all_changes.push(changes);
        all_list_changes.push(list_changes);
    }
    let given: Vec<(Option<usize>, &WriteValues)> = updates
        .iter()
        .map(|(_, values, index)| (*index, *values))
        .collect();
    let mut memo = RuleMemo::new();
    problems.extend(
        tx.link_problems(resource, &given, writer.viewer, &mut memo)
            .await?,
    );
    // Derived fields follow a changed link.
    let relinked: Vec<usize> = all_changes
        .iter()
        .enumerate()
        .filter(|(_, changes)| {
            changes.iter().any(|(field, _)| {
                stored_fields(resource).iter().any(|f| {
                    f.derived_from
                        .and_then(|path| path.split('.').next())
                        .and_then(|link| resource.relation(link))
                        .is_some_and(|r| r.kind == (RelationKind::ToOne { fk: field.name }))
                })
            })
        })
        .map(|(i, _)| i)
        .collect();
    if !relinked.is_empty() {
        let mut moved: Vec<Record> = relinked.iter().map(|i| records[*i].clone()).collect();
        tx.fill_derived(resource, &mut moved).await?;
        for (i, record) in relinked.iter().zip(moved) {
            records[*i] = record;
        }
    }
    // Stamped fields record every write; whatever else the record now holds differently
    // (derived fields) is written with the changes.
    let now = tx.now_timestamp();
    for ((record, before), changes) in records.iter_mut().zip(&befores).zip(&mut all_changes) {
        for (i, field) in stored_fields(resource).into_iter().enumerate() {
            if field.stamped {
                record.cells[i] = Cell::Text(now.clone());
            }
            if (field.stamped || record.cells[i] != before.cells[i])
                && !changes.iter().any(|(f, _)| f.path == field.path)
            {
                changes.push((field, record.cells[i].clone()));
            }
        }
    }
    let indexes: Vec<Option<usize>> = updates.iter().map(|(_, _, index)| *index).collect();
    problems.extend(tx.agreement_problems(resource, &records, &indexes).await?);
    problems.extend(tx.insecure_url_problems(resource, &records, &indexes));
    for (((id, values, index), record), before) in
        updates.iter().zip(records.iter_mut()).zip(&befores)
    {
        // The rules judge a record by its ids alone (`known_of`); with none of them changed,
        // the record as it will be is judged as the stored one was by `seen_and_writable`,
        // with its row locked: by the same rules.
        if ids_changed(resource, record, before) {
            problems.extend(
                tx.authority_problems(resource, record, Some(id), writer.viewer, *index, &mut memo)
                    .await?,
            );
        }
        problems.extend(
            policy::problems(tx, resource, writer, record, Some(before), values, *index).await?,
        );
    }
    if !problems.is_empty() {
        return Err(sorted(problems));
    }
    // A natural key moved onto another record's (one that did not move is the record's own).
    let keyed: Vec<(usize, Vec<String>)> = records
        .iter()
        .zip(&befores)
        .enumerate()
        .filter_map(|(i, (record, before))| {
            key_of(resource, record)
                .filter(|key| key_of(resource, before).as_ref() != Some(key))
                .map(|key| (i, key))
        })
        .collect();
    if !keyed.is_empty() {
        let keys: Vec<Vec<String>> = keyed.iter().map(|(_, key)| key.clone()).collect();
        let holders = tx.holders_of(resource, &keys).await?;
        for (i, key) in &keyed {
            if let Some(holder) = holders.get(key)
                && holder != updates[*i].0
            {
                let seen =
                    seen_ids(tx, resource, std::slice::from_ref(holder), writer.viewer).await?;
                let named = seen.contains(holder).then_some(holder.as_str());
                return Err(key_taken(resource, named, updates[*i].2));
            }
        }
    }
    let mut versions = Vec::with_capacity(updates.len());
    for ((id, _, _), (changes, list_changes)) in updates
        .iter()
        .zip(all_changes.iter().zip(&all_list_changes))
    {
        let read_at = found.get(*id).map(|f| f.version);
        let moved = tx.update_cells(resource, id, changes, read_at).await?;
        // No other write moves the version meanwhile: the row stays locked until the commit,
        // or (an optimistic write) the update is made only at the version read.
        versions.push(read_at.unwrap_or_default() + i64::from(moved));
        for (_, field, given) in list_changes {
            tx.replace_list(field, id, given).await?;
        }
    }
    Ok(versions)
}

/// What an update found of a record it changes (`WriteTx::seen_and_writable`).
struct Found {
    /// The caller may write it (it sees it, or it would not have been found).
    writable: bool,
    /// Its version as locked.
    version: i64,
    /// The record as stored (list fields empty).
    record: Option<Record>,
}

/// Whether a record about to be written holds other ids (its own, its links, its derived
/// links) than it did.
fn ids_changed(resource: &'static Resource, record: &Record, before: &Record) -> bool {
    stored_fields(resource)
        .iter()
        .zip(record.cells.iter().zip(&before.cells))
        .any(|(field, (now, then))| field.ty == FieldType::Id && now != then)
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
                "2026-01-02T03:04:05".to_string()
            ]),
            "ids upper-cased, timestamps as stored (not folded)"
        );
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
