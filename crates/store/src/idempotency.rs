//! `Idempotency-Key` on creates (docs/API.md, "Writes: concurrency and idempotency"), kept in the database so that it
//! holds across server processes.
//!
//! A create with a key first claims `(user, key)` in `bh_idempotency`, inside the same write
//! transaction as the records it then writes: the claim and the write commit together or not
//! at all. Of two requests with one key, the second one's claim waits for the first's
//! transaction (PostgreSQL's unique index; SQLite runs one write transaction at a time) and
//! then finds the first's claim: it writes nothing and answers the first answer again. A
//! write that fails leaves no claim, so the key may be sent again. The answer's body is kept
//! once it is rendered, right after the commit; a replay in between renders the same records
//! again. Claims expire after [`KEPT_FOR_MILLIS`] by the store's clock.

use crate::db::{Kind, Store, WriteTx, internal};
use crate::error::{StoreError, StoreResult};
use brandhub_catalog::Cell;
use brandhub_query::conditions::IdempotencyKey;
use sea_query::{Alias, Expr, ExprTrait, OnConflict, Query};

/// The table of claimed keys.
pub const IDEMPOTENCY_TABLE: &str = "bh_idempotency";

/// How long a key is remembered: 24 hours.
pub const KEPT_FOR_MILLIS: i64 = 24 * 60 * 60 * 1000;

/// The statements creating the table and the index its expiry uses.
pub fn idempotency_statements() -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS \"{IDEMPOTENCY_TABLE}\" (\"user_id\" TEXT NOT NULL, \"idem_key\" TEXT NOT NULL, \"fingerprint\" TEXT NOT NULL, \"created_at\" BIGINT NOT NULL, \"written\" TEXT NOT NULL DEFAULT '', \"etag\" TEXT, \"body\" TEXT, PRIMARY KEY (\"user_id\", \"idem_key\"))"
        ),
        format!(
            "CREATE INDEX IF NOT EXISTS \"ix_{IDEMPOTENCY_TABLE}_created_at\" ON \"{IDEMPOTENCY_TABLE}\" (\"created_at\")"
        ),
    ]
}

/// The first answer to a key, as kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptAnswer {
    /// The records the first request wrote: `(id, created)`, in the body's order.
    pub written: Vec<(String, bool)>,
    /// The answer's ETag, if it had one.
    pub etag: Option<String>,
    /// The answer's body, once kept (`None` in the moment between commit and keeping it).
    pub body: Option<Vec<u8>>,
}

fn encode_written(written: &[(String, bool)]) -> String {
    written
        .iter()
        .map(|(id, created)| format!("{id}:{}", u8::from(*created)))
        .collect::<Vec<_>>()
        .join(",")
}

fn decode_written(text: &str) -> Vec<(String, bool)> {
    text.split(',')
        .filter(|part| !part.is_empty())
        .filter_map(|part| {
            let (id, created) = part.split_once(':')?;
            Some((id.to_string(), created == "1"))
        })
        .collect()
}

fn this_key(key: &IdempotencyKey) -> sea_query::Condition {
    sea_query::Condition::all()
        .add(Expr::col(Alias::new("user_id")).eq(key.user_id.as_str()))
        .add(Expr::col(Alias::new("idem_key")).eq(key.key.as_str()))
}

/// 409: the key came with another request.
fn reused(key: &IdempotencyKey) -> StoreError {
    StoreError::conflict(
        format!(
            "The Idempotency-Key '{}' was used within the last 24 hours for another request; a retry must send the same body (and parameters) to the same resource.",
            key.key
        ),
        "Idempotency-Key",
    )
}

impl WriteTx {
    /// Claims `key` for this transaction's write: `Ok(None)` when it is fresh (or its earlier
    /// claim expired), the kept answer when the same request came first, 409 when another
    /// request did. Waits for a transaction holding the same key to end.
    pub async fn claim_key(&mut self, key: &IdempotencyKey) -> StoreResult<Option<KeptAnswer>> {
        let now = self.clock.now_millis();
        let columns = [
            "user_id",
            "idem_key",
            "fingerprint",
            "created_at",
            "written",
        ];
        let mut claim = Query::insert();
        claim
            .into_table(Alias::new(IDEMPOTENCY_TABLE))
            .columns(columns.map(Alias::new))
            .values_panic([
                key.user_id.as_str().into(),
                key.key.as_str().into(),
                key.fingerprint.as_str().into(),
                now.into(),
                "".into(),
            ])
            .on_conflict(
                OnConflict::columns([Alias::new("user_id"), Alias::new("idem_key")])
                    .update_columns(columns.map(Alias::new))
                    .value(Alias::new("etag"), Option::<String>::None)
                    .value(Alias::new("body"), Option::<String>::None)
                    .action_and_where(
                        Expr::col((Alias::new(IDEMPOTENCY_TABLE), Alias::new("created_at")))
                            .lt(now - KEPT_FOR_MILLIS),
                    )
                    .to_owned(),
            );
        if self.execute_untracked(IDEMPOTENCY_TABLE, &claim).await? == 1 {
            return Ok(None);
        }
        let select = Query::select()
            .columns(["fingerprint", "written", "etag", "body"].map(Alias::new))
            .from(Alias::new(IDEMPOTENCY_TABLE))
            .cond_where(this_key(key))
            .to_owned();
        let rows = self
            .fetch(&select, &[Kind::Text, Kind::Text, Kind::Text, Kind::Text])
            .await?;
        let Some(row) = rows.into_iter().next() else {
            return Err(internal(
                "an idempotency key was neither claimed nor found",
                &key.key,
            ));
        };
        if row[0].as_text() != Some(key.fingerprint.as_str()) {
            return Err(reused(key));
        }
        let text = |cell: &Cell| cell.as_text().map(str::to_string);
        Ok(Some(KeptAnswer {
            written: decode_written(row[1].as_text().unwrap_or_default()),
            etag: text(&row[2]),
            body: text(&row[3]).map(String::into_bytes),
        }))
    }

    /// Records what the claimed key's write did, in the same transaction.
    pub async fn keep_written(
        &mut self,
        key: &IdempotencyKey,
        written: &[(String, bool)],
    ) -> StoreResult<()> {
        let update = Query::update()
            .table(Alias::new(IDEMPOTENCY_TABLE))
            .value(Alias::new("written"), encode_written(written))
            .cond_where(this_key(key))
            .to_owned();
        self.execute_untracked(IDEMPOTENCY_TABLE, &update).await?;
        Ok(())
    }
}

impl Store {
    /// Keeps the rendered first answer of a claimed key (after its write committed), and
    /// forgets expired keys.
    pub async fn keep_answer(
        &self,
        key: &IdempotencyKey,
        body: &[u8],
        etag: Option<&str>,
    ) -> StoreResult<()> {
        let update = Query::update()
            .table(Alias::new(IDEMPOTENCY_TABLE))
            .value(
                Alias::new("body"),
                String::from_utf8_lossy(body).to_string(),
            )
            .value(Alias::new("etag"), etag.map(str::to_string))
            .cond_where(this_key(key))
            .and_where(Expr::col(Alias::new("fingerprint")).eq(key.fingerprint.as_str()))
            .to_owned();
        self.execute_untracked(IDEMPOTENCY_TABLE, &update).await?;
        let expired = Query::delete()
            .from_table(Alias::new(IDEMPOTENCY_TABLE))
            .and_where(
                Expr::col(Alias::new("created_at")).lt(self.clock.now_millis() - KEPT_FOR_MILLIS),
            )
            .to_owned();
        self.execute_untracked(IDEMPOTENCY_TABLE, &expired).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_was_written_round_trips() {
        let written = vec![("A".to_string(), true), ("B".to_string(), false)];
        assert_eq!(decode_written(&encode_written(&written)), written);
        assert!(decode_written("").is_empty());
    }
}
