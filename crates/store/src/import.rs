//! `brandhub import`: a set-up document `{"company": [...], "brand": [...], …}` applied
//! through the write pipeline ([`crate::records`]) in one transaction, as an admin, upserting
//! by natural key (docs/API.md, "Writes: master data and catalogue", setting up without demo data). A link may name its target by
//! id or by the target's natural key: `"fk_company": "ACME"`, and for a key of several parts
//! the parts joined by `/` (`"fk_store": "SHOPCO/WEB"`: the store `WEB` of the host `SHOPCO`).

use crate::db::{Kind, Store, WriteTx};
use crate::error::{StoreError, StoreResult};
use crate::ids::looks_like_id;
use crate::records::{Writer, create_in};
use crate::write::{EntryPoint, Outcome, WritePlan};
use brandhub_catalog::{FieldType, RelationKind, Resource, catalog};
use brandhub_problem::{FieldError, Words, words};
use brandhub_query::import::{Sections, parse_document};
use brandhub_query::plan::Viewer;
use brandhub_query::text::fold;
use brandhub_query::write::{WriteMode, parse_object};
use sea_query::{Alias, Condition, Expr, ExprTrait, Query};
use serde_json::Value;
use std::collections::HashMap;

/// What an import did with one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    pub resource: &'static str,
    pub created: usize,
    pub updated: usize,
}

/// The resource a foreign key of `resource` points to.
fn target_of(resource: &'static Resource, name: &str) -> Option<&'static Resource> {
    resource
        .relations
        .iter()
        .find_map(|relation| match relation.kind {
            RelationKind::ToOne { fk } if fk == name => Some(catalog().target(relation)),
            _ => None,
        })
}

/// Links already resolved in this import, by target and text: a document names its brand in
/// every product and its products in every variant. Only found ids are kept (records are
/// never removed during an import, while a missing one may be created by a later section).
type Resolved = HashMap<(&'static str, String), String>;

/// The id of the record of `target` whose natural key is `text` (parts joined by `/`, a
/// part that is itself a link resolved the same way); `None` when there is none.
fn resolve<'a>(
    tx: &'a mut WriteTx,
    target: &'static Resource,
    text: &'a str,
    resolved: &'a mut Resolved,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = StoreResult<Option<String>>> + Send + 'a>> {
    Box::pin(async move {
        if let Some(id) = resolved.get(&(target.name, text.to_string())) {
            return Ok(Some(id.clone()));
        }
        let key = &target.writes.natural_key;
        let parts: Vec<&str> = text.splitn(key.len().max(1), '/').collect();
        if key.is_empty() || parts.len() != key.len() {
            return Ok(None);
        }
        let mut condition = Condition::all();
        for (path, part) in key.iter().zip(parts) {
            let field = target.field_at(path).expect("natural keys are fields");
            if field.ty == FieldType::Id {
                let id = if looks_like_id(part) {
                    Some(part.to_ascii_uppercase())
                } else {
                    match target_of(target, path) {
                        Some(next) => resolve(tx, next, part, resolved).await?,
                        None => None,
                    }
                };
                let Some(id) = id else { return Ok(None) };
                condition = condition.add(Expr::col(Alias::new(field.column.as_str())).eq(id));
            } else {
                let column = field
                    .folded_column()
                    .unwrap_or_else(|| field.column.clone());
                condition = condition.add(Expr::col(Alias::new(column)).eq(fold(part)));
            }
        }
        let statement = Query::select()
            .column(Alias::new("id"))
            .from(Alias::new(target.table))
            .cond_where(condition)
            .limit(2)
            .to_owned();
        let rows = tx.fetch(&statement, &[Kind::Text]).await?;
        let found = match rows.as_slice() {
            [one] => one[0].as_text().map(str::to_string),
            _ => None,
        };
        if let Some(id) = &found {
            resolved.insert((target.name, text.to_string()), id.clone());
        }
        Ok(found)
    })
}

impl Store {
    /// Applies a set-up document in one transaction (everything or nothing), resources in
    /// the catalog's order so that links may name records created earlier in the document.
    pub async fn import(&self, text: &[u8]) -> StoreResult<Vec<Imported>> {
        let sections = parse_document(text)?;
        self.execute(WritePlan::locking(EntryPoint::Import), |mut tx, _| {
            let sections = sections.clone();
            Box::pin(async move {
                let stepped = import_in(&mut tx, sections).await;
                (tx, stepped.map(Outcome::Commit))
            })
        })
        .await
    }
}

/// The records of a set-up document's sections written inside the import's transaction.
async fn import_in(tx: &mut WriteTx, sections: Sections) -> StoreResult<Vec<Imported>> {
    let admin = Viewer::admin();
    let mut done = Vec::new();
    let mut resolved = Resolved::new();
    for (resource, items) in sections {
        let mut values = Vec::with_capacity(items.len());
        let mut problems = Vec::new();
        for (index, mut object) in items.into_iter().enumerate() {
            for (name, value) in object.iter_mut() {
                let (Some(target), Value::String(text)) = (target_of(resource, name), &value)
                else {
                    continue;
                };
                if text.is_empty() || looks_like_id(text) {
                    continue;
                }
                match resolve(tx, target, text, &mut resolved).await? {
                    Some(id) => *value = Value::String(id),
                    None => problems.push(FieldError {
                        field: name.clone(),
                        message: words!(
                            "no {} has the {} '{text}'",
                            "kein {} hat {} '{text}'",
                            target.name,
                            target.natural_key_names().join("/")
                        ),
                        index: Some(index),
                    }),
                }
            }
            let mut parsed = parse_object(resource, WriteMode::Create, &object, &admin).map_err(
                |mut error| {
                    error.detail = error
                        .detail
                        .led_by(Words::english(format!("{}[{index}]: ", resource.name)));
                    error
                },
            )?;
            // One problem per field: an unresolved link is not also "not an id".
            for mut problem in std::mem::take(&mut parsed.problems) {
                problem.index = Some(index);
                if !problems
                    .iter()
                    .any(|p: &FieldError| p.index == problem.index && p.field == problem.field)
                {
                    problems.push(problem);
                }
            }
            values.push(parsed);
        }
        if !problems.is_empty() {
            return Err(StoreError::invalid(problems).about(resource.name));
        }
        let written = create_in(tx, resource, &values, &Writer::of(&admin), true, true)
            .await
            .map_err(|error| error.about(resource.name))?;
        let created = written.iter().filter(|w| w.created).count();
        done.push(Imported {
            resource: resource.name,
            created,
            updated: written.len() - created,
        });
    }
    Ok(done)
}
