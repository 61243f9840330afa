//! Requests past the read limits (`query::limits`), as the review sent them to `serve --demo`
//! and beyond: deep dotted paths in URL filters, complex-query fields, `fields` and
//! `order_by`; thousands of `order_by` keys, of repeated URL values and of `@` values in
//! arrays; nested JSON in a body. Each is answered with a 400 problem+json that names the
//! limit, and the server keeps answering. Sent as the demo host user (as in the review),
//! except where only an admin can build the request.

use crate::common::{self, Fixture, Response};
use serde_json::Value;

/// The path `brand_product.product_brand.` repeated `pairs` times and then `name`: a valid
/// walk between brands and products, two relations per pair, all visible to a host.
fn ping_pong(pairs: usize) -> String {
    format!("{}name", "brand_product.product_brand.".repeat(pairs))
}

/// Sends a read as a demo user of `user_type`: GET with the query, or POST of the body to
/// `/query`.
async fn read(fx: &Fixture, user_type: &str, path: &str, body: Option<&str>) -> Response {
    let credential = fx.credential(user_type);
    let client = fx.client();
    let url = format!("{}{path}", fx.base);
    let request = match body {
        Some(body) => client
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_string()),
        None => client.get(url),
    };
    let response = request
        .basic_auth(&credential.email, Some(&credential.secret))
        .send()
        .await
        .expect("the server answers");
    Response::read(response).await
}

/// Asserts a 400 problem+json of `code` whose detail names `limit`, and that the server
/// still answers a plain read afterwards.
async fn refused(fx: &Fixture, answer: Response, code: &str, limit: &str) -> Value {
    let body = answer.assert_problem(400, code);
    let detail = body["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains(&format!("the limit {limit} ")),
        "the answer names {limit}: {body}"
    );
    assert!(
        answer.header("x-request-id").is_some(),
        "every answer has a request id"
    );
    assert!(
        answer.body.len() < 4096,
        "the answer does not echo the input: {} bytes",
        answer.body.len()
    );
    still_up(fx).await;
    body
}

async fn still_up(fx: &Fixture) {
    let answer = read(fx, "host", "/api/brand?pageSize=1&fields=id", None).await;
    assert_eq!(answer.status, 200, "the server still answers");
}

/// A body with one condition on `field`.
fn condition_on(field: &str) -> String {
    serde_json::json!({"query": [{"field": field, "operator": "=", "value": "x"}]}).to_string()
}

crate::on_both_backends! { "limits";

async fn deep_paths_in_url_filters_are_refused(fx) {
    // The review's request: 500 relations, which overflowed the stack.
    let answer = read(fx, "host", &format!("/api/brand?{}=x", ping_pong(250)), None).await;
    let body = refused(fx, answer, "invalid_parameter", "path_names").await;
    assert!(body["field"].as_str().is_some_and(|f| f.len() < 200), "{body}");
    // The smaller ones that ran into SQLite's limits.
    for pairs in [10, 15] {
        let answer = read(fx, "host", &format!("/api/brand?{}=x", ping_pong(pairs)), None).await;
        refused(fx, answer, "invalid_parameter", "path_names").await;
    }
    // Names within the limit, relations past it.
    let nine = format!("product?{}product_brand.name=x", "product_brand.brand_product.".repeat(4));
    let answer = read(fx, "host", &format!("/api/{nine}"), None).await;
    refused(fx, answer, "invalid_parameter", "path_hops").await;
    // Eight relations are fine.
    let answer = read(fx, "host", &format!("/api/brand?{}=x&pageSize=1", ping_pong(4)), None).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
}

async fn deep_paths_in_complex_queries_are_refused(fx) {
    let answer = read(fx, "host", "/api/brand/query", Some(&condition_on(&ping_pong(250)))).await;
    refused(fx, answer, "invalid_query", "path_names").await;
    let array = serde_json::json!({"querywitharray": {"field": ping_pong(250), "values": ["x"]}});
    let answer = read(fx, "host", "/api/brand/count", Some(&array.to_string())).await;
    refused(fx, answer, "invalid_query", "path_names").await;
}

async fn deep_fields_and_order_by_paths_are_refused(fx) {
    let answer = read(fx, "host", &format!("/api/brand?fields={}", ping_pong(250)), None).await;
    refused(fx, answer, "invalid_parameter", "path_names").await;
    let answer = read(fx, "host", &format!("/api/brand?exclude={}", ping_pong(250)), None).await;
    refused(fx, answer, "invalid_parameter", "path_names").await;
    // An order_by of 70 relations.
    let seventy = format!("{}name", "brand_product.product_brand.".repeat(35));
    let answer = read(fx, "host", &format!("/api/brand?order_by={seventy}"), None).await;
    refused(fx, answer, "invalid_parameter", "path_names").await;
}

async fn long_lists_are_refused(fx) {
    let keys = vec!["name"; 3000].join(";");
    let answer = read(fx, "host", &format!("/api/brand?order_by={keys}"), None).await;
    let body = refused(fx, answer, "invalid_parameter", "order_by_keys").await;
    assert_eq!(body["field"], "order_by");
    let items = vec!["name"; 500].join(",");
    let answer = read(fx, "host", &format!("/api/brand?fields={items}"), None).await;
    refused(fx, answer, "invalid_parameter", "fields_items").await;
    let answer = read(fx, "host", &format!("/api/brand?exclude={items}"), None).await;
    refused(fx, answer, "invalid_parameter", "exclude_items").await;
    let filters: Vec<String> = (0..150).map(|i| format!("f{i}=1")).collect();
    let answer = read(fx, "host", &format!("/api/brand?{}", filters.join("&")), None).await;
    refused(fx, answer, "invalid_parameter", "conditions").await;
    let conditions: Vec<Value> = (0..101)
        .map(|i| {
            let mut c = serde_json::json!({"field": "name", "operator": "=", "value": i.to_string()});
            if i > 0 {
                c["conjunction"] = "|".into();
            }
            c
        })
        .collect();
    let body = serde_json::json!({"query": conditions}).to_string();
    let answer = read(fx, "host", "/api/brand/query", Some(&body)).await;
    refused(fx, answer, "invalid_query", "conditions").await;
}

async fn many_values_are_refused_or_one_in_list(fx) {
    // The review's `code=0@&code=1@&…`: every value a comparison of its own.
    let patterns: Vec<String> = (0..3000).map(|i| format!("code={i}@")).collect();
    let answer = read(fx, "host", &format!("/api/brand?{}", patterns.join("&")), None).await;
    refused(fx, answer, "invalid_parameter", "wildcard_values").await;
    // A querywitharray of 5,000 `@` values.
    let values: Vec<String> = (0..5000).map(|i| format!("{i}@")).collect();
    let array = serde_json::json!({"querywitharray": {"field": "code", "values": values}});
    let answer = read(fx, "host", "/api/brand/query", Some(&array.to_string())).await;
    refused(fx, answer, "invalid_query", "wildcard_values").await;
    // About a thousand `@` values, which ran into SQLite's expression depth.
    let patterns: Vec<String> = (0..1000).map(|i| format!("name={i}@")).collect();
    let answer = read(fx, "host", &format!("/api/product?{}", patterns.join("&")), None).await;
    refused(fx, answer, "invalid_parameter", "wildcard_values").await;
    // A value past 50,000 bytes would be a LIKE pattern SQLite refuses.
    let long = format!("a@{}", "b".repeat(60_000));
    let answer = read(fx, "host", &format!("/api/product?description={long}"), None).await;
    refused(fx, answer, "invalid_parameter", "value_bytes").await;
    let body = serde_json::json!({"query": [{"field": "description", "operator": "=", "value": long}]});
    let answer = read(fx, "host", "/api/product/query", Some(&body.to_string())).await;
    refused(fx, answer, "invalid_query", "value_bytes").await;
    // Past 10,000 values in all.
    let values: Vec<u32> = (0..10_001).collect();
    let array = serde_json::json!({"queryselectionwitharray": {"field": "code", "values": values}});
    let answer = read(fx, "host", "/api/brand/count", Some(&array.to_string())).await;
    refused(fx, answer, "invalid_query", "values").await;
    // Thousands of equal values are one IN list: answered, and the same as a few.
    let brands = read(fx, "host", "/api/brand?fields=code&pageSize=3", None).await;
    let codes: Vec<String> = brands
        .records("brand")
        .iter()
        .map(|b| b["code"].as_str().expect("a code").to_string())
        .collect();
    let mut values: Vec<String> = (0..3000).map(|i| format!("NOPE{i}")).collect();
    values.extend(codes.iter().cloned());
    let array = serde_json::json!({"querywitharray": {"field": "code", "values": values}});
    let answer = read(fx, "host", "/api/brand/count", Some(&array.to_string())).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    assert_eq!(answer.json()["count"], codes.len());
    let query: Vec<String> = values.iter().map(|v| format!("code={v}")).collect();
    let answer = read(fx, "host", &format!("/api/brand/count?{}", query.join("&")), None).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    assert_eq!(answer.json()["count"], codes.len());
}

async fn plans_past_the_backends_limits_are_refused(fx) {
    // Seven order keys through 37 distinct relations of a price: past the joins a page may
    // take (SQLite stops at 64 tables). Only an admin sees every one of them.
    let sponsors = |n: usize| vec!["company_sponsor"; n].join(".");
    let keys = [
        format!("price_file.file_user.user_company.{}.code", sponsors(5)),
        format!("price_file.file_user.user_sponsor.{}.code", sponsors(5)),
        format!("price_file.file_user.user_warehouse.warehouse_company.{}.code", sponsors(4)),
        format!("price_file.file_brand.brand_company.{}.code", sponsors(5)),
        format!("price_variant.variant_product.product_brand.brand_company.{}.code", sponsors(4)),
        "price_host.code".to_string(),
        "price_file.file_user.user_host.code".to_string(),
    ];
    let answer = read(fx, "admin", &format!("/api/price?order_by={}", keys.join(";")), None).await;
    refused(fx, answer, "invalid_parameter", "joined_tables").await;
    // A host's scope joins every relation of every condition: a hundred conditions through
    // eight relations would have the database plan thousands of subqueries.
    let deep = "orderItem_variant.variant_product.product_brand.brand_product.product_brand.brand_product.product_brand.brand_product.title";
    let conditions: Vec<Value> = (0..100)
        .map(|i| {
            let mut c = serde_json::json!({"field": deep, "operator": "#", "value": format!("{i}@x")});
            if i > 0 {
                c["conjunction"] = if i % 2 == 0 { "&" } else { "|" }.into();
            }
            c
        })
        .collect();
    let body = serde_json::json!({"queryselection": conditions}).to_string();
    let answer = read(fx, "host", "/api/orderItem/query", Some(&body)).await;
    refused(fx, answer, "invalid_query", "subqueries").await;
    // Four such conditions fit, and are answered.
    let body = serde_json::json!({"queryselection": conditions[..4]}).to_string();
    let answer = read(fx, "host", "/api/orderItem/query?pageSize=1", Some(&body)).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    // Four hundred days of a timestamp are four hundred comparisons.
    let days: Vec<String> = (0..400)
        .map(|i| format!("orderDate=2026-{:02}-{:02}", i % 12 + 1, i % 28 + 1))
        .collect();
    let answer = read(fx, "host", &format!("/api/order?{}", days.join("&")), None).await;
    refused(fx, answer, "invalid_query", "comparisons").await;
}

async fn nested_or_misshapen_bodies_are_refused(fx) {
    let deep = format!(
        r#"{{"query":[{{"field":"name","operator":"=","value":{}1{}}}]}}"#,
        "[".repeat(50_000),
        "]".repeat(50_000)
    );
    let answer = read(fx, "host", "/api/brand/query", Some(&deep)).await;
    answer.assert_problem(400, "invalid_query");
    still_up(fx).await;
    for body in ["[]", "[null,null]", "7"] {
        let answer = read(fx, "host", "/api/brand/query", Some(body)).await;
        answer.assert_problem(400, "invalid_query");
    }
    still_up(fx).await;
}

async fn values_the_database_cannot_store_are_refused(fx) {
    // PostgreSQL's text cannot hold a NUL character: a value with one is the client's error.
    let answer = read(fx, "host", "/api/brand?name=a%00b", None).await;
    answer.assert_problem(400, "invalid_value");
    let body = serde_json::json!({"querywitharray": {"field": "code", "values": ["a\u{0}@"]}});
    let answer = read(fx, "host", "/api/brand/query", Some(&body.to_string())).await;
    answer.assert_problem(400, "invalid_value");
    still_up(fx).await;
}
}
