//! Batches: a webhook that takes them gets its events appended to an open delivery, due
//! once full or after the batch's wait.

use super::*;
use crate::db::{Kind, WriteTx};
use crate::error::StoreResult;
use crate::ids::{new_id, timestamp_at};
use crate::write::{set_field, stamp_update};
use brandhub_catalog::Res;
use brandhub_catalog::{
    BATCH_EVENT, Cell, DeliveryStatus, Layout, MAX_BATCH_EVENTS, Record, Resource, catalog,
};
use sea_query::{Alias, Cond, Condition, Expr, ExprTrait, LockType, Order, Query};
use std::collections::HashMap;

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
    pub(super) async fn add_to_batches(
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
pub(super) fn batch_sizes(open: Option<usize>, events: usize) -> (usize, Vec<usize>) {
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
pub(super) fn event_body(event: &Event, data: &serde_json::Value) -> String {
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
pub(super) fn batch_body<'p>(
    id: &str,
    created: &str,
    parts: impl IntoIterator<Item = &'p str>,
) -> String {
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
pub(super) fn append_to_batch<'p>(
    body: &str,
    parts: impl IntoIterator<Item = &'p str>,
) -> Option<String> {
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
pub(super) fn batch_event_types(body: &str) -> Option<Vec<String>> {
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
pub(super) type RecordsSeen = HashMap<(String, String), serde_json::Value>;

/// The resource of events set aside by the fan-out.
pub(super) fn event_problem() -> &'static Resource {
    catalog().get(Res::EventProblem)
}

/// A new `eventProblem` record: `event` set aside at `now` for `reason`.
pub(super) fn problem_record(event: &Event, reason: &str, now: i64) -> Record {
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
pub(super) fn delivery_record(hook: &str, event: &Event, body: String, now: i64) -> Record {
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
