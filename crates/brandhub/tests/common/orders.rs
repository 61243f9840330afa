//! Order helpers shared by the order and webhook tests: calls as a demo user type, a brand
//! store every demo user type sees with stocked variants, an intake body.

use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};

/// A reference no other test (or earlier run) uses.
pub fn unique(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}-{nanos}-{}", NEXT.fetch_add(1, Ordering::SeqCst))
}

pub use super::call;

pub async fn get(fx: &super::Fixture, user_type: &str, path: &str) -> super::Response {
    call(fx, reqwest::Method::GET, path, user_type, None).await
}

pub async fn patch(fx: &super::Fixture, user_type: &str, id: &str, body: Value) -> super::Response {
    call(
        fx,
        reqwest::Method::PATCH,
        &format!("/api/order/{id}"),
        user_type,
        Some(body),
    )
    .await
}

pub fn ok(response: &super::Response, status: u16) -> Value {
    assert_eq!(
        response.status,
        status,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    response
        .records("order")
        .first()
        .cloned()
        .unwrap_or(Value::Null)
}

pub fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
}

/// (inStock, demand, available) of a variant in a warehouse, as the admin reads them.
pub async fn stock(fx: &super::Fixture, warehouse: &str, variant: &str) -> (i64, i64, i64) {
    let found = fx
        .get(&format!("/api/stock?fk_warehouse={warehouse}&fk_variant={variant}&fields=inStock,demand,available"))
        .await
        .records("stock");
    let s = &found[0];
    let n = |name: &str| s[name].as_i64().unwrap_or(0);
    (n("inStock"), n("demand"), n("available"))
}

/// A brand store every demo user (host, warehouse, company) sees, with three of its brand's
/// variants that have stock in its warehouse.
pub struct Place {
    pub brand_store: String,
    pub brand: String,
    pub warehouse: String,
    pub variants: Vec<(String, String)>,
}

/// `slot` keeps tests that run at the same time on variants of their own.
pub async fn place(fx: &super::Fixture, slot: usize) -> Place {
    let seen = |user: &'static str| async move {
        get(
            fx,
            user,
            "/api/brandStore?pageSize=1000&fields=id,fk_brand,fk_warehouse",
        )
        .await
        .records("brandStore")
    };
    let (host, warehouse, company) = (
        seen("host").await,
        seen("warehouse").await,
        seen("company").await,
    );
    let ids = |list: &Vec<Value>| list.iter().map(|b| text(&b["id"])).collect::<Vec<_>>();
    let (warehouse_ids, company_ids) = (ids(&warehouse), ids(&company));
    let chosen = host
        .iter()
        .find(|b| warehouse_ids.contains(&text(&b["id"])) && company_ids.contains(&text(&b["id"])))
        .expect("the demo has a brand store of the host's, shipped from the warehouse user's warehouse, of the company user's brands");
    let brand = text(&chosen["fk_brand"]);
    let warehouse = text(&chosen["fk_warehouse"]);
    let stocked = fx
        .get(&format!("/api/stock?fk_warehouse={warehouse}&stock_variant.variant_product.fk_brand={brand}&order_by=id&page={}&pageSize=3&fields=fk_variant,stock_variant.barcode", slot + 1))
        .await
        .records("stock");
    assert_eq!(stocked.len(), 3, "the brand has stocked variants");
    Place {
        brand_store: text(&chosen["id"]),
        brand,
        warehouse,
        variants: stocked
            .iter()
            .map(|s| (text(&s["fk_variant"]), text(&s["stock_variant"]["barcode"])))
            .collect(),
    }
}

pub fn intake_body(p: &Place, reference: &str) -> Value {
    json!({
        "fk_brandStore": p.brand_store,
        "hostOrderRef": reference,
        "shipAddress": {"forename": "Ada", "surname": "Lovelace", "line1": "1 Analytical Row", "town": "London", "postcode": "N1 1AA", "countryCode": "GB"},
        "detail": {"shippingGross": 4.95, "shippingTax": 0.83, "customerMessage": "Leave at the door"},
        "order_orderItem": [
            {"fk_variant": p.variants[0].0, "orderQty": 2, "itemPrice": 10.5, "lineTax": 3.5, "hostItemRef": "L1"},
            {"barcode": p.variants[1].1, "orderQty": 1, "itemPrice": 20.0, "lineGross": 20.004, "hostItemRef": "L2"},
            {"fk_variant": p.variants[2].0, "orderQty": 3, "itemPrice": 1.0, "hostItemRef": "L3"}
        ]
    })
}
