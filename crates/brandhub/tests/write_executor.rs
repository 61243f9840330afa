//! Every write entry point runs through the one executor, on SQLite and PostgreSQL: each
//! test makes its write through the real server (or, for `brandhub import`, the command run
//! in this process) and asserts that the executor's count for that entry point went up.
//! Tests of this binary run at once and the counts are per process, so each test compares
//! its entry point's count before and after its own write (a delta, never a total).

mod common;

use brandhub_store::write::{EntryPoint, runs};
use common::orders::{call, intake_body, ok, patch, place, text};
use common::{BOUNDARY, multipart, row, xlsx};
use serde_json::{Value, json};

/// Runs `write` and asserts that it ran at least one plan of `entry`.
async fn counted<F, T>(entry: EntryPoint, write: F) -> T
where
    F: std::future::Future<Output = T>,
{
    let before = runs(entry);
    let done = write.await;
    assert!(
        runs(entry) > before,
        "the write ran no plan of {entry:?} through the executor"
    );
    done
}

/// The first record of `resource` in an answer of `status`.
fn first(response: &common::Response, status: u16, resource: &str) -> Value {
    assert_eq!(
        response.status,
        status,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    response.records(resource)[0].clone()
}

/// A host of this test's own, created by a JSON `POST`; answers its id.
async fn new_host(fx: &common::Fixture, code: &str) -> String {
    let answer = call(
        fx,
        reqwest::Method::POST,
        "/api/host",
        "admin",
        Some(json!({"name": "Executor host", "code": code})),
    )
    .await;
    text(&first(&answer, 201, "host")["id"])
}

/// Uploads one file as the admin and waits until its processing ended.
async fn upload(fx: &common::Fixture, part: &str, rows: &[Vec<String>]) -> Value {
    let bytes = xlsx(rows);
    let admin = fx.credential("admin");
    let response = fx
        .client()
        .post(format!("{}/api/file?wait=60", fx.base))
        .header(
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .body(multipart(&[(part, Some("sheet.xlsx"), &bytes)]))
        .basic_auth(&admin.email, Some(&admin.secret))
        .send()
        .await
        .expect("the server answers");
    let response = common::Response::read(response).await;
    let file = first(&response, 201, "file");
    // A dispatch file of which no row applied ends failed, its plan run and rolled back.
    assert!(
        file["status"] == "processed" || file["status"] == "failed",
        "{file}"
    );
    file
}

/// A brand whose company has a warehouse, that warehouse, and a host.
async fn brand_warehouse_host(fx: &common::Fixture) -> (String, String, String) {
    let warehouses = fx
        .get("/api/warehouse?pageSize=50&fields=id,fk_company")
        .await
        .records("warehouse");
    for warehouse in &warehouses {
        let company = text(&warehouse["fk_company"]);
        let brands = fx
            .get(&format!(
                "/api/brand?fk_company={company}&pageSize=1&fields=id"
            ))
            .await
            .records("brand");
        if let Some(brand) = brands.first() {
            let host = fx
                .get("/api/host?pageSize=1&fields=id")
                .await
                .records("host");
            return (
                text(&brand["id"]),
                text(&warehouse["id"]),
                text(&host[0]["id"]),
            );
        }
    }
    panic!("the demo has a brand whose company has a warehouse");
}

on_both_backends! { "write_executor";

async fn json_writes_run_through_the_executor(fx) {
    let n = common::unique_number();
    let id = counted(EntryPoint::Create, new_host(fx, &format!("EX{n}"))).await;
    counted(EntryPoint::Array, async {
        let body = json!([{"name": "Executor a", "code": format!("EXA{n}")}, {"name": "Executor b", "code": format!("EXB{n}")}]);
        first(&call(fx, reqwest::Method::POST, "/api/host", "admin", Some(body)).await, 201, "host");
    }).await;
    counted(EntryPoint::Upsert, async {
        let body = json!({"name": "Executor upserted", "code": format!("EX{n}")});
        let answer = call(fx, reqwest::Method::POST, "/api/host?upsert=true", "admin", Some(body)).await;
        assert!(answer.status == 200 || answer.status == 201, "{}", String::from_utf8_lossy(&answer.body));
    }).await;
    counted(EntryPoint::Update, async {
        let answer = call(fx, reqwest::Method::PATCH, &format!("/api/host/{id}"), "admin", Some(json!({"name": "Executor patched"}))).await;
        assert_eq!(first(&answer, 200, "host")["name"], "Executor patched");
    }).await;
    counted(EntryPoint::Delete, async {
        let answer = call(fx, reqwest::Method::DELETE, &format!("/api/host/{id}"), "admin", None).await;
        assert_eq!(answer.status, 204, "{}", String::from_utf8_lossy(&answer.body));
    }).await;
}

async fn each_spreadsheet_type_runs_through_the_executor(fx) {
    let (brand, warehouse, host) = brand_warehouse_host(fx).await;
    let n = common::unique_number();
    counted(EntryPoint::Sheet("product"), upload(fx, &format!("product,{brand}"), &[
        row(&["Product Code", "Title", "Barcode"]),
        row(&[&format!("EXP{n}"), "Executor product", &format!("9{n:012}")]),
    ])).await;
    counted(EntryPoint::Sheet("stock"), upload(fx, &format!("stock,{brand},{warehouse}"), &[
        row(&["Barcode", "Qty"]),
        row(&["NO-SUCH-BARCODE", "1"]),
    ])).await;
    counted(EntryPoint::Sheet("price"), upload(fx, &format!("price,{brand},{host},01/03/2031,"), &[
        row(&["Barcode", "Price", "RRP"]),
        row(&["NO-SUCH-BARCODE", "1.50", ""]),
    ])).await;
    counted(EntryPoint::Sheet("image"), upload(fx, &format!("image,{brand}"), &[
        row(&["Product Code", "Barcode", "Image URL", "Position"]),
        row(&["NO-SUCH-PRODUCT", "", "https://images.example.com/executor.jpg", ""]),
    ])).await;
    counted(EntryPoint::Sheet("orderDispatch"), upload(fx, &format!("orderDispatch,{brand}"), &[
        row(&["Order Ref", "Barcode", "Ship Qty"]),
        row(&["NO-SUCH-ORDER", "NO-SUCH-BARCODE", "1"]),
    ])).await;
}

async fn order_intake_steps_and_dispatch_arrays_run_through_the_executor(fx) {
    let p = place(fx, 0).await;
    let reference = common::orders::unique("EXEC");
    let order = counted(EntryPoint::Intake, async {
        ok(&call(fx, reqwest::Method::POST, "/api/order", "host", Some(intake_body(&p, &reference))).await, 201)
    }).await;
    let id = text(&order["id"]);
    counted(EntryPoint::Lifecycle, async {
        let answer = patch(fx, "warehouse", &id, json!({"status": "accepted"})).await;
        assert_eq!(ok(&answer, 200)["status"], "accepted");
    }).await;
    counted(EntryPoint::DispatchArray, async {
        let body = json!([{"id": id, "status": "dispatched", "carrier": "DHL", "trackingRef": "EX-1"}]);
        let answer = call(fx, reqwest::Method::POST, "/api/order/dispatch", "warehouse", Some(body)).await;
        assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
        assert_eq!(answer.json()["response"]["dispatch"][0]["status"], 200, "{}", String::from_utf8_lossy(&answer.body));
    }).await;
}

async fn brandhub_import_runs_through_the_executor(fx) {
    use clap::Parser;
    let n = common::unique_number();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("setup.json");
    let code = format!("EXI{n}");
    std::fs::write(&file, json!({"host": [{"name": "Executor import", "code": code}]}).to_string()).unwrap();
    let cli = brandhub::cli::Cli::parse_from([
        "brandhub".to_string(),
        "--data-dir".to_string(),
        dir.path().display().to_string(),
        "--database-url".to_string(),
        fx.database_url.clone(),
        "import".to_string(),
        file.display().to_string(),
    ]);
    counted(EntryPoint::Import, async {
        brandhub::commands::run(cli).await.expect("the import applies");
    }).await;
    let imported = fx.get(&format!("/api/host?code={code}&fields=name")).await.records("host");
    assert_eq!(imported.len(), 1, "the imported host is served");
}

}
