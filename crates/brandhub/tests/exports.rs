//! Exports (docs/API.md, "Exports: CSV and XLSX") over HTTPS on both backends: CSV and XLSX of list requests hold
//! every matching record in the list's order (the fixtures' servers read 300 records a chunk,
//! so every export here crosses chunk boundaries, ties of order keys included), with the
//! selected fields as columns, within the caller's scope and without restricted columns;
//! product, stock and price exports have their upload type's columns, and an exported sheet,
//! edited and uploaded again, applies.

mod common;

use brandhub_sheet::{FileType, Limits};
use common::{BOUNDARY, Db, Fixture, Response, multipart};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

const XLSX_TYPE: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";

/// A request as a demo user of `user_type`.
async fn send(fx: &Fixture, user_type: &str, request: reqwest::RequestBuilder) -> Response {
    let user = fx.credential(user_type);
    let response = request
        .basic_auth(&user.email, Some(&user.secret))
        .send()
        .await
        .expect("the server answers");
    Response::read(response).await
}

async fn get(fx: &Fixture, user_type: &str, path: &str) -> Response {
    send(fx, user_type, fx.client().get(format!("{}{path}", fx.base))).await
}

/// A CSV export: its header and rows, after checking the answer's type.
fn csv_table(response: &Response) -> (Vec<String>, Vec<Vec<String>>) {
    assert_eq!(
        response.status,
        200,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    assert_eq!(
        response.header("content-type").as_deref(),
        Some("text/csv; charset=utf-8")
    );
    let mut reader = csv::Reader::from_reader(response.body.as_slice());
    let header = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    let rows = reader
        .records()
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect();
    (header, rows)
}

/// Every record a list finds, page after page, as JSON.
async fn all_records(fx: &Fixture, user_type: &str, path: &str, resource: &str) -> Vec<Value> {
    let mut records = Vec::new();
    for page in 1.. {
        let separator = if path.contains('?') { '&' } else { '?' };
        let response = get(
            fx,
            user_type,
            &format!("{path}{separator}pageSize=1000&page={page}"),
        )
        .await;
        assert_eq!(
            response.status,
            200,
            "{}",
            String::from_utf8_lossy(&response.body)
        );
        let batch = response.records(resource);
        if batch.is_empty() {
            break;
        }
        records.extend(batch);
    }
    records
}

/// A JSON value as an export writes it.
fn as_cell(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The value at a dotted path of a record, following expanded relations; a relation shown as
/// a reference (already shown earlier) is looked up among the objects seen so far.
fn value_at(record: &Value, path: &str, seen: &mut BTreeMap<String, Value>) -> Value {
    let mut current = record.clone();
    for part in path.split('.') {
        if let Some(key) = current.get("__KEY").and_then(Value::as_str) {
            current = seen.get(key).cloned().unwrap_or(Value::Null);
        }
        if let Some(id) = current.get("id").and_then(Value::as_str) {
            seen.insert(id.to_string(), current.clone());
        }
        current = current.get(part).cloned().unwrap_or(Value::Null);
    }
    if let Some(key) = current.get("__KEY").and_then(Value::as_str) {
        return seen.get(key).cloned().unwrap_or(Value::Null);
    }
    current
}

/// The export of `query` equals the JSON list of the same query: same records, same order,
/// the same values in each column; and holds more than one chunk.
async fn export_matches_list(fx: &Fixture, resource: &str, query: &str) {
    let path = format!("/api/{resource}?{query}");
    let records = all_records(fx, "admin", &path, resource).await;
    assert!(
        records.len() as u64 > common::EXPORT_CHUNK,
        "{query}: {} records, not enough to cross a chunk",
        records.len()
    );
    let (header, rows) = csv_table(&get(fx, "admin", &format!("{path}&format=csv")).await);
    assert_eq!(header[0], "id");
    assert_eq!(rows.len(), records.len(), "{query}");
    let mut seen = BTreeMap::new();
    for (row, record) in rows.iter().zip(&records) {
        for (column, cell) in header.iter().zip(row) {
            let expected = value_at(record, column, &mut seen);
            assert_eq!(cell, &as_cell(&expected), "{query}: {column} of {record}");
        }
    }
}

on_both_backends! { "exports";

async fn csv_exports_hold_every_record_in_the_lists_order(fx) {
    export_matches_list(fx, "stock", "fields=inStock,demand,stock_variant.barcode").await;
    // Many ties of the order key at chunk boundaries, descending.
    export_matches_list(fx, "stock", "fields=inStock,lastUpdate&order_by=inStock%3C").await;
    // A key through relations and mixed directions.
    export_matches_list(fx, "stock", "fields=demand,stock_variant.barcode&order_by=stock_variant.variant_product.title;demand%3C").await;
    // Keys that are often unset, both ways.
    export_matches_list(fx, "orderItem", "fields=shipQty,returnDate,status&order_by=returnDate").await;
    export_matches_list(fx, "orderItem", "fields=shipQty,returnDate&order_by=returnDate%3C;shipQty").await;
    export_matches_list(fx, "variant", "fields=barcode,size,variant_product.title,variant_product.product_brand.name&size=@&order_by=%3Esize").await;
}

async fn complex_queries_and_to_many_relations_export_too(fx) {
    let body = json!({"query": [
        {"field": "status", "operator": "=", "value": "new"},
        {"field": "status", "operator": "=", "value": "dispatched", "conjunction": "|"}
    ]});
    let query = "fields=status,order_orderItem.orderQty,order_orderItem.orderItem_variant.barcode&order_by=orderDate%3C";
    let listed = send(fx, "admin", fx.client().post(format!("{}/api/order/query?{query}&pageSize=1000", fx.base)).json(&body)).await;
    let records = listed.records("order");
    assert!(!records.is_empty());
    assert_eq!(listed.json()["response"]["recordsFound"].as_u64().unwrap() as usize, records.len());
    let exported = send(fx, "admin", fx.client().post(format!("{}/api/order/query?{query}&format=csv", fx.base)).json(&body)).await;
    let (header, rows) = csv_table(&exported);
    // An expanded relation shows its id, as in JSON.
    assert_eq!(header, ["id", "status", "order_orderItem.id", "order_orderItem.orderQty", "order_orderItem.orderItem_variant.id", "order_orderItem.orderItem_variant.barcode"]);
    assert_eq!(rows.len(), records.len());
    for (row, record) in rows.iter().zip(&records) {
        assert_eq!(row[0], record["id"].as_str().unwrap());
        let items = record["order_orderItem"].as_array().unwrap();
        assert!(!items.is_empty());
        let quantities: Vec<Value> = items.iter().map(|i| i["orderQty"].clone()).collect();
        let item_ids: Vec<Value> = items.iter().map(|i| i["id"].clone()).collect();
        assert_eq!(serde_json::from_str::<Value>(&row[2]).unwrap(), Value::Array(item_ids), "{record}");
        assert_eq!(serde_json::from_str::<Value>(&row[3]).unwrap(), Value::Array(quantities), "{record}");
        let barcodes: Vec<Value> = serde_json::from_str(&row[5]).unwrap();
        assert_eq!(barcodes.len(), items.len());
        assert!(barcodes.iter().all(|b| b.as_str().is_some_and(|b| !b.is_empty())), "{row:?}");
    }
}

async fn accept_chooses_csv_and_format_chooses_xlsx(fx) {
    let path = "/api/stock?fields=inStock,stock_variant.barcode&order_by=inStock";
    let by_accept = send(fx, "admin", fx.client().get(format!("{}{path}", fx.base)).header("accept", "text/csv")).await;
    let (header, rows) = csv_table(&by_accept);
    assert_eq!(header, ["id", "inStock", "stock_variant.id", "stock_variant.barcode"]);
    assert_eq!(rows.len() as u64, common::SCALE);
    assert!(by_accept.header("content-disposition").unwrap().contains("stock.csv"));
    // format= wins over Accept.
    let json = send(fx, "admin", fx.client().get(format!("{}{path}&format=json", fx.base)).header("accept", "text/csv")).await;
    assert_eq!(json.header("content-type").as_deref(), Some("application/json"));

    let xlsx = get(fx, "admin", &format!("{path}&format=xlsx")).await;
    assert_eq!(xlsx.status, 200);
    assert_eq!(xlsx.header("content-type").as_deref(), Some(XLSX_TYPE));
    let table = brandhub_sheet::read(&xlsx.body, brandhub_sheet::Format::Xlsx, &Limits::default()).unwrap();
    let texts = |cells: &[brandhub_sheet::Cell]| -> Vec<String> {
        cells.iter().map(|c| c.as_text().map(|t| t.to_string()).unwrap_or_default()).collect()
    };
    assert_eq!(texts(table.header().cells()), header);
    assert_eq!(table.rows().len(), rows.len());
    for (sheet_row, csv_row) in table.rows().iter().zip(&rows) {
        assert_eq!(&texts(sheet_row.cells()), csv_row);
    }
}

async fn exports_keep_to_the_callers_scope_and_leave_restricted_columns_out(fx) {
    // A host: its products only, and no detail.importFile.
    let visible: BTreeSet<String> = all_records(fx, "host", "/api/product?fields=id", "product").await.iter().map(|r| r["id"].as_str().unwrap().to_string()).collect();
    assert!(!visible.is_empty());
    let (header, rows) = csv_table(&get(fx, "host", "/api/product?format=csv&fields=*").await);
    assert!(header.contains(&"title".to_string()) && !header.iter().any(|h| h.contains("importFile")), "{header:?}");
    let exported: BTreeSet<String> = rows.iter().map(|r| r[0].clone()).collect();
    assert_eq!(exported, visible);
    // Prices: the host's own, without fk_file.
    let prices = get(fx, "host", "/api/price/count").await.json()["count"].as_u64().unwrap();
    assert!(prices > 0);
    let (header, rows) = csv_table(&get(fx, "host", "/api/price?format=csv&fields=*").await);
    assert!(!header.iter().any(|h| h.contains("fk_file")), "{header:?}");
    assert_eq!(rows.len() as u64, prices);
    // A warehouse: its orders, without money.
    let orders = get(fx, "warehouse", "/api/order/count").await.json()["count"].as_u64().unwrap();
    assert!(orders > 0);
    let (header, rows) = csv_table(&get(fx, "warehouse", "/api/order?format=csv").await);
    assert_eq!(rows.len() as u64, orders);
    assert!(header.contains(&"order_orderItem.orderQty".to_string()), "{header:?}");
    for money in ["detail.net", "detail.gross", "detail.vat", "itemPrice", "lineNet", "lineGross"] {
        assert!(!header.iter().any(|h| h.ends_with(money)), "{money} in {header:?}");
    }
    // Never more than the list: a company's stock export is its stock count.
    let stock = get(fx, "company", "/api/stock/count").await.json()["count"].as_u64().unwrap();
    assert!(stock > 0 && stock < common::SCALE);
    assert_eq!(csv_table(&get(fx, "company", "/api/stock?format=csv").await).1.len() as u64, stock);
}

async fn product_stock_and_price_exports_have_the_upload_columns(fx) {
    for (path, file_type) in [("/api/product", FileType::Product), ("/api/variant", FileType::Product), ("/api/stock", FileType::Stock), ("/api/price", FileType::Price)] {
        let (header, _) = csv_table(&get(fx, "admin", &format!("{path}?format=csv&pageSize=1")).await);
        let labels: Vec<&str> = file_type.columns().iter().map(|(c, _)| c.label()).collect();
        assert_eq!(header, labels, "{path}");
    }
    // Products are exported as their variants, and the product's filters still apply.
    let brand = get(fx, "admin", "/api/brand?pageSize=1&fields=id").await.ids("brand").remove(0);
    let variants = get(fx, "admin", &format!("/api/variant/count?variant_product.fk_brand={brand}")).await.json()["count"].as_u64().unwrap();
    assert!(variants > common::EXPORT_CHUNK);
    let (_, rows) = csv_table(&get(fx, "admin", &format!("/api/product?format=csv&fk_brand={brand}&order_by=code")).await);
    assert_eq!(rows.len() as u64, variants);
    let codes: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    let mut sorted = codes.clone();
    sorted.sort_by_key(|c| c.to_lowercase());
    assert_eq!(codes, sorted, "in the products' order");
    let body = json!({"query": [{"field": "fk_brand", "operator": "=", "value": brand}]});
    let by_query = send(fx, "admin", fx.client().post(format!("{}/api/product/query?format=csv", fx.base)).json(&body)).await;
    assert_eq!(csv_table(&by_query).1.len() as u64, variants);
    // A key without variant:GET cannot export products as variants.
    let created = send(fx, "company", fx.client().post(format!("{}/api/apiKey", fx.base)).json(&json!({"name": "products only", "grants": ["product:GET"]}))).await;
    assert_eq!(created.status, 201, "{}", String::from_utf8_lossy(&created.body));
    let secret = created.json()["response"]["apiKey"][0]["secret"].as_str().unwrap().to_string();
    let company = fx.credential("company");
    let denied = fx.client().get(format!("{}/api/product?format=csv", fx.base)).basic_auth(&company.email, Some(&secret)).send().await.unwrap();
    assert_eq!(denied.status(), 403);
}

async fn bad_export_requests_are_problems_before_any_row(fx) {
    let id = get(fx, "admin", "/api/stock?pageSize=1&fields=id").await.ids("stock").remove(0);
    for path in ["/api/stock/count?format=csv".to_string(), format!("/api/stock/{id}?format=xlsx")] {
        let body = get(fx, "admin", &path).await.assert_problem(400, "invalid_parameter");
        assert_eq!(body["field"], "format", "{path}");
    }
    get(fx, "admin", "/api/stock?format=pdf").await.assert_problem(400, "invalid_parameter");
    get(fx, "admin", "/api/stock?format=csv&nope=1").await.assert_problem(400, "unknown_field");
    get(fx, "host", "/api/stock?format=csv&fields=nope").await.assert_problem(400, "unknown_field");
    get(fx, "warehouse", "/api/order?format=csv&fields=detail.net").await.assert_problem(400, "unknown_field");
}

}

/// A multipart upload as the admin, waited for; returns the file record.
async fn upload(fx: &Fixture, part: &str, name: &str, bytes: &[u8]) -> Value {
    let response = send(
        fx,
        "admin",
        fx.client()
            .post(format!("{}/api/file?wait=60", fx.base))
            .header(
                "content-type",
                format!("multipart/form-data; boundary={BOUNDARY}"),
            )
            .body(multipart(&[(part, Some(name), bytes)])),
    )
    .await;
    assert_eq!(
        response.status,
        201,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    response.records("file").remove(0)
}

fn csv_bytes(header: &[String], rows: &[Vec<String>]) -> Vec<u8> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(header).unwrap();
    for row in rows {
        writer.write_record(row).unwrap();
    }
    writer.into_inner().unwrap()
}

/// Export → edit → upload → export again, on a server of its own (the uploads change data).
async fn exported_sheets_edited_and_uploaded_again_apply(db: Db) {
    if db == Db::Postgres && common::postgres_or_skip().is_none() {
        return;
    }
    let fx = &common::start_fixture(db, "ops_roundtrip", 2000);
    let first = get(
        fx,
        "admin",
        "/api/stock?pageSize=1&fields=fk_warehouse,stock_variant.variant_product.fk_brand",
    )
    .await
    .records("stock")
    .remove(0);
    let warehouse = first["fk_warehouse"].as_str().unwrap().to_string();
    let brand = first["stock_variant"]["variant_product"]["fk_brand"]
        .as_str()
        .unwrap()
        .to_string();

    // Stock as CSV: every In Stock plus 7.
    let query = format!(
        "/api/stock?format=csv&fk_warehouse={warehouse}&stock_variant.variant_product.fk_brand={brand}"
    );
    let (header, rows) = csv_table(&get(fx, "admin", &query).await);
    assert!(rows.len() as u64 > common::EXPORT_CHUNK, "{}", rows.len());
    let edited: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            let mut row = row.clone();
            row[1] = (row[1].parse::<i64>().unwrap() + 7).to_string();
            row
        })
        .collect();
    let file = upload(
        fx,
        &format!("stock,{brand},{warehouse}"),
        "stock.csv",
        &csv_bytes(&header, &edited),
    )
    .await;
    assert_eq!(file["status"], "processed", "{file}");
    assert_eq!(
        file["detail"]["rowsApplied"].as_u64(),
        Some(rows.len() as u64),
        "{file}"
    );
    assert_eq!(file["detail"]["error"], "", "{file}");
    assert_eq!(csv_table(&get(fx, "admin", &query).await), (header, edited));

    // Products as XLSX: uploaded unchanged, nothing changes; with new titles, the titles change.
    let query = format!("/api/product?format=xlsx&fk_brand={brand}");
    let exported = get(fx, "admin", &query).await;
    assert_eq!(exported.status, 200);
    let before = all_records(
        fx,
        "admin",
        &format!("/api/product?fk_brand={brand}&fields=code,title,detail"),
        "product",
    )
    .await;
    let file = upload(
        fx,
        &format!("product,{brand}"),
        "products.xlsx",
        &exported.body,
    )
    .await;
    assert_eq!(file["status"], "processed", "{file}");
    assert_eq!(file["detail"]["error"], "", "{file}");
    let table = brandhub_sheet::read(
        &exported.body,
        brandhub_sheet::Format::Xlsx,
        &Limits::default(),
    )
    .unwrap();
    assert_eq!(
        file["detail"]["rowsApplied"].as_u64(),
        Some(table.rows().len() as u64)
    );
    let after = all_records(
        fx,
        "admin",
        &format!("/api/product?fk_brand={brand}&fields=code,title,detail"),
        "product",
    )
    .await;
    assert_eq!(
        after, before,
        "the same sheet uploaded again changes nothing"
    );
    let mut workbook = rust_xlsxwriter::Workbook::new();
    let sheet = workbook.add_worksheet();
    for (c, cell) in table.header().cells().iter().enumerate() {
        sheet
            .write_string(0, c as u16, cell.as_text().unwrap())
            .unwrap();
    }
    for (r, row) in table.rows().iter().enumerate() {
        let r = r as u32 + 1;
        for (c, cell) in row.cells().iter().enumerate() {
            let c = c as u16;
            match cell {
                brandhub_sheet::Cell::Empty => {}
                brandhub_sheet::Cell::Number(n) => {
                    sheet.write_number(r, c, *n).unwrap();
                }
                brandhub_sheet::Cell::Bool(b) => {
                    sheet.write_boolean(r, c, *b).unwrap();
                }
                other if c == 1 => {
                    sheet
                        .write_string(r, c, format!("{} v2", other.as_text().unwrap()))
                        .unwrap();
                }
                other => {
                    sheet.write_string(r, c, other.as_text().unwrap()).unwrap();
                }
            }
        }
    }
    let file = upload(
        fx,
        &format!("product,{brand}"),
        "renamed.xlsx",
        &workbook.save_to_buffer().unwrap(),
    )
    .await;
    assert_eq!(file["status"], "processed", "{file}");
    let renamed = all_records(
        fx,
        "admin",
        &format!("/api/product?fk_brand={brand}&fields=code,title"),
        "product",
    )
    .await;
    assert_eq!(renamed.len(), before.len());
    for (old, new) in before.iter().zip(&renamed) {
        assert_eq!(
            new["title"],
            format!("{} v2", old["title"].as_str().unwrap()).as_str()
        );
    }

    // Prices: a period's prices, exported, edited (10% off) and uploaded for that period, are
    // the same records with the new prices.
    let host = get(
        fx,
        "admin",
        &format!(
            "/api/price?pageSize=1&price_variant.variant_product.fk_brand={brand}&fields=fk_host"
        ),
    )
    .await
    .records("price")
    .remove(0)["fk_host"]
        .as_str()
        .unwrap()
        .to_string();
    let demo_prices = format!(
        "/api/price?format=csv&fk_host={host}&price_variant.variant_product.fk_brand={brand}"
    );
    let (header, rows) = csv_table(&get(fx, "admin", &demo_prices).await);
    let barcodes: BTreeSet<&String> = rows.iter().map(|r| &r[0]).collect();
    let unique: Vec<Vec<String>> = barcodes
        .iter()
        .map(|b| rows.iter().find(|r| &r[0] == *b).unwrap().clone())
        .collect();
    let part = format!("price,{brand},{host},01/03/2031,31/03/2031");
    let file = upload(fx, &part, "period.csv", &csv_bytes(&header, &unique)).await;
    assert_eq!(
        file["detail"]["rowsApplied"].as_u64(),
        Some(unique.len() as u64),
        "{file}"
    );
    let period = format!(
        "fk_host={host}&startDate=2031-03-01&price_variant.variant_product.fk_brand={brand}"
    );
    let listed = format!(
        "/api/price?{period}&fields=price,rrp,startDate,endDate,price_variant.barcode&order_by=price_variant.barcode"
    );
    let before = all_records(fx, "admin", &listed, "price").await;
    assert_eq!(before.len(), unique.len());
    let (header, rows) =
        csv_table(&get(fx, "admin", &format!("/api/price?format=csv&{period}")).await);
    assert_eq!(rows.len(), before.len());
    let edited: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            let mut row = row.clone();
            row[1] = format!("{:.2}", row[1].parse::<f64>().unwrap() * 0.9);
            row
        })
        .collect();
    let file = upload(fx, &part, "period-edited.csv", &csv_bytes(&header, &edited)).await;
    assert_eq!(file["status"], "processed", "{file}");
    assert_eq!(
        file["detail"]["rowsApplied"].as_u64(),
        Some(rows.len() as u64),
        "{file}"
    );
    let after = all_records(fx, "admin", &listed, "price").await;
    assert_eq!(after.len(), before.len(), "the same records, none added");
    for (old, new) in before.iter().zip(&after) {
        assert_eq!(new["id"], old["id"]);
        let expected: f64 = format!("{:.2}", old["price"].as_f64().unwrap() * 0.9)
            .parse()
            .unwrap();
        assert!(
            (new["price"].as_f64().unwrap() - expected).abs() < 1e-9,
            "{old} → {new}"
        );
        assert_eq!(
            (&new["rrp"], &new["endDate"]),
            (&old["rrp"], &old["endDate"])
        );
    }
    let (_, exported) =
        csv_table(&get(fx, "admin", &format!("/api/price?format=csv&{period}")).await);
    assert_eq!(exported.len(), edited.len());
}

#[tokio::test]
async fn sqlite_exported_sheets_edited_and_uploaded_again_apply() {
    exported_sheets_edited_and_uploaded_again_apply(Db::Sqlite).await;
}

#[tokio::test]
async fn postgres_exported_sheets_edited_and_uploaded_again_apply() {
    exported_sheets_edited_and_uploaded_again_apply(Db::Postgres).await;
}

/// A JSON request as a demo user, which must answer `status`; returns the body as JSON.
async fn json_call(
    fx: &Fixture,
    user_type: &str,
    method: reqwest::Method,
    path: &str,
    body: Value,
    status: u16,
) -> Value {
    let response = common::call(fx, method, path, user_type, Some(body)).await;
    assert_eq!(
        response.status,
        status,
        "{path}: {}",
        String::from_utf8_lossy(&response.body)
    );
    response.json()
}

/// The texts of a CSV export's column, by the value of a key column, after checking the
/// answer.
fn csv_column(response: &Response, key: &str, column: &str) -> BTreeMap<String, String> {
    let (header, rows) = csv_table(response);
    let at = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("{name} in {header:?}"))
    };
    let (k, c) = (at(key), at(column));
    rows.iter().map(|r| (r[k].clone(), r[c].clone())).collect()
}

/// The texts of an XLSX export's sheet XML: no cell of it may be a formula.
fn sheet_xml(xlsx: &[u8]) -> String {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(xlsx)).unwrap();
    let mut xml = String::new();
    std::io::Read::read_to_string(
        &mut archive.by_name("xl/worksheets/sheet1.xml").unwrap(),
        &mut xml,
    )
    .unwrap();
    xml
}

/// What a spreadsheet program may run as a formula at the start of a cell (docs/API.md, "Exports: CSV and XLSX").
const FORMULA_STARTS: [&str; 6] = ["=", "+", "-", "@", "\t", "\r"];

/// Texts one tenant writes reach another tenant's CSV export (a company's product titles a
/// host's, a host's order billing company the company's) with a leading `'` when a
/// spreadsheet would run them as formulas; numbers stay numbers, XLSX cells are strings, and
/// a product export uploaded again keeps the titles exactly (docs/API.md, "Exports: CSV and XLSX"). On a server of its
/// own: the test writes products, stock and orders others would count.
async fn formula_texts_are_neutralised_across_tenants(db: Db) {
    if db == Db::Postgres && common::postgres_or_skip().is_none() {
        return;
    }
    let fx = &common::start_fixture(db, "export_formulas", common::SCALE);
    let place = common::orders::place(fx, 0).await;
    let brand = place.brand.clone();
    let run = common::unique_number();
    let prefix = format!("FORMULA-{run}-");
    let mut titles: BTreeMap<String, String> = FORMULA_STARTS
        .iter()
        .enumerate()
        .map(|(i, start)| {
            (
                format!("{prefix}{i}"),
                format!("{start}HYPERLINK(\"https://evil.test/?{run}\",\"Click\")"),
            )
        })
        .collect();
    // A title that already begins with the mark before a formula character keeps it too.
    titles.insert(format!("{prefix}Q"), "'=already marked".to_string());
    let products: Vec<Value> = titles
        .iter()
        .map(|(code, title)| json!({"fk_brand": brand, "code": code, "title": title}))
        .collect();
    let created = json_call(
        fx,
        "company",
        reqwest::Method::POST,
        "/api/product",
        json!(products),
        201,
    )
    .await;
    let product_ids: BTreeMap<String, String> = created["response"]["product"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["code"].as_str().unwrap().to_string(),
                p["id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let barcodes: BTreeMap<String, String> = product_ids
        .keys()
        .enumerate()
        .map(|(i, code)| {
            (
                code.clone(),
                format!("47{:011}", (run + i as u64) % 100_000_000_000),
            )
        })
        .collect();
    let variants: Vec<Value> = product_ids
        .iter()
        .map(|(code, id)| json!({"fk_product": id, "barcode": barcodes[code], "rrp": 19.5}))
        .collect();
    json_call(
        fx,
        "company",
        reqwest::Method::POST,
        "/api/variant",
        json!(variants),
        201,
    )
    .await;

    // The host's CSV exports: chosen fields, and the product upload sheet.
    let marked = |title: &str| format!("'{title}");
    let exported = csv_column(
        &get(
            fx,
            "host",
            &format!("/api/product?format=csv&fields=code,title&code={prefix}@"),
        )
        .await,
        "code",
        "title",
    );
    let expected: BTreeMap<String, String> = titles
        .iter()
        .map(|(code, title)| (code.clone(), marked(title)))
        .collect();
    assert_eq!(exported, expected);
    let sheet = csv_column(
        &get(
            fx,
            "host",
            &format!("/api/product?format=csv&code={prefix}@"),
        )
        .await,
        "Product Code",
        "Title",
    );
    assert_eq!(sheet, expected);

    // A negative number is a number, beside a marked text of the same row.
    let (first_code, first_barcode) = barcodes.iter().next().unwrap();
    let variant = get(
        fx,
        "company",
        &format!("/api/variant?barcode={first_barcode}&fields=id"),
    )
    .await
    .ids("variant")
    .remove(0);
    json_call(
        fx,
        "company",
        reqwest::Method::POST,
        "/api/stock",
        json!({"fk_warehouse": place.warehouse, "fk_variant": variant, "inStock": 5}),
        201,
    )
    .await;
    let stock = get(
        fx,
        "host",
        &format!("/api/stock?format=csv&fields=inStock,stock_variant.variant_product.title&stock_variant.barcode={first_barcode}"),
    )
    .await;
    let (header, rows) = csv_table(&stock);
    assert_eq!(
        header,
        [
            "id",
            "inStock",
            "stock_variant.id",
            "stock_variant.variant_product.id",
            "stock_variant.variant_product.title"
        ]
    );
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][1], "5");
    assert_eq!(rows[0][4], marked(&titles[first_code]));

    // XLSX: the same titles as string cells, never formulas, and the number a number.
    let xlsx = get(
        fx,
        "host",
        &format!("/api/product?format=xlsx&fields=code,title&code={prefix}@"),
    )
    .await;
    assert_eq!(xlsx.status, 200);
    let xml = sheet_xml(&xlsx.body);
    assert!(!xml.contains("<f>") && !xml.contains("<f "), "{xml}");
    let table =
        brandhub_sheet::read(&xlsx.body, brandhub_sheet::Format::Xlsx, &Limits::default()).unwrap();
    let read: BTreeMap<String, String> = table
        .rows()
        .iter()
        .map(|row| {
            let text = |i: usize| {
                row.cell(i)
                    .as_text()
                    .map(|t| t.to_string())
                    .unwrap_or_default()
            };
            (text(1), text(2))
        })
        .collect();
    let as_read: BTreeMap<String, String> = titles
        .iter()
        .map(|(code, title)| (code.clone(), title.trim().to_string()))
        .collect();
    assert_eq!(read, as_read, "an upload reader trims, nothing else");
    let stock_xlsx = get(
        fx,
        "host",
        &format!("/api/stock?format=xlsx&fields=inStock&stock_variant.barcode={first_barcode}"),
    )
    .await;
    let table = brandhub_sheet::read(
        &stock_xlsx.body,
        brandhub_sheet::Format::Xlsx,
        &Limits::default(),
    )
    .unwrap();
    assert_eq!(table.rows()[0].cell(1), &brandhub_sheet::Cell::Number(5.0));

    // A host's order: its billing company reaches the company's CSV marked.
    let mut references = BTreeMap::new();
    for (i, start) in FORMULA_STARTS.iter().enumerate() {
        let reference = format!("FX-{run}-{i}");
        let company = format!("{start}cmd|' /C calc'!A0");
        let mut body = common::orders::intake_body(&place, &reference);
        body["billAddress"] = json!({"forename": "Eve", "surname": "Mallory", "company": company});
        // A negative amount (a refunded shipping tax) starts with `-` too, and stays a number.
        body["detail"]["shippingTax"] = json!(-5);
        json_call(fx, "host", reqwest::Method::POST, "/api/order", body, 201).await;
        references.insert(reference, marked(&company));
    }
    let orders = csv_column(
        &get(fx, "company", &format!("/api/order?format=csv&fields=hostOrderRef,billAddress.company&hostOrderRef=FX-{run}-@")).await,
        "hostOrderRef",
        "billAddress.company",
    );
    assert_eq!(orders, references);
    let taxes = csv_column(
        &get(fx, "company", &format!("/api/order?format=csv&fields=hostOrderRef,detail.shippingTax&hostOrderRef=FX-{run}-@")).await,
        "hostOrderRef",
        "detail.shippingTax",
    );
    assert!(
        taxes.values().all(|tax| tax == "-5"),
        "a number column is never marked: {taxes:?}"
    );

    // The product sheet exported as CSV and uploaded again: every title exactly as it was.
    let export = get(
        fx,
        "company",
        &format!("/api/product?format=csv&fk_brand={brand}&code={prefix}@"),
    )
    .await;
    let file = upload(
        fx,
        &format!("product,{brand}"),
        "products.csv",
        &export.body,
    )
    .await;
    assert_eq!(file["status"], "processed", "{file}");
    assert_eq!(file["detail"]["error"], "", "{file}");
    assert_eq!(
        file["detail"]["rowsApplied"].as_u64(),
        Some(titles.len() as u64),
        "{file}"
    );
    let after: BTreeMap<String, String> = all_records(
        fx,
        "admin",
        &format!("/api/product?code={prefix}@&fields=code,title"),
        "product",
    )
    .await
    .iter()
    .map(|p| {
        (
            p["code"].as_str().unwrap().to_string(),
            p["title"].as_str().unwrap().to_string(),
        )
    })
    .collect();
    assert_eq!(after, titles, "the upload kept every title");
}

#[tokio::test]
async fn sqlite_formula_texts_are_neutralised_across_tenants() {
    formula_texts_are_neutralised_across_tenants(Db::Sqlite).await;
}

#[tokio::test]
async fn postgres_formula_texts_are_neutralised_across_tenants() {
    formula_texts_are_neutralised_across_tenants(Db::Postgres).await;
}
