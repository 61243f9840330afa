//! Webhooks (CONTRACT §11) against a real HTTP receiver started by each test (plain http on
//! 127.0.0.1, allowed by the servers' `--webhook-allow-insecure-localhost`): signed order
//! events to the host, the same order without money to the warehouse, nothing out of scope,
//! retries with growing delays, nothing for a change that rolled back, the secret shown once,
//! URLs that are not https refused; and with `brandhub serve` processes: a server killed
//! mid-delivery delivers after a restart (same event id), two servers on one PostgreSQL never
//! make the same attempt twice.

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
