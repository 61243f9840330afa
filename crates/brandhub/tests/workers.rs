//! File processing across real `brandhub serve` processes (docs/API.md, "Files: uploads and processing"): a worker killed with
//! SIGKILL in the middle of a large file (while its apply transaction is open: the test holds
//! the lock it waits for, or watches for it) leaves nothing applied and the file is processed once
//! after a restart, with the same data as a run without the crash; several servers on one
//! PostgreSQL database process each of many files exactly once; uploads kept in an S3 bucket
//! are processed and served from it.

mod common;

use brandhub_filestore::testing::Moto;
use common::process::{Brandhub, Server};
use common::{BOUNDARY, Db, multipart};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::time::{Duration, Instant};

/// Variants per product in the generated product files.
const VARIANTS: usize = 5;

/// A product file (CSV) of `products` products × [`VARIANTS`] variants. `tag` (0..=999) keeps
/// the codes and barcodes of different files apart: codes `W<tag>-…`, barcodes `26<tag>…`.
fn product_csv(tag: u32, products: usize) -> Vec<u8> {
    let mut csv = String::from("Product Code;Title;Barcode;Colour;Size;RRP;Sequence\n");
    for product in 0..products {
        for variant in 0..VARIANTS {
            let n = product * VARIANTS + variant;
            writeln!(
                csv,
                "W{tag:03}-{product:06};Product {product} of file {tag};26{tag:03}{n:08};{};{};{}.5;{}",
                ["Navy", "Sand", "Black"][product % 3],
                ["S", "M", "L", "XL", "XXL"][variant],
                10 + product % 50,
                variant + 1
            )
            .unwrap();
        }
    }
    csv.into_bytes()
}

/// The API as the demo admin, on one server.
struct Api {
    client: reqwest::Client,
    base: String,
    email: String,
    key: String,
}

impl Api {
    fn new(brandhub: &Brandhub, server: &Server, users: &[(String, String, String)]) -> Api {
        let (_, email, key) = users
            .iter()
            .find(|(user_type, _, _)| user_type == "admin")
            .expect("the demo has an admin");
        Api {
            client: brandhub.client(),
            base: server.base.clone(),
            email: email.clone(),
            key: key.clone(),
        }
    }

    /// Sends a request as the admin and reads the answer whole.
    async fn send(&self, request: reqwest::RequestBuilder) -> common::Response {
        let response = request
            .basic_auth(&self.email, Some(&self.key))
            .send()
            .await
            .expect("the server answers");
        common::Response::read(response).await
    }

    async fn get(&self, path: &str) -> Value {
        let response = self
            .send(self.client.get(format!("{}{path}", self.base)))
            .await;
        assert_eq!(
            response.status,
            200,
            "GET {path}: {}",
            String::from_utf8_lossy(&response.body)
        );
        response.json()
    }

    async fn records(&self, path: &str, resource: &str) -> Vec<Value> {
        self.get(path).await["response"][resource]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    async fn count(&self, path: &str) -> u64 {
        self.get(path).await["count"].as_u64().expect("a count")
    }

    /// Uploads a file (`query` such as `?wait=60`); returns the new file's id.
    async fn upload(&self, part: &str, file_name: &str, bytes: &[u8], query: &str) -> String {
        let request = self
            .client
            .post(format!("{}/api/file{query}", self.base))
            .header(
                "content-type",
                format!("multipart/form-data; boundary={BOUNDARY}"),
            )
            .body(multipart(&[(part, Some(file_name), bytes)]));
        let response = self.send(request).await;
        assert_eq!(
            response.status,
            201,
            "upload: {}",
            String::from_utf8_lossy(&response.body)
        );
        response.records("file")[0]["id"]
            .as_str()
            .expect("an id")
            .to_string()
    }

    /// A file's record with its status and counters.
    async fn file(&self, id: &str) -> Value {
        self.records(&format!("/api/file/{id}?fields=status,detail"), "file")
            .await
            .pop()
            .expect("the file exists")
    }

    /// Waits until a file is processed or failed; returns its record.
    async fn finished(&self, id: &str, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let file = self.file(id).await;
            if file["status"] == "processed" || file["status"] == "failed" {
                return file;
            }
            assert!(
                Instant::now() < deadline,
                "file {id} not finished within {within:?}: {file}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The first `n` brand ids, in id order.
    async fn brands(&self, n: usize) -> Vec<String> {
        let brands = self
            .records(
                &format!("/api/brand?fields=id&order_by=id&pageSize={n}"),
                "brand",
            )
            .await;
        assert_eq!(brands.len(), n, "the demo has {n} brands");
        brands
            .iter()
            .map(|b| b["id"].as_str().unwrap().to_string())
            .collect()
    }

    /// Everything a product file wrote for a brand's variants of one file tag, as the API
    /// shows it, minus ids and times (which differ between runs by design).
    async fn variants_written(&self, brand: &str, tag: u32) -> Vec<Value> {
        let mut all = Vec::new();
        for page in 1.. {
            let records = self
                .records(
                    &format!(
                        "/api/variant?variant_product.fk_brand={brand}&barcode=26{tag:03}@\
                         &order_by=barcode&page={page}&pageSize=1000&fields=barcode,code,colour,\
                         size,rrp,sequence,vatable,variant_product.code,variant_product.title,\
                         variant_product.status"
                    ),
                    "variant",
                )
                .await;
            if records.is_empty() {
                break;
            }
            all.extend(records);
        }
        written(all)
    }
}

/// Variants as their values, without ids (which differ between runs by design): a product
/// repeated on a page is rendered once in full and then as `{"__KEY": id}`, so its values are
/// looked up by id.
fn written(variants: Vec<Value>) -> Vec<Value> {
    let mut products = BTreeMap::new();
    variants
        .into_iter()
        .map(|mut variant| {
            let object = variant.as_object_mut().expect("a record");
            object.remove("id");
            let mut product = object.remove("variant_product").expect("the product");
            let product_id = product
                .get("id")
                .or_else(|| product.get("__KEY"))
                .and_then(Value::as_str)
                .expect("a product id")
                .to_string();
            if let Some(full) = product.as_object_mut().filter(|p| p.contains_key("code")) {
                full.remove("id");
                products.insert(product_id.clone(), product.clone());
            }
            object.insert("variant_product".into(), products[&product_id].clone());
            variant
        })
        .collect()
}

/// The ids of the files each server's log says it processed ("file processed file=<id>").
fn processed_by(server: &Server) -> Vec<String> {
    server
        .log()
        .iter()
        .filter(|line| line.contains("file processed"))
        .filter_map(|line| {
            line.split_whitespace()
                .find_map(|word| word.strip_prefix("file="))
                .map(str::to_string)
        })
        .collect()
}

fn detail(file: &Value, name: &str) -> i64 {
    file["detail"][name].as_i64().unwrap_or(-1)
}

/// Products in the crash test's file: 30,000 rows, enough that applying takes a while.
const CRASH_PRODUCTS: usize = 6_000;

/// Holds the lock the worker's apply transaction waits for, so that the test knows the worker is
/// in the middle of the file (PostgreSQL); or watches for that transaction (SQLite).
enum Applying {
    /// A transaction holding the brand's row lock (`FOR NO KEY UPDATE`, as the worker takes
    /// it after marking the job done, inside its apply transaction).
    Postgres(sqlx::PgConnection),
    /// SQLite's writers hold the database's one write lock for the whole transaction.
    Sqlite(String),
}

impl Applying {
    /// Before the upload: on PostgreSQL, take the brand's lock.
    async fn prepare(url: &str, brand: &str) -> Applying {
        use sqlx::Connection;
        if url.starts_with("sqlite:") {
            return Applying::Sqlite(url.to_string());
        }
        let mut conn = sqlx::PgConnection::connect(url).await.expect("PostgreSQL");
        sqlx::raw_sql("BEGIN").execute(&mut conn).await.unwrap();
        let locked = sqlx::query("SELECT id FROM brand WHERE id = $1 FOR NO KEY UPDATE")
            .bind(brand)
            .fetch_all(&mut conn)
            .await
            .unwrap();
        assert_eq!(locked.len(), 1, "the brand exists");
        Applying::Postgres(conn)
    }

    /// Waits until the worker is inside the transaction that applies the file. PostgreSQL: a
    /// session waits for the brand's lock. SQLite (once the file's rows were read): the write
    /// lock is held by someone else on several probes in a row (a heartbeat holds it for a
    /// moment; the apply transaction of a large file for seconds).
    async fn wait(&mut self) {
        use sqlx::Connection;
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut held = 0;
        loop {
            let applying = match self {
                Applying::Postgres(conn) => {
                    // A session blocked by this one, which holds nothing but the brand's lock
                    // (told by PostgreSQL, not by the text of the waiting statement, which
                    // pg_stat_activity cuts short).
                    let waiting: i64 = sqlx::query_scalar(
                        "SELECT count(*) FROM pg_stat_activity \
                         WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))",
                    )
                    .fetch_one(&mut *conn)
                    .await
                    .unwrap();
                    waiting == 1
                }
                Applying::Sqlite(url) => {
                    use std::str::FromStr;
                    let options = sqlx::sqlite::SqliteConnectOptions::from_str(url)
                        .unwrap()
                        .busy_timeout(Duration::ZERO);
                    let mut probe = sqlx::SqliteConnection::connect_with(&options)
                        .await
                        .unwrap();
                    let busy = match sqlx::raw_sql("BEGIN IMMEDIATE").execute(&mut probe).await {
                        Ok(_) => {
                            sqlx::raw_sql("ROLLBACK").execute(&mut probe).await.unwrap();
                            false
                        }
                        Err(error) => {
                            assert!(error.to_string().contains("locked"), "{error}");
                            true
                        }
                    };
                    probe.close().await.ok();
                    held = if busy { held + 1 } else { 0 };
                    held >= 5
                }
            };
            if applying {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the worker never started applying the file"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// After the kill: lets go of the brand.
    async fn release(self) {
        if let Applying::Postgres(mut conn) = self {
            sqlx::raw_sql("ROLLBACK").execute(&mut conn).await.unwrap();
        }
    }
}

async fn a_worker_killed_mid_file_leaves_nothing_and_the_file_is_processed_once(db: Db) {
    let (url, dir) = common::fresh_database(db, "crash").await;
    let brandhub = Brandhub::on(dir.path(), &url);
    let users = brandhub.demo(100);
    let server = brandhub.serve(&["--workers", "1", "--job-timeout", "2"]);
    let api = Api::new(&brandhub, &server, &users);
    let brands = api.brands(2).await;
    let sheet = product_csv(1, CRASH_PRODUCTS);
    let rows = (CRASH_PRODUCTS * VARIANTS) as i64;
    let mut applying = Applying::prepare(&url, &brands[0]).await;
    let id = api
        .upload(&format!("product,{}", brands[0]), "big.csv", &sheet, "")
        .await;

    // Kill the worker's process once the file is read and being applied.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let file = api.file(&id).await;
        assert_ne!(file["status"], "processed", "the file was applied: {file}");
        if file["status"] == "processing" && detail(&file, "rowsRead") == rows {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the file is not being processed: {file}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    applying.wait().await;
    server.kill();
    applying.release().await;

    // Nothing of the file is there: a server without workers shows it unfinished and none of
    // its products or variants.
    let looker = brandhub.serve(&["--workers", "0"]);
    let api = Api::new(&brandhub, &looker, &users);
    let file = api.file(&id).await;
    assert_eq!(
        file["status"], "processing",
        "the file committed before the kill: {file}"
    );
    assert_eq!(api.count("/api/product/count?code=W001-@").await, 0);
    assert_eq!(api.count("/api/variant/count?barcode=26001@").await, 0);
    drop(looker);

    // After a restart the file is taken up again (its heartbeat is old) and applied once.
    let restarted = brandhub.serve_logging("info", &["--workers", "1", "--job-timeout", "2"]);
    let api = Api::new(&brandhub, &restarted, &users);
    let file = api.finished(&id, Duration::from_secs(180)).await;
    assert_eq!(file["status"], "processed", "{file}");
    assert_eq!(detail(&file, "rowsApplied"), rows, "{file}");
    assert_eq!(detail(&file, "rowsSkipped"), 0, "{file}");
    assert_eq!(file["detail"]["error"], "", "{file}");

    // A clean run of the same file for the second brand writes exactly the same data.
    let clean = api
        .upload(
            &format!("product,{}", brands[1]),
            "big.csv",
            &sheet,
            "?wait=60",
        )
        .await;
    let clean = api.finished(&clean, Duration::from_secs(180)).await;
    assert_eq!(clean["status"], "processed", "{clean}");
    let crashed = api.variants_written(&brands[0], 1).await;
    assert_eq!(
        crashed.len(),
        rows as usize,
        "no variant is missing or doubled"
    );
    let clean = api.variants_written(&brands[1], 1).await;
    assert_eq!(
        clean.len(),
        crashed.len(),
        "the clean run wrote as many variants"
    );
    if let Some(n) = (0..crashed.len()).find(|&n| crashed[n] != clean[n]) {
        panic!(
            "variant {n} differs: after the crash {}, in a clean run {}",
            crashed[n], clean[n]
        );
    }
    for brand in &brands {
        assert_eq!(
            api.count(&format!("/api/product/count?fk_brand={brand}&code=W001-@"))
                .await,
            CRASH_PRODUCTS as u64
        );
    }
    let processed = processed_by(&restarted);
    assert_eq!(
        processed.iter().filter(|f| **f == id).count(),
        1,
        "the restarted server processed the file once: {processed:?}"
    );
}

#[tokio::test]
async fn sqlite_a_worker_killed_mid_file_leaves_nothing_and_the_file_is_processed_once() {
    a_worker_killed_mid_file_leaves_nothing_and_the_file_is_processed_once(Db::Sqlite).await;
}

#[tokio::test]
async fn postgres_a_worker_killed_mid_file_leaves_nothing_and_the_file_is_processed_once() {
    if common::postgres_or_skip().is_none() {
        return;
    }
    a_worker_killed_mid_file_leaves_nothing_and_the_file_is_processed_once(Db::Postgres).await;
}

/// Files uploaded in the exactly-once test, over [`SHARED_BRANDS`] brands.
const MANY_FILES: u32 = 16;
const SHARED_BRANDS: usize = 4;
const MANY_PRODUCTS: usize = 300;

#[tokio::test]
async fn postgres_several_servers_process_each_file_exactly_once() {
    if common::postgres_or_skip().is_none() {
        return;
    }
    let (url, dir) = common::fresh_database(Db::Postgres, "many").await;
    let brandhub = Brandhub::on(dir.path(), &url);
    let users = brandhub.demo(200);
    // One server takes the uploads and processes nothing; three others (two workers each)
    // share the queue. A short job timeout makes them try to take over each other's files.
    let front = brandhub.serve(&["--workers", "0"]);
    let servers: Vec<Server> = (0..3)
        .map(|_| {
            brandhub.serve_logging(
                "info",
                &[
                    "--workers",
                    "2",
                    "--job-timeout",
                    "3",
                    "--page-cache-mb",
                    "0",
                ],
            )
        })
        .collect();
    let api = Api::new(&brandhub, &front, &users);
    let brands = api.brands(SHARED_BRANDS).await;

    let mut files = BTreeMap::new();
    for tag in 0..MANY_FILES {
        let brand = &brands[tag as usize % SHARED_BRANDS];
        let id = api
            .upload(
                &format!("product,{brand}"),
                &format!("file-{tag}.csv"),
                &product_csv(tag, MANY_PRODUCTS),
                "",
            )
            .await;
        files.insert(id, (tag, brand.clone()));
    }
    for id in files.keys() {
        let file = api.finished(id, Duration::from_secs(300)).await;
        assert_eq!(
            file["status"],
            "processed",
            "{file}\nthe servers' warnings, and their lines about the file:\n{}",
            servers
                .iter()
                .flat_map(|server| server.log())
                .filter(|line| !line.contains(" INFO ") || line.contains(id.as_str()))
                .collect::<Vec<_>>()
                .join("\n")
        );
        assert_eq!(
            detail(&file, "rowsApplied"),
            (MANY_PRODUCTS * VARIANTS) as i64,
            "{file}"
        );
    }

    // Each file was processed by exactly one worker of one server, and the work was shared.
    let mut processing = BTreeMap::<String, Vec<u32>>::new();
    for server in &servers {
        for file in processed_by(server) {
            processing.entry(file).or_default().push(server.pid());
        }
    }
    let ids: BTreeSet<&String> = files.keys().collect();
    assert_eq!(
        processing.keys().collect::<BTreeSet<_>>(),
        ids,
        "every file, and nothing else, was processed"
    );
    for (file, by) in &processing {
        assert_eq!(by.len(), 1, "file {file} was processed by {by:?}");
    }
    let busy: BTreeSet<u32> = processing.values().flatten().copied().collect();
    assert!(busy.len() >= 2, "only one server processed files: {busy:?}");

    // And the data holds each row once.
    for (tag, brand) in files.values() {
        assert_eq!(
            api.count(&format!(
                "/api/variant/count?variant_product.fk_brand={brand}&barcode=26{tag:03}@"
            ))
            .await,
            (MANY_PRODUCTS * VARIANTS) as u64
        );
        assert_eq!(
            api.count(&format!("/api/product/count?code=W{tag:03}-@"))
                .await,
            MANY_PRODUCTS as u64
        );
    }
}

#[tokio::test]
async fn uploads_kept_in_an_s3_bucket_are_processed_and_served_from_it() {
    let Some(moto) = Moto::start("uploads_kept_in_an_s3_bucket_are_processed_and_served_from_it")
    else {
        return;
    };
    moto.create_bucket("brandhub-uploads");
    let dir = tempfile::tempdir().unwrap();
    let mut brandhub = Brandhub::new(dir.path());
    brandhub.env = moto
        .settings()
        .into_iter()
        .map(|(name, value)| (name.to_string(), value))
        .collect();
    let users = brandhub.demo(50);
    let server = brandhub.serve(&["--file-store", "s3://brandhub-uploads/files"]);
    let api = Api::new(&brandhub, &server, &users);
    let brand = api.brands(1).await.remove(0);
    let sheet = product_csv(7, 4);
    let id = api
        .upload(&format!("product,{brand}"), "s3.csv", &sheet, "?wait=60")
        .await;
    let file = api.finished(&id, Duration::from_secs(60)).await;
    assert_eq!(file["status"], "processed", "{file}");
    assert_eq!(detail(&file, "rowsApplied"), 20);
    assert_eq!(api.count("/api/variant/count?barcode=26007@").await, 20);

    // The bytes are in the bucket, under the prefix, and nowhere on the local disk.
    assert_eq!(moto.keys("brandhub-uploads"), [format!("files/{id}")]);
    assert!(!dir.path().join("files").exists(), "no local copy");
    let content = api
        .send(
            api.client
                .get(format!("{}/api/file/{id}/content", api.base)),
        )
        .await;
    assert_eq!(content.status, 200);
    assert_eq!(content.header("content-type").as_deref(), Some("text/csv"));
    assert_eq!(content.body, sheet);
}

#[tokio::test]
async fn the_sheet_limits_are_set_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let brandhub = Brandhub::new(dir.path());
    let users = brandhub.demo(50);
    let server = brandhub.serve(&["--max-rows", "9"]);
    let api = Api::new(&brandhub, &server, &users);
    let brand = api.brands(1).await.remove(0);
    let part = format!("product,{brand}");

    // 10 rows: one more than allowed.
    let id = api
        .upload(&part, "rows.csv", &product_csv(8, 2), "?wait=60")
        .await;
    let file = api.finished(&id, Duration::from_secs(60)).await;
    assert_eq!(file["status"], "failed", "{file}");
    assert_eq!(
        file["detail"]["error"],
        "The sheet has more than 9 data rows."
    );

    drop(server);

    // A small file passes a size limit that a workbook expanding past it does not.
    let server = brandhub.serve(&["--max-sheet-size", "4KiB"]);
    let api = Api::new(&brandhub, &server, &users);
    let id = api
        .upload(&part, "small.csv", &product_csv(9, 1), "?wait=60")
        .await;
    let file = api.finished(&id, Duration::from_secs(60)).await;
    assert_eq!(file["status"], "processed", "{file}");
    let mut workbook = rust_xlsxwriter::Workbook::new();
    let sheet = workbook.add_worksheet();
    sheet
        .write_row(0, 0, ["Product Code", "Title", "Barcode", "Description"])
        .unwrap();
    for row in 1..=5 {
        sheet.write_string(row, 0, format!("W010-{row}")).unwrap();
        sheet.write_string(row, 1, "Wide").unwrap();
        sheet
            .write_string(row, 2, format!("260100000000{row}"))
            .unwrap();
        sheet.write_string(row, 3, "x".repeat(2000)).unwrap();
    }
    let bytes = workbook.save_to_buffer().unwrap();
    let id = api.upload(&part, "wide.xlsx", &bytes, "?wait=60").await;
    let file = api.finished(&id, Duration::from_secs(60)).await;
    assert_eq!(file["status"], "failed", "{file}");
    assert!(
        file["detail"]["error"]
            .as_str()
            .unwrap()
            .contains("more than 4 KiB"),
        "{file}"
    );
    assert_eq!(api.count("/api/variant/count?barcode=26008@").await, 0);
    assert_eq!(api.count("/api/variant/count?barcode=26010@").await, 0);
}
