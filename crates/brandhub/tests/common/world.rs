//! A world of records for the offer and sync tests, made through the API as an admin:
//! company, brand, warehouse, host, two stores, two brand stores (one with stock rules and a
//! price adjustment), a product with two variants and their stock; and calls as its host.

use super::Fixture;
use super::orders::{call, text, unique};
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The records of one test.
pub struct World {
    pub company: String,
    pub brand: String,
    pub brand_code: String,
    pub warehouse: String,
    pub host: String,
    pub stores: [String; 2],
    /// Brand store 0 with no rules; brand store 1 offers half the stock less one, at 10% more.
    pub brand_stores: [String; 2],
    pub product: String,
    /// (id, barcode) of two variants: base prices 20.00 and 10.00.
    pub variants: [(String, String); 2],
    pub stock: [String; 2],
}

pub fn created(answer: &super::Response, resource: &str) -> Value {
    assert_eq!(
        answer.status,
        201,
        "{resource}: {}",
        String::from_utf8_lossy(&answer.body)
    );
    answer.records(resource)[0].clone()
}

pub async fn create(fx: &Fixture, resource: &str, body: Value) -> String {
    let answer = call(
        fx,
        Method::POST,
        &format!("/api/{resource}"),
        "admin",
        Some(body),
    )
    .await;
    text(&created(&answer, resource)["id"])
}

pub async fn patch(fx: &Fixture, resource: &str, id: &str, body: Value) -> super::Response {
    let answer = call(
        fx,
        Method::PATCH,
        &format!("/api/{resource}/{id}"),
        "admin",
        Some(body),
    )
    .await;
    assert_eq!(
        answer.status,
        200,
        "{resource} {id}: {}",
        String::from_utf8_lossy(&answer.body)
    );
    answer
}

impl World {
    pub async fn make(fx: &Fixture) -> World {
        let n = super::unique_number();
        let company = create(
            fx,
            "company",
            json!({"name": format!("Offer company {n}"), "code": format!("OC{n}")}),
        )
        .await;
        let brand_code = format!("OB{n}");
        let brand = create(
            fx,
            "brand",
            json!({"fk_company": company, "name": format!("Offer brand {n}"), "code": brand_code}),
        )
        .await;
        let warehouse = create(fx, "warehouse", json!({"fk_company": company, "name": format!("Offer warehouse {n}"), "code": format!("OW{n}")})).await;
        let host = create(
            fx,
            "host",
            json!({"name": format!("Offer host {n}"), "code": format!("OH{n}")}),
        )
        .await;
        let mut stores = Vec::new();
        for i in 0..2 {
            stores.push(create(fx, "store", json!({"fk_host": host, "name": format!("Offer store {n}-{i}"), "code": format!("OS{n}-{i}"), "currency": "EUR"})).await);
        }
        let plain = create(
            fx,
            "brandStore",
            json!({"fk_brand": brand, "fk_store": stores[0], "fk_warehouse": warehouse}),
        )
        .await;
        let ruled = create(fx, "brandStore", json!({"fk_brand": brand, "fk_store": stores[1], "fk_warehouse": warehouse,
            "detail": {"stockType": "live", "stockPercent": 50, "stockBuffer": 1, "adjustType": "percent", "adjustValue": 10}})).await;
        let product = create(fx, "product", json!({"fk_brand": brand, "code": format!("OP{n}"), "title": "Offer shirt", "status": "active"})).await;
        let mut variants = Vec::new();
        let mut stock = Vec::new();
        for (i, (price, on_hand, size)) in [(20.0, 10, "S"), (10.0, 4, "M")].into_iter().enumerate()
        {
            let barcode = format!("8{n:011}{i}");
            let variant = create(fx, "variant", json!({"fk_product": product, "barcode": barcode, "size": size, "colour": "Blue", "detail": {"price": price}})).await;
            stock.push(
                create(
                    fx,
                    "stock",
                    json!({"fk_warehouse": warehouse, "fk_variant": variant, "inStock": on_hand}),
                )
                .await,
            );
            variants.push((variant, barcode));
        }
        World {
            company,
            brand,
            brand_code,
            warehouse,
            host,
            stores: [stores[0].clone(), stores[1].clone()],
            brand_stores: [plain, ruled],
            product,
            variants: [variants[0].clone(), variants[1].clone()],
            stock: [stock[0].clone(), stock[1].clone()],
        }
    }

    /// The offers of this world by (brand store index, variant index).
    pub async fn offers(&self, fx: &Fixture) -> BTreeMap<(usize, usize), Value> {
        let read = fx
            .get(&format!(
                "/api/offer?offer_brand.fk_company={}&pageSize=100&exclude=offer_@",
                self.company
            ))
            .await;
        assert_eq!(read.status, 200, "{}", String::from_utf8_lossy(&read.body));
        let mut offers = BTreeMap::new();
        for offer in read.records("offer") {
            let b = self
                .brand_stores
                .iter()
                .position(|id| *id == text(&offer["fk_brandStore"]))
                .expect("an offer of this world's brand stores");
            let v = self
                .variants
                .iter()
                .position(|(id, _)| *id == text(&offer["fk_variant"]))
                .expect("an offer of this world's variants");
            offers.insert((b, v), offer);
        }
        offers
    }

    /// (available, price, status) of each offer.
    pub async fn values(
        &self,
        fx: &Fixture,
    ) -> BTreeMap<(usize, usize), (i64, Option<f64>, String)> {
        self.offers(fx)
            .await
            .into_iter()
            .map(|(key, o)| {
                (
                    key,
                    (
                        o["available"].as_i64().unwrap_or(-1),
                        o["price"].as_f64(),
                        text(&o["status"]),
                    ),
                )
            })
            .collect()
    }

    /// The record version of each offer, from its `ETag`.
    pub async fn versions(&self, fx: &Fixture) -> BTreeMap<(usize, usize), String> {
        let mut versions = BTreeMap::new();
        for (key, offer) in self.offers(fx).await {
            let read = fx.get(&format!("/api/offer/{}", text(&offer["id"]))).await;
            versions.insert(key, read.header("etag").expect("an offer has an ETag"));
        }
        versions
    }
}

/// A host user of this world's host with a key: (email, secret).
pub async fn host_key(fx: &Fixture, w: &World) -> (String, String) {
    let email = format!("{}@example.test", unique("sku-host").to_lowercase());
    let answer = call(
        fx,
        Method::POST,
        "/api/user",
        "admin",
        Some(json!({"name": "SKU Host", "email": email, "type": "host", "fk_host": w.host})),
    )
    .await;
    let user = created(&answer, "user");
    let answer = call(
        fx,
        Method::POST,
        "/api/apiKey",
        "admin",
        Some(json!({"fk_user": text(&user["id"])})),
    )
    .await;
    let key = created(&answer, "apiKey");
    (email, text(&key["secret"]))
}

/// A request as the host user `(email, secret)`.
pub async fn as_host(
    fx: &Fixture,
    host: &(String, String),
    method: Method,
    path: &str,
    body: Value,
) -> super::Response {
    super::send(
        fx,
        &fx.base,
        method,
        path,
        super::As::Key(&host.0, &host.1),
        &[],
        Some(&body),
    )
    .await
}

/// A second server on the fixture's database with a store (pool, caches) of its own, as
/// another process would have: its base URL, a client trusting it, and the running server.
pub async fn second_server(fx: &Fixture) -> (String, reqwest::Client, impl Send) {
    second_server_with(fx, false).await
}

/// [`second_server`], whose webhook senders may deliver to a receiver on 127.0.0.1 when
/// `to_loopback`.
pub async fn second_server_with(
    fx: &Fixture,
    to_loopback: bool,
) -> (String, reqwest::Client, impl Send) {
    let url = fx.database_url.clone();
    let uploads = fx.side_uploads();
    let dir = tempfile::tempdir().unwrap();
    let tls = dir.path().join("tls");
    let (address, certificate, running) = fx
        .on_server(async move {
            let store = brandhub_store::Store::connect(&brandhub_store::StoreOptions {
                url,
                max_connections: 4,
                page_cache_bytes: 1 << 20,
                matches_first_limit: 40,
                pg_settings: Vec::new(),
                database_wait: brandhub_store::db::DEFAULT_DATABASE_WAIT,
            })
            .await
            .expect("a second store opens");
            let store = match to_loopback {
                true => store.allowing_insecure_loopback_urls(),
                false => store,
            };
            let mut settings = brandhub_server::Settings::new(
                "127.0.0.1:0".parse().unwrap(),
                Some(brandhub_server::tls::TlsSource::SelfSigned { dir: tls }),
                uploads,
            );
            settings.webhooks.allow_insecure_localhost = to_loopback;
            let running = brandhub_server::start(settings, store)
                .await
                .expect("a second server starts");
            (
                running.address,
                running.certificate_pem.clone().unwrap(),
                running,
            )
        })
        .await;
    (
        format!("https://{address}"),
        super::client_trusting(&certificate),
        (running, dir),
    )
}
