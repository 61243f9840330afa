//! A brand store's rules and their offers (docs/API.md, "Offers"): each stock rule and price
//! adjustment read back from `GET /api/offer?fk_brandStore=…` against values worked out by
//! hand; words in any case; every rule outside its domain a 422 naming the field and what it
//! allows, through the API and `brandhub import`; `PATCH` merging `detail`, `null` clearing a
//! property; the rules hidden from hosts; and rules stored outside their domain repaired by the
//! next migration.

mod common;

use common::{As, Db, Fixture};
use serde_json::{Value, json};

const ADMIN: As<'static> = As::Demo("admin");

async fn call(
    fx: &Fixture,
    method: reqwest::Method,
    path: &str,
    who: As<'_>,
    body: Option<Value>,
) -> common::Response {
    common::send(fx, &fx.base, method, path, who, &[], body.as_ref()).await
}

async fn post(fx: &Fixture, path: &str, body: Value) -> common::Response {
    call(fx, reqwest::Method::POST, path, ADMIN, Some(body)).await
}

async fn patch(fx: &Fixture, path: &str, body: Value) -> common::Response {
    call(fx, reqwest::Method::PATCH, path, ADMIN, Some(body)).await
}

fn body_of(response: &common::Response) -> String {
    String::from_utf8_lossy(&response.body).into_owned()
}

/// The id of the one record a create answered 201 with.
fn created(response: &common::Response, resource: &str) -> String {
    assert_eq!(response.status, 201, "{}", body_of(response));
    response.records(resource)[0]["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A company of its own with a brand, a warehouse, a host with a store in euros, the brand in
/// that store (with `rules` as its `detail`), an active product with one variant priced 19.99
/// and that variant's stock: 20 in stock, 3 in demand, so 17 available.
struct World {
    host: String,
    store: String,
    brand: String,
    warehouse: String,
    brand_store: String,
    variant: String,
    stock: String,
}

async fn world(fx: &Fixture, tag: &str, rules: Value) -> World {
    let tag = format!("{tag}-{}", common::unique_number());
    let code = |what: &str| format!("{tag}-{what}");
    let company = created(
        &post(fx, "/api/company", json!({"name": tag, "code": code("CO")})).await,
        "company",
    );
    let brand = created(
        &post(
            fx,
            "/api/brand",
            json!({"fk_company": company, "name": tag, "code": code("BR")}),
        )
        .await,
        "brand",
    );
    let warehouse = created(
        &post(
            fx,
            "/api/warehouse",
            json!({"fk_company": company, "name": tag, "code": code("WH")}),
        )
        .await,
        "warehouse",
    );
    let host = created(
        &post(fx, "/api/host", json!({"name": tag, "code": code("HO")})).await,
        "host",
    );
    let store = created(
        &post(
            fx,
            "/api/store",
            json!({"fk_host": host, "name": tag, "code": "WEB", "currency": "EUR"}),
        )
        .await,
        "store",
    );
    let brand_store = created(
        &post(fx, "/api/brandStore", json!({"fk_brand": brand, "fk_store": store, "fk_warehouse": warehouse, "detail": rules})).await,
        "brandStore",
    );
    let product = created(
        &post(
            fx,
            "/api/product",
            json!({"fk_brand": brand, "code": "P1", "title": "Shirt", "status": "active"}),
        )
        .await,
        "product",
    );
    let barcode = format!("29{:011}", common::unique_number() % 100_000_000_000);
    let variant = created(
        &post(
            fx,
            "/api/variant",
            json!({"fk_product": product, "barcode": barcode, "detail": {"price": 19.99}}),
        )
        .await,
        "variant",
    );
    let stock = created(
        &post(
            fx,
            "/api/stock",
            json!({"fk_warehouse": warehouse, "fk_variant": variant, "inStock": 20, "demand": 3}),
        )
        .await,
        "stock",
    );
    World {
        host,
        store,
        brand,
        warehouse,
        brand_store,
        variant,
        stock,
    }
}

/// The brand store's one offer, as the admin reads it.
async fn offer(fx: &Fixture, w: &World) -> Value {
    let answer = fx
        .get(&format!("/api/offer?fk_brandStore={}", w.brand_store))
        .await;
    assert_eq!(answer.status, 200, "{}", body_of(&answer));
    let offers = answer.records("offer");
    assert_eq!(offers.len(), 1, "{offers:?}");
    assert_eq!(offers[0]["fk_variant"], w.variant.as_str());
    offers[0].clone()
}

/// Changes the brand store's `detail` by `PATCH` and answers its offer's `available`, `price`
/// and `status`.
async fn after(fx: &Fixture, w: &World, detail: Value) -> (i64, f64, String) {
    let answer = patch(
        fx,
        &format!("/api/brandStore/{}", w.brand_store),
        json!({ "detail": detail }),
    )
    .await;
    assert_eq!(answer.status, 200, "{detail}: {}", body_of(&answer));
    let offer = offer(fx, w).await;
    (
        offer["available"].as_i64().unwrap(),
        offer["price"].as_f64().unwrap_or(-1.0),
        offer["status"].as_str().unwrap().to_string(),
    )
}

/// The brand store's `detail` as the admin reads it.
async fn rules(fx: &Fixture, w: &World) -> Value {
    let answer = fx
        .get(&format!("/api/brandStore/{}?fields=detail", w.brand_store))
        .await;
    assert_eq!(answer.status, 200, "{}", body_of(&answer));
    answer.records("brandStore")[0]["detail"].clone()
}

/// The problems of a 422 as (field, message) pairs.
fn problems(response: &common::Response) -> Vec<(String, String)> {
    let body = response.assert_problem(422, "validation_failed");
    body["errors"]
        .as_array()
        .unwrap_or_else(|| panic!("no errors in {body}"))
        .iter()
        .map(|e| {
            (
                e["field"].as_str().unwrap().to_string(),
                e["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// A 422 naming `field` alone, with a message holding each of `words`.
fn refused(response: &common::Response, field: &str, words: &[&str]) {
    let found = problems(response);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, field, "{found:?}");
    for word in words {
        assert!(found[0].1.contains(word), "{word} in {found:?}");
    }
}

on_both_backends! { "offer_rules";

async fn live_stock_takes_the_share_then_the_buffer_then_the_cap(fx) {
    let w = world(fx, "LIVE", json!({})).await;
    // No rules: all of A = 20 − 3 = 17.
    let first = offer(fx, &w).await;
    assert_eq!((first["available"].as_i64(), first["status"].as_str()), (Some(17), Some("active")), "{first}");
    // 50% of 17 is 8 (rounded down), less 3 is 5, capped at 4.
    assert_eq!(after(fx, &w, json!({"stockPercent": 50, "stockBuffer": 3, "stockMax": 4})).await.0, 4);
    // PATCH merges detail: the share and the buffer stay; null clears the cap.
    assert_eq!(after(fx, &w, json!({"stockMax": null})).await.0, 5);
    let kept = rules(fx, &w).await;
    assert_eq!((&kept["stockPercent"], &kept["stockBuffer"], &kept["stockMax"]), (&json!(50), &json!(3), &Value::Null), "{kept}");
    // A buffer larger than the share leaves 0, never less: out of stock.
    assert_eq!(after(fx, &w, json!({"stockBuffer": 10})).await, (0, 19.99, "outOfStock".to_string()));
    // 90% of 17 is 15 (15.3 rounded down), less 1 is 14; a cap of 0 is 0.
    assert_eq!(after(fx, &w, json!({"stockPercent": 90, "stockBuffer": 1})).await.0, 14);
    assert_eq!(after(fx, &w, json!({"stockMax": 0})).await.0, 0);
    // Words in any case, kept as the domain spells them; the default again when cleared.
    assert_eq!(after(fx, &w, json!({"stockType": "LIVE", "stockPercent": null, "stockBuffer": null, "stockMax": null})).await.0, 17);
    assert_eq!(rules(fx, &w).await["stockType"], "live");
    // The stock moves, the offer with it: 30 − 3 = 27.
    let moved = patch(fx, &format!("/api/stock/{}", w.stock), json!({"inStock": 30})).await;
    assert_eq!(moved.status, 200, "{}", body_of(&moved));
    assert_eq!(offer(fx, &w).await["available"], 27);
}

async fn fixed_and_none_ignore_the_stock(fx) {
    let w = world(fx, "FIXED", json!({"stockType": "Fixed", "fixedQuantity": 25})).await;
    assert_eq!(rules(fx, &w).await["stockType"], "fixed");
    let first = offer(fx, &w).await;
    assert_eq!((first["available"].as_i64(), first["status"].as_str()), (Some(25), Some("active")), "{first}");
    // Fixed without a quantity offers 0.
    assert_eq!(after(fx, &w, json!({"fixedQuantity": null})).await, (0, 19.99, "outOfStock".to_string()));
    // None offers nothing and makes the offer inactive; the quantity is kept for later.
    assert_eq!(after(fx, &w, json!({"stockType": "NONE", "fixedQuantity": 5})).await, (0, 19.99, "inactive".to_string()));
    assert_eq!(after(fx, &w, json!({"stockType": "fixed"})).await, (5, 19.99, "active".to_string()));
    // Empty is live, the default: 17.
    assert_eq!(after(fx, &w, json!({"stockType": ""})).await.0, 17);
}

async fn prices_are_adjusted_and_rounded_half_away_from_zero(fx) {
    let w = world(fx, "ADJUST", json!({"adjustType": "percent", "adjustValue": -10})).await;
    // 19.99 × 0.9 = 17.991 → 17.99.
    assert_eq!(offer(fx, &w).await["price"].as_f64(), Some(17.99));
    // 19.99 + 2.5 = 22.49; − 30 would be below 0: 0.
    assert_eq!(after(fx, &w, json!({"adjustType": "FIXED", "adjustValue": 2.5})).await.1, 22.49);
    assert_eq!(after(fx, &w, json!({"adjustValue": -30})).await.1, 0.0);
    // No adjustment: the price as it is.
    assert_eq!(after(fx, &w, json!({"adjustType": "", "adjustValue": null})).await.1, 19.99);

    // The price in effect: the host's record in the store's currency wins over one in any
    // currency from the same start; one in another currency, or starting later, does not count.
    for (price, currency, start) in [(15.0, "", "2020-01-01T00:00:00"), (14.0, "EUR", "2020-01-01T00:00:00"), (9.0, "USD", "2021-01-01T00:00:00"), (8.0, "", "2099-01-01T00:00:00")] {
        created(&post(fx, "/api/price", json!({"fk_variant": w.variant, "fk_host": w.host, "price": price, "rrp": 30, "currency": currency, "startDate": start})).await, "price");
    }
    // A price in any currency has its natural key too: taken (409), or changed by an upsert.
    let again = json!({"fk_variant": w.variant, "fk_host": w.host, "price": 15.5, "currency": "", "startDate": "2020-01-01T00:00:00"});
    post(fx, "/api/price", again.clone()).await.assert_problem(409, "conflict");
    let upserted = post(fx, "/api/price?upsert=true", again).await;
    assert!(upserted.status == 200 || upserted.status == 201, "{}", body_of(&upserted));
    let listed = fx.get(&format!("/api/price?fk_variant={}&order_by=startDate&fields=price,currency", w.variant)).await.records("price");
    let any: Vec<f64> = listed.iter().filter(|p| p["currency"] == "").map(|p| p["price"].as_f64().unwrap()).collect();
    assert_eq!(any, [15.5, 8.0], "{listed:?}");
    let now = offer(fx, &w).await;
    assert_eq!((now["price"].as_f64(), now["rrp"].as_f64(), now["currency"].as_str(), now["priceStart"].as_str()), (Some(14.0), Some(30.0), Some("EUR"), Some("2020-01-01T00:00:00")), "{now}");
    // 14 × 1.125 = 15.75; 1.05 × 1.5 = 1.575 → 1.58, half away from zero.
    assert_eq!(after(fx, &w, json!({"adjustType": "percent", "adjustValue": 12.5})).await.1, 15.75);
    let latest = created(&post(fx, "/api/price", json!({"fk_variant": w.variant, "fk_host": w.host, "price": 1.05, "currency": "eur", "startDate": "2022-01-01T00:00:00"})).await, "price");
    assert_eq!(after(fx, &w, json!({"adjustValue": 50})).await.1, 1.58);
    // −100% is the least: a price of 0.
    assert_eq!(after(fx, &w, json!({"adjustValue": -100})).await.1, 0.0);
    // A change of the price in effect that leaves its amount alone moves its offer too.
    let moved = patch(fx, &format!("/api/price/{latest}"), json!({"endDate": "2099-06-01T00:00:00", "rrp": 12})).await;
    assert_eq!(moved.status, 200, "{}", body_of(&moved));
    let now = offer(fx, &w).await;
    assert_eq!((now["priceEnd"].as_str(), now["rrp"].as_f64()), (Some("2099-06-01T00:00:00"), Some(12.0)), "{now}");
}

async fn a_rule_outside_its_domain_is_refused_naming_what_it_allows(fx) {
    let w = world(fx, "DOMAIN", json!({})).await;
    let path = format!("/api/brandStore/{}", w.brand_store);
    refused(&patch(fx, &path, json!({"detail": {"stockType": "sometimes"}})).await, "detail.stockType", &["live, fixed, none"]);
    refused(&patch(fx, &path, json!({"detail": {"adjustType": "markup"}})).await, "detail.adjustType", &["percent, fixed"]);
    refused(&patch(fx, &path, json!({"detail": {"stockPercent": 101}})).await, "detail.stockPercent", &["0 to 100"]);
    refused(&patch(fx, &path, json!({"detail": {"stockPercent": 50.5}})).await, "detail.stockPercent", &["0 to 100"]);
    refused(&patch(fx, &path, json!({"detail": {"stockBuffer": -1}})).await, "detail.stockBuffer", &["0 to 1,000,000,000"]);
    refused(&patch(fx, &path, json!({"detail": {"stockMax": -1}})).await, "detail.stockMax", &["0 to 1,000,000,000"]);
    refused(&patch(fx, &path, json!({"detail": {"fixedQuantity": "ten"}})).await, "detail.fixedQuantity", &["0 to 1,000,000,000"]);
    refused(&patch(fx, &path, json!({"detail": {"adjustType": "Percent", "adjustValue": -100.5}})).await, "detail.adjustValue", &["at least -100", "percent"]);
    // Every problem at once.
    let all = problems(&patch(fx, &path, json!({"detail": {"stockType": "x", "stockPercent": 200, "adjustType": "y"}})).await);
    let fields: Vec<&str> = all.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(fields, ["detail.adjustType", "detail.stockPercent", "detail.stockType"], "{all:?}");
    // A create is judged the same way.
    let other = world(fx, "DOMAIN2", json!({})).await;
    refused(
        &post(fx, "/api/brandStore", json!({"fk_brand": other.brand, "fk_store": w.store, "fk_warehouse": other.warehouse, "detail": {"stockType": "LIVE", "adjustType": "percent", "adjustValue": -101}})).await,
        "detail.adjustValue",
        &["at least -100"],
    );
    // The bound holds on the record as a PATCH leaves it: −150 is fine as an amount, not as a
    // percentage, whichever of the two the PATCH names.
    assert_eq!(patch(fx, &path, json!({"detail": {"adjustType": "fixed", "adjustValue": -150}})).await.status, 200);
    refused(&patch(fx, &path, json!({"detail": {"adjustType": "PERCENT"}})).await, "detail.adjustValue", &["at least -100"]);
    // A value of the wrong type is one problem, not also the bound's.
    refused(&patch(fx, &path, json!({"detail": {"adjustType": "percent", "adjustValue": "x"}})).await, "detail.adjustValue", &["expected an amount"]);
    assert_eq!(patch(fx, &path, json!({"detail": {"adjustType": "percent", "adjustValue": -100}})).await.status, 200);
    refused(&patch(fx, &path, json!({"detail": {"adjustValue": -100.01}})).await, "detail.adjustValue", &["at least -100"]);
    let kept = rules(fx, &w).await;
    assert_eq!((&kept["adjustType"], &kept["adjustValue"]), (&json!("percent"), &json!(-100.0)), "{kept}");
}

async fn an_import_is_held_to_the_same_rules(fx) {
    let w = world(fx, "IMPORT", json!({})).await;
    let store = fx.store.clone();
    let document = |detail: Value| {
        serde_json::to_vec(&json!({"brandStore": [{"fk_brand": w.brand, "fk_store": w.store, "fk_warehouse": w.warehouse, "detail": detail}]})).unwrap()
    };
    let (bad, worse, good) = (
        document(json!({"adjustType": "percent", "adjustValue": -101})),
        document(json!({"stockType": "often", "stockPercent": 101})),
        document(json!({"stockType": "NONE", "adjustType": "Fixed", "adjustValue": -2})),
    );
    let outcomes = fx
        .on_server(async move {
            let mut outcomes = Vec::new();
            for document in [bad, worse, good] {
                outcomes.push(store.import(&document).await.map(|_| ()).map_err(|e| format!("{e:?}")));
            }
            outcomes
        })
        .await;
    let refusal = outcomes[0].clone().unwrap_err();
    assert!(refusal.contains("detail.adjustValue") && refusal.contains("at least -100"), "{refusal}");
    let refusal = outcomes[1].clone().unwrap_err();
    for word in ["detail.stockType", "live, fixed, none", "detail.stockPercent", "0 to 100"] {
        assert!(refusal.contains(word), "{word} in {refusal}");
    }
    outcomes[2].clone().expect("a document within the rules imports");
    let kept = rules(fx, &w).await;
    assert_eq!((&kept["stockType"], &kept["adjustType"], &kept["adjustValue"]), (&json!("none"), &json!("fixed"), &json!(-2.0)), "{kept}");
    assert_eq!(offer(fx, &w).await["status"], "inactive");
}

async fn a_host_sees_the_offer_but_not_the_rules(fx) {
    let w = world(fx, "HOSTVIEW", json!({"stockType": "live", "stockPercent": 50, "stockBuffer": 3, "stockMax": 4, "adjustType": "fixed", "adjustValue": 1})).await;
    let email = format!("host-{}@offers.test", common::unique_number());
    let user = created(&post(fx, "/api/user", json!({"name": "Host", "email": email, "type": "host", "fk_host": w.host})).await, "user");
    let key = post(fx, "/api/apiKey", json!({"fk_user": user, "name": "host"})).await;
    assert_eq!(key.status, 201, "{}", body_of(&key));
    let secret = key.records("apiKey")[0]["secret"].as_str().unwrap().to_string();
    let host = As::Key(&email, &secret);
    let seen = call(fx, reqwest::Method::GET, &format!("/api/brandStore/{}", w.brand_store), host, None).await;
    assert_eq!(seen.status, 200, "{}", body_of(&seen));
    let detail = seen.records("brandStore")[0]["detail"].clone();
    assert_eq!(detail["stockType"], "live", "{detail}");
    for hidden in ["stockPercent", "stockBuffer", "stockMax", "fixedQuantity", "adjustType", "adjustValue"] {
        assert!(detail.get(hidden).is_none(), "{hidden} in {detail}");
    }
    // Nor can a host filter by them: for a host they do not exist.
    let probe = call(fx, reqwest::Method::GET, &format!("/api/brandStore?detail.stockPercent=50&id={}", w.brand_store), host, None).await;
    assert_eq!(probe.status, 400, "{}", body_of(&probe));
    // The offer is what the host is for: 4 units at 20.99.
    let offers = call(fx, reqwest::Method::GET, &format!("/api/offer?fk_brandStore={}", w.brand_store), host, None).await;
    assert_eq!(offers.status, 200, "{}", body_of(&offers));
    let offer = offers.records("offer")[0].clone();
    assert_eq!((offer["available"].as_i64(), offer["price"].as_f64()), (Some(4), Some(20.99)), "{offer}");
}

}

/// docs/API.md, "Offers": a rule stored outside its domain (written beside brandhub, or
/// before the domain was declared) is repaired by the next migration: an unknown `stockType`
/// becomes `live`, an unknown `adjustType` empty; a known word in another case stays. On a
/// fixture of its own: a migration makes the database's triggers again.
async fn a_migration_repairs_rules_outside_their_domain(fx: &Fixture) {
    use brandhub_catalog::{Res, catalog};
    let w = world(fx, "MIGRATE", json!({"stockType": "fixed", "fixedQuantity": 6, "adjustType": "percent", "adjustValue": 10})).await;
    let other = world(
        fx,
        "MIGRATE2",
        json!({"stockType": "none", "adjustType": "fixed", "adjustValue": 1}),
    )
    .await;
    let brand_store = catalog().get(Res::BrandStore);
    let column = |path: &str| {
        let field = brand_store.field_at(path).unwrap();
        (field.column.clone(), field.folded_column().unwrap())
    };
    let ((stock, stock_ci), (adjust, adjust_ci)) =
        (column("detail.stockType"), column("detail.adjustType"));
    let table = brand_store.table;
    outside(fx, format!("UPDATE \"{table}\" SET \"{stock}\" = 'sometimes', \"{stock_ci}\" = 'sometimes', \"{adjust}\" = 'Markup', \"{adjust_ci}\" = 'markup' WHERE \"id\" = '{}'", w.brand_store)).await;
    outside(fx, format!("UPDATE \"{table}\" SET \"{stock}\" = 'NONE', \"{stock_ci}\" = 'none' WHERE \"id\" = '{}'", other.brand_store)).await;
    let before = rules(fx, &w).await;
    assert_eq!(
        (&before["stockType"], &before["adjustType"]),
        (&json!("sometimes"), &json!("Markup")),
        "{before}"
    );
    let store = fx.store.clone();
    fx.on_server(async move { store.migrate().await })
        .await
        .expect("the migration runs");
    let repaired = rules(fx, &w).await;
    assert_eq!(
        (&repaired["stockType"], &repaired["adjustType"]),
        (&json!("live"), &json!("")),
        "{repaired}"
    );
    // What else the record holds stays; so does a known word in another case.
    assert_eq!(
        (&repaired["fixedQuantity"], &repaired["adjustValue"]),
        (&json!(6), &json!(10.0)),
        "{repaired}"
    );
    assert_eq!(rules(fx, &other).await["stockType"], "NONE");
    // The offer follows the repaired rules: live, 17 available, no adjustment.
    let now = offer(fx, &w).await;
    assert_eq!(
        (now["available"].as_i64(), now["price"].as_f64()),
        (Some(17), Some(19.99)),
        "{now}"
    );
    // Found by the repaired word, and repaired once: a second migration changes nothing.
    let found = fx
        .get(&format!(
            "/api/brandStore/count?id={}&detail.stockType=live",
            w.brand_store
        ))
        .await;
    assert_eq!(found.json()["count"], 1);
    let version = |answer: common::Response| answer.header("etag");
    let first = version(fx.get(&format!("/api/brandStore/{}", w.brand_store)).await);
    let store = fx.store.clone();
    fx.on_server(async move { store.migrate().await })
        .await
        .expect("the migration runs again");
    assert_eq!(
        version(fx.get(&format!("/api/brandStore/{}", w.brand_store)).await),
        first
    );
}

/// Runs one statement on the fixture's database over a connection of its own, as another
/// program would.
async fn outside(fx: &Fixture, statement: String) {
    use sqlx::Connection;
    let statement = sqlx::AssertSqlSafe(statement);
    let rows = match fx.db {
        Db::Sqlite => {
            let mut connection = sqlx::SqliteConnection::connect(&fx.database_url)
                .await
                .expect("SQLite opens");
            sqlx::raw_sql(statement)
                .execute(&mut connection)
                .await
                .expect("the statement runs")
                .rows_affected()
        }
        Db::Postgres => {
            let mut connection = sqlx::PgConnection::connect(&fx.database_url)
                .await
                .expect("PostgreSQL answers");
            sqlx::raw_sql(statement)
                .execute(&mut connection)
                .await
                .expect("the statement runs")
                .rows_affected()
        }
    };
    assert_eq!(rows, 1);
}

#[tokio::test]
async fn a_migration_repairs_rules_outside_their_domain_on_sqlite() {
    let own = common::own(Db::Sqlite, "migration_repairs_rules").expect("SQLite always runs");
    a_migration_repairs_rules_outside_their_domain(&own).await;
}

#[tokio::test]
async fn a_migration_repairs_rules_outside_their_domain_on_postgres() {
    let Some(own) = common::own(Db::Postgres, "migration_repairs_rules") else {
        return;
    };
    a_migration_repairs_rules_outside_their_domain(&own).await;
}
