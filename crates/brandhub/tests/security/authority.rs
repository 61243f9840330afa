//! Authority (issue 9, findings 2, 3 and the keys of 6): an upload writes only what its user
//! may write, judged at upload and again at processing; a key never does more than its user's
//! type allows now, in every server process; no key widens its own user; key writes obey their
//! grants and a limit. Each refusal is a 4xx problem+json, and nothing refused is written.

use crate::common;
use crate::on_both_backends;
use common::unique_number as unique;
use common::{BOUNDARY, Db, Fixture, Response, multipart, row, xlsx};
use reqwest::Method;
use serde_json::{Value, json};

/// Someone who calls the API: a user name and a key.
#[derive(Clone)]
struct Who {
    user: String,
    key: String,
}

fn demo(fx: &Fixture, user_type: &str) -> Who {
    let credential = fx.credential(user_type);
    Who {
        user: credential.email.clone(),
        key: credential.secret.clone(),
    }
}

async fn call_at(
    fx: &Fixture,
    base: &str,
    who: &Who,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Response {
    let who = common::As::Key(&who.user, &who.key);
    common::send(fx, base, method, path, who, &[], body.as_ref()).await
}

async fn call(
    fx: &Fixture,
    who: &Who,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Response {
    call_at(fx, &fx.base, who, method, path, body).await
}

/// The records of a GET that must succeed.
async fn records(fx: &Fixture, who: &Who, path: &str, resource: &str) -> Vec<Value> {
    let response = call(fx, who, Method::GET, path, None).await;
    assert_eq!(
        response.status,
        200,
        "{path}: {}",
        String::from_utf8_lossy(&response.body)
    );
    response.records(resource)
}

/// The count a GET …/count answers.
async fn count(fx: &Fixture, who: &Who, path: &str) -> u64 {
    let response = call(fx, who, Method::GET, path, None).await;
    assert_eq!(
        response.status,
        200,
        "{path}: {}",
        String::from_utf8_lossy(&response.body)
    );
    response.json()["count"].as_u64().expect("a count")
}

fn text(value: &Value) -> String {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not text: {value}"))
        .to_string()
}

/// Uploads one file part.
async fn upload(fx: &Fixture, who: &Who, query: &str, part: &str, bytes: &[u8]) -> Response {
    let request = fx
        .client()
        .post(format!("{}/api/file{query}", fx.base))
        .header(
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .body(multipart(&[(part, Some("authority.xlsx"), bytes)]))
        .basic_auth(&who.user, Some(&who.key));
    Response::read(request.send().await.expect("the server answers")).await
}

/// A user the admin creates (any type, with its links), and a key the admin makes for it.
async fn new_user(fx: &Fixture, fields: Value, grants: Option<Value>) -> (String, Who) {
    let admin = demo(fx, "admin");
    let email = format!("authority-{}@example.test", unique());
    let mut body = json!({"name": "Authority Test", "email": email});
    for (name, value) in fields.as_object().unwrap() {
        body[name] = value.clone();
    }
    let created = call(fx, &admin, Method::POST, "/api/user", Some(body)).await;
    assert_eq!(
        created.status,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    let id = text(&created.records("user")[0]["id"]);
    let mut key = json!({"fk_user": id});
    if let Some(grants) = grants {
        key["grants"] = grants;
    }
    let key = call(fx, &admin, Method::POST, "/api/apiKey", Some(key)).await;
    assert_eq!(key.status, 201, "{}", String::from_utf8_lossy(&key.body));
    let secret = text(&key.records("apiKey")[0]["secret"]);
    (
        id,
        Who {
            user: email,
            key: secret,
        },
    )
}

/// A PATCH of a user by the admin.
async fn patch_user(fx: &Fixture, id: &str, body: Value) -> Response {
    call(
        fx,
        &demo(fx, "admin"),
        Method::PATCH,
        &format!("/api/user/{id}"),
        Some(body),
    )
    .await
}

/// A key made with another key.
async fn make_key(fx: &Fixture, who: &Who, grants: Value) -> Response {
    call(
        fx,
        who,
        Method::POST,
        "/api/apiKey",
        Some(json!({"grants": grants})),
    )
    .await
}

/// A user's own record fields as the admin sees them.
async fn user_record(fx: &Fixture, id: &str) -> Value {
    records(fx, &demo(fx, "admin"), &format!("/api/user/{id}"), "user").await[0].clone()
}

/// Companies: one of the demo company user's, and one outside it.
async fn companies(fx: &Fixture) -> (String, String) {
    let own = text(&user_record(fx, &fx.credential("company").user_id).await["fk_company"]);
    let all = records(
        fx,
        &demo(fx, "admin"),
        "/api/company?pageSize=1000&fields=id",
        "company",
    )
    .await;
    let foreign = all
        .iter()
        .map(|c| text(&c["id"]))
        .find(|c| *c != own)
        .expect("another company");
    (own, foreign)
}

fn field_errors(body: &Value) -> Vec<String> {
    body["errors"]
        .as_array()
        .map(|errors| errors.iter().map(|e| text(&e["field"])).collect())
        .unwrap_or_default()
}

/// The demo warehouse user's world: its warehouse, that warehouse's company, a brand it sees
/// of that company, a barcode of that brand, and a brand it does not see.
struct Keeper {
    who: Who,
    warehouse: String,
    brand: String,
    barcode: String,
    unseen_brand: String,
}

async fn keeper(fx: &Fixture) -> Keeper {
    let who = demo(fx, "warehouse");
    let admin = demo(fx, "admin");
    let warehouse =
        text(&user_record(fx, &fx.credential("warehouse").user_id).await["fk_warehouse"]);
    let company = text(
        &records(
            fx,
            &who,
            &format!("/api/warehouse/{warehouse}"),
            "warehouse",
        )
        .await[0]["fk_company"],
    );
    let seen: Vec<String> = records(
        fx,
        &who,
        "/api/brand?pageSize=1000&fields=id,fk_company",
        "brand",
    )
    .await
    .iter()
    .filter(|b| text(&b["fk_company"]) == company)
    .map(|b| text(&b["id"]))
    .collect();
    let brand = seen
        .first()
        .expect("the warehouse holds stock of its company's brands")
        .clone();
    let barcode = text(
        &records(
            fx,
            &admin,
            &format!("/api/variant?variant_product.fk_brand={brand}&pageSize=1&fields=barcode"),
            "variant",
        )
        .await[0]["barcode"],
    );
    let all = records(fx, &admin, "/api/brand?pageSize=1000&fields=id", "brand").await;
    let unseen_brand = all
        .iter()
        .map(|b| text(&b["id"]))
        .find(|b| !seen.contains(b))
        .expect("a brand the warehouse user does not see");
    Keeper {
        who,
        warehouse,
        brand,
        barcode,
        unseen_brand,
    }
}

on_both_backends! { "authority";

async fn a_warehouse_user_uploads_only_what_it_may_write(fx) {
    let mut k = keeper(fx).await;
    let admin = demo(fx, "admin");
    let host = text(&records(fx, &admin, "/api/host?pageSize=1&fields=id", "host").await[0]["id"]);
    // A user of the keeper's warehouse of the test's own, whose files no other test uploads.
    let (uploader, who) = new_user(fx, json!({"type": "warehouse", "fk_warehouse": k.warehouse}), None).await;
    k.who = who;
    let files = format!("/api/file/count?fk_user={uploader}");
    let files_before = count(fx, &admin, &files).await;
    let product = xlsx(&[row(&["Product Code", "Title", "Barcode"]), row(&["HIJACK", "Renamed by a warehouse", &k.barcode])]);
    let price = xlsx(&[row(&["Barcode", "Price"]), row(&[&k.barcode, "0.01"])]);
    let image = xlsx(&[row(&["Barcode", "Image URL"]), row(&[&k.barcode, "https://example.test/x.jpg"])]);

    // It sees the brand through its stock, but a catalogue is its company's to write.
    for (part, bytes) in [
        (format!("product,{}", k.brand), &product),
        (format!("price,{},{host},01/01/2031", k.brand), &price),
        (format!("image,{}", k.brand), &image),
    ] {
        let refused = upload(fx, &k.who, "?wait=60", &part, bytes).await;
        let body = refused.assert_problem(403, "forbidden");
        assert_eq!(body["field"], "brand", "{part}: {body}");
        assert!(text(&body["detail"]).contains("warehouse user may not write"), "{body}");
    }
    // A brand it does not see does not exist for it.
    let unseen = upload(fx, &k.who, "", &format!("product,{}", k.unseen_brand), &product).await;
    assert_eq!(unseen.assert_problem(404, "not_found")["field"], "brand");
    // Another company's warehouse does not exist for it either.
    let other_warehouse = records(fx, &admin, "/api/warehouse?pageSize=1000&fields=id", "warehouse").await
        .iter().map(|w| text(&w["id"])).find(|w| *w != k.warehouse).expect("another warehouse");
    let stock = xlsx(&[row(&["Barcode", "In Stock"]), row(&[&k.barcode, "7"])]);
    let foreign = upload(fx, &k.who, "", &format!("stock,{},{other_warehouse}", k.brand), &stock).await;
    assert_eq!(foreign.assert_problem(404, "not_found")["field"], "warehouse");
    assert_eq!(count(fx, &admin, &files).await, files_before, "nothing refused is stored");
    let titles = records(fx, &admin, &format!("/api/product?fk_brand={}&title=Renamed by a warehouse", k.brand), "product").await;
    assert!(titles.is_empty(), "no product was renamed");

    // Its own warehouse's stock is its to write.
    let stocked = upload(fx, &k.who, "?wait=60", &format!("stock,{},{}", k.brand, k.warehouse), &stock).await;
    assert_eq!(stocked.status, 201, "{}", String::from_utf8_lossy(&stocked.body));
    let file = &stocked.records("file")[0];
    assert_eq!(file["status"], "processed", "{file}");
    assert_eq!(file["detail"]["rowsApplied"], 1, "{file}");
    let level = records(fx, &admin, &format!("/api/stock?fk_warehouse={}&stock_variant.barcode={}&fields=inStock", k.warehouse, k.barcode), "stock").await;
    assert_eq!(level[0]["inStock"], 7);
}

async fn an_order_dispatch_file_touches_only_orders_its_user_may_dispatch(fx) {
    let k = keeper(fx).await;
    let admin = demo(fx, "admin");
    // Two open orders of one brand store shipped from the warehouse; one of them is then
    // moved to another warehouse, as if its brand store's warehouse had changed.
    let stores = records(fx, &admin, &format!("/api/brandStore?fk_warehouse={}&fk_brand={}&pageSize=1000&fields=id", k.warehouse, k.brand), "brandStore").await;
    assert!(!stores.is_empty(), "the brand is sold from the warehouse");
    let by_store: Vec<String> = stores.iter().map(|s| format!("fk_brandStore={}", text(&s["id"]))).collect();
    let orders: Vec<Value> = records(fx, &admin, &format!("/api/order?{}&pageSize=1000&fields=id,brandOrderRef,status", by_store.join("&")), "order").await
        .into_iter()
        // Accepted orders: the lifecycle lets them ship (nothing of them is shipped yet).
        .filter(|o| o["status"] == "accepted")
        .take(2)
        .collect();
    assert_eq!(orders.len(), 2, "two accepted orders of the brand from the warehouse");
    let mut items = Vec::new();
    for order in &orders {
        let path = format!("/api/orderItem?fk_order={}&pageSize=1&fields=id,shipQty", text(&order["id"]));
        items.push(records(fx, &admin, &path, "orderItem").await[0].clone());
    }
    let (own_item, moved_item) = (&items[0], &items[1]);
    let elsewhere = records(fx, &admin, "/api/warehouse?pageSize=1000&fields=id", "warehouse").await
        .iter().map(|w| text(&w["id"])).find(|w| *w != k.warehouse).expect("another warehouse");
    let moved = text(&orders[1]["id"]);
    fx.on_server({
        let store = fx.store.clone();
        async move {
            use sea_query::{Alias, Expr, ExprTrait, Query};
            let update = Query::update()
                .table(Alias::new("orders"))
                .value(Alias::new("fk_warehouse"), elsewhere)
                .and_where(Expr::col(Alias::new("id")).eq(moved))
                .to_owned();
            let mut tx = store.begin().await.unwrap();
            tx.execute("orders", &update).await.unwrap();
            tx.commit().await.unwrap();
        }
    }).await;

    let sheet = xlsx(&[
        row(&["Order Ref", "Item Ref", "Ship Qty"]),
        row(&[&text(&orders[0]["brandOrderRef"]), &text(&own_item["id"]), "1"]),
        row(&[&text(&orders[1]["brandOrderRef"]), &text(&moved_item["id"]), "1"]),
    ]);
    let response = upload(fx, &k.who, "?wait=60", &format!("orderDispatch,{}", k.brand), &sheet).await;
    assert_eq!(response.status, 201, "{}", String::from_utf8_lossy(&response.body));
    let file = &response.records("file")[0];
    assert_eq!(file["status"], "processed", "{file}");
    assert_eq!(file["detail"]["rowsApplied"], 1, "{file}");
    let report = text(&file["detail"]["error"]);
    // In English or, for an uploader who reads German (the demo's company user), in German.
    let not_found = report.contains("order not found") || report.contains("Bestellung nicht gefunden");
    assert!(not_found && report.contains(&text(&orders[1]["brandOrderRef"])), "{report}");
    let shipped = records(fx, &admin, &format!("/api/orderItem/{}?fields=shipQty", text(&own_item["id"])), "orderItem").await;
    assert_eq!(shipped[0]["shipQty"], 1);
    let untouched = records(fx, &admin, &format!("/api/orderItem/{}?fields=shipQty", text(&moved_item["id"])), "orderItem").await;
    assert_eq!(untouched[0]["shipQty"], moved_item["shipQty"], "another warehouse's order is untouched");

    // A host user may not upload at all.
    upload(fx, &demo(fx, "host"), "", &format!("orderDispatch,{}", k.brand), &sheet).await.assert_problem(403, "forbidden");
}

async fn a_sponsor_uploads_for_the_companies_it_sponsors(fx) {
    let admin = demo(fx, "admin");
    let sponsor = demo(fx, "sponsor");
    let sponsor_company = text(&user_record(fx, &fx.credential("sponsor").user_id).await["fk_sponsor"]);
    let sponsored = records(fx, &admin, &format!("/api/company?fk_sponsor={sponsor_company}&pageSize=1000&fields=id"), "company").await;
    let mut mine = vec![sponsor_company.clone()];
    mine.extend(sponsored.iter().map(|c| text(&c["id"])));
    let brands = records(fx, &admin, "/api/brand?pageSize=1000&fields=id,fk_company", "brand").await;
    let own = brands.iter().find(|b| mine.contains(&text(&b["fk_company"]))).map(|b| text(&b["id"])).expect("a sponsored brand");
    let foreign = brands.iter().find(|b| !mine.contains(&text(&b["fk_company"]))).map(|b| text(&b["id"])).expect("another brand");
    let code = format!("SP-{}", unique());
    let sheet = xlsx(&[row(&["Product Code", "Title", "Barcode"]), row(&[&code, "Sponsored", &format!("29{:011}", unique() % 100_000_000_000)])]);
    let done = upload(fx, &sponsor, "?wait=60", &format!("product,{own}"), &sheet).await;
    assert_eq!(done.status, 201, "{}", String::from_utf8_lossy(&done.body));
    assert_eq!(done.records("file")[0]["status"], "processed");
    upload(fx, &sponsor, "", &format!("product,{foreign}"), &sheet).await.assert_problem(404, "not_found");
}

async fn a_demoted_users_key_loses_its_power_in_every_process(fx) {
    let admin = demo(fx, "admin");
    let (own, foreign) = companies(fx).await;
    let host = text(&records(fx, &admin, "/api/host?pageSize=1&fields=id", "host").await[0]["id"]);
    let (x, x_key) = new_user(fx, json!({"type": "company", "fk_company": own}), None).await;
    assert_eq!(patch_user(fx, &x, json!({"type": "admin"})).await.status, 200);
    let admin_key = call(fx, &admin, Method::POST, "/api/apiKey", Some(json!({"fk_user": x, "grants": ["*:*"]}))).await;
    assert_eq!(admin_key.status, 201);
    let wide = Who { user: x_key.user.clone(), key: text(&admin_key.records("apiKey")[0]["secret"]) };
    let new_admin = |tag: &str| json!({"name": "Escalated", "email": format!("{tag}-{}@example.test", unique()), "type": "admin"});
    assert_eq!(call(fx, &wide, Method::POST, "/api/user", Some(new_admin("while-admin"))).await.status, 201, "an admin makes admins");

    // A second server on the same database has checked (and remembered) the key.
    let store = fx.store.clone();
    let uploads = fx.side_uploads();
    let dir = tempfile::tempdir().unwrap();
    let tls = dir.path().join("tls");
    let (address, certificate, _running) = fx.on_server(async move {
        let settings = brandhub_server::Settings::new("127.0.0.1:0".parse().unwrap(), Some(brandhub_server::tls::TlsSource::SelfSigned { dir: tls }), uploads);
        let running = brandhub_server::start(settings, store).await.expect("a second server starts");
        (running.address, running.certificate_pem.clone().unwrap(), running)
    }).await;
    let side = format!("https://{address}");
    let side_client = common::client_trusting(&certificate);
    let at_side = |method: Method, path: &str, body: Option<Value>| {
        let mut request = side_client.request(method, format!("{side}{path}")).basic_auth(&wide.user, Some(&wide.key));
        if let Some(body) = body {
            request = request.json(&body);
        }
        async move { Response::read(request.send().await.expect("the second server answers")).await }
    };
    assert_eq!(at_side(Method::GET, "/api/user?pageSize=1", None).await.status, 200);

    // Demoted to a company user: the key can neither make an admin nor make X one again.
    assert_eq!(patch_user(fx, &x, json!({"type": "company"})).await.status, 200);
    for answer in [
        call(fx, &wide, Method::POST, "/api/user", Some(new_admin("demoted"))).await,
        at_side(Method::POST, "/api/user", Some(new_admin("demoted-side"))).await,
    ] {
        let body = answer.assert_problem(422, "validation_failed");
        assert!(field_errors(&body).contains(&"type".to_string()), "{body}");
    }
    let promote = call(fx, &wide, Method::PATCH, &format!("/api/user/{x}"), Some(json!({"type": "admin"}))).await;
    assert_eq!(field_errors(&promote.assert_problem(422, "validation_failed")), vec!["type"]);
    let widen = call(fx, &wide, Method::PATCH, &format!("/api/user/{x}"), Some(json!({"detail": {"companies": [foreign]}}))).await;
    assert_eq!(field_errors(&widen.assert_problem(422, "validation_failed")), vec!["detail.companies"]);
    assert_eq!(user_record(fx, &x).await["type"], "company");
    assert_eq!(user_record(fx, &x).await["detail"]["companies"], json!([]));
    assert_eq!(count(fx, &admin, "/api/user/count?email=demoted@").await, 0, "nothing refused is written");

    // Demoted to a host user: the key is cut to a host's grants, on either server.
    assert_eq!(patch_user(fx, &x, json!({"type": "host", "fk_host": host})).await.status, 200);
    for answer in [
        call(fx, &wide, Method::POST, "/api/user", Some(new_admin("host"))).await,
        at_side(Method::POST, "/api/user", Some(new_admin("host-side"))).await,
        call(fx, &wide, Method::PATCH, &format!("/api/user/{x}"), Some(json!({"type": "admin"}))).await,
    ] {
        let body = answer.assert_problem(403, "forbidden");
        assert!(text(&body["detail"]).contains("do not include user:"), "{body}");
    }
    assert_eq!(call(fx, &wide, Method::GET, &format!("/api/host/{host}"), None).await.status, 200, "a host still reads");
    // An admin again: the key allows what it was made with, again.
    assert_eq!(patch_user(fx, &x, json!({"type": "admin"})).await.status, 200);
    assert_eq!(at_side(Method::POST, "/api/user", Some(new_admin("again"))).await.status, 201);
}

async fn company_users_write_users_of_their_companies_only(fx) {
    let admin = demo(fx, "admin");
    let company = demo(fx, "company");
    let (own, foreign) = companies(fx).await;
    let host = text(&records(fx, &admin, "/api/host?pageSize=1&fields=id", "host").await[0]["id"]);
    let person = |email: &str, fields: Value| {
        let mut body = json!({"name": "Colleague", "email": email});
        for (name, value) in fields.as_object().unwrap() {
            body[name] = value.clone();
        }
        body
    };
    let email = format!("colleague-{}@example.test", unique());
    let created = call(fx, &company, Method::POST, "/api/user", Some(person(&email, json!({"type": "company", "fk_company": own})))).await;
    assert_eq!(created.status, 201, "{}", String::from_utf8_lossy(&created.body));
    let colleague = text(&created.records("user")[0]["id"]);

    for (fields, refused) in [
        (json!({"type": "company", "fk_company": foreign}), vec!["fk_company"]),
        (json!({"type": "company", "fk_company": own, "detail": {"companies": [foreign]}}), vec!["detail.companies"]),
        (json!({"type": "admin", "fk_company": own}), vec!["type"]),
        (json!({"type": "sponsor", "fk_company": own, "fk_sponsor": own}), vec!["fk_sponsor", "type"]),
        (json!({"type": "host", "fk_company": own, "fk_host": host}), vec!["fk_host", "type"]),
    ] {
        let email = format!("refused-{}@example.test", unique());
        let answer = call(fx, &company, Method::POST, "/api/user", Some(person(&email, fields.clone()))).await;
        let body = answer.assert_problem(422, "validation_failed");
        assert_eq!(field_errors(&body), refused, "{fields}: {body}");
        assert_eq!(count(fx, &admin, &format!("/api/user/count?email={email}")).await, 0, "refused before anything is written");
    }
    // Changing: no self-promotion, no colleague beyond its companies.
    let own_id = fx.credential("company").user_id.clone();
    let promote = call(fx, &company, Method::PATCH, &format!("/api/user/{own_id}"), Some(json!({"type": "admin"}))).await;
    assert_eq!(field_errors(&promote.assert_problem(422, "validation_failed")), vec!["type"]);
    let moved = call(fx, &company, Method::PATCH, &format!("/api/user/{colleague}"), Some(json!({"fk_company": foreign}))).await;
    assert_eq!(field_errors(&moved.assert_problem(422, "validation_failed")), vec!["fk_company"]);
    let renamed = call(fx, &company, Method::PATCH, &format!("/api/user/{colleague}"), Some(json!({"name": "Renamed"}))).await;
    assert_eq!(renamed.status, 200);
    let leave = call(fx, &company, Method::PATCH, &format!("/api/user/{own_id}"), Some(json!({"fk_company": foreign}))).await;
    assert_eq!(field_errors(&leave.assert_problem(422, "validation_failed")), vec!["fk_company"]);
    let own_lang = call(fx, &company, Method::PATCH, &format!("/api/user/{own_id}"), Some(json!({"detail": {"lang": "fr"}}))).await;
    assert_eq!(own_lang.status, 200, "its own record is its to write");
    // A user it sees (a company of it among the user's) but may not write: 403.
    let (shared, _) = new_user(fx, json!({"type": "company", "fk_company": foreign, "detail": {"companies": [own]}}), None).await;
    let body = call(fx, &company, Method::PATCH, &format!("/api/user/{shared}"), Some(json!({"name": "Mine now"}))).await.assert_problem(403, "forbidden");
    assert!(text(&body["detail"]).contains("fk_company"), "{body}");
    assert_eq!(user_record(fx, &shared).await["name"], "Authority Test");
    // A user it does not see: 404.
    let (unseen, _) = new_user(fx, json!({"type": "company", "fk_company": foreign}), None).await;
    call(fx, &company, Method::PATCH, &format!("/api/user/{unseen}"), Some(json!({"name": "x"}))).await.assert_problem(404, "not_found");

    // A sponsor makes users of the companies it sponsors, sponsors only of its own.
    let sponsor = demo(fx, "sponsor");
    let sponsor_company = text(&user_record(fx, &fx.credential("sponsor").user_id).await["fk_sponsor"]);
    let sponsor_id = fx.credential("sponsor").user_id.clone();
    let renamed = call(fx, &sponsor, Method::PATCH, &format!("/api/user/{sponsor_id}"), Some(json!({"name": "Oliver B."}))).await;
    assert_eq!(renamed.status, 200, "{}", String::from_utf8_lossy(&renamed.body));
    let email = format!("sponsored-{}@example.test", unique());
    let made = call(fx, &sponsor, Method::POST, "/api/user", Some(person(&email, json!({"type": "sponsor", "fk_sponsor": sponsor_company, "fk_company": sponsor_company})))).await;
    assert_eq!(made.status, 201, "{}", String::from_utf8_lossy(&made.body));
    let outside = records(fx, &admin, "/api/company?pageSize=1000&fields=id,fk_sponsor", "company").await
        .iter().filter(|c| c["fk_sponsor"] != json!(sponsor_company)).map(|c| text(&c["id"])).find(|c| *c != sponsor_company).expect("an unsponsored company");
    let refused = call(fx, &sponsor, Method::POST, "/api/user", Some(person(&format!("x-{}@example.test", unique()), json!({"type": "sponsor", "fk_sponsor": outside, "fk_company": outside})))).await;
    assert_eq!(field_errors(&refused.assert_problem(422, "validation_failed")), vec!["fk_company", "fk_sponsor"]);
}

async fn key_writes_obey_their_grants_and_never_widen(fx) {
    let admin = demo(fx, "admin");
    let (own, _) = companies(fx).await;
    let (user, main) = new_user(fx, json!({"type": "company", "fk_company": own}), None).await;
    let key_of = |response: &Response, user: &str| Who { user: user.to_string(), key: text(&response.records("apiKey")[0]["secret"]) };
    let main_key = text(&records(fx, &main, "/api/apiKey?fields=id", "apiKey").await[0]["id"]);

    // A brand:GET key neither creates keys nor revokes its user's wider one.
    let reader = make_key(fx, &main, json!(["brand:GET"])).await;
    assert_eq!(reader.status, 201);
    let reader = key_of(&reader, &main.user);
    let body = make_key(fx, &reader, json!(["brand:GET"])).await.assert_problem(403, "forbidden");
    assert!(text(&body["detail"]).contains("apiKey:POST"), "{body}");
    call(fx, &reader, Method::DELETE, &format!("/api/apiKey/{main_key}"), None).await.assert_problem(403, "forbidden");
    // A key-managing key makes keys no wider than itself and revokes none wider.
    let manager = make_key(fx, &main, json!(["apiKey:*", "brand:GET"])).await;
    let manager = key_of(&manager, &main.user);
    let wider = make_key(fx, &manager, json!(["*:*"])).await.assert_problem(422, "validation_failed");
    assert_eq!(field_errors(&wider), vec!["grants"]);
    let child = make_key(fx, &manager, json!(["brand:GET"])).await;
    assert_eq!(child.status, 201);
    let child_id = text(&child.records("apiKey")[0]["id"]);
    let body = call(fx, &manager, Method::DELETE, &format!("/api/apiKey/{main_key}"), None).await.assert_problem(403, "forbidden");
    assert!(text(&body["detail"]).contains("allows more"), "{body}");
    assert_eq!(call(fx, &manager, Method::DELETE, &format!("/api/apiKey/{child_id}"), None).await.status, 204);
    assert_eq!(call(fx, &main, Method::GET, "/api/brand?pageSize=1", None).await.status, 200, "the wide key still works");
    // Without grants, a new key gets the type's defaults as far as the making key allows.
    let defaulted = call(fx, &manager, Method::POST, "/api/apiKey", Some(json!({}))).await;
    assert_eq!(defaulted.records("apiKey")[0]["grants"], json!(["apiKey:*", "brand:GET"]));

    // Keys for another user: refused before anything is written, whether it exists or not.
    let (other_user, _) = new_user(fx, json!({"type": "admin"}), None).await;
    let keys_of_other = format!("/api/apiKey/count?fk_user={other_user}");
    let before = count(fx, &admin, &keys_of_other).await;
    for other in [other_user.clone(), "0123456789ABCDEF0123456789ABCDEF".to_string()] {
        let refused = call(fx, &main, Method::POST, "/api/apiKey", Some(json!({"fk_user": other}))).await;
        assert_eq!(field_errors(&refused.assert_problem(422, "validation_failed")), vec!["fk_user"]);
    }
    assert_eq!(count(fx, &admin, &keys_of_other).await, before);

    // At most 50 active keys a user, through the API and the command line alike.
    let active = count(fx, &admin, &format!("/api/apiKey/count?fk_user={user}&revoked=false")).await;
    let mut last = None;
    for _ in active..brandhub_store::accounts::MAX_ACTIVE_KEYS as u64 {
        let made = make_key(fx, &main, json!(["brand:GET"])).await;
        assert_eq!(made.status, 201, "{}", String::from_utf8_lossy(&made.body));
        last = Some(text(&made.records("apiKey")[0]["id"]));
    }
    let body = make_key(fx, &main, json!(["brand:GET"])).await.assert_problem(409, "conflict");
    assert!(text(&body["detail"]).contains("50 active API keys"), "{body}");
    let store = fx.store.clone();
    let email = main.user.clone();
    let cli = fx.on_server(async move { store.create_key(&email, None, None).await }).await;
    assert!(matches!(cli.unwrap_err(), brandhub_store::StoreError::Conflict { .. }));
    assert_eq!(call(fx, &main, Method::DELETE, &format!("/api/apiKey/{}", last.unwrap()), None).await.status, 204);
    assert_eq!(make_key(fx, &main, json!(["brand:GET"])).await.status, 201, "a revoked key frees its place");
}

// A caller remembered from an earlier request writes without a versions read on PostgreSQL:
// the statement that commits its write checks that nothing its authentication depends on
// changed. Revoked in between, its key writes nothing and gets 401, whether the write would
// have succeeded or been refused; another key's write after an unrelated change to the
// users is made once, as that caller now is.
async fn a_key_revoked_after_it_was_remembered_writes_nothing(fx) {
    let admin = demo(fx, "admin");
    let (own, _) = companies(fx).await;
    let (x, key) = new_user(fx, json!({"type": "company", "fk_company": own}), None).await;
    let brand = text(&records(fx, &key, "/api/brand?pageSize=1&fields=id", "brand").await[0]["id"]);
    let create = |code: &str| json!({"fk_brand": brand, "code": code, "title": "Remembered"});
    let first = format!("REMEMBERED-{}", unique());
    let made = call(fx, &key, Method::POST, "/api/product", Some(create(&first))).await;
    assert_eq!(made.status, 201, "{}", String::from_utf8_lossy(&made.body));
    let product = format!("/api/product/{}", text(&made.records("product")[0]["id"]));
    assert_eq!(call(fx, &key, Method::PATCH, &product, Some(json!({"title": "Kept"}))).await.status, 200);

    let key_id = text(&records(fx, &admin, &format!("/api/apiKey?fk_user={x}&fields=id"), "apiKey").await[0]["id"]);
    assert_eq!(call(fx, &admin, Method::DELETE, &format!("/api/apiKey/{key_id}"), None).await.status, 204);
    let late = format!("REVOKED-{}", unique());
    for answer in [
        call(fx, &key, Method::PATCH, &product, Some(json!({"title": "Revoked"}))).await,
        call(fx, &key, Method::POST, "/api/product", Some(create(&late))).await,
        call(fx, &key, Method::PATCH, "/api/product/0123456789ABCDEF0123456789ABCDEF", Some(json!({"title": "Revoked"}))).await,
        call(fx, &key, Method::DELETE, &product, None).await,
    ] {
        answer.assert_problem(401, "unauthenticated");
    }
    assert_eq!(records(fx, &admin, &product, "product").await[0]["title"], "Kept", "nothing written");
    assert_eq!(count(fx, &admin, &format!("/api/product/count?code={late}")).await, 0);

    // Another key of the user, remembered; then the users change elsewhere: its writes are
    // made once, as the caller it still is, and its refusals are its own.
    let other = call(fx, &admin, Method::POST, "/api/apiKey", Some(json!({"fk_user": x}))).await;
    let other = Who { user: key.user.clone(), key: text(&other.records("apiKey")[0]["secret"]) };
    assert_eq!(call(fx, &other, Method::PATCH, &product, Some(json!({"title": "Again"}))).await.status, 200);
    for step in 0..3 {
        new_user(fx, json!({"type": "company", "fk_company": own}), None).await;
        let answer = match step {
            0 => call(fx, &other, Method::PATCH, &product, Some(json!({"title": "After a change"}))).await,
            1 => call(fx, &other, Method::POST, "/api/product", Some(create(&format!("{first}-AGAIN")))).await,
            _ => call(fx, &other, Method::PATCH, "/api/product/0123456789ABCDEF0123456789ABCDEF", Some(json!({"title": "x"}))).await,
        };
        match step {
            0 => assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body)),
            1 => assert_eq!(answer.status, 201, "{}", String::from_utf8_lossy(&answer.body)),
            _ => {
                answer.assert_problem(404, "not_found");
            }
        }
    }
    assert_eq!(records(fx, &admin, &product, "product").await[0]["title"], "After a change");
    assert_eq!(count(fx, &admin, &format!("/api/product/count?code={first}-AGAIN")).await, 1, "made once");
}

}

/// Rights are judged again when a file is processed. A server without workers takes the
/// uploads (they stay pending); the uploaders' rights change; then a server with workers
/// processes them.
async fn rights_are_judged_again_at_processing(db: Db) {
    let fx = common::start_fixture_with(db, "authority_late", common::SCALE, |settings| {
        settings.uploads.workers.workers = 0
    });
    let fx = &fx;
    let admin = demo(fx, "admin");
    let (own, foreign) = companies(fx).await;
    let brand = text(
        &records(
            fx,
            &admin,
            &format!("/api/brand?fk_company={own}&pageSize=1&fields=id"),
            "brand",
        )
        .await[0]["id"],
    );
    let barcode = text(
        &records(
            fx,
            &admin,
            &format!("/api/variant?variant_product.fk_brand={brand}&pageSize=1&fields=barcode"),
            "variant",
        )
        .await[0]["barcode"],
    );
    let warehouse = text(
        &records(
            fx,
            &admin,
            &format!("/api/warehouse?fk_company={own}&pageSize=1&fields=id"),
            "warehouse",
        )
        .await[0]["id"],
    );
    let product = |title: &str| {
        xlsx(&[
            row(&["Product Code", "Title", "Barcode"]),
            row(&[
                &format!("LATE-{}", unique()),
                title,
                &format!("29{:011}", unique() % 100_000_000_000),
            ]),
        ])
    };
    let pending = |response: Response| {
        assert_eq!(
            response.status,
            201,
            "{}",
            String::from_utf8_lossy(&response.body)
        );
        let file = &response.records("file")[0];
        assert_eq!(file["status"], "pending");
        text(&file["id"])
    };

    // A company user who then moves to another company; one who is then disabled; a
    // warehouse user who then moves to another warehouse; and one who keeps its rights.
    let (mover, mover_key) =
        new_user(fx, json!({"type": "company", "fk_company": own}), None).await;
    let moved_file = pending(
        upload(
            fx,
            &mover_key,
            "",
            &format!("product,{brand}"),
            &product("Moved away"),
        )
        .await,
    );
    let (quitter, quitter_key) =
        new_user(fx, json!({"type": "company", "fk_company": own}), None).await;
    let disabled_file = pending(
        upload(
            fx,
            &quitter_key,
            "",
            &format!("product,{brand}"),
            &product("Disabled"),
        )
        .await,
    );
    let (keeper, keeper_key) = new_user(
        fx,
        json!({"type": "warehouse", "fk_warehouse": warehouse}),
        None,
    )
    .await;
    let stock = xlsx(&[row(&["Barcode", "In Stock"]), row(&[&barcode, "4321"])]);
    let stock_file = pending(
        upload(
            fx,
            &keeper_key,
            "",
            &format!("stock,{brand},{warehouse}"),
            &stock,
        )
        .await,
    );
    let (_, stayer_key) = new_user(fx, json!({"type": "company", "fk_company": own}), None).await;
    let kept_file = pending(
        upload(
            fx,
            &stayer_key,
            "",
            &format!("product,{brand}"),
            &product("Kept"),
        )
        .await,
    );

    assert_eq!(
        patch_user(fx, &mover, json!({"fk_company": foreign}))
            .await
            .status,
        200
    );
    assert_eq!(
        patch_user(fx, &quitter, json!({"status": "disabled"}))
            .await
            .status,
        200
    );
    let elsewhere = text(
        &records(
            fx,
            &admin,
            &format!("/api/warehouse?fk_company={foreign}&pageSize=1&fields=id"),
            "warehouse",
        )
        .await
        .first()
        .cloned()
        .unwrap_or_else(|| json!({"id": ""}))["id"],
    );
    let elsewhere = if elsewhere.is_empty() {
        records(
            fx,
            &admin,
            "/api/warehouse?pageSize=1000&fields=id",
            "warehouse",
        )
        .await
        .iter()
        .map(|w| text(&w["id"]))
        .find(|w| *w != warehouse)
        .unwrap()
    } else {
        elsewhere
    };
    assert_eq!(
        patch_user(fx, &keeper, json!({"fk_warehouse": elsewhere}))
            .await
            .status,
        200
    );

    // Now a server with workers processes them.
    let store = fx.store.clone();
    let uploads = brandhub_server::Uploads {
        files: fx.files.clone(),
        max_upload: common::MAX_UPLOAD,
        workers: brandhub_ingest::WorkerSettings {
            job_timeout: std::time::Duration::from_secs(30),
            ..Default::default()
        },
    };
    let dir = tempfile::tempdir().unwrap();
    let tls = dir.path().join("tls");
    let _running = fx
        .on_server(async move {
            let settings = brandhub_server::Settings::new(
                "127.0.0.1:0".parse().unwrap(),
                Some(brandhub_server::tls::TlsSource::SelfSigned { dir: tls }),
                uploads,
            );
            brandhub_server::start(settings, store)
                .await
                .expect("a server with workers starts")
        })
        .await;
    for (id, reason) in [
        (
            moved_file,
            "company user may not write product and variant records of brand",
        ),
        (disabled_file, "is disabled"),
        (
            stock_file,
            "warehouse user may not write stock records of warehouse",
        ),
    ] {
        let file = finished(fx, &admin, &id).await;
        assert_eq!(file["status"], "failed", "{file}");
        let error = text(&file["detail"]["error"]);
        assert!(error.contains(reason), "{error}");
        assert_eq!(file["detail"]["rowsApplied"], 0);
    }
    assert_eq!(
        count(
            fx,
            &admin,
            &format!("/api/product/count?fk_brand={brand}&title=Moved away")
        )
        .await,
        0,
        "nothing applied"
    );
    let level = records(
        fx,
        &admin,
        &format!(
            "/api/stock?fk_warehouse={warehouse}&stock_variant.barcode={barcode}&fields=inStock"
        ),
        "stock",
    )
    .await;
    assert!(level.iter().all(|s| s["inStock"] != 4321), "{level:?}");
    let kept = finished(fx, &admin, &kept_file).await;
    assert_eq!(kept["status"], "processed", "{kept}");
    assert_eq!(
        count(
            fx,
            &admin,
            &format!("/api/product/count?fk_brand={brand}&title=Kept")
        )
        .await,
        1
    );
}

/// The file once processed or failed (the workers of another server process it; its status
/// is polled, with a generous deadline for a loaded machine).
async fn finished(fx: &Fixture, admin: &Who, id: &str) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let file = records(fx, admin, &format!("/api/file/{id}"), "file").await[0].clone();
        if file["status"] == "processed" || file["status"] == "failed" {
            return file;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the file was not processed: {file}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

mod late {
    use super::*;

    #[tokio::test]
    async fn sqlite() {
        rights_are_judged_again_at_processing(Db::Sqlite).await;
    }

    #[tokio::test]
    async fn postgres() {
        if common::postgres_or_skip().is_none() {
            return;
        }
        rights_are_judged_again_at_processing(Db::Postgres).await;
    }
}
