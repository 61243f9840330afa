//! Domains of numbers (docs/API.md, "Quantities and amounts") on both backends: quantities are whole numbers within
//! their ranges and amounts finite, bounded and kept to two decimals, in order intakes,
//! lifecycle steps, dispatch arrays, JSON stock writes and stock and dispatch files; a stock
//! move that would take a count outside ±1,000,000,000 is refused whole; whatever numbers a
//! client sends (a property test over any JSON number), every stock and order record involved
//! still reads back, by list, by id and as CSV. And one record that does not read never holds
//! up the webhook outbox for the others: its event is set aside for admins to see.

mod common;

use brandhub_webhooks::schedule::RetrySchedule;
use common::orders::{Place, call, get, ok, patch, place, stock, text, unique};
use common::{BOUNDARY, Db, Fixture, Response, multipart, row, xlsx};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A request whose JSON body is given as text, so that it can hold numbers `serde_json`
/// would not write (`1e400`, `-0`, integers past 2^64).
async fn send_text(
    fx: &Fixture,
    method: reqwest::Method,
    path: &str,
    user_type: &str,
    body: &str,
) -> Response {
    let credential = fx.credential(user_type);
    let response = fx
        .client()
        .request(method, format!("{}{path}", fx.base))
        .basic_auth(&credential.email, Some(&credential.secret))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("the server answers");
    Response::read(response).await
}

/// An intake body for `p`'s brand store whose lines are given as JSON text.
fn intake_text(p: &Place, reference: &str, lines: &str, shipping: &str) -> String {
    format!(
        r#"{{"fk_brandStore": "{}", "hostOrderRef": "{reference}", "shipAddress": {{"forename": "Ada", "line1": "1 Analytical Row", "town": "London", "countryCode": "GB"}}, "detail": {{"shippingGross": {shipping}}}, "order_orderItem": [{lines}]}}"#,
        p.brand_store
    )
}

/// The problems of a 422, as (field, message).
fn problems(problem: &Value) -> Vec<(String, String)> {
    problem["errors"]
        .as_array()
        .unwrap_or_else(|| panic!("a 422 lists its problems: {problem}"))
        .iter()
        .map(|e| (text(&e["field"]), text(&e["message"])))
        .collect()
}

/// Whether `text` says `english`, or says it in German: the demo's company user reads German
/// (its `detail.lang`), and the API answers it, and keeps its files' warnings, in German
/// (`0 to 1,000,000,000` is `0 bis 1.000.000.000`, `row 2` is `Zeile 2`).
fn says(text: &str, english: &str) -> bool {
    let german = english
        .replace(',', ".")
        .replace(" to ", " bis ")
        .replace("row ", "Zeile ");
    text.contains(english) || text.contains(&german)
}

/// Asserts a 422 with a problem of `field` whose message names `range`.
fn refused_naming(answer: &Response, field: &str, range: &str) {
    let problem = answer.assert_problem(422, "validation_failed");
    let found = problems(&problem);
    assert!(
        found.iter().any(|(f, m)| f == field && says(m, range)),
        "a problem of {field} naming {range}: {problem}"
    );
}

/// The id of the stock record of a variant in a warehouse.
async fn stock_id(fx: &Fixture, warehouse: &str, variant: &str) -> String {
    let found = fx
        .get(&format!(
            "/api/stock?fk_warehouse={warehouse}&fk_variant={variant}&fields=id"
        ))
        .await;
    text(&found.records("stock")[0]["id"])
}

/// Asserts that `path` (a list request) answers 200 as JSON and as CSV for `user_type`, with
/// `expected` records.
async fn list_reads_back(
    fx: &Fixture,
    user_type: &str,
    path: &str,
    resource: &str,
    expected: usize,
) {
    let listed = get(fx, user_type, path).await;
    assert_eq!(
        listed.status,
        200,
        "{user_type} {path}: {}",
        String::from_utf8_lossy(&listed.body)
    );
    assert_eq!(
        listed.records(resource).len(),
        expected,
        "{user_type} {path}"
    );
    let joiner = if path.contains('?') { '&' } else { '?' };
    let exported = get(fx, user_type, &format!("{path}{joiner}format=csv")).await;
    assert_eq!(
        exported.status,
        200,
        "{user_type} {path} as CSV: {}",
        String::from_utf8_lossy(&exported.body)
    );
    let rows = csv::Reader::from_reader(exported.body.as_slice())
        .records()
        .count();
    assert_eq!(rows, expected, "{user_type} {path} as CSV");
}

/// Asserts that the stock record of `variant` in `warehouse` reads back for every user type
/// that sees it: listed, by id and exported as CSV, with counts that are whole numbers.
async fn stock_reads_back(fx: &Fixture, warehouse: &str, variant: &str) {
    let path = format!("/api/stock?fk_warehouse={warehouse}&fk_variant={variant}");
    for user_type in ["admin", "host", "warehouse", "company"] {
        list_reads_back(fx, user_type, &path, "stock", 1).await;
        let record = get(fx, user_type, &path).await.records("stock")[0].clone();
        for count in ["inStock", "demand", "supply", "available"] {
            // Unset (an empty cell of a stock file clears a count) or a whole number.
            assert!(
                record[count].is_i64() || record[count].is_null(),
                "{count} reads as a whole number: {record}"
            );
        }
        let by_id = get(
            fx,
            user_type,
            &format!("/api/stock/{}", text(&record["id"])),
        )
        .await;
        assert_eq!(
            by_id.status,
            200,
            "{}",
            String::from_utf8_lossy(&by_id.body)
        );
    }
}

/// Asserts that the order `id` and its lines read back for the host and the admin: by id, its
/// lines listed, both exported as CSV, every amount a number.
async fn order_reads_back(fx: &Fixture, id: &str) {
    for user_type in ["admin", "host"] {
        let by_id = get(fx, user_type, &format!("/api/order/{id}")).await;
        assert_eq!(
            by_id.status,
            200,
            "{}",
            String::from_utf8_lossy(&by_id.body)
        );
        let order = by_id.records("order")[0].clone();
        for amount in ["net", "gross", "vat"] {
            assert!(
                order["detail"][amount].is_number(),
                "{amount} is a number: {order}"
            );
        }
        list_reads_back(fx, user_type, &format!("/api/order?id={id}"), "order", 1).await;
        let lines = get(fx, user_type, &format!("/api/orderItem?fk_order={id}"))
            .await
            .records("orderItem");
        for line in &lines {
            for amount in ["itemPrice", "lineNet", "lineTax", "lineGross"] {
                assert!(line[amount].is_number(), "{amount} is a number: {line}");
            }
        }
        list_reads_back(
            fx,
            user_type,
            &format!("/api/orderItem?fk_order={id}"),
            "orderItem",
            lines.len(),
        )
        .await;
    }
}

/// Sets a stock record's counts as the admin.
async fn set_stock(fx: &Fixture, id: &str, counts: Value) {
    let answer = call(
        fx,
        reqwest::Method::PATCH,
        &format!("/api/stock/{id}"),
        "admin",
        Some(counts),
    )
    .await;
    assert_eq!(
        answer.status,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
}

/// Uploads a sheet as the company user and waits for it to be processed; the file record.
async fn upload(fx: &Fixture, part: &str, rows: &[Vec<String>]) -> Value {
    let bytes = xlsx(rows);
    let credential = fx.credential("company");
    let response = fx
        .client()
        .post(format!("{}/api/file?wait=60", fx.base))
        .header(
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .body(multipart(&[(part, Some("numbers.xlsx"), &bytes)]))
        .basic_auth(&credential.email, Some(&credential.secret))
        .send()
        .await
        .expect("the server answers");
    let response = Response::read(response).await;
    assert_eq!(
        response.status,
        201,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    let file = response.records("file")[0].clone();
    assert_eq!(file["status"], "processed", "{file}");
    file
}

/// Runs statements on the fixture's database directly, beside the API (to make a record
/// no API write could).
async fn on_database(fx: &Fixture, statements: &[String]) {
    use sqlx::Connection;
    for statement in statements {
        let statement = sqlx::AssertSqlSafe(statement.clone());
        match fx.db {
            Db::Sqlite => {
                let mut connection = sqlx::SqliteConnection::connect(&fx.database_url)
                    .await
                    .expect("SQLite opens");
                sqlx::raw_sql(statement)
                    .execute(&mut connection)
                    .await
                    .expect("the statement runs");
            }
            Db::Postgres => {
                let mut connection = sqlx::PgConnection::connect(&fx.database_url)
                    .await
                    .expect("PostgreSQL answers");
                sqlx::raw_sql(statement)
                    .execute(&mut connection)
                    .await
                    .expect("the statement runs");
            }
        }
    }
}

/// An order of one line for `p`, taken in by the host, acknowledged by the warehouse; its id
/// and its line's id.
async fn accepted_order(
    fx: &Fixture,
    p: &Place,
    variant: &str,
    qty: i64,
) -> (String, String, String) {
    let reference = unique("NUM");
    let body = json!({
        "fk_brandStore": p.brand_store, "hostOrderRef": reference,
        "shipAddress": {"forename": "Ada", "line1": "1 Analytical Row"},
        "order_orderItem": [{"fk_variant": variant, "orderQty": qty, "itemPrice": 5, "hostItemRef": "L1"}]
    });
    let order = ok(
        &call(fx, reqwest::Method::POST, "/api/order", "host", Some(body)).await,
        201,
    );
    let id = text(&order["id"]);
    ok(
        &patch(fx, "warehouse", &id, json!({"status": "accepted"})).await,
        200,
    );
    let line = get(
        fx,
        "host",
        &format!("/api/orderItem?fk_order={id}&fields=id"),
    )
    .await
    .ids("orderItem")[0]
        .clone();
    let brand_order_ref = text(
        &get(fx, "host", &format!("/api/order/{id}?fields=brandOrderRef"))
            .await
            .records("order")[0]["brandOrderRef"],
    );
    (id, line, brand_order_ref)
}

on_both_backends! { "numbers";

async fn an_order_quantity_past_its_range_is_refused_and_the_stock_stays_readable(fx) {
    let p = place(fx, 0).await;
    let variant = p.variants[0].0.clone();
    let before = stock(fx, &p.warehouse, &variant).await;
    // The same huge line twice: once would have overflowed demand, twice for certain.
    for _ in 0..2 {
        let line = format!(r#"{{"fk_variant": "{variant}", "orderQty": 9223372036854775807, "itemPrice": 1}}"#);
        let answer = send_text(fx, reqwest::Method::POST, "/api/order", "host", &intake_text(&p, &unique("HUGE"), &line, "0")).await;
        refused_naming(&answer, "order_orderItem.orderQty", "1 to 1,000,000");
    }
    assert_eq!(stock(fx, &p.warehouse, &variant).await, before, "nothing moved");
    stock_reads_back(fx, &p.warehouse, &variant).await;
    // At the top of the range an order is taken in.
    let line = format!(r#"{{"fk_variant": "{variant}", "orderQty": 1000000, "itemPrice": 0.5}}"#);
    let answer = send_text(fx, reqwest::Method::POST, "/api/order", "host", &intake_text(&p, &unique("TOP"), &line, "0")).await;
    let order = ok(&answer, 201);
    assert_eq!(stock(fx, &p.warehouse, &variant).await.1, before.1 + 1_000_000);
    order_reads_back(fx, &text(&order["id"])).await;
    stock_reads_back(fx, &p.warehouse, &variant).await;
    ok(&patch(fx, "host", &text(&order["id"]), json!({"status": "cancelled"})).await, 200);
    assert_eq!(stock(fx, &p.warehouse, &variant).await, before, "the cancellation gave the demand back");
}

async fn infinite_and_unbounded_amounts_are_refused_and_amounts_kept_to_two_decimals(fx) {
    let p = place(fx, 1).await;
    let variant = p.variants[0].0.clone();
    let intake = |line: String, shipping: &str| intake_text(&p, &unique("AMT"), &line, shipping);
    let line = |qty: &str, price: &str, extra: &str| format!(r#"{{"fk_variant": "{variant}", "orderQty": {qty}, "itemPrice": {price}{extra}}}"#);
    // Ten at 1e308 would be infinity.
    let answer = send_text(fx, reqwest::Method::POST, "/api/order", "host", &intake(line("10", "1e308", ""), "0")).await;
    refused_naming(&answer, "order_orderItem.itemPrice", "0 to 1,000,000,000");
    // Each number outside its field's domain, named with its range.
    for (qty, price, extra, shipping, field, range) in [
        ("1.5", "1", "", "0", "order_orderItem.orderQty", "1 to 1,000,000"),
        ("-0", "1", "", "0", "order_orderItem.orderQty", "1 to 1,000,000"),
        ("0", "1", "", "0", "order_orderItem.orderQty", "1 to 1,000,000"),
        ("18446744073709551616", "1", "", "0", "order_orderItem.orderQty", "1 to 1,000,000"),
        ("1", "-0.01", "", "0", "order_orderItem.itemPrice", "0 to 1,000,000,000"),
        ("1", "1", r#", "lineTax": -1e308"#, "0", "order_orderItem.lineTax", "-1,000,000,000 to 1,000,000,000"),
        ("1", "1", "", "1e10", "detail.shippingGross", "-1,000,000,000 to 1,000,000,000"),
        // A line whose amount, orderQty × itemPrice, is past the range.
        ("1000000", "1000000000", "", "0", "order_orderItem.lineGross", "-1,000,000,000 to 1,000,000,000"),
    ] {
        let answer = send_text(fx, reqwest::Method::POST, "/api/order", "host", &intake(line(qty, price, extra), shipping)).await;
        refused_naming(&answer, field, range);
    }
    // Two lines each within the range whose total is not.
    let both = format!("{},{}", line("1", "999999999", ""), line("1", "999999999", ""));
    let answer = send_text(fx, reqwest::Method::POST, "/api/order", "host", &intake(both, "0")).await;
    refused_naming(&answer, "detail.gross", "-1,000,000,000 to 1,000,000,000");
    // A number past what a double holds is no number at all.
    let answer = send_text(fx, reqwest::Method::POST, "/api/order", "host", &intake(line("1", "1e400", ""), "0")).await;
    answer.assert_problem(400, "invalid_value");
    // Within the domain: whole numbers written as decimals are whole numbers, amounts are
    // kept to two decimals.
    let answer = send_text(fx, reqwest::Method::POST, "/api/order", "host", &intake(line("2.0", "19.999", r#", "lineNet": 33.333"#), "4.951")).await;
    let order = ok(&answer, 201);
    let id = text(&order["id"]);
    assert_eq!(order["detail"]["shippingGross"], json!(4.95), "{order}");
    assert_eq!(order["detail"]["gross"], json!(40.0), "{order}");
    let item = get(fx, "host", &format!("/api/orderItem?fk_order={id}")).await.records("orderItem")[0].clone();
    assert_eq!((item["orderQty"].clone(), item["itemPrice"].clone(), item["lineNet"].clone(), item["lineTax"].clone()), (json!(2), json!(20.0), json!(33.33), json!(6.67)), "{item}");
    order_reads_back(fx, &id).await;
    ok(&patch(fx, "host", &id, json!({"status": "cancelled"})).await, 200);
    // Prices: the same domain through the generic writes.
    let price = get(fx, "company", "/api/price?pageSize=1&fields=id&order_by=id").await.ids("price")[0].clone();
    for body in [r#"{"price": 1e308}"#, r#"{"rrp": -1}"#, r#"{"price": 1000000000.01}"#] {
        let answer = send_text(fx, reqwest::Method::PATCH, &format!("/api/price/{price}"), "company", body).await;
        answer.assert_problem(422, "validation_failed");
    }
}

async fn stock_counts_outside_their_domain_are_refused_in_json_writes(fx) {
    let p = place(fx, 2).await;
    let variant = p.variants[0].0.clone();
    let id = stock_id(fx, &p.warehouse, &variant).await;
    let before = stock(fx, &p.warehouse, &variant).await;
    for (body, field) in [
        (r#"{"inStock": -1}"#, "inStock"),
        (r#"{"inStock": 9223372036854775807}"#, "inStock"),
        (r#"{"inStock": 1e308}"#, "inStock"),
        (r#"{"demand": 1000000001}"#, "demand"),
        (r#"{"demand": -9223372036854775808}"#, "demand"),
        (r#"{"supply": 1.5}"#, "supply"),
    ] {
        for user_type in ["admin", "warehouse"] {
            let answer = send_text(fx, reqwest::Method::PATCH, &format!("/api/stock/{id}"), user_type, body).await;
            refused_naming(&answer, field, "0 to 1,000,000,000");
        }
    }
    assert_eq!(stock(fx, &p.warehouse, &variant).await, before);
    // A create is held to the same domain.
    let create = format!(r#"{{"fk_warehouse": "{}", "fk_variant": "{variant}", "inStock": 2000000000}}"#, p.warehouse);
    let answer = send_text(fx, reqwest::Method::POST, "/api/stock?upsert=true", "admin", &create).await;
    refused_naming(&answer, "inStock", "0 to 1,000,000,000");
    // The bounds themselves are counts.
    let answer = send_text(fx, reqwest::Method::PATCH, &format!("/api/stock/{id}"), "admin", r#"{"inStock": 1000000000, "demand": -0, "supply": 1e3}"#).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    assert_eq!(stock(fx, &p.warehouse, &variant).await, (1_000_000_000, 0, 1_000_000_000));
    stock_reads_back(fx, &p.warehouse, &variant).await;
    set_stock(fx, &id, json!({"inStock": before.0, "demand": before.1})).await;
}

async fn a_stock_file_skips_rows_whose_counts_are_outside_their_domain(fx) {
    let p = place(fx, 3).await;
    let barcode = |i: usize| p.variants[i].1.clone();
    let file = upload(fx, &format!("stock,{},{}", p.brand, p.warehouse), &[
        row(&["Barcode", "In Stock", "Demand", "Supply"]),
        row(&[&barcode(0), "5", "0", "0"]),
        row(&[&barcode(1), "1000000001", "", ""]),
        row(&[&barcode(1), "-1", "", ""]),
        row(&[&barcode(2), "7", "-3", ""]),
        row(&[&barcode(2), "7", "", "9223372036854775807"]),
        row(&[&barcode(2), "1e308", "", ""]),
        row(&[&barcode(2), "2.5", "", ""]),
    ]).await;
    assert_eq!(file["detail"]["rowsApplied"], 1, "{file}");
    assert_eq!(file["detail"]["rowsSkipped"], 6, "{file}");
    let error = text(&file["detail"]["error"]);
    for expected in ["1000000001", "In Stock -1", "Demand -3", "Supply 9223372036854775807", "0 to 1,000,000,000"] {
        assert!(says(&error, expected), "{expected} in {error}");
    }
    assert_eq!(stock(fx, &p.warehouse, &p.variants[0].0).await.0, 5);
    for (variant, _) in &p.variants {
        stock_reads_back(fx, &p.warehouse, variant).await;
    }
}

async fn a_stock_move_that_would_leave_the_range_is_refused_whole(fx) {
    let p = place(fx, 4).await;
    let variant = p.variants[0].0.clone();
    let id = stock_id(fx, &p.warehouse, &variant).await;
    let before = stock(fx, &p.warehouse, &variant).await;
    // Demand at the top of its domain: one more unit ordered would pass 1,000,000,000.
    set_stock(fx, &id, json!({"demand": 1_000_000_000})).await;
    let reference = unique("FULL");
    let line = format!(r#"{{"fk_variant": "{variant}", "orderQty": 1, "itemPrice": 5}}"#);
    let answer = send_text(fx, reqwest::Method::POST, "/api/order", "host", &intake_text(&p, &reference, &line, "0")).await;
    refused_naming(&answer, "stock.demand", "-1,000,000,000 to 1,000,000,000");
    assert!(get(fx, "host", &format!("/api/order?hostOrderRef={reference}")).await.records("order").is_empty(), "no order was made");
    assert_eq!(stock(fx, &p.warehouse, &variant).await.1, 1_000_000_000);
    stock_reads_back(fx, &p.warehouse, &variant).await;

    // A return that would take inStock past the top: refused, the order as it was.
    set_stock(fx, &id, json!({"inStock": 10, "demand": 0})).await;
    let (order, item, _) = accepted_order(fx, &p, &variant, 2).await;
    ok(&patch(fx, "warehouse", &order, json!({"status": "dispatched"})).await, 200);
    set_stock(fx, &id, json!({"inStock": 1_000_000_000})).await;
    let answer = patch(fx, "host", &order, json!({"status": "returned", "order_orderItem": [{"id": item, "returnQty": 2}]})).await;
    refused_naming(&answer, "stock.inStock", "-1,000,000,000 to 1,000,000,000");
    assert_eq!(get(fx, "host", &format!("/api/order/{order}?fields=status")).await.records("order")[0]["status"], "dispatched");
    assert_eq!(get(fx, "host", &format!("/api/orderItem/{item}?fields=returnQty")).await.records("orderItem")[0]["returnQty"], 0);
    assert_eq!(stock(fx, &p.warehouse, &variant).await.0, 1_000_000_000);
    // Quantities of steps are held to their domains too.
    for qty in ["9223372036854775807", "1e308", "-1", "0.5"] {
        let body = format!(r#"{{"status": "returned", "order_orderItem": [{{"id": "{item}", "returnQty": {qty}}}]}}"#);
        let answer = send_text(fx, reqwest::Method::PATCH, &format!("/api/order/{order}"), "host", &body).await;
        refused_naming(&answer, "order_orderItem.returnQty", "0 to 1,000,000,000");
    }
    set_stock(fx, &id, json!({"inStock": 10})).await;
    ok(&patch(fx, "host", &order, json!({"status": "returned", "order_orderItem": [{"id": item, "returnQty": 1}]})).await, 200);
    assert_eq!(stock(fx, &p.warehouse, &variant).await.0, 11);
    order_reads_back(fx, &order).await;
    stock_reads_back(fx, &p.warehouse, &variant).await;
    set_stock(fx, &id, json!({"inStock": before.0, "demand": before.1})).await;
}

async fn dispatch_quantities_are_held_to_their_domain(fx) {
    let p = place(fx, 5).await;
    let variant = p.variants[0].0.clone();
    let (order, item, _) = accepted_order(fx, &p, &variant, 3).await;
    for qty in ["9223372036854775807", "-9223372036854775808", "1e308", "-1", "1.5"] {
        let body = format!(r#"{{"status": "partDispatched", "order_orderItem": [{{"id": "{item}", "shipQty": {qty}}}]}}"#);
        let answer = send_text(fx, reqwest::Method::PATCH, &format!("/api/order/{order}"), "warehouse", &body).await;
        refused_naming(&answer, "order_orderItem.shipQty", "0 to 1,000,000,000");
        let array = format!(r#"[{{"id": "{order}", "order_orderItem": [{{"id": "{item}", "shipQty": {qty}}}]}}]"#);
        let answer = send_text(fx, reqwest::Method::POST, "/api/order/dispatch", "warehouse", &array).await;
        assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
        let outcome = answer.json()["response"]["dispatch"][0].clone();
        assert_eq!(outcome["status"], 422, "{outcome}");
        assert!(outcome["errors"].as_array().unwrap().iter().any(|e| e["field"] == "order_orderItem.shipQty" && text(&e["message"]).contains("0 to 1,000,000,000")), "{outcome}");
    }
    // A line ships at most what was ordered, and the order is as it was.
    let answer = patch(fx, "warehouse", &order, json!({"status": "partDispatched", "order_orderItem": [{"id": item, "shipQty": 1_000_000_000}]})).await;
    answer.assert_problem(422, "validation_failed");
    assert_eq!(get(fx, "host", &format!("/api/order/{order}?fields=status")).await.records("order")[0]["status"], "accepted");
    order_reads_back(fx, &order).await;
    stock_reads_back(fx, &p.warehouse, &variant).await;
}

async fn a_dispatch_file_row_that_would_take_stock_out_of_range_is_skipped(fx) {
    let p = place(fx, 6).await;
    let (low, other) = (p.variants[0].0.clone(), p.variants[1].0.clone());
    let low_stock = stock_id(fx, &p.warehouse, &low).await;
    let before = stock(fx, &p.warehouse, &low).await;
    let (first, first_item, first_ref) = accepted_order(fx, &p, &low, 3).await;
    let (second, _, second_ref) = accepted_order(fx, &p, &other, 1).await;
    // A count near the bottom of the range, as no API write could leave it.
    on_database(fx, &[format!("UPDATE stock SET in_stock = -999999999 WHERE id = '{low_stock}'")]).await;
    let file = upload(fx, &format!("orderDispatch,{}", p.brand), &[
        row(&["Order Ref", "Item Ref", "Ship Qty"]),
        row(&[&first_ref, "L1", "3"]),
        row(&[&second_ref, "L1", "1"]),
    ]).await;
    assert_eq!(file["detail"]["rowsApplied"], 1, "{file}");
    assert_eq!(file["detail"]["rowsSkipped"], 1, "{file}");
    let error = text(&file["detail"]["error"]);
    assert!(says(&error, "row 2 (") && error.contains("inStock") && error.contains("-1,000,000,000 to 1,000,000,000"), "{error}");
    assert_eq!(get(fx, "host", &format!("/api/order/{first}?fields=status")).await.records("order")[0]["status"], "accepted");
    assert_eq!(get(fx, "host", &format!("/api/orderItem/{first_item}?fields=shipQty")).await.records("orderItem")[0]["shipQty"], 0);
    assert_eq!(get(fx, "host", &format!("/api/order/{second}?fields=status")).await.records("order")[0]["status"], "dispatched");
    assert_eq!(stock(fx, &p.warehouse, &low).await.0, -999_999_999);
    stock_reads_back(fx, &p.warehouse, &low).await;
    set_stock(fx, &low_stock, json!({"inStock": before.0})).await;
    ok(&patch(fx, "host", &first, json!({"status": "cancelled"})).await, 200);
}

async fn the_openapi_document_gives_each_write_its_domain(fx) {
    let response = fx.client().get(format!("{}/api/openapi.json", fx.base)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let document: Value = response.json().await.unwrap();
    let body = |path: &str, method: &str| document["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"].clone();
    let line = &body("/api/order", "post")["properties"]["order_orderItem"]["items"]["properties"];
    assert_eq!((line["orderQty"]["minimum"].clone(), line["orderQty"]["maximum"].clone()), (json!(1.0), json!(1_000_000.0)), "{line}");
    assert_eq!((line["itemPrice"]["minimum"].clone(), line["itemPrice"]["maximum"].clone()), (json!(0.0), json!(1_000_000_000.0)), "{line}");
    let stock = &body("/api/stock/{id}", "patch")["properties"];
    assert_eq!((stock["demand"]["minimum"].clone(), stock["demand"]["maximum"].clone()), (json!(0.0), json!(1_000_000_000.0)), "{stock}");
}

async fn no_number_makes_a_stock_or_order_record_unreadable(fx) {
    let p = place(fx, 7).await;
    let variant = p.variants[0].0.clone();
    let stock_record = stock_id(fx, &p.warehouse, &variant).await;
    let mut runner = TestRunner::new(Config { cases: 12, ..Config::default() });
    let case = (json_number(), json_number(), json_number(), json_number(), json_number(), json_number(), count_cell(), count_cell());
    for _ in 0..12 {
        let (qty, price, gross, shipping, ship, give_back, in_stock, demand) = case.new_tree(&mut runner).expect("a case").current();
        let shown = format!("orderQty {qty}, itemPrice {price}, lineGross {gross}, shippingGross {shipping}, shipQty {ship}, returnQty {give_back}, file counts {in_stock}/{demand}");
        let answered = |answer: &Response, what: &str| {
            assert!(matches!(answer.status, 200 | 201 | 400 | 409 | 422), "{what} ({shown}): {} {}", answer.status, String::from_utf8_lossy(&answer.body));
        };
        // The intake, with and without a given lineGross.
        let mut orders = Vec::new();
        for extra in [String::new(), format!(r#", "lineGross": {gross}"#)] {
            let line = format!(r#"{{"fk_variant": "{variant}", "orderQty": {qty}, "itemPrice": {price}{extra}}}"#);
            let answer = send_text(fx, reqwest::Method::POST, "/api/order", "host", &intake_text(&p, &unique("PROP"), &line, &shipping)).await;
            answered(&answer, "intake");
            if answer.status == 201 {
                orders.push(text(&answer.records("order")[0]["id"]));
            }
            stock_reads_back(fx, &p.warehouse, &variant).await;
        }
        // Steps on what was taken in: acknowledgement, a dispatch and a return of the numbers.
        for order in &orders {
            order_reads_back(fx, order).await;
            let item = get(fx, "host", &format!("/api/orderItem?fk_order={order}&fields=id")).await.ids("orderItem")[0].clone();
            answered(&patch(fx, "warehouse", order, json!({"status": "accepted"})).await, "acknowledgement");
            let body = format!(r#"{{"status": "partDispatched", "order_orderItem": [{{"id": "{item}", "shipQty": {ship}}}]}}"#);
            answered(&send_text(fx, reqwest::Method::PATCH, &format!("/api/order/{order}"), "warehouse", &body).await, "dispatch");
            let array = format!(r#"[{{"id": "{order}", "status": "dispatched", "order_orderItem": [{{"id": "{item}", "shipQty": {ship}}}]}}]"#);
            answered(&send_text(fx, reqwest::Method::POST, "/api/order/dispatch", "warehouse", &array).await, "dispatch array");
            let body = format!(r#"{{"status": "returned", "order_orderItem": [{{"id": "{item}", "returnQty": {give_back}}}]}}"#);
            answered(&send_text(fx, reqwest::Method::PATCH, &format!("/api/order/{order}"), "host", &body).await, "return");
            order_reads_back(fx, order).await;
            stock_reads_back(fx, &p.warehouse, &variant).await;
        }
        // A stock file and a JSON stock write of the counts.
        upload(fx, &format!("stock,{},{}", p.brand, p.warehouse), &[
            row(&["Barcode", "In Stock", "Demand"]),
            row(&[&p.variants[0].1, &in_stock, &demand]),
        ]).await;
        stock_reads_back(fx, &p.warehouse, &variant).await;
        let body = format!(r#"{{"inStock": {ship}, "demand": {give_back}}}"#);
        answered(&send_text(fx, reqwest::Method::PATCH, &format!("/api/stock/{stock_record}"), "warehouse", &body).await, "stock write");
        stock_reads_back(fx, &p.warehouse, &variant).await;
    }
}
}

/// Any JSON number, as text: the extremes (past i64 and u64, past what a double holds,
/// negative zero, denormals), the edges of the domains, and random integers and doubles.
fn json_number() -> impl Strategy<Value = String> {
    let edges = [
        "9223372036854775807",
        "-9223372036854775808",
        "18446744073709551616",
        "1e308",
        "-1e308",
        "1e400",
        "-1e400",
        "-0",
        "0",
        "1",
        "1.5",
        "0.005",
        "-0.001",
        "4.9e-324",
        "1e-400",
        "1000000",
        "1000001",
        "999999999.999",
        "1000000000",
        "1000000001",
        "2.0",
    ];
    prop_oneof![
        3 => proptest::sample::select(edges.to_vec()).prop_map(str::to_string),
        1 => any::<i64>().prop_map(|n| n.to_string()),
        2 => (0i64..2_000_000).prop_map(|n| n.to_string()),
        1 => any::<f64>().prop_filter("JSON has no NaN or infinity", |f| f.is_finite()).prop_map(|f| format!("{f:e}")),
        1 => (0.0f64..2e9).prop_map(|f| format!("{f}")),
    ]
}

/// A stock file's count cell: any number as text, or empty.
fn count_cell() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => json_number(),
        1 => Just(String::new()),
        1 => Just("inf".to_string()),
        1 => Just("NaN".to_string()),
    ]
}

// ---- the outbox: a record that does not read is set aside, the rest flows ----

#[derive(Clone)]
struct Receiver {
    url: String,
    got: Arc<Mutex<Vec<Value>>>,
}

async fn receive(
    axum::extract::State(got): axum::extract::State<Arc<Mutex<Vec<Value>>>>,
    body: axum::body::Bytes,
) -> axum::http::StatusCode {
    if let Ok(event) = serde_json::from_slice(&body) {
        got.lock().unwrap().push(event);
    }
    axum::http::StatusCode::OK
}

/// A receiver of webhook deliveries on 127.0.0.1 (plain http, which the outbox fixture's
/// store allows), on the current runtime.
async fn receiver() -> Receiver {
    let got = Arc::new(Mutex::new(Vec::new()));
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(receive))
        .with_state(got.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Receiver { url, got }
}

impl Receiver {
    /// Waits (up to a minute) until an event of `event_type` about `id` arrived.
    async fn until_about(&self, event_type: &str, id: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if self.about(event_type, id) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "no {event_type} about {id} arrived within a minute: {:?}",
                self.got.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn about(&self, event_type: &str, id: &str) -> bool {
        self.got
            .lock()
            .unwrap()
            .iter()
            .any(|e| e["type"] == event_type && e["data"]["id"] == id)
    }
}

/// A fixture whose server fans out nothing itself: the test decides when the outbox is read.
fn outbox_fixture(db: Db) -> Option<&'static Fixture> {
    common::shared_with(db, "outbox", common::SCALE, |settings| {
        settings.webhooks.allow_insecure_localhost = true;
        settings.webhooks.senders = 0;
    })
}

/// The webhook settings of the delivery tasks the outbox test starts.
fn fast_webhooks() -> brandhub_webhooks::WebhookSettings {
    brandhub_webhooks::WebhookSettings {
        senders: 1,
        timeout: Duration::from_secs(5),
        poll_interval: Duration::from_millis(50),
        retry: RetrySchedule {
            first: Duration::from_millis(200),
            longest: Duration::from_secs(2),
            period: Duration::from_secs(600),
        },
        batch_wait: Duration::from_secs(1),
        allow_insecure_localhost: true,
    }
}

async fn a_record_that_does_not_read_is_set_aside_and_the_other_events_flow(fx: &'static Fixture) {
    let hooks = receiver().await;
    let subscribed = call(
        fx,
        reqwest::Method::POST,
        "/api/webhook",
        "company",
        Some(json!({"url": hooks.url, "events": ["stock.updated", "order.created"]})),
    )
    .await;
    assert_eq!(
        subscribed.status,
        201,
        "{}",
        String::from_utf8_lossy(&subscribed.body)
    );
    // Two stock changes and an order: events waiting in the outbox. (Stock's `supply`, which
    // no offer reads, is what stops reading.)
    let stock = get(fx, "company", "/api/stock?pageSize=2&fields=id&order_by=id")
        .await
        .ids("stock");
    for record in &stock {
        let answer = call(
            fx,
            reqwest::Method::PATCH,
            &format!("/api/stock/{record}"),
            "admin",
            Some(json!({"supply": 12})),
        )
        .await;
        assert_eq!(
            answer.status,
            200,
            "{}",
            String::from_utf8_lossy(&answer.body)
        );
    }
    let p = place(fx, 0).await;
    let body = common::orders::intake_body(&p, &unique("OUTBOX"));
    let order = text(
        &ok(
            &call(fx, reqwest::Method::POST, "/api/order", "host", Some(body)).await,
            201,
        )["id"],
    );
    // The first stock record no longer reads: a value its column's type cannot hold (on
    // PostgreSQL, whose columns hold only their type, the column's type is changed first, so
    // that every stock record fails to read).
    let broken = &stock[0];
    let mut statements = Vec::new();
    if fx.db == Db::Postgres {
        statements
            .push("ALTER TABLE stock ALTER COLUMN supply TYPE TEXT USING supply::text".to_string());
    }
    statements.push(format!(
        "UPDATE stock SET supply = 'not a count' WHERE id = '{broken}'"
    ));
    on_database(fx, &statements).await;
    // Delivery tasks of another process over the same database, started now.
    let url = fx.database_url.clone();
    let deliveries = fx
        .on_server(async move {
            let store = brandhub_store::Store::connect(&brandhub_store::StoreOptions {
                url,
                max_connections: 4,
                page_cache_bytes: 0,
                matches_first_limit: 40,
                pg_settings: Vec::new(),
                database_wait: brandhub_store::db::DEFAULT_DATABASE_WAIT,
            })
            .await
            .expect("the database opens")
            .allowing_insecure_loopback_urls();
            brandhub_webhooks::Deliveries::start(store, fast_webhooks(), Default::default())
        })
        .await;
    hooks.until_about("order.created", &order).await;
    if fx.db == Db::Sqlite {
        // Only the one record fails: the other stock record of the same read is delivered.
        hooks.until_about("stock.updated", &stock[1]).await;
    }
    assert!(!hooks.about("stock.updated", broken));
    // The event is set aside with its reason, for admins only.
    let deadline = Instant::now() + Duration::from_secs(60);
    let problem = loop {
        let found = get(fx, "admin", &format!("/api/eventProblem?recordId={broken}")).await;
        assert_eq!(
            found.status,
            200,
            "{}",
            String::from_utf8_lossy(&found.body)
        );
        if let Some(problem) = found.records("eventProblem").first() {
            break problem.clone();
        }
        assert!(
            Instant::now() < deadline,
            "the event was not set aside within a minute"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(problem["eventType"], "stock.updated", "{problem}");
    assert_eq!(problem["resource"], "stock", "{problem}");
    assert!(!text(&problem["reason"]).is_empty(), "{problem}");
    for user_type in ["company", "host", "warehouse"] {
        let seen = get(fx, user_type, "/api/eventProblem").await;
        assert_eq!(seen.status, 200, "{}", String::from_utf8_lossy(&seen.body));
        assert!(
            seen.records("eventProblem").is_empty(),
            "{user_type} sees no set-aside events"
        );
    }
    // The outbox is empty: nothing is retried forever.
    let store = fx.store.clone();
    let waiting = fx
        .on_server(async move { store.webhook_backlog().await.expect("the backlog reads").0 })
        .await;
    assert_eq!(waiting, 0, "events still wait in the outbox");
    fx.on_server(async move { deliveries.stop(Duration::from_secs(5)).await })
        .await;
}

mod outbox {
    use super::*;

    #[tokio::test]
    async fn sqlite_a_record_that_does_not_read_is_set_aside_and_the_other_events_flow() {
        let fx = outbox_fixture(Db::Sqlite).expect("SQLite always runs");
        a_record_that_does_not_read_is_set_aside_and_the_other_events_flow(fx).await;
    }

    #[tokio::test]
    async fn postgres_a_record_that_does_not_read_is_set_aside_and_the_other_events_flow() {
        if common::postgres_or_skip().is_none() {
            return;
        }
        let fx = outbox_fixture(Db::Postgres).expect("PostgreSQL is configured");
        a_record_that_does_not_read_is_set_aside_and_the_other_events_flow(fx).await;
    }
}
