//! Writes of the catalogue through the generic write pipeline (docs/API.md, "Writes: master data and catalogue"): product,
//! variant, stock, price and image created (one object or an array), read back, changed,
//! upserted on their natural keys and deleted; derived fields (a variant's and a stock
//! record's brand shortcut) filled by the pipeline, so the records are in their owners'
//! scope; every problem of a body in one 422; keys taken (409 naming the holder); records
//! still referred to (409); and each demo user type refused what it may not write.

mod common;

use common::As;
use serde_json::{Value, json};

async fn call(
    fx: &common::Fixture,
    method: reqwest::Method,
    path: &str,
    who: As<'_>,
    body: Option<Value>,
) -> common::Response {
    common::send(fx, &fx.base, method, path, who, &[], body.as_ref()).await
}

const ADMIN: As<'static> = As::Demo("admin");

async fn post(fx: &common::Fixture, path: &str, who: As<'_>, body: Value) -> common::Response {
    call(fx, reqwest::Method::POST, path, who, Some(body)).await
}

async fn patch(fx: &common::Fixture, path: &str, who: As<'_>, body: Value) -> common::Response {
    call(fx, reqwest::Method::PATCH, path, who, Some(body)).await
}

async fn delete(fx: &common::Fixture, path: &str, who: As<'_>) -> common::Response {
    call(fx, reqwest::Method::DELETE, path, who, None).await
}

fn body_of(response: &common::Response) -> String {
    String::from_utf8_lossy(&response.body).into_owned()
}

/// The one record of a write answered with `status`.
fn written(response: &common::Response, status: u16, resource: &str) -> Value {
    assert_eq!(response.status, status, "{}", body_of(response));
    response.records(resource)[0].clone()
}

fn id_of(record: &Value) -> String {
    record["id"].as_str().expect("records have ids").to_string()
}

/// How many records of `resource` match a filter, as the admin sees them.
async fn count(fx: &common::Fixture, resource: &str, filter: &str) -> u64 {
    let answer = fx.get(&format!("/api/{resource}/count?{filter}")).await;
    assert_eq!(answer.status, 200, "{}", body_of(&answer));
    answer.json()["count"].as_u64().unwrap()
}

/// A company of its own with a brand, a warehouse, a host with a store, the brand in that
/// store, and a company user with a key: what a fresh deployment is set up with.
struct Setup {
    company: String,
    brand: String,
    warehouse: String,
    host: String,
    email: String,
    secret: String,
}

impl Setup {
    fn owner(&self) -> As<'_> {
        As::Key(&self.email, &self.secret)
    }
}

async fn set_up(fx: &common::Fixture, tag: &str) -> Setup {
    let code = |what: &str| format!("{tag}-{what}");
    let company = id_of(&written(
        &post(
            fx,
            "/api/company",
            ADMIN,
            json!({"name": tag, "code": code("CO")}),
        )
        .await,
        201,
        "company",
    ));
    let brand = id_of(&written(
        &post(
            fx,
            "/api/brand",
            ADMIN,
            json!({"fk_company": company, "name": tag, "code": code("BR")}),
        )
        .await,
        201,
        "brand",
    ));
    let warehouse = id_of(&written(
        &post(
            fx,
            "/api/warehouse",
            ADMIN,
            json!({"fk_company": company, "name": tag, "code": code("WH")}),
        )
        .await,
        201,
        "warehouse",
    ));
    let host = id_of(&written(
        &post(
            fx,
            "/api/host",
            ADMIN,
            json!({"name": tag, "code": code("HO")}),
        )
        .await,
        201,
        "host",
    ));
    let store = id_of(&written(
        &post(
            fx,
            "/api/store",
            ADMIN,
            json!({"fk_host": host, "name": tag, "code": "WEB", "currency": "EUR"}),
        )
        .await,
        201,
        "store",
    ));
    written(
        &post(
            fx,
            "/api/brandStore",
            ADMIN,
            json!({"fk_brand": brand, "fk_store": store, "fk_warehouse": warehouse}),
        )
        .await,
        201,
        "brandStore",
    );
    let email = format!("{}@catalogue.test", tag.to_lowercase());
    let user = id_of(&written(
        &post(
            fx,
            "/api/user",
            ADMIN,
            json!({"name": tag, "email": email, "type": "company", "fk_company": company}),
        )
        .await,
        201,
        "user",
    ));
    let key = written(
        &post(
            fx,
            "/api/apiKey",
            ADMIN,
            json!({"fk_user": user, "name": "owner", "grants": ["*:*"]}),
        )
        .await,
        201,
        "apiKey",
    );
    Setup {
        company,
        brand,
        warehouse,
        host,
        email,
        secret: key["secret"]
            .as_str()
            .expect("a new key shows its secret")
            .to_string(),
    }
}

/// The fields named by a 422's problems, in order.
fn problem_fields(body: &Value) -> Vec<String> {
    body["errors"]
        .as_array()
        .unwrap_or_else(|| panic!("no errors in {body}"))
        .iter()
        .map(|e| e["field"].as_str().unwrap().to_string())
        .collect()
}

const UNKNOWN: &str = "0123456789ABCDEF0123456789ABCDEF";

on_both_backends! { "catalogue_writes";

async fn the_catalogue_is_created_read_changed_upserted_and_deleted(fx) {
    let s = set_up(fx, "CRUD").await;
    let owner = s.owner();

    // Created by the company's own user: the new records are in its scope.
    let product = written(&post(fx, "/api/product", owner, json!({"fk_brand": s.brand, "code": "P1", "title": "Shirt", "category": "Tops"})).await, 201, "product");
    let product_id = id_of(&product);
    assert_eq!(product["createdDate"].as_str().map(str::len), Some(19), "{product}");
    let variant_answer = post(fx, "/api/variant", owner, json!({"fk_product": product_id, "barcode": "CRUD-0001", "size": "M", "rrp": 20.5, "detail": {"price": 18}})).await;
    let variant = written(&variant_answer, 201, "variant");
    let variant_id = id_of(&variant);
    assert_eq!(variant_answer.header("location"), Some(format!("/api/variant/{variant_id}")));
    assert_eq!(variant["detail"]["price"], 18.0);
    // The variant's brand shortcut was derived: the company user sees it through its brand.
    let seen = call(fx, reqwest::Method::GET, &format!("/api/variant/{variant_id}"), owner, None).await;
    assert_eq!(seen.records("variant")[0]["barcode"], "CRUD-0001", "{}", body_of(&seen));
    let stock = written(&post(fx, "/api/stock", owner, json!({"fk_warehouse": s.warehouse, "fk_variant": variant_id, "inStock": 5})).await, 201, "stock");
    let stock_id = id_of(&stock);
    assert_eq!(stock["lastUpdate"].as_str().map(str::len), Some(19), "the server stamps it: {stock}");
    let stocked = call(fx, reqwest::Method::GET, &format!("/api/stock/count?fk_variant={variant_id}"), owner, None).await;
    assert_eq!(stocked.json()["count"], 1, "stock is in the owner's scope through its derived brand");
    let price = written(&post(fx, "/api/price", owner, json!({"fk_variant": variant_id, "fk_host": s.host, "price": 19.99, "startDate": "2026-01-01T00:00:00"})).await, 201, "price");
    let price_id = id_of(&price);
    assert_eq!(price["startDate"], "2026-01-01T00:00:00");
    let image = written(&post(fx, "/api/image", owner, json!({"fk_product": product_id, "fk_variant": variant_id, "url": "https://img.test/crud.jpg", "position": 1})).await, 201, "image");
    let image_id = id_of(&image);

    // Read back and changed.
    assert_eq!(fx.get(&format!("/api/product/{product_id}")).await.records("product")[0]["title"], "Shirt");
    for (resource, id, change, field, expected) in [
        ("product", &product_id, json!({"title": "Shirt 2"}), "title", json!("Shirt 2")),
        ("variant", &variant_id, json!({"size": "L"}), "size", json!("L")),
        ("stock", &stock_id, json!({"inStock": 7}), "inStock", json!(7)),
        ("price", &price_id, json!({"price": 15.5}), "price", json!(15.5)),
        ("image", &image_id, json!({"position": 2}), "position", json!(2)),
    ] {
        let changed = patch(fx, &format!("/api/{resource}/{id}"), owner, change).await;
        assert_eq!(written(&changed, 200, resource)[field], expected, "{resource}");
        assert_eq!(fx.get(&format!("/api/{resource}/{id}")).await.records(resource)[0][field], expected, "{resource} read after the write");
    }
    assert_eq!(count(fx, "product", "title=shirt%202").await, 1, "the folded copy follows");
    // What an update may not change, and a key part a link fixes.
    let fixed = patch(fx, &format!("/api/variant/{variant_id}"), owner, json!({"fk_product": product_id})).await;
    assert_eq!(problem_fields(&fixed.assert_problem(422, "validation_failed")), ["fk_product"]);

    // Upserts on the natural keys: the same record changed (200), never a second one.
    for (resource, body, id, field, expected) in [
        ("product", json!({"fk_brand": s.brand, "code": "p1", "title": "Shirt 3"}), &product_id, "title", json!("Shirt 3")),
        ("variant", json!({"fk_product": product_id, "barcode": "crud-0001", "colour": "Red"}), &variant_id, "colour", json!("Red")),
        ("stock", json!({"fk_warehouse": s.warehouse, "fk_variant": variant_id, "inStock": 9}), &stock_id, "inStock", json!(9)),
        ("price", json!({"fk_variant": variant_id, "fk_host": s.host, "startDate": "2026-01-01T00:00:00", "price": 17}), &price_id, "price", json!(17.0)),
    ] {
        let upserted = post(fx, &format!("/api/{resource}?upsert=true"), owner, body.clone()).await;
        let record = written(&upserted, 200, resource);
        assert_eq!((id_of(&record), &record[field]), (id.clone(), &expected), "{resource}");
        assert!(upserted.header("location").is_none());
        // Without upsert the key is taken: 409 naming the record that holds it.
        let taken = post(fx, &format!("/api/{resource}"), owner, body).await;
        let problem = taken.assert_problem(409, "conflict");
        assert!(problem["detail"].as_str().unwrap().contains(id.as_str()), "{resource}: {problem}");
    }
    // A barcode is unique within the brand, whichever product has it.
    let other = id_of(&written(&post(fx, "/api/product", owner, json!({"fk_brand": s.brand, "code": "P2", "title": "Other"})).await, 201, "product"));
    let clash = post(fx, "/api/variant", owner, json!({"fk_product": other, "barcode": "CRUD-0001"})).await;
    let problem = clash.assert_problem(409, "conflict");
    let detail = problem["detail"].as_str().unwrap();
    assert!(detail.contains(&variant_id) && detail.contains("brand and barcode"), "{detail}");
    // Images have no natural key: an upsert creates.
    let again = post(fx, "/api/image?upsert=true", owner, json!({"fk_product": product_id, "url": "https://img.test/crud.jpg"})).await;
    let second_image = id_of(&written(&again, 201, "image"));

    // Deletes: refused while others refer to a record, then in order.
    let refused = delete(fx, &format!("/api/product/{product_id}"), owner).await;
    let detail = refused.assert_problem(409, "conflict")["detail"].as_str().unwrap().to_string();
    assert!(detail.contains("variant (fk_product)") && detail.contains("image (fk_product)"), "{detail}");
    let refused = delete(fx, &format!("/api/variant/{variant_id}"), owner).await;
    let detail = refused.assert_problem(409, "conflict")["detail"].as_str().unwrap().to_string();
    for referrer in ["stock (fk_variant)", "price (fk_variant)", "image (fk_variant)"] {
        assert!(detail.contains(referrer), "{detail}");
    }
    for (resource, id) in [("image", &image_id), ("image", &second_image), ("price", &price_id), ("stock", &stock_id), ("variant", &variant_id), ("product", &product_id), ("product", &other)] {
        let deleted = delete(fx, &format!("/api/{resource}/{id}"), owner).await;
        assert_eq!(deleted.status, 204, "{resource}: {}", body_of(&deleted));
        fx.get(&format!("/api/{resource}/{id}")).await.assert_problem(404, "not_found");
    }
    let _ = &s.company;
}

async fn one_422_lists_every_problem_of_a_catalogue_body(fx) {
    let s = set_up(fx, "BAD").await;
    let product = id_of(&written(&post(fx, "/api/product", ADMIN, json!({"fk_brand": s.brand, "code": "P", "title": "T"})).await, 201, "product"));
    let variant = id_of(&written(&post(fx, "/api/variant", ADMIN, json!({"fk_product": product, "barcode": "BAD-1"})).await, 201, "variant"));
    let stamp = "2026-01-01T00:00:00";
    // Each body: a wrong type, a missing required field, a read-only field, an unknown link.
    for (resource, body, expected) in [
        ("product", json!({"title": 5, "createdDate": stamp, "fk_brand": UNKNOWN}), ["code", "createdDate", "fk_brand", "title"]),
        ("variant", json!({"sequence": "first", "id": UNKNOWN, "fk_product": UNKNOWN}), ["barcode", "fk_product", "id", "sequence"]),
        ("stock", json!({"demand": "many", "lastUpdate": stamp, "fk_warehouse": UNKNOWN, "fk_variant": variant}), ["demand", "fk_warehouse", "inStock", "lastUpdate"]),
        ("price", json!({"price": "cheap", "fk_file": UNKNOWN, "fk_variant": UNKNOWN, "fk_host": s.host}), ["fk_file", "fk_variant", "price", "startDate"]),
        ("image", json!({"position": "top", "fk_file": UNKNOWN, "fk_product": UNKNOWN}), ["fk_file", "fk_product", "position", "url"]),
    ] {
        let refused = post(fx, &format!("/api/{resource}"), ADMIN, body).await;
        let problem = refused.assert_problem(422, "validation_failed");
        assert_eq!(problem_fields(&problem), expected, "{resource}: {problem}");
    }
    // Values outside their domain: a URL no client can fetch, a variant of another product.
    let other = id_of(&written(&post(fx, "/api/product", ADMIN, json!({"fk_brand": s.brand, "code": "Q", "title": "T"})).await, 201, "product"));
    let refused = post(fx, "/api/image", ADMIN, json!({"fk_product": other, "fk_variant": variant, "url": "ftp://img.test/a.jpg"})).await;
    let problem = refused.assert_problem(422, "validation_failed");
    assert_eq!(problem_fields(&problem), ["fk_variant", "url"], "{problem}");
    assert_eq!(count(fx, "image", &format!("fk_product={other}")).await, 0);
}

async fn an_array_of_catalogue_records_is_written_whole_or_not_at_all(fx) {
    let s = set_up(fx, "ARR").await;
    let product = id_of(&written(&post(fx, "/api/product", ADMIN, json!({"fk_brand": s.brand, "code": "P", "title": "T"})).await, 201, "product"));
    let pair = post(fx, "/api/variant", ADMIN, json!([{"fk_product": product, "barcode": "ARR-1"}, {"fk_product": product, "barcode": "ARR-2"}])).await;
    assert_eq!(pair.status, 201, "{}", body_of(&pair));
    assert!(pair.header("location").is_none(), "an array write has no single location");
    let ids = fx.get(&format!("/api/variant?fk_product={product}&fields=id&order_by=barcode")).await.ids("variant");
    assert_eq!(ids.len(), 2);
    for (resource, items, filter) in [
        ("product", json!([{"fk_brand": s.brand, "code": "A1", "title": "T"}, {"fk_brand": s.brand, "title": "T"}, {"fk_brand": s.brand, "code": "A3", "title": "T"}]), format!("fk_brand={}&code=A1&code=A3", s.brand)),
        ("variant", json!([{"fk_product": product, "barcode": "ARR-3"}, {"fk_product": product, "barcode": 3}, {"fk_product": product, "barcode": "ARR-4"}]), format!("fk_product={product}&barcode=ARR-3&barcode=ARR-4")),
        ("stock", json!([{"fk_warehouse": s.warehouse, "fk_variant": ids[0], "inStock": 1}, {"fk_warehouse": s.warehouse, "fk_variant": UNKNOWN, "inStock": 1}, {"fk_warehouse": s.warehouse, "fk_variant": ids[1], "inStock": 1}]), format!("fk_warehouse={}", s.warehouse)),
        ("price", json!([{"fk_variant": ids[0], "fk_host": s.host, "price": 1, "startDate": "2026-02-01T00:00:00"}, {"fk_variant": ids[1], "fk_host": s.host, "price": 1}, {"fk_variant": ids[1], "fk_host": s.host, "price": 1, "startDate": "2026-02-01T00:00:00"}]), format!("fk_host={}", s.host)),
        ("image", json!([{"fk_product": product, "url": "https://img.test/1.jpg"}, {"fk_product": product, "url": "mailto:x"}, {"fk_product": product, "url": "https://img.test/3.jpg"}]), format!("fk_product={product}")),
    ] {
        let refused = post(fx, &format!("/api/{resource}"), ADMIN, items.clone()).await;
        let problem = refused.assert_problem(422, "validation_failed");
        let errors = problem["errors"].as_array().unwrap();
        assert!(!errors.is_empty() && errors.iter().all(|e| e["index"] == 1), "{resource}: {problem}");
        assert_eq!(count(fx, resource, &filter).await, 0, "{resource}: nothing written");
    }
    // The same array twice over within one write repeats a natural key: refused with both.
    let repeated = post(fx, "/api/stock", ADMIN, json!([{"fk_warehouse": s.warehouse, "fk_variant": ids[0], "inStock": 1}, {"fk_warehouse": s.warehouse, "fk_variant": ids[0], "inStock": 2}])).await;
    let problem = repeated.assert_problem(422, "validation_failed");
    assert_eq!(problem["errors"][0]["index"], 1, "{problem}");
    let good = post(fx, "/api/stock", ADMIN, json!([{"fk_warehouse": s.warehouse, "fk_variant": ids[0], "inStock": 1}, {"fk_warehouse": s.warehouse, "fk_variant": ids[1], "inStock": 2}])).await;
    assert_eq!(good.records("stock").len(), 2, "{}", body_of(&good));
    assert_eq!(count(fx, "stock", &format!("fk_warehouse={}", s.warehouse)).await, 2);
}

async fn a_taken_key_names_its_holder_only_to_callers_who_see_it(fx) {
    let tag = format!("KT{}", common::unique_number());
    let mine = set_up(fx, &format!("{tag}A")).await;
    let theirs = set_up(fx, &format!("{tag}B")).await;
    let their_code = format!("{tag}B-BR");
    for path in ["/api/brand", "/api/brand?upsert=true"] {
        let taken = post(fx, path, mine.owner(), json!({"fk_company": mine.company, "name": "Copycat", "code": their_code})).await;
        let body = taken.assert_problem(409, "conflict");
        let text = body.to_string();
        assert!(!text.contains(&theirs.brand), "{path}: another company's brand is not named: {text}");
        assert!(text.contains("code"), "{path}: the key is named: {text}");
    }
    assert_eq!(count(fx, "brand", &format!("code={their_code}")).await, 1, "nothing written");
    let theirs_unchanged = fx.get(&format!("/api/brand/{}?fields=name", theirs.brand)).await.records("brand")[0]["name"].clone();
    assert_eq!(theirs_unchanged, json!(format!("{tag}B")));
    // A user whose email another tenant's user has.
    let taken = post(fx, "/api/user", mine.owner(), json!({"name": "Copycat", "email": theirs.email, "type": "company", "fk_company": mine.company})).await;
    let text = taken.assert_problem(409, "conflict").to_string();
    let their_user = fx.get(&format!("/api/user?email={}&fields=id", theirs.email)).await.ids("user")[0].clone();
    assert!(!text.contains(&their_user), "another tenant's user is not named: {text}");
    // The caller's own record is named.
    let own_code = format!("{tag}A-BR");
    let taken = post(fx, "/api/brand", mine.owner(), json!({"fk_company": mine.company, "name": "Again", "code": own_code})).await;
    let text = taken.assert_problem(409, "conflict").to_string();
    assert!(text.contains(&mine.brand), "the caller's own brand is named: {text}");
}

async fn writing_a_resource_the_user_type_never_writes_is_forbidden(fx) {
    let tag = format!("NW{}", common::unique_number());
    let s = set_up(fx, &tag).await;
    for (who, resource, body) in [
        (s.owner(), "host", json!({"name": "Mine now", "code": format!("{tag}-H2")})),
        (s.owner(), "store", json!({"fk_host": s.host, "name": "Mine now", "code": "X", "currency": "EUR"})),
        (As::Demo("warehouse"), "product", json!({"fk_brand": s.brand, "code": "X", "title": "X"})),
        (As::Demo("warehouse"), "company", json!({"name": "X", "code": format!("{tag}-C2")})),
    ] {
        let refused = post(fx, &format!("/api/{resource}"), who, body).await;
        let problem = refused.assert_problem(403, "forbidden");
        let detail = problem["detail"].as_str().unwrap();
        assert!(!detail.contains("The write was refused"), "{resource}: {detail}");
        assert!(detail.contains(resource), "{resource}: the sentence names what it may not write: {detail}");
    }
    assert_eq!(count(fx, "host", &format!("code={tag}-H2")).await, 0);
}

async fn each_user_type_writes_only_its_own_catalogue(fx) {
    // The records of a company no demo user belongs to: nobody but the admin may write them.
    let s = set_up(fx, "OWN").await;
    let product = id_of(&written(&post(fx, "/api/product", ADMIN, json!({"fk_brand": s.brand, "code": "P", "title": "Guarded"})).await, 201, "product"));
    let variant = id_of(&written(&post(fx, "/api/variant", ADMIN, json!({"fk_product": product, "barcode": "OWN-1"})).await, 201, "variant"));
    let stock = id_of(&written(&post(fx, "/api/stock", ADMIN, json!({"fk_warehouse": s.warehouse, "fk_variant": variant, "inStock": 3})).await, 201, "stock"));
    let price = id_of(&written(&post(fx, "/api/price", ADMIN, json!({"fk_variant": variant, "fk_host": s.host, "price": 3, "startDate": "2026-03-01T00:00:00"})).await, 201, "price"));
    let image = id_of(&written(&post(fx, "/api/image", ADMIN, json!({"fk_product": product, "url": "https://img.test/own.jpg"})).await, 201, "image"));
    let records = [("product", &product), ("variant", &variant), ("stock", &stock), ("price", &price), ("image", &image)];
    for user_type in ["sponsor", "company", "host", "warehouse"] {
        let who = As::Demo(user_type);
        // Each with a filter that finds what it would write (other tests write meanwhile).
        let creates = [
            ("product", json!({"fk_brand": s.brand, "code": format!("X-{user_type}"), "title": "X"}), format!("fk_brand={}", s.brand)),
            ("variant", json!({"fk_product": product, "barcode": format!("X-{user_type}")}), format!("fk_product={product}")),
            ("stock", json!({"fk_warehouse": s.warehouse, "fk_variant": variant, "inStock": 1}), format!("fk_warehouse={}", s.warehouse)),
            ("price", json!({"fk_variant": variant, "fk_host": s.host, "price": 1, "startDate": "2026-04-01T00:00:00"}), format!("fk_host={}", s.host)),
            ("image", json!({"fk_product": product, "url": format!("https://img.test/{user_type}.jpg")}), format!("fk_product={product}")),
        ];
        for (resource, body, filter) in creates {
            let before = count(fx, resource, &filter).await;
            for path in [format!("/api/{resource}"), format!("/api/{resource}?upsert=true")] {
                let refused = post(fx, &path, who, body.clone()).await;
                assert!(matches!(refused.status, 403 | 404 | 422), "{user_type} POST {path}: {} {}", refused.status, body_of(&refused));
                assert_eq!(refused.header("content-type").as_deref(), Some("application/problem+json"));
            }
            assert_eq!(count(fx, resource, &filter).await, before, "{user_type} {resource}: nothing written");
        }
        for (resource, id) in records {
            let path = format!("/api/{resource}/{id}");
            let before = fx.get(&path).await.body;
            let change = match resource {
                "stock" => json!({"inStock": 99}),
                "price" => json!({"price": 99}),
                "image" => json!({"position": 99}),
                _ => json!({"code": "TAKEN"}),
            };
            let patched = patch(fx, &path, who, change).await;
            assert!(matches!(patched.status, 403 | 404), "{user_type} PATCH {resource}: {} {}", patched.status, body_of(&patched));
            let deleted = delete(fx, &path, who).await;
            assert!(matches!(deleted.status, 403 | 404), "{user_type} DELETE {resource}: {} {}", deleted.status, body_of(&deleted));
            assert_eq!(fx.get(&path).await.body, before, "{user_type} {resource}: unchanged");
        }
    }
    // The owners: a company user writes its own catalogue (the setup's user); a warehouse
    // user the stock of its warehouse, and no other resource even there.
    let owner = s.owner();
    let changed = patch(fx, &format!("/api/stock/{stock}"), owner, json!({"inStock": 4})).await;
    assert_eq!(written(&changed, 200, "stock")["inStock"], 4);
    let warehouse_stock = call(fx, reqwest::Method::GET, "/api/stock?fields=id,inStock&pageSize=1", As::Demo("warehouse"), None).await.records("stock")[0].clone();
    let own_stock = id_of(&warehouse_stock);
    let changed = patch(fx, &format!("/api/stock/{own_stock}"), As::Demo("warehouse"), json!({"supply": 12})).await;
    assert_eq!(written(&changed, 200, "stock")["supply"], 12);
    assert_eq!(changed.records("stock")[0]["inStock"], warehouse_stock["inStock"]);
    let own_variant = fx.get(&format!("/api/stock/{own_stock}?fields=fk_variant")).await.records("stock")[0]["fk_variant"].as_str().unwrap().to_string();
    let refused = patch(fx, &format!("/api/variant/{own_variant}"), As::Demo("warehouse"), json!({"colour": "Grey"})).await;
    assert_eq!(refused.status, 403, "{}", body_of(&refused));
    // A company user may not hang its stock on another company's warehouse, nor write a
    // product into a brand it does not own, even one it sees.
    let refused = post(fx, "/api/stock", owner, json!({"fk_warehouse": UNKNOWN, "fk_variant": variant, "inStock": 1})).await;
    assert_eq!(problem_fields(&refused.assert_problem(422, "validation_failed")), ["fk_warehouse"]);
    let _ = &s.company;
}

}
