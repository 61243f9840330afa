//! API keys, as the write pipeline makes and revokes them (the `KeyGrants` policy, docs/API.md,
//! "Transport and authentication" and "Writes: users and keys"): a new key's grants default to what its user's type may have, as far as the
//! writing key allows them; named grants must lie within both; a user has at most
//! [`MAX_ACTIVE_KEYS`] unrevoked keys; and a key never revokes a key wider than itself. The
//! secret itself is the pipeline's (`Writes::secret`): made, hashed and shown once there.

use super::grants::{Grant, default_grants, effective};
use super::users::may_write_user_in;
use crate::db::{Kind, WriteTx};
use crate::error::{StoreError, StoreResult};
use crate::records::Writer;
use crate::rights::principal;
use brandhub_catalog::{Anchor, Cell, Layout, Record, Resource, UserType};
use brandhub_problem::{FieldError, words};
use brandhub_query::write::WriteValues;
use sea_query::{Alias, Expr, ExprTrait, Query};
use std::collections::BTreeMap;

/// The most active (unrevoked) keys one user may have: enough for every system a user
/// connects, few enough that keys stay reviewable and a leaked key cannot mint keys without
/// end. A further key is 409 until one is revoked.
pub const MAX_ACTIVE_KEYS: i64 = 50;

/// Where a key names its user and keeps its grants.
const USER: &str = "fk_user";
const GRANTS: &str = "grants";

fn describe(grants: &[Grant]) -> String {
    grants
        .iter()
        .map(Grant::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

fn grants_problem(message: String) -> FieldError {
    FieldError::new(GRANTS, message)
}

/// The type of the user `id`, as this transaction sees it.
async fn user_type_of(tx: &mut WriteTx, id: &str) -> StoreResult<Option<UserType>> {
    let statement = Query::select()
        .column(Alias::new("type"))
        .from(Alias::new("users"))
        .and_where(Expr::col(Alias::new("id")).eq(id))
        .to_owned();
    let rows = tx.fetch(&statement, &[Kind::Text]).await?;
    Ok(rows
        .first()
        .and_then(|row| row[0].as_text())
        .and_then(UserType::parse))
}

/// The grants of a new key checked and completed: those named must lie within what the
/// key's user's type may have and what the writing key allows; none named gives the type's
/// defaults as far as the writing key allows them. Keys have nothing to change afterwards.
pub(crate) async fn grant_problems(
    tx: &mut WriteTx,
    resource: &'static Resource,
    writer: &Writer<'_>,
    record: &mut Record,
    before: Option<&Record>,
    given: &WriteValues,
) -> StoreResult<Vec<FieldError>> {
    if before.is_some() || given.has_problem(GRANTS) {
        return Ok(Vec::new());
    }
    let layout = Layout::of(resource);
    let Some(user) = record.cells[layout.cell(USER)]
        .as_text()
        .map(str::to_string)
    else {
        return Ok(Vec::new());
    };
    // An unknown user is the link check's problem.
    let Some(user_type) = user_type_of(tx, &user).await? else {
        return Ok(Vec::new());
    };
    if !writes_keys_of(tx, writer, &user).await? {
        return Ok(vec![FieldError::new(
            USER,
            "is not a user the caller may write: keys are made for oneself and for the users one may write",
        )]);
    }
    let defaults = default_grants(user_type);
    let within = writer.key_grants;
    let granted: Vec<Grant> = match given.list(GRANTS) {
        None => {
            let mut granted: Vec<Grant> = Vec::new();
            for default in &defaults {
                for allowed in within.unwrap_or(std::slice::from_ref(default)) {
                    if let Some(both) = default.intersect(allowed)
                        && !both.is_within(&granted)
                    {
                        granted.push(both);
                    }
                }
            }
            if granted.is_empty() {
                return Ok(vec![grants_problem(format!(
                    "the key making this one allows none of a {} user's grants ({}); name the grants",
                    user_type.as_str(),
                    describe(&defaults)
                ))]);
            }
            granted
        }
        Some(texts) => {
            let mut parsed = Vec::new();
            let mut problems = Vec::new();
            for text in texts {
                match Grant::parse(text) {
                    Ok(grant) if !grant.is_within(&defaults) => {
                        problems.push(grants_problem(format!(
                            "{grant} is wider than a {} user may have ({})",
                            user_type.as_str(),
                            describe(&defaults)
                        )))
                    }
                    Ok(grant) if within.is_some_and(|w| !grant.is_within(w)) => {
                        problems.push(grants_problem(format!(
                            "{grant} is wider than the key making this one allows ({})",
                            describe(within.unwrap_or_default())
                        )))
                    }
                    Ok(grant) => parsed.push(grant),
                    Err(message) => problems.push(grants_problem(message)),
                }
            }
            if !problems.is_empty() {
                return Ok(problems);
            }
            parsed
        }
    };
    record.lists[layout.list(GRANTS)] = granted.iter().map(Grant::to_string).collect();
    Ok(Vec::new())
}

/// Whether `writer` makes and revokes the keys of `user`: its own, or those of a user it may
/// write as the user is now (docs/API.md, "Writes: users and keys"), which the catalog's rule over the user's company
/// and type does not say alone (a user's further companies must all be the writer's too).
async fn writes_keys_of(tx: &mut WriteTx, writer: &Writer<'_>, user: &str) -> StoreResult<bool> {
    let viewer = writer.viewer;
    if viewer.user_type() == UserType::Admin
        || viewer
            .anchor_ids(Anchor::Own)
            .iter()
            .any(|own| own.eq_ignore_ascii_case(user))
    {
        return Ok(true);
    }
    Ok(may_write_user_in(tx, user, viewer).await? == Some(true))
}

/// 409 when new keys would give a user more than [`MAX_ACTIVE_KEYS`] unrevoked keys; counted
/// under each user's row lock, so that two creations cannot both pass the limit.
pub(crate) async fn within_key_limit(
    tx: &mut WriteTx,
    resource: &'static Resource,
    records: &[Record],
) -> StoreResult<()> {
    let layout = Layout::of(resource);
    let mut new_keys: BTreeMap<String, i64> = BTreeMap::new();
    for record in records {
        if let Some(user) = record.cells[layout.cell(USER)].as_text() {
            *new_keys.entry(user.to_string()).or_default() += 1;
        }
    }
    let revoked = resource
        .writes
        .revoked_by
        .and_then(|flag| resource.field_at(flag))
        .expect("keys are revoked by a flag");
    for (user, adding) in new_keys {
        tx.lock_record("users", &user).await?;
        let active = Query::select()
            .expr(sea_query::Func::count(Expr::col(Alias::new("id"))))
            .from(Alias::new(resource.table))
            .and_where(Expr::col(Alias::new(USER)).eq(user.as_str()))
            .and_where(Expr::col(Alias::new(revoked.column.as_str())).eq(false))
            .to_owned();
        let active = match tx.fetch(&active, &[Kind::Integer]).await?.first() {
            Some(row) => match row[0] {
                Cell::Integer(n) => n,
                _ => 0,
            },
            None => 0,
        };
        if active + adding > MAX_ACTIVE_KEYS {
            return Err(StoreError::Conflict {
                detail: words!(
                    "User '{user}' has {active} active API keys and may have {MAX_ACTIVE_KEYS}: revoke one (DELETE /api/apiKey/<id>) before creating another.",
                    "Benutzer '{user}' hat {active} aktive API-Schlüssel und darf {MAX_ACTIVE_KEYS} haben: vor dem nächsten einen widerrufen (DELETE /api/apiKey/<id>)."
                ),
                field: None,
            });
        }
    }
    Ok(())
}

/// 403 unless the key to revoke is the writer's own or of a user it may write, and allows no
/// more than the writing key: a key never manages keys wider than itself (a `brand:GET` key
/// cannot revoke a `*:*` one).
pub(crate) async fn may_revoke(
    tx: &mut WriteTx,
    resource: &'static Resource,
    writer: &Writer<'_>,
    id: &str,
) -> StoreResult<()> {
    let mut record = Record::empty(resource);
    let layout = Layout::of(resource);
    record.cells[layout.cell("id")] = Cell::Text(id.to_string());
    tx.load_lists(resource, std::slice::from_mut(&mut record))
        .await?;
    let stored: Vec<Grant> = record.lists[layout.list(GRANTS)]
        .iter()
        .filter_map(|text| Grant::parse(text).ok())
        .collect();
    let owner = Query::select()
        .column(Alias::new(USER))
        .from(Alias::new(resource.table))
        .and_where(Expr::col(Alias::new("id")).eq(id))
        .to_owned();
    let owner = tx.fetch(&owner, &[Kind::Text]).await?;
    let Some(owner) = owner.first().and_then(|row| row[0].as_text()) else {
        return Ok(());
    };
    if !writes_keys_of(tx, writer, owner).await? {
        return Err(StoreError::Refused(words!(
            "A {} user revokes its own keys and those of the users it may write.",
            "Ein Benutzer vom Typ {} widerruft seine eigenen Schlüssel und die der Benutzer, die er schreiben darf.",
            writer.viewer.user_type().as_str()
        )));
    }
    let Some(within) = writer.key_grants else {
        return Ok(());
    };
    let grants = match principal(tx, owner).await? {
        Some(user) if user.active => effective(&stored, user.user_type),
        // A disabled user's keys allow nothing.
        _ => Vec::new(),
    };
    if grants.iter().all(|grant| grant.is_within(within)) {
        return Ok(());
    }
    Err(StoreError::Refused(words!(
        "This key ({}) may not revoke a key that allows more than it does ({}).",
        "Dieser Schlüssel ({}) darf keinen Schlüssel widerrufen, der mehr erlaubt als er selbst ({}).",
        describe(within),
        describe(&grants)
    )))
}
