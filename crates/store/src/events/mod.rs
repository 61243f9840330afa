//! Events and their webhook deliveries (docs/API.md, "Events and webhooks").
//!
//! A write transaction announces the records it wrote whose resource declares events
//! (`Resource::events`) and the files it finished; on commit they go to the outbox table
//! `bh_event`, in that same transaction, so a change that rolls back announces nothing and
//! one that commits is never lost. Only event types some active webhook subscribes to are
//! kept: the outbox's insert keeps only those, reading the subscriptions as part of it, or
//! a transaction that has announced more than [`UNCHECKED_CHANGES`] changes reads them at
//! once and keeps no more of the others: a stock file of a million rows writes no events on
//! an installation without stock subscribers.
//!
//! The delivery workers of any `serve` process then:
//! 1. **fan out** events ([`Store::fan_out_events`]): take a batch of outbox rows (`FOR UPDATE
//!    SKIP LOCKED` on PostgreSQL), and for each active webhook subscribed to their types read
//!    the records through the read pipeline *as the webhook's user sees them now* (scope and
//!    restricted properties applied, by-id reads batched per resource), and in the same
//!    transaction insert one `webhookDelivery` per (webhook, visible record) with the body to
//!    send and delete the outbox rows. A record the user cannot see gets no delivery, nor does
//!    one of a resource the webhook's key may not read ([`crate::webhook_bounds`]). A webhook
//!    that takes batches (`webhook.batch`) gets no delivery per event: its events, as it sees
//!    them, are added to its open *batch*, a `webhookDelivery` not yet claimed whose body
//!    they are appended to (locked by the fan-out that adds, so no claim takes it halfway),
//!    or to new ones; a batch is due once it holds [`MAX_BATCH_EVENTS`], or a set wait after
//!    it was opened. From then on it is a delivery like any other.
//! 2. **claim** a due delivery ([`Store::claim_delivery`]): one `UPDATE … WHERE id = (SELECT …
//!    LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING`, like file jobs, setting a lease
//!    (`claimedUntil`) and counting the attempt, so exactly one process makes each attempt; a
//!    process that dies mid-attempt leaves the lease to expire, and the delivery is claimed
//!    again (at least once, with the same event id). A claim whose webhook may no longer read
//!    the event's resource (its key revoked, say; for a batch, any event's) says why it is
//!    withheld, and is not sent.
//! 3. **finish** it ([`Store::finish_delivery`]): delivered, due again later, or failed;
//!    only while the lease is still the sender's.

mod batches;
mod deliveries;
mod fan_out;
mod outbox;

use batches::*;
use deliveries::*;
pub use deliveries::{AttemptResult, DeliveryClaim};
use fan_out::*;
pub use fan_out::{FanOut, REMOVED_COLUMN};

use crate::db::Kind;
use brandhub_catalog::Res;
use brandhub_catalog::{Resource, catalog};
use sea_query::{Alias, Expr, ExprTrait, Query};
use std::collections::HashSet;

/// The outbox: events committed and not yet fanned out to webhooks.
pub const EVENT_TABLE: &str = "bh_event";

/// Records read per by-id statement when fanning out.
const FAN_OUT_READ: usize = 100;

/// Changes a transaction keeps before it has read which event types are subscribed: past
/// this, it reads them at once and keeps only the subscribed changes, so a large write holds
/// no list of changes nobody subscribes to.
pub(crate) const UNCHECKED_CHANGES: usize = 256;

/// A record changed in a transaction, to be announced on commit.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Change {
    event_type: &'static str,
    resource: &'static str,
    record_id: String,
}

/// What a write transaction will put into the outbox.
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    /// The event types active webhooks subscribe to, once read.
    subscribed: Option<HashSet<String>>,
    /// The changes announced: until `subscribed` is read, of any type; after, subscribed ones.
    changes: Vec<Change>,
    seen: HashSet<Change>,
}

fn col(name: &str) -> Expr {
    Expr::col(Alias::new(name))
}

/// The column of a field of a catalog resource.
fn column(resource: &Resource, path: &str) -> Alias {
    Alias::new(
        resource
            .field_at(path)
            .unwrap_or_else(|| panic!("{}.{path} is declared", resource.name))
            .column
            .as_str(),
    )
}

fn webhook() -> &'static Resource {
    catalog().get(Res::Webhook)
}

fn delivery() -> &'static Resource {
    catalog().get(Res::WebhookDelivery)
}

/// `(list table, owner column, element column)` of `webhook.events`.
fn events_list() -> (Alias, Alias, Alias) {
    let field = webhook().field_at("events").expect("webhook.events");
    let list = field.list.as_ref().expect("webhook.events is a list");
    (
        Alias::new(list.table),
        Alias::new(list.owner_column),
        Alias::new(list.value_column),
    )
}

/// How the rows of [`subscriptions`] decode.
const SUBSCRIPTION_KINDS: &[Kind] = &[Kind::Text, Kind::Text, Kind::Text, Kind::Boolean];

/// Active webhooks subscribed to any of `types` (all types when `None`): (webhook id, user id,
/// event type, whether it takes batches) rows.
fn subscriptions(types: Option<&[String]>) -> sea_query::SelectStatement {
    let hook = webhook();
    let (list, owner, value) = events_list();
    let mut select = Query::select()
        .expr(Expr::col((Alias::new(hook.table), Alias::new("id"))))
        .expr(Expr::col((Alias::new(hook.table), column(hook, "fk_user"))))
        .expr(Expr::col((list.clone(), value.clone())))
        .expr(Expr::col((Alias::new(hook.table), column(hook, "batch"))))
        .from(Alias::new(hook.table))
        .inner_join(
            list.clone(),
            Expr::col((list.clone(), owner)).equals((Alias::new(hook.table), Alias::new("id"))),
        )
        .and_where(Expr::col((Alias::new(hook.table), column(hook, "active"))).eq(true))
        .to_owned();
    if let Some(types) = types {
        select.and_where(Expr::col((list, value)).is_in(types.iter().cloned()));
    }
    select
}

#[cfg(test)]
mod tests {
    use super::*;
    use brandhub_catalog::MAX_BATCH_EVENTS;

    #[test]
    fn events_fill_the_open_batch_then_new_ones_of_up_to_a_thousand() {
        assert_eq!(batch_sizes(None, 0), (0, vec![]));
        assert_eq!(batch_sizes(None, 3), (0, vec![3]));
        assert_eq!(batch_sizes(None, 1_500), (0, vec![1_000, 500]));
        assert_eq!(batch_sizes(None, 2_000), (0, vec![1_000, 1_000]));
        assert_eq!(batch_sizes(Some(3), 3), (3, vec![]));
        assert_eq!(batch_sizes(Some(800), 200), (200, vec![]));
        assert_eq!(batch_sizes(Some(800), 1_500), (200, vec![1_000, 300]));
        assert_eq!(batch_sizes(Some(1_000), 5), (0, vec![5]));
        for open in [None, Some(0), Some(1), Some(999)] {
            for events in [0, 1, 999, 1_000, 1_001, 2_500] {
                let (into_open, sizes) = batch_sizes(open, events);
                assert_eq!(into_open + sizes.iter().sum::<usize>(), events);
                assert!(open.unwrap_or(0) + into_open <= MAX_BATCH_EVENTS);
                assert!(sizes.iter().all(|&n| n > 0 && n <= MAX_BATCH_EVENTS));
                let full = sizes.len().saturating_sub(1);
                assert!(sizes[..full].iter().all(|&n| n == MAX_BATCH_EVENTS));
            }
        }
    }

    #[test]
    fn a_batch_body_holds_its_events_oldest_first_and_takes_more_at_its_end() {
        let event = |id: &str, n: i64| Event {
            id: id.to_string(),
            event_type: "stock.updated".into(),
            resource: "stock".into(),
            record_id: format!("R{n}"),
            created_date: "2026-12-06T10:00:00".into(),
            removed: None,
        };
        let parts: Vec<String> = (0..3)
            .map(|n| event_body(&event(&format!("E{n}"), n), &serde_json::json!({"id": n})))
            .collect();
        let body = batch_body(
            "B1",
            "2026-12-06T10:00:01",
            parts[..2].iter().map(String::as_str),
        );
        let more = append_to_batch(&body, [parts[2].as_str()]).unwrap();
        let read: serde_json::Value = serde_json::from_str(&more).unwrap();
        assert_eq!(read["id"], "B1");
        assert_eq!(read["type"], "batch");
        assert_eq!(read["createdDate"], "2026-12-06T10:00:01");
        let ids: Vec<&str> = read["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["E0", "E1", "E2"]);
        assert_eq!(read["data"][2]["data"], serde_json::json!({"id": 2}));
        assert_eq!(read["data"][0]["type"], "stock.updated");
        assert_eq!(
            batch_event_types(&more),
            Some(vec!["stock.updated".to_string()])
        );
        // An empty batch takes its first event without a comma; a body of another shape none.
        let empty = batch_body("B2", "2026-12-06T10:00:01", []);
        let first = append_to_batch(&empty, [parts[0].as_str()]).unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&first).unwrap()["data"][0]["id"],
            "E0"
        );
        assert_eq!(append_to_batch("{\"id\":\"x\"}", [parts[0].as_str()]), None);
        assert_eq!(batch_event_types("not json"), None);
    }
}
