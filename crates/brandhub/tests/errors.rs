//! Every error a read can produce (docs/API.md, "Errors"), provoked over HTTPS on both backends, and
//! garbage input that must never reach a 500.

mod common;

use brandhub_server::{Settings, start};
use proptest::prelude::*;
use serde_json::json;

async fn raw(
    fx: &common::Fixture,
    method: reqwest::Method,
    path: &str,
    body: Option<(&str, Vec<u8>)>,
) -> common::Response {
    let admin = fx.credential("admin");
    let mut request = fx
        .client()
        .request(method, format!("{}{path}", fx.base))
        .basic_auth(&admin.email, Some(&admin.secret));
    if let Some((content_type, bytes)) = body {
        request = request.header("content-type", content_type).body(bytes);
    }
    let response = request.send().await.expect("the server answers");
    common::Response::read(response).await
}

on_both_backends! { "errors";

async fn bad_paging_and_ordering_are_invalid_parameter(fx) {
    for path in [
        "/api/stock?page=0",
        "/api/stock?pageSize=many",
        "/api/stock?page=1&page=2",
        "/api/stock?order_by=;",
        "/api/stock?order_by=%3EinStock%3C",
        "/api/stock?fields=",
        "/api/stock?stock_variant=1",
        "/api/stock?stock_variant.detail=1",
        "/api/order?order_by=order_orderItem.status",
    ] {
        let body = fx.get(path).await.assert_problem(400, "invalid_parameter");
        assert!(body["detail"].as_str().unwrap().len() > 20, "{path}: {body}");
    }
}

async fn unknown_names_are_unknown_field_with_the_valid_names(fx) {
    let body = fx.get("/api/variant?barcod=1").await.assert_problem(400, "unknown_field");
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains("Did you mean 'barcode'"), "{detail}");
    assert!(detail.contains("colour") && detail.contains("variant_product"), "{detail}");
    assert_eq!(body["field"], "barcod");
    for path in [
        "/api/stock?order_by=nope",
        "/api/stock?fields=inStock,nope",
        "/api/stock?exclude=stock_variant.nope",
        "/api/stock?stock_variant.variant_product.nope=1",
        "/api/order?detail.nope=1",
    ] {
        fx.get(path).await.assert_problem(400, "unknown_field");
    }
    let condition = json!({"query": [{"field": "stock_variant.nope", "operator": "=", "value": "1"}]});
    fx.post("/api/stock/query", &condition).await.assert_problem(400, "unknown_field");
}

async fn values_that_do_not_fit_are_invalid_value(fx) {
    for path in [
        "/api/stock?inStock=lots",
        "/api/stock?lastUpdate=yesterday",
        "/api/stock?lastUpdate=2026-02-30",
        "/api/variant?vatable=maybe",
        "/api/variant?rrp=NaN",
    ] {
        let body = fx.get(path).await.assert_problem(400, "invalid_value");
        assert!(body["field"].is_string(), "{path}");
    }
    let wildcard = json!({"query": [{"field": "barcode", "operator": "<", "value": "501@"}]});
    fx.post("/api/variant/count", &wildcard).await.assert_problem(400, "invalid_value");
}

async fn malformed_bodies_are_invalid_query(fx) {
    for body in [
        json!({"query": [], "querywitharray": {"field": "status", "values": ["a"]}}),
        json!({"nonsense": true}),
        json!({"query": [{"field": "status", "operator": "~", "value": "a"}]}),
        json!({"query": [{"field": "status", "operator": "=", "value": "a"}, {"field": "status", "operator": "=", "value": "b"}]}),
        json!({"query": [{"field": "status", "operator": "=", "value": "a", "conjunction": "&"}]}),
        json!({"query": [{"field": "status", "operator": "=", "value": {"nested": 1}}]}),
        json!({"query": [{"field": "order_orderItem.orderItem_variant.vatable", "operator": ">", "value": "true"}]}),
        json!([1, 2, 3]),
    ] {
        fx.post("/api/order/query", &body).await.assert_problem(400, "invalid_query");
    }
    let truncated = raw(fx, reqwest::Method::POST, "/api/order/query", Some(("application/json", b"{\"query\": [".to_vec()))).await;
    truncated.assert_problem(400, "invalid_query");
    let too_many: Vec<_> = (0..101).map(|i| json!({"field": "status", "operator": "=", "value": "a", "conjunction": if i == 0 { "" } else { "|" }})).collect();
    fx.post("/api/order/count", &json!({"query": too_many})).await.assert_problem(400, "invalid_query");
}

async fn missing_or_wrong_credentials_are_unauthenticated(fx) {
    let client = fx.client();
    let response = client.get(format!("{}/api/stock", fx.base)).send().await.unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(response.headers()["www-authenticate"], "Basic realm=\"brandhub\"");
    assert!(response.headers().contains_key("x-request-id"));
    let admin = fx.credential("admin");
    let company = fx.credential("company");
    for (user, key) in [
        (admin.email.as_str(), "bhk_wrongwrongwrongwrongwrongwrong"),
        ("nobody@demo.brandhub.test", admin.secret.as_str()),
        (company.email.as_str(), admin.secret.as_str()),
        (admin.email.as_str(), "short"),
    ] {
        let response = client.get(format!("{}/api/stock", fx.base)).basic_auth(user, Some(key)).send().await.unwrap();
        assert_eq!(response.status(), 401, "{user}");
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["code"], "unauthenticated");
    }
    let response = client.get(format!("{}/api/stock", fx.base)).header("authorization", "Bearer abc").send().await.unwrap();
    assert_eq!(response.status(), 401);
    // The user name may be the email in any case, or the user id.
    let by_id = client.get(format!("{}/api/stock?pageSize=1", fx.base)).basic_auth(&admin.user_id, Some(&admin.secret)).send().await.unwrap();
    assert_eq!(by_id.status(), 200);
    let shouted = client.get(format!("{}/api/stock?pageSize=1", fx.base)).basic_auth(admin.email.to_uppercase(), Some(&admin.secret)).send().await.unwrap();
    assert_eq!(shouted.status(), 200);
}

async fn a_key_without_the_grant_is_forbidden_and_a_revoked_key_fails(fx) {
    let store = fx.store.clone();
    let email = fx.credential("admin").email.clone();
    let key = fx
        .on_server(async move { store.create_key(&email, Some("orders only"), Some(&["order:GET".to_string()])).await })
        .await
        .expect("the key is created");
    let client = fx.client();
    let admin = fx.credential("admin");
    let orders = client.get(format!("{}/api/order?pageSize=1", fx.base)).basic_auth(&admin.email, Some(&key.secret)).send().await.unwrap();
    assert_eq!(orders.status(), 200);
    let stock = client.get(format!("{}/api/stock", fx.base)).basic_auth(&admin.email, Some(&key.secret)).send().await.unwrap();
    assert_eq!(stock.status(), 403);
    let body: serde_json::Value = stock.json().await.unwrap();
    assert_eq!(body["code"], "forbidden");
    assert!(body["detail"].as_str().unwrap().contains("stock:GET"), "{body}");
    let store = fx.store.clone();
    let id = key.id.clone();
    fx.on_server(async move { store.revoke_key(&id).await }).await.expect("revoked");
    let after = client.get(format!("{}/api/order?pageSize=1", fx.base)).basic_auth(&admin.email, Some(&key.secret)).send().await.unwrap();
    assert_eq!(after.status(), 401, "a revoked key fails at once");
}

async fn unknown_resources_ids_and_paths_are_not_found(fx) {
    let body = fx.get("/api/stocks").await.assert_problem(404, "not_found");
    assert!(body["detail"].as_str().unwrap().contains("stock"), "lists the resources");
    fx.get("/api/stock/0123456789ABCDEF0123456789ABCDEF").await.assert_problem(404, "not_found");
    fx.get("/nothing/here").await.assert_problem(404, "not_found");
    fx.get("/api").await.assert_problem(404, "not_found");
}

async fn a_problems_title_is_in_the_language_the_client_accepts(fx) {
    let admin = fx.credential("admin");
    let ask = |accept: Option<&'static str>| {
        let mut request = fx
            .client()
            .get(format!("{}/api/stocks", fx.base))
            .basic_auth(&admin.email, Some(&admin.secret));
        if let Some(accept) = accept {
            request = request.header("accept-language", accept);
        }
        request.send()
    };
    for (accept, title, language) in [
        (Some("de-DE,de;q=0.9,en;q=0.8"), "Nicht gefunden", "de"),
        (Some("fr-CH, en;q=0.8"), "Not found", "en"),
        (None, "Not found", "en"),
    ] {
        let response = ask(accept).await.expect("the server answers");
        assert_eq!(response.headers()["content-language"], language, "{accept:?}");
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["title"], title, "{accept:?}");
        assert_eq!(body["code"], "not_found", "the code stays the same: {accept:?}");
    }
    // The detail too: a record that is not there, and a refused write's every message.
    let missing = fx
        .client()
        .get(format!("{}/api/stock/0123456789ABCDEF0123456789ABCDEF", fx.base))
        .basic_auth(&admin.email, Some(&admin.secret))
        .header("accept-language", "de")
        .send()
        .await
        .unwrap();
    let body: serde_json::Value = missing.json().await.unwrap();
    assert_eq!(
        body["detail"], "Es gibt kein stock mit der Kennung '0123456789ABCDEF0123456789ABCDEF'.",
        "{body}"
    );
    for (accept, detail, message) in [
        ("de", "Der Schreibvorgang wurde abgelehnt: name ist Pflicht.", "ist Pflicht"),
        ("en", "The write was refused: name is required.", "is required"),
    ] {
        let refused = fx
            .client()
            .post(format!("{}/api/company", fx.base))
            .basic_auth(&admin.email, Some(&admin.secret))
            .header("accept-language", accept)
            .json(&json!({"code": common::orders::unique("LANG")}))
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 422);
        let body: serde_json::Value = refused.json().await.unwrap();
        assert_eq!(body["detail"], detail, "{body}");
        assert_eq!(body["errors"][0]["message"], message, "{body}");
    }
}

async fn without_accept_language_a_problems_title_is_in_the_users_language(fx) {
    // A user of its own reading German, with a key.
    let email = format!("{}@errors.brandhub.test", common::orders::unique("lang"));
    let created = fx.post("/api/user", &json!({"name": "Greta Fehler", "email": email, "type": "admin", "detail": {"lang": "de"}})).await;
    assert_eq!(created.status, 201, "{}", String::from_utf8_lossy(&created.body));
    let id = created.ids("user").remove(0);
    let store = fx.store.clone();
    let user = email.clone();
    let key = fx.on_server(async move { store.create_key(&user, Some("languages"), None).await }).await.expect("the key is created");
    let ask = |method: reqwest::Method, path: &str, accept: Option<&'static str>, body: Option<serde_json::Value>| {
        let (email, secret, path) = (email.clone(), key.secret.clone(), path.to_string());
        async move {
            let headers: Vec<(&str, &str)> = accept.map(|a| ("accept-language", a)).into_iter().collect();
            common::send(fx, &fx.base, method, &path, common::As::Key(&email, &secret), &headers, body.as_ref()).await
        }
    };
    let title_of = |response: &common::Response, code: &str| {
        let body = response.json();
        assert_eq!(body["code"], code, "{body}");
        (body["title"].as_str().unwrap_or_default().to_string(), response.header("content-language").unwrap_or_default())
    };
    let german = |title: &str| (title.to_string(), "de".to_string());
    let english = |title: &str| (title.to_string(), "en".to_string());

    // A read's problem, and a write's (twice: the second takes the remembered caller).
    let missing = ask(reqwest::Method::GET, "/api/stocks", None, None).await;
    assert_eq!(title_of(&missing, "not_found"), german("Nicht gefunden"));
    for _ in 0..2 {
        let refused = ask(reqwest::Method::POST, "/api/brand", None, Some(json!({}))).await;
        assert_eq!(title_of(&refused, "validation_failed"), german("Prüfung fehlgeschlagen"));
        let said = refused.json();
        assert!(
            said["detail"].as_str().unwrap_or_default().starts_with("Der Schreibvorgang wurde abgelehnt: "),
            "{said}"
        );
    }
    // Accept-Language wins over the user's language, whatever it names.
    let asked = ask(reqwest::Method::GET, "/api/stocks", Some("en"), None).await;
    assert_eq!(title_of(&asked, "not_found"), english("Not found"));
    let other = ask(reqwest::Method::GET, "/api/stocks", Some("fr"), None).await;
    assert_eq!(title_of(&other, "not_found"), english("Not found"));
    // The user's language as it is now: English, then a language the API does not speak.
    for lang in ["en", "fr"] {
        let changed = common::send(fx, &fx.base, reqwest::Method::PATCH, &format!("/api/user/{id}"), common::As::Demo("admin"), &[], Some(&json!({"detail": {"lang": lang}}))).await;
        assert_eq!(changed.status, 200, "{}", String::from_utf8_lossy(&changed.body));
        let missing = ask(reqwest::Method::GET, "/api/stocks", None, None).await;
        assert_eq!(title_of(&missing, "not_found"), english("Not found"), "{lang}");
    }
    // Without a known caller there is no user's language.
    let nobody = common::send(fx, &fx.base, reqwest::Method::GET, "/api/stock", common::As::Nobody, &[], None).await;
    assert_eq!(title_of(&nobody, "unauthenticated"), english("Authentication required"));
}

async fn methods_a_path_does_not_take_are_method_not_allowed(fx) {
    for (method, path) in [
        (reqwest::Method::DELETE, "/api/stock"),
        (reqwest::Method::PUT, "/api/stock/0123456789ABCDEF0123456789ABCDEF"),
        (reqwest::Method::GET, "/api/stock/query"),
        (reqwest::Method::PATCH, "/api/stock/count"),
    ] {
        let response = raw(fx, method.clone(), path, None).await;
        response.assert_problem(405, "method_not_allowed");
        assert!(response.header("allow").is_some_and(|a| !a.is_empty()), "{method} {path}: Allow header");
    }
    // A lifecycle's array action takes POST only (not the by-id methods its path resembles).
    let response = raw(fx, reqwest::Method::OPTIONS, "/api/order/dispatch", None).await;
    response.assert_problem(405, "method_not_allowed");
    assert_eq!(response.header("allow").as_deref(), Some("POST"));
}

async fn bodies_over_the_limit_or_of_the_wrong_type_are_refused(fx) {
    let big = vec![b' '; 1024 * 1024 + 10];
    raw(fx, reqwest::Method::POST, "/api/order/query", Some(("application/json", big))).await.assert_problem(413, "payload_too_large");
    let text = b"query=status".to_vec();
    raw(fx, reqwest::Method::POST, "/api/order/query", Some(("text/plain", text))).await.assert_problem(415, "unsupported_media_type");
}

async fn every_answer_carries_a_request_id(fx) {
    let ok = fx.get("/api/host?pageSize=1").await;
    let failed = fx.get("/api/host?nope=1").await;
    let a = ok.header("x-request-id").unwrap();
    let b = failed.header("x-request-id").unwrap();
    assert_ne!(a, b);
    let admin = fx.credential("admin");
    let echoed = fx.client().get(format!("{}/api/host?pageSize=1", fx.base)).basic_auth(&admin.email, Some(&admin.secret))
        .header("x-request-id", "trace-42").send().await.unwrap();
    assert_eq!(echoed.headers()["x-request-id"], "trace-42");
}

async fn behind_a_proxy_only_forwarded_https_is_served(fx) {
    let store = fx.store.clone();
    let uploads = fx.side_uploads();
    let running = fx
        .on_server(async move {
            let settings = Settings::new("127.0.0.1:0".parse().unwrap(), None, uploads);
            let running = start(settings, store).await.expect("a plain server starts");
            (running.address, running)
        })
        .await;
    let (address, _running) = running;
    let admin = fx.credential("admin");
    let client = common::plain_client();
    let plain = client.get(format!("http://{address}/api/host")).basic_auth(&admin.email, Some(&admin.secret)).send().await.unwrap();
    assert_eq!(plain.status(), 403);
    let body: serde_json::Value = plain.json().await.unwrap();
    assert_eq!(body["code"], "https_required");
    let forwarded = client.get(format!("http://{address}/api/host")).basic_auth(&admin.email, Some(&admin.secret))
        .header("x-forwarded-proto", "https").send().await.unwrap();
    assert_eq!(forwarded.status(), 200);
}

}

/// Random query strings and bodies: whatever they are, the answer is never a 500.
#[test]
fn garbage_never_reaches_a_500() {
    let Some(fx) = common::shared(common::Db::Sqlite, "errors") else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = fx.client();
    let admin = fx.credential("admin").clone();
    let names = prop::sample::select(vec![
        "page",
        "pageSize",
        "order_by",
        "fields",
        "exclude",
        "barcode",
        "stock_variant.barcode",
        "inStock",
        "lastUpdate",
        "detail.rrp",
        "vatable",
        "x",
        "",
        "@",
        "id",
    ]);
    let values = "[ -~\u{e9}\u{2603}%]{0,12}";
    let config = ProptestConfig {
        cases: 200,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(pairs in prop::collection::vec((names, values), 0..4), resource in prop::sample::select(vec!["stock", "variant", "order", "file", "user"]), body in prop::option::of("[ -~]{0,40}"))| {
        let query: String = pairs.iter().map(|(n, v)| format!("{}={}", n, v.replace('&', "%26").replace('#', "%23").replace(' ', "+"))).collect::<Vec<_>>().join("&");
        let url = format!("{}/api/{resource}?{query}", fx.base);
        let status = runtime.block_on(async {
            let mut request = client.get(&url).basic_auth(&admin.email, Some(&admin.secret));
            if let Some(body) = &body {
                request = request.header("content-type", "application/json").body(body.clone());
            }
            request.send().await.map(|r| r.status().as_u16())
        });
        let status = status.expect("the server answers");
        prop_assert!(status < 500, "{url} body {body:?} gave {status}");
    });
}
