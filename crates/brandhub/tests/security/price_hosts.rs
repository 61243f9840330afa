//! A price file's host (review "Trust 2", item 10): the part name `price,<brand>,<host>,…`
//! names the host the prices are for, and the host is judged as a JSON price write judges
//! its `fk_host`: one the uploader sees (a host one of its companies' brand stores sells
//! through), else 404 exactly as for a host that does not exist, so the answer tells nothing
//! about which hosts exist; judged at upload and again in the processing transaction.

use crate::common;
use crate::on_both_backends;
use common::unique_number as unique;
use common::{BOUNDARY, Db, Fixture, Response, multipart, row, xlsx};
use reqwest::Method;
use serde_json::{Value, json};

async fn call(
    fx: &Fixture,
    user_type: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Response {
    common::call(fx, method, path, user_type, body).await
}

/// A JSON write that must answer `status`; returns the first record of `resource`.
async fn write(
    fx: &Fixture,
    user_type: &str,
    method: Method,
    path: &str,
    body: Value,
    resource: &str,
    status: u16,
) -> Value {
    let response = call(fx, user_type, method, path, Some(body)).await;
    assert_eq!(
        response.status,
        status,
        "{path}: {}",
        String::from_utf8_lossy(&response.body)
    );
    response
        .records(resource)
        .first()
        .cloned()
        .unwrap_or(Value::Null)
}

fn text(value: &Value) -> String {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not text: {value}"))
        .to_string()
}

/// A price file of one row for the brand's barcode, uploaded as `user_type`.
async fn upload_price(
    fx: &Fixture,
    user_type: &str,
    query: &str,
    brand: &str,
    host: &str,
    barcode: &str,
    price: &str,
) -> Response {
    let user = fx.credential(user_type);
    let bytes = xlsx(&[row(&["Barcode", "Price"]), row(&[barcode, price])]);
    let part = format!("price,{brand},{host},01/02/2031");
    let request = fx
        .client()
        .post(format!("{}/api/file{query}", fx.base))
        .header(
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .body(multipart(&[(&part, Some("prices.xlsx"), &bytes)]))
        .basic_auth(&user.email, Some(&user.secret));
    Response::read(request.send().await.expect("the server answers")).await
}

/// The prices the admin finds for a host.
async fn prices_at(fx: &Fixture, host: &str) -> u64 {
    let response = call(
        fx,
        "admin",
        Method::GET,
        &format!("/api/price/count?fk_host={host}"),
        None,
    )
    .await;
    assert_eq!(
        response.status,
        200,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    response.json()["count"].as_u64().expect("a count")
}

/// The demo company user's world: a brand of its with a brand store, the host that store
/// belongs to, one of the brand's barcodes, and a warehouse of the brand's company.
struct Seller {
    brand: String,
    host: String,
    barcode: String,
    warehouse: String,
}

async fn seller(fx: &Fixture) -> Seller {
    let link = call(
        fx,
        "company",
        Method::GET,
        "/api/brandStore?pageSize=1&fields=fk_brand,fk_warehouse,brandStore_store.fk_host",
        None,
    )
    .await
    .records("brandStore")
    .remove(0);
    let brand = text(&link["fk_brand"]);
    let barcode = call(
        fx,
        "company",
        Method::GET,
        &format!("/api/variant?variant_product.fk_brand={brand}&pageSize=1&fields=barcode"),
        None,
    )
    .await
    .records("variant")
    .remove(0)["barcode"]
        .clone();
    Seller {
        host: text(&link["brandStore_store"]["fk_host"]),
        warehouse: text(&link["fk_warehouse"]),
        barcode: text(&barcode),
        brand,
    }
}

/// A host the admin makes, with no store: no company sells through it.
async fn lonely_host(fx: &Fixture) -> String {
    let n = unique();
    let host = write(
        fx,
        "admin",
        Method::POST,
        "/api/host",
        json!({"name": format!("Lonely {n}"), "code": format!("LONELY-{n}")}),
        "host",
        201,
    )
    .await;
    text(&host["id"])
}

on_both_backends! { "authority";

async fn a_price_file_names_only_a_host_its_uploader_sells_to(fx) {
    let s = seller(fx).await;
    let unseen = lonely_host(fx).await;
    call(fx, "company", Method::GET, &format!("/api/host/{unseen}"), None).await.assert_problem(404, "not_found");
    // The JSON write refuses that host as a foreign key the caller does not see.
    let variant = call(fx, "company", Method::GET, &format!("/api/variant?barcode={}&fields=id", s.barcode), None).await.ids("variant").remove(0);
    let refused = call(fx, "company", Method::POST, "/api/price", Some(json!({"fk_variant": variant, "fk_host": unseen, "price": 1.5, "startDate": "2031-02-01T00:00:00"}))).await;
    let body = refused.assert_problem(422, "validation_failed");
    assert_eq!(body["errors"][0]["field"], "fk_host", "{body}");

    // A file for it: the answer for a host that does not exist, word for word.
    let made_up = format!("{:032X}", u128::from(unique()) << 64 | 0xDEAD);
    let answer = |response: &Response, host: &str| {
        let body = response.assert_problem(404, "not_found");
        assert_eq!(body["field"], "host", "{body}");
        body.to_string().replace(host, "<host>")
    };
    let for_unseen = upload_price(fx, "company", "?wait=30", &s.brand, &unseen, &s.barcode, "1.50").await;
    let for_made_up = upload_price(fx, "company", "?wait=30", &s.brand, &made_up, &s.barcode, "1.50").await;
    assert_eq!(answer(&for_unseen, &unseen), answer(&for_made_up, &made_up));
    assert_eq!(prices_at(fx, &unseen).await, 0, "no price written");

    // The admin sees every host; a host the company sells through still takes its prices.
    let price = format!("{}.25", 1 + unique() % 900);
    let processed = upload_price(fx, "company", "?wait=60", &s.brand, &s.host, &s.barcode, &price).await;
    assert_eq!(processed.status, 201, "{}", String::from_utf8_lossy(&processed.body));
    let file = processed.records("file").remove(0);
    assert_eq!(file["status"], "processed", "{file}");
    assert_eq!(file["detail"]["rowsApplied"], 1, "{file}");
    let written = call(fx, "company", Method::GET, &format!("/api/price?fk_host={}&fk_variant={variant}&startDate=2031-02-01&fields=price", s.host), None).await.records("price");
    assert_eq!(written.len(), 1, "{written:?}");
    assert_eq!(written[0]["price"].as_f64(), price.parse::<f64>().ok());
    let admin = upload_price(fx, "admin", "?wait=60", &s.brand, &unseen, &s.barcode, "2.00").await;
    assert_eq!(admin.status, 201, "{}", String::from_utf8_lossy(&admin.body));
}

}

/// The host is judged again when the file is processed: a server without workers takes the
/// uploads (they stay pending); the company stops selling through one host; then a server
/// with workers processes them.
async fn a_host_the_uploader_stopped_selling_to_fails_the_file(db: Db) {
    let fx = &common::start_fixture_with(db, "price_host_late", 200, |settings| {
        settings.uploads.workers.workers = 0
    });
    let s = seller(fx).await;
    // A host the company sells through only by one brand store of the test's own.
    let host = lonely_host(fx).await;
    let n = unique();
    let store = write(fx, "admin", Method::POST, "/api/store", json!({"fk_host": host, "name": format!("Store {n}"), "code": format!("S{n}"), "currency": "GBP"}), "store", 201).await;
    let link = write(
        fx,
        "admin",
        Method::POST,
        "/api/brandStore",
        json!({"fk_brand": s.brand, "fk_store": text(&store["id"]), "fk_warehouse": s.warehouse}),
        "brandStore",
        201,
    )
    .await;
    let pending = |response: Response| {
        assert_eq!(
            response.status,
            201,
            "{}",
            String::from_utf8_lossy(&response.body)
        );
        let file = response.records("file").remove(0);
        assert_eq!(file["status"], "pending", "{file}");
        text(&file["id"])
    };
    let dropped =
        pending(upload_price(fx, "company", "", &s.brand, &host, &s.barcode, "3.00").await);
    let kept =
        pending(upload_price(fx, "company", "", &s.brand, &s.host, &s.barcode, "3.00").await);
    let removed = call(
        fx,
        "admin",
        Method::DELETE,
        &format!("/api/brandStore/{}", text(&link["id"])),
        None,
    )
    .await;
    assert_eq!(
        removed.status,
        204,
        "{}",
        String::from_utf8_lossy(&removed.body)
    );

    // Now a server with workers processes them.
    let store = fx.store.clone();
    let uploads = brandhub_server::Uploads {
        files: fx.files.clone(),
        max_upload: common::MAX_UPLOAD,
        workers: brandhub_ingest::WorkerSettings {
            job_timeout: std::time::Duration::from_secs(30),
            ..Default::default()
        },
    };
    let dir = tempfile::tempdir().unwrap();
    let tls = dir.path().join("tls");
    let _running = fx
        .on_server(async move {
            let settings = brandhub_server::Settings::new(
                "127.0.0.1:0".parse().unwrap(),
                Some(brandhub_server::tls::TlsSource::SelfSigned { dir: tls }),
                uploads,
            );
            brandhub_server::start(settings, store)
                .await
                .expect("a server with workers starts")
        })
        .await;
    let file = finished(fx, &dropped).await;
    assert_eq!(file["status"], "failed", "{file}");
    let error = text(&file["detail"]["error"]);
    assert!(
        // In English or, for an uploader who reads German, in German.
        error.contains(&format!("does not see the host '{host}'"))
            || error.contains(&format!("sieht host '{host}' nicht")),
        "{error}"
    );
    assert_eq!(file["detail"]["rowsApplied"], 0, "{file}");
    assert_eq!(prices_at(fx, &host).await, 0, "nothing applied");
    let file = finished(fx, &kept).await;
    assert_eq!(file["status"], "processed", "{file}");
    assert_eq!(file["detail"]["rowsApplied"], 1, "{file}");
}

/// The file once processed or failed (the workers of another server process it; its status
/// is polled, with a generous deadline for a loaded machine).
async fn finished(fx: &Fixture, id: &str) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let file = call(fx, "admin", Method::GET, &format!("/api/file/{id}"), None)
            .await
            .records("file")
            .remove(0);
        if file["status"] == "processed" || file["status"] == "failed" {
            return file;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the file was not processed: {file}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

mod late {
    use super::*;

    #[tokio::test]
    async fn sqlite() {
        a_host_the_uploader_stopped_selling_to_fails_the_file(Db::Sqlite).await;
    }

    #[tokio::test]
    async fn postgres() {
        if common::postgres_or_skip().is_none() {
            return;
        }
        a_host_the_uploader_stopped_selling_to_fails_the_file(Db::Postgres).await;
    }
}
