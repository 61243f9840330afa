//! The read API over HTTPS against the real server and the demo data, on both backends:
//! envelope, paging, filters, ordering, field selection, related entities, counts and complex
//! queries (docs/API.md, "Resources" and "Parameters of reads" and "Complex queries").

mod common;

use brandhub_catalog::{Cell, Layout, catalog};
use brandhub_query::text::fold;
use serde_json::{Value, json};
use std::collections::BTreeSet;

fn ids_of(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

fn is_sorted_by<T: PartialOrd>(values: &[T]) -> bool {
    values.windows(2).all(|w| w[0] <= w[1])
}

/// The ids of the demo records of `resource` (as the fixture loaded them) that `keep` accepts;
/// `keep` reads a stored field by path, as text (`""` for null).
fn demo_ids(resource: &str, keep: impl Fn(&dyn Fn(&str) -> String) -> bool) -> BTreeSet<String> {
    let layout = Layout::of(catalog().resource(resource).unwrap());
    common::demo_records()
        .iter()
        .filter(|chunk| chunk.resource.name == resource)
        .flat_map(|chunk| &chunk.records)
        .filter(|record| {
            let field = |path: &str| match &record.cells[layout.cell(path)] {
                Cell::Null => String::new(),
                Cell::Text(text) => text.clone(),
                Cell::Integer(n) => n.to_string(),
                Cell::Number(n) => n.to_string(),
                Cell::Boolean(b) => b.to_string(),
            };
            keep(&field)
        })
        .map(|record| record.id().to_string())
        .collect()
}

/// Asserts that a list answered exactly the `expected` records (none missing, none extra), and
/// that there are some: checks made on every listed record then cannot pass on an empty list.
/// The list must fit one page.
fn assert_lists_exactly(records: &[Value], expected: &BTreeSet<String>) {
    assert!(!expected.is_empty(), "the demo data has records to test on");
    let listed: BTreeSet<String> = ids_of(records).into_iter().collect();
    assert_eq!(listed.len(), records.len(), "no record is listed twice");
    assert_eq!(&listed, expected);
}

on_both_backends! { "reads";

async fn the_envelope_reports_paging_and_counts(fx) {
    let response = fx.get("/api/stock").await;
    assert_eq!(response.status, 200);
    let envelope = &response.json()["response"];
    assert_eq!(envelope["page"], 1);
    assert_eq!(envelope["recordsSent"], 100);
    assert_eq!(envelope["recordsFound"], common::SCALE);
    assert_eq!(envelope["pageCount"], common::SCALE.div_ceil(100));
    assert_eq!(envelope["stock"].as_array().unwrap().len(), 100);
    let timing = response.header("server-timing").expect("Server-Timing on every answer");
    assert!(timing.contains("db;dur=") && timing.contains("total;dur="), "{timing}");
    assert!(response.header("x-request-id").is_some_and(|id| !id.is_empty()));
}

async fn the_stock_template_nests_variant_product_brand_and_warehouse(fx) {
    let records = fx.get("/api/stock?pageSize=50").await.records("stock");
    let first = &records[0];
    for field in ["id", "fk_warehouse", "fk_variant", "inStock", "demand", "supply", "lastUpdate"] {
        assert!(first.get(field).is_some(), "{field} in {first}");
    }
    let variant = &first["stock_variant"];
    assert_eq!(variant["id"], first["fk_variant"]);
    assert!(variant["barcode"].is_string());
    let product = &variant["variant_product"];
    assert_eq!(product["id"], variant["fk_product"]);
    let brand = &product["product_brand"];
    assert_eq!(brand["id"], product["fk_brand"]);
    assert_eq!(brand["brand_company"], json!({"__KEY": brand["fk_company"]}));
    let warehouse = &first["stock_warehouse"];
    assert_eq!(warehouse["warehouse_company"], json!({"__KEY": warehouse["fk_company"]}));
    // A warehouse shown expanded once is only a reference afterwards.
    let later = records.iter().skip(1).find(|r| r["fk_warehouse"] == first["fk_warehouse"]).expect("stock shares warehouses");
    assert_eq!(later["stock_warehouse"], json!({"__KEY": first["fk_warehouse"]}));
    let timestamp = first["lastUpdate"].as_str().unwrap();
    assert_eq!(timestamp.len(), 19, "YYYY-MM-DDTHH:MM:SS: {timestamp}");
}

async fn the_order_template_has_items_with_a_partial_variant(fx) {
    let records = fx.get("/api/order?pageSize=5").await.records("order");
    let order = &records[0];
    assert!(order["order_brandStore"]["brandStore_store"]["__KEY"].is_string());
    let items = order["order_orderItem"].as_array().expect("items are an array");
    assert!(!items.is_empty());
    let item = &items[0];
    assert_eq!(item["fk_order"], order["id"]);
    assert_eq!(item["orderItem_order"], json!({"__KEY": order["id"]}));
    let variant = item["orderItem_variant"].as_object().unwrap();
    let mut keys: Vec<&str> = variant.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, vec!["barcode", "colour", "id", "size", "variant_product", "vatable"]);
    assert_eq!(variant["variant_product"].as_object().unwrap().keys().collect::<Vec<_>>(), vec!["id", "title"]);
    assert!(order["shipAddress"]["id"].is_number() || order["shipAddress"]["id"].is_null());
    assert!(order["billAddress"].get("id").is_none());
    assert!(order["detail"]["net"].is_number());
}

async fn the_file_template_expands_brand_and_user(fx) {
    let records = fx.get("/api/file").await.records("file");
    let file = records.iter().find(|f| f["file_brand"].get("name").is_some()).unwrap();
    assert!(file["file_user"]["email"].is_string());
    assert!(file["file_user"]["detail"]["companies"].is_array());
    let detail = &file["detail"];
    for field in ["fileMime", "host", "startDate", "endDate", "error"] {
        assert!(detail.get(field).is_some(), "detail.{field}");
    }
    let price = records.iter().find(|f| f["fileType"] == "price").expect("demo has price files");
    let start = price["detail"]["startDate"].as_str().unwrap();
    assert!(start.ends_with('Z') && start.len() == 24, "{start}");
    assert!(records.iter().any(|f| f["detail"]["error"].as_str().is_some_and(|e| e.starts_with("Warning"))));
}

async fn one_record_by_id_in_any_case(fx) {
    let id = fx.get("/api/variant?pageSize=1").await.ids("variant")[0].clone();
    let response = fx.get(&format!("/api/variant/{}", id.to_lowercase())).await;
    assert_eq!(response.status, 200);
    let envelope = &response.json()["response"];
    assert_eq!((envelope["page"].clone(), envelope["pageCount"].clone(), envelope["recordsSent"].clone()), (json!(1), json!(1), json!(1)));
    assert_eq!(envelope["variant"][0]["id"], id);
    let fields = fx.get(&format!("/api/variant/{id}?fields=barcode")).await.records("variant");
    assert_eq!(fields[0].as_object().unwrap().len(), 2);
    fx.get("/api/variant/00000000000000000000000000000000").await.assert_problem(404, "not_found");
    fx.get("/api/variant/not-an-id").await.assert_problem(404, "not_found");
}

async fn paging_walks_the_records_in_id_order(fx) {
    let first = fx.get("/api/variant?pageSize=7").await.ids("variant");
    let second = fx.get("/api/variant?pageSize=7&page=2").await.ids("variant");
    let both = fx.get("/api/variant?pageSize=14").await.ids("variant");
    assert_eq!([first.clone(), second].concat(), both);
    assert!(is_sorted_by(&both));
    let past = fx.get("/api/variant?page=100000").await;
    assert_eq!(past.status, 200);
    assert_eq!(past.json()["response"]["recordsSent"], 0);
    assert_eq!(past.json()["response"]["recordsFound"], common::SCALE);
    let clamped = fx.get("/api/variant?pageSize=5000").await;
    assert_eq!(clamped.json()["response"]["recordsSent"], 1000);
    assert_eq!(clamped.json()["response"]["pageCount"], common::SCALE.div_ceil(1000));
    let empty = fx.get("/api/variant?barcode=nothing-like-this").await.json();
    assert_eq!(empty["response"]["pageCount"], 0);
    assert_eq!(empty["response"]["recordsFound"], 0);
}

async fn counts_agree_with_lists(fx) {
    let count = fx.get("/api/variant/count?barcode=501000@").await.json()["count"].as_u64().unwrap();
    let list = fx.get("/api/variant?barcode=501000@&pageSize=1000").await;
    assert_eq!(list.json()["response"]["recordsFound"].as_u64().unwrap(), count);
    assert_eq!(list.records("variant").len() as u64, count);
    assert!(count > 0);
    assert_eq!(fx.get("/api/stock/count").await.json(), json!({"count": common::SCALE}));
    // Asked twice, the second answer comes from the count cache and agrees.
    assert_eq!(fx.get("/api/stock/count").await.json(), json!({"count": common::SCALE}));
}

async fn text_filters_fold_case_for_all_of_unicode(fx) {
    let products = fx.get("/api/product?pageSize=1000&fields=title").await.records("product");
    let accented = products
        .iter()
        .map(|p| p["title"].as_str().unwrap().to_string())
        .find(|t| !t.is_ascii())
        .expect("the demo has non-ASCII titles");
    let shouted = accented.to_uppercase();
    let exact = fx.get(&format!("/api/product?title={}", urlencode(&accented))).await.ids("product");
    let folded = fx.get(&format!("/api/product?title={}", urlencode(&shouted))).await.ids("product");
    assert!(!exact.is_empty());
    assert_eq!(exact, folded, "{accented} vs {shouted}");
    assert_lists_exactly(
        &fx.get(&format!("/api/product?title={}&pageSize=1000", urlencode(&shouted))).await.records("product"),
        &demo_ids("product", |f| fold(&f("title")) == fold(&accented)),
    );
    let word = accented.split(' ').next().unwrap().to_lowercase();
    let starts = fx.get(&format!("/api/product?title={}%40&fields=title&pageSize=1000", urlencode(&word))).await.records("product");
    assert_lists_exactly(&starts, &demo_ids("product", |f| fold(&f("title")).starts_with(&fold(&word))));
    for product in &starts {
        assert!(product["title"].as_str().unwrap().to_lowercase().starts_with(&word), "{product}");
    }
    let contains = fx.get("/api/product?title=@shirt@&fields=title&pageSize=1000").await.records("product");
    assert_lists_exactly(&contains, &demo_ids("product", |f| fold(&f("title")).contains("shirt")));
    for product in &contains {
        assert!(product["title"].as_str().unwrap().to_lowercase().contains("shirt"));
    }
    let ends = fx.get("/api/variant?code=@-XL&fields=code&pageSize=1000").await.records("variant");
    assert_lists_exactly(&ends, &demo_ids("variant", |f| fold(&f("code")).ends_with("-xl")));
    assert!(ends.iter().all(|v| v["code"].as_str().unwrap().ends_with("-XL")));
}

async fn dotted_filters_reach_related_entities_and_details(fx) {
    let stock = fx.get("/api/stock?stock_variant.barcode=501001@&pageSize=1000&fields=stock_variant.barcode").await.records("stock");
    let variants = demo_ids("variant", |f| f("barcode").starts_with("501001"));
    assert_lists_exactly(&stock, &demo_ids("stock", |f| variants.contains(&f("fk_variant"))));
    assert!(stock.iter().all(|s| s["stock_variant"]["barcode"].as_str().unwrap().starts_with("501001")));
    let brand = fx.get("/api/brand?pageSize=1").await.records("brand")[0].clone();
    let through = fx.get(&format!("/api/stock/count?stock_variant.variant_product.fk_brand={}", brand["id"].as_str().unwrap())).await.json()["count"].as_u64().unwrap();
    let direct = fx.get(&format!("/api/variant/count?variant_product.fk_brand={}", brand["id"].as_str().unwrap())).await.json()["count"].as_u64().unwrap();
    assert_eq!(through, direct);
    assert!(through > 0);
    let csv = fx.get("/api/file?detail.fileMime=text/csv&fields=detail.fileMime&pageSize=1000").await.records("file");
    assert_lists_exactly(&csv, &demo_ids("file", |f| f("detail.fileMime") == "text/csv"));
    assert!(csv.iter().all(|f| f["detail"]["fileMime"] == "text/csv"));
    let items = fx.get("/api/order?order_orderItem.status=RET&fields=status&pageSize=1000").await.records("order");
    let returned = demo_ids("orderItem", |f| f("status") == "RET");
    let with_returns: BTreeSet<String> = common::demo_records()
        .iter()
        .filter(|chunk| chunk.resource.name == "orderItem")
        .flat_map(|chunk| {
            let layout = Layout::of(chunk.resource);
            chunk.records.iter().filter(|item| returned.contains(item.id())).map(move |item| item.cells[layout.cell("fk_order")].as_text().unwrap().to_string())
        })
        .collect();
    assert_lists_exactly(&items, &with_returns);
    assert!(items.iter().all(|o| o["status"] == "returned"), "orders with returned items are returned orders");
}

async fn values_of_every_type_filter_by_their_type(fx) {
    let some = fx.get("/api/stock?pageSize=1").await.records("stock")[0].clone();
    let in_stock = some["inStock"].as_i64().unwrap();
    let whole = fx.get(&format!("/api/stock/count?inStock={in_stock}")).await.json()["count"].clone();
    let decimal = fx.get(&format!("/api/stock/count?inStock={in_stock}.0")).await.json()["count"].clone();
    assert_eq!(whole, decimal);
    assert_eq!(fx.get(&format!("/api/stock/count?inStock={in_stock}.5")).await.json()["count"], 0);
    let vatable = fx.get("/api/variant/count?vatable=true").await.json()["count"].as_u64().unwrap();
    let not_vatable = fx.get("/api/variant/count?vatable=False").await.json()["count"].as_u64().unwrap();
    let unset = fx.get("/api/variant/count?vatable=").await.json()["count"].as_u64().unwrap();
    assert_eq!(vatable + not_vatable + unset, common::SCALE);
    let day = &some["lastUpdate"].as_str().unwrap()[..10];
    let that_day = fx.get(&format!("/api/stock?lastUpdate={day}&fields=lastUpdate&pageSize=1000")).await.records("stock");
    assert_lists_exactly(&that_day, &demo_ids("stock", |f| f("lastUpdate").starts_with(day)));
    assert!(that_day.iter().all(|s| s["lastUpdate"].as_str().unwrap().starts_with(day)));
    let unshipped = fx.get("/api/order?shipDate=&fields=shipDate&pageSize=1000").await;
    let expected = demo_ids("order", |f| f("shipDate").is_empty());
    assert_eq!(unshipped.json()["response"]["recordsFound"].as_u64().unwrap() as usize, expected.len());
    let unshipped = unshipped.records("order");
    assert_eq!(unshipped.len(), expected.len().min(1000));
    assert!(unshipped.iter().all(|o| expected.contains(o["id"].as_str().unwrap())));
    assert!(unshipped.iter().all(|o| o["shipDate"] == ""));
}

async fn a_repeated_filter_means_any_of_its_values(fx) {
    let new = fx.get("/api/order/count?status=new").await.json()["count"].as_u64().unwrap();
    let dispatched = fx.get("/api/order/count?status=dispatched").await.json()["count"].as_u64().unwrap();
    let either = fx.get("/api/order/count?status=new&status=dispatched").await.json()["count"].as_u64().unwrap();
    assert_eq!(either, new + dispatched);
    let both_filters = fx.get("/api/order/count?status=dispatched&carrier=@").await.json()["count"].as_u64().unwrap();
    assert!(both_filters <= dispatched);
}

async fn order_by_sorts_on_several_levels_in_both_directions(fx) {
    let records = fx.get("/api/stock?order_by=inStock<;lastUpdate&fields=inStock,lastUpdate&pageSize=1000").await.records("stock");
    let keys: Vec<(i64, String)> = records.iter().map(|r| (-r["inStock"].as_i64().unwrap(), r["lastUpdate"].as_str().unwrap().to_string())).collect();
    assert!(is_sorted_by(&keys));
    let before = fx.get("/api/stock?order_by=%3ClastUpdate&fields=lastUpdate&pageSize=50").await.records("stock");
    let after = fx.get("/api/stock?order_by=lastUpdate%3C&fields=lastUpdate&pageSize=50").await.records("stock");
    assert_eq!(ids_of(&before), ids_of(&after));
    let dates: Vec<&str> = before.iter().map(|r| r["lastUpdate"].as_str().unwrap()).collect();
    assert!(dates.windows(2).all(|w| w[0] >= w[1]));
    let through = fx.get("/api/variant?order_by=variant_product.title;barcode&fields=barcode,variant_product.title&pageSize=1000").await.records("variant");
    // A product shown once is a __KEY reference at its later variants.
    let mut title_of = std::collections::HashMap::new();
    let mut titles: Vec<(String, String)> = Vec::new();
    for variant in &through {
        let product = &variant["variant_product"];
        let id = product.get("__KEY").unwrap_or(&product["id"]).as_str().unwrap().to_string();
        if let Some(title) = product["title"].as_str() {
            title_of.insert(id.clone(), title.to_lowercase());
        }
        titles.push((title_of[&id].clone(), variant["barcode"].as_str().unwrap().to_string()));
    }
    assert!(is_sorted_by(&titles));
}

async fn fields_and_exclude_shape_the_records(fx) {
    let records = fx.get("/api/stock?fields=inStock,stock_variant.barcode&pageSize=3").await.records("stock");
    let keys: Vec<&String> = records[0].as_object().unwrap().keys().collect();
    assert_eq!(keys, vec!["id", "inStock", "stock_variant"]);
    assert_eq!(records[0]["stock_variant"].as_object().unwrap().keys().collect::<Vec<_>>(), vec!["id", "barcode"]);
    let star = fx.get("/api/file?fields=*,file_brand.brand_company&pageSize=1").await.records("file");
    assert!(star[0]["file_brand"]["brand_company"]["name"].is_string());
    assert!(star[0]["file_user"].is_object());
    let excluded = fx.get("/api/file?exclude=file_%40,detail,id&pageSize=1").await.records("file");
    let keys: Vec<&String> = excluded[0].as_object().unwrap().keys().collect();
    assert_eq!(keys, vec!["id", "fk_brand", "fk_user", "fileType", "fileName", "createdDate", "status", "updatedDate"]);
    let sub = fx.get("/api/order?fields=detail.net,detail.gross&pageSize=1").await.records("order");
    assert_eq!(sub[0]["detail"].as_object().unwrap().keys().collect::<Vec<_>>(), vec!["net", "gross"]);
}

async fn complex_queries_apply_conditions_left_to_right(fx) {
    let count = |status: &str| {
        let status = status.to_string();
        async move { fx.get(&format!("/api/order/count?status={status}")).await.json()["count"].as_u64().unwrap() }
    };
    let (new, accepted, dispatched) = (count("new").await, count("accepted").await, count("dispatched").await);
    // (new OR accepted) AND NOT accepted = new
    let body = json!({"query": [
        {"field": "status", "operator": "=", "value": "new"},
        {"field": "status", "operator": "=", "value": "accepted", "conjunction": "|"},
        {"field": "status", "operator": "=", "value": "accepted", "conjunction": "#"}
    ]});
    assert_eq!(fx.post("/api/order/count", &body).await.json()["count"], new);
    let page = fx.post("/api/order/query?fields=status&pageSize=1000", &body).await;
    assert_eq!(page.status, 200);
    assert_lists_exactly(&page.records("order"), &demo_ids("order", |f| f("status") == "new"));
    assert!(page.records("order").iter().all(|o| o["status"] == "new"));
    // new OR (accepted AND accepted) evaluated left to right is (new OR accepted) AND accepted = accepted
    let body = json!({"query": [
        {"field": "status", "operator": "=", "value": "new"},
        {"field": "status", "operator": "=", "value": "accepted", "conjunction": "|"},
        {"field": "status", "operator": "=", "value": "ACCEPTED", "conjunction": "&"}
    ]});
    assert_eq!(fx.post("/api/order/count", &body).await.json()["count"], accepted);
    // # as an operator: not equal
    let body = json!({"query": [{"field": "status", "operator": "#", "value": "dispatched"}]});
    let total = fx.get("/api/order/count").await.json()["count"].as_u64().unwrap();
    assert_eq!(fx.post("/api/order/count", &body).await.json()["count"].as_u64().unwrap(), total - dispatched);
}

async fn arrays_and_the_three_steps_narrow_in_order(fx) {
    let stores = fx.get("/api/brandStore?pageSize=3&fields=id").await.ids("brandStore");
    let body = json!({
        "querywitharray": {"field": "status", "values": ["new", "dispatched"]},
        "queryselectionwitharray": {"field": "fk_brandStore", "values": stores},
        "queryselection": [{"field": "orderDate", "operator": ">=", "value": "2025-01-01"}]
    });
    let records = fx.post("/api/order/query?fields=status,fk_brandStore,carrier&pageSize=1000&carrier=@", &body).await.records("order");
    let expected = demo_ids("order", |f| {
        ["new", "dispatched"].contains(&f("status").as_str()) && stores.contains(&f("fk_brandStore")) && f("orderDate").as_str() >= "2025-01-01"
    });
    assert_lists_exactly(&records, &expected);
    for order in &records {
        assert!(order["status"] == "new" || order["status"] == "dispatched");
        assert!(stores.contains(&order["fk_brandStore"].as_str().unwrap().to_string()));
    }
    let negated = json!({"querywitharray": {"field": "status", "values": ["new", "dispatched"], "operator": "#"}});
    let others = fx.post("/api/order/count", &negated).await.json()["count"].as_u64().unwrap();
    let listed = fx.post("/api/order/count", &json!({"querywitharray": {"field": "status", "values": ["new", "dispatched"]}})).await.json()["count"].as_u64().unwrap();
    assert_eq!(others + listed, fx.get("/api/order/count").await.json()["count"].as_u64().unwrap());
}

async fn a_get_with_a_json_body_is_a_complex_query(fx) {
    let admin = fx.credential("admin");
    let body = json!({"query": [{"field": "status", "operator": "=", "value": "new"}]});
    let response = fx
        .client()
        .get(format!("{}/api/order?fields=status&pageSize=1000", fx.base))
        .basic_auth(&admin.email, Some(&admin.secret))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let json: Value = response.json().await.unwrap();
    let orders = json["response"]["order"].as_array().unwrap();
    assert_lists_exactly(orders, &demo_ids("order", |f| f("status") == "new"));
    assert!(orders.iter().all(|o| o["status"] == "new"));
}

async fn related_entities_outside_the_template_expand_on_request(fx) {
    let records = fx.get("/api/product?fields=title,product_variant.barcode&pageSize=2").await.records("product");
    let variants = records[0]["product_variant"].as_array().unwrap();
    assert_eq!(variants.len(), 5);
    assert!(variants.iter().all(|v| v["barcode"].is_string()));
    let user = fx.get("/api/user?fields=email,detail.companies,user_company.name&email=company2@@").await.records("user");
    assert_eq!(user.len(), 1);
    assert!(!user[0]["detail"]["companies"].as_array().unwrap().is_empty());
    assert!(user[0]["user_company"]["name"].is_string());
    let admin = fx.get("/api/user?email=admin@@&fields=fk_company,fk_host").await.records("user");
    assert_eq!(admin[0]["fk_company"], "00000000000000000000000000000000");
}

async fn raw_angle_brackets_in_urls_work_as_the_contract_says(fx) {
    let admin = fx.credential("admin");
    let token = base64_basic(&admin.email, &admin.secret);
    let request = |target: &str| format!("GET {target} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic {token}\r\nConnection: close\r\n\r\n");
    let raw = common::raw_https(fx, request("/api/stock?order_by=lastUpdate<;>id&fields=lastUpdate&pageSize=5")).await;
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    let encoded = fx.get("/api/stock?order_by=lastUpdate%3C;%3Eid&fields=lastUpdate&pageSize=5").await;
    let body = &raw[raw.find("\r\n\r\n").unwrap() + 4..];
    assert_eq!(serde_json::from_str::<Value>(body).unwrap(), encoded.json());
    let raw = common::raw_https(fx, request("/api/variant?fields=barcode&barcode=501000@&order_by=<barcode&pageSize=2")).await;
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
}

async fn url_filters_may_begin_with_a_comparison(fx) {
    let count = |path: String| async move { fx.get(&path).await.json()["count"].as_u64().unwrap() };
    // A date range in the URL finds what the complex query's range finds.
    let url = count("/api/order/count?orderDate=%3E%3D2026-03-01&orderDate=%3C2026-04-01".into()).await;
    let body = fx.post("/api/order/count", &serde_json::json!({"query": [
        {"field": "orderDate", "operator": ">=", "value": "2026-03-01"},
        {"field": "orderDate", "operator": "<", "value": "2026-04-01", "conjunction": "&"}]})).await;
    assert_eq!(url, body.json()["count"].as_u64().unwrap());
    assert!(url > 0, "the demo has orders in March 2026");
    // `<=` a date takes the whole of that day.
    assert_eq!(count("/api/order/count?orderDate=%3E%3D2026-03-01&orderDate=%3C%3D2026-03-31".into()).await, url);
    // `#`, repeated: neither; plain values any of, narrowed by a comparison.
    let all = count("/api/order/count".into()).await;
    let cancelled = count("/api/order/count?status=cancelled".into()).await;
    let dispatched = count("/api/order/count?status=dispatched".into()).await;
    assert!(cancelled > 0 && dispatched > 0);
    assert_eq!(count("/api/order/count?status=%23cancelled&status=%23dispatched".into()).await, all - cancelled - dispatched);
    assert_eq!(count("/api/order/count?status=dispatched&status=cancelled&status=%23cancelled".into()).await, dispatched);
    // Numbers: more than none and none are every stock record.
    let stock = count("/api/stock/count".into()).await;
    let some = count("/api/stock/count?available=%3E0".into()).await;
    assert_eq!(some + count("/api/stock/count?available=0".into()).await, stock);
    assert!(some > 0 && some < stock, "{some} of {stock}");
    // `=` first: equality with the rest.
    let order = &fx.get("/api/order?pageSize=1&fields=hostOrderRef").await.records("order")[0];
    let reference = order["hostOrderRef"].as_str().unwrap();
    assert_eq!(count(format!("/api/order/count?hostOrderRef=%3D{reference}")).await, 1);
    assert_eq!(count(format!("/api/order/count?hostOrderRef=%23{reference}")).await, all - 1);
    // Raw `<` and `>` work as encoded ones do.
    let admin = fx.credential("admin");
    let token = base64_basic(&admin.email, &admin.secret);
    let raw = common::raw_https(fx, format!("GET /api/order/count?orderDate=>=2026-03-01&orderDate=<2026-04-01 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic {token}\r\nConnection: close\r\n\r\n")).await;
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(raw.ends_with(&format!("{{\"count\":{url}}}")), "{raw}");
    // A comparison with what does not fit the field is 400 naming it.
    for bad in ["orderDate=%3Cyesterday", "orderDate=%3E", "trackingRef=%3ERM@"] {
        let refused = fx.get(&format!("/api/order?{bad}")).await;
        let problem = refused.assert_problem(400, "invalid_value");
        assert_eq!(problem["field"], bad.split('=').next().unwrap(), "{bad}");
    }
}

async fn the_openapi_document_needs_no_key(fx) {
    let response = fx.client().get(format!("{}/api/openapi.json", fx.base)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let document: Value = response.json().await.unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    assert!(document["paths"]["/api/stock"]["get"].is_object());
    // A user type's document leaves out what is hidden from it; an unknown type is a 400.
    let response = fx.client().get(format!("{}/api/openapi.json?userType=warehouse", fx.base)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let document: Value = response.json().await.unwrap();
    assert!(document["components"]["schemas"]["Order"]["properties"]["detail"]["properties"].get("net").is_none());
    let response = fx.client().get(format!("{}/api/openapi.json?userType=nobody", fx.base)).send().await.unwrap();
    assert_eq!(response.status(), 400);
}

}

fn urlencode(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => out.push(byte as char),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

fn base64_basic(user: &str, secret: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{secret}"))
}

/// Comparisons in URL filters (docs/API.md, "Filters", **Comparisons**) on records these
/// tests make themselves, on a fixture of their own: the tests above count the demo data,
/// which these writes would move. Every list is checked against its `/count`.
mod comparisons_on_records_made_here {
    use super::*;

    /// The one record a create as the admin answers.
    async fn created(fx: &common::Fixture, resource: &str, body: Value) -> Value {
        let answer = common::call(
            fx,
            reqwest::Method::POST,
            &format!("/api/{resource}"),
            "admin",
            Some(body),
        )
        .await;
        assert_eq!(
            answer.status,
            201,
            "{resource}: {}",
            String::from_utf8_lossy(&answer.body)
        );
        answer.records(resource)[0].clone()
    }

    fn id(record: &Value) -> String {
        record["id"].as_str().expect("records have ids").to_string()
    }

    /// A company of its own: one brand sold through one store and shipped from one warehouse;
    /// four products with a variant each (titles apple, Banana, cherry, Éclair; the first's
    /// code `#1001`), stock of each variant (0, 3, 5 and 100 in stock), and four orders of the
    /// last variant around November 2026, the second cancelled.
    struct Made {
        brand: String,
        warehouse: String,
        brand_store: String,
        variants: Vec<String>,
        stock: Vec<String>,
        orders: Vec<String>,
    }

    /// Order dates, hostOrderRefs and quantities of the four orders.
    const ORDERS: [(&str, &str, u32); 4] = [
        ("2026-10-31T23:59:59", "#1001", 1),
        ("2026-11-01T00:00:00", "#1002", 2),
        ("2026-11-30T23:59:59", "1003", 3),
        ("2026-12-01T00:00:00", "=1004", 4),
    ];

    async fn make(fx: &common::Fixture) -> Made {
        let tag = common::orders::unique("CMP");
        let code = |what: &str| format!("{tag}-{what}");
        let company = id(&created(fx, "company", json!({"name": tag, "code": code("CO")})).await);
        let brand = id(&created(
            fx,
            "brand",
            json!({"fk_company": company, "name": tag, "code": code("BR")}),
        )
        .await);
        let warehouse = id(&created(
            fx,
            "warehouse",
            json!({"fk_company": company, "name": tag, "code": code("WH")}),
        )
        .await);
        let host = id(&created(fx, "host", json!({"name": tag, "code": code("HO")})).await);
        let store = id(&created(
            fx,
            "store",
            json!({"fk_host": host, "name": tag, "code": "WEB", "currency": "EUR"}),
        )
        .await);
        let brand_store = id(&created(
            fx,
            "brandStore",
            json!({"fk_brand": brand, "fk_store": store, "fk_warehouse": warehouse}),
        )
        .await);
        let mut variants = Vec::new();
        let mut stock = Vec::new();
        let products = [
            ("#1001", "apple", 9.99, true, 0),
            ("P2", "Banana", 10.0, true, 3),
            ("P3", "cherry", 10.5, false, 5),
            ("P4", "Éclair", 20.0, false, 100),
        ];
        for (n, (product_code, title, rrp, vatable, in_stock)) in products.into_iter().enumerate() {
            let product = id(&created(
                fx,
                "product",
                json!({"fk_brand": brand, "code": product_code, "title": title}),
            )
            .await);
            let variant = id(&created(fx, "variant", json!({"fk_product": product, "barcode": code(&format!("V{n}")), "rrp": rrp, "vatable": vatable})).await);
            stock.push(id(&created(
                fx,
                "stock",
                json!({"fk_warehouse": warehouse, "fk_variant": variant, "inStock": in_stock}),
            )
            .await));
            variants.push(variant);
        }
        let mut orders = Vec::new();
        for (date, reference, quantity) in ORDERS {
            orders.push(id(&created(fx, "order", json!({
                "fk_brandStore": brand_store, "hostOrderRef": reference, "orderDate": date,
                "shipAddress": {"surname": "Lovelace", "countryCode": "GB"},
                "order_orderItem": [{"fk_variant": variants[3], "orderQty": quantity, "itemPrice": 1.5}],
            })).await));
        }
        let cancelled =
            common::orders::patch(fx, "admin", &orders[1], json!({"status": "cancelled"})).await;
        assert_eq!(
            cancelled.status,
            200,
            "{}",
            String::from_utf8_lossy(&cancelled.body)
        );
        Made {
            brand,
            warehouse,
            brand_store,
            variants,
            stock,
            orders,
        }
    }

    /// The ids a list answers (one page holds them all), after checking that `/count` (GET,
    /// and POST with an empty body) agrees with it.
    async fn found(fx: &common::Fixture, resource: &str, filters: String) -> BTreeSet<String> {
        let list = fx
            .get(&format!(
                "/api/{resource}?{filters}&fields=id&pageSize=1000"
            ))
            .await;
        assert_eq!(
            list.status,
            200,
            "{resource}?{filters}: {}",
            String::from_utf8_lossy(&list.body)
        );
        let ids: BTreeSet<String> = list.ids(resource).into_iter().collect();
        assert_eq!(
            list.json()["response"]["recordsFound"].as_u64(),
            Some(ids.len() as u64),
            "{resource}?{filters}"
        );
        let count = fx.get(&format!("/api/{resource}/count?{filters}")).await;
        assert_eq!(
            count.json()["count"].as_u64(),
            Some(ids.len() as u64),
            "count of {resource}?{filters}"
        );
        let posted = fx
            .post(&format!("/api/{resource}/count?{filters}"), &json!({}))
            .await;
        assert_eq!(
            posted.json()["count"].as_u64(),
            Some(ids.len() as u64),
            "POST count of {resource}?{filters}"
        );
        ids
    }

    /// The records of `all` at these positions.
    fn at(all: &[String], positions: &[usize]) -> BTreeSet<String> {
        positions.iter().map(|&i| all[i].clone()).collect()
    }

    /// A list, its count and its export all refuse the filter with 400 invalid_value naming
    /// `field`.
    async fn refused(fx: &common::Fixture, resource: &str, filters: &str, field: &str) {
        for path in [
            format!("/api/{resource}?{filters}"),
            format!("/api/{resource}/count?{filters}"),
            format!("/api/{resource}?{filters}&format=csv"),
        ] {
            let problem = fx.get(&path).await.assert_problem(400, "invalid_value");
            assert_eq!(problem["field"], field, "{path}: {problem}");
        }
    }

    on_both_backends! { "comparisons";

    async fn url_comparisons_select_exactly_what_they_say(fx) {
        let m = make(fx).await;
        let orders = |filters: &str| found(fx, "order", format!("fk_brandStore={}&{filters}", m.brand_store));
        let o = &m.orders;
        // A range on a timestamp: a date alone is the start of its day for >= and <, the
        // end of it for > and <=; raw or percent-encoded.
        assert_eq!(orders("orderDate=>=2026-11-01&orderDate=<2026-12-01").await, at(o, &[1, 2]));
        assert_eq!(orders("orderDate=%3E%3D2026-11-01&orderDate=%3C2026-12-01").await, at(o, &[1, 2]));
        assert_eq!(orders("orderDate=<=2026-11-30").await, at(o, &[0, 1, 2]));
        assert_eq!(orders("orderDate=>2026-11-30").await, at(o, &[3]));
        assert_eq!(orders("orderDate=<2026-11-01").await, at(o, &[0]));
        assert_eq!(orders("orderDate=>2026-10-31").await, at(o, &[1, 2, 3]));
        assert_eq!(orders("orderDate=>2026-11-01T00:00:00").await, at(o, &[2, 3]));
        assert_eq!(orders("orderDate=<=2026-11-01T00:00:00").await, at(o, &[0, 1]));
        assert_eq!(orders("orderDate=%232026-11-01T00:00:00").await, at(o, &[0, 2, 3]));
        // `#` on text, in any letter case; of a repeated filter the plain values are any of,
        // each comparison ANDed with them.
        assert_eq!(orders("status=%23cancelled").await, at(o, &[0, 2, 3]));
        assert_eq!(orders("status=%23CANCELLED").await, at(o, &[0, 2, 3]));
        assert_eq!(orders("status=new&status=cancelled&status=%23cancelled").await, at(o, &[0, 2, 3]));
        assert_eq!(orders("status=%23cancelled&status=%23new").await, BTreeSet::new());
        // `=` first: equality with the rest, which may begin with an operator itself.
        assert_eq!(orders("hostOrderRef==%231001").await, at(o, &[0]));
        assert_eq!(orders("hostOrderRef=%231001").await, at(o, &[0, 1, 2, 3]), "none is 1001");
        assert_eq!(orders("hostOrderRef=%23%231001").await, at(o, &[1, 2, 3]));
        assert_eq!(orders("hostOrderRef==%3D1004").await, at(o, &[3]));
        assert_eq!(orders("hostOrderRef==%231001&hostOrderRef==%231002&hostOrderRef=>%231001").await, at(o, &[1]));
        // Through a to-many relation: any line compares so; through to-one relations.
        assert_eq!(orders("order_orderItem.orderQty=>2").await, at(o, &[2, 3]));
        assert_eq!(orders("order_orderItem.orderQty=%232").await, at(o, &[0, 2, 3]));
        let items = found(fx, "orderItem", format!("orderItem_order.fk_brandStore={}&orderItem_order.orderDate=<2026-11-01", m.brand_store)).await;
        let first_items = fx.get(&format!("/api/orderItem?fk_order={}&fields=id", o[0])).await.ids("orderItem");
        assert_eq!(items, first_items.into_iter().collect());

        // Numbers: an integer (a generated one) and a number with a fraction.
        let stock = |filters: &str| found(fx, "stock", format!("fk_warehouse={}&{filters}", m.warehouse));
        let s = &m.stock;
        assert_eq!(stock("available=>0").await, at(s, &[1, 2, 3]));
        assert_eq!(stock("available=<3").await, at(s, &[0]));
        assert_eq!(stock("available=>=3&available=<=5").await, at(s, &[1, 2]));
        assert_eq!(stock("available=%233").await, at(s, &[0, 2, 3]));
        assert_eq!(stock("available=>2.5").await, at(s, &[1, 2, 3]));
        assert_eq!(stock("available=3.0&available=5&available=>4").await, at(s, &[2]));
        assert_eq!(stock("stock_variant.rrp=>10").await, at(s, &[2, 3]));
        assert_eq!(stock("stock_variant.rrp=>=10").await, at(s, &[1, 2, 3]));
        assert_eq!(stock("stock_variant.rrp=<10.5&stock_variant.rrp=%239.99").await, at(s, &[1]));
        // Text through two relations compares folded: case-insensitively, for all of Unicode.
        assert_eq!(stock("stock_variant.variant_product.title=>=b").await, at(s, &[1, 2, 3]));
        assert_eq!(stock("stock_variant.variant_product.title=<BANANA").await, at(s, &[0]));
        assert_eq!(stock("stock_variant.variant_product.title=<=banana").await, at(s, &[0, 1]));
        assert_eq!(stock("stock_variant.variant_product.title=>%C3%89CLAIR").await, BTreeSet::new());
        assert_eq!(stock("stock_variant.variant_product.title=>=%C3%A9clair").await, at(s, &[3]));
        assert_eq!(stock("stock_variant.variant_product.code==%231001").await, at(s, &[0]));

        // Booleans take # (and =), with the usual spellings.
        let variants = |filters: &str| found(fx, "variant", format!("variant_product.fk_brand={}&{filters}", m.brand));
        let v = &m.variants;
        assert_eq!(variants("vatable=%23true").await, at(v, &[2, 3]));
        assert_eq!(variants("vatable=%23False").await, at(v, &[0, 1]));
        assert_eq!(variants("vatable==1").await, at(v, &[0, 1]));
        assert_eq!(variants("vatable=%23").await, at(v, &[0, 1, 2, 3]), "# and nothing: set");

        // The export holds what the list holds.
        let filters = format!("fk_brandStore={}&orderDate=>=2026-11-01&orderDate=<2026-12-01&status=%23cancelled", m.brand_store);
        let exported = fx.get(&format!("/api/order?{filters}&fields=id&format=csv")).await;
        assert_eq!(exported.status, 200);
        let mut reader = csv::Reader::from_reader(exported.body.as_slice());
        let rows: Vec<String> = reader.records().map(|row| row.unwrap()[0].to_string()).collect();
        assert_eq!(rows, vec![o[2].clone()]);

        // Scope is still ANDed in: the demo company user sees none of these records.
        let theirs = common::call(fx, reqwest::Method::GET, &format!("/api/stock/count?fk_warehouse={}&available=>=0", m.warehouse), "company", None).await;
        assert_eq!(theirs.json()["count"], 0);
    }

    async fn url_comparisons_that_do_not_fit_the_field_are_invalid_values(fx) {
        let m = make(fx).await;
        let order = |filters: &str| format!("fk_brandStore={}&{filters}", m.brand_store);
        for (filters, field) in [
            ("orderDate=<yesterday", "orderDate"),
            ("orderDate=>=", "orderDate"),
            ("orderDate=<2026-02-30", "orderDate"),
            ("orderDate=>2026-11@", "orderDate"),
            ("hostOrderRef=<%231@", "hostOrderRef"),
            ("order_orderItem.orderQty=>many", "order_orderItem.orderQty"),
            ("orderDate=>=2026-11-01&orderDate=<soon", "orderDate"),
        ] {
            refused(fx, "order", &order(filters), field).await;
        }
        refused(fx, "stock", &format!("fk_warehouse={}&available=>=x", m.warehouse), "available").await;
        refused(fx, "stock", &format!("fk_warehouse={}&available=>>1", m.warehouse), "available").await;
        refused(fx, "variant", &format!("variant_product.fk_brand={}&vatable=<1", m.brand), "vatable").await;
        refused(fx, "variant", "vatable=>=true", "vatable").await;
        refused(fx, "stock", "stock_variant.vatable=>false", "stock_variant.vatable").await;
    }

    }
}
