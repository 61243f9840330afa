//! Sync by cursor (`changedSince`, docs/API.md, "Sync by cursor") on SQLite and PostgreSQL:
//! a client that follows the cursor ends with exactly the records in its scope, deletions and
//! records that stopped matching included, also while two servers over one database commit
//! writes as it reads; a cursor is refused elsewhere, when old, and when the caller's scope
//! moved.

mod common;

use common::orders::{call, text, unique};
use common::world::{World, create, host_key, patch};
use common::{Fixture, Response};
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Who calls: a user name (email) and a secret.
type Who = (String, String);

fn admin(fx: &Fixture) -> Who {
    let credential = fx.credential("admin");
    (credential.email.clone(), credential.secret.clone())
}

async fn send_with(
    client: &reqwest::Client,
    base: &str,
    who: &Who,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> Response {
    let mut request = client
        .request(method, format!("{base}{path}"))
        .basic_auth(&who.0, Some(&who.1));
    if let Some(body) = body {
        request = request.json(body);
    }
    Response::read(request.send().await.expect("the server answers")).await
}

/// A GET that must answer 200: its JSON.
async fn read(client: &reqwest::Client, base: &str, who: &Who, path: &str) -> Value {
    let answer = send_with(client, base, who, Method::GET, path, None).await;
    assert_eq!(
        answer.status,
        200,
        "{path}: {}",
        String::from_utf8_lossy(&answer.body)
    );
    answer.json()
}

/// A client's copy of one resource, kept by following a cursor.
struct Copy {
    resource: &'static str,
    /// The request's other parameters (filters, fields).
    query: String,
    page_size: usize,
    cursor: String,
    records: BTreeMap<String, Value>,
}

impl Copy {
    fn new(resource: &'static str, query: &str, page_size: usize) -> Copy {
        Copy {
            resource,
            query: query.to_string(),
            page_size,
            cursor: "0".into(),
            records: BTreeMap::new(),
        }
    }

    /// One call: applies its entries in order; the ids it held (deleted ones as `-id`), and
    /// whether changes remain.
    async fn step(
        &mut self,
        client: &reqwest::Client,
        base: &str,
        who: &Who,
    ) -> (Vec<String>, bool) {
        let path = format!(
            "/api/{}?{}&pageSize={}&changedSince={}",
            self.resource, self.query, self.page_size, self.cursor
        );
        let envelope = read(client, base, who, &path).await["response"].clone();
        let entries = envelope[self.resource]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(envelope["recordsSent"].as_u64(), Some(entries.len() as u64));
        assert_eq!(envelope["page"], 1);
        let mut seen = Vec::new();
        for entry in entries {
            let id = text(&entry["id"]);
            if entry["deleted"] == true {
                self.records.remove(&id);
                seen.push(format!("-{id}"));
            } else {
                self.records.insert(id.clone(), entry);
                seen.push(id);
            }
        }
        self.cursor = text(&envelope["cursor"]);
        (seen, envelope["more"] == true)
    }

    /// Calls until no changes remain; every id the calls held.
    async fn drain(&mut self, client: &reqwest::Client, base: &str, who: &Who) -> Vec<String> {
        let mut all = Vec::new();
        for _ in 0..10_000 {
            let (seen, more) = self.step(client, base, who).await;
            all.extend(seen);
            if !more {
                return all;
            }
        }
        panic!("a sync of {} ends", self.resource);
    }

    /// Calls until the copy equals the list; every id the calls held. On PostgreSQL a
    /// transaction still running anywhere on the server (another test's) holds later changes
    /// back until it ends, so the copy catches up when it does.
    async fn settle(&mut self, client: &reqwest::Client, base: &str, who: &Who) -> Vec<String> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut all = Vec::new();
        loop {
            all.extend(self.drain(client, base, who).await);
            if self.records == self.listed(client, base, who).await {
                return all;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the copy of {} catches up within 60 s",
                self.resource
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// What a plain list with the same parameters answers now, by id.
    async fn listed(
        &self,
        client: &reqwest::Client,
        base: &str,
        who: &Who,
    ) -> BTreeMap<String, Value> {
        let path = format!("/api/{}?{}&pageSize=1000", self.resource, self.query);
        read(client, base, who, &path).await["response"][self.resource]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|r| (text(&r["id"]), r))
            .collect()
    }

    async fn assert_current(&self, client: &reqwest::Client, base: &str, who: &Who) {
        assert_eq!(
            self.records,
            self.listed(client, base, who).await,
            "the copy of {} by cursor equals the list",
            self.resource
        );
    }
}

const OFFER_FIELDS: &str = "fields=id,fk_variant,available,price,status,hostSku";

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

async fn delete(fx: &Fixture, resource: &str, id: &str) {
    let answer = call(
        fx,
        Method::DELETE,
        &format!("/api/{resource}/{id}"),
        "admin",
        None,
    )
    .await;
    assert_eq!(
        answer.status,
        204,
        "{resource} {id}: {}",
        String::from_utf8_lossy(&answer.body)
    );
}

on_both_backends! { "changes";

async fn a_host_follows_its_offers_by_cursor_deletions_and_filters_included(fx) {
    let w = World::make(fx).await;
    let host = host_key(fx, &w).await;
    let client = fx.client();
    let offers = w.offers(fx).await;
    let id = |key: (usize, usize)| text(&offers[&key]["id"]);

    // From 0, a page of three at a time: the host's four offers, then nothing more.
    let mut every = Copy::new("offer", OFFER_FIELDS, 3);
    let (first, more) = every.step(&client, &fx.base, &host).await;
    assert_eq!(first.len(), 3);
    assert!(more, "a fourth offer remains");
    every.settle(&client, &fx.base, &host).await;
    assert_eq!(every.records.len(), 4);
    every.assert_current(&client, &fx.base, &host).await;
    assert_eq!(every.drain(&client, &fx.base, &host).await, Vec::<String>::new(), "nothing changed since");
    let mut active = Copy::new("offer", &format!("{OFFER_FIELDS}&status=active"), 100);
    active.settle(&client, &fx.base, &host).await;
    assert_eq!(active.records.len(), 4);

    // A stock PATCH: the two offers of its variant, once each, with their new values.
    patch(fx, "stock", &w.stock[0], json!({"inStock": 7})).await;
    assert_eq!(sorted(every.settle(&client, &fx.base, &host).await), sorted(vec![id((0, 0)), id((1, 0))]));
    every.assert_current(&client, &fx.base, &host).await;
    assert_eq!(every.records[&id((0, 0))]["available"], 7);
    active.settle(&client, &fx.base, &host).await;

    // Out of stock: the filtered copy is told that those offers no longer match.
    patch(fx, "stock", &w.stock[1], json!({"inStock": 0})).await;
    assert_eq!(
        sorted(active.settle(&client, &fx.base, &host).await),
        sorted(vec![format!("-{}", id((0, 1))), format!("-{}", id((1, 1)))])
    );
    assert_eq!(active.records.len(), 2);
    active.assert_current(&client, &fx.base, &host).await;

    // The variant goes: its offers come as tombstones.
    every.settle(&client, &fx.base, &host).await;
    delete(fx, "stock", &w.stock[1]).await;
    delete(fx, "variant", &w.variants[1].0).await;
    assert_eq!(
        sorted(every.settle(&client, &fx.base, &host).await),
        sorted(vec![format!("-{}", id((0, 1))), format!("-{}", id((1, 1)))])
    );
    every.assert_current(&client, &fx.base, &host).await;
    assert_eq!(every.records.len(), 2);

    // Another company's writes and deletes tell this host nothing.
    let other = World::make(fx).await;
    delete(fx, "stock", &other.stock[1]).await;
    delete(fx, "variant", &other.variants[1].0).await;
    assert_eq!(every.drain(&client, &fx.base, &host).await, Vec::<String>::new());
}

async fn a_cursor_is_refused_elsewhere_when_old_and_when_the_scope_moved(fx) {
    let w = World::make(fx).await;
    let host = host_key(fx, &w).await;
    let client = fx.client();
    let mut copy = Copy::new("offer", "status=active", 100);
    copy.settle(&client, &fx.base, &host).await;
    let cursor = copy.cursor.clone();
    let ask = |path: String, who: Who| {
        let client = client.clone();
        async move { send_with(&client, &fx.base, &who, Method::GET, &path, None).await }
    };
    // Another resource, other filters, another caller: 400.
    for path in [
        format!("/api/stock?changedSince={cursor}"),
        format!("/api/offer?status=inactive&changedSince={cursor}"),
        format!("/api/offer?changedSince={cursor}"),
    ] {
        ask(path, host.clone()).await.assert_problem(400, "invalid_parameter");
    }
    ask(format!("/api/offer?status=active&changedSince={cursor}"), admin(fx)).await.assert_problem(400, "invalid_parameter");
    // Not a cursor, or with what a sync does not do.
    for path in [
        "/api/offer?changedSince=zz".to_string(),
        "/api/offer?changedSince=1234".to_string(),
        "/api/offer?changedSince=0&order_by=id".to_string(),
        "/api/offer?changedSince=0&page=2".to_string(),
        "/api/offer?changedSince=0&format=csv".to_string(),
        "/api/offer/count?changedSince=0".to_string(),
        format!("/api/offer/{}?changedSince=0", w.brand_stores[0]),
    ] {
        let problem = ask(path.clone(), host.clone()).await.assert_problem(400, "invalid_parameter");
        assert!(problem["field"].as_str().is_some(), "{path}: {problem}");
    }
    // The same cursor still works.
    let answer = ask(format!("/api/offer?status=active&changedSince={cursor}"), host.clone()).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));

    // Older than 30 days: 410. (The cursor's parts are hex of text; its issue time is the
    // fifth.)
    let bytes: Vec<u8> = (0..cursor.len()).step_by(2).map(|i| u8::from_str_radix(&cursor[i..i + 2], 16).unwrap()).collect();
    let mut parts: Vec<String> = String::from_utf8(bytes).unwrap().split('|').map(str::to_string).collect();
    let issued: i64 = parts[4].parse().unwrap();
    parts[4] = (issued - 31 * 24 * 3_600_000).to_string();
    let old: String = parts.join("|").bytes().map(|b| format!("{b:02x}")).collect();
    ask(format!("/api/offer?status=active&changedSince={old}"), host.clone()).await.assert_problem(410, "cursor_expired");

    // A new brand store of the host's: what it sees moved, so the cursor is reset.
    let n = common::unique_number();
    let store = create(fx, "store", json!({"fk_host": w.host, "name": format!("Sync store {n}"), "code": format!("SS{n}"), "currency": "EUR"})).await;
    create(fx, "brandStore", json!({"fk_brand": w.brand, "fk_store": store, "fk_warehouse": w.warehouse})).await;
    ask(format!("/api/offer?status=active&changedSince={cursor}"), host.clone()).await.assert_problem(409, "cursor_reset");
    let mut again = Copy::new("offer", "status=active", 100);
    again.settle(&client, &fx.base, &host).await;
    assert_eq!(again.records.len(), 6, "the new brand store's two offers too");
}

async fn a_reader_following_the_cursor_while_two_servers_write_ends_with_exactly_the_records(fx) {
    let w = World::make(fx).await;
    let (side, side_client, _running) = common::world::second_server(fx).await;
    let who = admin(fx);
    let main_client = fx.client();
    let mut copies = [
        Copy::new("offer", &format!("fk_brand={}&{OFFER_FIELDS}", w.brand), 7),
        Copy::new("stock", &format!("fk_warehouse={}&fields=id,inStock,demand,available", w.warehouse), 5),
        Copy::new("order", &format!("fk_brandStore={}&fields=id,status,hostOrderRef", w.brand_stores[0]), 5),
    ];
    let writes = |client: reqwest::Client, base: String, seed: usize| {
        let w_stock = w.stock.clone();
        let variants = w.variants.clone();
        let brand_store = w.brand_stores[0].clone();
        let host = w.host.clone();
        let brand = w.brand.clone();
        let warehouse = w.warehouse.clone();
        let who = who.clone();
        async move {
            let mut made_stock: Vec<String> = Vec::new();
            for i in 0..24usize {
                let k = (i + seed) % 2;
                let answer = match (i + seed) % 6 {
                    0 | 3 => send_with(&client, &base, &who, Method::PATCH, &format!("/api/stock/{}", w_stock[k]), Some(&json!({"inStock": 5 + (i * 7 + seed) % 20}))).await,
                    1 => send_with(&client, &base, &who, Method::POST, "/api/price", Some(&json!({"fk_variant": variants[k].0, "fk_host": host, "price": 3.0 + i as f64, "startDate": format!("2020-01-01T00:00:{:02}", (i * 2 + seed) % 60)}))).await,
                    2 => {
                        let body = json!({"fk_brandStore": brand_store, "hostOrderRef": unique("SYNC"),
                            "shipAddress": {"forename": "Ada", "surname": "Lovelace", "line1": "1 Row", "town": "London", "postcode": "N1 1AA", "countryCode": "GB"},
                            "order_orderItem": [{"fk_variant": variants[k].0, "orderQty": 1, "itemPrice": 9.0}]});
                        let answer = send_with(&client, &base, &who, Method::POST, "/api/order", Some(&body)).await;
                        if answer.status == 201 && i % 4 == 2 {
                            let order = text(&answer.records("order")[0]["id"]);
                            send_with(&client, &base, &who, Method::PATCH, &format!("/api/order/{order}"), Some(&json!({"status": "cancelled"}))).await
                        } else {
                            answer
                        }
                    }
                    4 => {
                        // A stock record in the warehouse for a variant of another product,
                        // made and later deleted.
                        let n = common::unique_number();
                        let product = text(&send_with(&client, &base, &who, Method::POST, "/api/product", Some(&json!({"fk_brand": brand, "code": format!("SP{n}"), "title": "Sync shirt", "status": "active"}))).await.records("product")[0]["id"]);
                        let variant = text(&send_with(&client, &base, &who, Method::POST, "/api/variant", Some(&json!({"fk_product": product, "barcode": format!("9{n:012}"), "size": "L", "detail": {"price": 5.0}}))).await.records("variant")[0]["id"]);
                        let answer = send_with(&client, &base, &who, Method::POST, "/api/stock", Some(&json!({"fk_warehouse": warehouse, "fk_variant": variant, "inStock": 3}))).await;
                        made_stock.push(text(&answer.records("stock")[0]["id"]));
                        answer
                    }
                    _ => match made_stock.pop() {
                        Some(stock) => {
                            let answer = send_with(&client, &base, &who, Method::DELETE, &format!("/api/stock/{stock}"), None).await;
                            assert_eq!(answer.status, 204, "{}", String::from_utf8_lossy(&answer.body));
                            continue;
                        }
                        None => continue,
                    },
                };
                assert!(answer.status < 300, "write {i} of {seed}: {} {}", answer.status, String::from_utf8_lossy(&answer.body));
            }
        }
    };
    let main_writer = tokio::spawn(writes(main_client.clone(), fx.base.clone(), 0));
    let side_writer = tokio::spawn(writes(side_client.clone(), side.clone(), 1));
    // The reader follows all three while the writers write, alternating servers.
    let mut calls = 0;
    while !(main_writer.is_finished() && side_writer.is_finished()) {
        for copy in copies.iter_mut() {
            let (client, base) = if calls % 2 == 0 { (&main_client, &fx.base) } else { (&side_client, &side) };
            copy.step(client, base, &who).await;
            calls += 1;
        }
    }
    main_writer.await.expect("the first writer ends");
    side_writer.await.expect("the second writer ends");
    assert!(calls > 3, "the reader read while they wrote");
    for copy in copies.iter_mut() {
        copy.settle(&main_client, &fx.base, &who).await;
        copy.assert_current(&main_client, &fx.base, &who).await;
        assert!(!copy.records.is_empty(), "{} has records", copy.resource);
    }
}

}

/// A transaction that began before another and commits after it is not passed by a cursor
/// handed out in between. PostgreSQL only: SQLite's writers take turns, so a write cannot
/// commit while an older one is still open.
#[tokio::test]
async fn postgres_a_write_that_commits_late_is_not_passed_by_the_cursor() {
    use sqlx::Connection;
    let Some(fx) = common::shared(common::Db::Postgres, "changes") else {
        return;
    };
    let w = World::make(fx).await;
    let who = admin(fx);
    let client = fx.client();
    let mut copy = Copy::new(
        "stock",
        &format!("fk_warehouse={}&fields=id,inStock", w.warehouse),
        100,
    );
    copy.settle(&client, &fx.base, &who).await;
    // The late writer: another program's transaction, posing as brandhub's (so it bumps no
    // versions that brandhub's own write would wait for), left open.
    let mut late = sqlx::PgConnection::connect(&fx.database_url)
        .await
        .expect("PostgreSQL answers");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "BEGIN; SET LOCAL brandhub.writer = 'on'; UPDATE \"stock\" SET \"in_stock\" = 11 WHERE \"id\" = '{}'",
        w.stock[0]
    )))
    .execute(&mut late)
    .await
    .expect("the late write runs");
    // A write that began after it commits first; the reader asks meanwhile.
    patch(fx, "stock", &w.stock[1], json!({"inStock": 12})).await;
    let held = copy.drain(&client, &fx.base, &who).await;
    assert!(
        held.is_empty(),
        "nothing is handed out past a transaction still open: {held:?}"
    );
    sqlx::raw_sql("COMMIT")
        .execute(&mut late)
        .await
        .expect("the late write commits");
    assert_eq!(
        sorted(copy.settle(&client, &fx.base, &who).await),
        sorted(vec![w.stock[0].clone(), w.stock[1].clone()])
    );
    copy.assert_current(&client, &fx.base, &who).await;
    assert_eq!(copy.records[&w.stock[0]]["inStock"], 11);
}
