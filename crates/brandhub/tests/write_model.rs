//! Random write sequences against a model (docs/API.md, "Writes: master data and catalogue"): creates, patches, upserts, array
//! creates and deletes of products and variants through the API, each answered as a simple
//! in-memory model of the same writes says (201, 200, 204, 404 or 409), and after every write
//! the lists, counts and by-id reads agree with the model. The reads are repeated between
//! writes, so a cached page that outlived a write would show as a stale answer.

mod common;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Product codes the sequences pick from; the same code in another case is the same key.
const CODES: [&str; 4] = ["A1", "a1", "B2", "C3"];
/// Barcodes the sequences pick from.
const BARCODES: [&str; 3] = ["0001", "0002", "0003"];
/// Titles and sizes the writes set.
const WORDS: [&str; 4] = ["Shirt", "Éclair", "Coat", "shirt"];

/// One write of a sequence.
#[derive(Debug, Clone)]
enum Op {
    CreateProduct {
        code: usize,
        title: usize,
    },
    UpsertProduct {
        code: usize,
        title: usize,
    },
    CreateProducts {
        codes: Vec<usize>,
        title: usize,
    },
    PatchProduct {
        code: usize,
        title: usize,
    },
    DeleteProduct {
        code: usize,
    },
    CreateVariant {
        code: usize,
        barcode: usize,
        size: usize,
    },
    PatchVariant {
        barcode: usize,
        size: usize,
    },
    DeleteVariant {
        barcode: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let code = 0..CODES.len();
    let word = 0..WORDS.len();
    let barcode = 0..BARCODES.len();
    prop_oneof![
        (code.clone(), word.clone()).prop_map(|(code, title)| Op::CreateProduct { code, title }),
        (code.clone(), word.clone()).prop_map(|(code, title)| Op::UpsertProduct { code, title }),
        (
            proptest::sample::subsequence(vec![0usize, 2, 3], 1..=3),
            word.clone()
        )
            .prop_map(|(codes, title)| Op::CreateProducts { codes, title }),
        (code.clone(), word.clone()).prop_map(|(code, title)| Op::PatchProduct { code, title }),
        code.clone().prop_map(|code| Op::DeleteProduct { code }),
        (code, barcode.clone(), word.clone()).prop_map(|(code, barcode, size)| Op::CreateVariant {
            code,
            barcode,
            size
        }),
        (barcode.clone(), word).prop_map(|(barcode, size)| Op::PatchVariant { barcode, size }),
        barcode.prop_map(|barcode| Op::DeleteVariant { barcode }),
    ]
}

/// The model: products by folded code, variants by barcode.
#[derive(Default, Debug)]
struct Model {
    products: BTreeMap<String, Product>,
    variants: BTreeMap<String, Variant>,
    /// Ids of records deleted in this case: a write to one of them is 404.
    gone_products: BTreeMap<String, String>,
    gone_variants: BTreeMap<String, String>,
}

impl Model {
    /// The id of the product with this folded code, live or deleted in this case.
    fn product_id(&self, key: &str) -> Option<String> {
        self.products
            .get(key)
            .map(|p| p.id.clone())
            .or_else(|| self.gone_products.get(key).cloned())
    }

    /// The id of the variant with this barcode, live or deleted in this case.
    fn variant_id(&self, barcode: &str) -> Option<String> {
        self.variants
            .get(barcode)
            .map(|v| v.id.clone())
            .or_else(|| self.gone_variants.get(barcode).cloned())
    }
}

/// Whether a problem's detail names the record `id` (a 409 names the key's holder).
fn names(answer: &Value, id: &str) -> bool {
    answer["detail"].as_str().unwrap_or_default().contains(id)
}

/// The id of the first record of a create's answer.
fn created_id(answer: &Value, resource: &str) -> String {
    answer["response"][resource][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("a created {resource} has an id: {answer}"))
        .to_string()
}

#[derive(Debug, Clone)]
struct Product {
    id: String,
    title: String,
}

#[derive(Debug, Clone)]
struct Variant {
    id: String,
    product: String,
    size: String,
}

fn fold(code: &str) -> String {
    code.to_lowercase()
}

/// The client side of a case: one brand of its own, written as its company's user.
struct Case<'a> {
    fx: &'a common::Fixture,
    client: reqwest::Client,
    brand: String,
    email: String,
    secret: String,
}

impl Case<'_> {
    async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.fx.base))
            .basic_auth(&self.email, Some(&self.secret));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response =
            common::Response::read(request.send().await.expect("the server answers")).await;
        let body = if response.body.is_empty() {
            Value::Null
        } else {
            response.json()
        };
        (response.status, body)
    }

    /// Applies one write to the server and the model; the statuses must agree.
    async fn apply(&self, model: &mut Model, op: &Op) -> Result<(), TestCaseError> {
        use reqwest::Method;
        match op {
            Op::CreateProduct { code, title } | Op::UpsertProduct { code, title } => {
                let upsert = matches!(op, Op::UpsertProduct { .. });
                let path = if upsert {
                    "/api/product?upsert=true"
                } else {
                    "/api/product"
                };
                let (code, title) = (CODES[*code], WORDS[*title]);
                let body = json!({"fk_brand": self.brand, "code": code, "title": title});
                let (status, answer) = self.send(Method::POST, path, Some(body)).await;
                match model.products.get_mut(&fold(code)) {
                    Some(existing) if upsert => {
                        prop_assert_eq!(status, 200, "{:?}: {}", op, answer);
                        prop_assert_eq!(
                            &answer["response"]["product"][0]["id"],
                            &json!(existing.id)
                        );
                        existing.title = title.to_string();
                    }
                    Some(existing) => {
                        prop_assert_eq!(status, 409, "{:?}: {}", op, answer);
                        prop_assert!(names(&answer, &existing.id), "{}", answer);
                    }
                    None => {
                        prop_assert_eq!(status, 201, "{:?}: {}", op, answer);
                        let id = created_id(&answer, "product");
                        model.products.insert(
                            fold(code),
                            Product {
                                id,
                                title: title.to_string(),
                            },
                        );
                    }
                }
            }
            Op::CreateProducts { codes, title } => {
                let title = WORDS[*title];
                let body: Vec<Value> = codes
                    .iter()
                    .map(|c| json!({"fk_brand": self.brand, "code": CODES[*c], "title": title}))
                    .collect();
                let (status, answer) = self
                    .send(Method::POST, "/api/product", Some(Value::Array(body)))
                    .await;
                let taken = codes
                    .iter()
                    .any(|c| model.products.contains_key(&fold(CODES[*c])));
                if taken {
                    prop_assert_eq!(status, 409, "{:?}: {}", op, answer);
                } else {
                    prop_assert_eq!(status, 201, "{:?}: {}", op, answer);
                    let written = answer["response"]["product"].as_array().unwrap();
                    prop_assert_eq!(written.len(), codes.len());
                    for (c, record) in codes.iter().zip(written) {
                        let id = record["id"].as_str().unwrap().to_string();
                        model.products.insert(
                            fold(CODES[*c]),
                            Product {
                                id,
                                title: title.to_string(),
                            },
                        );
                    }
                }
            }
            Op::PatchProduct { code, title } => {
                let key = fold(CODES[*code]);
                let Some(id) = model.product_id(&key) else {
                    return Ok(());
                };
                let title = WORDS[*title];
                let (status, answer) = self
                    .send(
                        Method::PATCH,
                        &format!("/api/product/{id}"),
                        Some(json!({"title": title})),
                    )
                    .await;
                match model.products.get_mut(&key) {
                    Some(product) => {
                        prop_assert_eq!(status, 200, "{:?}: {}", op, answer);
                        product.title = title.to_string();
                    }
                    None => prop_assert_eq!(status, 404, "{:?}: {}", op, answer),
                }
            }
            Op::DeleteProduct { code } => {
                let key = fold(CODES[*code]);
                let Some(id) = model.product_id(&key) else {
                    return Ok(());
                };
                let (status, answer) = self
                    .send(Method::DELETE, &format!("/api/product/{id}"), None)
                    .await;
                if !model.products.contains_key(&key) {
                    prop_assert_eq!(status, 404, "{:?}: {}", op, answer);
                } else if model.variants.values().any(|v| v.product == key) {
                    prop_assert_eq!(status, 409, "{:?}: {}", op, answer);
                    prop_assert!(
                        answer["detail"]
                            .as_str()
                            .unwrap_or_default()
                            .contains("variant (fk_product)"),
                        "{}",
                        answer
                    );
                } else {
                    prop_assert_eq!(status, 204, "{:?}: {}", op, answer);
                    model.products.remove(&key);
                    model.gone_products.insert(key, id);
                }
            }
            Op::CreateVariant {
                code,
                barcode,
                size,
            } => {
                let key = fold(CODES[*code]);
                let Some(product) = model.products.get(&key).map(|p| p.id.clone()) else {
                    return Ok(());
                };
                let (barcode, size) = (BARCODES[*barcode], WORDS[*size]);
                let body = json!({"fk_product": product, "barcode": barcode, "size": size});
                let (status, answer) = self.send(Method::POST, "/api/variant", Some(body)).await;
                match model.variants.get(barcode) {
                    Some(existing) => {
                        prop_assert_eq!(status, 409, "{:?}: {}", op, answer);
                        prop_assert!(names(&answer, &existing.id), "{}", answer);
                    }
                    None => {
                        prop_assert_eq!(status, 201, "{:?}: {}", op, answer);
                        let id = created_id(&answer, "variant");
                        model.variants.insert(
                            barcode.to_string(),
                            Variant {
                                id,
                                product: key,
                                size: size.to_string(),
                            },
                        );
                    }
                }
            }
            Op::PatchVariant { barcode, size } => {
                let barcode = BARCODES[*barcode];
                let Some(id) = model.variant_id(barcode) else {
                    return Ok(());
                };
                let size = WORDS[*size];
                let (status, answer) = self
                    .send(
                        Method::PATCH,
                        &format!("/api/variant/{id}"),
                        Some(json!({"size": size})),
                    )
                    .await;
                match model.variants.get_mut(barcode) {
                    Some(variant) => {
                        prop_assert_eq!(status, 200, "{:?}: {}", op, answer);
                        variant.size = size.to_string();
                    }
                    None => prop_assert_eq!(status, 404, "{:?}: {}", op, answer),
                }
            }
            Op::DeleteVariant { barcode } => {
                let barcode = BARCODES[*barcode];
                let Some(id) = model.variant_id(barcode) else {
                    return Ok(());
                };
                let (status, answer) = self
                    .send(Method::DELETE, &format!("/api/variant/{id}"), None)
                    .await;
                if model.variants.remove(barcode).is_some() {
                    prop_assert_eq!(status, 204, "{:?}: {}", op, answer);
                    model.gone_variants.insert(barcode.to_string(), id);
                } else {
                    prop_assert_eq!(status, 404, "{:?}: {}", op, answer);
                }
            }
        }
        Ok(())
    }

    /// Every read of the brand's records agrees with the model: the product and variant
    /// lists (ordered, so pages compare whole), their counts, and each record by id.
    async fn agrees(&self, model: &Model, after: &Op) -> Result<(), TestCaseError> {
        use reqwest::Method;
        let brand = &self.brand;
        let (status, list) = self
            .send(
                Method::GET,
                &format!(
                    "/api/product?fk_brand={brand}&order_by=id&fields=code,title&pageSize=100"
                ),
                None,
            )
            .await;
        prop_assert_eq!(status, 200);
        let mut seen: Vec<(String, String, String)> = list["response"]["product"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    fold(p["code"].as_str().unwrap()),
                    p["id"].as_str().unwrap().to_string(),
                    p["title"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        seen.sort();
        let expected: Vec<(String, String, String)> = model
            .products
            .iter()
            .map(|(code, p)| (code.clone(), p.id.clone(), p.title.clone()))
            .collect();
        prop_assert_eq!(&seen, &expected, "products after {:?}", after);
        prop_assert_eq!(
            list["response"]["recordsFound"].as_u64(),
            Some(expected.len() as u64)
        );
        let (_, count) = self
            .send(
                Method::GET,
                &format!("/api/product/count?fk_brand={brand}"),
                None,
            )
            .await;
        prop_assert_eq!(
            count["count"].as_u64(),
            Some(expected.len() as u64),
            "product count after {:?}",
            after
        );

        let (status, list) = self
            .send(Method::GET, &format!("/api/variant?variant_product.fk_brand={brand}&fields=barcode,size,fk_product&pageSize=100"), None)
            .await;
        prop_assert_eq!(status, 200);
        let mut seen: Vec<(String, String, String, String)> = list["response"]["variant"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| {
                (
                    v["barcode"].as_str().unwrap().to_string(),
                    v["id"].as_str().unwrap().to_string(),
                    v["fk_product"].as_str().unwrap_or_default().to_string(),
                    v["size"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        seen.sort();
        let expected: Vec<(String, String, String, String)> = model
            .variants
            .iter()
            .map(|(barcode, v)| {
                (
                    barcode.clone(),
                    v.id.clone(),
                    model.products[&v.product].id.clone(),
                    v.size.clone(),
                )
            })
            .collect();
        prop_assert_eq!(&seen, &expected, "variants after {:?}", after);
        let (_, count) = self
            .send(
                Method::GET,
                &format!("/api/variant/count?variant_product.fk_brand={brand}"),
                None,
            )
            .await;
        prop_assert_eq!(
            count["count"].as_u64(),
            Some(expected.len() as u64),
            "variant count after {:?}",
            after
        );

        for product in model.products.values() {
            let (status, one) = self
                .send(
                    Method::GET,
                    &format!("/api/product/{}?fields=title", product.id),
                    None,
                )
                .await;
            prop_assert_eq!(status, 200);
            prop_assert_eq!(
                &one["response"]["product"][0]["title"],
                &json!(product.title),
                "by id after {:?}",
                after
            );
        }
        for id in model
            .gone_products
            .values()
            .chain(model.gone_variants.values())
        {
            let resource = if model.gone_products.values().any(|p| p == id) {
                "product"
            } else {
                "variant"
            };
            let (status, _) = self
                .send(Method::GET, &format!("/api/{resource}/{id}"), None)
                .await;
            prop_assert_eq!(
                status,
                404,
                "a deleted {} read by id after {:?}",
                resource,
                after
            );
        }
        Ok(())
    }
}

static CASES: AtomicU64 = AtomicU64::new(0);

/// A company with a user and key of its own, as the admin sets one up.
async fn company_user(fx: &common::Fixture, tag: &str) -> (String, String, String) {
    let company = fx
        .post("/api/company", &json!({"name": tag, "code": tag}))
        .await;
    assert_eq!(
        company.status,
        201,
        "{}",
        String::from_utf8_lossy(&company.body)
    );
    let company = company.records("company")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let email = format!("{}@model.test", tag.to_lowercase());
    let user = fx
        .post(
            "/api/user",
            &json!({"email": email, "name": tag, "type": "company", "fk_company": company}),
        )
        .await;
    assert_eq!(user.status, 201, "{}", String::from_utf8_lossy(&user.body));
    let user = user.records("user")[0]["id"].as_str().unwrap().to_string();
    let key = fx
        .post(
            "/api/apiKey",
            &json!({"fk_user": user, "name": "model", "grants": ["*:*"]}),
        )
        .await;
    assert_eq!(key.status, 201, "{}", String::from_utf8_lossy(&key.body));
    let secret = key.records("apiKey")[0]["secret"]
        .as_str()
        .unwrap()
        .to_string();
    (company, email, secret)
}

fn run_model(db: common::Db) {
    let Some(fx) = common::shared(db, "write_model") else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tag = format!("MODEL{}", std::process::id());
    let (company, email, secret) = runtime.block_on(company_user(fx, &tag));
    let mut runner = TestRunner::new(Config {
        cases: 24,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&proptest::collection::vec(op(), 1..16), |ops| {
        runtime.block_on(async {
            // A brand of its own per case (and per shrink step): the model starts empty.
            let n = CASES.fetch_add(1, Ordering::Relaxed);
            let brand = fx
                .post("/api/brand", &json!({"fk_company": company, "name": format!("{tag} {n}"), "code": format!("{tag}-{n}")}))
                .await;
            prop_assert_eq!(brand.status, 201);
            let case = Case {
                fx,
                client: fx.client(),
                brand: brand.records("brand")[0]["id"].as_str().unwrap().to_string(),
                email: email.clone(),
                secret: secret.clone(),
            };
            let mut model = Model::default();
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
fn sqlite_writes_agree_with_the_model() {
    run_model(common::Db::Sqlite);
}

#[test]
fn postgres_writes_agree_with_the_model() {
    run_model(common::Db::Postgres);
}
