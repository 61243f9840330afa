//! Concurrent writers (docs/API.md, "Writes: concurrency and idempotency"): `updatedDate` moves with every
//! write (JSON and files), `ETag`s and `If-Match` (412 when the record changed; of many
//! writers holding one ETag exactly one wins), `Idempotency-Key` replays, concurrent upserts
//! of one natural key, and a file applied while a PATCH changes the same record.

mod common;

use common::unique_number as unique;
use common::{BOUNDARY, Part, multipart, row, xlsx};
use serde_json::{Value, json};

/// A new 13-digit barcode that no demo variant has.
fn new_barcode() -> String {
    format!("28{:011}", unique() % 100_000_000_000)
}

/// A request as a demo user of `user_type` with extra headers and an optional JSON body.
async fn call(
    fx: &common::Fixture,
    method: reqwest::Method,
    path: &str,
    user_type: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> common::Response {
    common::send(
        fx,
        &fx.base,
        method,
        path,
        common::As::Demo(user_type),
        headers,
        body,
    )
    .await
}

fn text(value: &Value) -> String {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not text: {value}"))
        .to_string()
}

fn body(response: &common::Response) -> String {
    String::from_utf8_lossy(&response.body).to_string()
}

/// Creates a company as the admin; its record and ETag.
async fn new_company(fx: &common::Fixture) -> (Value, String) {
    let code = format!("CC{}", unique());
    let response = call(
        fx,
        reqwest::Method::POST,
        "/api/company",
        "admin",
        &[],
        Some(&json!({"name": format!("Concurrent {code}"), "code": code})),
    )
    .await;
    assert_eq!(response.status, 201, "{}", body(&response));
    let etag = response
        .header("etag")
        .expect("a created record has an ETag");
    (response.records("company")[0].clone(), etag)
}

/// Sets a record's `updatedDate` to a long-gone moment behind the API's back, so that a
/// later write is seen to move it without waiting for the clock.
async fn age(fx: &common::Fixture, table: &'static str, id: &str) {
    let store = fx.store.clone();
    let id = id.to_string();
    fx.on_server(async move {
        use sea_query::{Alias, Expr, ExprTrait, Query};
        let update = Query::update()
            .table(Alias::new(table))
            .value(Alias::new("updated_date"), "2001-01-01T00:00:00")
            .and_where(Expr::col(Alias::new("id")).eq(id))
            .to_owned();
        let mut tx = store.begin().await.expect("a transaction");
        assert_eq!(tx.execute(table, &update).await.expect("the update"), 1);
        tx.commit().await.expect("the commit");
    })
    .await;
}

/// A brand of the demo company user.
async fn own_brand(fx: &common::Fixture) -> String {
    let brands = call(
        fx,
        reqwest::Method::GET,
        "/api/brand?pageSize=1&fields=id",
        "company",
        &[],
        None,
    )
    .await
    .records("brand");
    text(&brands[0]["id"])
}

/// Uploads a product file for `brand` as the company user and waits until it is processed.
async fn upload_products(fx: &common::Fixture, brand: &str, rows: &[Vec<String>]) -> Value {
    let part = format!("product,{brand}");
    let bytes = xlsx(rows);
    let parts: [Part<'_>; 1] = [(part.as_str(), Some("products.xlsx"), bytes.as_slice())];
    let credential = fx.credential("company");
    let response = fx
        .client()
        .post(format!("{}/api/file?wait=60", fx.base))
        .header(
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .basic_auth(&credential.email, Some(&credential.secret))
        .body(multipart(&parts))
        .send()
        .await
        .expect("the server answers");
    let response = common::Response::read(response).await;
    assert_eq!(response.status, 201, "{}", body(&response));
    let file = response.records("file")[0].clone();
    assert_eq!(file["status"], "processed", "{file}");
    file
}

/// The product of a brand with this code, as the admin sees it, with its ETag.
async fn product(fx: &common::Fixture, code: &str) -> (Value, String) {
    let found = fx
        .get(&format!("/api/product?code={code}&fields=id"))
        .await
        .records("product");
    assert_eq!(found.len(), 1, "{code}: {found:?}");
    let id = text(&found[0]["id"]);
    let response = fx.get(&format!("/api/product/{id}")).await;
    assert_eq!(response.status, 200, "{}", body(&response));
    let etag = response.header("etag").expect("a by-id read has an ETag");
    (response.records("product")[0].clone(), etag)
}

/// A POST of a JSON body as the demo admin to `base`, with an optional idempotency key.
async fn post_at(
    client: &reqwest::Client,
    base: &str,
    admin: &brandhub_demo::DemoCredential,
    path: &str,
    key: Option<&str>,
    body: &Value,
) -> common::Response {
    let mut request = client
        .post(format!("{base}{path}"))
        .basic_auth(&admin.email, Some(&admin.secret))
        .json(body);
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    common::Response::read(request.send().await.expect("the server answers")).await
}

on_both_backends! { "concurrency";

async fn updated_date_is_set_on_create_and_moved_by_a_patch(fx) {
    let (company, etag) = new_company(fx).await;
    let id = text(&company["id"]);
    let created = text(&company["updatedDate"]);
    assert_eq!(created.len(), 19, "{company}");
    assert_eq!(created, text(&company["createdDate"]), "a new record was last written when created");
    age(fx, "company", &id).await;
    let read = fx.get(&format!("/api/company/{id}")).await;
    assert_eq!(read.records("company")[0]["updatedDate"], "2001-01-01T00:00:00");
    assert_eq!(read.header("etag").as_deref(), Some(etag.as_str()), "the version moves with writes through brandhub only");

    let patched = call(fx, reqwest::Method::PATCH, &format!("/api/company/{id}"), "admin", &[], Some(&json!({"name": "Renamed"}))).await;
    assert_eq!(patched.status, 200, "{}", body(&patched));
    let record = &patched.records("company")[0];
    assert!(text(&record["updatedDate"]) >= created, "{record}");
    let new_etag = patched.header("etag").unwrap();
    assert_ne!(new_etag, etag, "a write changes the ETag");
    let reread = fx.get(&format!("/api/company/{id}")).await;
    assert_eq!(reread.header("etag"), Some(new_etag.clone()), "a PATCH answers the version it wrote");
    let again = call(fx, reqwest::Method::PATCH, &format!("/api/company/{id}"), "admin", &[("if-match", new_etag.as_str())], Some(&json!({"name": "Renamed again"}))).await;
    assert_eq!(again.status, 200, "{}", body(&again));
    let stale = call(fx, reqwest::Method::PATCH, &format!("/api/company/{id}"), "admin", &[("if-match", new_etag.as_str())], Some(&json!({"name": "Lost"}))).await;
    stale.assert_problem(412, "precondition_failed");
    // updatedDate is a timestamp like any other: filtered and sorted.
    let day = &text(&record["updatedDate"])[..10];
    let since = fx.get(&format!("/api/company?id={id}&updatedDate={day}&order_by=<updatedDate")).await;
    assert_eq!(since.records("company").len(), 1, "{}", body(&since));
    let old = fx.get(&format!("/api/company/count?id={id}&updatedDate=2001-01-01")).await;
    assert_eq!(old.json()["count"], 0, "{}", body(&old));
    // And read-only.
    let refused = call(fx, reqwest::Method::PATCH, &format!("/api/company/{id}"), "admin", &[], Some(&json!({"updatedDate": "2030-01-01T00:00:00"}))).await;
    refused.assert_problem(422, "validation_failed");
}

async fn a_product_file_moves_updated_date_and_the_etag_of_what_it_changes_only(fx) {
    let brand = own_brand(fx).await;
    let code = format!("UD{}", unique());
    let (a, b) = (format!("{code}-A"), format!("{code}-B"));
    let (ba, bb) = (new_barcode(), new_barcode());
    upload_products(fx, &brand, &[
        row(&["Product Code", "Title", "Barcode"]),
        row(&[&a, "Plain Mug", &ba]),
        row(&[&b, "Plain Bowl", &bb]),
    ]).await;
    let (first_a, _) = product(fx, &a).await;
    let (first_b, _) = product(fx, &b).await;
    assert_eq!(text(&first_a["updatedDate"]).len(), 19);
    age(fx, "product", &text(&first_a["id"])).await;
    age(fx, "product", &text(&first_b["id"])).await;
    let (_, etag_a) = product(fx, &a).await;
    let (_, etag_b) = product(fx, &b).await;

    upload_products(fx, &brand, &[
        row(&["Product Code", "Title", "Barcode"]),
        row(&[&a, "Plain Mug", &ba]),
        row(&[&b, "Glazed Bowl", &bb]),
    ]).await;
    let (then_a, then_etag_a) = product(fx, &a).await;
    let (then_b, then_etag_b) = product(fx, &b).await;
    assert_eq!(then_a["updatedDate"], "2001-01-01T00:00:00", "an unchanged product is not written");
    assert_eq!(then_etag_a, etag_a);
    assert_eq!(then_b["title"], "Glazed Bowl");
    assert!(text(&then_b["updatedDate"]).as_str() > "2001-01-01T00:00:00", "{then_b}");
    assert_ne!(then_etag_b, etag_b, "a file's write changes the ETag");
}

async fn if_match_guards_patch_and_delete(fx) {
    let (company, etag) = new_company(fx).await;
    let id = text(&company["id"]);
    let path = format!("/api/company/{id}");
    let read = fx.get(&path).await;
    assert_eq!(read.header("etag").as_deref(), Some(etag.as_str()), "the create's ETag is the record's");

    let first = call(fx, reqwest::Method::PATCH, &path, "admin", &[("if-match", &etag)], Some(&json!({"name": "First"}))).await;
    assert_eq!(first.status, 200, "{}", body(&first));
    let newer = first.header("etag").unwrap();
    assert_ne!(newer, etag);
    assert_eq!(fx.get(&path).await.header("etag").as_deref(), Some(newer.as_str()));

    // The old ETag no longer matches: 412, nothing written.
    let stale = call(fx, reqwest::Method::PATCH, &path, "admin", &[("if-match", &etag)], Some(&json!({"name": "Second"}))).await;
    let problem = stale.assert_problem(412, "precondition_failed");
    assert!(problem["detail"].as_str().unwrap().contains(&newer), "{problem}");
    assert_eq!(fx.get(&path).await.records("company")[0]["name"], "First");
    // A list naming the current one matches; so does *.
    let listed = format!("\"999999\", {newer}");
    let second = call(fx, reqwest::Method::PATCH, &path, "admin", &[("if-match", &listed)], Some(&json!({"name": "Second"}))).await;
    assert_eq!(second.status, 200, "{}", body(&second));
    let star = call(fx, reqwest::Method::PATCH, &path, "admin", &[("if-match", "*")], Some(&json!({"name": "Third"}))).await;
    assert_eq!(star.status, 200, "{}", body(&star));
    // A weak tag never matches; a malformed one is 400.
    let weak = format!("W/{}", star.header("etag").unwrap());
    call(fx, reqwest::Method::PATCH, &path, "admin", &[("if-match", &weak)], Some(&json!({"name": "Weak"}))).await.assert_problem(412, "precondition_failed");
    call(fx, reqwest::Method::PATCH, &path, "admin", &[("if-match", "3")], Some(&json!({"name": "Bad"}))).await.assert_problem(400, "invalid_parameter");

    // DELETE: the stale ETag is 412 and the record stays; the current one deletes it.
    call(fx, reqwest::Method::DELETE, &path, "admin", &[("if-match", &newer)], None).await.assert_problem(412, "precondition_failed");
    assert_eq!(fx.get(&path).await.status, 200);
    let current = fx.get(&path).await.header("etag").unwrap();
    let deleted = call(fx, reqwest::Method::DELETE, &path, "admin", &[("if-match", &current)], None).await;
    assert_eq!(deleted.status, 204, "{}", body(&deleted));
    assert_eq!(fx.get(&path).await.status, 404);
}

async fn if_match_guards_users_and_keys_too(fx) {
    // A user of the test's own.
    let email = format!("etag{}@concurrency.test", unique());
    let created = call(fx, reqwest::Method::POST, "/api/user", "admin", &[], Some(&json!({"email": email, "name": "ETag Person", "type": "admin"}))).await;
    assert_eq!(created.status, 201, "{}", body(&created));
    let user = text(&created.records("user")[0]["id"]);
    let path = format!("/api/user/{user}");
    let read = call(fx, reqwest::Method::GET, &path, "admin", &[], None).await;
    let etag = read.header("etag").expect("users have ETags");
    let lang = json!("en");
    let changed = call(fx, reqwest::Method::PATCH, &path, "admin", &[("if-match", &etag)], Some(&json!({"detail": {"lang": lang}}))).await;
    assert_eq!(changed.status, 200, "{}", body(&changed));
    let stale = call(fx, reqwest::Method::PATCH, &path, "admin", &[("if-match", "\"123456789\"")], Some(&json!({"detail": {"lang": "fr"}}))).await;
    stale.assert_problem(412, "precondition_failed");
    assert_eq!(fx.get(&path).await.records("user")[0]["detail"]["lang"], lang);

    // A key: created (with its ETag), revoked only with its current one.
    let created = call(fx, reqwest::Method::POST, "/api/apiKey", "admin", &[], Some(&json!({"name": format!("etag {}", unique())}))).await;
    assert_eq!(created.status, 201, "{}", body(&created));
    let key_etag = created.header("etag").expect("a created key has an ETag");
    let key = text(&created.records("apiKey")[0]["id"]);
    let key_path = format!("/api/apiKey/{key}");
    call(fx, reqwest::Method::DELETE, &key_path, "admin", &[("if-match", "\"123456789\"")], None).await.assert_problem(412, "precondition_failed");
    let revoked = call(fx, reqwest::Method::DELETE, &key_path, "admin", &[("if-match", &key_etag)], None).await;
    assert_eq!(revoked.status, 204, "{}", body(&revoked));
}

async fn of_many_concurrent_patches_with_one_etag_exactly_one_wins(fx) {
    let (company, etag) = new_company(fx).await;
    let id = text(&company["id"]);
    let path = format!("/api/company/{id}");
    let writers = 12;
    let mut tasks = Vec::new();
    for i in 0..writers {
        let (client, base, etag, path) = (fx.client(), fx.base.clone(), etag.clone(), path.clone());
        let admin = fx.credential("admin").clone();
        tasks.push(tokio::spawn(async move {
            let response = client
                .patch(format!("{base}{path}"))
                .basic_auth(&admin.email, Some(&admin.secret))
                .header("if-match", etag)
                .json(&json!({"name": format!("Writer {i}")}))
                .send()
                .await
                .expect("the server answers");
            (i, common::Response::read(response).await)
        }));
    }
    let mut winners = Vec::new();
    for task in tasks {
        let (i, response) = task.await.unwrap();
        match response.status {
            200 => winners.push(i),
            412 => {
                response.assert_problem(412, "precondition_failed");
            }
            other => panic!("writer {i}: {other} {}", body(&response)),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one writer wins: {winners:?}");
    let name = fx.get(&path).await.records("company")[0]["name"].clone();
    assert_eq!(name, format!("Writer {}", winners[0]).as_str());
}

async fn a_page_read_while_concurrent_writes_commit_never_shows_an_older_value(fx) {
    // Rounds of concurrent writes: one record of a page of one warehouse's stock and eight of
    // another's (on PostgreSQL their commits bump different rows of the stock table's version), while a
    // reader reads the first page again and again. A read begun after a write was answered
    // shows that write or a later one, whether the page was read afresh or kept because the
    // rows written since (logged under the version row each write bumped) are none of its own.
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
    let warehouses = fx.get("/api/warehouse?fields=id&order_by=id&pageSize=2").await.ids("warehouse");
    let page = format!("/api/stock?fk_warehouse={}&order_by=id&pageSize=8&fields=id,inStock", warehouses[0]);
    let shown = fx.get(&page).await.records("stock");
    let next = fx.get(&format!("/api/stock?fk_warehouse={}&order_by=id&pageSize=8&fields=id,inStock", warehouses[1])).await.records("stock");
    assert_eq!((shown.len(), next.len()), (8, 8));
    let ids: Vec<String> = shown.iter().map(|r| text(&r["id"])).collect();
    let answered: Arc<Vec<AtomicI64>> = Arc::new(shown.iter().map(|r| AtomicI64::new(r["inStock"].as_i64().unwrap())).collect());
    let write = |id: String, in_stock: i64| {
        let (client, base) = (fx.client(), fx.base.clone());
        let admin = fx.credential("admin").clone();
        tokio::spawn(async move {
            let response = client
                .patch(format!("{base}/api/stock/{id}"))
                .basic_auth(&admin.email, Some(&admin.secret))
                .json(&json!({"inStock": in_stock}))
                .send()
                .await
                .expect("the server answers");
            let response = common::Response::read(response).await;
            assert_eq!(response.status, 200, "{}", body(&response));
        })
    };
    let (client, base, admin) = (fx.client(), fx.base.clone(), fx.credential("admin").clone());
    let read = move |answered: Arc<Vec<AtomicI64>>, ids: Vec<String>| {
        let (client, admin, url) = (client.clone(), admin.clone(), format!("{base}{page}"));
        async move {
            let before: Vec<i64> = answered.iter().map(|v| v.load(Ordering::SeqCst)).collect();
            let response = client
                .get(url)
                .basic_auth(&admin.email, Some(&admin.secret))
                .send()
                .await
                .expect("the server answers");
            let records = common::Response::read(response).await.records("stock");
            assert_eq!(records.iter().map(|r| text(&r["id"])).collect::<Vec<_>>(), ids);
            for ((record, was), id) in records.iter().zip(&before).zip(&ids) {
                let now = record["inStock"].as_i64().unwrap();
                assert!(now >= *was, "stock {id} shows {now} after {was} was answered");
            }
        }
    };
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (done, read) = (done.clone(), read.clone());
        let (answered, ids) = (answered.clone(), ids.clone());
        tokio::spawn(async move {
            while !done.load(Ordering::SeqCst) {
                read(answered.clone(), ids.clone()).await;
            }
        })
    };
    let rounds = 16;
    for round in 1..=rounds {
        let at = round as usize % ids.len();
        let value = answered[at].load(Ordering::SeqCst) + 1;
        let mut writes = vec![write(ids[at].clone(), value)];
        for record in &next {
            let start = record["inStock"].as_i64().unwrap();
            writes.push(write(text(&record["id"]), start + round));
        }
        for done in writes {
            done.await.unwrap();
        }
        answered[at].store(value, Ordering::SeqCst);
        read(answered.clone(), ids.clone()).await;
    }
    done.store(true, Ordering::SeqCst);
    reader.await.unwrap();
}

async fn an_idempotency_key_applies_a_create_once_in_every_server(fx) {
    let admin = fx.credential("admin").clone();
    let code = format!("IK{}", unique());
    let key = format!("key-{code}");
    let request = json!({"name": "Once", "code": code});
    let first = post_at(&fx.client(), &fx.base, &admin, "/api/company", Some(&key), &request).await;
    assert_eq!(first.status, 201, "{}", body(&first));
    assert_eq!(first.header("idempotent-replayed"), None);
    let again = post_at(&fx.client(), &fx.base, &admin, "/api/company", Some(&key), &request).await;
    assert_eq!(again.status, 201, "{}", body(&again));
    assert_eq!(again.header("idempotent-replayed").as_deref(), Some("true"));
    assert_eq!(again.body, first.body, "the first answer again");
    assert_eq!(again.header("etag"), first.header("etag"));
    assert_eq!(again.header("location"), first.header("location"));
    // Another server process on the same database knows the key too.
    let (side, side_client, _running) = common::world::second_server(fx).await;
    let there = post_at(&side_client, &side, &admin, "/api/company", Some(&key), &request).await;
    assert_eq!(there.status, 201, "{}", body(&there));
    assert_eq!(there.header("idempotent-replayed").as_deref(), Some("true"));
    assert_eq!(there.body, first.body);
    let count = fx.get(&format!("/api/company/count?code={code}")).await.json()["count"].clone();
    assert_eq!(count, 1, "applied once");
    // The same key with another body is a conflict, on either server; nothing written.
    let other = json!({"name": "Twice", "code": code});
    post_at(&fx.client(), &fx.base, &admin, "/api/company", Some(&key), &other).await.assert_problem(409, "conflict");
    post_at(&side_client, &side, &admin, "/api/company", Some(&key), &other).await.assert_problem(409, "conflict");
    assert_eq!(fx.get(&format!("/api/company?code={code}")).await.records("company")[0]["name"], "Once");
    // A malformed key is 400.
    post_at(&fx.client(), &fx.base, &admin, "/api/company", Some("tab\there"), &request).await.assert_problem(400, "invalid_parameter");
}

async fn concurrent_requests_with_one_idempotency_key_apply_once(fx) {
    let admin = fx.credential("admin").clone();
    let code = format!("IC{}", unique());
    let key = format!("key-{code}");
    let request = json!({"name": "Raced", "code": code});
    let (side, side_client, _running) = common::world::second_server(fx).await;
    let mut tasks = Vec::new();
    for i in 0..10 {
        let (client, base) = if i % 2 == 0 { (fx.client(), fx.base.clone()) } else { (side_client.clone(), side.clone()) };
        let (admin, key, request) = (admin.clone(), key.clone(), request.clone());
        tasks.push(tokio::spawn(async move { post_at(&client, &base, &admin, "/api/company", Some(&key), &request).await }));
    }
    let mut ids = std::collections::HashSet::new();
    let mut fresh = 0;
    for task in tasks {
        let response = task.await.unwrap();
        assert_eq!(response.status, 201, "{}", body(&response));
        if response.header("idempotent-replayed").is_none() {
            fresh += 1;
        }
        ids.insert(text(&response.records("company")[0]["id"]));
    }
    assert_eq!(fresh, 1, "one request applied, the others replayed it");
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(fx.get(&format!("/api/company/count?code={code}")).await.json()["count"], 1);
}

async fn concurrent_upserts_of_one_natural_key_create_one_record(fx) {
    let admin = fx.credential("admin").clone();
    let code = format!("UP{}", unique());
    let (side, side_client, _running) = common::world::second_server(fx).await;
    let mut tasks = Vec::new();
    for i in 0..10 {
        let (client, base) = if i % 2 == 0 { (fx.client(), fx.base.clone()) } else { (side_client.clone(), side.clone()) };
        let admin = admin.clone();
        let request = json!({"name": format!("Upsert {i}"), "code": code});
        tasks.push(tokio::spawn(async move { post_at(&client, &base, &admin, "/api/company?upsert=true", None, &request).await }));
    }
    let mut created = 0;
    for task in tasks {
        let response = task.await.unwrap();
        match response.status {
            201 => created += 1,
            200 => {}
            other => panic!("{other}: {}", body(&response)),
        }
    }
    assert_eq!(created, 1, "exactly one upsert created the record");
    assert_eq!(fx.get(&format!("/api/company/count?code={code}")).await.json()["count"], 1);
    // Without upsert, the key taken is a conflict naming the holder.
    let taken = post_at(&fx.client(), &fx.base, &admin, "/api/company", None, &json!({"name": "Again", "code": code})).await;
    taken.assert_problem(409, "conflict");
}


async fn a_file_and_patches_of_the_same_records_lose_neither_change(fx) {
    // 300 products of the company's brand; then a file retitles all of them while PATCHes set
    // the category of each, all at once. Row locks order each pair (docs/API.md "A file and a
    // PATCH on the same record"): every product ends with the file's title and the PATCH's
    // category, whichever committed first.
    let brand = own_brand(fx).await;
    let code = format!("FP{}", unique());
    let codes: Vec<String> = (0..300).map(|n| format!("{code}-{n:03}")).collect();
    let barcodes: Vec<String> = codes.iter().map(|_| new_barcode()).collect();
    let sheet = |title: &str| {
        let mut rows = vec![row(&["Product Code", "Title", "Barcode"])];
        for (code, barcode) in codes.iter().zip(&barcodes) {
            rows.push(row(&[code, title, barcode]));
        }
        rows
    };
    upload_products(fx, &brand, &sheet("Before")).await;
    let listed = fx
        .get(&format!("/api/product?code={code}-@&fields=id&pageSize=500"))
        .await
        .records("product");
    assert_eq!(listed.len(), codes.len());
    let ids: Vec<String> = listed.iter().map(|p| text(&p["id"])).collect();

    let retitled = sheet("From the file");
    let file = upload_products(fx, &brand, &retitled);
    let patches = async {
        let mut tasks = Vec::new();
        for (n, id) in ids.iter().enumerate() {
            let credential = fx.credential("company").clone();
            let request = fx
                .client()
                .patch(format!("{}/api/product/{id}", fx.base))
                .basic_auth(&credential.email, Some(&credential.secret))
                .json(&json!({"category": format!("Patched {n}")}));
            tasks.push(tokio::spawn(async move {
                common::Response::read(request.send().await.expect("the server answers")).await
            }));
        }
        for task in tasks {
            let response = task.await.unwrap();
            assert_eq!(response.status, 200, "{}", body(&response));
        }
    };
    let (file, ()) = tokio::join!(file, patches);
    assert_eq!(file["detail"]["rowsApplied"], codes.len() as u64, "{file}");
    let after = fx
        .get(&format!("/api/product?code={code}-@&fields=id,title,category&pageSize=500"))
        .await
        .records("product");
    assert_eq!(after.len(), ids.len());
    for product in &after {
        let n = ids.iter().position(|id| *id == text(&product["id"])).unwrap();
        assert_eq!(product["title"], "From the file", "{product}");
        assert_eq!(product["category"], format!("Patched {n}"), "{product}");
    }
}
}

/// On PostgreSQL a `PATCH` checks its record unlocked and writes it on condition that its
/// version has not moved; these tests change the record between the check and the write.
/// SQLite writes one transaction at a time: there, nothing changes between the two.
mod postgres_races {
    use super::*;
    use brandhub_store::Timing;
    use brandhub_store::db::Kind;

    /// Runs `write` (of one company row) in a transaction of its own and keeps it
    /// uncommitted until `release` is told; `locked` is told, once the write is made, the
    /// process id of the transaction's connection (which statements it blocks name).
    fn hold_written<S>(
        fx: &'static common::Fixture,
        write: S,
        locked: tokio::sync::oneshot::Sender<i64>,
        release: tokio::sync::oneshot::Receiver<()>,
    ) -> tokio::task::JoinHandle<()>
    where
        S: sea_query_sqlx::SqlxBinder + Send + Sync + 'static,
    {
        let store = fx.store.clone();
        tokio::spawn(fx.on_server(async move {
            let mut tx = store.begin().await.expect("a transaction");
            assert_eq!(tx.execute("company", &write).await.expect("the write"), 1);
            let backend = sea_query::Query::select()
                .expr(sea_query::Expr::cust("pg_backend_pid()::bigint"))
                .to_owned();
            let rows = tx
                .fetch(&backend, &[Kind::Integer])
                .await
                .expect("the connection's process id");
            let brandhub_catalog::Cell::Integer(pid) = rows[0][0] else {
                panic!("no process id: {rows:?}");
            };
            locked.send(pid).expect("the test waits");
            release.await.expect("the test releases the row");
            tx.commit().await.expect("the commit");
        }))
    }

    /// Changes company `id`'s `name` in a transaction of its own and keeps the row locked
    /// until `release` is told; `locked` is told once the change is made.
    fn hold_changed(
        fx: &'static common::Fixture,
        id: &str,
        name: &str,
        locked: tokio::sync::oneshot::Sender<i64>,
        release: tokio::sync::oneshot::Receiver<()>,
    ) -> tokio::task::JoinHandle<()> {
        use sea_query::{Alias, Expr, ExprTrait, Query};
        let update = Query::update()
            .table(Alias::new("company"))
            .value(Alias::new("name"), name)
            .value(Alias::new("name_ci"), name.to_lowercase())
            .value(
                Alias::new("row_version"),
                Expr::col(Alias::new("row_version")).add(1),
            )
            .and_where(Expr::col(Alias::new("id")).eq(id))
            .to_owned();
        hold_written(fx, update, locked, release)
    }

    /// Inserts a company with `code` in a transaction of its own and keeps it uncommitted
    /// until `release` is told; `locked` is told once the insert is made. Returns its id.
    fn hold_inserted(
        fx: &'static common::Fixture,
        code: &str,
        locked: tokio::sync::oneshot::Sender<i64>,
        release: tokio::sync::oneshot::Receiver<()>,
    ) -> (String, tokio::task::JoinHandle<()>) {
        use sea_query::{Alias, Query};
        let id = format!("{:0>32}", unique()).to_ascii_uppercase();
        let insert = Query::insert()
            .into_table(Alias::new("company"))
            .columns(["id", "name", "name_ci", "code", "code_ci", "created_date"].map(Alias::new))
            .values_panic([
                id.clone().into(),
                "Took the key".into(),
                "took the key".into(),
                code.into(),
                code.to_lowercase().into(),
                "2026-01-01T00:00:00".into(),
            ])
            .to_owned();
        (id, hold_written(fx, insert, locked, release))
    }

    /// Waits until a statement on the company table waits for the row the transaction of
    /// process `holder` locked: the `PATCH` sent meanwhile has read the record (unlocked) and
    /// now waits to write it.
    async fn until_a_company_write_waits(fx: &'static common::Fixture, holder: i64) {
        until_waiting(fx, holder, "%UPDATE \"company\"%").await
    }

    /// Waits until a statement like `pattern` waits for a lock that the transaction of
    /// process `holder` holds (and so not for a lock of any other test, or of any other
    /// database on the server).
    async fn until_waiting(fx: &'static common::Fixture, holder: i64, pattern: &'static str) {
        let store = fx.store.clone();
        fx.on_server(async move {
            use sea_query::{Alias, Asterisk, Expr, ExprTrait, Func, Query};
            let waiting = Query::select()
                .expr(Func::count(Expr::col(Asterisk)))
                .from(Alias::new("pg_stat_activity"))
                .and_where(Expr::col(Alias::new("wait_event_type")).eq("Lock"))
                .and_where(Expr::cust(format!("{holder} = ANY(pg_blocking_pids(pid))")))
                .and_where(Expr::col(Alias::new("query")).like(pattern))
                .to_owned();
            for _ in 0..3000 {
                let rows = store
                    .fetch(&waiting, &[Kind::Integer], &Timing::default())
                    .await
                    .expect("pg_stat_activity reads");
                if matches!(rows[0][0], brandhub_catalog::Cell::Integer(n) if n > 0) {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            panic!("no statement like {pattern} came to wait for a lock");
        })
        .await
    }

    /// Sends `body` as a PATCH of `path` as the admin, with `headers`.
    fn patch(
        fx: &'static common::Fixture,
        path: &str,
        headers: &[(&'static str, String)],
        body: Value,
    ) -> tokio::task::JoinHandle<common::Response> {
        let admin = fx.credential("admin").clone();
        let mut request = fx
            .client()
            .patch(format!("{}{path}", fx.base))
            .basic_auth(&admin.email, Some(&admin.secret))
            .json(&body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        tokio::spawn(async move {
            common::Response::read(request.send().await.expect("the server answers")).await
        })
    }

    /// Creates a company, then sends a `PATCH` of it with `body` (and its first ETag in
    /// `If-Match` if `with_etag`) while another transaction renames it to `renamed`: the
    /// `PATCH` reads the record before the rename commits and writes it after. Returns the
    /// `PATCH`'s answer, the company's path and its first ETag.
    async fn patched_while_renamed(
        fx: &'static common::Fixture,
        renamed: &str,
        with_etag: bool,
        body: Value,
    ) -> (common::Response, String, String) {
        let (company, etag) = new_company(fx).await;
        let id = text(&company["id"]);
        let path = format!("/api/company/{id}");
        let (locked, is_locked) = tokio::sync::oneshot::channel();
        let (release, released) = tokio::sync::oneshot::channel();
        let other = hold_changed(fx, &id, renamed, locked, released);
        let holder = is_locked.await.unwrap();
        let headers = if with_etag {
            vec![("if-match", etag.clone())]
        } else {
            Vec::new()
        };
        let patching = patch(fx, &path, &headers, body);
        until_a_company_write_waits(fx, holder).await;
        release.send(()).unwrap();
        other.await.unwrap();
        (patching.await.unwrap(), path, etag)
    }

    /// An `If-Match` that held when the record was checked but not when it was written: the
    /// write is checked again, locked, and refused (412), and the other change stands.
    #[tokio::test]
    async fn a_precondition_that_fails_between_check_and_write_is_refused() {
        let Some(fx) = common::shared(common::Db::Postgres, "concurrency") else {
            return;
        };
        let (patched, path, _) =
            patched_while_renamed(fx, "Changed meanwhile", true, json!({"name": "Patched"})).await;
        patched.assert_problem(412, "precondition_failed");
        let read = fx.get(&path).await;
        assert_eq!(read.records("company")[0]["name"], "Changed meanwhile");
    }

    /// A `PATCH` without a precondition whose record changed between check and write is
    /// applied on top of the other change: neither is lost, and the version moved twice.
    #[tokio::test]
    async fn a_patch_whose_record_changed_meanwhile_keeps_both_changes() {
        let Some(fx) = common::shared(common::Db::Postgres, "concurrency") else {
            return;
        };
        let version =
            |etag: &str| -> i64 { etag.trim_matches('"').parse().expect("a numeric ETag") };
        let code = format!("RC{}", unique());
        let (patched, path, etag) =
            patched_while_renamed(fx, "Renamed meanwhile", false, json!({"code": code})).await;
        assert_eq!(patched.status, 200, "{}", body(&patched));
        let read = fx.get(&path).await;
        let record = &read.records("company")[0];
        assert_eq!(record["name"], "Renamed meanwhile");
        assert_eq!(record["code"], code.as_str());
        let now = read.header("etag").expect("a by-id read has an ETag");
        assert_eq!(version(&now), version(&etag) + 2, "{etag} then {now}");
    }

    /// A create whose natural key another transaction takes between the check (which
    /// cannot see it yet) and the write: the write, one statement that commits itself, writes
    /// nothing, the create is checked again in a transaction and is 409 naming the record
    /// that took the key; one company has the code.
    #[tokio::test]
    async fn a_create_whose_key_is_taken_between_check_and_write_names_the_holder() {
        let Some(fx) = common::shared(common::Db::Postgres, "concurrency") else {
            return;
        };
        let code = format!("TK{}", unique());
        let (locked, is_locked) = tokio::sync::oneshot::channel();
        let (release, released) = tokio::sync::oneshot::channel();
        let (holder, other) = hold_inserted(fx, &code, locked, released);
        let holding = is_locked.await.unwrap();
        let admin = fx.credential("admin").clone();
        let request = fx
            .client()
            .post(format!("{}/api/company", fx.base))
            .basic_auth(&admin.email, Some(&admin.secret))
            .json(&json!({"name": "Second", "code": code}));
        let creating = tokio::spawn(async move {
            common::Response::read(request.send().await.expect("the server answers")).await
        });
        until_waiting(fx, holding, "%INSERT INTO \"company\"%").await;
        release.send(()).unwrap();
        other.await.unwrap();
        let created = creating.await.unwrap();
        let problem = created.assert_problem(409, "conflict");
        assert!(text(&problem["detail"]).contains(&holder), "{problem}");
        let found = fx.get(&format!("/api/company/count?code={code}")).await;
        assert_eq!(found.json()["count"], 1);
    }
}
