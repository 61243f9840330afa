//! A write transaction's announcements: the events it keeps in the outbox, in the same
//! transaction, for the event types some active webhook subscribes to.

use super::*;
use crate::db::WriteTx;
use crate::error::StoreResult;
use crate::ids::{new_id, timestamp_at};
use brandhub_catalog::{Cell, Resource};
use sea_query::{Alias, Expr, ExprTrait, Query};
use std::collections::HashSet;

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
