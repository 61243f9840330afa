//! Keys and users over the API (docs/API.md, "Transport and authentication" and "Writes: users and keys"), restricted properties ("Scope: who sees what"), and the errors
//! around them: wrong, revoked and foreign keys, disabled users, missing grants, 429.

mod common;

use brandhub_server::ratelimit::Limit;
use brandhub_server::tls::TlsSource;
use brandhub_server::{Settings, start};
use serde_json::{Value, json};

/// A request as some user, with an optional JSON body.
async fn call(
    fx: &common::Fixture,
    method: reqwest::Method,
    path: &str,
    user: &str,
    key: &str,
    body: Option<Value>,
) -> common::Response {
    common::send(
        fx,
        &fx.base,
        method,
        path,
        common::As::Key(user, key),
        &[],
        body.as_ref(),
    )
    .await
}

fn user_of<'a>(fx: &'a common::Fixture, user_type: &str) -> (&'a str, &'a str) {
    let credential = fx.credential(user_type);
    (credential.email.as_str(), credential.secret.as_str())
}

on_both_backends! { "accounts";

async fn users_create_list_and_revoke_their_own_keys(fx) {
    let (email, secret) = user_of(fx, "company");
    let created = call(fx, reqwest::Method::POST, "/api/apiKey", email, secret, Some(json!({"name": "stock reader", "grants": ["stock:GET"]}))).await;
    assert_eq!(created.status, 201, "{}", String::from_utf8_lossy(&created.body));
    let record = &created.json()["response"]["apiKey"][0];
    let key_id = record["id"].as_str().unwrap().to_string();
    assert_eq!(created.header("location").unwrap(), format!("/api/apiKey/{key_id}"));
    let new_secret = record["secret"].as_str().expect("the secret is shown once").to_string();
    assert_eq!(record["prefix"], &new_secret[..8]);
    assert_eq!(record["grants"], json!(["stock:GET"]));
    assert!(record.get("secretHash").is_none());

    assert_eq!(call(fx, reqwest::Method::GET, "/api/stock?pageSize=1", email, &new_secret, None).await.status, 200);
    let forbidden = call(fx, reqwest::Method::GET, "/api/order", email, &new_secret, None).await;
    let body = forbidden.assert_problem(403, "forbidden");
    assert!(body["detail"].as_str().unwrap().contains("order:GET"), "{body}");

    let listed = call(fx, reqwest::Method::GET, &format!("/api/apiKey/{key_id}"), email, secret, None).await;
    assert_eq!(listed.status, 200);
    assert!(listed.records("apiKey")[0].get("secret").is_none(), "the secret is never shown again");
    let mine = call(fx, reqwest::Method::GET, "/api/apiKey?fields=fk_user&pageSize=1000", email, secret, None).await.records("apiKey");
    let own_id = fx.credential("company").user_id.clone();
    let mine_ids: Vec<&str> = mine.iter().map(|k| k["id"].as_str().unwrap()).collect();
    assert!(mine_ids.contains(&key_id.as_str()) && mine_ids.contains(&fx.credential("company").key_id.as_str()), "{mine_ids:?}");
    // A company user sees its own keys and those of the users of its companies (whose keys
    // it may write, docs/API.md, "Writes: users and keys"); a host user only its own.
    let colleagues: Vec<Value> = call(fx, reqwest::Method::GET, "/api/user?fields=id&pageSize=1000", email, secret, None).await.records("user").iter().map(|u| u["id"].clone()).collect();
    assert!(colleagues.contains(&json!(own_id)));
    assert!(mine.iter().all(|k| colleagues.contains(&k["fk_user"])), "a company user lists keys of its companies' users only");
    let (host_email, host_secret) = user_of(fx, "host");
    let host_keys = call(fx, reqwest::Method::GET, "/api/apiKey?fields=fk_user&pageSize=1000", host_email, host_secret, None).await.records("apiKey");
    assert!(!host_keys.is_empty());
    assert!(host_keys.iter().all(|k| k["fk_user"] == fx.credential("host").user_id.as_str()), "a host user lists only its own keys");
    let (admin_email, admin_secret) = user_of(fx, "admin");
    let all = call(fx, reqwest::Method::GET, "/api/apiKey/count", admin_email, admin_secret, None).await.json()["count"].as_u64().unwrap();
    assert!(all > mine.len() as u64, "an admin sees every key");

    let (host_email, host_secret) = user_of(fx, "host");
    call(fx, reqwest::Method::DELETE, &format!("/api/apiKey/{key_id}"), host_email, host_secret, None).await.assert_problem(404, "not_found");
    let revoked = call(fx, reqwest::Method::DELETE, &format!("/api/apiKey/{key_id}"), email, secret, None).await;
    assert_eq!(revoked.status, 204);
    call(fx, reqwest::Method::GET, "/api/stock", email, &new_secret, None).await.assert_problem(401, "unauthenticated");
}

async fn company_users_make_the_keys_of_the_users_of_their_companies(fx) {
    let (email, secret) = user_of(fx, "company");
    let own = fx.credential("company").user_id.clone();
    let me = call(fx, reqwest::Method::GET, &format!("/api/user/{own}?fields=fk_company"), email, secret, None).await.records("user");
    let company = me[0]["fk_company"].as_str().unwrap().to_string();
    let colleague_email = format!("colleague-{}-{:?}@example.test", std::process::id(), fx.db).to_lowercase();
    let colleague = call(fx, reqwest::Method::POST, "/api/user", email, secret,
        Some(json!({"name": "Colleague", "email": colleague_email, "type": "company", "fk_company": company}))).await;
    assert_eq!(colleague.status, 201, "{}", String::from_utf8_lossy(&colleague.body));
    let colleague = colleague.records("user")[0]["id"].as_str().unwrap().to_string();

    let key = call(fx, reqwest::Method::POST, "/api/apiKey", email, secret, Some(json!({"fk_user": colleague, "name": "for a colleague", "grants": ["stock:GET"]}))).await;
    assert_eq!(key.status, 201, "{}", String::from_utf8_lossy(&key.body));
    let record = key.records("apiKey")[0].clone();
    assert_eq!(record["fk_user"], colleague.as_str());
    let key_id = record["id"].as_str().unwrap().to_string();
    let key_secret = record["secret"].as_str().unwrap().to_string();
    assert_eq!(call(fx, reqwest::Method::GET, "/api/stock?pageSize=1", &colleague_email, &key_secret, None).await.status, 200, "the key works for its user");
    assert_eq!(call(fx, reqwest::Method::GET, &format!("/api/apiKey/{key_id}"), email, secret, None).await.status, 200);

    // Never wider than the key making it; never for a user of another company; a host user
    // makes keys for itself only.
    let narrow = call(fx, reqwest::Method::POST, "/api/apiKey", email, secret, Some(json!({"name": "key maker", "grants": ["apiKey:*", "stock:GET"]}))).await;
    assert_eq!(narrow.status, 201, "{}", String::from_utf8_lossy(&narrow.body));
    let narrow_secret = narrow.records("apiKey")[0]["secret"].as_str().unwrap().to_string();
    let wide = call(fx, reqwest::Method::POST, "/api/apiKey", email, &narrow_secret, Some(json!({"fk_user": colleague, "grants": ["product:GET"]}))).await;
    assert_eq!(wide.assert_problem(422, "validation_failed")["errors"][0]["field"], "grants");
    let within = call(fx, reqwest::Method::POST, "/api/apiKey", email, &narrow_secret, Some(json!({"fk_user": colleague}))).await;
    assert_eq!(within.status, 201, "{}", String::from_utf8_lossy(&within.body));
    let grants = within.records("apiKey")[0]["grants"].clone();
    assert!(grants.as_array().unwrap().contains(&json!("stock:GET")) && !grants.as_array().unwrap().contains(&json!("*:*")), "the defaults as far as the making key allows them: {grants}");
    let admin_id = fx.credential("admin").user_id.clone();
    let foreign = call(fx, reqwest::Method::POST, "/api/apiKey", email, secret, Some(json!({"fk_user": admin_id}))).await;
    assert_eq!(foreign.assert_problem(422, "validation_failed")["errors"][0]["field"], "fk_user");
    let (host_email, host_secret) = user_of(fx, "host");
    let by_host = call(fx, reqwest::Method::POST, "/api/apiKey", host_email, host_secret, Some(json!({"fk_user": colleague}))).await;
    assert_eq!(by_host.assert_problem(422, "validation_failed")["errors"][0]["field"], "fk_user");
    call(fx, reqwest::Method::DELETE, &format!("/api/apiKey/{key_id}"), host_email, host_secret, None).await.assert_problem(404, "not_found");

    assert_eq!(call(fx, reqwest::Method::DELETE, &format!("/api/apiKey/{key_id}"), email, secret, None).await.status, 204);
    call(fx, reqwest::Method::GET, "/api/stock", &colleague_email, &key_secret, None).await.assert_problem(401, "unauthenticated");
}

async fn a_company_user_never_makes_lists_or_revokes_the_keys_of_an_admin_of_its_company(fx) {
    // An admin promoted from a company user keeps `fk_company`: the company's users must
    // still not reach that admin's keys (a key made for it would act as admin).
    let (email, secret) = user_of(fx, "company");
    let (admin_email, admin_secret) = user_of(fx, "admin");
    let own = fx.credential("company").user_id.clone();
    let company = call(fx, reqwest::Method::GET, &format!("/api/user/{own}?fields=fk_company"), email, secret, None).await.records("user")[0]["fk_company"].as_str().unwrap().to_string();
    let promoted_email = format!("promoted-{}-{:?}@example.test", common::unique_number(), fx.db).to_lowercase();
    let promoted = call(fx, reqwest::Method::POST, "/api/user", admin_email, admin_secret,
        Some(json!({"name": "Promoted", "email": promoted_email, "type": "company", "fk_company": company}))).await;
    assert_eq!(promoted.status, 201, "{}", String::from_utf8_lossy(&promoted.body));
    let promoted = promoted.records("user")[0]["id"].as_str().unwrap().to_string();
    let promotion = call(fx, reqwest::Method::PATCH, &format!("/api/user/{promoted}"), admin_email, admin_secret, Some(json!({"type": "admin"}))).await;
    assert_eq!(promotion.status, 200, "{}", String::from_utf8_lossy(&promotion.body));
    assert_eq!(promotion.records("user")[0]["fk_company"], company.as_str(), "a promotion leaves the company behind");
    let admins_key = call(fx, reqwest::Method::POST, "/api/apiKey", admin_email, admin_secret, Some(json!({"fk_user": promoted, "name": "the admin's own"}))).await;
    assert_eq!(admins_key.status, 201, "{}", String::from_utf8_lossy(&admins_key.body));
    let admins_key = admins_key.records("apiKey")[0]["id"].as_str().unwrap().to_string();

    let minted = call(fx, reqwest::Method::POST, "/api/apiKey", email, secret, Some(json!({"fk_user": promoted}))).await;
    let body = minted.assert_problem(422, "validation_failed");
    assert_eq!(body["errors"][0]["field"], "fk_user", "{body}");
    let narrow = call(fx, reqwest::Method::POST, "/api/apiKey", email, secret, Some(json!({"fk_user": promoted, "grants": ["brand:GET"]}))).await;
    assert_eq!(narrow.assert_problem(422, "validation_failed")["errors"][0]["field"], "fk_user");
    let listed = call(fx, reqwest::Method::GET, &format!("/api/apiKey?fk_user={promoted}"), email, secret, None).await;
    assert_eq!(listed.status, 200);
    assert!(listed.records("apiKey").is_empty(), "a company user lists no admin's keys: {:?}", listed.records("apiKey"));
    let counted = call(fx, reqwest::Method::GET, &format!("/api/apiKey/count?fk_user={promoted}"), email, secret, None).await;
    assert_eq!(counted.json()["count"], 0);
    call(fx, reqwest::Method::GET, &format!("/api/apiKey/{admins_key}"), email, secret, None).await.assert_problem(404, "not_found");
    call(fx, reqwest::Method::DELETE, &format!("/api/apiKey/{admins_key}"), email, secret, None).await.assert_problem(404, "not_found");
    let still = call(fx, reqwest::Method::GET, &format!("/api/apiKey/{admins_key}?fields=revoked"), admin_email, admin_secret, None).await;
    assert_eq!(still.records("apiKey")[0]["revoked"], false, "the admin's key was not revoked");
}

async fn a_key_is_never_wider_than_its_owner_may_have(fx) {
    let (email, secret) = user_of(fx, "host");
    let wide = call(fx, reqwest::Method::POST, "/api/apiKey", email, secret, Some(json!({"grants": ["*:*"]}))).await;
    let body = wide.assert_problem(422, "validation_failed");
    assert_eq!(body["errors"][0]["field"], "grants");
    let bad = call(fx, reqwest::Method::POST, "/api/apiKey", email, secret, Some(json!({"grants": ["nothing:GET", 7]}))).await;
    bad.assert_problem(422, "validation_failed");
    let admin_id = fx.credential("admin").user_id.clone();
    let foreign = call(fx, reqwest::Method::POST, "/api/apiKey", email, secret, Some(json!({"fk_user": admin_id}))).await;
    let body = foreign.assert_problem(422, "validation_failed");
    assert_eq!(body["errors"][0]["field"], "fk_user");
    let read_only = call(fx, reqwest::Method::POST, "/api/apiKey", email, secret, Some(json!({"revoked": true, "prefix": "x"}))).await;
    let body = read_only.assert_problem(422, "validation_failed");
    assert_eq!(body["errors"].as_array().unwrap().len(), 2, "every problem is listed: {body}");
    call(fx, reqwest::Method::POST, "/api/apiKey", email, secret, Some(json!({"colour": "red"}))).await.assert_problem(400, "unknown_field");
}

async fn admins_create_change_and_disable_users(fx) {
    let (admin_email, admin_secret) = user_of(fx, "admin");
    let company = fx.get("/api/company?code=CMP0003&fields=id").await.ids("company")[0].clone();
    let created = call(fx, reqwest::Method::POST, "/api/user", admin_email, admin_secret,
        Some(json!({"name": "Søren Ops", "email": "soren@example.test", "type": "company", "fk_company": company, "detail": {"lang": "da"}}))).await;
    assert_eq!(created.status, 201, "{}", String::from_utf8_lossy(&created.body));
    let user = &created.json()["response"]["user"][0];
    let user_id = user["id"].as_str().unwrap().to_string();
    assert_eq!(user["status"], "active");
    assert_eq!(user["detail"]["lang"], "da");
    assert_eq!(user["fk_host"], "00000000000000000000000000000000");

    let again = call(fx, reqwest::Method::POST, "/api/user", admin_email, admin_secret,
        Some(json!({"name": "Other", "email": "SOREN@example.test", "type": "admin"}))).await;
    again.assert_problem(409, "conflict");
    let invalid = call(fx, reqwest::Method::POST, "/api/user", admin_email, admin_secret,
        Some(json!({"name": "", "email": "nope", "type": "company"}))).await;
    let body = invalid.assert_problem(422, "validation_failed");
    let fields: Vec<&str> = body["errors"].as_array().unwrap().iter().map(|e| e["field"].as_str().unwrap()).collect();
    assert_eq!(fields, vec!["email", "fk_company", "name"], "{body}");

    // The new user gets a key from the admin, and uses it.
    let key = call(fx, reqwest::Method::POST, "/api/apiKey", admin_email, admin_secret, Some(json!({"fk_user": user_id, "name": "søren"}))).await;
    assert_eq!(key.status, 201, "{}", String::from_utf8_lossy(&key.body));
    let secret = key.json()["response"]["apiKey"][0]["secret"].as_str().unwrap().to_string();
    assert_eq!(key.json()["response"]["apiKey"][0]["grants"], json!(["*:*"]), "the owner's defaults");
    assert_eq!(call(fx, reqwest::Method::GET, "/api/brand", "soren@example.test", &secret, None).await.status, 200);

    let renamed = call(fx, reqwest::Method::PATCH, &format!("/api/user/{user_id}"), admin_email, admin_secret, Some(json!({"name": "Søren Admin"}))).await;
    assert_eq!(renamed.status, 200);
    assert_eq!(renamed.records("user")[0]["name"], "Søren Admin");
    let unchangeable = call(fx, reqwest::Method::PATCH, &format!("/api/user/{user_id}"), admin_email, admin_secret, Some(json!({"email": "x@y.test", "type": "host"}))).await;
    let body = unchangeable.assert_problem(422, "validation_failed");
    let fields: Vec<&str> = body["errors"].as_array().unwrap().iter().map(|e| e["field"].as_str().unwrap()).collect();
    assert_eq!(fields, ["email", "fk_host"], "email cannot change, and a host user needs a host: every problem at once: {body}");

    let disabled = call(fx, reqwest::Method::PATCH, &format!("/api/user/{user_id}"), admin_email, admin_secret, Some(json!({"status": "disabled"}))).await;
    assert_eq!(disabled.status, 200);
    call(fx, reqwest::Method::GET, "/api/brand", "soren@example.test", &secret, None).await.assert_problem(401, "unauthenticated");
    call(fx, reqwest::Method::PATCH, &format!("/api/user/{user_id}"), admin_email, admin_secret, Some(json!({"status": "active"}))).await;
    assert_eq!(call(fx, reqwest::Method::GET, "/api/brand", "soren@example.test", &secret, None).await.status, 200);
    let host_without_host = call(fx, reqwest::Method::PATCH, &format!("/api/user/{user_id}"), admin_email, admin_secret, Some(json!({"type": "host"}))).await;
    let body = host_without_host.assert_problem(422, "validation_failed");
    assert_eq!(body["errors"][0]["field"], "fk_host");

    let (email, secret) = user_of(fx, "warehouse");
    call(fx, reqwest::Method::PATCH, &format!("/api/user/{user_id}"), email, secret, Some(json!({"name": "x"}))).await.assert_problem(403, "forbidden");
    call(fx, reqwest::Method::PATCH, "/api/user/0123456789ABCDEF0123456789ABCDEF", admin_email, admin_secret, Some(json!({"name": "x"}))).await.assert_problem(404, "not_found");
    call(fx, reqwest::Method::POST, "/api/orderItem", admin_email, admin_secret, Some(json!({}))).await.assert_problem(405, "method_not_allowed");
}

async fn restricted_properties_do_not_exist_for_the_restricted(fx) {
    let (email, secret) = user_of(fx, "warehouse");
    let orders = call(fx, reqwest::Method::GET, "/api/order?pageSize=5", email, secret, None).await.records("order");
    assert_eq!(orders.len(), 5, "the warehouse has orders to show");
    for order in &orders {
        assert!(order["detail"].get("net").is_none(), "{order}");
        let items = order["order_orderItem"].as_array().unwrap();
        assert!(!items.is_empty(), "every demo order has items: {order}");
        for item in items {
            assert!(item.get("itemPrice").is_none() && item.get("lineGross").is_none(), "{item}");
        }
    }
    for path in [
        "/api/order?detail.net=1",
        "/api/order?order_by=detail.gross",
        "/api/order?fields=detail.vat",
        "/api/order?exclude=detail.shippingTax",
        "/api/orderItem?lineNet=1",
        "/api/order?order_orderItem.itemPrice=1",
    ] {
        call(fx, reqwest::Method::GET, path, email, secret, None).await.assert_problem(400, "unknown_field");
    }
    let condition = json!({"query": [{"field": "detail.net", "operator": ">", "value": 1}]});
    call(fx, reqwest::Method::POST, "/api/order/query", email, secret, Some(condition)).await.assert_problem(400, "unknown_field");

    let (email, secret) = user_of(fx, "host");
    let prices = call(fx, reqwest::Method::GET, "/api/price?pageSize=3", email, secret, None).await.records("price");
    assert_eq!(prices.len(), 3, "the host has prices to show");
    assert!(prices.iter().all(|p| p.get("fk_file").is_none() && p.get("price_file").is_none()), "{prices:?}");
    for path in ["/api/price?fk_file=x", "/api/product?detail.importFile=x", "/api/brandStore?order_by=detail.adjustValue", "/api/stock?stock_warehouse.name=x", "/api/price?fields=price_file.fileName"] {
        call(fx, reqwest::Method::GET, path, email, secret, None).await.assert_problem(400, "unknown_field");
    }
    // A relation into what the host cannot see still shows as a reference.
    let stock = call(fx, reqwest::Method::GET, "/api/stock?pageSize=2", email, secret, None).await.records("stock");
    assert_eq!(stock[0]["stock_warehouse"], json!({"__KEY": stock[0]["fk_warehouse"]}));
}

async fn keys_of_another_user_or_of_a_disabled_user_fail(fx) {
    let company = fx.credential("company");
    let host = fx.credential("host");
    call(fx, reqwest::Method::GET, "/api/brand", &company.email, &host.secret, None).await.assert_problem(401, "unauthenticated");
    call(fx, reqwest::Method::GET, "/api/brand", &host.user_id, &host.secret, None).await;
    assert_eq!(call(fx, reqwest::Method::GET, "/api/brand", &host.user_id, &host.secret, None).await.status, 200, "the id works as user name");
}

async fn limits_answer_429_with_retry_after(fx) {
    let store = fx.store.clone();
    let uploads = fx.side_uploads();
    let dir = std::env::temp_dir().join(format!("brandhub-limits-{}-{:?}", std::process::id(), fx.db));
    let (address, cert, _running) = fx
        .on_server(async move {
            let mut settings = Settings::new("127.0.0.1:0".parse().unwrap(), Some(TlsSource::SelfSigned { dir }), uploads);
            settings.key_limit = Limit::new(1.0, 2.0);
            settings.failure_limit = Limit::new(0.5, 2.0);
            let running = start(settings, store).await.expect("a limited server starts");
            (running.address, running.certificate_pem.clone().unwrap(), running)
        })
        .await;
    let client = common::client_trusting(&cert);
    let admin = fx.credential("admin");
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let response = client.get(format!("https://{address}/api/host?pageSize=1")).basic_auth(&admin.email, Some(&admin.secret)).send().await.unwrap();
        statuses.push((response.status().as_u16(), response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string())));
    }
    assert_eq!(statuses[0].0, 200);
    assert_eq!(statuses[1].0, 200);
    assert_eq!(statuses[2], (429, Some("1".to_string())), "{statuses:?}");

    let mut failures = Vec::new();
    for _ in 0..3 {
        let response = client.get(format!("https://{address}/api/host")).basic_auth(&admin.email, Some("bhk_wrongwrongwrongwrong")).send().await.unwrap();
        failures.push(response.status().as_u16());
    }
    assert_eq!(failures, vec![401, 401, 429]);
    let blocked = client.get(format!("https://{address}/api/host")).basic_auth(&admin.email, Some(&admin.secret)).send().await.unwrap();
    assert_eq!(blocked.status(), 429, "an address that failed too often waits, even with the right key");
    let retry: u64 = blocked.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=2).contains(&retry));
    let body: Value = blocked.json().await.unwrap();
    assert_eq!(body["code"], "rate_limited");
}

}
