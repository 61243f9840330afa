//! Webhooks (docs/API.md, "Events and webhooks") against a real HTTP receiver started by each test (plain http on
//! 127.0.0.1, allowed by the servers' `--webhook-allow-insecure-localhost`): signed order
//! events to the host, the same order without money to the warehouse, nothing out of scope,
//! retries with growing delays, nothing for a change that rolled back, the secret shown once,
//! URLs that are not https or name an address that is not public refused when written (and,
//! for a name resolving to loopback, when a delivery connects), deliveries bounded by the key
//! a webhook was made with (and none once it is revoked), at most 50 webhooks a user; and with
//! `brandhub serve` processes: a server killed mid-delivery delivers after a restart (same
//! event id), two servers on one PostgreSQL never make the same attempt twice.

mod common;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use brandhub_webhooks::schedule::RetrySchedule;
use brandhub_webhooks::sign::{SIGNATURE_HEADER, verify};
use common::orders::{call, get, intake_body, ok, patch, place, text, unique};
use common::process::Brandhub;
use common::{Db, Fixture};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Received {
    headers: HeaderMap,
    body: Vec<u8>,
    at: Instant,
}

impl Received {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    }
}

/// How the receiver answers.
#[derive(Debug, Clone, Copy)]
enum Answering {
    /// 500 to the first `n` attempts of every delivery, 200 after.
    FailFirst(i64),
    /// Never answers the first attempt of a delivery (holds it open); 200 after.
    HangFirst,
}

#[derive(Clone)]
struct Receiver {
    url: String,
    got: Arc<Mutex<Vec<Received>>>,
    arrived: Arc<Notify>,
}

#[derive(Clone)]
struct ReceiverState {
    got: Arc<Mutex<Vec<Received>>>,
    arrived: Arc<Notify>,
    answering: Answering,
}

async fn receive(
    State(state): State<ReceiverState>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let attempt: i64 = headers
        .get("BrandHub-Attempt")
        .and_then(|v| v.to_str().ok()?.parse().ok())
        .unwrap_or(0);
    state.got.lock().unwrap().push(Received {
        headers,
        body: body.to_vec(),
        at: Instant::now(),
    });
    state.arrived.notify_waiters();
    match state.answering {
        Answering::FailFirst(n) if attempt <= n => StatusCode::INTERNAL_SERVER_ERROR,
        Answering::HangFirst if attempt <= 1 => {
            std::future::pending::<()>().await;
            StatusCode::OK
        }
        _ => StatusCode::OK,
    }
}

/// Starts a receiver on 127.0.0.1 on the current runtime.
async fn receiver(answering: Answering) -> Receiver {
    let got = Arc::new(Mutex::new(Vec::new()));
    let arrived = Arc::new(Notify::new());
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(receive))
        .with_state(ReceiverState {
            got: got.clone(),
            arrived: arrived.clone(),
            answering,
        });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Receiver { url, got, arrived }
}

impl Receiver {
    /// Waits (up to a minute) until the requests received satisfy `done`; returns them.
    async fn until(&self, done: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let notified = self.arrived.notified();
            {
                let got = self.got.lock().unwrap();
                if done(&got) {
                    return got.clone();
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "the receiver did not get what was expected within a minute: {:?}",
                self.got
                    .lock()
                    .unwrap()
                    .iter()
                    .map(Received::json)
                    .collect::<Vec<_>>()
            );
            let _ = tokio::time::timeout(left.min(Duration::from_millis(500)), notified).await;
        }
    }

    /// The requests about record `id` of event type `event_type`.
    fn about(got: &[Received], event_type: &str, id: &str) -> Vec<Received> {
        got.iter()
            .filter(|r| {
                let body = r.json();
                body["type"] == event_type && body["data"]["id"] == id
            })
            .cloned()
            .collect()
    }
}

/// Fast webhook settings for the in-process servers of these tests.
fn fast_webhooks(settings: &mut brandhub_server::Settings) {
    settings.webhooks.allow_insecure_localhost = true;
    settings.webhooks.poll_interval = Duration::from_millis(50);
    settings.webhooks.batch_wait = BATCH_WAIT;
    settings.webhooks.timeout = Duration::from_secs(5);
    settings.webhooks.retry = RetrySchedule {
        first: Duration::from_millis(400),
        longest: Duration::from_secs(5),
        period: Duration::from_secs(3600),
    };
}

fn fixture(db: Db) -> Option<&'static Fixture> {
    common::shared_with(db, "webhooks", common::SCALE, fast_webhooks)
}

/// Subscribes `user_type`'s demo user to `events` at `url`; the webhook's id and secret.
async fn subscribe(fx: &Fixture, user_type: &str, url: &str, events: &[&str]) -> (String, String) {
    let answer = call(
        fx,
        reqwest::Method::POST,
        "/api/webhook",
        user_type,
        Some(json!({"url": url, "events": events})),
    )
    .await;
    assert_eq!(
        answer.status,
        201,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    let hook = answer.records("webhook")[0].clone();
    let secret = text(&hook["secret"]);
    assert!(secret.starts_with("whsec_"), "{hook}");
    assert_eq!(hook["active"], true);
    (text(&hook["id"]), secret)
}

/// The bodies of the deliveries made for a webhook so far, read from the database.
async fn delivery_bodies(fx: &Fixture, webhook: &str) -> Vec<Value> {
    let store = fx.store.clone();
    let webhook = webhook.to_string();
    fx.on_server(async move {
        use sea_query::ExprTrait;
        let select = sea_query::Query::select()
            .column(sea_query::Alias::new("body"))
            .from(sea_query::Alias::new("webhook_delivery"))
            .and_where(sea_query::Expr::col(sea_query::Alias::new("fk_webhook")).eq(webhook))
            .to_owned();
        store
            .fetch(
                &select,
                &[brandhub_store::db::Kind::Text],
                &Default::default(),
            )
            .await
            .expect("deliveries read")
            .into_iter()
            .map(|row| serde_json::from_str(row[0].as_text().unwrap()).unwrap())
            .collect()
    })
    .await
}

/// A request as `who` (a user's email and a key or session secret).
async fn call_as(
    fx: &Fixture,
    method: reqwest::Method,
    path: &str,
    who: &(String, String),
    body: Option<Value>,
) -> common::Response {
    common::send(
        fx,
        &fx.base,
        method,
        path,
        common::As::Key(&who.0, &who.1),
        &[],
        body.as_ref(),
    )
    .await
}

/// A demo user's credentials.
fn demo(fx: &Fixture, user_type: &str) -> (String, String) {
    let credential = fx.credential(user_type);
    (credential.email.clone(), credential.secret.clone())
}

/// An id as rendered: a plain string, or a link's `__KEY`.
fn id_of(value: &Value) -> String {
    text(value.get("__KEY").unwrap_or(value))
}

/// A webhook made by `who`; its id, after checking the 201.
async fn webhook_as(fx: &Fixture, who: &(String, String), url: &str, events: &[&str]) -> String {
    let made = call_as(
        fx,
        reqwest::Method::POST,
        "/api/webhook",
        who,
        Some(json!({"url": url, "events": events})),
    )
    .await;
    assert_eq!(made.status, 201, "{}", String::from_utf8_lossy(&made.body));
    text(&made.records("webhook")[0]["id"])
}

/// A new API key of the demo user `user_type` with these grants: its id and credentials.
async fn key_of(fx: &Fixture, user_type: &str, grants: &[&str]) -> (String, (String, String)) {
    let body = if grants.is_empty() {
        json!({})
    } else {
        json!({"grants": grants})
    };
    let made = call(
        fx,
        reqwest::Method::POST,
        "/api/apiKey",
        user_type,
        Some(body),
    )
    .await;
    assert_eq!(made.status, 201, "{}", String::from_utf8_lossy(&made.body));
    let key = &made.records("apiKey")[0];
    (
        text(&key["id"]),
        (fx.credential(user_type).email.clone(), text(&key["secret"])),
    )
}

/// Places an order as the demo host, in `slot`; its id.
async fn new_order(fx: &Fixture, slot: usize) -> String {
    let p = place(fx, slot).await;
    let order = ok(
        &call(
            fx,
            reqwest::Method::POST,
            "/api/order",
            "host",
            Some(intake_body(&p, &unique("BOUND"))),
        )
        .await,
        201,
    );
    text(&order["id"])
}

/// Whether the deliveries made for `webhook` include one of `event_type` about record `id`.
async fn delivered_about(fx: &Fixture, webhook: &str, event_type: &str, id: &str) -> bool {
    delivery_bodies(fx, webhook)
        .await
        .iter()
        .any(|b| b["type"] == event_type && b["data"]["id"] == id)
}

/// A TCP listener on 127.0.0.1 that only counts the connections made to it.
struct Listener {
    port: u16,
    accepted: Arc<std::sync::atomic::AtomicUsize>,
}

impl Listener {
    async fn start() -> Listener {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counting = accepted.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counting.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                drop(stream);
            }
        });
        Listener { port, accepted }
    }

    /// The connections others made so far: connects once itself and waits until that is
    /// accepted (connections are accepted in order), then leaves its own out.
    async fn connections_by_others(&self) -> usize {
        let before = self.accepted.load(std::sync::atomic::Ordering::SeqCst);
        let _own = tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .expect("the listener accepts");
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.accepted.load(std::sync::atomic::Ordering::SeqCst) == before {
            assert!(
                Instant::now() < deadline,
                "the listener accepted the test's own connection"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.accepted.load(std::sync::atomic::Ordering::SeqCst) - 1
    }
}

/// Waits (up to a minute) for a delivery of `webhook` that `done` accepts, reading the log as
/// `user_type`; returns it.
async fn delivery_where(
    fx: &Fixture,
    user_type: &str,
    webhook: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let log = get(fx, user_type, &format!("/api/webhookDelivery?fk_webhook={webhook}&fields=eventId,eventType,status,attempts,lastError&pageSize=1000")).await;
        if let Some(found) = log.records("webhookDelivery").into_iter().find(|d| done(d)) {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "no such delivery within a minute: {:?}",
            log.records("webhookDelivery")
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The webhook URLs a hostile review named, each refused when written: addresses that are
/// not public, however spelled, and the user-name trick.
const NOT_PUBLIC: [&str; 14] = [
    "https://169.254.169.254/latest/meta-data/",
    "http://169.254.169.254/latest/meta-data/",
    "https://127.0.0.1/hook",
    "https://[::1]/hook",
    "https://10.0.0.5/hook",
    "https://0.0.0.0/hook",
    "https://0x7f000001/hook",
    "https://2130706433/hook",
    "https://127.1/hook",
    "https://[::ffff:127.0.0.1]/hook",
    "https://100.64.1.1/hook",
    "https://[fd00::1]/hook",
    "https://localhost/hook",
    "https://api.localhost./hook",
];

/// Each URL of [`NOT_PUBLIC`] and the user-name trick is 422 naming `url` and saying why, and
/// no webhook is made.
async fn refuses_urls_that_are_not_public(fx: &Fixture) {
    let host = fx.credential("host");
    let count = || async {
        get(
            fx,
            "host",
            &format!("/api/webhook/count?fk_user={}", host.user_id),
        )
        .await
        .json()["count"]
            .clone()
    };
    let before = count().await;
    for url in NOT_PUBLIC {
        let answer = call(
            fx,
            reqwest::Method::POST,
            "/api/webhook",
            "host",
            Some(json!({"url": url, "events": ["order.created"]})),
        )
        .await;
        let problem = answer.assert_problem(422, "validation_failed");
        assert_eq!(problem["errors"][0]["field"], "url", "{url}: {problem}");
        let message = text(&problem["errors"][0]["message"]);
        assert!(
            message.contains("not a public address") || message.contains("not a public one"),
            "{url}: {message}"
        );
    }
    for url in [
        "http://localhost:80@example.invalid/",
        "https://hooks@example.com/",
    ] {
        let answer = call(
            fx,
            reqwest::Method::POST,
            "/api/webhook",
            "host",
            Some(json!({"url": url, "events": ["order.created"]})),
        )
        .await;
        let problem = answer.assert_problem(422, "validation_failed");
        assert_eq!(problem["errors"][0]["field"], "url", "{url}: {problem}");
        assert!(
            text(&problem["errors"][0]["message"]).contains("user name or password"),
            "{url}: {problem}"
        );
    }
    // A change to such a URL is refused as well.
    let id = webhook_as(
        fx,
        &demo(fx, "host"),
        "https://hooks.example.com/public",
        &["order.created"],
    )
    .await;
    let answer = call(
        fx,
        reqwest::Method::PATCH,
        &format!("/api/webhook/{id}"),
        "host",
        Some(json!({"url": "https://169.254.169.254/"})),
    )
    .await;
    assert_eq!(
        answer.assert_problem(422, "validation_failed")["errors"][0]["field"],
        "url"
    );
    assert_eq!(
        call(
            fx,
            reqwest::Method::DELETE,
            &format!("/api/webhook/{id}"),
            "host",
            None
        )
        .await
        .status,
        204
    );
    assert_eq!(count().await, before, "no webhook was made");
}

#[tokio::test]
async fn webhook_urls_that_are_not_public_are_refused_on_sqlite() {
    let fx = common::shared(Db::Sqlite, "webhooks-without-flag").expect("SQLite always runs");
    refuses_urls_that_are_not_public(fx).await;
}

#[tokio::test]
async fn webhook_urls_that_are_not_public_are_refused_on_postgres() {
    let Some(fx) = common::shared(Db::Postgres, "webhooks-without-flag") else {
        return;
    };
    refuses_urls_that_are_not_public(fx).await;
}

/// How long a batch gathers events on the servers of these tests: long enough for a write of
/// 1,000 events to be fanned out into one batch while every other test of the binary runs
/// (200 events a transaction, each read as every subscriber sees it), short enough to wait for.
const BATCH_WAIT: Duration = Duration::from_secs(5);

/// Creates a record as the admin; its id.
async fn create_as_admin(fx: &Fixture, resource: &str, body: Value) -> String {
    let answer = call(
        fx,
        reqwest::Method::POST,
        &format!("/api/{resource}"),
        "admin",
        Some(body),
    )
    .await;
    assert_eq!(
        answer.status,
        201,
        "{resource}: {}",
        String::from_utf8_lossy(&answer.body)
    );
    text(&answer.records(resource)[0]["id"])
}

/// A user of `user_type` made for this test (with `links`, e.g. its warehouse), and a key of
/// its own: its credentials.
async fn own_user(fx: &Fixture, user_type: &str, links: Value) -> (String, String) {
    let email = format!("{}@example.test", unique("batch").to_lowercase());
    let mut body = json!({"name": "Batch receiver", "email": email, "type": user_type});
    body.as_object_mut()
        .unwrap()
        .extend(links.as_object().unwrap().clone());
    let user = create_as_admin(fx, "user", body).await;
    let key = call(
        fx,
        reqwest::Method::POST,
        "/api/apiKey",
        "admin",
        Some(json!({"fk_user": user})),
    )
    .await;
    assert_eq!(key.status, 201, "{}", String::from_utf8_lossy(&key.body));
    (email, text(&key.records("apiKey")[0]["secret"]))
}

/// A company and a warehouse of this test's own, and a warehouse user of it: whose stock
/// nobody else writes, and who sees only that. The warehouse's id and the user.
async fn own_warehouse(fx: &Fixture) -> (String, (String, String)) {
    let n = common::unique_number();
    let company = create_as_admin(
        fx,
        "company",
        json!({"name": format!("Batch company {n}"), "code": format!("BC{n}")}),
    )
    .await;
    let warehouse = create_as_admin(fx, "warehouse", json!({"fk_company": company, "name": format!("Batch warehouse {n}"), "code": format!("BW{n}")})).await;
    let user = own_user(fx, "warehouse", json!({"fk_warehouse": warehouse})).await;
    (warehouse, user)
}

/// A webhook of `who` on `events` at `url`, in batches or not; its id and secret.
async fn webhook_with(
    fx: &Fixture,
    who: &(String, String),
    url: &str,
    events: &[&str],
    batch: bool,
) -> (String, String) {
    let made = call_as(
        fx,
        reqwest::Method::POST,
        "/api/webhook",
        who,
        Some(json!({"url": url, "events": events, "batch": batch})),
    )
    .await;
    assert_eq!(made.status, 201, "{}", String::from_utf8_lossy(&made.body));
    let hook = &made.records("webhook")[0];
    assert_eq!(hook["batch"], batch, "{hook}");
    (text(&hook["id"]), text(&hook["secret"]))
}

/// `count` demo variants, by id.
async fn demo_variants(fx: &Fixture, count: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for page in 1.. {
        if ids.len() >= count {
            break;
        }
        let found = get(
            fx,
            "admin",
            &format!("/api/variant?pageSize=1000&page={page}&fields=id&order_by=id"),
        )
        .await
        .ids("variant");
        assert!(!found.is_empty(), "the demo has {count} variants");
        ids.extend(found);
    }
    ids.truncate(count);
    ids
}

/// Creates stock records of `variants` in `warehouse` in one array write; their ids, in order.
async fn stock_of(fx: &Fixture, warehouse: &str, variants: &[String]) -> Vec<String> {
    let body: Vec<Value> = variants
        .iter()
        .enumerate()
        .map(|(i, v)| json!({"fk_warehouse": warehouse, "fk_variant": v, "inStock": i % 50}))
        .collect();
    let answer = call(
        fx,
        reqwest::Method::POST,
        "/api/stock",
        "admin",
        Some(json!(body)),
    )
    .await;
    assert_eq!(
        answer.status,
        201,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    answer.ids("stock")
}

/// The events a batch delivery carries, as its body lists them.
fn batch_events(received: &Received) -> Vec<Value> {
    let body = received.json();
    assert_eq!(body["type"], "batch", "{body}");
    body["data"]
        .as_array()
        .expect("a batch's data is an array")
        .clone()
}

/// The ids of the records the events of every batch received so far are about.
fn batched_record_ids(got: &[Received]) -> Vec<String> {
    got.iter()
        .flat_map(batch_events)
        .map(|e| id_of(&e["data"]["id"]))
        .collect()
}

macro_rules! on_both {
    ($(async fn $name:ident($fx:ident) $body:block)*) => {
        mod sqlite {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test]
                async fn $name() {
                    let $fx = fixture(Db::Sqlite).expect("SQLite always runs");
                    $body
                }
            )*
        }
        mod postgres {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test]
                async fn $name() {
                    if common::postgres_or_skip().is_none() { return; }
                    let $fx = fixture(Db::Postgres).expect("PostgreSQL is configured");
                    $body
                }
            )*
        }
    };
}

on_both! {

async fn a_batch_webhook_gets_one_signed_delivery_of_a_writes_events_oldest_first(fx) {
    let (warehouse, user) = own_warehouse(fx).await;
    let batches = receiver(Answering::FailFirst(0)).await;
    let (batch_hook, secret) = webhook_with(fx, &user, &batches.url, &["stock.updated"], true).await;
    let singles = receiver(Answering::FailFirst(0)).await;
    webhook_with(fx, &user, &singles.url, &["stock.updated"], false).await;
    let stock = stock_of(fx, &warehouse, &demo_variants(fx, 3).await).await;

    // One delivery carries the three events, in the order of the write, signed as usual.
    let got = batches.until(|got| batched_record_ids(got).len() >= 3).await;
    assert_eq!(got.len(), 1, "one delivery: {:?}", got.iter().map(Received::json).collect::<Vec<_>>());
    let delivery = &got[0];
    assert!(verify(&secret, &delivery.header(SIGNATURE_HEADER), &delivery.body).is_some(), "the signature verifies");
    assert_eq!(delivery.header("BrandHub-Event"), "batch");
    assert_eq!(delivery.header("BrandHub-Attempt"), "1");
    let body = delivery.json();
    assert_eq!(text(&body["id"]).len(), 32);
    assert!(!text(&body["createdDate"]).is_empty());
    let events = batch_events(delivery);
    assert_eq!(batched_record_ids(&got), stock, "oldest first: {events:?}");
    for event in &events {
        assert_eq!(event["type"], "stock.updated");
        assert_eq!(text(&event["id"]).len(), 32);
        assert!(!text(&event["createdDate"]).is_empty());
        assert_eq!(id_of(&event["data"]["fk_warehouse"]), warehouse);
    }
    let event_ids: Vec<String> = events.iter().map(|e| text(&e["id"])).collect();

    // Its log lists the events it carries; its eventId is the batch's.
    let log = call_as(fx, reqwest::Method::GET, &format!("/api/webhookDelivery?fk_webhook={batch_hook}&fields=eventId,eventType,eventIds,status"), &user, None).await;
    assert_eq!(log.status, 200, "{}", String::from_utf8_lossy(&log.body));
    let logged = log.records("webhookDelivery");
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert_eq!(logged[0]["eventType"], "batch");
    assert_eq!(logged[0]["eventId"], body["id"]);
    assert_eq!(logged[0]["eventIds"], json!(event_ids));

    // A webhook without batches gets one delivery per event, of the same events.
    let got = singles.until(|got| got.len() >= 3).await;
    let mut single_ids: Vec<String> = got.iter().map(|r| text(&r.json()["id"])).collect();
    single_ids.sort();
    let mut sorted = event_ids.clone();
    sorted.sort();
    assert_eq!(single_ids, sorted);
    for single in &got {
        assert_eq!(single.json()["type"], "stock.updated");
        assert_eq!(single.header("BrandHub-Event"), "stock.updated");
    }
}

async fn more_than_a_thousand_events_go_as_a_full_batch_and_the_rest(fx) {
    let (warehouse, user) = own_warehouse(fx).await;
    let batches = receiver(Answering::FailFirst(0)).await;
    webhook_with(fx, &user, &batches.url, &["stock.updated"], true).await;
    let variants = demo_variants(fx, 1_500).await;
    let mut stock = stock_of(fx, &warehouse, &variants[..1_000]).await;
    stock.extend(stock_of(fx, &warehouse, &variants[1_000..]).await);
    let got = batches.until(|got| batched_record_ids(got).len() >= 1_500).await;
    let sizes: Vec<usize> = got.iter().map(|r| batch_events(r).len()).collect();
    assert_eq!(sizes, [1_000, 500]);
    assert_eq!(batched_record_ids(&got), stock, "every event once, oldest first");
}

async fn a_batch_webhook_on_offers_gets_one_event_per_changed_offer(fx) {
    // A world of this test's own: a brand with a product of 30 variants, a host whose store
    // offers them from a warehouse without stock.
    let n = common::unique_number();
    let company = create_as_admin(fx, "company", json!({"name": format!("Batch company {n}"), "code": format!("BC{n}")})).await;
    let brand = create_as_admin(fx, "brand", json!({"fk_company": company, "name": format!("Batch brand {n}"), "code": format!("BB{n}")})).await;
    let warehouse = create_as_admin(fx, "warehouse", json!({"fk_company": company, "name": format!("Batch warehouse {n}"), "code": format!("BW{n}")})).await;
    let product = create_as_admin(fx, "product", json!({"fk_brand": brand, "code": format!("BP{n}"), "title": "Batch shirt", "status": "active"})).await;
    let variants: Vec<Value> = (0..30).map(|i| json!({"fk_product": product, "barcode": format!("7{:011}", common::unique_number()), "size": format!("S{i}"), "colour": "Blue", "detail": {"price": 10.0}})).collect();
    let answer = call(fx, reqwest::Method::POST, "/api/variant", "admin", Some(json!(variants))).await;
    assert_eq!(answer.status, 201, "{}", String::from_utf8_lossy(&answer.body));
    let host = create_as_admin(fx, "host", json!({"name": format!("Batch host {n}"), "code": format!("BH{n}")})).await;
    let store = create_as_admin(fx, "store", json!({"fk_host": host, "name": format!("Batch store {n}"), "code": format!("BS{n}"), "currency": "EUR"})).await;
    let user = own_user(fx, "host", json!({"fk_host": host})).await;
    let batches = receiver(Answering::FailFirst(0)).await;
    webhook_with(fx, &user, &batches.url, &["offer.updated"], true).await;
    let brand_store = create_as_admin(fx, "brandStore", json!({"fk_brand": brand, "fk_store": store, "fk_warehouse": warehouse})).await;
    let offers = get(fx, "admin", &format!("/api/offer?fk_brandStore={brand_store}&fields=id&pageSize=100")).await.ids("offer");
    assert_eq!(offers.len(), 30);

    // Each new offer is announced; their batch goes out before the next write (`data` is the
    // record when fanned out, so events still waiting would carry the next write's values).
    let announced = batches.until(|got| batched_record_ids(got).len() >= 30).await;
    let mut created = batched_record_ids(&announced);
    created.sort();
    let mut expected = offers.clone();
    expected.sort();
    assert_eq!(created, expected, "each new offer once");

    // One write changes every offer of the brand store: each is in the next batches once.
    let changed = call(fx, reqwest::Method::PATCH, &format!("/api/brandStore/{brand_store}"), "admin", Some(json!({"detail": {"stockType": "fixed", "fixedQuantity": 7}}))).await;
    assert_eq!(changed.status, 200, "{}", String::from_utf8_lossy(&changed.body));
    let first = announced.len();
    let got = batches.until(|got| batched_record_ids(&got[first..]).len() >= 30).await;
    let mut seen = batched_record_ids(&got[first..]);
    seen.sort();
    assert_eq!(seen, expected, "one event per changed offer");
    for event in got[first..].iter().flat_map(batch_events) {
        assert_eq!(event["data"]["available"], 7, "{event}");
    }
    for event in got.iter().flat_map(batch_events) {
        assert_eq!(event["type"], "offer.updated");
        assert_eq!(id_of(&event["data"]["fk_brandStore"]), brand_store);
    }
    assert!(got.len() < 10, "the events came in batches: {} deliveries", got.len());
}

async fn order_events_reach_their_subscribers_signed_as_each_may_see_them(fx) {
    let hooks = receiver(Answering::FailFirst(0)).await;
    let (_, host_secret) = subscribe(fx, "host", &hooks.url, &["order.created", "order.updated"]).await;
    let warehouse_hooks = receiver(Answering::FailFirst(0)).await;
    let (warehouse_hook, warehouse_secret) = subscribe(fx, "warehouse", &warehouse_hooks.url, &["order.updated", "price.updated", "stock.updated"]).await;
    let p = place(fx, 5).await;
    let order = ok(&call(fx, reqwest::Method::POST, "/api/order", "host", Some(intake_body(&p, &unique("WH")))).await, 201);
    let id = text(&order["id"]);

    // The host hears of the new order, signed with its secret, with the money it may see.
    let got = hooks.until(|got| !Receiver::about(got, "order.created", &id).is_empty()).await;
    let created = &Receiver::about(&got, "order.created", &id)[0];
    let signed = verify(&host_secret, &created.header(SIGNATURE_HEADER), &created.body);
    assert!(signed.is_some(), "the signature verifies: {}", created.header(SIGNATURE_HEADER));
    assert!(verify(&warehouse_secret, &created.header(SIGNATURE_HEADER), &created.body).is_none());
    let body = created.json();
    assert_eq!(created.header("BrandHub-Event"), "order.created");
    assert_eq!(body["data"]["status"], "new");
    assert_eq!(body["data"]["detail"]["gross"], json!(44.0), "{body}");
    assert_eq!(text(&body["id"]).len(), 32);
    assert!(!text(&body["createdDate"]).is_empty());

    // The intake moved demand: the warehouse hears of each stock record it changed.
    let stock_of = |got: &[Received], variant: &str| -> Option<Value> {
        got.iter().map(Received::json).find(|b| b["type"] == "stock.updated" && b["data"]["fk_variant"]["__KEY"].as_str().or(b["data"]["fk_variant"].as_str()) == Some(variant) && b["data"]["fk_warehouse"]["__KEY"].as_str().or(b["data"]["fk_warehouse"].as_str()) == Some(p.warehouse.as_str()))
    };
    let got = warehouse_hooks.until(|got| p.variants.iter().all(|(v, _)| stock_of(got, v).is_some())).await;
    for (variant, _) in &p.variants {
        let (in_stock, demand, available) = common::orders::stock(fx, &p.warehouse, variant).await;
        let data = stock_of(&got, variant).unwrap()["data"].clone();
        assert_eq!((data["inStock"].as_i64(), data["demand"].as_i64(), data["available"].as_i64()), (Some(in_stock), Some(demand), Some(available)), "{data}");
    }

    // The warehouse acknowledges: both hear of it; the warehouse without the money.
    let items = get(fx, "warehouse", &format!("/api/orderItem?fk_order={id}&fields=id&order_by=hostItemRef")).await.ids("orderItem");
    ok(&patch(fx, "warehouse", &id, json!({"status": "accepted", "order_orderItem": [{"id": items[2], "status": "REJ", "detail": {"reason": "OUT_OF_STOCK"}}]})).await, 200);
    let got = warehouse_hooks.until(|got| !Receiver::about(got, "order.updated", &id).is_empty()).await;
    let seen = &Receiver::about(&got, "order.updated", &id)[0];
    assert!(verify(&warehouse_secret, &seen.header(SIGNATURE_HEADER), &seen.body).is_some());
    let data = &seen.json()["data"];
    assert_eq!(data["status"], "accepted");
    assert!(data["detail"].get("gross").is_none() && data["detail"].get("net").is_none(), "money stays hidden from warehouses: {data}");
    let got = hooks.until(|got| !Receiver::about(got, "order.updated", &id).is_empty()).await;
    let seen = Receiver::about(&got, "order.updated", &id)[0].json();
    assert_eq!(seen["data"]["status"], "accepted");
    assert!(seen["data"]["detail"].get("gross").is_some(), "{seen}");

    // A price change reaches the company that owns it, and not the warehouse, which sees no prices.
    let company_hooks = receiver(Answering::FailFirst(0)).await;
    subscribe(fx, "company", &company_hooks.url, &["price.updated"]).await;
    let price = get(fx, "company", "/api/price?pageSize=1&fields=id,rrp&order_by=id").await.records("price")[0].clone();
    let price_id = text(&price["id"]);
    let answer = call(fx, reqwest::Method::PATCH, &format!("/api/price/{price_id}"), "company", Some(json!({"rrp": 99.5}))).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    company_hooks.until(|got| !Receiver::about(got, "price.updated", &price_id).is_empty()).await;
    // The fan-out made every delivery of that event in one transaction: none is the warehouse's.
    let warehouse_bodies = delivery_bodies(fx, &warehouse_hook).await;
    assert!(warehouse_bodies.iter().all(|b| b["type"] != "price.updated"), "{warehouse_bodies:?}");
    assert!(warehouse_bodies.iter().all(|b| b["data"]["detail"].get("gross").is_none()));
}

async fn a_failing_receiver_gets_the_event_again_with_growing_delays(fx) {
    let hooks = receiver(Answering::FailFirst(2)).await;
    let (hook, _) = subscribe(fx, "company", &hooks.url, &["product.updated"]).await;
    let product = get(fx, "company", "/api/product?pageSize=1&page=3&fields=id&order_by=id").await.ids("product")[0].clone();
    let answer = call(fx, reqwest::Method::PATCH, &format!("/api/product/{product}"), "company", Some(json!({"title": unique("Retried")}))).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    let got = hooks.until(|got| Receiver::about(got, "product.updated", &product).len() >= 3).await;
    let attempts = Receiver::about(&got, "product.updated", &product);
    assert_eq!(attempts.len(), 3, "two failures, then the delivery");
    let ids: Vec<String> = attempts.iter().map(|a| text(&a.json()["id"])).collect();
    assert!(ids.iter().all(|i| *i == ids[0]), "one event id in every attempt: {ids:?}");
    let numbers: Vec<String> = attempts.iter().map(|a| a.header("BrandHub-Attempt")).collect();
    assert_eq!(numbers, ["1", "2", "3"]);
    let (first, second) = (attempts[1].at - attempts[0].at, attempts[2].at - attempts[1].at);
    assert!(first >= Duration::from_millis(400), "the first retry waits the first delay: {first:?}");
    assert!(second > first, "delays grow: {first:?} then {second:?}");
    // The delivery log, read with the shared conventions (the sender records the answer just
    // after the receiver gave it).
    let deadline = Instant::now() + Duration::from_secs(60);
    let deliveries = loop {
        let deliveries = get(fx, "company", &format!("/api/webhookDelivery?fk_webhook={hook}&eventId={}&status=delivered&fields=eventId,eventType,status,attempts,lastResponseCode,deliveredDate", ids[0])).await;
        let deliveries = deliveries.records("webhookDelivery");
        if !deliveries.is_empty() || Instant::now() > deadline {
            break deliveries;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let ours: Vec<&Value> = deliveries.iter().collect();
    assert_eq!(ours.len(), 1, "{deliveries:?}");
    assert_eq!(ours[0]["attempts"], 3);
    assert_eq!(ours[0]["lastResponseCode"], 200);
    assert!(!text(&ours[0]["deliveredDate"]).is_empty());
    // The server's metrics count the attempts.
    let metrics = reqwest::get(format!("{}/metrics", fx.metrics_base)).await.unwrap().text().await.unwrap();
    let sample = |outcome: &str| -> f64 {
        let prefix = format!("brandhub_webhook_attempts_total{{outcome=\"{outcome}\"}} ");
        metrics.lines().find_map(|l| l.strip_prefix(&prefix)?.parse().ok()).unwrap_or(0.0)
    };
    assert!(sample("retried") >= 2.0 && sample("delivered") >= 1.0, "{metrics}");
    assert!(metrics.contains("brandhub_webhook_backlog{state=\"deliveries\"}"), "{metrics}");
}

async fn a_change_that_rolled_back_announces_nothing(fx) {
    let hooks = receiver(Answering::FailFirst(0)).await;
    let (hook, _) = subscribe(fx, "company", &hooks.url, &["product.updated"]).await;
    let brand = get(fx, "company", "/api/brand?pageSize=1&fields=id&order_by=id").await.ids("brand")[0].clone();
    let code = unique("RB");
    // Products are written first, then the variant fails: the whole import rolls back.
    let document = json!({
        "product": [{"fk_brand": brand, "code": code, "title": "Rolled back"}],
        "variant": [{"fk_product": format!("{brand}/NO-SUCH-PRODUCT"), "barcode": "5000000000017"}]
    });
    let store = fx.store.clone();
    let failed = fx.on_server(async move { store.import(document.to_string().as_bytes()).await }).await;
    assert!(failed.is_err(), "the import fails");
    // A change that commits, after it: its event arrives; the rolled-back product's never does.
    let product = get(fx, "company", "/api/product?pageSize=1&page=4&fields=id&order_by=id").await.ids("product")[0].clone();
    let answer = call(fx, reqwest::Method::PATCH, &format!("/api/product/{product}"), "company", Some(json!({"title": unique("Committed")}))).await;
    assert_eq!(answer.status, 200);
    hooks.until(|got| !Receiver::about(got, "product.updated", &product).is_empty()).await;
    let bodies = delivery_bodies(fx, &hook).await;
    assert!(!bodies.is_empty());
    assert!(bodies.iter().all(|b| b["data"]["code"] != code.as_str()), "no event of the rolled-back product");
    assert!(get(fx, "company", &format!("/api/product?code={code}")).await.records("product").is_empty());
}

async fn a_processed_file_is_announced_with_its_counts(fx) {
    let hooks = receiver(Answering::FailFirst(0)).await;
    subscribe(fx, "company", &hooks.url, &["file.processed", "file.failed"]).await;
    let brand = get(fx, "company", "/api/brand?pageSize=1&fields=id&order_by=id").await.ids("brand")[0].clone();
    let code = unique("FILE");
    let bytes = common::xlsx(&[
        common::row(&["Product Code", "Title", "Barcode", "Size"]),
        common::row(&[&code, "Announced tee", "5012345678900", "M"]),
    ]);
    let credential = fx.credential("company");
    let answer = fx
        .client()
        .post(format!("{}/api/file?wait=60", fx.base))
        .header("content-type", format!("multipart/form-data; boundary={}", common::BOUNDARY))
        .body(common::multipart(&[(&format!("product,{brand}"), Some("products.xlsx"), &bytes)]))
        .basic_auth(&credential.email, Some(&credential.secret))
        .send()
        .await
        .unwrap();
    let answer = common::Response::read(answer).await;
    assert_eq!(answer.status, 201, "{}", String::from_utf8_lossy(&answer.body));
    let file = answer.records("file")[0].clone();
    let id = text(&file["id"]);
    let got = hooks.until(|got| got.iter().any(|r| r.json()["data"]["id"] == id.as_str())).await;
    let event = got.iter().map(Received::json).find(|b| b["data"]["id"] == id.as_str()).unwrap();
    assert_eq!(event["type"], format!("file.{}", text(&file["status"])), "{event}");
    assert_eq!(event["data"]["detail"]["rowsRead"], file["detail"]["rowsRead"]);
}

async fn the_flag_allows_loopback_literals_only(fx) {
    // With --webhook-allow-insecure-localhost, the user-name trick and loopback names are
    // still refused: the host is what a client connects to.
    for (url, why) in [
        ("http://localhost:80@example.invalid/", "user name or password"),
        ("http://127.0.0.1:9@example.invalid/", "user name or password"),
        ("http://localhost:9/hook", "this machine, not a public address"),
        ("http://10.0.0.5/hook", "a private address"),
        ("http://[::ffff:127.0.0.1]:9/hook", "a loopback address, not a public address"),
        ("http://hooks.example.com/hook", "is not an https URL"),
    ] {
        let answer = call(fx, reqwest::Method::POST, "/api/webhook", "host", Some(json!({"url": url, "events": ["order.created"]}))).await;
        let problem = answer.assert_problem(422, "validation_failed");
        assert_eq!(problem["errors"][0]["field"], "url", "{url}: {problem}");
        assert!(text(&problem["errors"][0]["message"]).contains(why), "{url}: {problem}");
    }
    // A loopback literal, however spelled, is what the flag allows.
    for url in ["http://0x7f000001:9/hook", "https://[::1]:9/hook", "http://127.0.0.2:9/hook"] {
        let id = webhook_as(fx, &demo(fx, "host"), url, &["order.created"]).await;
        let paused = call(fx, reqwest::Method::PATCH, &format!("/api/webhook/{id}"), "host", Some(json!({"active": false}))).await;
        assert_eq!(paused.status, 200, "{}", String::from_utf8_lossy(&paused.body));
    }
}

async fn a_name_that_resolves_to_loopback_is_refused_when_a_delivery_connects(fx) {
    let listener = Listener::start().await;
    // Made paused with a loopback literal (which the flag allows), then pointed at a name
    // the way a URL stored before these rules is: `localhost` resolves to the loopback
    // address with no network, as a public name may resolve to a private address later.
    let made = call(fx, reqwest::Method::POST, "/api/webhook", "company", Some(json!({"url": format!("http://127.0.0.1:{}/hook", listener.port), "events": ["product.updated"], "active": false}))).await;
    assert_eq!(made.status, 201, "{}", String::from_utf8_lossy(&made.body));
    let hook = text(&made.records("webhook")[0]["id"]);
    let store = fx.store.clone();
    let (id, url) = (hook.clone(), format!("https://localhost:{}/hook", listener.port));
    fx.on_server(async move {
        use sea_query::{Alias, Expr, ExprTrait, Query};
        let update = Query::update()
            .table(Alias::new("webhook"))
            .value(Alias::new("url"), url)
            .value(Alias::new("active"), true)
            .and_where(Expr::col(Alias::new("id")).eq(id))
            .to_owned();
        assert_eq!(store.execute_untracked("webhook", &update).await.expect("the URL is changed"), 1);
    })
    .await;
    let product = get(fx, "company", "/api/product?pageSize=1&page=5&fields=id&order_by=id").await.ids("product")[0].clone();
    let answer = call(fx, reqwest::Method::PATCH, &format!("/api/product/{product}"), "company", Some(json!({"title": unique("Resolved")}))).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    let attempted = delivery_where(fx, "company", &hook, |d| d["attempts"].as_i64() >= Some(1) && !text(&d["lastError"]).is_empty()).await;
    let error = text(&attempted["lastError"]);
    assert!(error.contains("localhost resolves to no public address") && error.contains("a loopback address"), "{error}");
    assert_eq!(listener.connections_by_others().await, 0, "no delivery connected to the local listener");
    assert_eq!(call(fx, reqwest::Method::PATCH, &format!("/api/webhook/{hook}"), "company", Some(json!({"active": false}))).await.status, 200);
}

async fn a_webhook_delivers_only_what_the_key_it_was_made_with_may_read(fx) {
    // A key limited to webhooks reads no orders...
    let (_, narrow) = key_of(fx, "host", &["webhook:*"]).await;
    call_as(fx, reqwest::Method::GET, "/api/order?pageSize=1", &narrow, None).await.assert_problem(403, "forbidden");
    // ...so its webhook gets none, while the full key's webhook does.
    let narrow_hooks = receiver(Answering::FailFirst(0)).await;
    let narrow_hook = webhook_as(fx, &narrow, &narrow_hooks.url, &["order.created"]).await;
    let full_hooks = receiver(Answering::FailFirst(0)).await;
    let full_hook = webhook_as(fx, &demo(fx, "host"), &full_hooks.url, &["order.created"]).await;
    let order = new_order(fx, 6).await;
    full_hooks.until(|got| !Receiver::about(got, "order.created", &order).is_empty()).await;
    // The fan-out makes every delivery of an event in one transaction.
    assert!(delivered_about(fx, &full_hook, "order.created", &order).await);
    assert!(!delivered_about(fx, &narrow_hook, "order.created", &order).await, "the webhook:* key's webhook got an order");
    assert!(Receiver::about(&narrow_hooks.got.lock().unwrap(), "order.created", &order).is_empty());
    // Nor does that key point the full key's webhook at itself.
    let taken = call_as(fx, reqwest::Method::PATCH, &format!("/api/webhook/{full_hook}"), &narrow, Some(json!({"url": "https://hooks.example.com/taken"}))).await;
    let problem = taken.assert_problem(403, "forbidden");
    assert!(text(&problem["detail"]).contains("order"), "{problem}");
    // It still changes its own.
    let paused = call_as(fx, reqwest::Method::PATCH, &format!("/api/webhook/{narrow_hook}"), &narrow, Some(json!({"active": false}))).await;
    assert_eq!(paused.status, 200, "{}", String::from_utf8_lossy(&paused.body));
    assert_eq!(call(fx, reqwest::Method::PATCH, &format!("/api/webhook/{full_hook}"), "host", Some(json!({"active": false}))).await.status, 200);
}

async fn a_revoked_keys_webhook_falls_silent_and_sends_nothing_pending(fx) {
    let (key, with_key) = key_of(fx, "host", &[]).await;
    // A receiver that fails every attempt keeps a delivery pending.
    let hooks = receiver(Answering::FailFirst(i64::MAX)).await;
    let hook = webhook_as(fx, &with_key, &hooks.url, &["order.created"]).await;
    let first = new_order(fx, 7).await;
    hooks.until(|got| !Receiver::about(got, "order.created", &first).is_empty()).await;
    // Revoked: the pending delivery is not sent again, and a new order reaches no one.
    assert_eq!(call(fx, reqwest::Method::DELETE, &format!("/api/apiKey/{key}"), "host", None).await.status, 204);
    let sent_before = Receiver::about(&hooks.got.lock().unwrap(), "order.created", &first).len();
    let others = receiver(Answering::FailFirst(0)).await;
    let other_hook = webhook_as(fx, &demo(fx, "host"), &others.url, &["order.created"]).await;
    let second = new_order(fx, 7).await;
    others.until(|got| !Receiver::about(got, "order.created", &second).is_empty()).await;
    assert!(!delivered_about(fx, &hook, "order.created", &second).await, "a revoked key's webhook got a new order");
    let withheld = delivery_where(fx, "host", &hook, |d| d["status"] == "failed").await;
    assert!(text(&withheld["lastError"]).contains("the API key it was made with is revoked"), "{withheld}");
    let sent = Receiver::about(&hooks.got.lock().unwrap(), "order.created", &first).len();
    // An attempt already claimed when the revocation committed may still arrive; none after.
    assert!(sent <= sent_before + 1, "{sent} attempts, {sent_before} before the revocation");
    assert!(Receiver::about(&hooks.got.lock().unwrap(), "order.created", &second).is_empty());
    assert_eq!(call(fx, reqwest::Method::PATCH, &format!("/api/webhook/{other_hook}"), "host", Some(json!({"active": false}))).await.status, 200);
}

async fn a_webhook_made_in_a_session_outlives_the_session(fx) {
    let host = fx.credential("host");
    let signed = common::send(fx, &fx.base, reqwest::Method::POST, "/api/session", common::As::Nobody, &[], Some(&json!({"email": host.email, "password": brandhub::demo_load::demo_password(host.user_type)}))).await;
    assert_eq!(signed.status, 201, "{}", String::from_utf8_lossy(&signed.body));
    let session = (host.email.clone(), text(&signed.json()["key"]));
    let hooks = receiver(Answering::FailFirst(0)).await;
    let hook = webhook_as(fx, &session, &hooks.url, &["order.created"]).await;
    assert_eq!(call_as(fx, reqwest::Method::DELETE, "/api/session", &session, None).await.status, 204);
    let order = new_order(fx, 8).await;
    hooks.until(|got| !Receiver::about(got, "order.created", &order).is_empty()).await;
    assert_eq!(call(fx, reqwest::Method::PATCH, &format!("/api/webhook/{hook}"), "host", Some(json!({"active": false}))).await.status, 200);
}

async fn a_user_has_at_most_fifty_webhooks(fx) {
    // A user of its own, so that no other test's webhooks count.
    let host = get(fx, "admin", &format!("/api/user/{}?fields=fk_host", fx.credential("host").user_id)).await.records("user")[0]["fk_host"].clone();
    let email = format!("{}@example.test", unique("hooks").to_lowercase());
    let user = call(fx, reqwest::Method::POST, "/api/user", "admin", Some(json!({"name": "Fifty Hooks", "email": email, "type": "host", "fk_host": id_of(&host)}))).await;
    assert_eq!(user.status, 201, "{}", String::from_utf8_lossy(&user.body));
    let user = text(&user.records("user")[0]["id"]);
    let key = call(fx, reqwest::Method::POST, "/api/apiKey", "admin", Some(json!({"fk_user": user}))).await;
    let who = (email, text(&key.records("apiKey")[0]["secret"]));
    let hooks = |n: usize| json!((0..n).map(|i| json!({"url": format!("https://hooks.example.com/{i}"), "events": ["order.created"], "active": false})).collect::<Vec<_>>());
    let count = || async { call_as(fx, reqwest::Method::GET, "/api/webhook/count", &who, None).await.json()["count"].clone() };
    // 51 at once: refused whole.
    let refused = call_as(fx, reqwest::Method::POST, "/api/webhook", &who, Some(hooks(51))).await;
    let problem = refused.assert_problem(409, "conflict");
    assert!(text(&problem["detail"]).contains("may have 50"), "{problem}");
    assert_eq!(count().await, 0, "nothing was written");
    // 48 at once, then three at the same time: only two more fit.
    assert_eq!(call_as(fx, reqwest::Method::POST, "/api/webhook", &who, Some(hooks(48))).await.status, 201);
    let one = || call_as(fx, reqwest::Method::POST, "/api/webhook", &who, Some(json!({"url": "https://hooks.example.com/one", "events": ["order.created"], "active": false})));
    let (a, b, c) = tokio::join!(one(), one(), one());
    let mut statuses = [a.status, b.status, c.status];
    statuses.sort();
    assert_eq!(statuses, [201, 201, 409]);
    assert_eq!(count().await, 50);
    let problem = one().await.assert_problem(409, "conflict");
    assert!(text(&problem["detail"]).contains("has 50 webhooks and may have 50"), "{problem}");
}

async fn webhooks_are_their_users_own_and_their_secret_is_shown_once(fx) {
    let (id, _) = subscribe(fx, "host", "https://hooks.example.com/brandhub", &["order.created"]).await;
    let read = get(fx, "host", &format!("/api/webhook/{id}")).await;
    assert_eq!(read.status, 200);
    let hook = &read.records("webhook")[0];
    assert!(hook.get("secret").is_none(), "the secret is shown on creation only: {hook}");
    assert_eq!(hook["events"], json!(["order.created"]));
    // Another user neither sees nor changes it.
    get(fx, "warehouse", &format!("/api/webhook/{id}")).await.assert_problem(404, "not_found");
    let other = call(fx, reqwest::Method::PATCH, &format!("/api/webhook/{id}"), "warehouse", Some(json!({"active": false}))).await;
    other.assert_problem(404, "not_found");
    // Its owner pauses it.
    let paused = call(fx, reqwest::Method::PATCH, &format!("/api/webhook/{id}"), "host", Some(json!({"active": false}))).await;
    assert_eq!(paused.status, 200);
    assert_eq!(paused.records("webhook")[0]["active"], false);
    // Not https, or an event that does not exist: one 422 naming both.
    let wrong = call(fx, reqwest::Method::POST, "/api/webhook", "host", Some(json!({"url": "http://hooks.example.com/x", "events": ["order.created", "order.eaten"]}))).await;
    let problem = wrong.assert_problem(422, "validation_failed");
    let fields: Vec<String> = problem["errors"].as_array().unwrap().iter().map(|e| text(&e["field"])).collect();
    assert_eq!(fields, ["events", "url"], "{problem}");
}

}

/// A server started without `--webhook-allow-insecure-localhost` refuses plain http even to
/// this machine.
#[tokio::test]
async fn plain_http_to_this_machine_needs_the_flag() {
    let fx = common::shared(Db::Sqlite, "webhooks-without-flag").expect("SQLite always runs");
    let answer = call(
        fx,
        reqwest::Method::POST,
        "/api/webhook",
        "host",
        Some(json!({"url": "http://127.0.0.1:9/hook", "events": ["order.created"]})),
    )
    .await;
    let problem = answer.assert_problem(422, "validation_failed");
    assert!(
        problem["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("--webhook-allow-insecure-localhost"),
        "{problem}"
    );
}

/// The demo credentials (user type → (email, key)) printed by `brandhub demo`.
fn credentials(
    brandhub: &Brandhub,
    scale: u64,
) -> std::collections::HashMap<String, (String, String)> {
    brandhub
        .demo(scale)
        .into_iter()
        .map(|(user_type, email, key)| (user_type, (email, key)))
        .collect()
}

/// PATCHes `count` products (page `page` of them by id) of the demo company user through `base`, each a product.updated
/// event; returns their ids.
async fn patch_products(
    client: &reqwest::Client,
    base: &str,
    company: &(String, String),
    count: usize,
    page: usize,
) -> Vec<String> {
    let listed: Value = client
        .get(format!(
            "{base}/api/product?pageSize={count}&page={page}&fields=id&order_by=id"
        ))
        .basic_auth(&company.0, Some(&company.1))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<String> = listed["response"]["product"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| text(&p["id"]))
        .collect();
    assert_eq!(ids.len(), count);
    for id in &ids {
        let answer = client
            .patch(format!("{base}/api/product/{id}"))
            .basic_auth(&company.0, Some(&company.1))
            .json(&json!({"title": unique("Sent")}))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
    }
    ids
}

async fn subscribe_through(
    client: &reqwest::Client,
    base: &str,
    user: &(String, String),
    url: &str,
) {
    let answer = client
        .post(format!("{base}/api/webhook"))
        .basic_auth(&user.0, Some(&user.1))
        .json(&json!({"url": url, "events": ["product.updated"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 201, "{}", answer.text().await.unwrap());
}

const FAST: [&str; 6] = [
    "--webhook-allow-insecure-localhost",
    "--webhook-poll",
    "50ms",
    "--webhook-retry-first",
    "200ms",
    "--workers",
];

/// A `serve` killed (SIGKILL) while its receiver holds the attempt open: after a restart, the
/// event is delivered, with the same event id, once the dead server's claim expired.
#[tokio::test]
async fn a_server_killed_mid_delivery_delivers_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let brandhub = Brandhub::new(dir.path());
    let users = credentials(&brandhub, 100);
    let hooks = receiver(Answering::HangFirst).await;
    // A 2 s time-out: the claim lasts 2 × 2 + 5 = 9 s.
    let first = brandhub.serve(&[&FAST[..], &["0", "--webhook-timeout", "2s"]].concat());
    let client = brandhub.client();
    subscribe_through(&client, &first.base, &users["company"], &hooks.url).await;
    let ids = patch_products(&client, &first.base, &users["company"], 1, 1).await;
    let got = hooks
        .until(|got| !Receiver::about(got, "product.updated", &ids[0]).is_empty())
        .await;
    let event = text(&Receiver::about(&got, "product.updated", &ids[0])[0].json()["id"]);
    first.kill();
    let second = brandhub.serve(&[&FAST[..], &["0"]].concat());
    let got = hooks
        .until(|got| Receiver::about(got, "product.updated", &ids[0]).len() >= 2)
        .await;
    let again = &Receiver::about(&got, "product.updated", &ids[0])[1];
    assert_eq!(
        text(&again.json()["id"]),
        event,
        "the same event, delivered again"
    );
    assert_eq!(again.header("BrandHub-Attempt"), "2");
    drop(second);
}

/// Two `serve` processes on one PostgreSQL database: every event is delivered, and no attempt
/// is made twice.
#[tokio::test]
async fn two_servers_never_make_the_same_attempt_twice() {
    if common::postgres_or_skip().is_none() {
        return;
    }
    let (url, dir) = common::fresh_database(Db::Postgres, "hooks-two").await;
    let brandhub = Brandhub::on(dir.path(), &url);
    let users = credentials(&brandhub, 200);
    let hooks = receiver(Answering::FailFirst(0)).await;
    let servers = [
        brandhub.serve(&[&FAST[..], &["0", "--webhook-senders", "4"]].concat()),
        brandhub.serve(&[&FAST[..], &["0", "--webhook-senders", "4"]].concat()),
    ];
    let client = brandhub.client();
    subscribe_through(&client, &servers[0].base, &users["company"], &hooks.url).await;
    // Half the changes through each server, each product changed three times: 30 events.
    for _ in 0..3 {
        patch_products(&client, &servers[0].base, &users["company"], 5, 1).await;
        patch_products(&client, &servers[1].base, &users["company"], 5, 2).await;
    }
    let events = |got: &[Received]| {
        let mut ids: Vec<String> = got.iter().map(|r| text(&r.json()["id"])).collect();
        ids.sort();
        ids.dedup();
        ids.len()
    };
    let got = hooks.until(|got| events(got) >= 30).await;
    assert_eq!(events(&got), 30);
    let mut attempts: Vec<(String, String)> = got
        .iter()
        .map(|r| (r.header("BrandHub-Delivery"), r.header("BrandHub-Attempt")))
        .collect();
    let all = attempts.len();
    attempts.sort();
    attempts.dedup();
    assert_eq!(attempts.len(), all, "an attempt was made twice");
}
