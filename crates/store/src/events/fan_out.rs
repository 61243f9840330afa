//! The fan-out: outbox events become deliveries for the webhooks subscribed to them, with
//! the records as each webhook's user sees them now.

use super::*;
use crate::db::{Kind, Store, Timing, internal};
use crate::error::{StoreError, StoreResult};
use crate::rights::principal;
use crate::webhook_bounds;
use crate::write::EntryPoint;
use brandhub_catalog::{Cell, Record, Resource, catalog};
use brandhub_query::plan::plan_by_ids;
use brandhub_query::request::ReadRequest;
use sea_query::{Alias, ExprTrait, LockBehavior, LockType, Order, Query};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

/// The most events one outbox statement writes.
pub(super) const OUTBOX_ROWS: usize = 500;

/// An event taken from the outbox.
#[derive(Debug, Clone)]
pub(super) struct Event {
    pub(super) id: String,
    pub(super) event_type: String,
    pub(super) resource: String,
    pub(super) record_id: String,
    pub(super) created_date: String,
    /// A removal's record as it was ([`REMOVED_COLUMN`]), when the event is one.
    pub(super) removed: Option<String>,
}

/// The outbox column that holds, for the removal of a record the database keeps (an offer,
/// `crate::offers::triggers`), the record as it was: a JSON object of the fields its
/// `…deleted` event carries, and `_company` and `_host`, the brand's company and the
/// store's host it was seen by (a company's users, a host's users), which are not sent.
pub const REMOVED_COLUMN: &str = "removed";

/// Whether `viewer` could see the removed record `removed` ([`REMOVED_COLUMN`]), and the
/// event's data if so (without the keys of who could see it).
fn removal_as_seen(
    removed: &str,
    viewer: &brandhub_query::plan::Viewer,
) -> Option<serde_json::Value> {
    use brandhub_catalog::{Anchor, UserType};
    let serde_json::Value::Object(mut fields) = serde_json::from_str(removed).ok()? else {
        return None;
    };
    let company = fields.remove("_company");
    let host = fields.remove("_host");
    let among = |key: Option<serde_json::Value>, anchor: Anchor| {
        key.as_ref()
            .and_then(serde_json::Value::as_str)
            .is_some_and(|id| viewer.anchor_ids(anchor).iter().any(|own| own == id))
    };
    let sees = match viewer.user_type() {
        UserType::Admin => true,
        UserType::Company | UserType::Sponsor => among(company, Anchor::Companies),
        UserType::Host => among(host, Anchor::Host),
        UserType::Warehouse => false,
    };
    sees.then_some(serde_json::Value::Object(fields))
}

/// What one fan-out did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FanOut {
    /// The events taken from the outbox.
    pub events: usize,
    /// When the earliest batch it left open falls due (milliseconds on the store's clock), if
    /// it left one open: the moment to wake the senders.
    pub batch_due: Option<i64>,
}

impl Store {
    /// Fans out up to `batch` outbox events to the webhooks subscribed to them (see the module
    /// documentation). A webhook that takes batches gets its events added to its open batch
    /// delivery, or to new ones, each due once it holds [`MAX_BATCH_EVENTS`] or `batch_wait`
    /// after it was opened ([`WriteTx::add_to_batches`]).
    pub async fn fan_out_events(&self, batch: u64, batch_wait: Duration) -> StoreResult<FanOut> {
        // A cheap read first: no write transaction (SQLite's write lock) while idle.
        let any = Query::select()
            .column(Alias::new("id"))
            .from(Alias::new(EVENT_TABLE))
            .limit(1)
            .to_owned();
        if self
            .fetch(&any, &[Kind::Text], &Timing::default())
            .await?
            .is_empty()
        {
            return Ok(FanOut::default());
        }
        let batch_wait = i64::try_from(batch_wait.as_millis()).unwrap_or(i64::MAX);
        let mut tx = self.begin_apart(EntryPoint::Deliveries).await?;
        let select = Query::select()
            .columns(
                [
                    "id",
                    "event_type",
                    "resource",
                    "record_id",
                    "created_date",
                    REMOVED_COLUMN,
                ]
                .map(Alias::new),
            )
            .from(Alias::new(EVENT_TABLE))
            .order_by(Alias::new("created_at"), Order::Asc)
            .order_by(Alias::new("id"), Order::Asc)
            .limit(batch)
            .lock_with_behavior(LockType::Update, LockBehavior::SkipLocked)
            .to_owned();
        let rows = tx.fetch_returning(None, &select, &[Kind::Text; 6]).await?;
        let text = |cell: &Cell| cell.as_text().unwrap_or_default().to_string();
        let events: Vec<Event> = rows
            .iter()
            .map(|row| Event {
                id: text(&row[0]),
                event_type: text(&row[1]),
                resource: text(&row[2]),
                record_id: text(&row[3]),
                created_date: text(&row[4]),
                removed: row[5].as_text().map(str::to_string),
            })
            .collect();
        if events.is_empty() {
            return Ok(FanOut::default());
        }
        let mut types: Vec<String> = events.iter().map(|e| e.event_type.clone()).collect();
        types.sort();
        types.dedup();
        let rows = tx
            .fetch(&subscriptions(Some(&types)), SUBSCRIPTION_KINDS)
            .await?;
        // Webhook → (user, the types it takes, whether it takes batches).
        let mut hooks: Vec<(String, String, HashSet<String>, bool)> = Vec::new();
        for row in rows {
            let (hook, user, event_type) = (text(&row[0]), text(&row[1]), text(&row[2]));
            let batched = matches!(row[3], Cell::Boolean(true));
            match hooks.iter_mut().find(|(h, ..)| *h == hook) {
                Some((_, _, taken, _)) => {
                    taken.insert(event_type);
                }
                None => hooks.push((hook, user, HashSet::from([event_type]), batched)),
            }
        }
        hooks.sort_by(|a, b| a.0.cmp(&b.0));
        let now = self.clock.now_millis();
        let mut deliveries = Vec::new();
        let mut batch_due: Option<i64> = None;
        // Events that could not be built, by event id, with the reason: set aside below
        // (an `eventProblem` record each), so that the rest of the batch flows.
        let mut set_aside: BTreeMap<String, (&Event, String)> = BTreeMap::new();
        for (hook, user, taken, batched) in &hooks {
            let wanted: Vec<&Event> = events
                .iter()
                .filter(|e| taken.contains(&e.event_type))
                .collect();
            let principal = match principal(&mut tx, user).await {
                Ok(Some(principal)) => principal,
                Ok(None) => continue,
                Err(StoreError::Unreadable(why)) => {
                    for event in wanted {
                        set_aside.entry(event.id.clone()).or_insert_with(|| {
                            (
                                event,
                                format!("the user of webhook {hook} did not read: {why}"),
                            )
                        });
                    }
                    continue;
                }
                Err(error) => return Err(error),
            };
            let made_with = webhook_bounds::made_with(&mut tx, hook).await?;
            let Ok(grants) =
                webhook_bounds::reach(&mut tx, made_with.as_deref(), &principal).await?
            else {
                continue;
            };
            let viewer = principal.viewer();
            let wanted: Vec<&Event> = wanted
                .into_iter()
                .filter(|e| webhook_bounds::may_read(&grants, &e.resource))
                .collect();
            let read: Vec<&Event> = wanted
                .iter()
                .copied()
                .filter(|e| e.removed.is_none())
                .collect();
            let (seen, unreadable) = self.records_as_seen(&read, &viewer).await?;
            // What this webhook gets of each event, in the outbox's order: the body of its
            // delivery, or its part of a batch's.
            let mut parts: Vec<(&Event, String)> = Vec::new();
            for event in wanted {
                let body = match event.removed.as_deref() {
                    Some(removed) => match removal_as_seen(removed, &viewer) {
                        Some(data) => event_body(event, &data),
                        None => continue,
                    },
                    None => {
                        let key = (event.resource.clone(), event.record_id.clone());
                        if let Some(why) = unreadable.get(&key) {
                            set_aside.entry(event.id.clone()).or_insert_with(|| {
                                let about =
                                    format!("the {} record {}", event.resource, event.record_id);
                                (event, format!("{about} did not read: {why}"))
                            });
                            continue;
                        }
                        match seen.get(&key) {
                            Some(data) => event_body(event, data),
                            None => continue,
                        }
                    }
                };
                parts.push((event, body));
            }
            if *batched {
                let due = tx
                    .add_to_batches(hook, &parts, now, batch_wait, &mut deliveries)
                    .await?;
                batch_due = match (batch_due, due) {
                    (Some(a), Some(b)) => Some(Ord::min(a, b)),
                    (a, b) => a.or(b),
                };
            } else {
                for (event, body) in parts {
                    deliveries.push(delivery_record(hook, event, body, now));
                }
            }
        }
        if !deliveries.is_empty() {
            tx.insert_records(delivery(), &mut deliveries).await?;
        }
        if !set_aside.is_empty() {
            let mut problems: Vec<Record> = set_aside
                .values()
                .map(|(event, why)| {
                    tracing::warn!(event = %event.id, record = %event.record_id, reason = %why, "a webhook event was set aside");
                    problem_record(event, why, now)
                })
                .collect();
            tx.insert_records(event_problem(), &mut problems).await?;
        }
        let ids: Vec<String> = events.iter().map(|e| e.id.clone()).collect();
        for chunk in ids.chunks(500) {
            let delete = Query::delete()
                .from_table(Alias::new(EVENT_TABLE))
                .and_where(col("id").is_in(chunk.iter().cloned()))
                .to_owned();
            tx.execute_untracked(EVENT_TABLE, &delete).await?;
        }
        tx.commit().await?;
        Ok(FanOut {
            events: events.len(),
            batch_due,
        })
    }

    /// The records of `events` as `viewer` sees them now, by (resource, id); records out of
    /// its scope (or gone) are missing. Read in chunks; a chunk with a record that does not
    /// read ([`StoreError::Unreadable`]) is read again a record at a time, so that only
    /// that record is left out: the second map holds it, with the reason.
    async fn records_as_seen(
        &self,
        events: &[&Event],
        viewer: &brandhub_query::plan::Viewer,
    ) -> StoreResult<(RecordsSeen, HashMap<(String, String), String>)> {
        let mut by_resource: HashMap<&str, Vec<String>> = HashMap::new();
        for event in events {
            by_resource
                .entry(event.resource.as_str())
                .or_default()
                .push(event.record_id.clone());
        }
        let timing = Timing::default();
        let versions = self.versions(&timing).await?;
        let mut seen = HashMap::new();
        let mut unreadable = HashMap::new();
        for (name, mut ids) in by_resource {
            let Some(resource) = catalog().resource(name) else {
                continue;
            };
            ids.sort();
            ids.dedup();
            for chunk in ids.chunks(FAN_OUT_READ) {
                let read = self
                    .records_by_id(resource, chunk, viewer, &versions, &timing)
                    .await;
                match read {
                    Ok(records) => seen.extend(records),
                    Err(StoreError::Unreadable(_)) => {
                        for id in chunk {
                            let one = std::slice::from_ref(id);
                            match self
                                .records_by_id(resource, one, viewer, &versions, &timing)
                                .await
                            {
                                Ok(records) => seen.extend(records),
                                Err(StoreError::Unreadable(why)) => {
                                    unreadable.insert((name.to_string(), id.clone()), why);
                                }
                                Err(error) => return Err(error),
                            }
                        }
                    }
                    Err(error) => return Err(error),
                }
            }
        }
        Ok((seen, unreadable))
    }

    /// The records of `resource` with these ids as `viewer` sees them, rendered as the API
    /// renders them, by (resource, id).
    async fn records_by_id(
        &self,
        resource: &'static Resource,
        ids: &[String],
        viewer: &brandhub_query::plan::Viewer,
        versions: &crate::Versions,
        timing: &Timing,
    ) -> StoreResult<RecordsSeen> {
        let plan = plan_by_ids(resource, ids, &ReadRequest::default(), viewer)
            .map_err(|e| internal("a webhook's by-id read did not plan", e.detail))?;
        let page = self.render_page(&plan, viewer, versions, timing).await?;
        let mut envelope: serde_json::Value = serde_json::from_slice(&page.body)
            .map_err(|e| internal("a rendered page did not parse", e))?;
        let mut seen = HashMap::new();
        if let Some(serde_json::Value::Array(records)) = envelope["response"]
            .get_mut(resource.name)
            .map(serde_json::Value::take)
        {
            for record in records {
                if let Some(id) = record["id"].as_str() {
                    seen.insert((resource.name.to_string(), id.to_string()), record);
                }
            }
        }
        Ok(seen)
    }
}
