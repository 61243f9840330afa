//! A user's rights as they are now: its [`Principal`] (type, status and the ids the catalog's
//! scope and write rules compare with), read fresh wherever a right is checked (on a key's
//! first use after any change to users, in a file's processing transaction), and the
//! [`verdict`] of a rule judged by `brandhub_query::judge`, whose record checks run here.

use crate::db::{Kind, Store, Timing, WriteTx};
use crate::error::{StoreError, StoreResult};
use brandhub_catalog::{Cell, Resource, UserType, WriteAction};
use brandhub_problem::{FieldError, Words};
use brandhub_query::judge::{Judgement, Known, Verdict, judge};
use brandhub_query::plan::Viewer;
use brandhub_query::sql::satisfying_ids;
use sea_query::{Alias, Expr, ExprTrait, Query, SelectStatement};
use std::collections::HashSet;
use std::future::Future;

/// Something that runs selects: the store's pool, or a write transaction (which then reads
/// under its own locks what it is about to change).
pub trait Reads: Send {
    /// Runs a select and decodes each row by `kinds`.
    fn read(
        &mut self,
        statement: &SelectStatement,
        kinds: &[Kind],
    ) -> impl Future<Output = StoreResult<Vec<Vec<Cell>>>> + Send;
}

impl Reads for &Store {
    async fn read(
        &mut self,
        statement: &SelectStatement,
        kinds: &[Kind],
    ) -> StoreResult<Vec<Vec<Cell>>> {
        self.fetch(statement, kinds, &Timing::default()).await
    }
}

impl Reads for WriteTx {
    async fn read(
        &mut self,
        statement: &SelectStatement,
        kinds: &[Kind],
    ) -> StoreResult<Vec<Vec<Cell>>> {
        self.fetch(statement, kinds).await
    }
}

/// A user as the rules see it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub user_id: String,
    pub email: String,
    pub user_type: UserType,
    /// `status` is `active`: a disabled user has no rights at all.
    pub active: bool,
    pub company: Option<String>,
    pub companies: Vec<String>,
    pub host: Option<String>,
    pub warehouse: Option<String>,
    pub sponsor: Option<String>,
    /// The companies whose data the user's scope covers: for a company user its
    /// `fk_company` and `detail.companies`; for a sponsor user the sponsor company and every
    /// company it sponsors; empty for the other types.
    pub scope_companies: Vec<String>,
}

impl Principal {
    /// The user's view of the catalog and the data: what scope and write rules compare with.
    pub fn viewer(&self) -> Viewer {
        Viewer::new(
            self.user_type,
            &self.user_id,
            self.scope_companies.clone(),
            self.host.clone(),
            self.warehouse.clone(),
        )
        .with_sponsor(self.sponsor.clone())
    }
}

fn texts(rows: Vec<Vec<Cell>>) -> Vec<String> {
    rows.into_iter()
        .filter_map(|row| row[0].as_text().map(str::to_string))
        .collect()
}

/// The user with this id as it is now; `None` when there is none (or its type is unknown).
pub async fn principal<R: Reads>(reader: &mut R, user_id: &str) -> StoreResult<Option<Principal>> {
    let user_id = user_id.to_ascii_uppercase();
    let user = Query::select()
        .columns(
            [
                "email",
                "type",
                "status",
                "fk_company",
                "fk_host",
                "fk_warehouse",
                "fk_sponsor",
            ]
            .map(Alias::new),
        )
        .from(Alias::new("users"))
        .and_where(Expr::col(Alias::new("id")).eq(user_id.as_str()))
        .to_owned();
    let rows = reader.read(&user, &[Kind::Text; 7]).await?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let text = |i: usize| row[i].as_text().map(str::to_string);
    let Some(user_type) = row[1].as_text().and_then(UserType::parse) else {
        return Ok(None);
    };
    let companies = Query::select()
        .column(Alias::new("company_id"))
        .from(Alias::new("user_company"))
        .and_where(Expr::col(Alias::new("user_id")).eq(user_id.as_str()))
        .order_by(Alias::new("position"), sea_query::Order::Asc)
        .to_owned();
    let companies = texts(reader.read(&companies, &[Kind::Text]).await?);
    let (company, sponsor) = (text(3), text(6));
    let scope_companies = match (user_type, &sponsor) {
        (UserType::Company, _) => company.iter().chain(&companies).cloned().collect(),
        (UserType::Sponsor, Some(sponsor)) => {
            let sponsored = Query::select()
                .column(Alias::new("id"))
                .from(Alias::new("company"))
                .cond_where(
                    Expr::col(Alias::new("id"))
                        .eq(sponsor.as_str())
                        .or(Expr::col(Alias::new("fk_sponsor")).eq(sponsor.as_str())),
                )
                .to_owned();
            texts(reader.read(&sponsored, &[Kind::Text]).await?)
        }
        _ => Vec::new(),
    };
    Ok(Some(Principal {
        user_id,
        email: text(0).unwrap_or_default(),
        user_type,
        active: row[2].as_text() == Some("active"),
        company,
        companies,
        host: text(4),
        warehouse: text(5),
        sponsor,
        scope_companies,
    }))
}

/// The ids among `ids` of `resource` that `viewer` sees (its scope, docs/API.md, "Scope: who sees what"), in one
/// statement: the records a foreign key of a write may name (a JSON write's links,
/// `records`), and those an upload's part name may name (a price file's host). A record that
/// does not exist is not seen either, so the two answer alike.
pub async fn seen_ids<R: Reads>(
    reader: &mut R,
    resource: &'static Resource,
    ids: &[String],
    viewer: &Viewer,
) -> StoreResult<HashSet<String>> {
    if ids.is_empty() {
        return Ok(HashSet::new());
    }
    let statement = satisfying_ids(resource, ids, &viewer.scope(resource));
    Ok(texts(reader.read(&statement, &[Kind::Text]).await?)
        .into_iter()
        .collect())
}

/// What a judged rule says, once its record checks have run (one statement each).
pub async fn verdict<R: Reads>(reader: &mut R, judgement: &Judgement) -> StoreResult<Verdict> {
    Ok(judgement.verdict(&outcomes(reader, judgement).await?))
}

/// The outcomes of a judgement's record checks, in order (for [`Judgement::verdict`] and
/// [`Judgement::refused`]).
pub async fn outcomes<R: Reads>(reader: &mut R, judgement: &Judgement) -> StoreResult<Vec<bool>> {
    let mut outcomes = Vec::new();
    for (resource, id, predicate) in judgement.record_checks() {
        let statement = satisfying_ids(resource, &[id.to_string()], predicate);
        outcomes.push(!reader.read(&statement, &[Kind::Text]).await?.is_empty());
    }
    Ok(outcomes)
}

/// The refusal of a new record by a rule: 422 naming each term found false (a term on the
/// new record's own `id` names nothing the caller sent, so it is not listed).
fn refusal(resource: &Resource, judgement: &Judgement, outcomes: &[bool], why: &str) -> StoreError {
    let mut errors: Vec<FieldError> = judgement
        .refused(outcomes)
        .into_iter()
        .filter(|term| term.path != "id")
        .map(|term| FieldError {
            field: term.path.split('.').next().unwrap_or(term.path).to_string(),
            message: Words::english(format!("is not {}: {why}", term.anchor.describe())),
            index: None,
        })
        .collect();
    if errors.is_empty() {
        errors.push(FieldError {
            field: resource.name.to_string(),
            message: why.into(),
            index: None,
        });
    }
    StoreError::invalid(errors)
}

/// 422 unless `viewer` may write a new record of `resource` of which `known` is known (the
/// catalog's write rules, docs/API.md, "Writes: master data and catalogue"); nothing has been written yet.
pub async fn require_writable<R: Reads>(
    reader: &mut R,
    resource: &'static Resource,
    known: &Known,
    viewer: &Viewer,
) -> StoreResult<()> {
    let rule = resource.authority_of(WriteAction::Write, viewer.user_type());
    let judgement = judge(resource, &rule, viewer, known);
    let outcomes = outcomes(reader, &judgement).await?;
    if judgement.verdict(&outcomes) == Verdict::Yes {
        return Ok(());
    }
    let why = format!(
        "a {} user may not write such a {}",
        viewer.user_type().as_str(),
        resource.name
    );
    Err(refusal(resource, &judgement, &outcomes, &why))
}

/// 422 unless `viewer` will see the new record of `resource` of which `known` is known (pass
/// its `id` as unset: a new record is never the caller itself). A create the caller could not
/// see would be written and then answered 404; it is refused before anything is written.
pub async fn require_visible<R: Reads>(
    reader: &mut R,
    resource: &'static Resource,
    known: &Known,
    viewer: &Viewer,
) -> StoreResult<()> {
    let judgement = judge(
        resource,
        &resource.scope_of(viewer.user_type()),
        viewer,
        known,
    );
    let outcomes = outcomes(reader, &judgement).await?;
    if judgement.verdict(&outcomes) == Verdict::Yes {
        return Ok(());
    }
    let why = format!(
        "the new {} would be outside what the caller can see",
        resource.name
    );
    Err(refusal(resource, &judgement, &outcomes, &why))
}

impl Store {
    /// Whether `viewer` may `action` the existing record `id` of `resource` (the catalog's
    /// write rules as one statement).
    pub async fn may(
        &self,
        resource: &'static Resource,
        id: &str,
        viewer: &Viewer,
        action: WriteAction,
    ) -> StoreResult<bool> {
        let predicate = viewer.authority(resource, action);
        let statement = satisfying_ids(resource, &[id.to_string()], &predicate);
        Ok(!self
            .fetch(&statement, &[Kind::Text], &Timing::default())
            .await?
            .is_empty())
    }
}
