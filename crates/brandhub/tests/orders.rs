//! Orders (docs/API.md, "Orders: intake, lifecycle and stock") through the API as the demo host, warehouse and company users: an
//! order's whole life (intake, partial acknowledgement, partial and full dispatch by API,
//! by dispatch array and by spreadsheet, delivery, return, cancellation), each step read
//! back with the stock it moved; every refused transition; a duplicate push; scope; and
//! concurrent intakes of one variant that must not lose a unit of demand.

mod common;

use common::orders::{call, get, intake_body, ok, patch, place, stock, text, unique};
use common::{BOUNDARY, multipart, row, xlsx};
use serde_json::{Value, json};

/// The order's lines by hostItemRef, as `user` sees them.
async fn lines(fx: &common::Fixture, user: &str, id: &str) -> Vec<Value> {
    let mut found = get(
        fx,
        user,
        &format!("/api/orderItem?fk_order={id}&order_by=hostItemRef&pageSize=10"),
    )
    .await
    .records("orderItem");
    found.sort_by_key(|l| text(&l["hostItemRef"]));
    found
}

async fn upload_dispatch(
    fx: &common::Fixture,
    user: &str,
    brand: &str,
    rows: &[Vec<String>],
) -> Value {
    let part = format!("orderDispatch,{brand}");
    let bytes = xlsx(rows);
    let credential = fx.credential(user);
    let response = fx
        .client()
        .post(format!("{}/api/file?wait=60", fx.base))
        .header(
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .body(multipart(&[(&part, Some("dispatch.xlsx"), &bytes)]))
        .basic_auth(&credential.email, Some(&credential.secret))
        .send()
        .await
        .expect("the server answers");
    let response = common::Response::read(response).await;
    assert_eq!(
        response.status,
        201,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    response.records("file")[0].clone()
}

on_both_backends! { "orders";

async fn an_order_lives_its_whole_life_and_stock_follows(fx) {
    let p = place(fx, 0).await;
    let before: Vec<(i64, i64, i64)> = {
        let mut all = Vec::new();
        for (v, _) in &p.variants { all.push(stock(fx, &p.warehouse, v).await); }
        all
    };
    let reference = unique("LIFE");

    // Intake by the host: amounts computed and checked, refs and statuses set, demand grows.
    let order = ok(&call(fx, reqwest::Method::POST, "/api/order", "host", Some(intake_body(&p, &reference))).await, 201);
    let id = text(&order["id"]);
    assert_eq!(order["status"], "new");
    assert!(text(&order["brandOrderRef"]).starts_with("BO-"), "{order}");
    assert_eq!(order["fk_warehouse"]["__KEY"].as_str().or(order["fk_warehouse"].as_str()), Some(p.warehouse.as_str()));
    assert_eq!(order["detail"]["gross"], json!(44.0));
    assert_eq!(order["detail"]["vat"], json!(3.5));
    assert_eq!(order["detail"]["net"], json!(40.5));
    let items = lines(fx, "host", &id).await;
    assert_eq!(items.len(), 3);
    assert!(items.iter().all(|l| l["status"] == "ACC" && l["shipQty"] == 0));
    assert_eq!(items[1]["fk_variant"], json!(p.variants[1].0), "the barcode named the variant");
    assert_eq!(items[0]["lineNet"], json!(17.5));
    for (i, qty) in [2, 1, 3].into_iter().enumerate() {
        let now = stock(fx, &p.warehouse, &p.variants[i].0).await;
        assert_eq!(now.1, before[i].1 + qty, "demand of line {i}");
        assert_eq!(now.2, (now.0 - now.1).max(0), "available of line {i}");
    }

    // The same push again: 409 naming the order.
    let again = call(fx, reqwest::Method::POST, "/api/order", "host", Some(intake_body(&p, &reference))).await;
    let problem = again.assert_problem(409, "conflict");
    assert!(text(&problem["detail"]).contains(&id), "{problem}");

    // Steps the table refuses from `new`.
    let refused = patch(fx, "warehouse", &id, json!({"status": "dispatched"})).await.assert_problem(409, "invalid_transition");
    // The demo's warehouse user reads German: the statuses by the portal's words.
    assert!(text(&refused["detail"]).contains("„Neu“") && text(&refused["detail"]).contains("„Versandt“"), "{refused}");
    patch(fx, "host", &id, json!({"status": "delivered"})).await.assert_problem(409, "invalid_transition");
    patch(fx, "host", &id, json!({"status": "accepted"})).await.assert_problem(403, "forbidden");
    patch(fx, "warehouse", &id, json!({"status": "accepted", "order_orderItem": [{"id": text(&items[2]["id"]), "status": "REJ", "detail": {"reason": "TOO_LATE"}}]})).await.assert_problem(422, "validation_failed");

    // Partial acknowledgement by the warehouse: line 3 rejected, its demand given back; the
    // warehouse never sees money.
    let answer = patch(fx, "warehouse", &id, json!({"status": "accepted", "order_orderItem": [{"id": text(&items[2]["id"]), "status": "REJ", "detail": {"reason": "OUT_OF_STOCK"}}]})).await;
    let order = ok(&answer, 200);
    assert_eq!(order["status"], "accepted");
    assert!(!text(&order["sentToWH"]).is_empty());
    assert!(order["detail"].get("gross").is_none() && order["detail"].get("net").is_none(), "{order}");
    let shown = String::from_utf8_lossy(&answer.body).to_string();
    assert!(!shown.contains("itemPrice") && !shown.contains("lineGross"), "{shown}");
    let items = lines(fx, "warehouse", &id).await;
    assert!(items[0].get("itemPrice").is_none());
    assert_eq!(items[2]["status"], "REJ");
    assert_eq!(items[2]["detail"]["reason"], "OUT_OF_STOCK");
    assert_eq!(stock(fx, &p.warehouse, &p.variants[2].0).await.1, before[2].1);

    // 422: more than ordered, or a line that is not accepted.
    let wrong = patch(fx, "warehouse", &id, json!({"status": "partDispatched", "order_orderItem": [{"id": text(&items[1]["id"]), "shipQty": 5}, {"id": text(&items[2]["id"]), "shipQty": 1}]})).await;
    let body = wrong.assert_problem(422, "validation_failed");
    assert_eq!(body["errors"].as_array().unwrap().len(), 2, "{body}");

    // Partial dispatch by API (line 1, one of two), then by spreadsheet (line 1 in full).
    let order = ok(&patch(fx, "warehouse", &id, json!({"status": "partDispatched", "carrier": "DPD", "trackingRef": "T-1", "order_orderItem": [{"id": text(&items[0]["id"]), "shipQty": 1}]})).await, 200);
    assert_eq!(order["status"], "partDispatched");
    assert_eq!(order["carrier"], "DPD");
    assert!(!text(&order["shipDate"]).is_empty());
    let s0 = stock(fx, &p.warehouse, &p.variants[0].0).await;
    assert_eq!((s0.0, s0.1), (before[0].0 - 1, before[0].1 + 1));
    let brand_order_ref = text(&get(fx, "host", &format!("/api/order/{id}?fields=brandOrderRef")).await.records("order")[0]["brandOrderRef"]);
    let file = upload_dispatch(fx, "company", &p.brand, &[
        row(&["Order Ref", "Item Ref", "Ship Qty"]),
        row(&[&brand_order_ref, "L1", "2"]),
        row(&[&brand_order_ref, "L3", "1"]),
    ]).await;
    assert_eq!(file["status"], "processed", "{file}");
    assert_eq!(file["detail"]["rowsApplied"], 1, "{file}");
    // The demo company user reads German (its detail.lang): a file's warnings are kept in
    // the language of its uploader.
    assert!(text(&file["detail"]["error"]).contains("nicht angenommen (ACC)"), "{file}");
    let items = lines(fx, "host", &id).await;
    assert_eq!((items[0]["shipQty"].clone(), items[0]["status"].clone()), (json!(2), json!("DSP")));
    let s0 = stock(fx, &p.warehouse, &p.variants[0].0).await;
    assert_eq!((s0.0, s0.1), (before[0].0 - 2, before[0].1));
    assert_eq!(get(fx, "host", &format!("/api/order/{id}?fields=status")).await.records("order")[0]["status"], "partDispatched");

    // An array with an element that is not an object is malformed as a whole: 400, nothing
    // applied.
    let malformed = call(fx, reqwest::Method::POST, "/api/order/dispatch", "warehouse", Some(json!([
        {"id": id, "status": "dispatched"}, [null]
    ]))).await;
    malformed.assert_problem(400, "invalid_value");
    let without_id = call(fx, reqwest::Method::POST, "/api/order/dispatch", "warehouse", Some(json!([
        {"id": id, "status": "dispatched"}, {"status": "dispatched"}
    ]))).await;
    without_id.assert_problem(400, "invalid_value");
    // Full dispatch by a dispatch array: each element applied or refused on its own.
    let answer = call(fx, reqwest::Method::POST, "/api/order/dispatch", "warehouse", Some(json!([
        {"id": id, "status": "dispatched", "carrier": "DHL", "trackingRef": "T-2"},
        {"id": "0123456789ABCDEF0123456789ABCDEF", "order_orderItem": []},
        {"id": id, "status": "delivered"}
    ]))).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    let outcomes = answer.json()["response"]["dispatch"].clone();
    assert_eq!(outcomes[0]["status"], 200, "{outcomes}");
    assert_eq!(outcomes[0]["orderStatus"], "dispatched");
    assert_eq!(outcomes[1]["status"], 404);
    assert_eq!(outcomes[2]["code"], "invalid_transition");
    let s1 = stock(fx, &p.warehouse, &p.variants[1].0).await;
    assert_eq!((s1.0, s1.1), (before[1].0 - 1, before[1].1));
    let order = get(fx, "host", &format!("/api/order/{id}?fields=status,carrier,trackingRef")).await.records("order")[0].clone();
    assert_eq!((order["status"].clone(), order["carrier"].clone()), (json!("dispatched"), json!("DHL")));

    // Delivery and return by the host; cancelling now is refused.
    let order = ok(&patch(fx, "host", &id, json!({"status": "delivered"})).await, 200);
    assert!(!text(&order["deliveryDate"]).is_empty());
    patch(fx, "host", &id, json!({"status": "cancelled"})).await.assert_problem(409, "invalid_transition");
    patch(fx, "host", &id, json!({"status": "returned", "order_orderItem": [{"id": text(&items[0]["id"]), "returnQty": 3}]})).await.assert_problem(422, "validation_failed");
    let order = ok(&patch(fx, "host", &id, json!({"status": "returned", "order_orderItem": [{"id": text(&items[0]["id"]), "returnQty": 1}]})).await, 200);
    assert_eq!(order["status"], "returned");
    let items = lines(fx, "host", &id).await;
    assert_eq!((items[0]["returnQty"].clone(), items[0]["status"].clone()), (json!(1), json!("RET")));
    assert!(!text(&items[0]["returnDate"]).is_empty());
    let s0 = stock(fx, &p.warehouse, &p.variants[0].0).await;
    assert_eq!((s0.0, s0.1), (before[0].0 - 1, before[0].1));
    for (status, who) in [("new", "host"), ("accepted", "warehouse"), ("dispatched", "company")] {
        patch(fx, who, &id, json!({"status": status})).await.assert_problem(409, "invalid_transition");
    }
}

async fn orders_are_rejected_or_cancelled_and_give_their_demand_back(fx) {
    let p = place(fx, 1).await;
    let before = stock(fx, &p.warehouse, &p.variants[0].0).await;
    let push = |reference: String| {
        let mut body = intake_body(&p, &reference);
        body["order_orderItem"] = json!([{"fk_variant": p.variants[0].0, "orderQty": 4, "itemPrice": 2.5}]);
        body
    };
    let first = ok(&call(fx, reqwest::Method::POST, "/api/order", "host", Some(push(unique("REJ")))).await, 201);
    let id = text(&first["id"]);
    assert_eq!(stock(fx, &p.warehouse, &p.variants[0].0).await.1, before.1 + 4);
    let order = ok(&patch(fx, "company", &id, json!({"status": "rejected"})).await, 200);
    assert_eq!(order["status"], "rejected");
    assert_eq!(lines(fx, "host", &id).await[0]["status"], "REJ");
    assert_eq!(stock(fx, &p.warehouse, &p.variants[0].0).await.1, before.1);
    patch(fx, "host", &id, json!({"status": "cancelled"})).await.assert_problem(409, "invalid_transition");

    let second = ok(&call(fx, reqwest::Method::POST, "/api/order", "host", Some(push(unique("CAN")))).await, 201);
    let id = text(&second["id"]);
    ok(&patch(fx, "company", &id, json!({"status": "accepted"})).await, 200);
    patch(fx, "warehouse", &id, json!({"status": "cancelled"})).await.assert_problem(403, "forbidden");
    let order = ok(&patch(fx, "host", &id, json!({"status": "cancelled"})).await, 200);
    assert_eq!(order["status"], "cancelled");
    assert_eq!(lines(fx, "host", &id).await[0]["status"], "CAN");
    assert_eq!(stock(fx, &p.warehouse, &p.variants[0].0).await, before);
    patch(fx, "warehouse", &id, json!({"status": "partDispatched"})).await.assert_problem(409, "invalid_transition");
}

async fn intake_gathers_every_problem_and_keeps_to_scope(fx) {
    let p = place(fx, 2).await;
    // Every problem at once, with the line's index.
    let body = json!({
        "fk_brandStore": p.brand_store,
        "order_orderItem": [
            {"fk_variant": "0123456789ABCDEF0123456789ABCDEF", "orderQty": 1, "itemPrice": 1},
            {"fk_variant": p.variants[0].0, "itemPrice": 2, "lineGross": 9},
            {"barcode": "NO-SUCH-BARCODE", "orderQty": 1, "itemPrice": 1}
        ]
    });
    let problem = call(fx, reqwest::Method::POST, "/api/order", "host", Some(body)).await.assert_problem(422, "validation_failed");
    let found: Vec<(Value, String)> = problem["errors"].as_array().unwrap().iter().map(|e| (e["index"].clone(), text(&e["field"]))).collect();
    for expected in [
        (Value::Null, "hostOrderRef".to_string()),
        (Value::Null, "shipAddress".to_string()),
        (json!(0), "order_orderItem.fk_variant".to_string()),
        (json!(1), "order_orderItem.orderQty".to_string()),
        (json!(2), "order_orderItem.barcode".to_string()),
    ] {
        assert!(found.contains(&expected), "{expected:?} in {problem}");
    }
    call(fx, reqwest::Method::POST, "/api/order", "host", Some(json!({"fk_brandStore": p.brand_store, "colour": "red"}))).await.assert_problem(400, "unknown_field");

    // Another host's brand store does not exist for this host.
    let own: Vec<String> = get(fx, "host", "/api/brandStore?pageSize=1000&fields=id").await.ids("brandStore");
    let theirs = fx.get("/api/brandStore?pageSize=1000&fields=id").await.ids("brandStore").into_iter().find(|b| !own.contains(b)).expect("another host's brand store");
    let mut body = intake_body(&p, &unique("SCOPE"));
    body["fk_brandStore"] = json!(theirs);
    let problem = call(fx, reqwest::Method::POST, "/api/order", "host", Some(body)).await.assert_problem(422, "validation_failed");
    assert_eq!(problem["errors"][0]["field"], "fk_brandStore", "{problem}");
    // Company and warehouse users do not push orders.
    call(fx, reqwest::Method::POST, "/api/order", "company", Some(intake_body(&p, &unique("CO")))).await.assert_problem(403, "forbidden");
    call(fx, reqwest::Method::POST, "/api/order", "warehouse", Some(intake_body(&p, &unique("WH")))).await.assert_problem(403, "forbidden");

    // A warehouse cannot act on another warehouse's order: it does not exist for it.
    let mine = get(fx, "warehouse", "/api/order?pageSize=1000&fields=id").await.ids("order");
    let other = fx.get("/api/order?status=accepted&pageSize=1000&fields=id").await.ids("order").into_iter().find(|o| !mine.contains(o)).expect("an order of another warehouse");
    patch(fx, "warehouse", &other, json!({"status": "dispatched"})).await.assert_problem(404, "not_found");
    // Not even by its refusal of a body that asks no step, or of a step it does not know.
    patch(fx, "warehouse", &other, json!({"carrier": "DPD"})).await.assert_problem(404, "not_found");
    patch(fx, "warehouse", &other, json!({"status": "lost"})).await.assert_problem(404, "not_found");
    let own = mine.first().expect("the warehouse sees an order");
    assert_ne!(patch(fx, "warehouse", own, json!({"status": "lost"})).await.status, 404, "an order in scope with a bad step");
    let answer = call(fx, reqwest::Method::POST, "/api/order/dispatch", "warehouse", Some(json!([{"id": other, "status": "dispatched"}]))).await;
    assert_eq!(answer.json()["response"]["dispatch"][0]["status"], 404);
    assert_eq!(fx.get(&format!("/api/order/{other}?fields=status")).await.records("order")[0]["status"], "accepted");
}

async fn concurrent_orders_of_one_variant_never_lose_demand(fx) {
    let p = place(fx, 3).await;
    let variant = p.variants[1].0.clone();
    let before = stock(fx, &p.warehouse, &variant).await;
    let mut pushes = Vec::new();
    for _ in 0..12 {
        let mut body = intake_body(&p, &unique("RACE"));
        body["order_orderItem"] = json!([{"fk_variant": variant, "orderQty": 1, "itemPrice": 3}]);
        pushes.push(tokio::spawn(async move { call(fx, reqwest::Method::POST, "/api/order", "host", Some(body)).await }));
    }
    let mut answers = Vec::new();
    for push in pushes {
        answers.push(push.await.expect("the push ran"));
    }
    let mut refs: Vec<String> = answers.iter().map(|a| text(&ok(a, 201)["brandOrderRef"])).collect();
    refs.sort();
    refs.dedup();
    assert_eq!(refs.len(), 12, "every order has its own brandOrderRef");
    assert_eq!(stock(fx, &p.warehouse, &variant).await.1, before.1 + 12);
    // `available` is a number like any: filtered and sorted.
    let low = fx.get(&format!("/api/stock?fk_warehouse={}&available=0&order_by=available&pageSize=5&fields=available", p.warehouse)).await.records("stock");
    assert!(low.iter().all(|s| s["available"] == 0), "{low:?}");
    fx.get("/api/stock?order_by=available<&pageSize=2").await.records("stock");
}

async fn intakes_with_and_without_keys_in_any_line_order_lose_no_demand(fx) {
    // On PostgreSQL an intake without a key adds to its stock records by id in the one
    // statement that commits it, and one with a key upserts them in a transaction: both lock
    // the records in key order, so however they interleave and whatever order their lines
    // come in, none deadlocks (which would be a 500) and no unit of demand is lost.
    let p = place(fx, 8).await;
    let mut before = Vec::new();
    for (variant, _) in &p.variants {
        before.push(stock(fx, &p.warehouse, variant).await.1);
    }
    let mut pushes = Vec::new();
    for i in 0..16usize {
        let mut body = intake_body(&p, &unique("MIX"));
        let mut variants: Vec<&String> = p.variants.iter().map(|(v, _)| v).collect();
        variants.rotate_left(i % 3);
        if i % 4 >= 2 {
            variants.reverse();
        }
        body["order_orderItem"] = Value::Array(variants.iter().map(|v| json!({"fk_variant": v, "orderQty": 1, "itemPrice": 2})).collect());
        let key = (i % 2 == 0).then(|| unique("mixkey"));
        pushes.push(tokio::spawn(async move {
            let headers: Vec<(&str, &str)> = key.iter().map(|k| ("Idempotency-Key", k.as_str())).collect();
            common::send(fx, &fx.base, reqwest::Method::POST, "/api/order", common::As::Demo("host"), &headers, Some(&body)).await
        }));
    }
    for push in pushes {
        ok(&push.await.expect("the push ran"), 201);
    }
    for ((variant, _), demand) in p.variants.iter().zip(before) {
        assert_eq!(stock(fx, &p.warehouse, variant).await.1, demand + 16, "demand of {variant}");
    }
}

async fn a_duplicate_push_from_many_connections_at_once_makes_one_order(fx) {
    // The (brand store, hostOrderRef) key is a unique index: pushes racing past each other's
    // check for a duplicate still make one order, however the transactions interleave.
    let p = place(fx, 7).await;
    let before = stock(fx, &p.warehouse, &p.variants[0].0).await;
    let body = intake_body(&p, &unique("TWICE"));
    let mut pushes = Vec::new();
    for _ in 0..10 {
        let body = body.clone();
        pushes.push(tokio::spawn(async move { call(fx, reqwest::Method::POST, "/api/order", "host", Some(body)).await }));
    }
    let (mut created, mut refused) = (Vec::new(), Vec::new());
    for push in pushes {
        let answer = push.await.expect("the push ran");
        match answer.status {
            201 => created.push(text(&answer.records("order")[0]["id"])),
            _ => refused.push(answer.assert_problem(409, "conflict")),
        }
    }
    assert_eq!(created.len(), 1, "one push made the order, the others were told it exists");
    // Whether a push was refused by the check before its transaction or by the unique index
    // inside it (then by the statement its insert went with), it names the order made.
    for problem in &refused {
        assert!(text(&problem["detail"]).contains(&created[0]), "{problem}");
        assert_eq!(problem["field"], "hostOrderRef", "{problem}");
    }
    let pushed = get(fx, "host", &format!("/api/order/count?hostOrderRef={}", text(&body["hostOrderRef"]))).await;
    assert_eq!(pushed.json()["count"], 1);
    assert_eq!(stock(fx, &p.warehouse, &p.variants[0].0).await.1, before.1 + 2, "demand added once");
}

async fn an_intake_with_an_idempotency_key_is_applied_once_and_steps_honour_if_match(fx) {
    let p = place(fx, 5).await;
    let before = stock(fx, &p.warehouse, &p.variants[0].0).await;
    let body = intake_body(&p, &unique("IDEM"));
    let key = unique("key");
    let push = |body: Value, key: String| async move {
        common::send(fx, &fx.base, reqwest::Method::POST, "/api/order", common::As::Demo("host"), &[("Idempotency-Key", key.as_str())], Some(&body)).await
    };
    let first = push(body.clone(), key.clone()).await;
    let order = ok(&first, 201);
    let id = text(&order["id"]);
    assert_eq!(first.header("etag").as_deref(), Some("\"1\""), "a new order's ETag");
    assert_eq!(first.header("location"), Some(format!("/api/order/{id}")));
    assert_eq!(first.header("idempotent-replayed"), None);

    // The same push with the same key: the first answer again, nothing written twice.
    let again = push(body.clone(), key.clone()).await;
    assert_eq!(again.status, 201);
    assert_eq!(again.header("idempotent-replayed").as_deref(), Some("true"));
    assert_eq!(again.body, first.body, "the first answer, byte for byte");
    assert_eq!(again.header("location"), first.header("location"));
    assert_eq!(again.header("etag"), first.header("etag"));
    assert_eq!(stock(fx, &p.warehouse, &p.variants[0].0).await.1, before.1 + 2, "demand added once");
    let pushed = get(fx, "host", &format!("/api/order/count?hostOrderRef={}", text(&body["hostOrderRef"]))).await;
    assert_eq!(pushed.json()["count"], 1);

    // The key with another body: 409 on the key, nothing written.
    let other = push(intake_body(&p, &unique("IDEM")), key.clone()).await;
    let problem = other.assert_problem(409, "conflict");
    assert_eq!(problem["field"], "Idempotency-Key", "{problem}");
    assert_eq!(stock(fx, &p.warehouse, &p.variants[0].0).await.1, before.1 + 2);

    // A step with the order's ETag goes through and answers the new one; a step with the old
    // ETag is 412 and changes nothing.
    let step = |if_match: &'static str, body: Value| {
        let id = id.clone();
        async move {
            common::send(fx, &fx.base, reqwest::Method::PATCH, &format!("/api/order/{id}"), common::As::Demo("company"), &[("If-Match", if_match)], Some(&body)).await
        }
    };
    let accepted = step("\"1\"", json!({"status": "accepted"})).await;
    assert_eq!(ok(&accepted, 200)["status"], "accepted");
    let etag = accepted.header("etag").expect("a step's answer has an ETag");
    assert_ne!(etag, "\"1\"");
    let read = get(fx, "company", &format!("/api/order/{id}")).await;
    assert_eq!(read.header("etag"), Some(etag.clone()), "the answer's ETag is the record's");
    let stale = step("\"1\"", json!({"status": "rejected"})).await;
    stale.assert_problem(412, "precondition_failed");
    assert_eq!(get(fx, "host", &format!("/api/order/{id}?fields=status")).await.records("order")[0]["status"], "accepted");
    assert_eq!(stock(fx, &p.warehouse, &p.variants[0].0).await.1, before.1 + 2, "the refused rejection gave nothing back");
}

async fn a_dispatch_array_writes_its_orders_together_and_sums_their_stock(fx) {
    let p = place(fx, 6).await;
    let before: Vec<(i64, i64, i64)> = {
        let mut all = Vec::new();
        for (v, _) in &p.variants { all.push(stock(fx, &p.warehouse, v).await); }
        all
    };
    // Three orders of the same variants, accepted.
    let mut ids = Vec::new();
    for _ in 0..3 {
        let order = ok(&call(fx, reqwest::Method::POST, "/api/order", "host", Some(intake_body(&p, &unique("BATCH")))).await, 201);
        let id = text(&order["id"]);
        ok(&patch(fx, "company", &id, json!({"status": "accepted"})).await, 200);
        ids.push(id);
    }
    let first_lines = lines(fx, "warehouse", &ids[0]).await;
    // One array: the first order shipped in two steps (line L1 one of two, then the rest),
    // the second in one, the third refused (a line shipped beyond its quantity).
    let answer = call(fx, reqwest::Method::POST, "/api/order/dispatch", "warehouse", Some(json!([
        {"id": ids[0], "status": "partDispatched", "order_orderItem": [{"id": text(&first_lines[0]["id"]), "shipQty": 1}]},
        {"id": ids[1], "status": "dispatched", "carrier": "UPS"},
        {"id": ids[2], "status": "partDispatched", "order_orderItem": [{"id": text(&first_lines[0]["id"]), "shipQty": 1}]},
        {"id": ids[0], "status": "dispatched", "carrier": "DPD"}
    ]))).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    let outcomes = answer.json()["response"]["dispatch"].clone();
    assert_eq!(outcomes[0]["orderStatus"], "partDispatched", "{outcomes}");
    assert_eq!(outcomes[1]["orderStatus"], "dispatched", "{outcomes}");
    assert_eq!(outcomes[2]["status"], 422, "another order's line: {outcomes}");
    assert_eq!(outcomes[3]["orderStatus"], "dispatched", "decided from the first step's result: {outcomes}");
    let first = get(fx, "host", &format!("/api/order/{}?fields=status,carrier", ids[0])).await.records("order")[0].clone();
    assert_eq!((first["status"].clone(), first["carrier"].clone()), (json!("dispatched"), json!("DPD")));
    let shipped = lines(fx, "host", &ids[0]).await;
    assert!(shipped.iter().all(|l| l["status"] == "DSP" && l["shipQty"] == l["orderQty"]), "{shipped:?}");
    assert_eq!(get(fx, "host", &format!("/api/order/{}?fields=status", ids[2])).await.records("order")[0]["status"], "accepted");
    // Two orders shipped: each variant's stock left the shelf twice over; the third order's
    // demand stands.
    for (i, qty) in [2, 1, 3].into_iter().enumerate() {
        let now = stock(fx, &p.warehouse, &p.variants[i].0).await;
        assert_eq!((now.0, now.1), (before[i].0 - 2 * qty, before[i].1 + qty), "stock of line {i}");
    }
}

}

/// Counts every stock record, and makes one: on a fixture of its own, whose stock no other
/// test creates (and whose new stock record moves no other test's [`place`]).
mod stock_counts {
    use super::*;

    each_on_own_fixture! {

    async fn an_intake_of_stocked_variants_keeps_the_count_of_every_stock_record(fx) {
        let p = place(fx, 4).await;
        let count = |response: &common::Response| response.json()["count"].as_u64().unwrap();
        let total = count(&fx.get("/api/stock/count").await);
        ok(&call(fx, reqwest::Method::POST, "/api/order", "host", Some(intake_body(&p, &unique("CNT")))).await, 201);
        // The intake added demand to stock records that exist and created none.
        assert_eq!(count(&fx.get("/api/stock/count").await), total);

        // A variant its warehouse never stocked: the intake creates its stock record, which the
        // count of every stock record counts.
        let code = unique("CNT");
        let product = call(fx, reqwest::Method::POST, "/api/product", "admin", Some(json!({"fk_brand": p.brand, "code": code, "title": "Counted"}))).await;
        assert_eq!(product.status, 201, "{}", String::from_utf8_lossy(&product.body));
        let product = product.records("product")[0].clone();
        let created = call(fx, reqwest::Method::POST, "/api/variant", "admin", Some(json!({"fk_product": product["id"], "barcode": code}))).await;
        assert_eq!(created.status, 201, "{}", String::from_utf8_lossy(&created.body));
        let variant = text(&created.records("variant")[0]["id"]);
        let mut body = intake_body(&p, &unique("CNT"));
        body["order_orderItem"] = json!([{"fk_variant": variant, "orderQty": 2, "itemPrice": 1.0}]);
        ok(&call(fx, reqwest::Method::POST, "/api/order", "host", Some(body)).await, 201);
        assert_eq!(count(&fx.get("/api/stock/count").await), total + 1, "a stale count after an intake created a stock record");
        assert_eq!(stock(fx, &p.warehouse, &variant).await, (0, 2, 0));
        // Lines by barcode alone (no id to look up) find their variant; a line with neither
        // is told so, with no variant looked up at all.
        let mut body = intake_body(&p, &unique("BAR"));
        body["order_orderItem"] = json!([{"barcode": code.to_lowercase(), "orderQty": 1, "itemPrice": 1.0}]);
        let order = ok(&call(fx, reqwest::Method::POST, "/api/order", "host", Some(body)).await, 201);
        assert_eq!(lines(fx, "host", &text(&order["id"])).await[0]["fk_variant"], json!(variant));
        assert_eq!(stock(fx, &p.warehouse, &variant).await, (0, 3, 0));
        let mut body = intake_body(&p, &unique("NONE"));
        body["order_orderItem"] = json!([{"orderQty": 1, "itemPrice": 1.0}]);
        let problem = call(fx, reqwest::Method::POST, "/api/order", "host", Some(body)).await.assert_problem(422, "validation_failed");
        assert_eq!(problem["errors"][0]["field"], "order_orderItem.fk_variant", "{problem}");
        // Its scope (internal: the variant's brand, known from the intake's read of the
        // variants, not read again in the transaction) lets the brand's company see it.
        let seen = get(fx, "company", &format!("/api/stock?fk_warehouse={}&fk_variant={variant}&fields=id", p.warehouse)).await.records("stock");
        assert_eq!(seen.len(), 1, "the company sees the stock record the intake made");
    }

    }
}
