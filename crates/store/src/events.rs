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

use crate::db::{Kind, Store, Timing, WriteTx, internal};
use crate::error::{StoreError, StoreResult};
use crate::ids::{new_id, timestamp_at};
use crate::rights::principal;
use crate::webhook_bounds;
use crate::write::EntryPoint;
use crate::write::{set_field, stamp_update};
use brandhub_catalog::Res;
use brandhub_catalog::{
    BATCH_EVENT, Cell, DeliveryStatus, Layout, MAX_BATCH_EVENTS, Record, Resource, catalog,
};
use brandhub_query::plan::plan_by_ids;
use brandhub_query::request::ReadRequest;
use sea_query::{Alias, Cond, Condition, Expr, ExprTrait, LockBehavior, LockType, Order, Query};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

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

impl WriteTx {
    /// Announces that records of `resource` were created (`created`) or changed, if the
    /// resource declares events and a webhook subscribes to them.
    pub async fn announce<'i>(
        &mut self,
        resource: &'static Resource,
        ids: impl IntoIterator<Item = &'i str>,
        created: bool,
    ) -> StoreResult<()> {
        let Some(events) = resource.events else {
            return Ok(());
        };
        if !resource.kept_from.is_empty() {
            // The database announces what it keeps, by trigger (`crate::offers`).
            return Ok(());
        }
        let event_type = if created {
            events.created
        } else {
            events.updated
        };
        if !self.may_subscribe(event_type) {
            return Ok(());
        }
        for id in ids {
            self.push_change(event_type, resource, id);
        }
        self.check_if_many().await
    }

    /// Announces one event about one record that is not a plain write of it (a file reaching
    /// its final status, `FileStatus::event`).
    pub async fn announce_event(
        &mut self,
        event_type: &'static str,
        resource: &'static Resource,
        id: &str,
    ) -> StoreResult<()> {
        if self.may_subscribe(event_type) {
            self.push_change(event_type, resource, id);
        }
        self.check_if_many().await
    }

    fn push_change(&mut self, event_type: &'static str, resource: &'static Resource, id: &str) {
        let change = Change {
            event_type,
            resource: resource.name,
            record_id: id.to_string(),
        };
        if self.outbox.seen.insert(change.clone()) {
            self.outbox.changes.push(change);
        }
    }

    /// Whether an active webhook may subscribe to `event_type`: it does, or the subscriptions
    /// are not read yet.
    fn may_subscribe(&self, event_type: &str) -> bool {
        self.outbox
            .subscribed
            .as_ref()
            .is_none_or(|s| s.contains(event_type))
    }

    /// Reads the subscriptions now if more than [`UNCHECKED_CHANGES`] changes wait for them.
    async fn check_if_many(&mut self) -> StoreResult<()> {
        if self.outbox.subscribed.is_none() && self.outbox.changes.len() > UNCHECKED_CHANGES {
            let rows = self.fetch(&subscriptions(None), SUBSCRIPTION_KINDS).await?;
            self.subscriptions_read(rows);
        }
        Ok(())
    }

    /// Takes the rows of [`subscriptions`] (with [`SUBSCRIPTION_KINDS`]): keeps only the
    /// changes some active webhook subscribes to, and announces only those from now on.
    fn subscriptions_read(&mut self, rows: Vec<Vec<Cell>>) {
        let subscribed: HashSet<String> = rows
            .into_iter()
            .filter_map(|row| row[2].as_text().map(str::to_string))
            .collect();
        self.outbox
            .changes
            .retain(|change| subscribed.contains(change.event_type));
        self.outbox
            .seen
            .retain(|change| subscribed.contains(change.event_type));
        self.outbox.subscribed = Some(subscribed);
    }

    /// How many outbox statements [`WriteTx::outbox_statements`] would make now.
    pub(crate) fn outbox_statement_count(&self) -> usize {
        self.outbox.changes.len().div_ceil(OUTBOX_ROWS)
    }

    /// The statements that write the announced changes to the outbox, multi-row inserts of
    /// up to 500. While this transaction has not read the subscriptions, each statement
    /// keeps only the changes of event types an active webhook subscribes to: the read is
    /// part of the insert, not a statement before it.
    ///
    /// `guard`: a condition each statement's rows must also meet (an optimistic write's: its
    /// update changed its row), for statements that are parts of a larger one.
    pub(crate) fn outbox_statements(
        &mut self,
        guard: Option<&Expr>,
    ) -> Vec<sea_query::InsertStatement> {
        let changes = std::mem::take(&mut self.outbox.changes);
        let now = self.clock.now_millis();
        let created = timestamp_at(now);
        let unfiltered = self.outbox.subscribed.is_none();
        let columns = [
            "id",
            "event_type",
            "resource",
            "record_id",
            "created_at",
            "created_date",
        ];
        changes
            .chunks(OUTBOX_ROWS)
            .map(|chunk| {
                let mut insert = Query::insert()
                    .into_table(Alias::new(EVENT_TABLE))
                    .columns(columns.map(Alias::new))
                    .to_owned();
                let rows = chunk.iter().map(|change| {
                    vec![
                        new_id().into(),
                        change.event_type.into(),
                        change.resource.into(),
                        change.record_id.clone().into(),
                        now.into(),
                        created.clone().into(),
                    ]
                });
                if unfiltered || guard.is_some() {
                    let changes = Alias::new("changes");
                    let mut select = Query::select()
                        .columns(
                            (1..=columns.len())
                                .map(|i| (changes.clone(), Alias::new(format!("column{i}")))),
                        )
                        .from_values(rows.map(sea_query::ValueTuple::Many), changes.clone())
                        .to_owned();
                    if unfiltered {
                        let mut subscribed = subscriptions(None);
                        let (list, _, value) = events_list();
                        subscribed.clear_selects().expr(Expr::col((list, value)));
                        select.and_where(
                            Expr::col((changes, Alias::new("column2"))).in_subquery(subscribed),
                        );
                    }
                    if let Some(guard) = guard {
                        select.and_where(guard.clone());
                    }
                    insert
                        .select_from(select)
                        .expect("the VALUES rows have the insert's columns");
                } else {
                    for row in rows {
                        insert.values_panic(row.into_iter().map(Expr::val));
                    }
                }
                insert
            })
            .collect()
    }
}

/// The most events one outbox statement writes.
const OUTBOX_ROWS: usize = 500;

/// An event taken from the outbox.
#[derive(Debug, Clone)]
struct Event {
    id: String,
    event_type: String,
    resource: String,
    record_id: String,
    created_date: String,
    /// A removal's record as it was ([`REMOVED_COLUMN`]), when the event is one.
    removed: Option<String>,
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

fn status_is(status: DeliveryStatus) -> Condition {
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
    async fn withheld(
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

/// Deliveries of `hook` still open to more events: batches not yet claimed, with room.
fn open_batch(hook: &str) -> Condition {
    let resource = delivery();
    Cond::all()
        .add(Expr::col(column(resource, "fk_webhook")).eq(hook))
        .add(Expr::col(column(resource, "eventType")).eq(BATCH_EVENT))
        .add(status_is(DeliveryStatus::Pending))
        .add(Expr::col(column(resource, "attempts")).eq(0))
        .add(Expr::col(column(resource, "claimedUntil")).is_null())
        .add(Expr::col(column(resource, "eventCount")).lt(MAX_BATCH_EVENTS as i64))
}

impl WriteTx {
    /// Adds the events `parts` (each with its part of a batch's body, in the outbox's order)
    /// to the batches of the webhook `hook`: as many as fit to its open batch (locked, so
    /// that no claim takes it meanwhile and no other fan-out adds to it at once), the rest to
    /// new batches of up to [`MAX_BATCH_EVENTS`], pushed to `deliveries`. A batch is due
    /// once it is full, else `wait` after it was opened. Returns when the batch left open
    /// falls due, if one is left open.
    async fn add_to_batches(
        &mut self,
        hook: &str,
        parts: &[(&Event, String)],
        now: i64,
        wait: i64,
        deliveries: &mut Vec<Record>,
    ) -> StoreResult<Option<i64>> {
        if parts.is_empty() {
            return Ok(None);
        }
        let resource = delivery();
        let open = Query::select()
            .column(Alias::new("id"))
            .column(column(resource, "body"))
            .column(column(resource, "eventCount"))
            .column(column(resource, "dueAt"))
            .from(Alias::new(resource.table))
            .cond_where(open_batch(hook))
            .order_by(column(resource, "createdDate"), Order::Asc)
            .order_by(Alias::new("id"), Order::Asc)
            .limit(1)
            .lock(LockType::Update)
            .to_owned();
        let found = self
            .fetch_returning(
                None,
                &open,
                &[Kind::Text, Kind::Text, Kind::Integer, Kind::Integer],
            )
            .await?;
        let mut rest = parts;
        let mut open_due = None;
        if let Some(row) = found.into_iter().next() {
            let id = row[0].as_text().unwrap_or_default().to_string();
            let count = match row[2] {
                Cell::Integer(n) => usize::try_from(n).unwrap_or(0),
                _ => 0,
            };
            let (added, later) = rest.split_at(batch_sizes(Some(count), rest.len()).0);
            let body = row[1].as_text().and_then(|body| {
                append_to_batch(body, added.iter().map(|(_, part)| part.as_str()))
            });
            // A body not of a batch's shape is left as it is: the events go to a new batch.
            if let Some(body) = body {
                let total = count + added.len();
                let mut update = Query::update()
                    .table(Alias::new(resource.table))
                    .and_where(col("id").eq(id.as_str()))
                    .to_owned();
                let mut cells = vec![
                    ("body", Cell::Text(body)),
                    (
                        "eventCount",
                        Cell::Integer(i64::try_from(total).unwrap_or(i64::MAX)),
                    ),
                ];
                if total >= MAX_BATCH_EVENTS {
                    cells.push(("dueAt", Cell::Integer(now)));
                    cells.push(("nextTry", Cell::Text(timestamp_at(now))));
                } else if let Cell::Integer(due) = row[3] {
                    open_due = Some(due);
                }
                for (path, cell) in &cells {
                    let field = resource.field_at(path).expect("a declared field");
                    set_field(&mut update, field, cell);
                }
                stamp_update(&mut update, resource, &timestamp_at(now));
                self.execute(resource.table, &update).await?;
                let field = resource
                    .field_at("eventIds")
                    .expect("webhookDelivery.eventIds");
                let elements: Vec<(&str, usize, &str)> = added
                    .iter()
                    .enumerate()
                    .map(|(i, (event, _))| (id.as_str(), count + i, event.id.as_str()))
                    .collect();
                self.insert_list_elements(field, &elements).await?;
                rest = later;
            }
        }
        for size in batch_sizes(None, rest.len()).1 {
            let (chunk, later) = rest.split_at(size);
            rest = later;
            let due = if chunk.len() >= MAX_BATCH_EVENTS {
                now
            } else {
                let due = now.saturating_add(wait);
                open_due = Some(open_due.map_or(due, |d| Ord::min(d, due)));
                due
            };
            deliveries.push(batch_record(hook, chunk, now, due));
        }
        Ok(open_due)
    }
}

/// How `events` new events of a webhook are grouped: how many go to its open batch, which
/// holds `open` events (`None`: it has none), and the sizes of the new batches the rest
/// make, each full but the last.
fn batch_sizes(open: Option<usize>, events: usize) -> (usize, Vec<usize>) {
    let into_open = open.map_or(0, |held| MAX_BATCH_EVENTS.saturating_sub(held).min(events));
    let mut left = events - into_open;
    let mut sizes = Vec::new();
    while left > 0 {
        let size = left.min(MAX_BATCH_EVENTS);
        sizes.push(size);
        left -= size;
    }
    (into_open, sizes)
}

/// The body of one event as delivered: `{"id", "type", "createdDate", "data"}`; a batch's
/// `data` holds these, one per event.
fn event_body(event: &Event, data: &serde_json::Value) -> String {
    serde_json::json!({
        "id": event.id,
        "type": event.event_type,
        "createdDate": event.created_date,
        "data": data,
    })
    .to_string()
}

/// The body of a batch: `{"id", "type": "batch", "createdDate", "data": [<parts>]}`, written
/// with `data` last, so that [`append_to_batch`] adds events without reading the others.
fn batch_body<'p>(id: &str, created: &str, parts: impl IntoIterator<Item = &'p str>) -> String {
    let quoted = |text: &str| serde_json::Value::from(text).to_string();
    let mut body = format!(
        "{{\"id\":{},\"type\":{},\"createdDate\":{},\"data\":[]}}",
        quoted(id),
        quoted(BATCH_EVENT),
        quoted(created)
    );
    if let Some(with) = append_to_batch(&body, parts) {
        body = with;
    }
    body
}

/// A batch's body `body` ([`batch_body`]) with `parts` added after its events; `None` when
/// `body` does not end as a batch's does.
fn append_to_batch<'p>(body: &str, parts: impl IntoIterator<Item = &'p str>) -> Option<String> {
    let head = body.strip_suffix("]}")?;
    let mut out = String::with_capacity(body.len());
    out.push_str(head);
    let mut empty = head.ends_with('[');
    for part in parts {
        if !empty {
            out.push(',');
        }
        out.push_str(part);
        empty = false;
    }
    out.push_str("]}");
    Some(out)
}

/// The event types a batch's body carries, each once; `None` when it does not read as one.
fn batch_event_types(body: &str) -> Option<Vec<String>> {
    let batch: serde_json::Value = serde_json::from_str(body).ok()?;
    let mut types = batch["data"]
        .as_array()?
        .iter()
        .map(|part| part["type"].as_str().map(str::to_string))
        .collect::<Option<Vec<String>>>()?;
    types.sort();
    types.dedup();
    Some(types)
}

/// Records as a subscriber sees them, by (resource, id).
type RecordsSeen = HashMap<(String, String), serde_json::Value>;

/// The resource of events set aside by the fan-out.
fn event_problem() -> &'static Resource {
    catalog().get(Res::EventProblem)
}

/// A new `eventProblem` record: `event` set aside at `now` for `reason`.
fn problem_record(event: &Event, reason: &str, now: i64) -> Record {
    let resource = event_problem();
    let layout = Layout::of(resource);
    let mut record = Record::empty(resource);
    let mut set = |path: &str, cell: Cell| record.cells[layout.cell(path)] = cell;
    set("id", Cell::Text(new_id()));
    set("eventId", Cell::Text(event.id.clone()));
    set("eventType", Cell::Text(event.event_type.clone()));
    set("resource", Cell::Text(event.resource.clone()));
    set("recordId", Cell::Text(event.record_id.clone()));
    set("reason", Cell::Text(reason.to_string()));
    set("eventDate", Cell::Text(event.created_date.clone()));
    set("createdDate", Cell::Text(timestamp_at(now)));
    record
}

/// A new `webhookDelivery` record: pending, due now.
fn delivery_record(hook: &str, event: &Event, body: String, now: i64) -> Record {
    let resource = delivery();
    let layout = Layout::of(resource);
    let mut record = Record::empty(resource);
    let mut set = |path: &str, cell: Cell| record.cells[layout.cell(path)] = cell;
    set("id", Cell::Text(new_id()));
    set("fk_webhook", Cell::Text(hook.to_string()));
    set("eventId", Cell::Text(event.id.clone()));
    set("eventType", Cell::Text(event.event_type.clone()));
    set("status", DeliveryStatus::Pending.as_str().into());
    set("attempts", Cell::Integer(0));
    set("nextTry", Cell::Text(timestamp_at(now)));
    set("dueAt", Cell::Integer(now));
    set("createdDate", Cell::Text(timestamp_at(now)));
    set("body", Cell::Text(body));
    set("eventCount", Cell::Integer(1));
    record.lists[layout.list("eventIds")] = vec![event.id.clone()];
    record
}

/// A new batch delivery of `hook` carrying `parts` (events and their parts of the body),
/// opened at `now`, due at `due`.
fn batch_record(hook: &str, parts: &[(&Event, String)], now: i64, due: i64) -> Record {
    let resource = delivery();
    let layout = Layout::of(resource);
    let mut record = Record::empty(resource);
    let batch = new_id();
    let body = batch_body(
        &batch,
        &timestamp_at(now),
        parts.iter().map(|(_, part)| part.as_str()),
    );
    let mut set = |path: &str, cell: Cell| record.cells[layout.cell(path)] = cell;
    set("id", Cell::Text(new_id()));
    set("fk_webhook", Cell::Text(hook.to_string()));
    set("eventId", Cell::Text(batch));
    set("eventType", Cell::Text(BATCH_EVENT.to_string()));
    set("status", DeliveryStatus::Pending.as_str().into());
    set("attempts", Cell::Integer(0));
    set("nextTry", Cell::Text(timestamp_at(due)));
    set("dueAt", Cell::Integer(due));
    set("createdDate", Cell::Text(timestamp_at(now)));
    set("body", Cell::Text(body));
    set(
        "eventCount",
        Cell::Integer(i64::try_from(parts.len()).unwrap_or(i64::MAX)),
    );
    record.lists[layout.list("eventIds")] = parts.iter().map(|(e, _)| e.id.clone()).collect();
    record
}

#[cfg(test)]
mod tests {
    use super::*;

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
