//! Cached pages and counts are never stale: a write made through another store (as another
//! server process on the same database would) shows in the very next answer. Each test runs on
//! a fixture of its own: it counts records and cache hits that another test's writes would
//! move. What the cached answers cost in statements is asserted in the store's own tests.

mod common;

use brandhub_query::text::fold;
use brandhub_store::{Store, StoreOptions};
use sea_query::{Alias, Expr, ExprTrait, Query};

/// A second store on the fixture's database, with caches of its own: "another process".
async fn another_process(fx: &common::Fixture) -> Store {
    let url = fx.database_url.clone();
    fx.on_server(async move {
        Store::connect(&StoreOptions {
            url,
            max_connections: 2,
            page_cache_bytes: 1 << 20,
            matches_first_limit: 40,
            pg_settings: Vec::new(),
            database_wait: brandhub_store::db::DEFAULT_DATABASE_WAIT,
        })
        .await
        .expect("a second store opens")
    })
    .await
}

/// Updates exactly one row of `table` through [`another_process`], in a write transaction of
/// its own.
async fn update_elsewhere(
    fx: &common::Fixture,
    table: &'static str,
    update: sea_query::UpdateStatement,
) {
    let other = another_process(fx).await;
    fx.on_server(async move {
        let mut tx = other.begin().await.expect("a transaction");
        assert_eq!(
            tx.execute(table, &update).await.expect("the update runs"),
            1,
            "one {table} row"
        );
        tx.commit().await.expect("the commit");
        other.close().await;
    })
    .await;
}

/// The stale pages the server checked against the rows written since: (kept, made again).
async fn page_rechecks(fx: &common::Fixture) -> (f64, f64) {
    let text = common::scrape_metrics(fx).await;
    let sample =
        |metric| common::metric_sample(&text, metric, &[("cache", "page_recheck")]).unwrap_or(0.0);
    (
        sample("brandhub_cache_hits_total"),
        sample("brandhub_cache_misses_total"),
    )
}

each_on_own_fixture! {

async fn a_write_elsewhere_shows_in_the_next_page_and_count(fx) {
    let before = fx.get("/api/brand?fields=name,code&code=BR0002").await.records("brand");
    // Ask twice so the page is served from the cache the second time.
    assert_eq!(fx.get("/api/brand?fields=name,code&code=BR0002").await.records("brand"), before);
    let count_before = fx.get("/api/brand/count?name=Renamed@").await.json()["count"].as_u64().unwrap();
    let stock_page = fx.get("/api/stock?pageSize=5&stock_variant.variant_product.product_brand.code=BR0002").await;
    assert_eq!(stock_page.status, 200);

    let new_name = format!("Renamed Brand {}", before[0]["name"].as_str().unwrap().len());
    update_elsewhere(fx, "brand", Query::update()
        .table(Alias::new("brand"))
        .value(Alias::new("name"), new_name.clone())
        .value(Alias::new("name_ci"), fold(&new_name))
        .and_where(Expr::col(Alias::new("code_ci")).eq("br0002"))
        .to_owned()).await;

    let after = fx.get("/api/brand?fields=name,code&code=BR0002").await.records("brand");
    assert_eq!(after[0]["name"], new_name.as_str(), "a stale cached page was served after the write");
    let count_after = fx.get("/api/brand/count?name=Renamed@").await.json()["count"].as_u64().unwrap();
    assert_eq!(count_after, count_before + 1, "a stale cached count was served after the write");
    // A page that shows the brand through relations is fresh too.
    let nested = fx.get("/api/stock?pageSize=5&stock_variant.variant_product.product_brand.code=BR0002").await;
    let shown = nested.records("stock");
    assert_eq!(shown[0]["stock_variant"]["variant_product"]["product_brand"]["name"], new_name.as_str());
}

async fn a_patch_keeps_the_count_of_every_record_and_a_delete_changes_it(fx) {
    let count = |response: &common::Response| response.json()["count"].as_u64().unwrap();
    // The stock table's versions as another process reads them, to tell a count taken again
    // because rows came or went (another writer) from one taken again after an update.
    let probe = another_process(fx).await;
    let versions = || {
        let probe = probe.clone();
        async move {
            fx.on_server(async move {
                let v = probe.versions(&brandhub_store::Timing::default()).await.unwrap();
                (v.stamp(&[brandhub_store::versions::rows_key("stock")]), v.stamp(&["stock"]))
            })
            .await
        }
    };
    let before = versions().await;
    let total = count(&fx.get("/api/stock/count").await);
    let ids = fx.get("/api/stock?fields=id&pageSize=2").await.ids("stock");
    let patched = common::call(fx, reqwest::Method::PATCH, &format!("/api/stock/{}", ids[0]), "admin", Some(serde_json::json!({"inStock": 987_654}))).await;
    assert_eq!(patched.status, 200, "{}", String::from_utf8_lossy(&patched.body));
    // An update changes what rows hold, not how many there are: the stock rows' version
    // stands and the count of every stock record is the same; a count that filters on what
    // changed is not stale. (What the remembered count costs: the store's own tests.)
    let after_patch = fx.get("/api/stock/count").await;
    let after = versions().await;
    assert_eq!(count(&after_patch), total);
    assert!(after.1 > before.1, "the update is a write of the stock table: {before:?} → {after:?}");
    assert_eq!(after.0, before.0, "an update leaves the stock rows' version as it was");
    assert_eq!(count(&fx.get("/api/stock/count?inStock=987654").await), 1, "a stale filtered count");
    let deleted = common::call(fx, reqwest::Method::DELETE, &format!("/api/stock/{}", ids[1]), "admin", None).await;
    assert_eq!(deleted.status, 204, "{}", String::from_utf8_lossy(&deleted.body));
    assert_eq!(count(&fx.get("/api/stock/count").await), total - 1, "a stale count after a delete");
}

async fn an_update_recounts_only_the_counts_that_compare_what_it_changed(fx) {
    let count = |response: &common::Response| response.json()["count"].as_u64().unwrap();
    let patch = |path: String, body: serde_json::Value| async move {
        let answer = common::call(fx, reqwest::Method::PATCH, &path, "admin", Some(body)).await;
        assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    };
    // The first demo variant.
    let variant = fx.get("/api/variant?fields=id,barcode&pageSize=1&barcode=5@").await.records("variant")[0].clone();
    let (id, barcode) = (variant["id"].as_str().unwrap().to_string(), variant["barcode"].as_str().unwrap().to_string());
    let prefix = &barcode[..barcode.len() - 2];
    let variants_by_barcode = format!("/api/variant/count?barcode={prefix}@");
    let stock_by_barcode = format!("/api/stock/count?stock_variant.barcode={prefix}@");
    let variants = count(&fx.get(&variants_by_barcode).await);
    let stock = count(&fx.get(&stock_by_barcode).await);
    let stock_of_variant = count(&fx.get(&format!("/api/stock/count?fk_variant={id}")).await);
    assert!(variants >= 1 && stock >= stock_of_variant && stock_of_variant >= 1, "{variants} {stock} {stock_of_variant}");

    // A colour is not what these counts compare or join through: both stand.
    patch(format!("/api/variant/{id}"), serde_json::json!({"colour": "Ultramarine"})).await;
    for (path, expected) in [(&variants_by_barcode, variants), (&stock_by_barcode, stock)] {
        let again = fx.get(path).await;
        assert_eq!(count(&again), expected, "{path}");
    }
    assert_eq!(count(&fx.get("/api/variant/count?colour=Ultramarine").await), 1, "a stale count of what changed");

    // A barcode is: both are counted again, at once.
    patch(format!("/api/variant/{id}"), serde_json::json!({"barcode": "77665544332211"})).await;
    assert_eq!(count(&fx.get(&variants_by_barcode).await), variants - 1, "a stale count after the barcode moved");
    assert_eq!(count(&fx.get(&stock_by_barcode).await), stock - stock_of_variant, "a stale count through the relation");

    // `available` is computed by the database from `inStock` and `demand`: a count of it is
    // stale the moment either changes, though no write names it.
    let stock_id = fx.get(&format!("/api/stock?fields=id&fk_variant={id}")).await.ids("stock")[0].clone();
    patch(format!("/api/stock/{stock_id}"), serde_json::json!({"demand": 0, "inStock": 5})).await;
    let available = "/api/stock/count?available=987654";
    assert_eq!(count(&fx.get(available).await), 0);
    patch(format!("/api/stock/{stock_id}"), serde_json::json!({"inStock": 987_654})).await;
    assert_eq!(count(&fx.get(available).await), 1, "a stale count of a generated field");
}

async fn a_page_whose_records_changed_is_read_again_by_its_ids(fx) {
    let listing_hits = || async {
        let text = common::scrape_metrics(fx).await;
        common::metric_sample(&text, "brandhub_cache_hits_total", &[("cache", "page_listing")]).unwrap_or(0.0)
    };
    let patch = |path: String, body: serde_json::Value| async move {
        let answer = common::call(fx, reqwest::Method::PATCH, &path, "admin", Some(body)).await;
        assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    };
    let barcode = fx.get("/api/variant?fields=barcode&pageSize=1&barcode=5@&order_by=barcode<").await.records("variant")[0]["barcode"].as_str().unwrap().to_string();
    let page = format!("/api/variant?barcode={}@&pageSize=5&fields=id,barcode,colour", &barcode[..6]);
    let first = fx.get(&page).await.records("variant");
    assert!(first.len() >= 2, "{first:?}");
    assert_eq!(fx.get(&page).await.records("variant"), first);
    let id = first[0]["id"].as_str().unwrap().to_string();

    // A colour is not what the page lists by: its ids are read again, showing the new colour.
    patch(format!("/api/variant/{id}"), serde_json::json!({"colour": "Vermilion"})).await;
    let hits = listing_hits().await;
    let after = fx.get(&page).await.records("variant");
    assert_eq!(after.len(), first.len());
    for (now, then) in after.iter().zip(&first) {
        assert_eq!(now["id"], then["id"], "the same records in the same order");
    }
    assert_eq!(after[0]["colour"], "Vermilion", "a stale record on a re-read page");
    assert!(listing_hits().await > hits, "the page was not read by its listed ids");

    // A barcode is: the page is listed again, without the record that left the prefix.
    patch(format!("/api/variant/{id}"), serde_json::json!({"barcode": "99887766554400"})).await;
    let moved = fx.get(&page).await.records("variant");
    assert!(moved.iter().all(|v| v["id"] != id.as_str()), "a record that left the filter is still listed");
    assert_eq!(moved.len(), first.len().min(moved.len()));
    assert_eq!(moved[0]["id"], first[1]["id"], "the next record moved up");
}

async fn a_writes_answer_shows_what_it_wrote_of_the_records_it_expands(fx) {
    use common::orders::{call, intake_body, ok, patch, place, text, unique};
    // An order with its items, read by the warehouse: the items' rows are kept under the
    // versions of that moment.
    let p = place(fx, 0).await;
    let order = ok(&call(fx, reqwest::Method::POST, "/api/order", "host", Some(intake_body(&p, &unique("ANSWER")))).await, 201);
    let id = text(&order["id"]);
    let read = || async { ok(&call(fx, reqwest::Method::GET, &format!("/api/order/{id}"), "warehouse", None).await, 200) };
    let before = read().await;
    let items = before["order_orderItem"].as_array().expect("the order shows its items").clone();
    assert!(items.iter().all(|item| item["status"] == "ACC"), "{items:?}");

    // The warehouse rejects a line. The answer reads under the versions its request began
    // with, so the kept rows of the items would still match them: the items table, which the
    // step wrote, must be read again.
    let rejected = text(&items[0]["id"]);
    let answer = ok(&patch(fx, "warehouse", &id, serde_json::json!({"status": "accepted", "order_orderItem": [{"id": rejected, "status": "REJ", "detail": {"reason": "OUT_OF_STOCK"}}]})).await, 200);
    let shown = answer["order_orderItem"].as_array().expect("the answer shows the items");
    let line = shown.iter().find(|item| item["id"] == rejected.as_str()).expect("the rejected line is shown");
    assert_eq!(line["status"], "REJ", "the answer shows the line as it was before the step: {line}");
    assert_eq!(answer["status"], "accepted");
    assert_eq!(read().await["order_orderItem"], answer["order_orderItem"], "the answer and the next read differ");
}

async fn expanded_records_outlive_a_write_of_their_page_and_not_a_write_of_their_own(fx) {
    let related = || async {
        let text = common::scrape_metrics(fx).await;
        let sample = |metric| common::metric_sample(&text, metric, &[("cache", "related")]).unwrap_or(0.0);
        (sample("brandhub_cache_hits_total"), sample("brandhub_cache_misses_total"))
    };
    // A stock record (the third of BR0003), read with its default
    // template: its warehouse, its variant, the variant's product and the product's brand.
    let listed = fx.get("/api/stock?pageSize=1&page=3&order_by=id&stock_variant.variant_product.product_brand.code=BR0003").await.records("stock");
    assert_eq!(listed.len(), 1, "the fixture has no third stock record of BR0003");
    let id = listed[0]["id"].as_str().unwrap().to_string();
    let path = format!("/api/stock/{id}");
    let first = fx.get(&path).await.records("stock");
    let product = first[0]["stock_variant"]["variant_product"]["id"].as_str().unwrap().to_string();
    assert!(first[0]["stock_warehouse"].is_object() && first[0]["stock_variant"]["variant_product"]["product_brand"].is_object(), "{first:?}");

    // The stock record changes: its answer and its page are read again, the four records it
    // expands are not, and they are as they were.
    let (hits, _) = related().await;
    let in_stock = first[0]["inStock"].as_i64().unwrap() + 7;
    let answer = common::call(fx, reqwest::Method::PATCH, &path, "admin", Some(serde_json::json!({"inStock": in_stock}))).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    let after = fx.get(&path).await.records("stock");
    assert_eq!(after[0]["inStock"], in_stock, "a stale stock record");
    for relation in ["stock_warehouse", "stock_variant"] {
        assert_eq!(after[0][relation], first[0][relation], "{relation} changed without a write");
    }
    let (hits_after, misses_after) = related().await;
    assert!(hits_after >= hits + 8.0, "the expansions of the answer and the page were read again: {hits} -> {hits_after} hits");

    // Another process renames the product: the next read shows the new title.
    let title = format!("Retitled {}", common::unique_number());
    update_elsewhere(fx, "product", Query::update()
        .table(Alias::new("product"))
        .value(Alias::new("title"), title.clone())
        .value(Alias::new("title_ci"), fold(&title))
        .and_where(Expr::col(Alias::new("id")).eq(product))
        .to_owned()).await;
    let renamed = fx.get(&path).await.records("stock");
    assert_eq!(renamed[0]["stock_variant"]["variant_product"]["title"], title.as_str(), "a stale expanded product");
    assert!(related().await.1 > misses_after, "the product's rows were not read again");
}

async fn a_page_outlives_writes_of_records_it_neither_shows_nor_finds(fx) {
    let rechecks = || page_rechecks(fx);
    let patch = |path: String, body: serde_json::Value| async move {
        let answer = common::call(fx, reqwest::Method::PATCH, &path, "admin", Some(body)).await;
        assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    };
    // Stock of one barcode prefix, the most recently changed first, with its variants.
    let barcode = fx.get("/api/variant?fields=barcode&pageSize=1&barcode=5@").await.records("variant")[0]["barcode"].as_str().unwrap().to_string();
    let prefix = &barcode[..7];
    let page = format!("/api/stock?stock_variant.barcode={prefix}@&order_by=lastUpdate%3C&pageSize=2");
    let first = fx.get(&page).await;
    assert_eq!(first.status, 200, "{}", String::from_utf8_lossy(&first.body));
    let shown = first.records("stock");
    assert_eq!(shown.len(), 2, "{shown:?}");
    let all = fx.get(&format!("/api/stock?stock_variant.barcode={prefix}@&order_by=lastUpdate%3C&pageSize=50&fields=id,fk_variant")).await.records("stock");
    assert!(all.len() >= 4, "the prefix finds records beyond the page: {all:?}");
    let cached = fx.get(&page).await;
    assert_eq!(cached.body, first.body, "the page is cached");

    // Stock outside the prefix, and a variant the page does not show: the page stands.
    let last = fx.get("/api/variant?fields=barcode&pageSize=1&barcode=5@&order_by=barcode<").await.records("variant")[0]["barcode"].as_str().unwrap().to_string();
    assert_ne!(&last[..7], prefix);
    let elsewhere = fx.get(&format!("/api/stock?fields=id&pageSize=1&stock_variant.barcode={}@", &last[..7])).await.ids("stock")[0].clone();
    let unshown_variant = all[3]["fk_variant"].as_str().unwrap().to_string();
    let (hits, _) = rechecks().await;
    patch(format!("/api/stock/{elsewhere}"), serde_json::json!({"inStock": 4321})).await;
    patch(format!("/api/variant/{unshown_variant}"), serde_json::json!({"colour": "Teal"})).await;
    let kept = fx.get(&page).await;
    assert_eq!(kept.body, first.body, "a write elsewhere changed the page");
    assert!(rechecks().await.0 > hits, "the page was not kept through the writes");

    // Stock the prefix finds but the page did not show: now the most recent, it leads the page.
    let found = all[3]["id"].as_str().unwrap().to_string();
    patch(format!("/api/stock/{found}"), serde_json::json!({"inStock": 8765})).await;
    let (_, misses) = rechecks().await;
    let moved = fx.get(&page).await.records("stock");
    assert_eq!(moved[0]["id"], found.as_str(), "a record written into the page's order is missing");
    assert_eq!(moved[0]["inStock"], 8765);
    assert_eq!(moved[1]["id"], shown[0]["id"]);
    assert!(rechecks().await.1 > misses, "the page was rechecked and refused");

    // A variant the page shows: its new colour shows.
    let shown_variant = moved[1]["stock_variant"]["id"].as_str().unwrap().to_string();
    patch(format!("/api/variant/{shown_variant}"), serde_json::json!({"colour": "Saffron"})).await;
    let recoloured = fx.get(&page).await.records("stock");
    assert_eq!(recoloured[1]["stock_variant"]["colour"], "Saffron", "a stale related record");
    assert_eq!(recoloured[0]["id"], found.as_str());
}

async fn a_request_that_read_older_versions_takes_a_newer_page_as_it_is(fx) {
    use brandhub_query::parse::parse_query_string;
    use brandhub_query::plan::{Viewer, plan_read};
    use brandhub_store::Timing;
    let stock = fx.get("/api/stock?fields=id&pageSize=1&order_by=id").await.ids("stock")[0].clone();
    let other = another_process(fx).await;
    let (older, newer, hits, rechecks) = fx.on_server(async move {
        let timing = Timing::default();
        let resource = brandhub_catalog::catalog().resource("stock").unwrap();
        let request = parse_query_string("pageSize=3&order_by=lastUpdate<").unwrap();
        let plan = plan_read(resource, &request, &Viewer::admin()).unwrap();
        let before = other.versions(&timing).await.unwrap();
        let update = Query::update()
            .table(Alias::new("stock"))
            .value(Alias::new("supply"), 17)
            .and_where(Expr::col(Alias::new("id")).eq(stock.as_str()))
            .to_owned();
        let mut tx = other.begin().await.unwrap();
        tx.execute_update_of("stock", &update, &[stock.as_str()]).await.unwrap();
        tx.commit().await.unwrap();
        let after = other.versions(&timing).await.unwrap();
        let newer = other.render_page(&plan, &Viewer::admin(), &after, &timing).await.unwrap();
        let tally = |name: &str| other.cache_stats().caches.iter().find(|(n, _)| *n == name).unwrap().1;
        let (page, recheck) = (tally("page"), tally("page_recheck"));
        // A request that read the versions before the write, answered after the page was made.
        let older = other.render_page(&plan, &Viewer::admin(), &before, &timing).await.unwrap();
        let hits = tally("page").hits - page.hits;
        let now = tally("page_recheck");
        let rechecks = now.hits + now.misses - recheck.hits - recheck.misses;
        other.close().await;
        (older.body, newer.body, hits, rechecks)
    }).await;
    assert_eq!(older, newer, "the newer page is the answer");
    assert_eq!((hits, rechecks), (1, 0), "taken from the cache as it is, without a recheck");
}

async fn an_order_page_outlives_intakes_it_does_not_find_but_not_a_change_of_an_item_it_shows(fx) {
    use common::orders::{call, intake_body, ok, patch, place, text, unique};
    let rechecks = || page_rechecks(fx);
    let p = place(fx, 0).await;
    let push = || async { text(&ok(&call(fx, reqwest::Method::POST, "/api/order", "host", Some(intake_body(&p, &unique("KEPT")))).await, 201)["id"]) };
    let mut accepted = Vec::new();
    for _ in 0..2 {
        let id = push().await;
        ok(&patch(fx, "company", &id, serde_json::json!({"status": "accepted"})).await, 200);
        accepted.push(id);
    }
    // The brand store's accepted orders with their items (the order's default fields).
    let page = format!("/api/order?fk_brandStore={}&status=accepted&order_by=id%3C&pageSize=100", p.brand_store);
    let first = fx.get(&page).await;
    assert_eq!(first.status, 200, "{}", String::from_utf8_lossy(&first.body));
    let orders = first.records("order");
    let shown = orders.iter().find(|o| o["id"] == accepted[0].as_str()).expect("the accepted order is on the page").clone();
    let items = shown["order_orderItem"].as_array().expect("the page shows the order's items").clone();
    assert_eq!(items.len(), 3, "{shown}");
    assert_eq!(fx.get(&page).await.body, first.body, "the page is cached");

    // An intake: a new order (status new) with new items, and demand on stock. The page
    // finds none of it and shows none of it: it stands.
    let (hits, _) = rechecks().await;
    let fresh = push().await;
    let kept = fx.get(&page).await;
    assert_eq!(kept.body, first.body, "an order the page does not find changed it");
    assert!(rechecks().await.0 > hits, "the page was not kept through the intake");

    // The new order accepted: now found by the page, with its items.
    ok(&patch(fx, "company", &fresh, serde_json::json!({"status": "accepted"})).await, 200);
    let grown = fx.get(&page).await.records("order");
    let found = grown.iter().find(|o| o["id"] == fresh.as_str()).expect("an order the page now finds is missing");
    assert_eq!(found["order_orderItem"].as_array().map(Vec::len), Some(3));

    // An item of a shown order written by id (as another process would): it shows.
    let item = text(&items[0]["id"]);
    let other = another_process(fx).await;
    fx.on_server(async move {
        let item_resource = brandhub_catalog::catalog().resource("orderItem").unwrap();
        let column = item_resource.field_at("hostItemRef").unwrap().column.as_str();
        let update = Query::update()
            .table(Alias::new(item_resource.table))
            .value(Alias::new(column), "CHANGED")
            .and_where(Expr::col(Alias::new("id")).eq(item.as_str()))
            .to_owned();
        let mut tx = other.begin().await.unwrap();
        tx.execute_update_of(item_resource.table, &update, &[item.as_str()]).await.unwrap();
        tx.commit().await.unwrap();
        other.close().await;
    }).await;
    let after = fx.get(&page).await.records("order");
    let order = after.iter().find(|o| o["id"] == accepted[0].as_str()).unwrap();
    let refs: Vec<String> = order["order_orderItem"].as_array().unwrap().iter().map(|i| text(&i["hostItemRef"])).collect();
    assert!(refs.contains(&"CHANGED".to_string()), "a stale item under a shown order: {refs:?}");

    // An item rewritten whole by id (an upsert) under an order the page does not show:
    // it left a shown order, which must lose it.
    let moved = text(&items[1]["id"]);
    let elsewhere = push().await;
    let other = another_process(fx).await;
    fx.on_server(async move {
        let item_resource = brandhub_catalog::catalog().resource("orderItem").unwrap();
        let mut tx = other.begin().await.unwrap();
        let mut records = tx.load_records(item_resource, sea_query::Condition::all().add(Expr::col(Alias::new("id")).eq(moved.as_str()))).await.unwrap();
        let at = brandhub_catalog::Layout::of(item_resource).cell("fk_order");
        records[0].cells[at] = brandhub_catalog::Cell::Text(elsewhere);
        tx.upsert_records(item_resource, &mut records).await.unwrap();
        tx.commit().await.unwrap();
        other.close().await;
    }).await;
    let after = fx.get(&page).await.records("order");
    let order = after.iter().find(|o| o["id"] == accepted[0].as_str()).unwrap();
    assert_eq!(order["order_orderItem"].as_array().map(Vec::len), Some(2), "an item that left a shown order still shows under it: {order}");
}

async fn a_patch_answers_with_the_record_as_a_read_by_id_then_shows_it(fx) {
    // A stock record with its default template: its warehouse and variant expanded, the
    // variant's product and brand within.
    let id = fx.get("/api/stock?fields=id&pageSize=1&page=5&order_by=id").await.ids("stock")[0].clone();
    let path = format!("/api/stock/{id}");
    let before = fx.get(&path).await.records("stock")[0].clone();
    for step in 1..=3 {
        let in_stock = before["inStock"].as_i64().unwrap() + step;
        let answer = common::call(fx, reqwest::Method::PATCH, &path, "admin", Some(serde_json::json!({"inStock": in_stock}))).await;
        assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
        let read = fx.get(&path).await;
        assert_eq!(answer.json(), read.json(), "the answer and the next read by id differ");
        assert_eq!(answer.header("etag"), read.header("etag"), "the answer's ETag is the record's");
        let shown = &answer.records("stock")[0];
        assert_eq!(shown["inStock"], in_stock);
        assert_eq!(shown["available"], std::cmp::max(in_stock - shown["demand"].as_i64().unwrap(), 0), "the generated field as the write made it: {shown}");
    }
}

async fn a_company_users_patch_reads_its_expansions_under_the_versions_its_statement_read(fx) {
    // The company user's scope reads brands and warehouses besides the expanded tables:
    // the write's statement reads the versions of those alone, and the expansions are
    // still taken from the cache.
    let warehouse = common::call(fx, reqwest::Method::GET, "/api/warehouse?fields=id&pageSize=1&order_by=id", "company", None).await.ids("warehouse")[0].clone();
    let listed = common::call(fx, reqwest::Method::GET, &format!("/api/stock?fields=id&pageSize=1&order_by=id&fk_warehouse={warehouse}"), "company", None).await;
    let path = format!("/api/stock/{}", listed.ids("stock")[0]);
    for step in 1..=3 {
        let answer = common::call(fx, reqwest::Method::PATCH, &path, "company", Some(serde_json::json!({"inStock": 40 + step}))).await;
        assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
        let read = common::call(fx, reqwest::Method::GET, &path, "company", None).await;
        assert_eq!(answer.json(), read.json(), "the answer and the next read by id differ");
        assert_eq!(answer.records("stock")[0]["inStock"], 40 + step);
        assert!(answer.records("stock")[0]["stock_variant"]["variant_product"]["product_brand"]["id"].is_string(), "expanded: {}", answer.json());
    }
}

async fn a_create_answers_with_the_record_as_a_read_by_id(fx) {
    // A product of the company's own brand, its default template expanding the brand.
    let brand = common::call(fx, reqwest::Method::GET, "/api/brand?fields=id&pageSize=1&order_by=id", "company", None).await.ids("brand")[0].clone();
    for step in 1..=3 {
        let body = serde_json::json!({"fk_brand": brand, "code": format!("ANSWERED-{step}"), "title": "Answered", "category": "tests"});
        let created = common::call(fx, reqwest::Method::POST, "/api/product", "company", Some(body)).await;
        assert_eq!(created.status, 201, "{}", String::from_utf8_lossy(&created.body));
        let location = created.header("location").expect("a Location");
        let read = common::call(fx, reqwest::Method::GET, &location, "company", None).await;
        assert_eq!(created.json(), read.json(), "the answer and the next read by id differ");
        assert_eq!(created.header("etag"), read.header("etag"), "the answer's ETag is the record's");
    }
    // A key taken is still told with its holder, and a problem beside it as before.
    let body = serde_json::json!({"fk_brand": brand, "code": "answered-1", "title": "Again", "category": "tests"});
    let taken = common::call(fx, reqwest::Method::POST, "/api/product", "company", Some(body)).await;
    let problem = taken.assert_problem(409, "conflict");
    let holder = common::call(fx, reqwest::Method::GET, "/api/product?code=ANSWERED-1&fields=id", "company", None).await.ids("product")[0].clone();
    assert!(problem["detail"].as_str().unwrap().contains(&holder), "{problem}");
    let body = serde_json::json!({"fk_brand": brand, "code": "ANSWERED-1", "title": 5, "category": "tests"});
    common::call(fx, reqwest::Method::POST, "/api/product", "company", Some(body)).await.assert_problem(422, "validation_failed");
}

async fn a_patch_written_without_a_read_first_refuses_as_a_checked_one(fx) {
    // On PostgreSQL a PATCH of plain fields is checked by its write's own statement; what
    // it refuses is told as the checked write tells it, and none of it is written.
    let patch = reqwest::Method::PATCH;
    let id = common::call(fx, reqwest::Method::GET, "/api/stock?fields=id&pageSize=1&order_by=id", "company", None).await.ids("stock")[0].clone();
    let path = format!("/api/stock/{id}");
    let before = fx.get(&path).await;
    let etag = before.header("etag").unwrap().to_string();
    let in_stock = before.records("stock")[0]["inStock"].as_i64().unwrap();
    let body = serde_json::json!({"inStock": in_stock + 7});
    let stale = common::send(fx, &fx.base, patch.clone(), &path, common::As::Demo("company"), &[("if-match", "\"999998\", \"999999\"")], Some(&body)).await;
    let problem = stale.assert_problem(412, "precondition_failed");
    assert!(problem["detail"].as_str().unwrap().contains(etag.trim_matches('"')), "the record's version is named: {problem}");
    // Not this company's stock: 404, as a record that does not exist.
    let theirs = fx.get("/api/stock?fields=id&pageSize=1&order_by=id%3C").await.ids("stock")[0].clone();
    assert_eq!(common::call(fx, reqwest::Method::GET, &format!("/api/stock/{theirs}"), "company", None).await.status, 404, "the last stock record is another company's");
    let their_etag = fx.get(&format!("/api/stock/{theirs}")).await.header("etag").unwrap().to_string();
    common::call(fx, patch.clone(), &format!("/api/stock/{theirs}"), "company", Some(body.clone())).await.assert_problem(404, "not_found");
    common::call(fx, patch.clone(), "/api/stock/0000000000000000000000000000FFFF", "company", Some(body.clone())).await.assert_problem(404, "not_found");
    // A host sees the stock of what it sells but writes none.
    let seen_id = common::call(fx, reqwest::Method::GET, "/api/stock?fields=id&pageSize=1", "host", None).await.ids("stock")[0].clone();
    let seen_etag = fx.get(&format!("/api/stock/{seen_id}")).await.header("etag").unwrap().to_string();
    common::call(fx, patch.clone(), &format!("/api/stock/{seen_id}"), "host", Some(body.clone())).await.assert_problem(403, "forbidden");
    for (record, kept) in [(&id, &etag), (&theirs, &their_etag), (&seen_id, &seen_etag)] {
        let now = fx.get(&format!("/api/stock/{record}")).await;
        assert_eq!(now.header("etag").as_deref(), Some(kept.as_str()), "a refused PATCH wrote {record}");
    }
    // The record's own ETag among others, or any: written, and answered with the next one.
    let listed = format!("\"999999\", {etag}");
    for (if_match, step) in [(listed.as_str(), 7), ("*", 8)] {
        let body = serde_json::json!({"inStock": in_stock + step});
        let written = common::send(fx, &fx.base, patch.clone(), &path, common::As::Demo("company"), &[("if-match", if_match)], Some(&body)).await;
        assert_eq!(written.status, 200, "{}", String::from_utf8_lossy(&written.body));
        assert_eq!(written.records("stock")[0]["inStock"], in_stock + step);
        let read = fx.get(&path).await;
        assert_eq!(written.header("etag"), read.header("etag"), "the answer's ETag is the version written");
        assert_ne!(written.header("etag").as_deref(), Some(etag.as_str()));
    }
}

}
