//! Operations (docs/API.md, "Operations: health, metrics, logs") over the real server on both backends: health and readiness
//! (failing while migrations are missing or the database is unreachable), Prometheus metrics
//! after known requests, and the log lines of the `brandhub` binary itself (text without
//! colour codes when redirected, JSON lines, request and file ids).

mod common;

use common::process::{Brandhub, Server};
use common::{BOUNDARY, Db, Fixture, multipart};
use serde_json::Value;

/// An unauthenticated GET over HTTPS: status, content type, body.
async fn anonymous(fx: &Fixture, path: &str) -> (u16, String, String) {
    let response = fx
        .client()
        .get(format!("{}{path}", fx.base))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    (status, content_type, response.text().await.unwrap())
}

on_both_backends! { "operations";

async fn health_and_readiness_answer_without_a_key_in_plain_text(fx) {
    assert_eq!(anonymous(fx, "/healthz").await, (200, "text/plain; charset=utf-8".into(), "ok\n".into()));
    assert_eq!(anonymous(fx, "/readyz").await, (200, "text/plain; charset=utf-8".into(), "ready\n".into()));
    // The metrics listener answers them too, for probes that reach the process there.
    for (path, body) in [("/healthz", "ok\n"), ("/readyz", "ready\n")] {
        let response = common::plain_client().get(format!("{}{path}", fx.metrics_base)).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.text().await.unwrap(), body);
    }
    // /metrics is not on the API listener.
    let (status, _, _) = anonymous(fx, "/metrics").await;
    assert_eq!(status, 404);
}

async fn every_https_answer_carries_strict_transport_security(fx) {
    let admin = fx.credential("admin");
    let api = fx.get("/api/brand?pageSize=1").await;
    assert_eq!(api.status, 200);
    let portal = fx.client().get(format!("{}/", fx.base)).send().await.unwrap();
    assert_eq!(portal.status(), 200);
    let unknown = fx.get("/api/brand?nope=1").await;
    assert_eq!(unknown.status, 400);
    let no_key = fx.client().get(format!("{}/api/brand", fx.base)).send().await.unwrap();
    assert_eq!(no_key.status(), 401);
    let wrong_key = fx.client().get(format!("{}/api/brand", fx.base))
        .basic_auth(&admin.email, Some("bhk_wrong")).send().await.unwrap();
    assert_eq!(wrong_key.status(), 401);
    let health = fx.client().get(format!("{}/healthz", fx.base)).send().await.unwrap();
    let headers = [
        api.headers.clone(), portal.headers().clone(), unknown.headers.clone(),
        no_key.headers().clone(), wrong_key.headers().clone(), health.headers().clone(),
    ];
    for headers in headers {
        assert_eq!(
            headers.get("strict-transport-security").and_then(|v| v.to_str().ok()),
            Some("max-age=31536000"),
            "{headers:?}"
        );
    }
}

async fn behind_a_proxy_answers_over_https_carry_strict_transport_security(fx) {
    let store = fx.store.clone();
    let uploads = fx.side_uploads();
    let (address, _running) = fx
        .on_server(async move {
            let settings = brandhub_server::Settings::new("127.0.0.1:0".parse().unwrap(), None, uploads);
            let running = brandhub_server::start(settings, store).await.expect("a plain server starts");
            (running.address, running)
        })
        .await;
    let admin = fx.credential("admin");
    let client = common::plain_client();
    let hsts = |response: &reqwest::Response| {
        response.headers().get("strict-transport-security").map(|v| v.to_str().unwrap().to_string())
    };
    // What the proxy received over HTTPS: the API, the portal, an error.
    for (path, status) in [("/api/host?pageSize=1", 200), ("/", 200), ("/api/host?nope=1", 400)] {
        let forwarded = client.get(format!("http://{address}{path}")).basic_auth(&admin.email, Some(&admin.secret))
            .header("x-forwarded-proto", "https").send().await.unwrap();
        assert_eq!(forwarded.status(), status, "{path}");
        assert_eq!(hsts(&forwarded).as_deref(), Some("max-age=31536000"), "{path}");
    }
    // Plain HTTP (refused, or a probe): browsers ignore the header there, none is sent.
    let plain = client.get(format!("http://{address}/api/host")).basic_auth(&admin.email, Some(&admin.secret)).send().await.unwrap();
    assert_eq!(plain.status(), 403);
    assert_eq!(hsts(&plain), None);
    let probe = client.get(format!("http://{address}/healthz")).send().await.unwrap();
    assert_eq!(probe.status(), 200);
    assert_eq!(hsts(&probe), None);
}

}

/// A server of its own (so that its figures are exactly this test's requests): requests by
/// route template, caches, pool, queue, files and memory; then readiness fails without a
/// table and with the database gone.
async fn metrics_count_what_happened_and_readiness_follows_the_database(db: Db) {
    if db == Db::Postgres && common::postgres_or_skip().is_none() {
        return;
    }
    let fx = &common::start_fixture(db, "ops_metrics", 100);
    let brand = fx
        .get("/api/brand?pageSize=1&fields=id")
        .await
        .ids("brand")
        .remove(0);
    for _ in 0..2 {
        assert_eq!(fx.get("/api/brand?pageSize=1&fields=id").await.status, 200);
    }
    let missing = "0123456789ABCDEF0123456789ABCDEF";
    assert_eq!(fx.get(&format!("/api/brand/{missing}")).await.status, 404);
    assert_eq!(fx.get("/no/such/path").await.status, 404);
    assert_eq!(
        fx.post("/api/brand/count", &serde_json::json!({}))
            .await
            .status,
        200
    );
    assert_eq!(anonymous(fx, "/healthz").await.0, 200);
    let csv = "Product Code;Title;Barcode\nOPS-1;Metrics Shirt;2999000000011\n";
    let admin = fx.credential("admin");
    let upload = fx
        .client()
        .post(format!("{}/api/file?wait=60", fx.base))
        .basic_auth(&admin.email, Some(&admin.secret))
        .header(
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .body(multipart(&[(
            &format!("product,{brand}"),
            Some("ops.csv"),
            csv.as_bytes(),
        )]))
        .send()
        .await
        .unwrap();
    let upload = common::Response::read(upload).await;
    assert_eq!(
        upload.status,
        201,
        "{}",
        String::from_utf8_lossy(&upload.body)
    );
    assert_eq!(upload.records("file")[0]["status"], "processed");

    let text = common::scrape_metrics(fx).await;
    let requests = |route: &str, method: &str, status: &str| {
        common::metric_sample(
            &text,
            "brandhub_http_requests_total",
            &[("method", method), ("route", route), ("status", status)],
        )
    };
    assert_eq!(
        requests("/api/{resource}", "GET", "200"),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        requests("/api/{resource}/{id}", "GET", "404"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(requests("unmatched", "GET", "404"), Some(1.0), "{text}");
    assert_eq!(
        requests("/api/{resource}/count", "POST", "200"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(requests("/healthz", "GET", "200"), Some(1.0), "{text}");
    assert_eq!(
        requests("/api/{resource}", "POST", "201"),
        Some(1.0),
        "{text}"
    );
    // A latency histogram per route, method and status, counting the same requests.
    assert_eq!(
        common::metric_sample(
            &text,
            "brandhub_http_request_duration_seconds_count",
            &[
                ("method", "GET"),
                ("route", "/api/{resource}"),
                ("status", "200")
            ]
        ),
        Some(3.0)
    );
    assert_eq!(
        common::metric_sample(
            &text,
            "brandhub_http_request_duration_seconds_bucket",
            &[
                ("le", "+Inf"),
                ("method", "GET"),
                ("route", "/api/{resource}"),
                ("status", "200")
            ]
        ),
        Some(3.0)
    );
    // Never a raw path: neither the brand's id nor the unknown path is a label.
    assert!(
        !text.contains(missing) && !text.contains("/no/such/path") && !text.contains(&brand),
        "{text}"
    );
    // The same page asked three times: one miss, then hits.
    assert!(
        common::metric_sample(&text, "brandhub_cache_hits_total", &[("cache", "page")]).unwrap()
            >= 2.0,
        "{text}"
    );
    assert!(
        common::metric_sample(&text, "brandhub_cache_misses_total", &[("cache", "page")]).unwrap()
            >= 1.0,
        "{text}"
    );
    assert!(
        common::metric_sample(&text, "brandhub_cache_misses_total", &[("cache", "count")])
            .is_some(),
        "{text}"
    );
    assert_eq!(
        common::metric_sample(&text, "brandhub_db_pool_max_connections", &[]),
        Some(8.0)
    );
    let open = common::metric_sample(
        &text,
        "brandhub_db_pool_connections",
        &[("state", "in_use")],
    )
    .unwrap()
        + common::metric_sample(&text, "brandhub_db_pool_connections", &[("state", "idle")])
            .unwrap();
    assert!((1.0..=8.0).contains(&open), "{text}");
    assert_eq!(
        common::metric_sample(&text, "brandhub_job_queue_depth", &[("state", "pending")]),
        Some(0.0)
    );
    assert_eq!(
        common::metric_sample(&text, "brandhub_job_queue_depth", &[("state", "running")]),
        Some(0.0)
    );
    assert_eq!(
        common::metric_sample(&text, "brandhub_files_total", &[("outcome", "processed")]),
        Some(1.0)
    );
    assert_eq!(
        common::metric_sample(&text, "brandhub_files_total", &[("outcome", "failed")]),
        Some(0.0)
    );
    let memory = common::metric_sample(&text, "process_resident_memory_bytes", &[])
        .expect("Linux reports memory");
    assert!(memory > 1e6, "{memory}");
    assert!(
        common::metric_sample(&text, "brandhub_process_peak_resident_memory_bytes", &[]).unwrap()
            >= memory
    );
    let pages = common::metric_sample(&text, "brandhub_page_cache_bytes", &[])
        .expect("the page cache's size");
    assert!((0.0..memory).contains(&pages), "{pages}");

    // Readiness names what migrations would create.
    execute(&fx.database_url, "DROP TABLE bh_meta").await;
    let (status, _, body) = anonymous(fx, "/readyz").await;
    assert_eq!(
        (status, body.as_str()),
        (
            503,
            "not ready: migrations are not applied; missing: table bh_meta\n"
        )
    );
    assert_eq!(
        anonymous(fx, "/healthz").await.0,
        200,
        "the process itself is fine"
    );
    // And fails while the database cannot be reached.
    fx.store.close().await;
    let (status, _, body) = anonymous(fx, "/readyz").await;
    assert_eq!(status, 503, "{body}");
    assert!(
        body.starts_with("not ready: the database does not answer"),
        "{body}"
    );
    assert_eq!(anonymous(fx, "/healthz").await.0, 200);
}

/// Runs one statement on a database, beside the server.
async fn execute(url: &str, sql: &'static str) {
    use sqlx::Connection;
    if url.starts_with("sqlite:") {
        let mut conn = sqlx::SqliteConnection::connect(url).await.unwrap();
        sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
    } else {
        let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
        sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
    }
}

#[tokio::test]
async fn sqlite_metrics_count_what_happened_and_readiness_follows_the_database() {
    metrics_count_what_happened_and_readiness_follows_the_database(Db::Sqlite).await;
}

#[tokio::test]
async fn postgres_metrics_count_what_happened_and_readiness_follows_the_database() {
    metrics_count_what_happened_and_readiness_follows_the_database(Db::Postgres).await;
}

/// The brandhub binary's server: an HTTPS request as the demo admin with a request id.
async fn request_with_id(
    brandhub: &Brandhub,
    server: &Server,
    users: &[(String, String, String)],
    path: &str,
    id: &str,
) -> u16 {
    let (_, email, key) = users.iter().find(|(t, _, _)| t == "admin").unwrap();
    brandhub
        .client()
        .get(format!("{}{path}", server.base))
        .basic_auth(email, Some(key))
        .header("x-request-id", id)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Uploads a one-row product file as the demo admin and waits for it; returns its id.
async fn upload_one_product(
    brandhub: &Brandhub,
    server: &Server,
    users: &[(String, String, String)],
    request_id: &str,
) -> String {
    let (_, email, key) = users.iter().find(|(t, _, _)| t == "admin").unwrap();
    let client = brandhub.client();
    let brands: Value = client
        .get(format!("{}/api/brand?pageSize=1&fields=id", server.base))
        .basic_auth(email, Some(key))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let brand = brands["response"]["brand"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let csv = "Product Code;Title;Barcode\nLOG-1;Log Shirt;2999000000028\n";
    let response = client
        .post(format!("{}/api/file?wait=60", server.base))
        .basic_auth(email, Some(key))
        .header("x-request-id", request_id)
        .header(
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .body(multipart(&[(
            &format!("product,{brand}"),
            Some("log.csv"),
            csv.as_bytes(),
        )]))
        .send()
        .await
        .unwrap();
    let response = common::Response::read(response).await;
    assert_eq!(
        response.status,
        201,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    let file = &response.records("file")[0];
    assert_eq!(file["status"], "processed", "{file}");
    file["id"].as_str().unwrap().to_string()
}

/// The names of the spans a JSON log line was written in, with their fields.
fn spans(line: &Value) -> Vec<&Value> {
    line["spans"]
        .as_array()
        .map(|s| s.iter().collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn json_logs_are_one_object_a_line_with_request_and_file_ids() {
    let dir = tempfile::tempdir().unwrap();
    let brandhub = Brandhub::new(dir.path());
    let users = brandhub.demo(50);
    let server = brandhub.serve_logging("info", &["--log-format", "json", "--workers", "1"]);
    assert_eq!(
        request_with_id(
            &brandhub,
            &server,
            &users,
            "/api/brand?pageSize=1",
            "ops-json-1"
        )
        .await,
        200
    );
    assert_eq!(
        request_with_id(
            &brandhub,
            &server,
            &users,
            "/api/brand?nope=1",
            "ops-json-2"
        )
        .await,
        400
    );
    let file = upload_one_product(&brandhub, &server, &users, "ops-json-upload").await;
    let log =
        server.log_until(|line| line.contains("ops-json-upload") && line.contains("answered"));
    let lines: Vec<Value> = log
        .iter()
        .map(|line| {
            assert!(!line.contains('\x1b'), "no escape codes: {line:?}");
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"))
        })
        .collect();
    for line in &lines {
        assert!(
            line["timestamp"].is_string()
                && line["level"].is_string()
                && line["message"].is_string(),
            "{line}"
        );
    }
    // One line per request, in the request's span with its id.
    for (id, status) in [
        ("ops-json-1", 200),
        ("ops-json-2", 400),
        ("ops-json-upload", 201),
    ] {
        let answered: Vec<&Value> = lines
            .iter()
            .filter(|l| l["message"] == "answered" && l["span"]["id"] == id)
            .collect();
        assert_eq!(answered.len(), 1, "{id}: {log:?}");
        assert_eq!(answered[0]["span"]["name"], "request");
        assert_eq!(answered[0]["status"], status);
    }
    // Every line written while a request was handled carries its id.
    for line in &lines {
        for span in spans(line) {
            if span["name"] == "request" {
                assert!(
                    span["id"].as_str().is_some_and(|id| !id.is_empty()),
                    "{line}"
                );
            }
        }
    }
    // The worker's lines carry the file's id.
    let worked: Vec<&Value> = lines
        .iter()
        .filter(|l| {
            spans(l)
                .iter()
                .any(|s| s["name"] == "file" && s["file"] == file.as_str())
        })
        .collect();
    assert!(
        worked.iter().any(|l| l["message"] == "file processed"),
        "no 'file processed' line in the file's span: {log:?}"
    );
}

#[tokio::test]
async fn text_logs_written_to_a_pipe_have_no_colour_codes_and_name_the_request() {
    let dir = tempfile::tempdir().unwrap();
    let brandhub = Brandhub::new(dir.path());
    let users = brandhub.demo(50);
    let server = brandhub.serve_logging(
        "info",
        &["--workers", "1", "--metrics-listen", "127.0.0.1:0"],
    );
    assert_eq!(
        request_with_id(
            &brandhub,
            &server,
            &users,
            "/api/brand?pageSize=1",
            "ops-text-1"
        )
        .await,
        200
    );
    let file = upload_one_product(&brandhub, &server, &users, "ops-text-upload").await;
    let log =
        server.log_until(|line| line.contains("ops-text-upload") && line.contains("answered"));
    for line in &log {
        assert!(
            !line.contains('\x1b'),
            "no escape codes when stderr is not a terminal: {line:?}"
        );
    }
    let answered = log
        .iter()
        .find(|l| l.contains("answered") && l.contains("request{id=ops-text-1}"))
        .unwrap_or_else(|| panic!("{log:?}"));
    assert!(answered.contains("status=200"), "{answered}");
    assert!(
        log.iter()
            .any(|l| l.contains(&format!("file{{file={file}")) && l.contains("file processed")),
        "the worker's line names the file: {log:?}"
    );
    // The printed metrics address serves the metrics of this process.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let address = loop {
        if let Some(line) = server
            .printed()
            .iter()
            .find_map(|l| l.strip_prefix("metrics at ").map(str::to_string))
        {
            break line;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no metrics address printed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let text = common::plain_client()
        .get(address)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(
        common::metric_sample(&text, "brandhub_files_total", &[("outcome", "processed")]),
        Some(1.0),
        "{text}"
    );
}

/// The store of an outage fixture waits this long for the database: a request during the
/// outage is answered within seconds, not after the default half minute.
const OUTAGE_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Well above [`OUTAGE_WAIT`], well below "minutes".
const ANSWERED_WITHIN: std::time::Duration = std::time::Duration::from_secs(20);

fn impatient_store(options: &mut brandhub_store::StoreOptions) {
    options.database_wait = OUTAGE_WAIT;
}

/// A request as the demo admin, timed: it must be answered within [`ANSWERED_WITHIN`].
async fn timed(
    fx: &Fixture,
    method: reqwest::Method,
    path: &str,
    body: Option<&serde_json::Value>,
) -> common::Response {
    let started = std::time::Instant::now();
    let response = common::send(
        fx,
        &fx.base,
        method,
        path,
        common::As::Demo("admin"),
        &[],
        body,
    )
    .await;
    assert!(
        started.elapsed() < ANSWERED_WITHIN,
        "{path} took {:?}",
        started.elapsed()
    );
    response
}

/// A company of its own to write (a unique code).
fn new_company() -> serde_json::Value {
    let code = format!("OUT-{}", common::unique_number());
    serde_json::json!({"name": code, "code": code})
}

/// 503 `unavailable` with `Retry-After` in whole seconds.
fn assert_unavailable(response: &common::Response) {
    response.assert_problem(503, "unavailable");
    let retry: u64 = response
        .header("retry-after")
        .expect("Retry-After on 503")
        .parse()
        .expect("whole seconds");
    assert!((1..=60).contains(&retry), "{retry}");
    assert!(response.header("x-request-id").is_some());
}

/// Waits (a bounded while) until a read as the admin is answered 200 again.
async fn recovers(fx: &Fixture) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let response = fx.get("/api/brand?pageSize=1").await;
        if response.status == 200 {
            return;
        }
        assert_eq!(
            response.status,
            503,
            "{}",
            String::from_utf8_lossy(&response.body)
        );
        assert!(
            std::time::Instant::now() < deadline,
            "no recovery within a minute"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// PostgreSQL stops taking connections to the server's database and ends the ones it has (as
/// a restart would, without touching the shared server): every request meanwhile is 503
/// `unavailable` with `Retry-After`, never a 500, and readiness fails; once it takes them
/// again, the server recovers by itself.
#[tokio::test]
async fn postgres_requests_while_the_database_is_cut_off_are_503_and_it_recovers() {
    use sqlx::Connection;
    let Some(admin_url) = common::postgres_or_skip() else {
        return;
    };
    let fx =
        &common::start_fixture_with_store(Db::Postgres, "ops_outage", 50, impatient_store, |_| {});
    assert_eq!(fx.get("/api/brand?pageSize=1").await.status, 200);
    let database = fx
        .database_url
        .rsplit('/')
        .next()
        .and_then(|rest| rest.split('?').next())
        .unwrap()
        .to_string();
    let mut admin = sqlx::PgConnection::connect(&admin_url).await.unwrap();
    let allow =
        |allowed: bool| format!("ALTER DATABASE \"{database}\" ALLOW_CONNECTIONS {allowed}");
    sqlx::raw_sql(sqlx::AssertSqlSafe(allow(false)))
        .execute(&mut admin)
        .await
        .unwrap();
    sqlx::query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1")
        .bind(&database)
        .execute(&mut admin)
        .await
        .unwrap();

    // The pooled connections are dead and new ones are refused: reads, counts and writes.
    for _ in 0..2 {
        assert_unavailable(&timed(fx, reqwest::Method::GET, "/api/brand?pageSize=1", None).await);
        assert_unavailable(&timed(fx, reqwest::Method::GET, "/api/company/count", None).await);
        assert_unavailable(
            &timed(
                fx,
                reqwest::Method::POST,
                "/api/company",
                Some(&new_company()),
            )
            .await,
        );
    }
    let (status, _, body) = anonymous(fx, "/readyz").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(
        anonymous(fx, "/healthz").await.0,
        200,
        "the process itself serves"
    );

    sqlx::raw_sql(sqlx::AssertSqlSafe(allow(true)))
        .execute(&mut admin)
        .await
        .unwrap();
    admin.close().await.ok();
    recovers(fx).await;
    assert_eq!(anonymous(fx, "/readyz").await.0, 200);
    let written = timed(
        fx,
        reqwest::Method::POST,
        "/api/company",
        Some(&new_company()),
    )
    .await;
    assert_eq!(
        written.status,
        201,
        "{}",
        String::from_utf8_lossy(&written.body)
    );
}

/// SQLite's equivalent: another process holds the database's write lock past the busy
/// timeout. Writes meanwhile are 503 `unavailable` with `Retry-After`, never a 500 (reads go
/// on: in WAL mode a writer does not block them); once the lock is released, writes succeed
/// again.
#[tokio::test]
async fn sqlite_writes_while_another_process_holds_the_lock_are_503_and_it_recovers() {
    use sqlx::Connection;
    let fx =
        &common::start_fixture_with_store(Db::Sqlite, "ops_outage", 50, impatient_store, |_| {});
    let first = timed(
        fx,
        reqwest::Method::POST,
        "/api/company",
        Some(&new_company()),
    )
    .await;
    assert_eq!(
        first.status,
        201,
        "{}",
        String::from_utf8_lossy(&first.body)
    );

    let mut holder = sqlx::SqliteConnection::connect(&fx.database_url)
        .await
        .unwrap();
    sqlx::raw_sql("BEGIN IMMEDIATE")
        .execute(&mut holder)
        .await
        .unwrap();
    for _ in 0..2 {
        assert_unavailable(
            &timed(
                fx,
                reqwest::Method::POST,
                "/api/company",
                Some(&new_company()),
            )
            .await,
        );
    }
    assert_eq!(
        timed(fx, reqwest::Method::GET, "/api/company?pageSize=1", None)
            .await
            .status,
        200
    );

    sqlx::raw_sql("ROLLBACK")
        .execute(&mut holder)
        .await
        .unwrap();
    holder.close().await.unwrap();
    let written = timed(
        fx,
        reqwest::Method::POST,
        "/api/company",
        Some(&new_company()),
    )
    .await;
    assert_eq!(
        written.status,
        201,
        "{}",
        String::from_utf8_lossy(&written.body)
    );
    recovers(fx).await;
}

/// The request log never holds a credential: an invitation's token in its path, nor a key,
/// secret, token or password in a query string.
#[tokio::test]
async fn the_request_log_holds_no_invitation_token_or_secret_parameter() {
    let dir = tempfile::tempdir().unwrap();
    let brandhub = Brandhub::new(dir.path());
    let users = brandhub.demo(50);
    let server = brandhub.serve_logging("info", &["--workers", "0"]);
    let client = brandhub.client();
    let (_, email, key) = users.iter().find(|(t, _, _)| t == "admin").unwrap();
    let (_, invited, _) = users.iter().find(|(t, _, _)| t == "company").unwrap();
    let invitation: Value = client
        .post(format!("{}/api/invitation", server.base))
        .basic_auth(email, Some(key))
        .json(&serde_json::json!({ "user": invited }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = invitation["token"]
        .as_str()
        .expect("an invitation token")
        .to_string();
    let accepted = client
        .post(format!("{}/api/invitation/{token}", server.base))
        .header("x-request-id", "ops-log-accept")
        .json(&serde_json::json!({ "password": "a password long enough" }))
        .send()
        .await
        .unwrap();
    assert_eq!(accepted.status(), 200);
    let secrets = [
        "Sekr1tKeyValue",
        "Sekr1tTokenValue",
        "Sekr1tPasswordValue",
        "Sekr1tApiKey",
    ];
    let query = format!(
        "/api/brand?pageSize=1&key={}&access_token={}&password={}&apiKey={}",
        secrets[0], secrets[1], secrets[2], secrets[3]
    );
    let status = request_with_id(&brandhub, &server, &users, &query, "ops-log-query").await;
    assert_eq!(status, 400, "unknown parameters are refused");
    let log = server.log_until(|line| line.contains("ops-log-query") && line.contains("answered"));
    let accept_line = log
        .iter()
        .find(|l| l.contains("answered") && l.contains("ops-log-accept"))
        .unwrap_or_else(|| panic!("no line for the acceptance: {log:?}"));
    assert!(accept_line.contains("/api/invitation/"), "{accept_line}");
    assert!(accept_line.contains("status=200"), "{accept_line}");
    let query_line = log
        .iter()
        .find(|l| l.contains("answered") && l.contains("ops-log-query"))
        .unwrap();
    assert!(
        query_line.contains("pageSize=1"),
        "the query is logged: {query_line}"
    );
    for line in &log {
        assert!(
            !line.contains(&token),
            "the invitation token is logged: {line}"
        );
        assert!(!line.contains(key.as_str()), "the key is logged: {line}");
        for secret in secrets {
            assert!(!line.contains(secret), "{secret} is logged: {line}");
        }
    }
}
