//! Master-data writes (issue 10): every non-admin user type tries to create, change and
//! delete companies, brands, warehouses, hosts, stores and brand stores it may not write —
//! naming records outside its scope — and is refused with a 4xx problem+json (403 by its
//! key's grants, 404 for a record it does not see, 422 for a new record its write rules or
//! scope refuse); nothing refused is written.

use crate::common;
use crate::on_both_backends;
use common::{Fixture, Response, call};
use reqwest::Method;
use serde_json::json;

const NON_ADMINS: [&str; 4] = ["sponsor", "company", "host", "warehouse"];

/// Ids of `resource` the admin sees and `user_type` does not.
async fn unseen(fx: &Fixture, user_type: &str, resource: &str) -> String {
    let path = format!("/api/{resource}?fields=id&pageSize=1000");
    let seen = call(fx, Method::GET, &path, user_type, None)
        .await
        .ids(resource);
    fx.get(&path)
        .await
        .ids(resource)
        .into_iter()
        .find(|id| !seen.contains(id))
        .unwrap_or_else(|| panic!("a {resource} the {user_type} user does not see"))
}

fn assert_refused(response: &Response, what: &str) {
    assert!(
        matches!(response.status, 403 | 404 | 422),
        "{what}: {} {}",
        response.status,
        String::from_utf8_lossy(&response.body)
    );
    assert_eq!(
        response.header("content-type").as_deref(),
        Some("application/problem+json"),
        "{what}"
    );
}

on_both_backends! { "master_writes";

async fn no_user_type_creates_master_data_outside_its_rights(fx) {
    for user_type in NON_ADMINS {
        let company = unseen(fx, user_type, "company").await;
        let host = unseen(fx, user_type, "host").await;
        let brand = unseen(fx, user_type, "brand").await;
        let store = unseen(fx, user_type, "store").await;
        let warehouse = unseen(fx, user_type, "warehouse").await;
        let code = format!("SEC-{user_type}");
        let attempts = [
            ("company", json!({"name": "X", "code": code, "fk_sponsor": company})),
            ("brand", json!({"fk_company": company, "name": "X", "code": code})),
            ("warehouse", json!({"fk_company": company, "name": "X", "code": code})),
            ("host", json!({"name": "X", "code": code})),
            ("store", json!({"fk_host": host, "name": "X", "code": code, "currency": "EUR"})),
        ];
        for (resource, body) in attempts {
            let refused = call(fx, Method::POST, &format!("/api/{resource}"), user_type, Some(body)).await;
            assert_refused(&refused, &format!("{user_type} POST {resource}"));
            let written = fx.get(&format!("/api/{resource}/count?code={code}")).await.json()["count"].as_u64();
            assert_eq!(written, Some(0), "{user_type} {resource}: nothing written");
        }
        let links_before = fx.get("/api/brandStore/count").await.json()["count"].as_u64();
        let refused = call(fx, Method::POST, "/api/brandStore", user_type, Some(json!({"fk_brand": brand, "fk_store": store, "fk_warehouse": warehouse}))).await;
        assert_refused(&refused, &format!("{user_type} POST brandStore"));
        assert_eq!(fx.get("/api/brandStore/count").await.json()["count"].as_u64(), links_before);
    }
}

async fn no_user_type_changes_or_deletes_master_data_it_does_not_own(fx) {
    let host = fx.post("/api/host", &json!({"name": "Guarded", "code": "SEC-GUARDED"})).await;
    assert_eq!(host.status, 201, "{}", String::from_utf8_lossy(&host.body));
    let host_id = host.records("host")[0]["id"].as_str().unwrap().to_string();
    for user_type in NON_ADMINS {
        let brand = unseen(fx, user_type, "brand").await;
        for (resource, id) in [("host", host_id.clone()), ("brand", brand)] {
            let before = fx.get(&format!("/api/{resource}/{id}")).await.body;
            let patched = call(fx, Method::PATCH, &format!("/api/{resource}/{id}"), user_type, Some(json!({"name": "Taken"}))).await;
            assert_refused(&patched, &format!("{user_type} PATCH {resource}"));
            let deleted = call(fx, Method::DELETE, &format!("/api/{resource}/{id}"), user_type, None).await;
            assert_refused(&deleted, &format!("{user_type} DELETE {resource}"));
            let upserted = call(fx, Method::POST, &format!("/api/{resource}?upsert=true"), user_type, Some(json!({"name": "Taken", "code": "SEC-GUARDED"}))).await;
            assert_refused(&upserted, &format!("{user_type} upsert {resource}"));
            assert_eq!(fx.get(&format!("/api/{resource}/{id}")).await.body, before, "{user_type} {resource}: unchanged");
        }
    }
    // The owner of a record sees it but, without a write rule, may not change it: a host user
    // and its own host.
    let own_host = call(fx, Method::GET, "/api/host?fields=id", "host", None).await.ids("host")[0].clone();
    let refused = call(fx, Method::PATCH, &format!("/api/host/{own_host}"), "host", Some(json!({"name": "Mine now"}))).await;
    refused.assert_problem(403, "forbidden");
}

}
