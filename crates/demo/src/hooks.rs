//! Webhooks (docs/API.md, "Events and webhooks"): one per demo user of a host, a warehouse and the first company,
//! subscribed to the events that user would want, all inactive so that a demo never sends
//! anything anywhere until someone points one at a receiver and turns it on.

use brandhub_catalog::{Cell, UserType};

use crate::emit::{Emitter, Table};
use crate::random::alphanumerics;
use crate::time::{self, DAY, START};
use crate::{DemoCredential, Stream, World};

/// The events each demo user's webhook subscribes to.
fn events_of(user_type: UserType) -> Option<&'static [&'static str]> {
    match user_type {
        UserType::Host => Some(&["order.created", "order.updated"]),
        UserType::Warehouse => Some(&["order.created", "order.updated", "stock.updated"]),
        UserType::Company => Some(&[
            "file.processed",
            "file.failed",
            "stock.updated",
            "price.updated",
            "product.updated",
        ]),
        UserType::Admin | UserType::Sponsor => None,
    }
}

/// Emits the demo webhooks, after every other record.
pub(crate) fn webhooks(world: &mut World, credentials: &[DemoCredential], out: &mut Emitter) {
    let mut rng = world.rng(Stream::Webhooks);
    let t = Table::new("webhook");
    let [fk_user, url, active, batch, created, secret] =
        t.cells(["fk_user", "url", "active", "batch", "createdDate", "secret"]);
    let events = t.list("events");
    let mut seen = Vec::new();
    for credential in credentials {
        let Some(subscribed) = events_of(credential.user_type) else {
            continue;
        };
        // One company user is enough to show the company's events.
        if seen.contains(&credential.user_type) {
            continue;
        }
        seen.push(credential.user_type);
        let mut r = t.record(world.id());
        let local = credential.email.split('@').next().unwrap_or_default();
        r.cells[fk_user] = Cell::Text(credential.user_id.clone());
        r.cells[url] = format!("https://hooks.example.com/brandhub/{local}").into();
        r.cells[active] = Cell::Boolean(false);
        r.cells[batch] = Cell::Boolean(false);
        r.cells[created] =
            time::timestamp(time::moment(&mut rng, START + 30 * DAY, START + 60 * DAY)).into();
        r.cells[secret] = format!("whsec_{}", alphanumerics(&mut rng, 30)).into();
        r.lists[events] = subscribed.iter().map(|e| e.to_string()).collect();
        out.push(&t, r);
    }
}
