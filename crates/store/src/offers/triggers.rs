//! The triggers that keep offers current (docs/API.md, "Offers"): a write of a source (stock,
//! a price, a brand store, a variant, a product, a store) derives again, in the same
//! transaction, the offers of the (brand store, variant) pairs it touched; removing a variant
//! or a brand store removes its offers first; a new or changed offer writes its
//! `offer.updated` event, a removed one its `offer.deleted`, to the outbox, when an active
//! webhook subscribes.
//!
//! In the database, so that every writer keeps offers by construction: brandhub's write
//! pipeline in all its entry points, `brandhub import`, the demo loader, and an operator's
//! `UPDATE` in `psql`. PostgreSQL runs one derivation per statement over the rows it changed
//! (transition tables); SQLite, whose triggers run per row, one per row.

use super::derive::{
    DECIDED_BY_PRICE, Dialect, Drive, Rewrites, col, quantities_statement, refresh_statement, table,
};
use crate::db::Backend;
use crate::events::{EVENT_TABLE, REMOVED_COLUMN};
use brandhub_catalog::{Res, catalog};

/// The prefix of the triggers' (and PostgreSQL's functions') names.
const PREFIX: &str = "bh_offer";

/// A source of offers and how a changed row of it writes the offers it touches.
struct Source {
    res: Res,
    /// The events of the source whose rows touch offers.
    events: &'static [Event],
    /// How the offers its rows touch are written again.
    derivation: Derivation,
}

/// How a source's rows write the offers they touch.
enum Derivation {
    /// Derived again by the upsert ([`refresh_statement`]), starting from `drive`, rewriting
    /// `rewrites` of an existing offer; `touches` is the filter over the derivation's aliases
    /// that admits the offers of a row, `{r}` standing for the row.
    Refresh {
        touches: String,
        drive: Drive,
        rewrites: Rewrites,
    },
    /// Their quantities moved ([`quantities_statement`]): a stock row's.
    Quantities,
}

/// The rows a trigger of an event has changed, as its derivation reads them.
#[derive(Clone, Copy)]
enum Changed {
    /// One row: a SQLite trigger's `NEW` or `OLD`.
    Row(Event),
    /// A PostgreSQL statement trigger's transition table, `changed`.
    Transition(Event),
}

impl Changed {
    /// What the FROM clause lists for the rows: the transition table, or nothing (a SQLite
    /// trigger names its row directly).
    fn rows(self) -> Option<&'static str> {
        match self {
            Changed::Row(_) => None,
            Changed::Transition(_) => Some("changed c"),
        }
    }

    /// How the statement names a changed row.
    fn row(self) -> &'static str {
        match self {
            Changed::Row(event) => event.row(),
            Changed::Transition(_) => "c",
        }
    }

    /// Whether the rows were removed.
    fn removed(self) -> bool {
        matches!(
            self,
            Changed::Row(Event::Delete) | Changed::Transition(Event::Delete)
        )
    }
}

impl Derivation {
    /// The statement for the `changed` rows.
    fn statement(&self, d: &Dialect, changed: Changed) -> String {
        match self {
            Derivation::Refresh {
                touches,
                drive,
                rewrites,
            } => {
                let touched = touches.replace("{r}", changed.row());
                let filter = match changed.rows() {
                    None => touched,
                    // The offers the statement's rows touch are derived once, whatever the
                    // number of rows.
                    Some(rows) => format!("EXISTS (SELECT 1 FROM {rows} WHERE {touched})"),
                };
                refresh_statement(d, *drive, &filter, *rewrites)
            }
            Derivation::Quantities => {
                quantities_statement(d, changed.rows(), changed.row(), changed.removed())
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Event {
    Insert,
    Update,
    Delete,
}

impl Event {
    fn sql(self) -> &'static str {
        match self {
            Event::Insert => "INSERT",
            Event::Update => "UPDATE",
            Event::Delete => "DELETE",
        }
    }

    /// The row a trigger of this event reads.
    fn row(self) -> &'static str {
        match self {
            Event::Delete => "OLD",
            Event::Insert | Event::Update => "NEW",
        }
    }
}

const ALL: &[Event] = &[Event::Insert, Event::Update, Event::Delete];
const WRITTEN: &[Event] = &[Event::Insert, Event::Update];

fn sources() -> Vec<Source> {
    vec![
        Source {
            res: Res::Stock,
            events: ALL,
            derivation: Derivation::Quantities,
        },
        Source {
            res: Res::Price,
            events: ALL,
            derivation: Derivation::Refresh {
                touches: format!(
                    "v.\"id\" = {{r}}.{} AND s.{} = {{r}}.{}",
                    col(Res::Price, "fk_variant"),
                    col(Res::Store, "fk_host"),
                    col(Res::Price, "fk_host")
                ),
                drive: Drive::Variant,
                rewrites: DECIDED_BY_PRICE,
            },
        },
        Source {
            res: Res::BrandStore,
            events: WRITTEN,
            derivation: Derivation::Refresh {
                touches: "bs.\"id\" = {r}.\"id\"".to_string(),
                drive: Drive::BrandStore,
                rewrites: Rewrites::Every,
            },
        },
        Source {
            res: Res::Variant,
            events: WRITTEN,
            derivation: Derivation::Refresh {
                touches: "v.\"id\" = {r}.\"id\"".to_string(),
                drive: Drive::Variant,
                rewrites: Rewrites::Every,
            },
        },
        Source {
            res: Res::Product,
            events: &[Event::Update],
            derivation: Derivation::Refresh {
                touches: format!("v.{} = {{r}}.\"id\"", col(Res::Variant, "fk_product")),
                drive: Drive::Variant,
                rewrites: Rewrites::Every,
            },
        },
        Source {
            res: Res::Store,
            events: &[Event::Update],
            derivation: Derivation::Refresh {
                touches: format!("bs.{} = {{r}}.\"id\"", col(Res::BrandStore, "fk_store")),
                drive: Drive::BrandStore,
                rewrites: Rewrites::Every,
            },
        },
    ]
}

/// The records whose removal takes their offers with them: (source, the offer's link to it).
fn owners() -> [(Res, &'static str); 2] {
    [
        (Res::BrandStore, "fk_brandStore"),
        (Res::Variant, "fk_variant"),
    ]
}

/// The condition that an active webhook subscribes to `event_type`.
fn subscribed(event_type: &str) -> String {
    let hook = catalog().get(Res::Webhook);
    let field = hook.field_at("events").expect("webhook.events");
    let list = field.list.as_ref().expect("webhook.events is a list");
    format!(
        "EXISTS (SELECT 1 FROM \"{list}\" l JOIN \"{hook}\" w ON w.\"id\" = l.\"{owner}\" WHERE l.\"{value}\" = '{event_type}' AND w.{active})",
        list = list.table,
        hook = hook.table,
        owner = list.owner_column,
        value = list.value_column,
        active = col(Res::Webhook, "active"),
    )
}

/// The outbox insert of `event_type` for the offers `row` (a row, or the alias of offer rows
/// that `from` reads) that `when` admits; a removal's with the offer as it was.
fn outbox_insert(d: &Dialect, event_type: &str, row: &str, from: &str, when: &str) -> String {
    let removed = if event_type == deleted_event() {
        removed_json(d, row)
    } else {
        "NULL".to_string()
    };
    format!(
        "INSERT INTO \"{EVENT_TABLE}\" (\"id\", \"event_type\", \"resource\", \"record_id\", \"created_at\", \"created_date\", \"{REMOVED_COLUMN}\") \
         SELECT {id}, '{event_type}', '{resource}', {row}.\"id\", {millis}, {now}, {removed} {from} WHERE ({when}) AND {subscribed}",
        id = d.new_id(),
        resource = Res::Offer.name(),
        millis = d.now_millis(),
        now = d.now(),
        subscribed = subscribed(event_type),
    )
}

/// The removed offer `row` as its `offer.deleted` event carries it, with who could see it
/// ([`crate::events::REMOVED_COLUMN`]).
fn removed_json(d: &Dialect, row: &str) -> String {
    let pairs = [
        ("id", format!("{row}.\"id\"")),
        ("fk_store", format!("{row}.{}", col(Res::Offer, "fk_store"))),
        (
            "fk_variant",
            format!("{row}.{}", col(Res::Offer, "fk_variant")),
        ),
        ("hostSku", format!("{row}.{}", col(Res::Offer, "hostSku"))),
        (
            "_company",
            format!(
                "(SELECT b.{} FROM {} b WHERE b.\"id\" = {row}.{})",
                col(Res::Brand, "fk_company"),
                table(Res::Brand),
                col(Res::Offer, "fk_brand")
            ),
        ),
        (
            "_host",
            format!(
                "(SELECT h.{} FROM {} h WHERE h.\"id\" = {row}.{})",
                col(Res::Store, "fk_host"),
                table(Res::Store),
                col(Res::Offer, "fk_store")
            ),
        ),
    ];
    let args: Vec<String> = pairs
        .iter()
        .map(|(key, value)| format!("'{key}', {value}"))
        .collect();
    match d.backend {
        Backend::Postgres => format!("json_build_object({})::text", args.join(", ")),
        Backend::Sqlite => format!("json_object({})", args.join(", ")),
    }
}

/// Whether an offer's announced fields differ between `old` and `new`.
fn announced_change(d: &Dialect, old: &str, new: &str) -> String {
    super::derive::ANNOUNCED
        .iter()
        .map(|path| {
            let c = col(Res::Offer, path);
            d.differs(&format!("{old}.{c}"), &format!("{new}.{c}"))
        })
        .collect::<Vec<_>>()
        .join(" OR ")
}

fn updated_event() -> &'static str {
    catalog()
        .get(Res::Offer)
        .events
        .expect("offers announce")
        .updated
}

fn deleted_event() -> &'static str {
    catalog()
        .get(Res::Offer)
        .events
        .and_then(|e| e.deleted)
        .expect("offers announce their removal")
}

/// The statements that make the triggers, run by every migration after the tables exist.
pub fn statements(backend: Backend) -> Vec<String> {
    match backend {
        Backend::Sqlite => sqlite(),
        Backend::Postgres => postgres(),
    }
}

fn sqlite() -> Vec<String> {
    let d = Dialect {
        backend: Backend::Sqlite,
    };
    let mut statements = Vec::new();
    let mut trigger = |name: String, body: String| {
        statements.push(format!("DROP TRIGGER IF EXISTS \"{name}\"; {body}"));
    };
    for source in sources() {
        let resource = catalog().get(source.res);
        for event in source.events {
            let name = format!("{PREFIX}_{}_{}", resource.table, event.sql().to_lowercase());
            // An update names the table's columns: setting the change mark fires nothing.
            let on = match event {
                Event::Update => crate::changes::update_of(resource),
                Event::Insert | Event::Delete => event.sql().to_string(),
            };
            trigger(
                name.clone(),
                format!(
                    "CREATE TRIGGER \"{name}\" AFTER {on} ON {} BEGIN {}; END",
                    table(source.res),
                    source.derivation.statement(&d, Changed::Row(*event))
                ),
            );
        }
    }
    for (owner, link) in owners() {
        let name = format!("{PREFIX}_{}_removal", catalog().get(owner).table);
        trigger(
            name.clone(),
            format!(
                "CREATE TRIGGER \"{name}\" BEFORE DELETE ON {} BEGIN DELETE FROM {} WHERE {} = OLD.\"id\"; END",
                table(owner),
                table(Res::Offer),
                col(Res::Offer, link)
            ),
        );
    }
    let offer = table(Res::Offer);
    trigger(
        format!("{PREFIX}_announce_insert"),
        format!(
            "CREATE TRIGGER \"{PREFIX}_announce_insert\" AFTER INSERT ON {offer} BEGIN {}; END",
            outbox_insert(&d, updated_event(), "NEW", "", "1 = 1")
        ),
    );
    trigger(
        format!("{PREFIX}_announce_update"),
        format!(
            "CREATE TRIGGER \"{PREFIX}_announce_update\" AFTER {} ON {offer} BEGIN {}; END",
            crate::changes::update_of(catalog().get(Res::Offer)),
            outbox_insert(
                &d,
                updated_event(),
                "NEW",
                "",
                &announced_change(&d, "OLD", "NEW")
            )
        ),
    );
    trigger(
        format!("{PREFIX}_announce_delete"),
        format!(
            "CREATE TRIGGER \"{PREFIX}_announce_delete\" AFTER DELETE ON {offer} BEGIN {}; END",
            outbox_insert(&d, deleted_event(), "OLD", "", "1 = 1")
        ),
    );
    statements
}

fn postgres() -> Vec<String> {
    let d = Dialect {
        backend: Backend::Postgres,
    };
    let mut statements = Vec::new();
    // A function of the trigger's name, and the trigger `{timing} … ON on {rest}` calling it.
    // A BEFORE trigger returns the row to go on with (`OLD`), an AFTER one nothing.
    let mut function_and_trigger = |name: String,
                                    body: String,
                                    timing: String,
                                    on: String,
                                    rest: &str| {
        let returns = if timing.starts_with("BEFORE") {
            "OLD"
        } else {
            "NULL"
        };
        statements.push(format!(
            "CREATE OR REPLACE FUNCTION \"{name}\"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {body}; RETURN {returns}; END $$"
        ));
        statements.push(format!("DROP TRIGGER IF EXISTS \"{name}\" ON {on}"));
        statements.push(format!(
            "CREATE TRIGGER \"{name}\" {timing} ON {on} {rest} EXECUTE FUNCTION \"{name}\"()"
        ));
    };
    for source in sources() {
        let resource = catalog().get(source.res);
        for event in source.events {
            let name = format!("{PREFIX}_{}_{}", resource.table, event.sql().to_lowercase());
            // The rows the statement changed, as a transition table.
            let rows = match event {
                Event::Delete => "OLD TABLE AS changed",
                Event::Insert | Event::Update => "NEW TABLE AS changed",
            };
            function_and_trigger(
                name,
                source.derivation.statement(&d, Changed::Transition(*event)),
                format!("AFTER {}", event.sql()),
                table(source.res),
                &format!("REFERENCING {rows} FOR EACH STATEMENT"),
            );
        }
    }
    for (owner, link) in owners() {
        let name = format!("{PREFIX}_{}_removal", catalog().get(owner).table);
        function_and_trigger(
            name,
            format!(
                "DELETE FROM {} WHERE {} = OLD.\"id\"",
                table(Res::Offer),
                col(Res::Offer, link)
            ),
            "BEFORE DELETE".to_string(),
            table(owner),
            "FOR EACH ROW",
        );
    }
    let offer = table(Res::Offer);
    function_and_trigger(
        format!("{PREFIX}_announce_insert"),
        outbox_insert(&d, updated_event(), "changed", "FROM changed", "true"),
        "AFTER INSERT".to_string(),
        offer.clone(),
        "REFERENCING NEW TABLE AS changed FOR EACH STATEMENT",
    );
    function_and_trigger(
        format!("{PREFIX}_announce_update"),
        outbox_insert(
            &d,
            updated_event(),
            "changed",
            "FROM changed JOIN was ON was.\"id\" = changed.\"id\"",
            &announced_change(&d, "was", "changed"),
        ),
        "AFTER UPDATE".to_string(),
        offer.clone(),
        "REFERENCING OLD TABLE AS was NEW TABLE AS changed FOR EACH STATEMENT",
    );
    function_and_trigger(
        format!("{PREFIX}_announce_delete"),
        outbox_insert(&d, deleted_event(), "changed", "FROM changed", "true"),
        "AFTER DELETE".to_string(),
        offer,
        "REFERENCING OLD TABLE AS changed FOR EACH STATEMENT",
    );
    statements
}
