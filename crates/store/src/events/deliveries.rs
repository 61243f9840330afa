//! A delivery's claim (one process a time, under a lease) and its finish.

use super::*;
use crate::db::{Kind, Store, Timing};
use crate::error::{StoreError, StoreResult};
use crate::ids::timestamp_at;
use crate::rights::principal;
use crate::webhook_bounds;
use crate::write::EntryPoint;
use crate::write::{set_field, stamp_update};
use brandhub_catalog::{BATCH_EVENT, Cell, DeliveryStatus, catalog};
use sea_query::{Alias, Cond, Condition, Expr, ExprTrait, LockBehavior, LockType, Order, Query};

/// A delivery attempt a sender holds: where to send what, signed with which secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryClaim {
    pub id: String,
    pub webhook_id: String,
    pub url: String,
    pub secret: String,
    /// The JSON body, exactly as it is to be signed and sent.
    pub body: String,
    pub event_type: String,
    /// This attempt's number (1 for the first).
    pub attempts: i64,
    /// When the delivery was made (milliseconds), from which its retry period runs.
    pub created_at: i64,
    /// The lease: the claim is the sender's until then (milliseconds).
    pub claimed_until: i64,
    /// Why the delivery may not be sent, when it may not (the key its webhook was made with
    /// was revoked since, say): the sender records a failed attempt and sends nothing.
    pub withheld: Option<String>,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptResult {
    /// The receiver answered 2xx.
    pub delivered: bool,
    /// The HTTP status of the answer, when one came.
    pub response_code: Option<i64>,
    /// Why it failed, when it did.
    pub error: Option<String>,
    /// When to try again (milliseconds); `None` with `delivered` false gives up (`failed`).
    pub next_due: Option<i64>,
}

pub(super) fn status_is(status: DeliveryStatus) -> Condition {
    Cond::all().add(Expr::col(column(delivery(), "status")).eq(status.as_str()))
}

/// Deliveries a sender may claim at `now`: pending or retrying, due, and not held.
fn claimable(now: i64) -> Condition {
    let resource = delivery();
    let claimed = Expr::col(column(resource, "claimedUntil"));
    Cond::all()
        .add(
            Cond::any()
                .add(status_is(DeliveryStatus::Pending))
                .add(status_is(DeliveryStatus::Retrying)),
        )
        .add(Expr::col(column(resource, "dueAt")).lte(now))
        .add(
            Cond::any()
                .add(claimed.clone().is_null())
                .add(claimed.lt(now)),
        )
}

impl Store {
    /// Claims the delivery due first, for `lease_ms`; `None` when none is due.
    pub async fn claim_delivery(&self, lease_ms: i64) -> StoreResult<Option<DeliveryClaim>> {
        let resource = delivery();
        let now = self.clock.now_millis();
        let due = Query::select()
            .column(Alias::new("id"))
            .from(Alias::new(resource.table))
            .cond_where(claimable(now))
            .limit(1)
            .to_owned();
        if self
            .fetch(&due, &[Kind::Text], &Timing::default())
            .await?
            .is_empty()
        {
            return Ok(None);
        }
        let next = Query::select()
            .column(Alias::new("id"))
            .from(Alias::new(resource.table))
            .cond_where(claimable(now))
            .order_by(column(resource, "dueAt"), Order::Asc)
            .order_by(Alias::new("id"), Order::Asc)
            .limit(1)
            .lock_with_behavior(LockType::Update, LockBehavior::SkipLocked)
            .to_owned();
        let claimed_until = now + lease_ms;
        let attempts = column(resource, "attempts");
        let mut update = Query::update()
            .table(Alias::new(resource.table))
            .value(column(resource, "claimedUntil"), claimed_until)
            .value(attempts.clone(), Expr::col(attempts.clone()).add(1))
            // A scalar subquery, evaluated once (see `jobs::claim_statement`).
            .and_where(col("id").eq(Expr::SubQuery(None, Box::new(next.into()))))
            .cond_where(claimable(now))
            .returning(Query::returning().columns([
                Alias::new("id"),
                column(resource, "fk_webhook"),
                column(resource, "body"),
                column(resource, "eventType"),
                attempts,
                column(resource, "createdDate"),
            ]))
            .to_owned();
        stamp_update(&mut update, resource, &timestamp_at(now));
        let mut tx = self.begin_apart(EntryPoint::Deliveries).await?;
        let rows = tx
            .fetch_returning(
                Some(resource.table),
                &update,
                &[
                    Kind::Text,
                    Kind::Text,
                    Kind::Text,
                    Kind::Text,
                    Kind::Integer,
                    Kind::Text,
                ],
            )
            .await?;
        let Some(row) = rows.into_iter().next() else {
            return Ok(None);
        };
        let text = |cell: &Cell| cell.as_text().unwrap_or_default().to_string();
        let hook = webhook();
        let target = Query::select()
            .column(column(hook, "url"))
            .column(column(hook, "secret"))
            .column(column(hook, "fk_user"))
            .column(column(hook, "madeWithKey"))
            .from(Alias::new(hook.table))
            .and_where(col("id").eq(text(&row[1])))
            .to_owned();
        let found = tx.fetch(&target, &[Kind::Text; 4]).await?;
        tx.commit().await?;
        let Some(target) = found.into_iter().next() else {
            return Ok(None);
        };
        let event_type = text(&row[3]);
        let body = text(&row[2]);
        // A batch is sent whole or not at all: withheld when any event it carries may not be.
        let carried = if event_type == BATCH_EVENT {
            batch_event_types(&body)
        } else {
            Some(vec![event_type.clone()])
        };
        let withheld = match carried {
            Some(types) => {
                self.withheld(&types, &text(&target[2]), target[3].as_text())
                    .await?
            }
            None => Some("the batch's body did not read".to_string()),
        };
        let created_at = chrono::NaiveDateTime::parse_from_str(&text(&row[5]), "%Y-%m-%dT%H:%M:%S")
            .map(|t| t.and_utc().timestamp_millis())
            .unwrap_or(now);
        Ok(Some(DeliveryClaim {
            id: text(&row[0]),
            webhook_id: text(&row[1]),
            body,
            event_type,
            attempts: match row[4] {
                Cell::Integer(n) => n,
                _ => 1,
            },
            url: text(&target[0]),
            secret: text(&target[1]),
            created_at,
            claimed_until,
            withheld,
        }))
    }

    /// Why a delivery of events of `event_types` to a webhook of `user` made with the key
    /// `made_with` may not be sent now, if it may not: its bounds no longer let it read the
    /// resource of one of them ([`webhook_bounds::reach`]).
    pub(super) async fn withheld(
        &self,
        event_types: &[String],
        user: &str,
        made_with: Option<&str>,
    ) -> StoreResult<Option<String>> {
        let Some(user) = principal(&mut &*self, user).await? else {
            return Ok(Some("the webhook's user no longer exists".into()));
        };
        let made_with = made_with.filter(|key| !key.is_empty());
        let grants = match webhook_bounds::reach(&mut &*self, made_with, &user).await? {
            Ok(grants) => grants,
            Err(why) => return Ok(Some(why.to_string())),
        };
        for event_type in event_types {
            let resource = catalog().event_resource(event_type).map(|r| r.name);
            match resource {
                Some(name) if webhook_bounds::may_read(&grants, name) => {}
                Some(name) => {
                    return Ok(Some(format!(
                        "the grants that bound this webhook do not let it read {name} records"
                    )));
                }
                None => {
                    return Ok(Some(format!(
                        "'{event_type}' is no event type of this server"
                    )));
                }
            }
        }
        Ok(None)
    }

    /// Records how a claimed attempt ended, if the claim is still the sender's; whether it was.
    pub async fn finish_delivery(
        &self,
        claim: &DeliveryClaim,
        result: &AttemptResult,
    ) -> StoreResult<bool> {
        let resource = delivery();
        let now = self.clock.now_millis();
        let status = match (result.delivered, result.next_due) {
            (true, _) => DeliveryStatus::Delivered,
            (false, Some(_)) => DeliveryStatus::Retrying,
            (false, None) => DeliveryStatus::Failed,
        };
        let due = result.next_due.filter(|_| !result.delivered);
        let mut update = Query::update()
            .table(Alias::new(resource.table))
            .and_where(col("id").eq(claim.id.as_str()))
            .and_where(Expr::col(column(resource, "claimedUntil")).eq(claim.claimed_until))
            .to_owned();
        let text = |value: Option<String>| value.map_or(Cell::Null, Cell::Text);
        let mut cells = vec![
            ("status", Cell::Text(status.as_str().to_string())),
            (
                "lastResponseCode",
                result.response_code.map_or(Cell::Null, Cell::Integer),
            ),
            (
                "lastError",
                Cell::Text(result.error.clone().unwrap_or_default()),
            ),
            ("dueAt", due.map_or(Cell::Null, Cell::Integer)),
            ("nextTry", text(due.map(timestamp_at))),
            ("claimedUntil", Cell::Null),
        ];
        if result.delivered {
            cells.push(("deliveredDate", Cell::Text(timestamp_at(now))));
        }
        for (path, cell) in &cells {
            let field = resource.field_at(path).expect("a declared field");
            set_field(&mut update, field, cell);
        }
        stamp_update(&mut update, resource, &timestamp_at(now));
        let mut tx = self.begin_apart(EntryPoint::Deliveries).await?;
        let changed = tx.execute(resource.table, &update).await?;
        tx.commit().await?;
        Ok(changed == 1)
    }

    /// Outbox events not yet fanned out, and deliveries still to be made (pending or
    /// retrying): for metrics and for tests that wait until everything went out.
    pub async fn webhook_backlog(&self) -> StoreResult<(i64, i64)> {
        let count = |select: sea_query::SelectStatement| async move {
            let rows = self
                .fetch(&select, &[Kind::Integer], &Timing::default())
                .await?;
            Ok::<i64, StoreError>(match rows.first().map(|r| &r[0]) {
                Some(Cell::Integer(n)) => *n,
                _ => 0,
            })
        };
        let events = count(
            Query::select()
                .expr(Expr::cust("COUNT(*)"))
                .from(Alias::new(EVENT_TABLE))
                .to_owned(),
        )
        .await?;
        let resource = delivery();
        let open = count(
            Query::select()
                .expr(Expr::cust("COUNT(*)"))
                .from(Alias::new(resource.table))
                .cond_where(
                    Cond::any()
                        .add(status_is(DeliveryStatus::Pending))
                        .add(status_is(DeliveryStatus::Retrying)),
                )
                .to_owned(),
        )
        .await?;
        Ok((events, open))
    }
}
