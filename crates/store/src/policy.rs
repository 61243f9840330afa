//! The checks a resource declares beyond its fields and write rules (`catalog::Policy`), each
//! implemented once beside the records it concerns (users, keys, webhooks) and run by the write
//! pipeline ([`crate::records`]) with every other check: their problems join the same 422,
//! and nothing is written before all of them passed.

use crate::accounts::{keys, users};
use crate::db::WriteTx;
use crate::error::StoreResult;
use crate::records::Writer;
use crate::webhook_bounds;
use brandhub_catalog::{Policy, Record, Resource};
use brandhub_problem::FieldError;
use brandhub_query::write::WriteValues;

/// The problems of a record as a write would leave it (`before` is the record as stored, for
/// an update); a policy may complete the record (a key's grants default to its user's).
pub(crate) async fn problems(
    tx: &mut WriteTx,
    resource: &'static Resource,
    writer: &Writer<'_>,
    record: &mut Record,
    before: Option<&Record>,
    given: &WriteValues,
    index: Option<usize>,
) -> StoreResult<Vec<FieldError>> {
    let found = match resource.writes.policy {
        None => Vec::new(),
        Some(Policy::UserProfile) => {
            users::profile_problems(tx, resource, writer, record, before, given).await?
        }
        Some(Policy::KeyGrants) => {
            keys::grant_problems(tx, resource, writer, record, before, given).await?
        }
        Some(Policy::WebhookBounds) => {
            if let Some(before) = before {
                webhook_bounds::may_change(tx, resource, writer, before).await?;
            }
            Vec::new()
        }
    };
    Ok(found
        .into_iter()
        .map(|problem| FieldError { index, ..problem })
        .collect())
}

/// What the policy checks of new records all together, just before they are inserted (a
/// user's number of active keys or of webhooks, under the user's row lock).
pub(crate) async fn before_insert(
    tx: &mut WriteTx,
    resource: &'static Resource,
    records: &[Record],
) -> StoreResult<()> {
    match resource.writes.policy {
        Some(Policy::KeyGrants) if !records.is_empty() => {
            keys::within_key_limit(tx, resource, records).await
        }
        Some(Policy::WebhookBounds) if !records.is_empty() => {
            webhook_bounds::within_limit(tx, resource, records).await
        }
        _ => Ok(()),
    }
}

/// What the policy asks of a DELETE (a key never revokes a key wider than itself).
pub(crate) async fn before_removal(
    tx: &mut WriteTx,
    resource: &'static Resource,
    writer: &Writer<'_>,
    id: &str,
) -> StoreResult<()> {
    match resource.writes.policy {
        Some(Policy::KeyGrants) => keys::may_revoke(tx, resource, writer, id).await,
        _ => Ok(()),
    }
}
