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

async fn a_setup_document_is_imported(db: Db) {
    let dir = tempfile::tempdir().unwrap();
    let (brandhub, _database) = match db {
        Db::Sqlite => (Brandhub::new(dir.path()), None),
        Db::Postgres => {
            if common::postgres_or_skip().is_none() {
                return;
            }
            let (url, keep) = common::fresh_database(db, "import").await;
            (Brandhub::on(dir.path(), &url), Some(keep))
        }
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

    brandhub.run_ok(&[
        "user",
        "create",
        "--email",
        "ops@example.test",
        "--name",
        "Ops",
        "--type",
        "admin",
    ]);
    let secret = brandhub
        .run_ok(&["key", "create", "--user", "ops@example.test"])
        .lines()
        .last()
        .unwrap()
        .trim()
        .to_string();
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

#[tokio::test]
async fn a_setup_document_is_imported_on_sqlite() {
    a_setup_document_is_imported(Db::Sqlite).await;
}

#[tokio::test]
async fn a_setup_document_is_imported_on_postgres() {
    a_setup_document_is_imported(Db::Postgres).await;
}
