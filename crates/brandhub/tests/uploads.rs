//! File uploads end to end (docs/API.md, "Files: uploads and processing"): each file type uploaded as a spreadsheet, processed by
//! the server's workers (`?wait=`), its effects read back through the API; every rejection of
//! an upload; failed files; idempotent re-uploads; the content and template endpoints.

mod common;

use common::unique_number as unique;
use common::{BOUNDARY, Part, multipart, row, xlsx};
use serde_json::Value;

const XLSX: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";

/// A new 13-digit barcode that no demo variant has.
fn new_barcode() -> String {
    format!("29{:011}", unique() % 100_000_000_000)
}

/// A request as a demo user of the given type.
async fn send(
    fx: &common::Fixture,
    user_type: &str,
    request: reqwest::RequestBuilder,
) -> common::Response {
    let credential = fx.credential(user_type);
    let response = request
        .basic_auth(&credential.email, Some(&credential.secret))
        .send()
        .await
        .expect("the server answers");
    common::Response::read(response).await
}

/// POSTs a multipart body to `/api/file<query>` as a demo user.
async fn post_parts(
    fx: &common::Fixture,
    user_type: &str,
    query: &str,
    parts: &[Part<'_>],
) -> common::Response {
    uploaders_read_english(fx).await;
    let request = fx
        .client()
        .post(format!("{}/api/file{query}", fx.base))
        .header(
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .body(multipart(parts));
    send(fx, user_type, request).await
}

/// The demo's company and warehouse users read German (their `detail.lang`), and a file's
/// warnings are kept in its uploader's language: these tests read the contract's English
/// words, so on their fixture those users read English (set before each upload, once done
/// for a fixture; the German warnings are asserted in orders.rs and ingest's report tests).
async fn uploaders_read_english(fx: &common::Fixture) {
    static DONE: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    if DONE.lock().unwrap().contains(&fx.base) {
        return;
    }
    for user_type in ["company", "warehouse"] {
        let email = fx.credential(user_type).email.clone();
        let found = get(fx, "admin", &format!("/api/user?email={email}&fields=id")).await;
        let id = found.records("user")[0]["id"].as_str().unwrap().to_string();
        let changed = send(
            fx,
            "admin",
            fx.client()
                .patch(format!("{}/api/user/{id}", fx.base))
                .json(&serde_json::json!({"detail": {"lang": "en"}})),
        )
        .await;
        assert_eq!(
            changed.status,
            200,
            "{}",
            String::from_utf8_lossy(&changed.body)
        );
    }
    DONE.lock().unwrap().push(fx.base.clone());
}

/// Uploads one file and waits for it to be processed; returns the file record.
async fn upload(
    fx: &common::Fixture,
    user_type: &str,
    part: &str,
    file_name: &str,
    bytes: &[u8],
) -> Value {
    // The contract's longest wait: under a loaded CI machine a file whose transaction met a
    // transient database error is retried after a few seconds, and that must still fit.
    let response = post_parts(fx, user_type, "?wait=60", &[(part, Some(file_name), bytes)]).await;
    assert_eq!(
        response.status,
        201,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    let record = response.records("file")[0].clone();
    let id = record["id"].as_str().unwrap();
    assert_eq!(
        response.header("location").unwrap(),
        format!("/api/file/{id}")
    );
    record
}

/// A GET as a demo user.
async fn get(fx: &common::Fixture, user_type: &str, path: &str) -> common::Response {
    send(fx, user_type, fx.client().get(format!("{}{path}", fx.base))).await
}

/// The records of a GET as the admin.
async fn records(fx: &common::Fixture, path: &str, resource: &str) -> Vec<Value> {
    let response = fx.get(path).await;
    assert_eq!(
        response.status,
        200,
        "{path}: {}",
        String::from_utf8_lossy(&response.body)
    );
    response.records(resource)
}

fn text(value: &Value) -> String {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not text: {value}"))
        .to_string()
}

/// The company user's world: a brand in its scope, a warehouse of that brand's company, and
/// a brand and a warehouse of another company.
struct World {
    brand: String,
    warehouse: String,
    foreign_brand: String,
    foreign_warehouse: String,
}

async fn world(fx: &common::Fixture) -> World {
    let brands = get(
        fx,
        "company",
        "/api/brand?pageSize=1000&fields=id,fk_company",
    )
    .await
    .records("brand");
    let companies: Vec<String> = brands.iter().map(|b| text(&b["fk_company"])).collect();
    let mut found = None;
    for brand in &brands {
        let company = text(&brand["fk_company"]);
        let warehouses = records(
            fx,
            &format!("/api/warehouse?fk_company={company}&pageSize=1"),
            "warehouse",
        )
        .await;
        if let Some(warehouse) = warehouses.first() {
            found = Some((text(&brand["id"]), text(&warehouse["id"])));
            break;
        }
    }
    let (brand, warehouse) = found.expect("a company of the company user has a warehouse");
    let all = records(fx, "/api/brand?pageSize=1000&fields=id,fk_company", "brand").await;
    let foreign_brand = all
        .iter()
        .find(|b| !companies.contains(&text(&b["fk_company"])))
        .map(|b| text(&b["id"]))
        .expect("a brand of another company");
    let brand_company = text(&all.iter().find(|b| text(&b["id"]) == brand).unwrap()["fk_company"]);
    let warehouses = records(
        fx,
        "/api/warehouse?pageSize=1000&fields=id,fk_company",
        "warehouse",
    )
    .await;
    let foreign_warehouse = warehouses
        .iter()
        .find(|w| text(&w["fk_company"]) != brand_company)
        .map(|w| text(&w["id"]))
        .expect("a warehouse of another company");
    World {
        brand,
        warehouse,
        foreign_brand,
        foreign_warehouse,
    }
}

/// `n` variants of a brand: (variant id, barcode, product id).
async fn variants_of(fx: &common::Fixture, brand: &str, n: usize) -> Vec<(String, String, String)> {
    records(fx, &format!("/api/variant?variant_product.fk_brand={brand}&pageSize={n}&fields=id,barcode,fk_product"), "variant")
        .await
        .iter()
        .map(|v| (text(&v["id"]), text(&v["barcode"]), text(&v["fk_product"])))
        .collect()
}

fn detail(file: &Value) -> &Value {
    &file["detail"]
}

on_both_backends! { "uploads";

async fn a_product_file_upserts_products_and_variants_once(fx) {
    let w = world(fx).await;
    let code = format!("UP-{}", unique());
    let (b1, b2, b3) = (new_barcode(), new_barcode(), new_barcode());
    let sheet = xlsx(&[
        row(&["Product Code", "title", "BARCODE", "Colour", "Size", "RRP", "Price", "Vatable", "Sequence", "Launch Date"]),
        row(&[&format!("{code}-A"), "Linen Shirt", &b1, "Navy", "M", "59", "49.5", "yes", "1", "2031-01-01"]),
        row(&[&format!("{code}-A"), "Linen Shirt", &b2, "Navy", "L", "59", "49.5", "yes", "2", ""]),
        row(&[&format!("{code}-B"), "Canvas Tote", &b3, "Sand", "", "20", "", "no", "", ""]),
        row(&[&format!("{code}-B"), "", &new_barcode(), "Sand", "", "20", "", "no", "", ""]),
        row(&[&format!("{code}-B"), "Canvas Tote", &b3, "Sand", "", "20", "", "no", "", ""]),
    ]);
    let part = format!("product,{}", w.brand);
    let file = upload(fx, "company", &part, "products.xlsx", &sheet).await;
    let file_id = text(&file["id"]);
    assert_eq!(file["status"], "processed", "{file}");
    assert_eq!(file["fileType"], "product");
    assert_eq!(file["fileName"], "products.xlsx");
    assert_eq!(detail(&file)["fileMime"], XLSX);
    assert_eq!(file["file_brand"]["id"], w.brand.as_str(), "file_brand is expanded");
    assert_eq!(file["file_user"]["id"], fx.credential("company").user_id.as_str());
    assert_eq!(detail(&file)["rowsRead"], 5);
    assert_eq!(detail(&file)["rowsApplied"], 3);
    assert_eq!(detail(&file)["rowsSkipped"], 2);
    assert_eq!(
        detail(&file)["error"],
        format!("Warning: 2 rows skipped: row 5 (Title is empty), row 6 (barcode {b3} is already on row 4)\nWarning: 1 unknown column ignored: Launch Date").as_str()
    );

    // The effects, read back by the company user (so scope through the brand shortcut holds).
    let variant = get(fx, "company", &format!("/api/variant?barcode={b1}&fields=barcode,colour,size,rrp,vatable,sequence,detail,variant_product.code,variant_product.title")).await.records("variant");
    assert_eq!(variant.len(), 1, "{variant:?}");
    let v = &variant[0];
    assert_eq!(v["colour"], "Navy");
    assert_eq!(v["size"], "M");
    assert_eq!(v["rrp"].as_f64(), Some(59.0));
    assert_eq!(v["detail"]["price"].as_f64(), Some(49.5));
    assert_eq!(v["detail"]["importFile"], file_id.as_str());
    assert_eq!(v["vatable"], true);
    assert_eq!(v["sequence"], 1);
    assert_eq!(v["variant_product"]["code"], format!("{code}-A").as_str());
    assert_eq!(v["variant_product"]["title"], "Linen Shirt");
    let products = get(fx, "company", &format!("/api/product?code={code}@&fields=code,title,status,detail,fk_brand")).await.records("product");
    assert_eq!(products.len(), 2);
    assert!(products.iter().all(|p| p["detail"]["importFile"] == file_id.as_str() && p["status"] == "active"));
    assert!(products.iter().all(|p| p["fk_brand"] == w.brand.as_str()));
    assert_eq!(get(fx, "company", &format!("/api/variant/count?variant_product.code={code}@")).await.json()["count"], 3);

    // The same file again changes nothing.
    let again = upload(fx, "company", &part, "products.xlsx", &sheet).await;
    assert_eq!(again["status"], "processed");
    assert_eq!(detail(&again)["rowsApplied"], 3);
    let v = get(fx, "company", &format!("/api/variant?barcode={b1}&fields=detail")).await.records("variant");
    assert_eq!(v[0]["detail"]["importFile"], file_id.as_str(), "an unchanged variant keeps the file that wrote it");
    assert_eq!(get(fx, "company", &format!("/api/product/count?code={code}@")).await.json()["count"], 2);
    assert_eq!(get(fx, "company", &format!("/api/variant/count?variant_product.code={code}@")).await.json()["count"], 3);

    // A changed title rewrites that product only.
    let changed = xlsx(&[
        row(&["Product Code", "Title", "Barcode"]),
        row(&[&format!("{code}-B"), "Canvas Tote Bag", &b3]),
    ]);
    let third = upload(fx, "company", &part, "products.csv.xlsx", &changed).await;
    assert_eq!(detail(&third)["error"], "");
    let products = get(fx, "company", &format!("/api/product?code={code}@&fields=code,title,detail&order_by=code")).await.records("product");
    assert_eq!(products[0]["detail"]["importFile"], file_id.as_str());
    assert_eq!(products[1]["title"], "Canvas Tote Bag");
    assert_eq!(products[1]["detail"]["importFile"], third["id"]);
    let v = get(fx, "company", &format!("/api/variant?barcode={b3}&fields=colour,rrp")).await.records("variant");
    assert_eq!(v[0]["colour"], "Sand", "columns the file lacks are left as they are");
    assert_eq!(v[0]["rrp"].as_f64(), Some(20.0));
}

async fn a_stock_file_sets_the_warehouse_stock(fx) {
    let w = world(fx).await;
    let variants = variants_of(fx, &w.brand, 2).await;
    let missing = new_barcode();
    let csv = format!("Barcode;Qty;Demand\n{};7;2\n{};0;\n{missing};3;1\n", variants[0].1, variants[1].1);
    let file = upload(fx, "company", &format!("stock,{},{}", w.brand, w.warehouse), "stock.csv", csv.as_bytes()).await;
    assert_eq!(file["status"], "processed", "{file}");
    assert_eq!(detail(&file)["fileMime"], "text/csv");
    assert_eq!(detail(&file)["error"], format!("Warning: 1 barcode not found: {missing}").as_str());
    assert_eq!((detail(&file)["rowsApplied"].as_i64(), detail(&file)["rowsSkipped"].as_i64()), (Some(2), Some(1)));
    let stock = get(fx, "company", &format!("/api/stock?stock_variant.barcode={}&fk_warehouse={}&fields=inStock,demand,lastUpdate", variants[0].1, w.warehouse)).await.records("stock");
    assert_eq!(stock.len(), 1, "{stock:?}");
    assert_eq!(stock[0]["inStock"], 7);
    assert_eq!(stock[0]["demand"], 2);
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert!(text(&stock[0]["lastUpdate"]).starts_with(&today), "{stock:?}");
    let stock = get(fx, "company", &format!("/api/stock?stock_variant.barcode={}&fk_warehouse={}&fields=inStock", variants[1].1, w.warehouse)).await.records("stock");
    assert_eq!(stock[0]["inStock"], 0);
}

async fn a_files_error_report_lists_its_skipped_rows_to_fix_and_upload_again(fx) {
    let w = world(fx).await;
    let variants = variants_of(fx, &w.brand, 3).await;
    let missing = new_barcode();
    let part = format!("stock,{},{}", w.brand, w.warehouse);
    // A CSV file: its report is CSV, with the uploaded columns and an Error column.
    let csv = format!("Barcode;Qty;Demand\n{};7;2\n{missing};3;1\n{};lots;\n", variants[0].1, variants[1].1);
    let file = upload(fx, "company", &part, "stock.csv", csv.as_bytes()).await;
    assert_eq!(detail(&file)["rowsSkipped"], 2, "{file}");
    let id = text(&file["id"]);
    let report = get(fx, "company", &format!("/api/file/{id}/report")).await;
    assert_eq!(report.status, 200, "{}", String::from_utf8_lossy(&report.body));
    assert!(report.header("content-type").unwrap().starts_with("text/csv"));
    assert!(report.header("content-disposition").unwrap().contains("stock-errors.csv"));
    let rows: Vec<Vec<String>> = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(report.body.as_slice())
        .records()
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect();
    assert_eq!(rows.len(), 3, "the header and the two skipped rows: {rows:?}");
    assert_eq!(rows[0], ["Barcode", "Qty", "Demand", "Error"]);
    assert_eq!(rows[1][0], missing);
    assert_eq!(rows[1][3], format!("barcode {missing} not found"));
    assert_eq!(rows[2][0], variants[1].1);
    assert!(rows[2][3].contains("lots"), "{rows:?}");
    // Fixed in the report itself and uploaded again: the row applies (the Error column is
    // an unknown column, ignored with a warning).
    let mut fixed = csv::Writer::from_writer(Vec::new());
    fixed.write_record(&rows[0]).unwrap();
    let mut row_fixed = rows[2].clone();
    row_fixed[1] = "5".to_string();
    fixed.write_record(&row_fixed).unwrap();
    let fixed = fixed.into_inner().unwrap();
    let again = upload(fx, "company", &part, "stock-errors.csv", &fixed).await;
    assert_eq!((detail(&again)["rowsApplied"].as_i64(), detail(&again)["rowsSkipped"].as_i64()), (Some(1), Some(0)), "{again}");
    let stock = get(fx, "company", &format!("/api/stock?stock_variant.barcode={}&fk_warehouse={}&fields=inStock", variants[1].1, w.warehouse)).await.records("stock");
    assert_eq!(stock[0]["inStock"], 5);
    // A file without skipped rows has a report of its header alone.
    let clean = get(fx, "company", &format!("/api/file/{}/report", text(&again["id"]))).await;
    assert_eq!(String::from_utf8_lossy(&clean.body).lines().count(), 1);

    // An .xlsx upload gets an .xlsx report, the same cells.
    let bytes = xlsx(&[
        row(&["Barcode", "Qty"]),
        row(&[&variants[2].1, "4"]),
        row(&[&missing, "1"]),
    ]);
    let file = upload(fx, "company", &part, "stock.xlsx", &bytes).await;
    let report = get(fx, "company", &format!("/api/file/{}/report", text(&file["id"]))).await;
    assert_eq!(report.status, 200);
    assert_eq!(report.header("content-type").unwrap(), XLSX);
    let table = brandhub_sheet::read(&report.body, brandhub_sheet::Format::Xlsx, &brandhub_sheet::Limits::default()).unwrap();
    let header: Vec<String> = table.header().cells().iter().map(|c| c.as_text().unwrap().into_owned()).collect();
    assert_eq!(header, ["Barcode", "Qty", "Error"]);
    assert_eq!(table.rows().len(), 1);
    assert_eq!(table.rows()[0].cells()[0].as_text().unwrap(), missing.as_str());

    // Out of scope, it does not exist.
    get(fx, "host", &format!("/api/file/{id}/report")).await.assert_problem(404, "not_found");
}

async fn a_price_file_prices_each_variant_for_the_host_and_dates(fx) {
    let w = world(fx).await;
    let variants = variants_of(fx, &w.brand, 2).await;
    let host = text(&records(fx, "/api/host?pageSize=1", "host").await[0]["id"]);
    let sheet = xlsx(&[
        row(&["Barcode", "Price", "RRP"]),
        row(&[&variants[0].1, "12.50", "20"]),
        row(&[&variants[1].1, "abc", ""]),
    ]);
    let part = format!("price,{},{host},01/03/2031,", w.brand);
    let file = upload(fx, "admin", &part, "prices.xlsx", &sheet).await;
    assert_eq!(file["status"], "processed", "{file}");
    assert_eq!(detail(&file)["host"], host.as_str());
    assert_eq!(detail(&file)["startDate"], "2031-03-01T00:00:00.000Z");
    assert_eq!(detail(&file)["endDate"], "0000-00-00T00:00:00.000Z");
    assert_eq!(detail(&file)["error"], "Warning: 1 row skipped: row 3 (Price \"abc\" is not a number)");
    let prices = records(fx, &format!("/api/price?price_variant.barcode={}&fk_host={host}&startDate=2031-03-01", variants[0].1), "price").await;
    assert_eq!(prices.len(), 1, "{prices:?}");
    assert_eq!(prices[0]["price"].as_f64(), Some(12.5));
    assert_eq!(prices[0]["rrp"].as_f64(), Some(20.0));
    assert_eq!(prices[0]["endDate"], "");
    assert_eq!(prices[0]["fk_file"], file["id"]);
    // Again from the same start with an end date: (variant, host, startDate) is the price's
    // natural key (docs/API.md, "Writes: master data and catalogue"), so the same price now ends; another start is another price.
    let bounded = upload(fx, "admin", &format!("price,{},{host},01/03/2031,31/03/2031", w.brand), "prices.xlsx", &sheet).await;
    assert_eq!(detail(&bounded)["endDate"], "2031-03-31T00:00:00.000Z");
    let prices = records(fx, &format!("/api/price?price_variant.barcode={}&fk_host={host}&startDate=2031-03-01", variants[0].1), "price").await;
    assert_eq!(prices.len(), 1, "{prices:?}");
    assert_eq!(prices[0]["endDate"], "2031-03-31T00:00:00");
    assert_eq!(prices[0]["fk_file"], bounded["id"]);
    upload(fx, "admin", &format!("price,{},{host},01/04/2031", w.brand), "prices.xlsx", &sheet).await;
    let prices = records(fx, &format!("/api/price?price_variant.barcode={}&fk_host={host}&order_by=startDate", variants[0].1), "price").await;
    let starts: Vec<&str> = prices.iter().filter_map(|p| p["startDate"].as_str()).filter(|s| s.starts_with("2031")).collect();
    assert_eq!(starts, ["2031-03-01T00:00:00", "2031-04-01T00:00:00"], "{prices:?}");
}

async fn a_price_file_names_each_prices_currency(fx) {
    let w = world(fx).await;
    let variants = variants_of(fx, &w.brand, 2).await;
    let host = text(&records(fx, "/api/host?pageSize=1", "host").await[0]["id"]);
    // One row per barcode and currency; an empty Currency is any currency; a barcode repeated
    // in one currency is skipped.
    let sheet = xlsx(&[
        row(&["Barcode", "Price", "Currency", "RRP"]),
        row(&[&variants[0].1, "10", "eur", "20"]),
        row(&[&variants[0].1, "11", "", ""]),
        row(&[&variants[0].1, "12", "USD", ""]),
        row(&[&variants[1].1, "13", "EUR", ""]),
        row(&[&variants[0].1, "14", "Eur", ""]),
    ]);
    let part = format!("price,{},{host},01/05/2032,", w.brand);
    let file = upload(fx, "admin", &part, "currencies.xlsx", &sheet).await;
    assert_eq!(file["status"], "processed", "{file}");
    assert_eq!(detail(&file)["rowsApplied"].as_i64(), Some(4), "{file}");
    assert_eq!(detail(&file)["error"], format!("Warning: 1 row skipped: row 6 (barcode {} in EUR is already on row 2)", variants[0].1).as_str());
    let listed = format!("/api/price?price_variant.barcode={}&fk_host={host}&startDate=2032-05-01&order_by=currency&fields=price,rrp,currency", variants[0].1);
    let prices = records(fx, &listed, "price").await;
    let got: Vec<(String, f64)> = prices.iter().map(|p| (text(&p["currency"]), p["price"].as_f64().unwrap())).collect();
    assert_eq!(got, [(String::new(), 11.0), ("EUR".to_string(), 10.0), ("USD".to_string(), 12.0)], "{prices:?}");

    // A file without the column prices in any currency: the records in a currency stay.
    let plain = xlsx(&[row(&["Barcode", "Price"]), row(&[&variants[0].1, "9.5"])]);
    let file = upload(fx, "admin", &part, "plain.xlsx", &plain).await;
    assert_eq!(file["status"], "processed", "{file}");
    let prices = records(fx, &listed, "price").await;
    let got: Vec<(String, f64)> = prices.iter().map(|p| (text(&p["currency"]), p["price"].as_f64().unwrap())).collect();
    assert_eq!(got, [(String::new(), 9.5), ("EUR".to_string(), 10.0), ("USD".to_string(), 12.0)], "{prices:?}");

    // The price export has the column.
    let exported = fx.get(&format!("/api/price?format=csv&price_variant.barcode={}&fk_host={host}&startDate=2032-05-01&order_by=currency", variants[0].1)).await;
    assert_eq!(exported.status, 200);
    let csv = String::from_utf8_lossy(&exported.body).into_owned();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "Barcode,Price,RRP,Currency", "{csv}");
    assert!(lines[2].ends_with(",EUR"), "{csv}");
}

async fn an_image_file_adds_images_once(fx) {
    let w = world(fx).await;
    let variants = variants_of(fx, &w.brand, 1).await;
    let (variant, barcode, product) = variants[0].clone();
    let code = text(&records(fx, &format!("/api/product/{product}?fields=code"), "product").await[0]["code"]);
    let n = unique();
    let product_url = format!("https://images.example.com/{n}/front.jpg");
    let variant_url = format!("http://images.example.com/{n}/swatch.jpg");
    let sheet = xlsx(&[
        row(&["Product Code", "Barcode", "Image URL", "Position"]),
        row(&[&code, "", &product_url, "7"]),
        row(&["", &barcode, &variant_url, ""]),
        row(&[&code, "", "ftp://images.example.com/x.jpg", ""]),
        row(&["NO-SUCH-PRODUCT", "", &product_url, ""]),
    ]);
    let part = format!("image,{}", w.brand);
    let file = upload(fx, "company", &part, "images.xlsx", &sheet).await;
    assert_eq!(file["status"], "processed", "{file}");
    assert_eq!(
        detail(&file)["error"],
        "Warning: 1 product code not found: NO-SUCH-PRODUCT\nWarning: 1 row skipped: row 4 (Image URL \"ftp://images.example.com/x.jpg\" is not an http or https URL)"
    );
    let images = get(fx, "company", &format!("/api/image?fk_product={product}&url=@{n}/@&order_by=position&fields=url,position,fk_variant,fk_file")).await.records("image");
    assert_eq!(images.len(), 2, "{images:?}");
    assert_eq!(images[0]["url"], product_url.as_str());
    assert_eq!(images[0]["fk_variant"], Value::Null);
    assert_eq!(images[1]["url"], variant_url.as_str());
    assert_eq!(images[1]["fk_variant"], variant.as_str());
    assert!(images[1]["position"].as_i64().unwrap() > 7, "a new image without a position goes last");
    assert_eq!(images[0]["fk_file"], file["id"]);
    upload(fx, "company", &part, "images.xlsx", &sheet).await;
    assert_eq!(get(fx, "company", &format!("/api/image/count?fk_product={product}&url=@{n}/@")).await.json()["count"], 2, "the same file adds nothing");
}

async fn an_order_dispatch_file_ships_items_and_dispatches_orders(fx) {
    // An accepted order with at least two items, none shipped.
    let orders = records(fx, "/api/order?status=accepted&pageSize=200&fields=id,brandOrderRef", "order").await;
    let mut chosen = None;
    for order in &orders {
        let id = text(&order["id"]);
        let items = records(fx, &format!("/api/orderItem?fk_order={id}&fields=id,orderQty,shipQty,fk_variant"), "orderItem").await;
        let fresh = items.iter().all(|i| i["shipQty"].as_i64().unwrap_or(0) == 0 && i["orderQty"].as_i64().unwrap_or(0) > 0);
        let mut variants: Vec<String> = items.iter().map(|i| text(&i["fk_variant"])).collect();
        variants.sort();
        variants.dedup();
        if items.len() >= 2 && fresh && variants.len() == items.len() && !text(&order["brandOrderRef"]).is_empty() {
            chosen = Some((order.clone(), items));
            break;
        }
    }
    let (order, items) = chosen.expect("the demo has an accepted order with two items");
    let order_id = text(&order["id"]);
    let reference = text(&order["brandOrderRef"]);
    let brand = text(&records(fx, &format!("/api/order/{order_id}?fields=order_brandStore.fk_brand"), "order").await[0]["order_brandStore"]["fk_brand"]);
    let first_barcode = text(&records(fx, &format!("/api/variant/{}?fields=barcode", text(&items[0]["fk_variant"])), "variant").await[0]["barcode"]);
    let part = format!("orderDispatch,{brand}");

    // The first item by barcode: the order is part dispatched.
    let first = xlsx(&[
        row(&["Order Ref", "Barcode", "Ship Qty"]),
        row(&[&reference, &first_barcode, &items[0]["orderQty"].to_string()]),
        row(&["NO-SUCH-ORDER", &first_barcode, "1"]),
    ]);
    let file = upload(fx, "admin", &part, "dispatch.xlsx", &first).await;
    assert_eq!(file["status"], "processed", "{file}");
    assert_eq!(detail(&file)["error"], "Warning: 1 order not found: NO-SUCH-ORDER");
    let shown = records(fx, &format!("/api/order/{order_id}?fields=status,shipDate"), "order").await;
    assert_eq!(shown[0]["status"], "partDispatched");
    assert!(!text(&shown[0]["shipDate"]).is_empty(), "shipped today when the file gives no date");
    let item = records(fx, &format!("/api/orderItem/{}?fields=shipQty,status", text(&items[0]["id"])), "orderItem").await;
    assert_eq!(item[0]["shipQty"], items[0]["orderQty"]);
    assert_eq!(item[0]["status"], "DSP");

    // Every item by Item Ref (the item id), with carrier, tracking and date: dispatched.
    let mut rows = vec![row(&["Order Ref", "Item Ref", "Ship Qty", "Carrier", "Tracking Ref", "Ship Date"])];
    for item in &items {
        rows.push(row(&[&order_id, &text(&item["id"]), &item["orderQty"].to_string(), "DHL", "TRK-1", "15/03/2031"]));
    }
    let file = upload(fx, "admin", &part, "dispatch.xlsx", &xlsx(&rows)).await;
    assert_eq!(detail(&file)["error"], "", "{file}");
    let shown = records(fx, &format!("/api/order/{order_id}?fields=status,carrier,trackingRef,shipDate"), "order").await;
    assert_eq!(shown[0]["status"], "dispatched");
    assert_eq!(shown[0]["carrier"], "DHL");
    assert_eq!(shown[0]["trackingRef"], "TRK-1");
    assert_eq!(shown[0]["shipDate"], "2031-03-15T00:00:00");
}

async fn a_corrupt_file_or_a_missing_column_fails_with_the_reason(fx) {
    let w = world(fx).await;
    let part = format!("product,{}", w.brand);
    let corrupt = upload(fx, "company", &part, "broken.xlsx", b"PK\x03\x04 this is not a workbook").await;
    assert_eq!(corrupt["status"], "failed", "{corrupt}");
    let error = text(&detail(&corrupt)["error"]);
    assert!(error.starts_with("The file is not a readable .xlsx workbook"), "{error}");
    assert_eq!(detail(&corrupt)["rowsApplied"], 0);

    let code = format!("MISSING-{}", unique());
    let sheet = xlsx(&[row(&["Product Code", "Title"]), row(&[&code, "No Barcode Column"])]);
    let missing = upload(fx, "company", &part, "nobarcode.xlsx", &sheet).await;
    assert_eq!(missing["status"], "failed");
    assert_eq!(detail(&missing)["error"], "Missing required column: Barcode.");
    assert_eq!(get(fx, "company", &format!("/api/product/count?code={code}")).await.json()["count"], 0, "nothing applied");
}

async fn every_bad_upload_is_refused_with_its_problem(fx) {
    let w = world(fx).await;
    let sheet = xlsx(&[row(&["Barcode", "In Stock"])]);
    let product = format!("product,{}", w.brand);

    post_parts(fx, "company", "", &[]).await.assert_problem(400, "invalid_upload");
    let two = post_parts(fx, "company", "", &[(&product, Some("a.xlsx"), &sheet), (&product, Some("b.xlsx"), &sheet)]).await;
    let body = two.assert_problem(400, "invalid_upload");
    assert!(text(&body["detail"]).contains("exactly one file part"), "{body}");
    let unnamed = post_parts(fx, "company", "", &[(&product, None, &sheet)]).await.assert_problem(400, "invalid_upload");
    assert!(text(&unnamed["detail"]).contains("no filename"), "{unnamed}");
    let kind = post_parts(fx, "company", "", &[("products,x", Some("a.xlsx"), &sheet)]).await.assert_problem(400, "invalid_upload");
    assert_eq!(kind["field"], "fileType");

    let unknown = post_parts(fx, "company", "", &[("product,0123456789ABCDEF0123456789ABCDEF", Some("a.xlsx"), &sheet)]).await.assert_problem(404, "not_found");
    assert_eq!(unknown["field"], "brand");
    let foreign = post_parts(fx, "company", "", &[(&format!("product,{}", w.foreign_brand), Some("a.xlsx"), &sheet)]).await.assert_problem(404, "not_found");
    assert_eq!(foreign["field"], "brand", "a company user cannot upload for another company's brand");

    let stock = |warehouse: &str| format!("stock,{},{warehouse}", w.brand);
    let no_warehouse = post_parts(fx, "company", "", &[(&format!("stock,{}", w.brand), Some("a.xlsx"), &sheet)]).await.assert_problem(400, "invalid_upload");
    assert_eq!(no_warehouse["field"], "warehouse");
    let ghost = post_parts(fx, "admin", "", &[(&stock("0123456789ABCDEF0123456789ABCDEF"), Some("a.xlsx"), &sheet)]).await.assert_problem(404, "not_found");
    assert_eq!(ghost["field"], "warehouse");
    let other = post_parts(fx, "admin", "", &[(&stock(&w.foreign_warehouse), Some("a.xlsx"), &sheet)]).await.assert_problem(400, "invalid_upload");
    assert_eq!(other["field"], "warehouse");

    let host = text(&records(fx, "/api/host?pageSize=1", "host").await[0]["id"]);
    let price = |rest: &str| format!("price,{},{rest}", w.brand);
    let no_host = post_parts(fx, "admin", "", &[(&price("0123456789ABCDEF0123456789ABCDEF,01/01/2031"), Some("a.xlsx"), &sheet)]).await.assert_problem(404, "not_found");
    assert_eq!(no_host["field"], "host");
    let bad_date = post_parts(fx, "admin", "", &[(&price(&format!("{host},31/02/2031")), Some("a.xlsx"), &sheet)]).await.assert_problem(400, "invalid_upload");
    assert_eq!(bad_date["field"], "startDate");
    let backwards = post_parts(fx, "admin", "", &[(&price(&format!("{host},02/01/2031,01/01/2031")), Some("a.xlsx"), &sheet)]).await.assert_problem(400, "invalid_upload");
    assert_eq!(backwards["field"], "endDate");

    post_parts(fx, "company", "", &[(&product, Some("notes.txt"), b"hello")]).await.assert_problem(415, "unsupported_media_type");
    let json = send(fx, "company", fx.client().post(format!("{}/api/file", fx.base)).json(&serde_json::json!({"fileType": "product"}))).await;
    json.assert_problem(415, "unsupported_media_type");
    let big = vec![b'x'; common::MAX_UPLOAD as usize + 200_000];
    post_parts(fx, "company", "", &[(&product, Some("big.csv"), &big)]).await.assert_problem(413, "payload_too_large");
    post_parts(fx, "company", "?wait=soon", &[(&product, Some("a.xlsx"), &sheet)]).await.assert_problem(400, "invalid_parameter");
    post_parts(fx, "host", "", &[(&product, Some("a.xlsx"), &sheet)]).await.assert_problem(403, "forbidden");
}

async fn a_streamed_upload_past_the_limit_is_cut_off_with_413(fx) {
    // Chunked, so no Content-Length announces the size, and never finished: the server must
    // answer while the body is still open, so the limit holds while streaming.
    use base64::Engine;
    let w = world(fx).await;
    let admin = fx.credential("admin");
    let big = "x".repeat(common::MAX_UPLOAD as usize + 100_000);
    let body = String::from_utf8(multipart(&[(&format!("product,{}", w.brand), Some("big.csv"), big.as_bytes())])).unwrap();
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", admin.email, admin.secret));
    let request = format!(
        "POST /api/file HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic {auth}\r\nContent-Type: multipart/form-data; boundary={BOUNDARY}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{body}\r\n",
        body.len()
    );
    let answer = common::raw_https(fx, request).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{}", &answer[..answer.len().min(300)]);
    assert!(answer.contains("payload_too_large"), "{answer}");
}

async fn an_upload_answers_at_once_as_pending_and_serves_its_content(fx) {
    let w = world(fx).await;
    let sheet = xlsx(&[row(&["Product Code", "Title", "Barcode"]), row(&[&format!("CT-{}", unique()), "Content Test", &new_barcode()])]);
    let response = post_parts(fx, "company", "", &[(&format!("product,{}", w.brand), Some("uploads/content.xlsx"), &sheet)]).await;
    assert_eq!(response.status, 201, "{}", String::from_utf8_lossy(&response.body));
    let file = &response.records("file")[0];
    // The answer comes before this process's workers are woken; a worker of another process
    // (or one polling) may just have claimed the file.
    assert!(file["status"] == "pending" || file["status"] == "processing", "{file}");
    assert_eq!(file["fileName"], "content.xlsx");
    let id = text(&file["id"]);
    let content = get(fx, "company", &format!("/api/file/{id}/content")).await;
    assert_eq!(content.status, 200);
    assert_eq!(content.body, sheet);
    assert_eq!(content.header("content-type").as_deref(), Some(XLSX));
    assert!(content.header("content-disposition").unwrap().contains("content.xlsx"));
    get(fx, "host", &format!("/api/file/{id}/content")).await.assert_problem(404, "not_found");
    get(fx, "company", "/api/file/0123456789ABCDEF0123456789ABCDEF/content").await.assert_problem(404, "not_found");
    // It is processed without anyone waiting (polled until a generous deadline: how long the
    // workers take on a loaded machine is not what this test is about).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let mut status = String::new();
    while std::time::Instant::now() < deadline {
        status = text(&get(fx, "company", &format!("/api/file/{id}?fields=status")).await.records("file")[0]["status"]);
        if status == "processed" || status == "failed" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(status, "processed");
}

async fn a_dispatch_file_of_another_brands_order_names_that_brand_and_fails(fx) {
    // An order of one brand, named in a dispatch file of another brand.
    let order = records(fx, "/api/order?status=accepted&pageSize=50&fields=id,brandOrderRef,order_brandStore.fk_brand", "order").await
        .into_iter()
        .find(|o| !text(&o["brandOrderRef"]).is_empty())
        .expect("the demo has an accepted order with a reference");
    let reference = text(&order["brandOrderRef"]);
    let own = text(&order["order_brandStore"]["fk_brand"]);
    let brand = records(fx, &format!("/api/brand/{own}?fields=name,code"), "brand").await.remove(0);
    let other = records(fx, &format!("/api/brand?id=%23{own}&pageSize=1&fields=id,name,code"), "brand").await.remove(0);
    let item = records(fx, &format!("/api/orderItem?fk_order={}&pageSize=1&fields=id,orderQty", text(&order["id"])), "orderItem").await.remove(0);
    let sheet = xlsx(&[
        row(&["Order Ref", "Item Ref", "Ship Qty"]),
        row(&[&reference, &text(&item["id"]), &item["orderQty"].to_string()]),
    ]);
    let file = upload(fx, "admin", &format!("orderDispatch,{}", text(&other["id"])), "wrong-brand.xlsx", &sheet).await;
    assert_eq!(file["status"], "failed", "no row applied is not a green processed: {file}");
    assert_eq!((detail(&file)["rowsApplied"].as_i64(), detail(&file)["rowsSkipped"].as_i64()), (Some(0), Some(1)), "{file}");
    let error = text(&detail(&file)["error"]);
    let named = format!("\"{}\" ({})", text(&brand["name"]), text(&brand["code"]));
    assert!(error.starts_with("No row of the file was applied, so nothing was shipped.\n"), "{error}");
    assert!(error.contains(&format!("order {reference} belongs to the brand {named}, not to \"{}\"", text(&other["name"]))), "{error}");
    assert!(!error.contains(&own), "the brand by its name, not its id: {error}");
    // The skipped row is in the error report, to fix and upload again.
    let report = get(fx, "admin", &format!("/api/file/{}/report", text(&file["id"]))).await;
    assert_eq!(report.status, 200);
    let table = brandhub_sheet::read(&report.body, brandhub_sheet::Format::Xlsx, &brandhub_sheet::Limits::default()).unwrap();
    assert_eq!(table.rows().len(), 1);
    let shown = records(fx, &format!("/api/order/{}?fields=status", text(&order["id"])), "order").await;
    assert_eq!(shown[0]["status"], "accepted", "nothing shipped");

    // A file of which some row applied stays processed (with the others as warnings): shown
    // by an_order_dispatch_file_ships_items_and_dispatches_orders.
}

async fn a_refused_upload_names_the_brand_by_its_name(fx) {
    let brand = get(fx, "warehouse", "/api/brand?pageSize=1&fields=id,name,code").await.records("brand").remove(0);
    let id = text(&brand["id"]);
    let sheet = xlsx(&[row(&["Product Code", "Title", "Barcode"])]);
    let refused = post_parts(fx, "warehouse", "", &[(&format!("product,{id}"), Some("a.xlsx"), &sheet)]).await.assert_problem(403, "forbidden");
    let detail = text(&refused["detail"]);
    assert!(detail.contains(&format!("brand \"{}\" ({})", text(&brand["name"]), text(&brand["code"]))), "{detail}");
    assert!(!detail.contains(&id), "{detail}");
}

async fn templates_list_each_file_types_columns(fx) {
    for (file_type, first) in [("product", "Product Code"), ("stock", "Barcode"), ("price", "Barcode"), ("image", "Product Code"), ("orderDispatch", "Order Ref")] {
        let response = get(fx, "company", &format!("/api/file/template/{file_type}")).await;
        assert_eq!(response.status, 200, "{file_type}");
        assert_eq!(response.header("content-type").as_deref(), Some(XLSX));
        let table = brandhub_sheet::read(&response.body, brandhub_sheet::Format::Xlsx, &brandhub_sheet::Limits::default()).unwrap();
        assert_eq!(table.header().cells()[0].as_text().as_deref(), Some(first), "{file_type}");
        assert_eq!(table.rows().len(), 1, "one example row");
    }
    get(fx, "company", "/api/file/template/invoices").await.assert_problem(404, "not_found");
    let allowed = send(fx, "company", fx.client().delete(format!("{}/api/file/template/product", fx.base))).await;
    allowed.assert_problem(405, "method_not_allowed");
    assert_eq!(allowed.header("allow").as_deref(), Some("GET, HEAD"));
}

}
