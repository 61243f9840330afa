//! Offers (docs/API.md, "Offers") kept by every write, on SQLite and PostgreSQL: each test
//! makes a world of its own (company, brand, warehouse, host, two stores, two brand stores,
//! a product with two variants and their stock) through the API, and reads its offers back.
//! Which offers a write changed is told by their `ETag`s (an offer's record version moves
//! only when one of its values changed).

mod common;

use common::orders::{call, text, unique};
use common::world::{World, as_host, create, created, host_key, patch};
use common::{BOUNDARY, Fixture, multipart, row, xlsx};
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The offers whose version moved between `before` and now.
async fn changed(
    world: &World,
    fx: &Fixture,
    before: &BTreeMap<(usize, usize), String>,
) -> Vec<(usize, usize)> {
    let after = world.versions(fx).await;
    assert_eq!(after.len(), before.len(), "no offer came or went");
    after
        .into_iter()
        .filter(|(key, version)| before.get(key) != Some(version))
        .map(|(key, _)| key)
        .collect()
}

async fn upload(fx: &Fixture, part: &str, rows: &[Vec<String>]) -> Value {
    let bytes = xlsx(rows);
    let admin = fx.credential("admin");
    let response = fx
        .client()
        .post(format!("{}/api/file?wait=60", fx.base))
        .header(
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .body(multipart(&[(part, Some("sheet.xlsx"), &bytes)]))
        .basic_auth(&admin.email, Some(&admin.secret))
        .send()
        .await
        .expect("the server answers");
    let file = created(&common::Response::read(response).await, "file");
    assert_eq!(file["status"], "processed", "{file}");
    file
}

fn v(available: i64, price: f64, status: &str) -> (i64, Option<f64>, String) {
    (available, Some(price), status.to_string())
}

/// The host's SKU of each offer of this world.
async fn skus(w: &World, fx: &Fixture) -> BTreeMap<(usize, usize), String> {
    w.offers(fx)
        .await
        .into_iter()
        .map(|(key, offer)| (key, text(&offer["hostSku"])))
        .collect()
}

fn sku_map(entries: &[((usize, usize), &str)]) -> BTreeMap<(usize, usize), String> {
    entries
        .iter()
        .map(|(key, sku)| (*key, sku.to_string()))
        .collect()
}

on_both_backends! { "offers";

async fn offers_follow_the_rules_of_their_brand_store(fx) {
    let w = World::make(fx).await;
    let values = w.values(fx).await;
    // Brand store 0: the stock as it is, the base price. Brand store 1: half the stock
    // rounded down, less one; the price 10% more.
    assert_eq!(values[&(0, 0)], v(10, 20.0, "active"));
    assert_eq!(values[&(0, 1)], v(4, 10.0, "active"));
    assert_eq!(values[&(1, 0)], v(4, 22.0, "active"));
    assert_eq!(values[&(1, 1)], v(1, 11.0, "active"));
    let offer = &w.offers(fx).await[&(0, 1)];
    assert_eq!((offer["barcode"].clone(), offer["size"].clone(), offer["currency"].clone()), (json!(w.variants[1].1), json!("M"), json!("EUR")));
    assert_eq!(text(&offer["fk_store"]), w.stores[0]);
    assert_eq!(text(&offer["fk_product"]), w.product);

    // Fixed stock, a cap, none; a fixed adjustment that would go below zero.
    patch(fx, "brandStore", &w.brand_stores[1], json!({"detail": {"stockType": "FIXED", "fixedQuantity": 7, "adjustType": "fixed", "adjustValue": -12.5}})).await;
    let values = w.values(fx).await;
    assert_eq!(values[&(1, 0)], v(7, 7.5, "active"));
    assert_eq!(values[&(1, 1)], v(7, 0.0, "active"));
    patch(fx, "brandStore", &w.brand_stores[0], json!({"detail": {"stockMax": 6}})).await;
    let values = w.values(fx).await;
    assert_eq!((values[&(0, 0)].0, values[&(0, 1)].0), (6, 4));
    patch(fx, "brandStore", &w.brand_stores[0], json!({"detail": {"stockType": "none"}})).await;
    assert_eq!(w.values(fx).await[&(0, 0)], v(0, 20.0, "inactive"));
}

async fn each_write_changes_exactly_the_offers_it_should(fx) {
    let w = World::make(fx).await;

    // A stock PATCH: the variant's offers in both brand stores, nothing else.
    let before = w.versions(fx).await;
    patch(fx, "stock", &w.stock[0], json!({"inStock": 3})).await;
    assert_eq!(changed(&w, fx, &before).await, vec![(0, 0), (1, 0)]);
    let values = w.values(fx).await;
    assert_eq!((values[&(0, 0)].0, values[&(1, 0)].0), (3, 0));
    assert_eq!(values[&(1, 0)].2, "outOfStock");

    // A stock file.
    let before = w.versions(fx).await;
    upload(fx, &format!("stock,{},{}", w.brand, w.warehouse), &[
        row(&["Barcode", "Qty"]),
        row(&[&w.variants[1].1, "9"]),
    ]).await;
    assert_eq!(changed(&w, fx, &before).await, vec![(0, 1), (1, 1)]);
    assert_eq!(w.values(fx).await[&(0, 1)].0, 9);

    // A price record of the host that started yesterday, by JSON: the host's stores' offers
    // of that variant.
    let before = w.versions(fx).await;
    create(fx, "price", json!({"fk_variant": w.variants[0].0, "fk_host": w.host, "price": 15.0, "startDate": "2020-01-01T00:00:00"})).await;
    assert_eq!(changed(&w, fx, &before).await, vec![(0, 0), (1, 0)]);
    let values = w.values(fx).await;
    assert_eq!((values[&(0, 0)].1, values[&(1, 0)].1), (Some(15.0), Some(16.5)));
    // One that starts next year changes nothing yet.
    let before = w.versions(fx).await;
    create(fx, "price", json!({"fk_variant": w.variants[0].0, "fk_host": w.host, "price": 99.0, "startDate": "2099-01-01T00:00:00"})).await;
    assert!(changed(&w, fx, &before).await.is_empty());

    // A price file.
    let before = w.versions(fx).await;
    upload(fx, &format!("price,{},{},01/01/2021,", w.brand, w.host), &[
        row(&["Barcode", "Price", "RRP"]),
        row(&[&w.variants[1].1, "8.00", "12.00"]),
    ]).await;
    assert_eq!(changed(&w, fx, &before).await, vec![(0, 1), (1, 1)]);
    let offer = &w.offers(fx).await[&(0, 1)];
    assert_eq!((offer["price"].as_f64(), offer["rrp"].as_f64()), (Some(8.0), Some(12.0)));

    // A product made inactive: all its offers.
    let before = w.versions(fx).await;
    patch(fx, "product", &w.product, json!({"status": "discontinued"})).await;
    assert_eq!(changed(&w, fx, &before).await.len(), 4);
    assert!(w.values(fx).await.values().all(|(_, _, status)| status == "inactive"));
    patch(fx, "product", &w.product, json!({"status": "active"})).await;

    // A brand store's rules: its offers only.
    let before = w.versions(fx).await;
    patch(fx, "brandStore", &w.brand_stores[1], json!({"detail": {"adjustValue": 20}})).await;
    assert_eq!(changed(&w, fx, &before).await, vec![(1, 0), (1, 1)]);

    // A write that is refused whole changes nothing: an array whose second record is
    // invalid.
    let before = w.versions(fx).await;
    let refused = call(fx, Method::POST, "/api/stock", "admin", Some(json!([
        {"fk_warehouse": w.warehouse, "fk_variant": w.variants[0].0, "inStock": 1},
        {"fk_warehouse": w.warehouse, "fk_variant": w.variants[1].0, "inStock": -5}
    ]))).await;
    assert!(refused.status >= 400, "{}", String::from_utf8_lossy(&refused.body));
    assert!(changed(&w, fx, &before).await.is_empty());
}

async fn a_host_sets_a_thousand_skus_in_one_array(fx) {
    // The demo host's offers: 1,000 of them, named by brand store and barcode.
    let offers = call(fx, Method::GET, "/api/offer?fields=id,fk_brandStore,barcode&pageSize=1000", "host", None).await.records("offer");
    assert_eq!(offers.len(), 1000, "the demo host has 1,000 offers");
    let tag = unique("K");
    let array: Vec<Value> = offers.iter().enumerate().map(|(i, o)| json!({"fk_brandStore": o["fk_brandStore"], "barcode": o["barcode"], "hostSku": format!("{tag}-{i}")})).collect();
    let answer = call(fx, Method::POST, "/api/offer/hostSku", "host", Some(Value::Array(array))).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    let count = call(fx, Method::GET, &format!("/api/offer/count?hostSku={tag}-@"), "host", None).await;
    assert_eq!(count.json()["count"], 1000);
}

async fn files_of_products_and_dispatches_change_exactly_their_offers(fx) {
    let w = World::make(fx).await;
    let code = text(&fx.get(&format!("/api/product/{}?fields=code", w.product)).await.records("product")[0]["code"]);

    // A product file giving variant 1 a new base price: its offers in both brand stores.
    let before = w.versions(fx).await;
    upload(fx, &format!("product,{}", w.brand), &[
        row(&["Product Code", "Title", "Barcode", "Price"]),
        row(&[&code, "Offer shirt", &w.variants[1].1, "12.00"]),
    ]).await;
    assert_eq!(changed(&w, fx, &before).await, vec![(0, 1), (1, 1)]);
    let values = w.values(fx).await;
    assert_eq!((values[&(0, 1)].1, values[&(1, 1)].1), (Some(12.0), Some(13.2)));

    // A dispatch file: stock and demand fall together, so no offer changes.
    let intake = json!({
        "fk_brandStore": w.brand_stores[0],
        "hostOrderRef": unique("FILE"),
        "shipAddress": {"forename": "Ada", "surname": "Lovelace", "line1": "1 Analytical Row", "town": "London", "postcode": "N1 1AA", "countryCode": "GB"},
        "order_orderItem": [{"fk_variant": w.variants[0].0, "orderQty": 2, "itemPrice": 20.0, "hostItemRef": "L1"}]
    });
    let order = created(&call(fx, Method::POST, "/api/order", "admin", Some(intake)).await, "order");
    let id = text(&order["id"]);
    let answer = call(fx, Method::PATCH, &format!("/api/order/{id}"), "admin", Some(json!({"status": "accepted"}))).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    let before = w.versions(fx).await;
    let file = upload(fx, &format!("orderDispatch,{}", w.brand), &[
        row(&["Order Ref", "Barcode", "Ship Qty"]),
        row(&[&text(&order["brandOrderRef"]), &w.variants[0].1, "2"]),
    ]).await;
    assert_eq!(file["detail"]["error"], "", "{file}");
    let status = fx.get(&format!("/api/order/{id}?fields=status")).await.records("order")[0]["status"].clone();
    assert_eq!(status, "dispatched");
    assert!(changed(&w, fx, &before).await.is_empty());
    assert_eq!(w.values(fx).await[&(0, 0)].0, 8);
}

async fn orders_move_offers_through_their_stock(fx) {
    let w = World::make(fx).await;
    let intake = |reference: String| json!({
        "fk_brandStore": w.brand_stores[0],
        "hostOrderRef": reference,
        "shipAddress": {"forename": "Ada", "surname": "Lovelace", "line1": "1 Analytical Row", "town": "London", "postcode": "N1 1AA", "countryCode": "GB"},
        "order_orderItem": [{"fk_variant": w.variants[0].0, "orderQty": 2, "itemPrice": 20.0, "hostItemRef": "L1"}]
    });
    // Intake: the demand of variant 0 rises, so both brand stores' offers of it change.
    let before = w.versions(fx).await;
    let answer = call(fx, Method::POST, "/api/order", "admin", Some(intake(unique("OFFER")))).await;
    let order = text(&created(&answer, "order")["id"]);
    assert_eq!(changed(&w, fx, &before).await, vec![(0, 0), (1, 0)]);
    assert_eq!(w.values(fx).await[&(0, 0)].0, 8);

    // Cancelled: the demand is given back.
    let before = w.versions(fx).await;
    let answer = call(fx, Method::PATCH, &format!("/api/order/{order}"), "admin", Some(json!({"status": "cancelled"}))).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    assert_eq!(changed(&w, fx, &before).await, vec![(0, 0), (1, 0)]);
    assert_eq!(w.values(fx).await[&(0, 0)].0, 10);

    // Accepted and dispatched: stock and demand fall together, so what is available (and
    // every offer) stays as it was; returned: the stock comes back.
    let answer = call(fx, Method::POST, "/api/order", "admin", Some(intake(unique("OFFER")))).await;
    let order = text(&created(&answer, "order")["id"]);
    let answer = call(fx, Method::PATCH, &format!("/api/order/{order}"), "admin", Some(json!({"status": "accepted"}))).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    let before = w.versions(fx).await;
    let answer = call(fx, Method::POST, "/api/order/dispatch", "admin", Some(json!([{"id": order, "status": "dispatched", "carrier": "DHL", "trackingRef": "T-1"}]))).await;
    assert_eq!(answer.json()["response"]["dispatch"][0]["status"], 200, "{}", String::from_utf8_lossy(&answer.body));
    assert!(changed(&w, fx, &before).await.is_empty());
    assert_eq!(w.values(fx).await[&(0, 0)].0, 8);
    let answer = call(fx, Method::PATCH, &format!("/api/order/{order}"), "admin", Some(json!({"status": "delivered"}))).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    let items = fx.get(&format!("/api/orderItem?fk_order={order}&fields=id")).await.records("orderItem");
    let before = w.versions(fx).await;
    let answer = call(fx, Method::PATCH, &format!("/api/order/{order}"), "admin", Some(json!({"status": "returned", "order_orderItem": [{"id": text(&items[0]["id"]), "returnQty": 1}]}))).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    // One unit back: 9 available. Brand store 1 offers half of it, rounded down, less one:
    // 3, as it did of 8, so only brand store 0's offer changes.
    let moved = changed(&w, fx, &before).await;
    let stock = fx.get(&format!("/api/stock/{}?fields=available", w.stock[0])).await.records("stock")[0].clone();
    assert_eq!(stock["available"], 9);
    assert_eq!(moved, vec![(0, 0)]);
    let values = w.values(fx).await;
    assert_eq!((values[&(0, 0)].0, values[&(1, 0)].0), (9, 3));
}

async fn offers_are_seen_by_their_brands_and_hosts_and_never_block_a_delete(fx) {
    let w = World::make(fx).await;
    // A host sees the offers of its stores only, without the rules; a warehouse none.
    let host = host_key(fx, &w).await;
    let as_host = common::send(fx, &fx.base, Method::GET, "/api/offer?pageSize=100", common::As::Key(&host.0, &host.1), &[], None).await;
    assert_eq!(as_host.status, 200, "{}", String::from_utf8_lossy(&as_host.body));
    assert_eq!(as_host.records("offer").len(), 4);
    let as_host = common::send(fx, &fx.base, Method::GET, &format!("/api/brandStore/{}", w.brand_stores[1]), common::As::Key(&host.0, &host.1), &[], None).await;
    let detail = as_host.records("brandStore")[0]["detail"].clone();
    assert!(detail.get("stockPercent").is_none() && detail.get("adjustValue").is_none(), "{detail}");
    let as_warehouse = call(fx, Method::GET, "/api/offer/count", "warehouse", None).await;
    assert_eq!(as_warehouse.json()["count"], 0);
    // The demo company user sees none of this company's offers.
    let as_company = call(fx, Method::GET, &format!("/api/offer/count?fk_brand={}", w.brand), "company", None).await;
    assert_eq!(as_company.json()["count"], 0);

    // Deleting a variant, then a brand store, takes their offers with them.
    let answer = call(fx, Method::DELETE, &format!("/api/stock/{}", w.stock[1]), "admin", None).await;
    assert_eq!(answer.status, 204, "{}", String::from_utf8_lossy(&answer.body));
    let answer = call(fx, Method::DELETE, &format!("/api/variant/{}", w.variants[1].0), "admin", None).await;
    assert_eq!(answer.status, 204, "{}", String::from_utf8_lossy(&answer.body));
    assert_eq!(w.offers(fx).await.keys().copied().collect::<Vec<_>>(), vec![(0, 0), (1, 0)]);
    let answer = call(fx, Method::DELETE, &format!("/api/brandStore/{}", w.brand_stores[1]), "admin", None).await;
    assert_eq!(answer.status, 204, "{}", String::from_utf8_lossy(&answer.body));
    assert_eq!(w.offers(fx).await.keys().copied().collect::<Vec<_>>(), vec![(0, 0)]);
    let _ = (&w.brand_code, &w.company);
}

async fn a_price_that_starts_in_two_seconds_changes_its_offers_then(fx) {
    let w = World::make(fx).await;
    let now = chrono::Utc::now();
    let start = (now + chrono::Duration::seconds(2)).format("%Y-%m-%dT%H:%M:%S").to_string();
    create(fx, "price", json!({"fk_variant": w.variants[1].0, "fk_host": w.host, "price": 5.0, "startDate": start})).await;
    assert_eq!(w.values(fx).await[&(0, 1)].1, Some(10.0), "not before its start");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let values = w.values(fx).await;
        if values[&(0, 1)].1 == Some(5.0) {
            assert_eq!(values[&(1, 1)].1, Some(5.5));
            let taken = chrono::Utc::now().signed_duration_since(chrono::NaiveDateTime::parse_from_str(&start, "%Y-%m-%dT%H:%M:%S").unwrap().and_utc());
            assert!(taken < chrono::Duration::milliseconds(2500), "applied {taken} after its start");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the price took effect within 15 s");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}


async fn a_host_or_an_admin_sets_an_offers_sku_unique_in_its_store_letter_case_counting(fx) {
    let w = World::make(fx).await;
    let host = host_key(fx, &w).await;
    let offers = w.offers(fx).await;
    let id = |key: (usize, usize)| text(&offers[&key]["id"]);
    // The host, on its store's offer: the answer is the offer with its SKU.
    let answer = as_host(fx, &host, Method::PATCH, &format!("/api/offer/{}", id((0, 0))), json!({"hostSku": "SKU-A"})).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    assert_eq!(answer.records("offer")[0]["hostSku"], "SKU-A");
    // The same SKU in the other store; an admin.
    patch(fx, "offer", &id((1, 0)), json!({"hostSku": "SKU-A"})).await;
    // Taken in its store: 409 naming the offer that has it; nothing written.
    let taken = as_host(fx, &host, Method::PATCH, &format!("/api/offer/{}", id((0, 1))), json!({"hostSku": "SKU-A"})).await;
    let problem = taken.assert_problem(409, "conflict");
    assert!(text(&problem["detail"]).contains(&id((0, 0))), "{problem}");
    let taken = call(fx, Method::PATCH, &format!("/api/offer/{}", id((0, 1))), "admin", Some(json!({"hostSku": "SKU-A"}))).await;
    assert!(text(&taken.assert_problem(409, "conflict")["detail"]).contains(&id((0, 0))));
    // Letter case counts: `sku-a` is another SKU.
    patch(fx, "offer", &id((0, 1)), json!({"hostSku": "sku-a"})).await;
    assert_eq!(skus(&w, fx).await, sku_map(&[((0, 0), "SKU-A"), ((0, 1), "sku-a"), ((1, 0), "SKU-A"), ((1, 1), "")]));
    // Empty is no SKU, as often as wanted; the freed SKU is free again.
    as_host(fx, &host, Method::PATCH, &format!("/api/offer/{}", id((0, 0))), json!({"hostSku": ""})).await;
    patch(fx, "offer", &id((0, 1)), json!({"hostSku": ""})).await;
    patch(fx, "offer", &id((1, 1)), json!({"hostSku": ""})).await;
    patch(fx, "offer", &id((0, 1)), json!({"hostSku": "SKU-A"})).await;
    assert_eq!(skus(&w, fx).await, sku_map(&[((0, 0), ""), ((0, 1), "SKU-A"), ((1, 0), "SKU-A"), ((1, 1), "")]));
    // hostSku is the only field written; a company user may not write offers (one it
    // sees: the demo's); a warehouse user sees none, and its key may not change them.
    let other = call(fx, Method::PATCH, &format!("/api/offer/{}", id((0, 0))), "admin", Some(json!({"available": 3}))).await;
    assert_eq!(other.status, 422, "{}", String::from_utf8_lossy(&other.body));
    let seen = call(fx, Method::GET, "/api/offer?pageSize=1&fields=id", "company", None).await.records("offer");
    let demo = text(&seen[0]["id"]);
    let refused = call(fx, Method::PATCH, &format!("/api/offer/{demo}"), "company", Some(json!({"hostSku": "MINE"}))).await;
    refused.assert_problem(403, "forbidden");
    call(fx, Method::GET, &format!("/api/offer/{}", id((0, 0))), "warehouse", None).await.assert_problem(404, "not_found");
    let refused = call(fx, Method::PATCH, &format!("/api/offer/{}", id((0, 0))), "warehouse", Some(json!({"hostSku": "MINE"}))).await;
    assert!([403, 404].contains(&refused.status), "{}", String::from_utf8_lossy(&refused.body));
    assert_eq!(skus(&w, fx).await[&(0, 0)], "");
}

async fn a_hosts_skus_are_set_in_bulk_all_or_nothing(fx) {
    let w = World::make(fx).await;
    let host = host_key(fx, &w).await;
    let offers = w.offers(fx).await;
    let id = |key: (usize, usize)| text(&offers[&key]["id"]);
    // By id, by brand store and barcode (any case), by brand store and variant: one plan
    // through the store's one executor.
    let runs = brandhub_store::write::runs(brandhub_store::write::EntryPoint::Bulk);
    let answer = as_host(fx, &host, Method::POST, "/api/offer/hostSku", json!([
        {"id": id((0, 0)), "hostSku": "X1"},
        {"fk_brandStore": w.brand_stores[0], "barcode": w.variants[1].1.to_lowercase(), "hostSku": "X2"},
        {"fk_brandStore": w.brand_stores[1], "fk_variant": w.variants[0].0, "hostSku": "X1"}
    ])).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    assert!(brandhub_store::write::runs(brandhub_store::write::EntryPoint::Bulk) > runs);
    let records = answer.records("offer");
    assert_eq!(records.iter().map(|r| text(&r["id"])).collect::<Vec<_>>(), vec![id((0, 0)), id((0, 1)), id((1, 0))]);
    assert_eq!(skus(&w, fx).await, sku_map(&[((0, 0), "X1"), ((0, 1), "X2"), ((1, 0), "X1"), ((1, 1), "")]));

    // A swap: each takes the other's, judged on where the array ends.
    let answer = call(fx, Method::POST, "/api/offer/hostSku", "admin", Some(json!([
        {"id": id((0, 0)), "hostSku": "X2"},
        {"id": id((0, 1)), "hostSku": "X1"}
    ]))).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    assert_eq!(skus(&w, fx).await, sku_map(&[((0, 0), "X2"), ((0, 1), "X1"), ((1, 0), "X1"), ((1, 1), "")]));

    // All or nothing, every problem by index: an offer not found, a SKU twice in one store,
    // a SKU another offer keeps, no way of naming an offer, a value of the wrong type, the
    // same offer twice.
    let refused = as_host(fx, &host, Method::POST, "/api/offer/hostSku", json!([
        {"id": id((0, 0)), "hostSku": "Y1"},
        {"id": "0123456789ABCDEF0123456789ABCDEF", "hostSku": "Y2"},
        {"id": id((0, 1)), "hostSku": "Y1"},
        {"id": id((1, 1)), "hostSku": "X1"},
        {"fk_brandStore": w.brand_stores[0], "hostSku": "Y3"},
        {"fk_brandStore": w.brand_stores[1], "barcode": w.variants[0].1, "hostSku": 5},
        {"fk_brandStore": w.brand_stores[0], "fk_variant": w.variants[0].0, "hostSku": "Y4"}
    ])).await;
    let problem = refused.assert_problem(422, "validation_failed");
    let errors: Vec<(u64, String)> = problem["errors"].as_array().unwrap().iter()
        .map(|e| (e["index"].as_u64().unwrap(), text(&e["field"]))).collect();
    for expected in [(1, "id"), (2, "hostSku"), (3, "hostSku"), (4, "id"), (5, "hostSku"), (6, "id")] {
        assert!(errors.contains(&(expected.0, expected.1.to_string())), "{expected:?} in {problem}");
    }
    assert!(errors.iter().all(|(index, _)| *index != 0), "{problem}");
    assert_eq!(skus(&w, fx).await, sku_map(&[((0, 0), "X2"), ((0, 1), "X1"), ((1, 0), "X1"), ((1, 1), "")]));

    // More than 1,000 elements, or a caller who may not write offers.
    let many: Vec<Value> = (0..1001).map(|i| json!({"id": id((0, 0)), "hostSku": format!("M{i}")})).collect();
    let refused = as_host(fx, &host, Method::POST, "/api/offer/hostSku", Value::Array(many)).await;
    refused.assert_problem(400, "invalid_value");
    let refused = call(fx, Method::POST, "/api/offer/hostSku", "company", Some(json!([{"id": id((0, 0)), "hostSku": "C"}]))).await;
    refused.assert_problem(403, "forbidden");
    assert_eq!(skus(&w, fx).await, sku_map(&[((0, 0), "X2"), ((0, 1), "X1"), ((1, 0), "X1"), ((1, 1), "")]));
}

async fn an_intake_names_a_variant_by_the_hosts_sku_and_its_line_keeps_it(fx) {
    let w = World::make(fx).await;
    let offers = w.offers(fx).await;
    patch(fx, "offer", &text(&offers[&(0, 1)]["id"]), json!({"hostSku": "Shirt-M"})).await;
    // The other store's SKU names nothing in this brand store.
    patch(fx, "offer", &text(&offers[&(1, 0)]["id"]), json!({"hostSku": "Shirt-S"})).await;
    let intake = |reference: String, items: Value| json!({
        "fk_brandStore": w.brand_stores[0],
        "hostOrderRef": reference,
        "shipAddress": {"forename": "Ada", "surname": "Lovelace", "line1": "1 Analytical Row", "town": "London", "postcode": "N1 1AA", "countryCode": "GB"},
        "order_orderItem": items
    });
    let answer = call(fx, Method::POST, "/api/order", "admin", Some(intake(unique("SKU"), json!([
        {"hostSku": "Shirt-M", "orderQty": 1, "itemPrice": 10.0},
        {"fk_variant": w.variants[0].0, "orderQty": 1, "itemPrice": 20.0}
    ])))).await;
    let order = text(&created(&answer, "order")["id"]);
    let items = fx.get(&format!("/api/orderItem?fk_order={order}&fields=fk_variant,hostSku,itemPrice")).await.records("orderItem");
    let mut lines: Vec<(f64, String, String)> = items.iter().map(|item| (
        item["itemPrice"].as_f64().unwrap_or_default(),
        item["fk_variant"]["__KEY"].as_str().or(item["fk_variant"].as_str()).unwrap_or_default().to_string(),
        text(&item["hostSku"]),
    )).collect();
    lines.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(lines, vec![(10.0, w.variants[1].0.clone(), "Shirt-M".to_string()), (20.0, w.variants[0].0.clone(), String::new())]);
    // Two of fk_variant, barcode and hostSku, or none, or a SKU of no offer of the brand
    // store (another store's, another letter case): 422 naming the line.
    let refused = call(fx, Method::POST, "/api/order", "admin", Some(intake(unique("SKU"), json!([
        {"hostSku": "Shirt-M", "orderQty": 1, "itemPrice": 10.0},
        {"hostSku": "Shirt-M", "barcode": w.variants[1].1, "orderQty": 1, "itemPrice": 10.0},
        {"orderQty": 1, "itemPrice": 10.0},
        {"hostSku": "Shirt-S", "orderQty": 1, "itemPrice": 20.0},
        {"hostSku": "shirt-m", "orderQty": 1, "itemPrice": 10.0},
        {"fk_variant": w.variants[0].0, "barcode": w.variants[0].1, "orderQty": 1, "itemPrice": 20.0}
    ])))).await;
    let problem = refused.assert_problem(422, "validation_failed");
    let indexes: std::collections::BTreeSet<u64> = problem["errors"].as_array().unwrap().iter().filter_map(|e| e["index"].as_u64()).collect();
    assert_eq!(indexes.into_iter().collect::<Vec<_>>(), vec![1, 2, 3, 4, 5], "{problem}");
}

}

/// A price that starts while two servers run over one database changes its offers once:
/// one `offer.updated` event per offer, whichever server's clock applied it.
mod dated_prices_with_two_servers {
    use super::*;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    fn fixture(db: common::Db) -> Option<&'static Fixture> {
        common::shared_with(db, "offers_two_servers", common::SCALE, |settings| {
            settings.webhooks.allow_insecure_localhost = true;
        })
    }

    async fn receive(
        axum::extract::State(got): axum::extract::State<Arc<Mutex<Vec<Value>>>>,
        body: axum::body::Bytes,
    ) -> axum::http::StatusCode {
        if let Ok(event) = serde_json::from_slice(&body) {
            got.lock().unwrap().push(event);
        }
        axum::http::StatusCode::OK
    }

    /// A receiver of webhook deliveries on 127.0.0.1: its URL and what it got.
    async fn receiver() -> (String, Arc<Mutex<Vec<Value>>>) {
        let got = Arc::new(Mutex::new(Vec::new()));
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(receive))
            .with_state(got.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, got)
    }

    /// The events about `offer` that `got` holds.
    fn about(got: &Arc<Mutex<Vec<Value>>>, offer: &str) -> Vec<Value> {
        got.lock()
            .unwrap()
            .iter()
            .filter(|event| event["type"] == "offer.updated" && text(&event["data"]["id"]) == offer)
            .cloned()
            .collect()
    }

    async fn one_event_per_offer(fx: &'static Fixture) {
        let w = World::make(fx).await;
        // A second server with a store and a price clock of its own.
        let _second = common::world::second_server_with(fx, true).await;
        let (url, got) = receiver().await;
        create(
            fx,
            "webhook",
            json!({"url": url, "events": ["offer.updated"]}),
        )
        .await;
        let offers = w.offers(fx).await;
        let moved = [text(&offers[&(0, 1)]["id"]), text(&offers[&(1, 1)]["id"])];
        let start = (chrono::Utc::now() + chrono::Duration::seconds(2))
            .format("%Y-%m-%dT%H:%M:%S")
            .to_string();
        create(fx, "price", json!({"fk_variant": w.variants[1].0, "fk_host": w.host, "price": 5.0, "startDate": start})).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        while moved.iter().any(|id| about(&got, id).is_empty()) {
            assert!(
                Instant::now() < deadline,
                "an event of each changed offer within 30 s: {:?}",
                got.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // Both clocks have ticked several times since: still one event each, with the new
        // price, and none of the offers that did not change.
        tokio::time::sleep(Duration::from_secs(3)).await;
        for (id, price) in moved.iter().zip([5.0, 5.5]) {
            let events = about(&got, id);
            assert_eq!(events.len(), 1, "one event of {id}: {events:?}");
            assert_eq!(
                events[0]["data"]["price"].as_f64(),
                Some(price),
                "{events:?}"
            );
        }
        for key in [(0, 0), (1, 0)] {
            assert!(
                about(&got, &text(&offers[&key]["id"])).is_empty(),
                "no event of an unchanged offer"
            );
        }
    }

    #[tokio::test]
    async fn sqlite_a_price_starting_with_two_servers_running_fires_one_event_per_offer() {
        one_event_per_offer(fixture(common::Db::Sqlite).expect("SQLite always runs")).await;
    }

    #[tokio::test]
    async fn postgres_a_price_starting_with_two_servers_running_fires_one_event_per_offer() {
        let Some(fx) = fixture(common::Db::Postgres) else {
            return;
        };
        one_event_per_offer(fx).await;
    }
}
