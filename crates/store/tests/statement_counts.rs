//! What a read costs in statements once its answer is cached, on SQLite and on PostgreSQL
//! (when `BRANDHUB_TEST_DATABASE_URL` is set): a count that no write since could have changed
//! is answered from memory, and one that a write could have changed is counted again; a page
//! that writes elsewhere did not touch is kept after a recheck; on PostgreSQL a write reads its
//! answer in its own statement. Each test loads the demo data
//! into a database of its own, so no other test's write moves what it counts. The versions a
//! request reads first (one statement in the server) are read apart and not counted here.

mod support;

use brandhub_catalog::{UserType, catalog};
use brandhub_query::intake::parse_intake;
use brandhub_query::parse::parse_query_string;
use brandhub_query::plan::{Viewer, plan_by_id, plan_count, plan_read};
use brandhub_query::request::ReadRequest;
use brandhub_query::text::fold;
use brandhub_query::write::{WriteMode, parse_write};
use brandhub_store::records::Writer;
use brandhub_store::rights::principal;
use brandhub_store::{RenderedPage, Store, Timing};
use sea_query::{Alias, Expr, ExprTrait, Query};
use std::sync::Arc;
use support::{Db, on_both};

/// The demo's scale for these tests: enough records for pages and counts of several kinds.
const SCALE: u64 = 200;

/// A count asked for as the admin, as `GET /api/<resource>/count?<query>` asks: the count,
/// and the statements it ran.
async fn count(store: &Store, resource: &str, query: &str) -> (u64, u64) {
    let resource = catalog().resource(resource).expect("a resource");
    let versions = store.versions(&Timing::default()).await.unwrap();
    let request = parse_query_string(query).unwrap();
    let viewer = Viewer::admin();
    let timing = Timing::default();
    let count = store
        .count_request(
            format!("{}?{query}", resource.name),
            || plan_count(resource, &request, &viewer),
            &versions,
            &timing,
        )
        .await
        .unwrap();
    (count, timing.statements())
}

/// A page asked for as the admin, as `GET /api/<resource>?<query>` asks: its body, and the
/// statements it ran.
async fn page(store: &Store, resource: &str, query: &str) -> (Vec<u8>, u64) {
    page_as(store, &Viewer::admin(), resource, query).await
}

/// [`page`] as `viewer` asks for it.
async fn page_as(store: &Store, viewer: &Viewer, resource: &str, query: &str) -> (Vec<u8>, u64) {
    let resource = catalog().resource(resource).expect("a resource");
    let versions = store.versions(&Timing::default()).await.unwrap();
    let plan = plan_read(resource, &parse_query_string(query).unwrap(), viewer).unwrap();
    let timing = Timing::default();
    let page = store
        .render_page(&plan, viewer, &versions, &timing)
        .await
        .unwrap();
    (page.body.to_vec(), timing.statements())
}

/// The ids of a page of records as the admin reads them.
async fn ids(store: &Store, resource: &str, query: &str) -> Vec<String> {
    let (body, _) = page(store, resource, &format!("{query}&fields=id")).await;
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
    json["response"][resource]
        .as_array()
        .unwrap_or_else(|| panic!("no {resource} in {json}"))
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

/// A value of a record read as the admin.
async fn value_of(store: &Store, resource: &str, id: &str, field: &str) -> serde_json::Value {
    let (body, _) = page(store, resource, &format!("id={id}&fields={field}")).await;
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
    json["response"][resource][0][field].clone()
}

/// Writes fields of one record in a transaction of its own, as a write through the store
/// does: an update of those columns (and the folded copies of texts) of that row.
async fn update(store: &Store, resource: &str, id: &str, values: &[(&str, serde_json::Value)]) {
    let resource = catalog().resource(resource).expect("a resource");
    let mut update = Query::update()
        .table(Alias::new(resource.table))
        .and_where(Expr::col(Alias::new("id")).eq(id))
        .to_owned();
    for (name, value) in values {
        let field = resource.field_at(name).expect("a field");
        match value {
            serde_json::Value::String(text) => {
                update.value(Alias::new(field.column.as_str()), text.as_str());
                if let Some(folded) = field.folded_column() {
                    update.value(Alias::new(folded), fold(text));
                }
            }
            serde_json::Value::Number(n) => {
                update.value(Alias::new(field.column.as_str()), n.as_i64().unwrap());
            }
            other => panic!("no value like {other} here"),
        }
    }
    let mut tx = store.begin().await.unwrap();
    assert_eq!(
        tx.execute_update_of(resource.table, &update, &[id])
            .await
            .unwrap(),
        1
    );
    tx.commit().await.unwrap();
}

/// Deletes one record in a transaction of its own.
async fn delete(store: &Store, resource: &str, id: &str) {
    let resource = catalog().resource(resource).expect("a resource");
    let delete = Query::delete()
        .from_table(Alias::new(resource.table))
        .and_where(Expr::col(Alias::new("id")).eq(id))
        .to_owned();
    let mut tx = store.begin().await.unwrap();
    assert_eq!(tx.execute(resource.table, &delete).await.unwrap(), 1);
    tx.commit().await.unwrap();
}

async fn a_count_outlives_an_update_and_not_a_delete(db: Db) {
    let Some((store, _dir, _)) = support::demo_store(db, "statements", "count", SCALE).await else {
        return;
    };
    let (total, counted) = count(&store, "stock", "").await;
    assert_eq!(total, SCALE);
    assert!(counted >= 1, "the first count is counted");
    assert_eq!(
        count(&store, "stock", "").await,
        (total, 0),
        "asked again: remembered"
    );

    // An update changes what rows hold, not how many there are: the count of every stock
    // record is still the remembered one; a count that filters on what changed is counted.
    let stock = ids(&store, "stock", "order_by=id&pageSize=2").await;
    update(&store, "stock", &stock[0], &[("inStock", 987_654.into())]).await;
    assert_eq!(
        count(&store, "stock", "").await,
        (total, 0),
        "counted again after an update"
    );
    assert_eq!(
        count(&store, "stock", "inStock=987654").await.0,
        1,
        "a stale filtered count"
    );

    // A delete changes how many there are: counted again.
    delete(&store, "stock", &stock[1]).await;
    let (after, counted) = count(&store, "stock", "").await;
    assert_eq!(after, total - 1, "a stale count after a delete");
    assert!(counted >= 1);
}

async fn an_update_recounts_only_the_counts_that_compare_what_it_changed(db: Db) {
    let Some((store, _dir, _)) = support::demo_store(db, "statements", "recount", SCALE).await
    else {
        return;
    };
    let variant = ids(&store, "variant", "order_by=barcode&pageSize=1").await[0].clone();
    let barcode = value_of(&store, "variant", &variant, "barcode").await;
    let barcode = barcode.as_str().unwrap();
    let prefix = &barcode[..barcode.len() - 2];
    let variants_by_barcode = format!("barcode={prefix}@");
    let stock_by_barcode = format!("stock_variant.barcode={prefix}@");
    let (variants, _) = count(&store, "variant", &variants_by_barcode).await;
    let (stock, _) = count(&store, "stock", &stock_by_barcode).await;
    let (stock_of_variant, _) = count(&store, "stock", &format!("fk_variant={variant}")).await;
    assert!(
        variants >= 1 && stock >= stock_of_variant && stock_of_variant >= 1,
        "{variants} {stock} {stock_of_variant}"
    );

    // A colour is not what these counts compare or join through: both stay remembered.
    update(
        &store,
        "variant",
        &variant,
        &[("colour", "Ultramarine".into())],
    )
    .await;
    assert_eq!(
        count(&store, "variant", &variants_by_barcode).await,
        (variants, 0)
    );
    assert_eq!(count(&store, "stock", &stock_by_barcode).await, (stock, 0));
    assert_eq!(
        count(&store, "variant", "colour=Ultramarine").await.0,
        1,
        "a stale count of what changed"
    );

    // A barcode is: both are counted again.
    update(
        &store,
        "variant",
        &variant,
        &[("barcode", "77665544332211".into())],
    )
    .await;
    let (now, counted) = count(&store, "variant", &variants_by_barcode).await;
    assert_eq!(now, variants - 1, "a stale count after the barcode moved");
    assert!(counted >= 1);
    let (now, counted) = count(&store, "stock", &stock_by_barcode).await;
    assert_eq!(
        now,
        stock - stock_of_variant,
        "a stale count through the relation"
    );
    assert!(counted >= 1);
}

async fn a_page_outlives_writes_of_records_it_neither_shows_nor_finds(db: Db) {
    let Some((store, _dir, _)) = support::demo_store(db, "statements", "kept", SCALE).await else {
        return;
    };
    // Stock of one barcode prefix, the most recently changed first, with its variants.
    let first_variant = ids(&store, "variant", "order_by=barcode&pageSize=1").await[0].clone();
    let barcode = value_of(&store, "variant", &first_variant, "barcode").await;
    let prefix = barcode.as_str().unwrap()[..7].to_string();
    let query = format!("stock_variant.barcode={prefix}@&order_by=lastUpdate%3C&pageSize=2");
    let (first, _) = page(&store, "stock", &query).await;
    let (cached, statements) = page(&store, "stock", &query).await;
    assert_eq!(
        (cached.as_slice(), statements),
        (first.as_slice(), 0),
        "the page is cached"
    );

    // Stock outside the prefix: the page stands, kept after a recheck of the rows written
    // since (and whether the page finds one of them).
    let last_variant = ids(&store, "variant", "order_by=barcode%3C&pageSize=1").await[0].clone();
    let last = value_of(&store, "variant", &last_variant, "barcode").await;
    assert_ne!(&last.as_str().unwrap()[..7], prefix);
    let elsewhere = ids(
        &store,
        "stock",
        &format!("fk_variant={last_variant}&pageSize=1"),
    )
    .await[0]
        .clone();
    update(&store, "stock", &elsewhere, &[("inStock", 4321.into())]).await;
    let (kept, statements) = page(&store, "stock", &query).await;
    assert_eq!(kept, first, "a write elsewhere changed the page");
    assert!(
        statements <= 2,
        "a kept page costs two statements beside the versions: {statements}"
    );
}

/// A write as a request makes it, with the request's timing in scope (the statements of the
/// transactions the store opens count there): its result and the statements it ran. Like a
/// request whose caller was taken from memory, it has read no versions before.
async fn as_request<F: std::future::Future>(
    work: impl FnOnce(Arc<Timing>) -> F,
) -> (F::Output, u64) {
    let timing = Arc::new(Timing::default());
    let output = Timing::scope(timing.clone(), work(timing.clone())).await;
    (output, timing.statements())
}

/// The body of a page, as JSON.
fn json_of(page: &RenderedPage) -> serde_json::Value {
    serde_json::from_slice(&page.body).unwrap()
}

async fn an_order_page_outlives_an_intake_it_does_not_find(db: Db) {
    let Some((store, _dir, demo)) = support::demo_store(db, "statements", "orders", SCALE).await
    else {
        return;
    };
    let viewer_of = |user_type: UserType| support::demo_viewer(&store, &demo, user_type);
    // Accepted orders with their items (the order's default fields).
    let query = "status=accepted&order_by=id%3C&pageSize=20";
    let (first, _) = page(&store, "order", query).await;
    let shown: serde_json::Value = serde_json::from_slice(&first).unwrap();
    let orders = shown["response"]["order"].as_array().expect("orders");
    assert!(
        !orders.is_empty()
            && orders[0]["order_orderItem"]
                .as_array()
                .is_some_and(|items| !items.is_empty()),
        "{shown}"
    );
    assert_eq!(
        page(&store, "order", query).await,
        (first.clone(), 0),
        "the page is cached"
    );

    // An intake: a new order (status new) with new items, and demand on stock. The page
    // finds none of it and shows none of it: it stands, after a recheck of the rows written
    // since, whether one of them is an item of a shown order and whether the page finds one.
    let host = viewer_of(UserType::Host).await;
    let (link, _) = page_as(
        &store,
        &host,
        "brandStore",
        "pageSize=1&order_by=id&fields=id,fk_brand,fk_warehouse",
    )
    .await;
    let link: serde_json::Value = serde_json::from_slice(&link).unwrap();
    let link = &link["response"]["brandStore"][0];
    let stocked = format!(
        "fk_warehouse={}&stock_variant.variant_product.fk_brand={}&order_by=id&pageSize=2&fields=fk_variant",
        link["fk_warehouse"].as_str().unwrap(),
        link["fk_brand"].as_str().unwrap()
    );
    let (stocked, _) = page(&store, "stock", &stocked).await;
    let stocked: serde_json::Value = serde_json::from_slice(&stocked).unwrap();
    let lines: Vec<serde_json::Value> = stocked["response"]["stock"].as_array().expect("stock of the brand store's brand").iter().enumerate().map(|(n, s)| serde_json::json!({"fk_variant": s["fk_variant"], "orderQty": 1, "itemPrice": 2.5, "hostItemRef": format!("L{n}")})).collect();
    assert!(!lines.is_empty(), "{stocked}");
    let body = serde_json::json!({
        "fk_brandStore": link["id"],
        "hostOrderRef": "KEPT-1",
        "shipAddress": {"forename": "Ada", "surname": "Lovelace", "line1": "1 Analytical Row", "town": "London", "postcode": "N1 1AA", "countryCode": "GB"},
        "order_orderItem": lines,
    });
    let intake = parse_intake(
        catalog().resource("order").unwrap(),
        body.to_string().as_bytes(),
        &host,
    )
    .unwrap();
    assert!(
        store
            .intake_order(&intake, &host, None)
            .await
            .unwrap()
            .is_ok(),
        "a new order"
    );
    let (kept, statements) = page(&store, "order", query).await;
    assert_eq!(kept, first, "an order the page does not find changed it");
    assert!(
        statements <= 3,
        "a kept order page costs three statements beside the versions: {statements}"
    );
}

async fn a_patch_answers_with_the_record_as_a_read_by_id_in_one_statement(db: Db) {
    let Some((store, _dir, demo)) = support::demo_store(db, "statements", "patch", SCALE).await
    else {
        return;
    };
    let resource = catalog().resource("stock").unwrap();
    // The admin, and a company user, whose scope reads brands and warehouses besides the
    // expanded tables: the write's statement reads the versions of those too, and the
    // expansions are still taken from the cache.
    let company = demo
        .credentials
        .iter()
        .find(|c| c.user_type == UserType::Company)
        .expect("a company user");
    let company = principal(&mut &store, &company.user_id)
        .await
        .unwrap()
        .expect("the company user")
        .viewer();
    for viewer in [Viewer::admin(), company] {
        // A stock record of the first warehouse the viewer sees, with its default template:
        // its warehouse and variant expanded, the variant's product and brand within.
        let (warehouse, _) = page_as(
            &store,
            &viewer,
            "warehouse",
            "order_by=id&pageSize=1&fields=id",
        )
        .await;
        let warehouse: serde_json::Value = serde_json::from_slice(&warehouse).unwrap();
        let warehouse = warehouse["response"]["warehouse"][0]["id"]
            .as_str()
            .expect("a warehouse")
            .to_string();
        let (listed, _) = page_as(
            &store,
            &viewer,
            "stock",
            &format!("order_by=id&pageSize=1&fk_warehouse={warehouse}&fields=id"),
        )
        .await;
        let listed: serde_json::Value = serde_json::from_slice(&listed).unwrap();
        let id = listed["response"]["stock"][0]["id"]
            .as_str()
            .expect("a stock record")
            .to_string();
        let answer_plan = plan_by_id(resource, &id, &ReadRequest::default(), &viewer).unwrap();
        for step in 1..=3 {
            let body = serde_json::json!({"inStock": 40 + step}).to_string();
            let values =
                parse_write(resource, WriteMode::Update, body.as_bytes(), &viewer).unwrap();
            let ((_, answer), statements) = as_request(|timing| {
                let (store, values, plan, id, viewer) =
                    (&store, &values, &answer_plan, &id, &viewer);
                async move {
                    store
                        .update_record_answered(
                            id,
                            values,
                            &Writer::of(viewer),
                            None,
                            plan,
                            &timing,
                        )
                        .await
                        .unwrap()
                }
            })
            .await;
            let answer = json_of(&answer.expect("the record is answered"));
            let (read, _) = page_as(&store, &viewer, "stock", &format!("id={id}")).await;
            assert_eq!(
                answer,
                serde_json::from_slice::<serde_json::Value>(&read).unwrap(),
                "the answer and the next read by id differ"
            );
            assert_eq!(answer["response"]["stock"][0]["inStock"], 40 + step);
            assert!(
                answer["response"]["stock"][0]["stock_variant"]["variant_product"]["product_brand"]
                    ["id"]
                    .is_string(),
                "expanded: {answer}"
            );
            if step > 1 && matches!(db, Db::Postgres) {
                // Its expansions kept since the first: one statement, the write that checks
                // scope and rights, commits itself and reads the record it wrote with the
                // versions its expansions are kept under.
                assert_eq!(statements, 1, "{:?}, step {step}", viewer.user_type());
            }
        }
    }
}

async fn a_create_answers_with_the_record_as_a_read_by_id_in_two_statements(db: Db) {
    let Some((store, _dir, _)) = support::demo_store(db, "statements", "create", SCALE).await
    else {
        return;
    };
    let (resource, viewer) = (catalog().resource("product").unwrap(), Viewer::admin());
    let brand = ids(&store, "brand", "order_by=id&pageSize=1").await[0].clone();
    let template = plan_read(resource, &ReadRequest::default(), &viewer).unwrap();
    for step in 1..=3 {
        let body = serde_json::json!({"fk_brand": brand, "code": format!("ANSWERED-{step}"), "title": "Answered", "category": "tests"}).to_string();
        let values = parse_write(resource, WriteMode::Create, body.as_bytes(), &viewer).unwrap();
        let ((written, answer), statements) = as_request(|timing| {
            let (store, values, template, viewer) = (&store, &values, &template, &viewer);
            async move {
                store
                    .create_records_answered(
                        resource,
                        std::slice::from_ref(values),
                        &Writer::of(viewer),
                        false,
                        false,
                        Some((template, &*timing)),
                    )
                    .await
                    .unwrap()
            }
        })
        .await;
        let (read, _) = page(&store, "product", &format!("id={}", written[0].id)).await;
        let read: serde_json::Value = serde_json::from_slice(&read).unwrap();
        assert_eq!(
            read["response"]["product"][0]["code"],
            format!("ANSWERED-{step}")
        );
        if let Some(answer) = &answer {
            assert_eq!(
                json_of(answer),
                read,
                "the answer and the next read by id differ"
            );
        }
        if step > 1 && matches!(db, Db::Postgres) {
            // The brand's check, and the write that checks the key by inserting, commits
            // itself and reads the record it wrote.
            assert!(
                answer.is_some(),
                "on PostgreSQL the write's own statement reads its answer"
            );
            assert_eq!(statements, 2, "step {step}");
        }
    }
}

on_both!(
    a_count_outlives_an_update_and_not_a_delete,
    an_update_recounts_only_the_counts_that_compare_what_it_changed,
    a_page_outlives_writes_of_records_it_neither_shows_nor_finds,
    an_order_page_outlives_an_intake_it_does_not_find,
    a_patch_answers_with_the_record_as_a_read_by_id_in_one_statement,
    a_create_answers_with_the_record_as_a_read_by_id_in_two_statements,
);
