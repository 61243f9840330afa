//! Random write sequences against an in-memory model of offers (docs/API.md, "Offers"): stock
//! counts, order intakes, prices with dates and currencies, brand store rules and the
//! product's status, written through the API; after every write each offer of the case's
//! own world equals what the model computes with the rules of `brandhub_store::offers::rules`.
//! The stock a brand store offers from is read back (orders move it as the order tests hold);
//! everything else the model keeps itself.

mod common;

use brandhub_store::offers::rules::{self, Rules};
use common::orders::{call, text, unique};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use reqwest::Method;
use serde_json::{Value, json};

const STOCK_TYPES: [&str; 4] = ["live", "FIXED", "none", ""];
const ADJUST_TYPES: [&str; 3] = ["percent", "Fixed", ""];

/// When a price record starts and ends, relative to now.
#[derive(Debug, Clone, Copy, PartialEq)]
enum When {
    Past,
    Future,
}

#[derive(Debug, Clone)]
enum Op {
    SetStock {
        variant: usize,
        qty: i64,
    },
    Intake {
        variant: usize,
        qty: i64,
    },
    AddPrice {
        variant: usize,
        cents: i64,
        start: When,
        end: Option<When>,
        any_currency: bool,
    },
    SetRules {
        store: usize,
        rules: Rules,
    },
    SetProductActive(bool),
}

fn rules_strategy() -> impl Strategy<Value = Rules> {
    (
        0..STOCK_TYPES.len(),
        proptest::option::of(0i64..=100),
        proptest::option::of(0i64..5),
        proptest::option::of(0i64..8),
        proptest::option::of(0i64..20),
        0..ADJUST_TYPES.len(),
        proptest::option::of(-20i64..20),
    )
        .prop_map(
            |(stock_type, percent, buffer, max, fixed, adjust_type, value)| Rules {
                stock_type: STOCK_TYPES[stock_type].to_string(),
                stock_percent: percent,
                stock_buffer: buffer,
                stock_max: max,
                fixed_quantity: fixed,
                adjust_type: ADJUST_TYPES[adjust_type].to_string(),
                adjust_value: value.map(|v| v as f64 / 2.0),
            },
        )
}

fn op() -> impl Strategy<Value = Op> {
    let when = prop_oneof![Just(When::Past), Just(When::Future)];
    prop_oneof![
        (0usize..2, 0i64..30).prop_map(|(variant, qty)| Op::SetStock { variant, qty }),
        (0usize..2, 1i64..4).prop_map(|(variant, qty)| Op::Intake { variant, qty }),
        (
            0usize..2,
            1i64..5000,
            when.clone(),
            proptest::option::of(when),
            any::<bool>()
        )
            .prop_map(|(variant, cents, start, end, any_currency)| Op::AddPrice {
                variant,
                cents,
                start,
                end,
                any_currency
            }),
        (0usize..2, rules_strategy()).prop_map(|(store, rules)| Op::SetRules { store, rules }),
        any::<bool>().prop_map(Op::SetProductActive),
    ]
}

/// A price record as the model keeps it: start and end as record timestamps.
#[derive(Debug, Clone)]
struct PriceRecord {
    variant: usize,
    price: f64,
    start: String,
    end: Option<String>,
    any_currency: bool,
}

#[derive(Debug, Default)]
struct Model {
    rules: [Rules; 2],
    base: [f64; 2],
    prices: Vec<PriceRecord>,
    product_active: bool,
}

impl Model {
    /// The price in effect for a variant now: the latest started, unended record (one in the
    /// store's currency before an any-currency one of the same start), else the base price.
    fn base_price(&self, variant: usize, now: &str) -> Option<f64> {
        self.prices
            .iter()
            .filter(|p| {
                p.variant == variant
                    && p.start.as_str() <= now
                    && p.end.as_deref().is_none_or(|end| end > now)
            })
            .max_by(|a, b| {
                a.start
                    .cmp(&b.start)
                    .then(b.any_currency.cmp(&a.any_currency))
            })
            .map(|p| p.price)
            .or(Some(self.base[variant]))
    }
}

struct Case<'a> {
    fx: &'a common::Fixture,
    host: String,
    brand_stores: [String; 2],
    variants: [String; 2],
    stock: [String; 2],
    warehouse: String,
    product: String,
    /// Makes each price record's start unique.
    seconds: std::cell::Cell<i64>,
}

async fn create(
    fx: &common::Fixture,
    resource: &str,
    body: Value,
) -> Result<String, TestCaseError> {
    let answer = call(
        fx,
        Method::POST,
        &format!("/api/{resource}"),
        "admin",
        Some(body),
    )
    .await;
    prop_assert_eq!(
        answer.status,
        201,
        "{}: {}",
        resource,
        String::from_utf8_lossy(&answer.body)
    );
    Ok(text(&answer.records(resource)[0]["id"]))
}

fn rules_body(rules: &Rules) -> Value {
    json!({"detail": {
        "stockType": rules.stock_type,
        "stockPercent": rules.stock_percent,
        "stockBuffer": rules.stock_buffer,
        "stockMax": rules.stock_max,
        "fixedQuantity": rules.fixed_quantity,
        "adjustType": rules.adjust_type,
        "adjustValue": rules.adjust_value,
    }})
}

fn timestamp(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S").to_string()
}

impl<'a> Case<'a> {
    async fn make(fx: &'a common::Fixture, model: &mut Model) -> Result<Case<'a>, TestCaseError> {
        let n = common::unique_number();
        let company = create(
            fx,
            "company",
            json!({"name": format!("Model company {n}"), "code": format!("MC{n}")}),
        )
        .await?;
        let brand = create(fx, "brand", json!({"fk_company": company, "name": format!("Model brand {n}"), "code": format!("MB{n}")})).await?;
        let warehouse = create(fx, "warehouse", json!({"fk_company": company, "name": format!("Model warehouse {n}"), "code": format!("MW{n}")})).await?;
        let host = create(
            fx,
            "host",
            json!({"name": format!("Model host {n}"), "code": format!("MH{n}")}),
        )
        .await?;
        let mut brand_stores = Vec::new();
        for i in 0..2 {
            let store = create(fx, "store", json!({"fk_host": host, "name": format!("Model store {n}-{i}"), "code": format!("MS{n}-{i}"), "currency": "EUR"})).await?;
            brand_stores.push(
                create(
                    fx,
                    "brandStore",
                    json!({"fk_brand": brand, "fk_store": store, "fk_warehouse": warehouse}),
                )
                .await?,
            );
        }
        let product = create(fx, "product", json!({"fk_brand": brand, "code": format!("MP{n}"), "title": "Model shirt", "status": "active"})).await?;
        model.product_active = true;
        let mut variants = Vec::new();
        let mut stock = Vec::new();
        for (i, base) in [12.5, 3.99].into_iter().enumerate() {
            let variant = create(fx, "variant", json!({"fk_product": product, "barcode": format!("7{n:011}{i}"), "detail": {"price": base}})).await?;
            stock.push(
                create(
                    fx,
                    "stock",
                    json!({"fk_warehouse": warehouse, "fk_variant": variant, "inStock": 5}),
                )
                .await?,
            );
            model.base[i] = base;
            variants.push(variant);
        }
        Ok(Case {
            fx,
            host,
            brand_stores: [brand_stores[0].clone(), brand_stores[1].clone()],
            variants: [variants[0].clone(), variants[1].clone()],
            stock: [stock[0].clone(), stock[1].clone()],
            warehouse,
            product,
            seconds: std::cell::Cell::new(0),
        })
    }

    async fn expect(
        &self,
        method: Method,
        path: &str,
        body: Value,
        status: u16,
    ) -> Result<(), TestCaseError> {
        let answer = call(self.fx, method, path, "admin", Some(body)).await;
        prop_assert_eq!(
            answer.status,
            status,
            "{}: {}",
            path,
            String::from_utf8_lossy(&answer.body)
        );
        Ok(())
    }

    async fn apply(&self, model: &mut Model, op: &Op) -> Result<(), TestCaseError> {
        match op {
            Op::SetStock { variant, qty } => {
                self.expect(
                    Method::PATCH,
                    &format!("/api/stock/{}", self.stock[*variant]),
                    json!({"inStock": qty}),
                    200,
                )
                .await
            }
            Op::Intake { variant, qty } => {
                let body = json!({
                    "fk_brandStore": self.brand_stores[0],
                    "hostOrderRef": unique("MODEL"),
                    "shipAddress": {"forename": "Ada", "surname": "Lovelace", "line1": "1 Row", "town": "London", "postcode": "N1 1AA", "countryCode": "GB"},
                    "order_orderItem": [{"fk_variant": self.variants[*variant], "orderQty": qty, "itemPrice": 1.0, "hostItemRef": "L1"}]
                });
                self.expect(Method::POST, "/api/order", body, 201).await
            }
            Op::AddPrice {
                variant,
                cents,
                start,
                end,
                any_currency,
            } => {
                let now = chrono::Utc::now();
                let k = self.seconds.get() + 1;
                self.seconds.set(k);
                let start = match start {
                    When::Past => {
                        timestamp(now - chrono::Duration::days(400) + chrono::Duration::seconds(k))
                    }
                    When::Future => {
                        timestamp(now + chrono::Duration::days(400) + chrono::Duration::seconds(k))
                    }
                };
                let end = end.map(|end| match end {
                    When::Past => timestamp(now - chrono::Duration::days(1)),
                    When::Future => timestamp(now + chrono::Duration::days(800)),
                });
                let price = *cents as f64 / 100.0;
                let mut body = json!({"fk_variant": self.variants[*variant], "fk_host": self.host, "price": price, "startDate": start, "currency": if *any_currency { "" } else { "EUR" }});
                if let Some(end) = &end {
                    body["endDate"] = json!(end);
                }
                self.expect(Method::POST, "/api/price", body, 201).await?;
                model.prices.push(PriceRecord {
                    variant: *variant,
                    price,
                    start,
                    end,
                    any_currency: *any_currency,
                });
                Ok(())
            }
            Op::SetRules { store, rules } => {
                self.expect(
                    Method::PATCH,
                    &format!("/api/brandStore/{}", self.brand_stores[*store]),
                    rules_body(rules),
                    200,
                )
                .await?;
                model.rules[*store] = rules.clone();
                Ok(())
            }
            Op::SetProductActive(active) => {
                let status = if *active { "active" } else { "discontinued" };
                self.expect(
                    Method::PATCH,
                    &format!("/api/product/{}", self.product),
                    json!({"status": status}),
                    200,
                )
                .await?;
                model.product_active = *active;
                Ok(())
            }
        }
    }

    async fn agrees(&self, model: &Model, after: &Op) -> Result<(), TestCaseError> {
        let now = timestamp(chrono::Utc::now());
        let offers = self
            .fx
            .get(&format!(
                "/api/offer?fk_brandStore={}&fk_brandStore={}&pageSize=10&exclude=offer_@",
                self.brand_stores[0], self.brand_stores[1]
            ))
            .await
            .records("offer");
        prop_assert_eq!(offers.len(), 4, "after {:?}", after);
        for offer in offers {
            let store = self
                .brand_stores
                .iter()
                .position(|id| *id == text(&offer["fk_brandStore"]))
                .unwrap();
            let variant = self
                .variants
                .iter()
                .position(|id| *id == text(&offer["fk_variant"]))
                .unwrap();
            let stock = self
                .fx
                .get(&format!(
                    "/api/stock/{}?fields=available",
                    self.stock[variant]
                ))
                .await
                .records("stock")[0]["available"]
                .as_i64()
                .unwrap();
            let rules = &model.rules[store];
            let available = rules::available(rules, stock);
            let price = rules::price(rules, model.base_price(variant, &now));
            let status = rules::status(rules, model.product_active, price, available);
            prop_assert_eq!(
                offer["available"].as_i64(),
                Some(available),
                "available of {:?} after {:?}: {}",
                (store, variant),
                after,
                offer
            );
            prop_assert_eq!(
                offer["price"].as_f64(),
                price,
                "price of {:?} after {:?}: {}",
                (store, variant),
                after,
                offer
            );
            prop_assert_eq!(
                text(&offer["status"]),
                status,
                "status of {:?} after {:?}: {}",
                (store, variant),
                after,
                offer
            );
        }
        let _ = &self.warehouse;
        Ok(())
    }
}

fn run_model(db: common::Db) {
    let Some(fx) = common::shared(db, "offer_model") else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut runner = TestRunner::new(Config {
        cases: 16,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&proptest::collection::vec(op(), 1..14), |ops| {
        runtime.block_on(async {
            let mut model = Model::default();
            let case = Case::make(fx, &mut model).await?;
            for op in &ops {
                case.apply(&mut model, op).await?;
                case.agrees(&model, op).await?;
            }
            Ok(())
        })
    });
    if let Err(error) = result {
        panic!("{db:?}: {error}");
    }
}

#[test]
fn sqlite_offers_agree_with_the_model() {
    run_model(common::Db::Sqlite);
}

#[test]
fn postgres_offers_agree_with_the_model() {
    run_model(common::Db::Postgres);
}
