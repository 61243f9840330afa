//! Events and their delivery: the event types a webhook may subscribe to, what a delivery
//! carries and the statuses it goes through, with the declarations of webhooks, their
//! deliveries and the events set aside.

use super::{EVERYONE, SELF_SERVICE, WRITE};
use crate::handle::Res;
use crate::model::{
    Anchor::Own, Domain, FieldDefault, FieldType, Policy, Resource, Secret, SecretKept, boolean,
    fk, id_field, integer, lengths, list, text, timestamp,
};

// The events a webhook may subscribe to (docs/API.md, "Events and webhooks"), each named once.
pub(super) const ORDER_CREATED: &str = "order.created";
pub(super) const ORDER_UPDATED: &str = "order.updated";
pub(super) const STOCK_UPDATED: &str = "stock.updated";
pub(super) const PRICE_UPDATED: &str = "price.updated";
pub(super) const PRODUCT_UPDATED: &str = "product.updated";
pub(super) const OFFER_UPDATED: &str = "offer.updated";
pub(super) const OFFER_DELETED: &str = "offer.deleted";

/// Every event type (docs/API.md, "Events and webhooks"): the `webhook.events` domain. A catalog test holds it to
/// what the resources announce and what files announce.
pub const EVENT_TYPES: [&str; 9] = [
    ORDER_CREATED,
    ORDER_UPDATED,
    "file.processed",
    "file.failed",
    STOCK_UPDATED,
    PRICE_UPDATED,
    PRODUCT_UPDATED,
    OFFER_UPDATED,
    OFFER_DELETED,
];

/// The type of a delivery that carries a batch of events (`webhook.batch`, docs/API.md,
/// "Events and webhooks"): its body's `type`, its `webhookDelivery.eventType`.
pub const BATCH_EVENT: &str = "batch";

/// The most events one batch delivery carries.
pub const MAX_BATCH_EVENTS: usize = 1_000;

/// What a `webhookDelivery` carries: one event of a type of [`EVENT_TYPES`], or a batch.
pub const DELIVERY_TYPES: [&str; 10] = [
    ORDER_CREATED,
    ORDER_UPDATED,
    "file.processed",
    "file.failed",
    STOCK_UPDATED,
    PRICE_UPDATED,
    PRODUCT_UPDATED,
    OFFER_UPDATED,
    OFFER_DELETED,
    BATCH_EVENT,
];

/// A webhook delivery's way: `pending` (not tried yet), `retrying` (an attempt failed, the
/// next is due at `nextTry`), `delivered` (a 2xx answer) or `failed` (no 2xx answer within the
/// retry period).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryStatus {
    Pending,
    Retrying,
    Delivered,
    Failed,
}

impl DeliveryStatus {
    /// The word `webhookDelivery.status` holds.
    pub const fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Retrying => "retrying",
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Failed => "failed",
        }
    }
}

/// The words of [`DeliveryStatus`], as the `webhookDelivery.status` domain lists them.
pub const DELIVERY_STATUSES: [&str; 4] = [
    DeliveryStatus::Pending.as_str(),
    DeliveryStatus::Retrying.as_str(),
    DeliveryStatus::Delivered.as_str(),
    DeliveryStatus::Failed.as_str(),
];

pub(super) fn webhook() -> Resource {
    Resource::new(
        Res::Webhook.name(),
        "webhook",
        "A subscription of a user to events, delivered as signed POSTs to its URL.",
    )
    .labelled("{url}")
    .relation_fk(fk("fk_user", "webhook_user").or_else(FieldDefault::Writer(Own)), "user")
    .field(
        text("url")
            .max_chars(lengths::URL)
            .domain(Domain::SecureUrl)
            .doc("The receiver: an https URL."),
    )
    .field(
        list("events", FieldType::Text, "webhook_event", "webhook_id", "event_text")
            .domain(Domain::OneOf(&EVENT_TYPES))
            .doc("The event types delivered."),
    )
    .field(
        boolean("active")
            .required()
            .or_else(FieldDefault::Boolean(true))
            .doc("Inactive webhooks receive nothing."),
    )
    .field(
        boolean("batch")
            .required()
            .or_else(FieldDefault::Boolean(false))
            .doc("Deliver events in batches: up to 1,000 per delivery, sent when 1,000 are due or 1 second after the first."),
    )
    .field(timestamp("createdDate").indexed().required())
    .field(text("secret").internal())
    .field(
        id_field("madeWithKey")
            .internal()
            .or_else(FieldDefault::WriterKey)
            .doc("The API key it was made with, whose grants bound its deliveries; unset when made in a session or from the command line."),
    )
    .writable(&["fk_user", "url", "events", "active", "batch"], &["url", "events"], &["url", "events", "active", "batch"], true)
    .policy(Policy::WebhookBounds)
    .with_secret(Secret {
        prefix: "whsec_",
        shown_as: "secret",
        kept: SecretKept::In("secret"),
        start_in: None,
        used_in: None,
    })
    .scope(EVERYONE, &[&[("fk_user", Own)]])
    .writable_by(WRITE, SELF_SERVICE, &[&[("fk_user", Own)]])
}

pub(super) fn webhook_delivery() -> Resource {
    Resource::new(
        Res::WebhookDelivery.name(),
        "webhook_delivery",
        "One event, or a batch of events, on its way to one webhook: each attempt, its answer and the next try.",
    )
    .labelled("{eventType} · {eventId}")
    .relation_fk(fk("fk_webhook", "webhookDelivery_webhook"), "webhook")
    .field(text("eventId").indexed().short().doc("The event's id (a batch's: the batch's own id), the same in every attempt: the body's id."))
    .field(text("eventType").indexed().short().domain(Domain::OneOf(&DELIVERY_TYPES)).doc("The event's type, or batch."))
    .field(
        list("eventIds", FieldType::Id, "webhook_delivery_event", "delivery_id", "event_id")
            .doc("The ids of the events it carries, oldest first: one, or up to 1,000 in a batch."),
    )
    .field(integer("eventCount").internal().doc("How many events it carries, for the fan-out that fills a batch."))
    .field(text("status").indexed().short().domain(Domain::OneOf(&DELIVERY_STATUSES)))
    .field(integer("attempts").doc("Attempts made so far."))
    .field(integer("lastResponseCode").doc("The HTTP status of the last answer; empty when none came."))
    .field(text("lastError").doc("Why the last attempt failed, when it did."))
    .field(timestamp("nextTry").indexed().doc("When the next attempt is due; empty once delivered or failed."))
    .field(timestamp("createdDate").indexed().required())
    .field(timestamp("deliveredDate"))
    .field(text("body").internal().long().doc("The event as delivered, before signing."))
    .field(integer("dueAt").internal().indexed().doc("nextTry in milliseconds, for claims."))
    .field(integer("claimedUntil").internal().doc("A sender's claim lasts until then (ms)."))
    .scope(EVERYONE, &[&[("webhookDelivery_webhook.fk_user", Own)]])
}

pub(super) fn event_problem() -> Resource {
    // No scope rule: admins only. Written by the fan-out alone.
    Resource::new(
        Res::EventProblem.name(),
        "event_problem",
        "An event the webhook fan-out could not build, because its record did not read: set aside with the reason, so that the events after it still flow. Admins only; read-only.",
    )
    .labelled("{eventType} · {eventId}")
    .field(text("eventId").indexed().short().doc("The event's id."))
    .field(text("eventType").indexed().short().domain(Domain::OneOf(&EVENT_TYPES)))
    .field(text("resource").indexed().short().doc("The resource of the record the event is about."))
    .field(id_field("recordId").indexed().doc("The record the event is about."))
    .field(text("reason").long().doc("Why the event could not be built: what failed to read."))
    .field(timestamp("eventDate").doc("When the change the event announces committed."))
    .field(timestamp("createdDate").indexed().required().doc("When the event was set aside."))
}
