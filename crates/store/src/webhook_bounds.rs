//! What bounds a webhook (the `WebhookBounds` policy, docs/API.md, "Events and webhooks").
//!
//! A webhook delivers only what the API key it was made with may read now: the create records
//! that key (`madeWithKey`, `FieldDefault::WriterKey`), and the fan-out and each attempt ask
//! [`reach`]. A revoked key, or its user disabled, allows nothing, so its webhooks fall silent
//! and their pending deliveries are not sent. A webhook made in a session or from the command
//! line has no key: the grants of its user's type bound it, and it outlives the session.
//!
//! A key that may read less than a webhook delivers does not change that webhook (else a
//! `webhook:*` key could point a wider key's webhook at itself). A user has at most
//! [`MAX_WEBHOOKS`] webhooks, counted under the user's row lock.

use crate::accounts::grants::{Grant, default_grants, effective};
use crate::db::{Kind, WriteTx};
use crate::error::{StoreError, StoreResult};
use crate::records::Writer;
use crate::rights::{Principal, Reads, principal};
use brandhub_catalog::Res;
use brandhub_catalog::{Cell, Layout, Record, Resource, catalog};
use brandhub_problem::words;
use sea_query::{Alias, Expr, ExprTrait, Query};
use std::collections::BTreeMap;

/// The most webhooks one user may have (active or not): enough for every system a user
/// connects, few enough that one request cannot make the fan-out of every event read and
/// insert without end. A further one is 409 until one is deleted.
pub const MAX_WEBHOOKS: i64 = 50;

/// Where a webhook names its user and the key it was made with.
const USER: &str = "fk_user";
const MADE_WITH: &str = "madeWithKey";

fn webhook() -> &'static Resource {
    catalog().get(Res::Webhook)
}

fn keys() -> &'static Resource {
    catalog().get(Res::ApiKey)
}

fn column(resource: &Resource, path: &str) -> Alias {
    Alias::new(
        resource
            .field_at(path)
            .unwrap_or_else(|| panic!("{}.{path} is declared", resource.name))
            .column
            .as_str(),
    )
}

/// What the deliveries of a webhook of `user`, made with the key `made_with` (none: in a
/// session or from the command line), may read now: the grants of that key as its own user
/// now has them, within what `user`'s type may have; or why nothing at all.
pub(crate) async fn reach<R: Reads>(
    reader: &mut R,
    made_with: Option<&str>,
    user: &Principal,
) -> StoreResult<Result<Vec<Grant>, &'static str>> {
    if !user.active {
        return Ok(Err("the webhook's user is disabled"));
    }
    let Some(key) = made_with else {
        return Ok(Ok(default_grants(user.user_type)));
    };
    let resource = keys();
    let row = Query::select()
        .column(column(resource, USER))
        .column(column(resource, "revoked"))
        .from(Alias::new(resource.table))
        .and_where(Expr::col(Alias::new("id")).eq(key))
        .to_owned();
    let rows = reader.read(&row, &[Kind::Text, Kind::Boolean]).await?;
    let Some(row) = rows.first() else {
        return Ok(Err("the API key it was made with no longer exists"));
    };
    if row[1] != Cell::Boolean(false) {
        return Ok(Err("the API key it was made with is revoked"));
    }
    let owner = match principal(reader, row[0].as_text().unwrap_or_default()).await? {
        Some(owner) if owner.active => owner,
        _ => return Ok(Err("the user of the API key it was made with is disabled")),
    };
    let list = keys()
        .field_at("grants")
        .and_then(|field| field.list.as_ref())
        .expect("apiKey.grants is a list");
    let stored = Query::select()
        .column(Alias::new(list.value_column))
        .from(Alias::new(list.table))
        .and_where(Expr::col(Alias::new(list.owner_column)).eq(key))
        .to_owned();
    let stored: Vec<Grant> = reader
        .read(&stored, &[Kind::Text])
        .await?
        .iter()
        .filter_map(|row| Grant::parse(row[0].as_text()?).ok())
        .collect();
    Ok(Ok(effective(
        &effective(&stored, owner.user_type),
        user.user_type,
    )))
}

/// The key a webhook was made with, if any (`None` for no such webhook as well).
pub(crate) async fn made_with<R: Reads>(reader: &mut R, hook: &str) -> StoreResult<Option<String>> {
    let resource = webhook();
    let select = Query::select()
        .column(column(resource, MADE_WITH))
        .from(Alias::new(resource.table))
        .and_where(Expr::col(Alias::new("id")).eq(hook))
        .to_owned();
    Ok(reader
        .read(&select, &[Kind::Text])
        .await?
        .first()
        .and_then(|row| row[0].as_text())
        .filter(|key| !key.is_empty())
        .map(str::to_string))
}

/// Whether `grants` let their holder read `resource`.
pub(crate) fn may_read(grants: &[Grant], resource: &str) -> bool {
    grants.iter().any(|grant| grant.allows(resource, "GET"))
}

/// 403 when the writing key may read less than the webhook `before` delivers: only a key
/// that reads at least as much changes it (a session and the command line always may).
pub(crate) async fn may_change(
    tx: &mut WriteTx,
    resource: &'static Resource,
    writer: &Writer<'_>,
    before: &Record,
) -> StoreResult<()> {
    let Some(within) = writer.key_grants else {
        return Ok(());
    };
    let layout = Layout::of(resource);
    let made_with = before.cells[layout.cell(MADE_WITH)].as_text();
    let Some(user) = before.cells[layout.cell(USER)].as_text() else {
        return Ok(());
    };
    let Some(user) = principal(tx, user).await? else {
        return Ok(());
    };
    let Ok(delivers) = reach(tx, made_with.filter(|k| !k.is_empty()), &user).await? else {
        return Ok(());
    };
    let unread: Vec<&str> = catalog()
        .resource_names()
        .filter(|name| may_read(&delivers, name) && !may_read(within, name))
        .collect();
    if unread.is_empty() {
        return Ok(());
    }
    Err(StoreError::Refused(words!(
        "This key may not change a webhook that delivers records it may not read ({}): change it with the key it was made with, or in the portal.",
        "Dieser Schlüssel darf keinen Webhook ändern, der Datensätze liefert, die er nicht lesen darf ({}): mit dem Schlüssel ändern, mit dem er angelegt wurde, oder im Portal.",
        unread.join(", ")
    )))
}

/// 409 when new webhooks would give a user more than [`MAX_WEBHOOKS`]; counted under each
/// user's row lock, so that two creations cannot both pass the limit.
pub(crate) async fn within_limit(
    tx: &mut WriteTx,
    resource: &'static Resource,
    records: &[Record],
) -> StoreResult<()> {
    let layout = Layout::of(resource);
    let mut adding: BTreeMap<String, i64> = BTreeMap::new();
    for record in records {
        if let Some(user) = record.cells[layout.cell(USER)].as_text() {
            *adding.entry(user.to_string()).or_default() += 1;
        }
    }
    for (user, adding) in adding {
        tx.lock_record("users", &user).await?;
        let count = Query::select()
            .expr(sea_query::Func::count(Expr::col(Alias::new("id"))))
            .from(Alias::new(resource.table))
            .and_where(Expr::col(column(resource, USER)).eq(user.as_str()))
            .to_owned();
        let held = match tx.fetch(&count, &[Kind::Integer]).await?.first() {
            Some(row) => match row[0] {
                Cell::Integer(n) => n,
                _ => 0,
            },
            None => 0,
        };
        if held + adding > MAX_WEBHOOKS {
            return Err(StoreError::Conflict {
                detail: words!(
                    "User '{user}' has {held} webhooks and may have {MAX_WEBHOOKS}: this write would add {adding}; delete one (DELETE /api/webhook/<id>) before creating another.",
                    "Benutzer '{user}' hat {held} Webhooks und darf {MAX_WEBHOOKS} haben: dieser Schreibvorgang fügte {adding} hinzu; vor dem nächsten einen löschen (DELETE /api/webhook/<id>)."
                ),
                field: None,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_is_what_a_grant_of_get_allows() {
        let grants: Vec<Grant> = ["webhook:*", "order:POST", "stock:GET"]
            .iter()
            .map(|g| Grant::parse(g).unwrap())
            .collect();
        assert!(may_read(&grants, "webhook"));
        assert!(may_read(&grants, "stock"));
        assert!(!may_read(&grants, "order"));
        assert!(may_read(&[Grant::parse("*:GET").unwrap()], "order"));
    }
}
