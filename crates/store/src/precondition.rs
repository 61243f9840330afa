//! Record versions and the preconditions written against them (docs/API.md, "Writes: concurrency and idempotency").
//!
//! Every resource table has a `row_version` column ([`crate::schema::ROW_VERSION`]): 1 when a
//! record is inserted, one more with every write of it (JSON writes, files, users, keys). A
//! record's `ETag` is that number, quoted (`"3"`), opaque to clients. A `PATCH` or `DELETE`
//! with `If-Match` is checked inside its write transaction, after the record's row is locked
//! (`FOR NO KEY UPDATE` on PostgreSQL; SQLite runs one write transaction at a time), so of
//! several writers holding the same `ETag` exactly one gets through.

use crate::db::{Kind, Store, Timing, WriteTx};
use crate::error::{StoreError, StoreResult};
use crate::schema::ROW_VERSION;
use brandhub_catalog::{Cell, Resource};
use brandhub_problem::words;
use brandhub_query::conditions::{IfMatch, etag};
use sea_query::{Alias, Expr, ExprTrait, LockType, Query, SelectStatement};

/// The version of the record `id`.
fn version_select(resource: &Resource, id: &str) -> SelectStatement {
    Query::select()
        .column(Alias::new(ROW_VERSION))
        .from(Alias::new(resource.table))
        .and_where(Expr::col(Alias::new("id")).eq(id.to_ascii_uppercase()))
        .to_owned()
}

fn version_in(rows: Vec<Vec<Cell>>) -> Option<i64> {
    match rows.first().and_then(|row| row.first()) {
        Some(Cell::Integer(version)) => Some(*version),
        _ => None,
    }
}

/// 412: the record changed since the client read it.
pub fn precondition_failed(resource: &Resource, id: &str, current: i64) -> StoreError {
    StoreError::Stale(words!(
        "The {} '{id}' has changed since its ETag was read (it is now {}); read it again and send the new ETag in If-Match.",
        "{} '{id}' hat sich geändert, seit sein ETag gelesen wurde (jetzt {}); neu lesen und den neuen ETag in If-Match senden.",
        resource.name,
        etag(current)
    ))
}

impl WriteTx {
    /// Locks the record `id` until the transaction ends and returns its version (`None` when
    /// there is no such record). Writes that read a record before changing it start here.
    pub async fn lock_version(
        &mut self,
        resource: &Resource,
        id: &str,
    ) -> StoreResult<Option<i64>> {
        let mut select = version_select(resource, id);
        select.lock(LockType::NoKeyUpdate);
        let rows = self
            .fetch_returning(None, &select, &[Kind::Integer])
            .await?;
        Ok(version_in(rows))
    }

    /// Locks the record `id` and checks `if_match` against its version: 412 when it does not
    /// match. A missing record passes (the write answers 404 itself).
    pub async fn check_precondition(
        &mut self,
        resource: &Resource,
        id: &str,
        if_match: Option<&IfMatch>,
    ) -> StoreResult<()> {
        let version = self.lock_version(resource, id).await?;
        match (if_match, version) {
            (Some(if_match), Some(version)) if !if_match.matches(version) => {
                Err(precondition_failed(resource, id, version))
            }
            _ => Ok(()),
        }
    }

    /// The version of the record `id` as this transaction sees it.
    pub async fn version_of(&mut self, resource: &Resource, id: &str) -> StoreResult<Option<i64>> {
        let rows = self
            .fetch(&version_select(resource, id), &[Kind::Integer])
            .await?;
        Ok(version_in(rows))
    }
}

impl Store {
    /// The version of the record `id` (`None` when there is none). Read it before the record
    /// itself: an answer's `ETag` may then be older than its body (a later `If-Match` fails
    /// and the client reads again), never newer.
    pub async fn version_of(&self, resource: &Resource, id: &str) -> StoreResult<Option<i64>> {
        let rows = self
            .fetch(
                &version_select(resource, id),
                &[Kind::Integer],
                &Timing::default(),
            )
            .await?;
        Ok(version_in(rows))
    }
}
