//! The generic write pipeline (CONTRACT §9) for the resources the catalog marks as written by
//! it: creates (one record or many, all or nothing), upserts on natural keys, updates and
//! deletes. Everything a write needs to know comes from the catalog (writable fields, foreign
//! keys and their targets, natural keys, write and scope rules); nothing here names a
//! resource. Every problem of a write is gathered before anything is written, and each write
//! runs in one [`WriteTx`], so table versions are bumped and caches stay correct.

use crate::db::{Kind, Store, WriteTx};
use crate::ids::{new_id, now_timestamp};
use crate::rights::outcomes;
use crate::write::{cell_value, folded_value};
use brandhub_catalog::{
    Cell, Field, FieldType, Record, RelationKind, Resource, Scope, UserType, WriteAction, catalog,
    record::stored_fields,
};
use brandhub_problem::{ApiError, ApiResult, Code, FieldError};
use brandhub_query::judge::{Known, Verdict, judge};
use brandhub_query::plan::Viewer;
use brandhub_query::sql::satisfying_ids;
use brandhub_query::text::fold;
use brandhub_query::write::{WriteValues, validation_failed};
use sea_query::{Alias, Condition, Expr, ExprTrait, Query};
use std::collections::{HashMap, HashSet};

/// What a create did with one record of its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub id: String,
    /// `false` when an upsert changed an existing record instead.
    pub created: bool,
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

/// The public foreign keys of a resource with their targets.
fn links(resource: &'static Resource) -> Vec<(&'static Field, &'static Resource)> {
    resource
        .fields
        .iter()
        .filter(|f| f.ty == FieldType::Id && f.relation.is_some() && !f.internal)
        .filter_map(|f| target_of(resource, f).map(|t| (f, t)))
        .collect()
}

fn not_found(resource: &Resource, id: &str) -> ApiError {
    ApiError::new(
        Code::NotFound,
        format!("There is no {} with id '{id}'.", resource.name),
    )
}

/// A problem of the record at `index` (array writes only carry it).
fn problem(field: &str, message: String, index: Option<usize>) -> FieldError {
    FieldError {
        field: field.to_string(),
        message,
        index,
    }
}

/// The record a create makes of its values: a new id, `createdDate` now where the resource
/// has one, the given values, and every other field unset.
fn new_record(resource: &'static Resource, values: &WriteValues) -> Record {
    let mut record = Record::empty(resource);
    for (field, cell) in stored_fields(resource).into_iter().zip(&mut record.cells) {
        if field.path == "id" {
            *cell = Cell::Text(new_id());
        } else if field.path == "createdDate" {
            *cell = Cell::Text(now_timestamp());
        } else if let Some(given) = values.cell(&field.path) {
            *cell = given.clone();
        }
    }
    record
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

/// The value of a field in a record.
fn cell_of<'r>(resource: &Resource, record: &'r Record, path: &str) -> Option<&'r Cell> {
    stored_fields(resource)
        .into_iter()
        .position(|f| f.path == path)
        .map(|i| &record.cells[i])
}

/// The natural key of a record as comparable text (text folded, ids upper-cased); `None`
/// when the resource has none or a part is unset.
fn key_of(resource: &'static Resource, record: &Record) -> Option<Vec<String>> {
    let key = &resource.writes.natural_key;
    if key.is_empty() {
        return None;
    }
    key.iter()
        .map(|path| {
            let text = cell_of(resource, record, path)?.as_text()?;
            (!text.is_empty()).then(|| fold(text))
        })
        .collect()
}

/// Reads a rule's verdict on a record about to be written, as problems (nothing when it
/// holds). `why` says what the rule is.
async fn rule_problems(
    tx: &mut WriteTx,
    resource: &'static Resource,
    rule: &Scope,
    viewer: &Viewer,
    known: &Known,
    why: &str,
    index: Option<usize>,
) -> ApiResult<Vec<FieldError>> {
    let judgement = judge(resource, rule, viewer, known);
    let outcomes = outcomes(tx, &judgement).await?;
    if judgement.verdict(&outcomes) == Verdict::Yes {
        return Ok(Vec::new());
    }
    let mut problems: Vec<FieldError> = judgement
        .refused(&outcomes)
        .into_iter()
        .filter(|term| term.path != "id")
        .map(|term| {
            problem(
                term.path.split('.').next().unwrap_or(term.path),
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
    /// The ids among `ids` of `resource` that satisfy the caller's scope.
    async fn visible_ids(
        &mut self,
        resource: &'static Resource,
        ids: &[String],
        viewer: &Viewer,
    ) -> ApiResult<HashSet<String>> {
        if ids.is_empty() {
            return Ok(HashSet::new());
        }
        let statement = satisfying_ids(resource, ids, &viewer.scope(resource));
        Ok(self
            .fetch(&statement, &[Kind::Text])
            .await?
            .into_iter()
            .filter_map(|row| row[0].as_text().map(str::to_string))
            .collect())
    }

    /// Problems of foreign keys that name no record the caller sees (one statement per
    /// foreign key field, for every record of the write).
    async fn link_problems(
        &mut self,
        resource: &'static Resource,
        records: &[(Option<usize>, &WriteValues)],
        viewer: &Viewer,
    ) -> ApiResult<Vec<FieldError>> {
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
            let found = self.visible_ids(target, &ids, viewer).await?;
            for (index, id) in given {
                if !found.contains(&id) {
                    problems.push(problem(
                        &field.path,
                        format!("no {} with id '{id}' exists for the caller", target.name),
                        index,
                    ));
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
    ) -> ApiResult<Vec<FieldError>> {
        if viewer.user_type() == UserType::Admin {
            return Ok(Vec::new());
        }
        let known = known_of(resource, record, own_id);
        let kind = viewer.user_type().as_str();
        let why = format!("a {kind} user may not write such a {}", resource.name);
        let rule = resource.authority_of(WriteAction::Write, viewer.user_type());
        let mut problems =
            rule_problems(self, resource, &rule, viewer, &known, &why, index).await?;
        if problems.is_empty() {
            let why = format!(
                "the {} would be outside what the caller sees",
                resource.name
            );
            let scope = resource.scope_of(viewer.user_type());
            problems = rule_problems(self, resource, &scope, viewer, &known, &why, index).await?;
        }
        Ok(problems)
    }

    /// The id of the record that holds a natural key, other than `except`.
    async fn holder_of(
        &mut self,
        resource: &'static Resource,
        key: &[String],
        except: Option<&str>,
    ) -> ApiResult<Option<String>> {
        let mut condition = Condition::all();
        for (path, value) in resource.writes.natural_key.iter().zip(key) {
            let field = resource.field_at(path).expect("natural keys are fields");
            let column = field
                .folded_column()
                .unwrap_or_else(|| field.column.clone());
            let value = if field.ty == FieldType::Id {
                value.to_ascii_uppercase()
            } else {
                value.clone()
            };
            condition = condition.add(Expr::col(Alias::new(column)).eq(value));
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

    /// Whether the caller sees and may write the existing record `id`.
    async fn may_write(
        &mut self,
        resource: &'static Resource,
        id: &str,
        viewer: &Viewer,
    ) -> ApiResult<(bool, bool)> {
        let ids = [id.to_string()];
        let sees = !self.visible_ids(resource, &ids, viewer).await?.is_empty();
        if !sees {
            return Ok((false, false));
        }
        let statement = satisfying_ids(
            resource,
            &ids,
            &viewer.authority(resource, WriteAction::Write),
        );
        let writes = !self.fetch(&statement, &[Kind::Text]).await?.is_empty();
        Ok((true, writes))
    }

    /// Sets the given fields (and their folded copies) of the record `id`.
    async fn update_cells(
        &mut self,
        resource: &'static Resource,
        id: &str,
        cells: &[(&'static Field, Cell)],
    ) -> ApiResult<()> {
        if cells.is_empty() {
            return Ok(());
        }
        let mut update = Query::update();
        update.table(Alias::new(resource.table));
        for (field, cell) in cells {
            update.value(Alias::new(field.column.as_str()), cell_value(field, cell));
            if let Some(folded) = field.folded_column() {
                update.value(Alias::new(folded), folded_value(cell));
            }
        }
        update.and_where(Expr::col(Alias::new("id")).eq(id));
        self.execute(resource.table, &update).await?;
        Ok(())
    }
}

/// 409 for a natural key taken by another record.
fn key_taken(resource: &Resource, holder: &str, index: Option<usize>) -> ApiError {
    let at = index.map(|i| format!(" (element {i})")).unwrap_or_default();
    ApiError::new(
        Code::Conflict,
        format!(
            "A {} with the same {} exists already{at}: id '{holder}'. Send ?upsert=true to change it instead.",
            resource.name,
            resource.writes.natural_key.join(" and ")
        ),
    )
    .with_field(resource.writes.natural_key.join(","))
}

fn sorted(mut problems: Vec<FieldError>) -> ApiError {
    problems.sort_by(|a, b| (a.index, &a.field).cmp(&(b.index, &b.field)));
    validation_failed(problems)
}

impl Store {
    /// Creates the records of a write (all or none); with `upsert`, a record whose natural key
    /// is taken changes that record instead (it must be one the caller may write). `indexed`
    /// says whether the body was an array (problems then carry each record's index).
    pub async fn create_records(
        &self,
        resource: &'static Resource,
        items: &[WriteValues],
        viewer: &Viewer,
        upsert: bool,
        indexed: bool,
    ) -> ApiResult<Vec<Written>> {
        let mut tx = self.begin().await?;
        let written = create_in(&mut tx, resource, items, viewer, upsert, indexed).await?;
        tx.commit().await?;
        Ok(written)
    }

    /// Changes the given fields of the record `id`: 404 outside the caller's scope, 403 when
    /// the caller may not write it, 422 listing every problem, 409 for a natural key taken.
    pub async fn update_record(
        &self,
        resource: &'static Resource,
        id: &str,
        values: &WriteValues,
        viewer: &Viewer,
    ) -> ApiResult<()> {
        let id = id.to_ascii_uppercase();
        let mut tx = self.begin().await?;
        update_in(&mut tx, resource, &id, values, viewer).await?;
        tx.commit().await
    }

    /// Removes the record `id`: 404 outside the caller's scope, 403 when the caller may not
    /// write it, 409 naming what still refers to it.
    pub async fn delete_record(
        &self,
        resource: &'static Resource,
        id: &str,
        viewer: &Viewer,
    ) -> ApiResult<()> {
        let id = id.to_ascii_uppercase();
        let mut tx = self.begin().await?;
        match tx.may_write(resource, &id, viewer).await? {
            (false, _) => return Err(not_found(resource, &id)),
            (true, false) => return Err(forbidden(resource, viewer)),
            (true, true) => {}
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
                    .and_where(Expr::col(Alias::new(field.column.as_str())).eq(id.as_str()))
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
            return Err(ApiError::new(
                Code::Conflict,
                format!(
                    "The {} '{id}' is still referred to by {}; change or delete those first.",
                    resource.name,
                    referrers.join(", ")
                ),
            ));
        }
        let delete = Query::delete()
            .from_table(Alias::new(resource.table))
            .and_where(Expr::col(Alias::new("id")).eq(id.as_str()))
            .to_owned();
        tx.execute(resource.table, &delete).await?;
        tx.commit().await
    }
}

fn forbidden(resource: &Resource, viewer: &Viewer) -> ApiError {
    ApiError::new(
        Code::Forbidden,
        format!(
            "A {} user may not write this {} (see who writes what in the API reference).",
            viewer.user_type().as_str(),
            resource.name
        ),
    )
}

/// [`Store::create_records`] inside a transaction of the caller's (the import command runs
/// many resources in one).
pub async fn create_in(
    tx: &mut WriteTx,
    resource: &'static Resource,
    items: &[WriteValues],
    viewer: &Viewer,
    upsert: bool,
    indexed: bool,
) -> ApiResult<Vec<Written>> {
    let index = |i: usize| indexed.then_some(i);
    let mut problems: Vec<FieldError> = items.iter().flat_map(|v| v.problems.clone()).collect();
    let given: Vec<(Option<usize>, &WriteValues)> = items
        .iter()
        .enumerate()
        .map(|(i, v)| (index(i), v))
        .collect();
    problems.extend(tx.link_problems(resource, &given, viewer).await?);
    let records: Vec<Record> = items.iter().map(|v| new_record(resource, v)).collect();
    // Natural keys: taken by an existing record, or repeated within the write.
    let mut holders: Vec<Option<String>> = vec![None; items.len()];
    let mut seen: HashMap<Vec<String>, usize> = HashMap::new();
    for (i, record) in records.iter().enumerate() {
        let Some(key) = key_of(resource, record) else {
            continue;
        };
        if let Some(first) = seen.insert(key.clone(), i) {
            problems.push(problem(
                resource.writes.natural_key.last().copied().unwrap_or("id"),
                format!(
                    "repeats the {} of element {first}",
                    resource.writes.natural_key.join(" and ")
                ),
                index(i),
            ));
            continue;
        }
        holders[i] = tx.holder_of(resource, &key, None).await?;
    }
    for (i, record) in records.iter().enumerate() {
        if holders[i].is_none() {
            problems.extend(
                tx.authority_problems(resource, record, None, viewer, index(i))
                    .await?,
            );
        }
    }
    if !problems.is_empty() {
        return Err(sorted(problems));
    }
    let mut written = Vec::with_capacity(items.len());
    let mut fresh = Vec::new();
    for (i, record) in records.into_iter().enumerate() {
        match &holders[i] {
            None => {
                written.push(Written {
                    id: record.id().to_string(),
                    created: true,
                });
                fresh.push(record);
            }
            Some(holder) if !upsert => return Err(key_taken(resource, holder, index(i))),
            Some(holder) => {
                let mut values = items[i].clone();
                values.problems.clear();
                update_in(tx, resource, holder, &values, viewer)
                    .await
                    .map_err(|mut error| {
                        if let Some(i) = index(i) {
                            error.detail = format!("Element {i}: {}", error.detail);
                            for problem in &mut error.errors {
                                problem.index = Some(i);
                            }
                        }
                        error
                    })?;
                written.push(Written {
                    id: holder.clone(),
                    created: false,
                });
            }
        }
    }
    tx.insert_records(resource, &fresh).await?;
    Ok(written)
}

/// [`Store::update_record`] inside a transaction of the caller's.
async fn update_in(
    tx: &mut WriteTx,
    resource: &'static Resource,
    id: &str,
    values: &WriteValues,
    viewer: &Viewer,
) -> ApiResult<()> {
    match tx.may_write(resource, id, viewer).await? {
        (false, _) => return Err(not_found(resource, id)),
        (true, false) => return Err(forbidden(resource, viewer)),
        (true, true) => {}
    }
    let condition = Condition::all().add(Expr::col(Alias::new("id")).eq(id));
    let Some(mut record) = tx.load_records(resource, condition).await?.pop() else {
        return Err(not_found(resource, id));
    };
    // Fields an update may not change are refused by the parse; an upsert's body may repeat
    // the natural key and its fixed links unchanged.
    let changes: Vec<(&'static Field, Cell)> = values
        .cells
        .iter()
        .filter(|(field, cell)| cell_of(resource, &record, &field.path) != Some(cell))
        .cloned()
        .collect();
    let mut problems = values.problems.clone();
    for (field, _) in &changes {
        if !resource.writes.update.contains(&field.path.as_str())
            && !values.has_problem(&field.path)
        {
            problems.push(problem(&field.path, "cannot be changed".into(), None));
        }
    }
    problems.extend(
        tx.link_problems(resource, &[(None, values)], viewer)
            .await?,
    );
    for (field, cell) in &changes {
        if let Some(i) = stored_fields(resource)
            .iter()
            .position(|f| f.path == field.path)
        {
            record.cells[i] = cell.clone();
        }
    }
    problems.extend(
        tx.authority_problems(resource, &record, Some(id), viewer, None)
            .await?,
    );
    if !problems.is_empty() {
        return Err(sorted(problems));
    }
    if let Some(key) = key_of(resource, &record)
        && let Some(holder) = tx.holder_of(resource, &key, Some(id)).await?
    {
        return Err(key_taken(resource, &holder, None));
    }
    tx.update_cells(resource, id, &changes).await
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
        let company = catalog().resource("company").unwrap();
        let record = new_record(
            company,
            &parsed(company, r#"{"name": "Acme", "code": "AcMe"}"#),
        );
        assert!(crate::ids::looks_like_id(record.id()));
        let created = cell_of(company, &record, "createdDate").and_then(Cell::as_text);
        assert_eq!(created.map(str::len), Some(19));
        assert_eq!(cell_of(company, &record, "fk_sponsor"), Some(&Cell::Null));
        assert_eq!(key_of(company, &record), Some(vec!["acme".to_string()]));
    }

    #[test]
    fn natural_keys_of_several_parts_need_every_part() {
        let store = catalog().resource("store").unwrap();
        let host = "0123456789abcdef0123456789abcdef";
        let whole = new_record(
            store,
            &parsed(store, &format!(r#"{{"fk_host": "{host}", "code": "UK"}}"#)),
        );
        assert_eq!(
            key_of(store, &whole),
            Some(vec![host.to_string(), "uk".to_string()])
        );
        let partial = new_record(store, &parsed(store, r#"{"code": "UK"}"#));
        assert_eq!(key_of(store, &partial), None);
    }

    #[test]
    fn links_are_the_public_foreign_keys_with_their_targets() {
        let brand_store = catalog().resource("brandStore").unwrap();
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
        let variant = catalog().resource("variant").unwrap();
        assert!(
            links(variant)
                .iter()
                .all(|(f, _)| f.name != "fk_scopeBrand")
        );
    }
}
