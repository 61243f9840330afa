//! `brandhub import FILE.json` as a user runs it, on SQLite and PostgreSQL: a set-up document
//! whose links name their targets by code, applied in one transaction (again: upserts by
//! natural key), a document with problems refused whole with every problem printed, and
//! the result read back over the API.

mod common;

use common::Db;
use common::process::Brandhub;
use serde_json::json;

const SETUP: &str = r#"{
  "company": [{"name": "Acme Apparel", "code": "ACME", "detail": {"country": "GB"}}],
  "brand": [{"fk_company": "ACME", "name": "Acme", "code": "ACME-B"}],
  "warehouse": [{"fk_company": "acme", "name": "Acme Leeds", "code": "ACME-LDS"}],
  "host": [{"name": "Shop Co", "code": "SHOPCO"}],
  "store": [{"fk_host": "SHOPCO", "name": "Shop Co UK", "code": "UK", "currency": "GBP"}],
  "brandStore": [{"fk_brand": "ACME-B", "fk_store": "SHOPCO/UK", "fk_warehouse": "ACME-LDS"}],
  "product": [{"fk_brand": "ACME-B", "code": "TEE", "title": "Tee"}],
  "variant": [{"fk_product": "ACME-B/TEE", "barcode": "5000000000017", "size": "M"}],
  "stock": [{"fk_warehouse": "ACME-LDS", "fk_variant": "ACME-B/5000000000017", "inStock": 4}],
  "price": [{"fk_variant": "ACME-B/5000000000017", "fk_host": "SHOPCO", "price": 12.5, "startDate": "2026-01-01T00:00:00"}]
}"#;

/// A `brandhub` of its own in `dir`: on SQLite there, or on a fresh PostgreSQL database
/// (kept while the second value lives); `None` when PostgreSQL is missing outside CI.
async fn installation(
    db: Db,
    dir: &tempfile::TempDir,
    name: &str,
) -> Option<(Brandhub, Option<tempfile::TempDir>)> {
    match db {
        Db::Sqlite => Some((Brandhub::new(dir.path()), None)),
        Db::Postgres => {
            common::postgres_or_skip()?;
            let (url, keep) = common::fresh_database(db, name).await;
            Some((Brandhub::on(dir.path(), &url), Some(keep)))
        }
    }
}

/// Creates an admin user from the command line and answers its new key's secret.
fn admin_key(brandhub: &Brandhub, email: &str, name: &str) -> String {
    brandhub.run_ok(&[
        "user", "create", "--email", email, "--name", name, "--type", "admin",
    ]);
    brandhub
        .run_ok(&["key", "create", "--user", email])
        .lines()
        .last()
        .expect("key create prints the secret on its last line")
        .trim()
        .to_string()
}

async fn a_setup_document_is_imported(db: Db) {
    let dir = tempfile::tempdir().unwrap();
    let Some((brandhub, _database)) = installation(db, &dir, "import").await else {
        return;
    };
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let setup = file("setup.json", SETUP);
    let first = brandhub.run_ok(&["import", &setup]);
    assert!(
        first.contains("company: 1 created, 0 updated")
            && first.contains("brandStore: 1 created, 0 updated")
            && first.contains("stock: 1 created, 0 updated")
            && first.contains("price: 1 created, 0 updated"),
        "{first}"
    );
    let again = brandhub.run_ok(&["import", &setup]);
    assert!(
        again.contains("brandStore: 0 created, 1 updated")
            && again.contains("variant: 0 created, 1 updated"),
        "an import again upserts: {again}"
    );

    // Every problem of a section at once; nothing of the document is written (the brand of
    // its first section included).
    let bad = file(
        "bad.json",
        &json!({
            "brand": [{"fk_company": "ACME", "name": "Later", "code": "LATER"}],
            "store": [{"fk_host": "NOPE", "name": 5, "currency": "EUR"}],
        })
        .to_string(),
    );
    let refused = brandhub.run(&["import", &bad]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    for line in [
        "store: ",
        "[0] code: is required",
        "[0] fk_host: no host has the code 'NOPE'",
        "[0] name: expected text",
    ] {
        assert!(stderr.contains(line), "{line} in {stderr}");
    }
    let unknown = file("unknown.json", r#"{"order": []}"#);
    let refused = brandhub.run(&["import", &unknown]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("Valid names: company, brand"));

    let secret = admin_key(&brandhub, "ops@example.test", "Ops");
    let server = brandhub.serve(&[]);
    let client = brandhub.client();
    let get = |path: String| {
        let request = client
            .get(format!("{}{path}", server.base))
            .basic_auth("ops@example.test", Some(&secret));
        async move {
            request
                .send()
                .await
                .unwrap()
                .json::<serde_json::Value>()
                .await
                .unwrap()
        }
    };
    let links = get("/api/brandStore?fields=brandStore_brand.code,brandStore_store.code,brandStore_warehouse.code".into()).await;
    let link = &links["response"]["brandStore"][0];
    assert_eq!(links["response"]["recordsFound"], 1, "{links}");
    assert_eq!(
        (
            link["brandStore_brand"]["code"].as_str(),
            link["brandStore_store"]["code"].as_str(),
            link["brandStore_warehouse"]["code"].as_str()
        ),
        (Some("ACME-B"), Some("UK"), Some("ACME-LDS"))
    );
    let brands = get("/api/brand/count?code=LATER".into()).await;
    assert_eq!(
        brands["count"], 0,
        "nothing of a refused document is written"
    );
    drop(server);
}

/// A set-up document of 10,000 records: the six records of a brand's set-up, then 1,998
/// products, 4,000 variants and 3,996 stock records linked by natural key.
fn ten_thousand_records() -> serde_json::Value {
    let products: Vec<_> = (0..1_998)
        .map(|n| json!({"fk_brand": "BULK-B", "code": format!("P{n:05}"), "title": format!("Product {n}")}))
        .collect();
    let variants: Vec<_> = (0..4_000)
        .map(|n| {
            let size = ["S", "M", "L"][n as usize % 3];
            json!({"fk_product": format!("BULK-B/P{:05}", n % 1_998), "barcode": format!("{:013}", 4_000_000_000_000u64 + n), "size": size})
        })
        .collect();
    let stock: Vec<_> = (0..3_996)
        .map(|n| json!({"fk_warehouse": "BULK-W", "fk_variant": format!("BULK-B/{:013}", 4_000_000_000_000u64 + n), "inStock": n % 50}))
        .collect();
    json!({
        "company": [{"name": "Bulk", "code": "BULK"}],
        "brand": [{"fk_company": "BULK", "name": "Bulk", "code": "BULK-B"}],
        "warehouse": [{"fk_company": "BULK", "name": "Bulk Leeds", "code": "BULK-W"}],
        "host": [{"name": "Bulk Shop", "code": "BULKSHOP"}],
        "store": [{"fk_host": "BULKSHOP", "name": "Bulk Shop UK", "code": "UK", "currency": "GBP"}],
        "brandStore": [{"fk_brand": "BULK-B", "fk_store": "BULKSHOP/UK", "fk_warehouse": "BULK-W"}],
        "product": products,
        "variant": variants,
        "stock": stock,
    })
}

/// 10,000 records in one document: all created in one run, all updated by the same document
/// again, and every one there afterwards (counts read over the API).
async fn ten_thousand_records_are_imported(db: Db) {
    let dir = tempfile::tempdir().unwrap();
    let Some((brandhub, _database)) = installation(db, &dir, "import_bulk").await else {
        return;
    };
    let document = ten_thousand_records();
    let total: usize = document
        .as_object()
        .unwrap()
        .values()
        .map(|items| items.as_array().unwrap().len())
        .sum();
    assert_eq!(total, 10_000);
    let path = dir.path().join("bulk.json");
    std::fs::write(&path, document.to_string()).unwrap();
    let path = path.display().to_string();
    let started = std::time::Instant::now();
    let first = brandhub.run_ok(&["import", &path]);
    let created_in = started.elapsed();
    for line in [
        "product: 1998 created, 0 updated",
        "variant: 4000 created, 0 updated",
        "stock: 3996 created, 0 updated",
    ] {
        assert!(first.contains(line), "{line} in {first}");
    }
    let started = std::time::Instant::now();
    let again = brandhub.run_ok(&["import", &path]);
    let updated_in = started.elapsed();
    for line in [
        "product: 0 created, 1998 updated",
        "variant: 0 created, 4000 updated",
        "stock: 0 created, 3996 updated",
    ] {
        assert!(again.contains(line), "{line} in {again}");
    }
    println!("{db:?}: 10,000 records imported in {created_in:?}, imported again in {updated_in:?}");

    let secret = admin_key(&brandhub, "bulk@example.test", "Bulk");
    let server = brandhub.serve(&[]);
    let client = brandhub.client();
    for (path, expected) in [
        ("/api/product/count", 1_998),
        ("/api/variant/count", 4_000),
        ("/api/stock/count?inStock=49", 3_996 / 50),
        ("/api/stock/count", 3_996),
    ] {
        let answer: serde_json::Value = client
            .get(format!("{}{path}", server.base))
            .basic_auth("bulk@example.test", Some(&secret))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(answer["count"], expected, "{path}: {answer}");
    }
    drop(server);
}

#[tokio::test]
async fn ten_thousand_records_are_imported_on_sqlite() {
    ten_thousand_records_are_imported(Db::Sqlite).await;
}

#[tokio::test]
async fn ten_thousand_records_are_imported_on_postgres() {
    ten_thousand_records_are_imported(Db::Postgres).await;
}

#[tokio::test]
async fn a_setup_document_is_imported_on_sqlite() {
    a_setup_document_is_imported(Db::Sqlite).await;
}

#[tokio::test]
async fn a_setup_document_is_imported_on_postgres() {
    a_setup_document_is_imported(Db::Postgres).await;
}
