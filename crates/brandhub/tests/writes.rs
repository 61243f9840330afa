//! Writes of the master data through the generic write pipeline (docs/API.md, "Writes: master data and catalogue"): company, brand,
//! warehouse, host, store and brandStore created (one object or an array), read back,
//! changed, upserted on their natural keys and deleted; every problem of a body in one 422;
//! keys taken (409 naming the holder), records still referred to (409), and writes outside
//! the caller's scope or rights.

mod common;

use serde_json::{Value, json};

use common::call;

async fn post(fx: &common::Fixture, path: &str, user_type: &str, body: Value) -> common::Response {
    call(fx, reqwest::Method::POST, path, user_type, Some(body)).await
}

/// The one record of a successful single-record write.
fn created(response: &common::Response, resource: &str) -> Value {
    assert_eq!(
        response.status,
        201,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    response.records(resource)[0].clone()
}

/// How many records of `resource` have this code (as the admin sees them).
async fn count_code(fx: &common::Fixture, resource: &str, code: &str) -> u64 {
    let count = fx.get(&format!("/api/{resource}/count?code={code}")).await;
    assert_eq!(
        count.status,
        200,
        "{}",
        String::from_utf8_lossy(&count.body)
    );
    count.json()["count"].as_u64().unwrap()
}

/// The company of the demo company user.
async fn own_company(fx: &common::Fixture) -> String {
    let user = &fx.credential("company").user_id;
    let me = call(
        fx,
        reqwest::Method::GET,
        &format!("/api/user/{user}?fields=fk_company"),
        "company",
        None,
    )
    .await;
    me.records("user")[0]["fk_company"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A company the demo company user does not see.
async fn foreign_company(fx: &common::Fixture) -> String {
    let own = own_company(fx).await;
    let visible: Vec<String> = call(
        fx,
        reqwest::Method::GET,
        "/api/company?fields=id&pageSize=1000",
        "company",
        None,
    )
    .await
    .ids("company");
    fx.get("/api/company?fields=id&pageSize=1000")
        .await
        .ids("company")
        .into_iter()
        .find(|id| *id != own && !visible.contains(id))
        .expect("the demo has companies the company user does not see")
}

on_both_backends! { "writes";

async fn master_data_is_created_read_changed_and_deleted(fx) {
    let answer = post(fx, "/api/company", "admin", json!({"name": "Wlk Co", "code": "WLK", "detail": {"country": "GB"}})).await;
    let company = created(&answer, "company");
    let company_id = company["id"].as_str().unwrap().to_string();
    // Server-Timing counts the write's statements besides the reads. On SQLite: the
    // versions and the natural key's check before it, the write (a transaction's), the page
    // that renders the answer; without the write's, three. On PostgreSQL, for a caller
    // remembered from an earlier request: one statement that checks the caller, checks the
    // key by inserting, commits itself and reads the answer; without the write's, none.
    let least = if fx.db == common::Db::Postgres { 1 } else { 4 };
    assert!(answer.statements() >= least, "{:?}", answer.header("server-timing"));
    assert_eq!(company["code"], "WLK");
    assert_eq!(company["detail"]["country"], "GB");
    assert_eq!(company["fk_sponsor"], Value::Null);
    assert!(company["createdDate"].as_str().unwrap().len() == 19, "{company}");
    let brand = post(fx, "/api/brand", "admin", json!({"fk_company": company_id.to_lowercase(), "name": "Wlk", "code": "WLKB"})).await;
    assert_eq!(brand.header("location").unwrap(), format!("/api/brand/{}", brand.records("brand")[0]["id"].as_str().unwrap()));
    let brand_id = created(&brand, "brand")["id"].as_str().unwrap().to_string();
    let warehouse_id = created(&post(fx, "/api/warehouse", "admin", json!({"fk_company": company_id, "name": "Wlk WH", "code": "WLKW"})).await, "warehouse")["id"].as_str().unwrap().to_string();
    let host_id = created(&post(fx, "/api/host", "admin", json!({"name": "Wlk Host", "code": "WLKH"})).await, "host")["id"].as_str().unwrap().to_string();
    let store_id = created(&post(fx, "/api/store", "admin", json!({"fk_host": host_id, "name": "Wlk Store", "code": "S1", "currency": "GBP"})).await, "store")["id"].as_str().unwrap().to_string();
    let link = created(&post(fx, "/api/brandStore", "admin", json!({"fk_brand": brand_id, "fk_store": store_id, "fk_warehouse": warehouse_id, "detail": {"stockType": "live"}})).await, "brandStore");
    let link_id = link["id"].as_str().unwrap().to_string();
    assert_eq!(link["brandStore_brand"]["__KEY"], brand_id.as_str());

    let read = fx.get(&format!("/api/brand/{brand_id}")).await;
    assert_eq!(read.records("brand")[0]["code"], "WLKB");
    let patched = call(fx, reqwest::Method::PATCH, &format!("/api/brand/{brand_id}"), "admin", Some(json!({"name": "Wlk Renamed", "detail": {"website": "https://wlk.test"}}))).await;
    assert_eq!(patched.status, 200, "{}", String::from_utf8_lossy(&patched.body));
    assert_eq!(patched.records("brand")[0]["name"], "Wlk Renamed");
    assert_eq!(fx.get(&format!("/api/brand/{brand_id}")).await.records("brand")[0]["detail"]["website"], "https://wlk.test", "a read after the write sees it");
    assert_eq!(fx.get("/api/brand/count?name=wlk%20renamed").await.json()["count"], 1, "the folded copy is written too");

    let refused = call(fx, reqwest::Method::DELETE, &format!("/api/company/{company_id}"), "admin", None).await;
    let body = refused.assert_problem(409, "conflict");
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains("brand (fk_company)") && detail.contains("warehouse (fk_company)"), "{detail}");
    let demo_link = fx.get("/api/order?fields=fk_brandStore&pageSize=1").await.records("order")[0]["fk_brandStore"].as_str().unwrap().to_string();
    let refused = call(fx, reqwest::Method::DELETE, &format!("/api/brandStore/{demo_link}"), "admin", None).await;
    let body = refused.assert_problem(409, "conflict");
    assert!(body["detail"].as_str().unwrap().contains("order (fk_brandStore)"), "{body}");
    for (resource, id) in [("brandStore", &link_id), ("store", &store_id), ("host", &host_id), ("brand", &brand_id), ("warehouse", &warehouse_id), ("company", &company_id)] {
        let deleted = call(fx, reqwest::Method::DELETE, &format!("/api/{resource}/{id}"), "admin", None).await;
        assert_eq!(deleted.status, 204, "{resource}: {}", String::from_utf8_lossy(&deleted.body));
        fx.get(&format!("/api/{resource}/{id}")).await.assert_problem(404, "not_found");
    }
}

async fn one_422_lists_every_problem_of_a_body(fx) {
    let unknown = "0123456789ABCDEF0123456789ABCDEF";
    let refused = post(fx, "/api/brand", "admin", json!({"id": "X", "name": 5, "fk_company": unknown})).await;
    let body = refused.assert_problem(422, "validation_failed");
    let fields: Vec<&str> = body["errors"].as_array().unwrap().iter().map(|e| e["field"].as_str().unwrap()).collect();
    assert_eq!(fields, ["code", "fk_company", "id", "name"], "{body}");
    assert!(body["errors"].as_array().unwrap().iter().all(|e| e.get("index").is_none()), "{body}");
    let unknown_name = post(fx, "/api/host", "admin", json!({"name": "x", "code": "x", "colour": "red"})).await;
    unknown_name.assert_problem(400, "unknown_field");
    let bad_parameter = post(fx, "/api/host?upsert=maybe", "admin", json!({"name": "x", "code": "x"})).await;
    bad_parameter.assert_problem(400, "invalid_parameter");

    // What a create must give, a PATCH may change but not empty; a field always set takes no
    // null (the conformance run found both written: an empty company code, a 500).
    let host = created(&post(fx, "/api/host", "admin", json!({"name": "Keep", "code": "KEEP"})).await, "host");
    let host_id = host["id"].as_str().unwrap();
    let emptied = call(fx, reqwest::Method::PATCH, &format!("/api/host/{host_id}"), "admin", Some(json!({"name": "", "code": null}))).await;
    let body = emptied.assert_problem(422, "validation_failed");
    let fields: Vec<&str> = body["errors"].as_array().unwrap().iter().map(|e| e["field"].as_str().unwrap()).collect();
    assert_eq!(fields, ["code", "name"], "{body}");
    assert_eq!(fx.get(&format!("/api/host/{host_id}")).await.records("host")[0]["code"], "KEEP");
    let user = fx.get("/api/user?email=host@demo.brandhub.test").await.records("user")[0]["id"].as_str().unwrap().to_string();
    let untyped = call(fx, reqwest::Method::PATCH, &format!("/api/user/{user}"), "admin", Some(json!({"type": null}))).await;
    untyped.assert_problem(422, "validation_failed");
    assert_eq!(fx.get(&format!("/api/user/{user}")).await.records("user")[0]["type"], "host");
    let hook = created(&post(fx, "/api/webhook", "admin", json!({"url": "https://hooks.writes.test/in", "events": ["order.created"]})).await, "webhook");
    let hook_id = hook["id"].as_str().unwrap();
    let unset = call(fx, reqwest::Method::PATCH, &format!("/api/webhook/{hook_id}"), "admin", Some(json!({"active": null}))).await;
    let body = unset.assert_problem(422, "validation_failed");
    assert_eq!(body["errors"][0]["field"], "active", "{body}");
}

async fn an_array_is_written_whole_or_not_at_all(fx) {
    let refused = post(fx, "/api/host", "admin", json!([
        {"name": "Arr 1", "code": "ARR1"},
        {"name": "Arr 2"},
        {"name": "Arr 3", "code": "ARR1"},
    ])).await;
    let body = refused.assert_problem(422, "validation_failed");
    let errors = body["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2, "{body}");
    assert_eq!((errors[0]["index"].as_u64(), errors[0]["field"].as_str()), (Some(1), Some("code")));
    assert_eq!(errors[1]["index"], 2);
    assert_eq!(count_code(fx, "host", "ARR1").await, 0, "nothing was written");

    let written = post(fx, "/api/host", "admin", json!([{"name": "Arr 1", "code": "ARR1"}, {"name": "Arr 2", "code": "ARR2"}])).await;
    assert_eq!(written.status, 201, "{}", String::from_utf8_lossy(&written.body));
    let hosts = written.records("host");
    assert_eq!((hosts[0]["code"].as_str(), hosts[1]["code"].as_str()), (Some("ARR1"), Some("ARR2")));
    assert_eq!(written.json()["response"]["recordsSent"], 2);
    assert_eq!(count_code(fx, "host", "ARR2").await, 1);
    post(fx, "/api/host", "admin", json!([])).await.assert_problem(400, "invalid_value");
}

async fn a_taken_natural_key_conflicts_or_is_upserted(fx) {
    let first = created(&post(fx, "/api/host", "admin", json!({"name": "Up", "code": "UPS"})).await, "host");
    let id = first["id"].as_str().unwrap();
    let taken = post(fx, "/api/host", "admin", json!({"name": "Up again", "code": "ups"})).await;
    let body = taken.assert_problem(409, "conflict");
    assert!(body["detail"].as_str().unwrap().contains(id), "{body}");
    let updated = post(fx, "/api/host?upsert=true", "admin", json!({"name": "Up again", "code": "UPS"})).await;
    assert_eq!(updated.status, 200, "{}", String::from_utf8_lossy(&updated.body));
    assert_eq!(updated.records("host")[0]["id"], id);
    assert_eq!(updated.records("host")[0]["name"], "Up again");
    assert!(updated.header("location").is_none());
    let mixed = post(fx, "/api/host?upsert=true", "admin", json!([{"name": "Up 3", "code": "UPS"}, {"name": "New", "code": "UPS2"}])).await;
    assert_eq!(mixed.status, 201, "anything created makes it 201");
    assert_eq!(mixed.records("host")[0]["id"], id);
    assert_eq!(count_code(fx, "host", "UPS").await, 1);

    // store: (host, code) is the key, so another host may reuse the code.
    let other = created(&post(fx, "/api/host", "admin", json!({"name": "Up other", "code": "UPSO"})).await, "host");
    for host in [id, other["id"].as_str().unwrap()] {
        created(&post(fx, "/api/store", "admin", json!({"fk_host": host, "name": "Main", "code": "MAIN", "currency": "EUR"})).await, "store");
    }
    post(fx, "/api/store", "admin", json!({"fk_host": id, "name": "Main 2", "code": "MAIN", "currency": "EUR"})).await.assert_problem(409, "conflict");
    let renamed = post(fx, "/api/store", "admin", json!({"fk_host": id, "name": "Second", "code": "SECOND", "currency": "EUR"})).await;
    let second = created(&renamed, "store")["id"].as_str().unwrap().to_string();
    let clash = call(fx, reqwest::Method::PATCH, &format!("/api/store/{second}"), "admin", Some(json!({"code": "main"}))).await;
    clash.assert_problem(409, "conflict");
}

async fn an_upsert_of_existing_records_checks_them_all_and_writes_all_or_none(fx) {
    let own = own_company(fx).await;
    let foreign = foreign_company(fx).await;
    let codes = ["UPA-1", "UPA-2", "UPA-3", "UPA-4"];
    for code in codes {
        created(&post(fx, "/api/brand", "company", json!({"fk_company": own, "name": "Before", "code": code})).await, "brand");
    }
    let body = |companies: [&str; 4]| {
        json!(codes.iter().zip(companies).map(|(code, company)| json!({"fk_company": company, "name": "After", "code": code})).collect::<Vec<_>>())
    };
    // Two existing records moved to another company: both refused in one 422, by index.
    let refused = post(fx, "/api/brand?upsert=true", "company", body([&own, &foreign, &own, &foreign])).await;
    let problem = refused.assert_problem(422, "validation_failed");
    let indexes: std::collections::BTreeSet<u64> = problem["errors"].as_array().unwrap().iter().map(|e| e["index"].as_u64().unwrap()).collect();
    assert_eq!(indexes, [1, 3].into(), "{problem}");
    let names = || async {
        let mut names = Vec::new();
        for code in codes {
            names.push(fx.get(&format!("/api/brand?code={code}&fields=name")).await.records("brand")[0]["name"].clone());
        }
        names
    };
    assert!(names().await.iter().all(|n| n == "Before"), "nothing is written when one record is refused");
    let upserted = post(fx, "/api/brand?upsert=true", "company", body([&own, &own, &own, &own])).await;
    assert_eq!(upserted.status, 200, "{}", String::from_utf8_lossy(&upserted.body));
    assert_eq!(upserted.records("brand").len(), 4);
    assert!(names().await.iter().all(|n| n == "After"));
}

async fn writes_stay_within_scope_and_rights(fx) {
    let own = own_company(fx).await;
    let foreign = foreign_company(fx).await;
    let brand = created(&post(fx, "/api/brand", "company", json!({"fk_company": own, "name": "Mine", "code": "SCP-MINE"})).await, "brand");
    let brand_id = brand["id"].as_str().unwrap().to_string();
    let outside = post(fx, "/api/brand", "company", json!({"fk_company": foreign, "name": "Theirs", "code": "SCP-THEIRS"})).await;
    let body = outside.assert_problem(422, "validation_failed");
    assert_eq!(body["errors"][0]["field"], "fk_company", "{body}");
    assert_eq!(count_code(fx, "brand", "SCP-THEIRS").await, 0);
    for user_type in ["host", "warehouse", "company"] {
        // Refused by the key's grants (403) or by the write rules (422).
        let refused = post(fx, "/api/host", user_type, json!({"name": "No", "code": "SCP-HOST"})).await;
        assert!(matches!(refused.status, 403 | 422), "{user_type}: {}", String::from_utf8_lossy(&refused.body));
    }
    assert_eq!(count_code(fx, "host", "SCP-HOST").await, 0);

    // A brand of another company: 404 to the company user, as if it did not exist.
    let theirs = created(&post(fx, "/api/brand", "admin", json!({"fk_company": foreign, "name": "Theirs", "code": "SCP-ADMIN"})).await, "brand");
    let theirs_id = theirs["id"].as_str().unwrap();
    call(fx, reqwest::Method::PATCH, &format!("/api/brand/{theirs_id}"), "company", Some(json!({"name": "Hijacked"}))).await.assert_problem(404, "not_found");
    call(fx, reqwest::Method::DELETE, &format!("/api/brand/{theirs_id}"), "company", None).await.assert_problem(404, "not_found");
    // A request refused before the store looks at the record is 404 too: neither a 400 nor a
    // 422 tells that the record exists. The same requests on the caller's own brand are refused
    // for what they are.
    let theirs_path = format!("/api/brand/{theirs_id}");
    let own_path = format!("/api/brand/{brand_id}");
    let patch = reqwest::Method::PATCH;
    let bad_if_match: &[(&str, &str)] = &[("If-Match", "not a tag")];
    for (path, status, code) in [(&theirs_path, 404, "not_found"), (&own_path, 400, "invalid_value")] {
        call(fx, patch.clone(), path, "company", Some(json!([1]))).await.assert_problem(status, code);
    }
    for (path, status, code) in [(&theirs_path, 404, "not_found"), (&own_path, 400, "unknown_field")] {
        call(fx, patch.clone(), path, "company", Some(json!({"name": "x", "nope": 1}))).await.assert_problem(status, code);
    }
    for (path, status, code) in [(&theirs_path, 404, "not_found"), (&own_path, 422, "validation_failed")] {
        call(fx, patch.clone(), path, "company", Some(json!({"name": 5}))).await.assert_problem(status, code);
    }
    for (method, path, status, code) in [
        (patch.clone(), &theirs_path, 404, "not_found"),
        (reqwest::Method::DELETE, &theirs_path, 404, "not_found"),
        (patch.clone(), &own_path, 400, "invalid_parameter"),
        (reqwest::Method::DELETE, &own_path, 400, "invalid_parameter"),
    ] {
        let body = json!({"name": "Hijacked"});
        let body = (method == reqwest::Method::PATCH).then_some(&body);
        common::send(fx, &fx.base, method, path, common::As::Demo("company"), bad_if_match, body).await.assert_problem(status, code);
    }
    // An upsert onto a key held outside the caller's scope is told that the key is taken,
    // without naming the record.
    let taken = post(fx, "/api/brand?upsert=true", "company", json!({"fk_company": own, "name": "Hijacked", "code": "SCP-ADMIN"})).await;
    let problem = taken.assert_problem(409, "conflict");
    assert!(!problem.to_string().contains(theirs_id), "{problem}");
    assert_eq!(fx.get(&format!("/api/brand/{theirs_id}")).await.records("brand")[0]["name"], "Theirs");
    let changed = call(fx, reqwest::Method::PATCH, &format!("/api/brand/{brand_id}"), "company", Some(json!({"fk_company": foreign}))).await;
    changed.assert_problem(422, "validation_failed");
    assert_eq!(call(fx, reqwest::Method::DELETE, &format!("/api/brand/{brand_id}"), "company", None).await.status, 204);
}

async fn a_user_needs_a_known_type(fx) {
    let missing = post(fx, "/api/user", "admin", json!({"name": "No type", "email": "notype@writes.test"})).await;
    let body = missing.assert_problem(422, "validation_failed");
    assert!(body["errors"].as_array().unwrap().iter().any(|e| e["field"] == "type"), "{body}");
    let numeric = post(fx, "/api/user", "admin", json!({"name": "Five", "email": "five@writes.test", "type": 5})).await;
    let body = numeric.assert_problem(422, "validation_failed");
    assert!(body["errors"].as_array().unwrap().iter().any(|e| e["field"] == "type"), "{body}");
    assert_eq!(fx.get("/api/user/count?email=notype@writes.test&email=five@writes.test").await.json()["count"], 0);
}

}
