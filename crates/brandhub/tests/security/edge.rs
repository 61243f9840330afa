//! The edges of requests and files: a cell or a text longer than anything real, upload waits
//! that are no numbers, bodies of the wrong shape, URLs past the limit, the Basic scheme in
//! any case, the failed-authentication limiter behind proxies, and connections that stall.
//! Each answer is a 4xx problem+json (or a closed connection), and the server still answers.

use crate::common::{self, BOUNDARY, Db, Fixture, Response, multipart};
use brandhub_server::Settings;
use brandhub_server::proxies::TrustedProxies;
use brandhub_server::ratelimit::Limit;
use serde_json::{Value, json};
use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Small demo data: these tests need a brand and the demo users, not volume.
const SCALE: u64 = 200;

/// The server the tests reach through a proxy on the loopback address: `X-Forwarded-For`
/// names the client, so each test can be its own client address.
fn behind_a_local_proxy(settings: &mut Settings) {
    settings.trusted_proxies = TrustedProxies::new(vec!["127.0.0.1".parse().expect("an address")]);
    settings.failure_limit = slow_refill();
}

/// Failed authentications allowed: a burst of 20 that refills one every 100 s, so an address
/// that used them up stays blocked while a test looks at it, however slow the machine.
fn slow_refill() -> Limit {
    Limit::new(0.01, 20.0)
}

/// Short bounds on connections (and no workers: an upload's wait runs its full length), no
/// trusted proxies.
fn impatient(settings: &mut Settings) {
    settings.timeouts.tls_handshake = Duration::from_secs(1);
    settings.timeouts.header_read = Duration::from_secs(1);
    settings.timeouts.idle = Duration::from_secs(1);
    settings.timeouts.body_before_caller = BODY_BEFORE_CALLER;
    settings.timeouts.body_rate_window = BODY_RATE_WINDOW;
    settings.timeouts.body_min_rate = 1024;
    settings.uploads.workers.workers = 0;
    settings.failure_limit = slow_refill();
}

/// The impatient server's bound on a body read before the caller is known.
const BODY_BEFORE_CALLER: Duration = Duration::from_secs(1);

/// The impatient server's window of the minimum body rate (1 KiB/s).
const BODY_RATE_WINDOW: Duration = Duration::from_secs(2);

/// Few connections per address, and a proxy on 127.0.0.2 that may open a few more.
fn capped(settings: &mut Settings) {
    settings.trusted_proxies = TrustedProxies::new(vec!["127.0.0.2".parse().expect("an address")]);
    settings.connections.per_address = 3;
    settings.connections.per_proxy = 5;
}

fn proxied(db: Db) -> Option<&'static Fixture> {
    common::shared_with(db, "edge", SCALE, behind_a_local_proxy)
}

fn slow(db: Db) -> Option<&'static Fixture> {
    common::shared_with(db, "edge_timeouts", SCALE, impatient)
}

fn few(db: Db) -> Option<&'static Fixture> {
    common::shared_with(db, "edge_capped", SCALE, capped)
}

/// Declares each test on SQLite and on PostgreSQL, with the fixture `$fixture` gives.
macro_rules! on_both {
    ($($fixture:ident: async fn $name:ident($fx:ident) $body:block)*) => {
        mod sqlite {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test]
                async fn $name() {
                    let $fx = $fixture(Db::Sqlite).expect("SQLite always runs");
                    $body
                }
            )*
        }
        mod postgres {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test]
                async fn $name() {
                    let Some($fx) = $fixture(Db::Postgres) else { return };
                    $body
                }
            )*
        }
    };
}

/// A client address of its own for each use (documentation range 198.51.100.0/24 and on).
fn fresh_address() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("198.51.{}.{}", 100 + n / 250, n % 250 + 1)
}

/// A request as the demo admin.
async fn as_admin(fx: &Fixture, request: reqwest::RequestBuilder) -> Response {
    let admin = fx.credential("admin");
    let response = request
        .basic_auth(&admin.email, Some(&admin.secret))
        .send()
        .await
        .expect("the server answers");
    Response::read(response).await
}

/// The server still answers a plain read.
async fn still_answers(fx: &Fixture) {
    let response = fx.get("/api/brand?pageSize=1").await;
    assert_eq!(response.status, 200, "the server answers after the attack");
    assert!(response.header("x-request-id").is_some());
}

/// A problem+json answer that carries its request id.
fn assert_problem(response: &Response, status: u16, code: &str) -> Value {
    let body = response.assert_problem(status, code);
    assert!(response.header("x-request-id").is_some(), "{body}");
    body
}

/// Uploads a file as the admin with `?wait=60`; the file record.
async fn upload(fx: &Fixture, part: &str, file_name: &str, bytes: &[u8]) -> Value {
    let response = as_admin(
        fx,
        fx.client()
            .post(format!("{}/api/file?wait=60", fx.base))
            .header(
                "content-type",
                format!("multipart/form-data; boundary={BOUNDARY}"),
            )
            .body(multipart(&[(part, Some(file_name), bytes)])),
    )
    .await;
    assert_eq!(
        response.status,
        201,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    response.records("file")[0].clone()
}

/// Some brand's id.
async fn a_brand(fx: &Fixture) -> String {
    fx.get("/api/brand?pageSize=1&fields=id").await.ids("brand")[0].clone()
}

/// A unique product code.
fn new_code(prefix: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("{prefix}-{nanos}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Letters that compress well but not beyond the archive ratio limit (a run of one letter
/// would be refused as a zip bomb before any cell is looked at).
fn noisy_text(chars: usize) -> String {
    let mut state: u32 = 0x2545_F491;
    (0..chars)
        .map(|i| {
            if i % 100 == 99 {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                char::from(b'a' + (state % 26) as u8)
            } else {
                'x'
            }
        })
        .collect()
}

/// A product `.xlsx` written by hand with inline strings (rows of cells), as no spreadsheet
/// program would write a cell this long.
fn product_xlsx(rows: &[[&str; 3]]) -> Vec<u8> {
    let main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main";
    let rels = "http://schemas.openxmlformats.org/package/2006/relationships";
    let doc = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
    let mut data = String::new();
    for (r, row) in rows.iter().enumerate() {
        data.push_str(&format!("<row r=\"{}\">", r + 1));
        for (c, text) in row.iter().enumerate() {
            let reference = format!("{}{}", char::from(b'A' + c as u8), r + 1);
            data.push_str(&format!(
                "<c r=\"{reference}\" t=\"inlineStr\"><is><t>{text}</t></is></c>"
            ));
        }
        data.push_str("</row>");
    }
    let parts = [
        (
            "[Content_Types].xml",
            r#"<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/></Types>"#.to_string(),
        ),
        (
            "_rels/.rels",
            format!(r#"<?xml version="1.0"?><Relationships xmlns="{rels}"><Relationship Id="rId1" Type="{doc}/officeDocument" Target="xl/workbook.xml"/></Relationships>"#),
        ),
        (
            "xl/workbook.xml",
            format!(r#"<?xml version="1.0"?><workbook xmlns="{main}" xmlns:r="{doc}"><sheets><sheet name="Products" sheetId="1" r:id="rId1"/></sheets></workbook>"#),
        ),
        (
            "xl/_rels/workbook.xml.rels",
            format!(r#"<?xml version="1.0"?><Relationships xmlns="{rels}"><Relationship Id="rId1" Type="{doc}/worksheet" Target="worksheets/sheet1.xml"/></Relationships>"#),
        ),
        (
            "xl/worksheets/sheet1.xml",
            format!(r#"<?xml version="1.0"?><worksheet xmlns="{main}"><sheetData>{data}</sheetData></worksheet>"#),
        ),
    ];
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, content) in parts {
        writer.start_file(name, options).expect("a zip entry");
        writer.write_all(content.as_bytes()).expect("written");
    }
    writer.finish().expect("a zip").into_inner()
}

/// A request with a bad key from `address` (as the proxy on the loopback address reports
/// it); the answer's status.
async fn bad_key_from(fx: &Fixture, forwarded_for: &str) -> u16 {
    let admin = fx.credential("admin");
    let response = fx
        .client()
        .get(format!("{}/api/brand?pageSize=1", fx.base))
        .header("x-forwarded-for", forwarded_for)
        .basic_auth(&admin.email, Some("bhk_not-the-key-at-all"))
        .send()
        .await
        .expect("the server answers");
    let response = Response::read(response).await;
    match response.status {
        401 => assert_problem(&response, 401, "unauthenticated"),
        429 => {
            assert!(response.header("retry-after").is_some());
            assert_problem(&response, 429, "rate_limited")
        }
        other => panic!("a bad key got {other}"),
    };
    response.status
}

/// Fails authentication from one address until it is refused with 429: the 21st try, as the
/// fixtures allow bursts of 20 and refill one every 100 s.
async fn block(fx: &Fixture, forwarded_for: impl Fn(usize) -> String) {
    for attempt in 0..20 {
        assert_eq!(
            bad_key_from(fx, &forwarded_for(attempt)).await,
            401,
            "try {attempt}"
        );
    }
    assert_eq!(
        bad_key_from(fx, &forwarded_for(20)).await,
        429,
        "the 21st try"
    );
}

/// A GET with the given credentials from `forwarded_for`; the status.
async fn get_as(fx: &Fixture, user: &str, secret: &str, forwarded_for: &str) -> u16 {
    fx.client()
        .get(format!("{}/api/brand?pageSize=1", fx.base))
        .header("x-forwarded-for", forwarded_for)
        .basic_auth(user, Some(secret))
        .send()
        .await
        .expect("the server answers")
        .status()
        .as_u16()
}

/// Reads a raw connection until the server closes it; `None` if it is still open after
/// `within` (far longer than the bounds under test).
async fn closed_within<S: tokio::io::AsyncRead + Unpin>(
    stream: &mut S,
    within: Duration,
) -> Option<Vec<u8>> {
    let mut seen = Vec::new();
    let reading = async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(within, reading).await.ok()?;
    Some(seen)
}

/// Well above the 1 s bounds of the impatient server, well below "minutes".
const CLOSED_WITHIN: Duration = Duration::from_secs(20);

/// How soon after its bound a slow body must be cut off: a few seconds, generous for a busy
/// machine, far below the minutes a trickle would otherwise hold the connection.
const CUT_WITHIN: Duration = Duration::from_secs(10);

/// The address slow bodies come from: not 127.0.0.1, which another test of the impatient
/// server blocks for failed authentications (a sign-in from there would be refused first).
const TRICKLER: std::net::IpAddr = std::net::IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 3));

/// The demo admin's `Authorization` header value.
fn admin_authorization(fx: &Fixture) -> String {
    use base64::Engine;
    let admin = fx.credential("admin");
    let token = base64::engine::general_purpose::STANDARD
        .encode(format!("{}:{}", admin.email, admin.secret));
    format!("Basic {token}")
}

/// Sends `head`, then `length` bytes of body `step` bytes at a time, one step every `every`,
/// on a connection of its own, while reading what the server answers. Returns what arrived
/// and how long after the head the connection closed; `None` if it was still open after
/// [`CLOSED_WITHIN`].
async fn trickle(
    fx: &Fixture,
    head: String,
    length: usize,
    step: usize,
    every: Duration,
) -> Option<(String, Duration)> {
    let tls = common::tls_connect_from(fx, TRICKLER).await.expect("TLS");
    let (mut reader, mut writer) = tokio::io::split(tls);
    writer.write_all(head.as_bytes()).await.unwrap();
    writer.flush().await.unwrap();
    let started = std::time::Instant::now();
    let sending = tokio::spawn(async move {
        let mut sent = 0;
        while sent < length {
            let n = step.min(length - sent);
            if writer.write_all(&vec![b' '; n]).await.is_err() || writer.flush().await.is_err() {
                return;
            }
            sent += n;
            tokio::time::sleep(every).await;
        }
        // Keep the write side open: a closed one would end the request by itself.
        tokio::time::sleep(CLOSED_WITHIN).await;
        drop(writer);
    });
    let seen = closed_within(&mut reader, CLOSED_WITHIN).await;
    let elapsed = started.elapsed();
    sending.abort();
    seen.map(|seen| (String::from_utf8_lossy(&seen).to_string(), elapsed))
}

/// A body cut off by its bound: the connection closed (or answered 408 `request_timeout`
/// first) within [`CUT_WITHIN`] of `bound`.
fn assert_cut_off(outcome: Option<(String, Duration)>, bound: Duration) {
    let (answer, elapsed) = outcome.expect("the connection stays open");
    assert!(
        elapsed < bound + CUT_WITHIN,
        "cut off only after {elapsed:?}"
    );
    assert!(
        answer.is_empty()
            || (answer.starts_with("HTTP/1.1 408")
                && answer.contains("\"code\":\"request_timeout\"")),
        "{answer}"
    );
}

on_both! {
    proxied: async fn upload_waits_that_are_no_seconds_are_400(fx) {
        let brand = a_brand(fx).await;
        let sheet = product_xlsx(&[["Product Code", "Title", "Barcode"]]);
        let part = format!("product,{brand}");
        for wait in ["1e308", "1e400", "NaN", "nan", "inf", "-inf", "infinity", "-1", "-0.5", "61", "600",
                     "99999999999999999999999", "0x10", "", "%20"] {
            let response = as_admin(
                fx,
                fx.client()
                    .post(format!("{}/api/file?wait={wait}", fx.base))
                    .header("content-type", format!("multipart/form-data; boundary={BOUNDARY}"))
                    .body(multipart(&[(&part, Some("p.xlsx"), &sheet)])),
            )
            .await;
            let body = assert_problem(&response, 400, "invalid_parameter");
            assert_eq!(body["field"], "wait", "{wait}: {body}");
        }
        still_answers(fx).await;
    }

    proxied: async fn the_basic_scheme_is_case_insensitive(fx) {
        use base64::Engine;
        let admin = fx.credential("admin");
        let token = base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", admin.email, admin.secret));
        for scheme in ["Basic", "basic", "BASIC", "bAsIc"] {
            let response = fx
                .client()
                .get(format!("{}/api/brand?pageSize=1", fx.base))
                .header("authorization", format!("{scheme} {token}"))
                .send()
                .await
                .expect("the server answers");
            assert_eq!(response.status(), 200, "{scheme}");
        }
        let response = fx
            .client()
            .get(format!("{}/api/brand?pageSize=1", fx.base))
            .header("authorization", format!("Bearer {token}"))
            .header("x-forwarded-for", fresh_address())
            .send()
            .await
            .expect("the server answers");
        let response = Response::read(response).await;
        assert_problem(&response, 401, "unauthenticated");
    }

    proxied: async fn complex_query_bodies_must_be_objects(fx) {
        for body in ["[]", "[null,null]", "[null,null,null,null]", "5", "\"x\"", "null", "true",
                     r#"{"query":[["name","=","x"]]}"#, r#"{"querywitharray":["name",["x"]]}"#] {
            for path in ["/api/brand/query", "/api/brand/count"] {
                let response = as_admin(
                    fx,
                    fx.client()
                        .post(format!("{}{path}", fx.base))
                        .header("content-type", "application/json")
                        .body(body),
                )
                .await;
                assert_problem(&response, 400, "invalid_query");
            }
        }
        still_answers(fx).await;
    }

    proxied: async fn a_url_past_the_limit_is_a_problem_414(fx) {
        // Past the server's 60 KiB but within what an HTTP client will send.
        let value = "x".repeat(63_000);
        let response = fx.get(&format!("/api/brand?name={value}")).await;
        let body = assert_problem(&response, 414, "uri_too_long");
        assert!(body["detail"].as_str().unwrap().contains("61440 bytes"), "{body}");
        // Far past it, written by hand: the server still answers with its own problem, and
        // the next request on the same connection is served.
        let admin = fx.credential("admin");
        use base64::Engine;
        let token = base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", admin.email, admin.secret));
        let request = format!(
            "GET /api/brand?name={} HTTP/1.1\r\nHost: localhost\r\n\r\n\
             GET /api/brand?pageSize=1&fields=id HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic {token}\r\nConnection: close\r\n\r\n",
            "<".repeat(300_000)
        );
        let answer = common::raw_https(fx, request).await;
        assert!(answer.starts_with("HTTP/1.1 414"), "{}", &answer[..answer.len().min(400)]);
        assert!(answer.contains("application/problem+json"));
        assert!(answer.to_ascii_lowercase().contains("x-request-id"));
        assert!(answer.contains("\"code\":\"uri_too_long\""));
        assert!(answer.contains("HTTP/1.1 200"), "the pipelined request after it is served");
        // Within the limit, a long URL is served (twelve values, each within the value limit).
        let filters: Vec<String> = (0..12).map(|_| format!("name={}", "y".repeat(4_000))).collect();
        assert_eq!(fx.get(&format!("/api/brand?{}", filters.join("&"))).await.status, 200);
    }

    proxied: async fn text_fields_past_their_length_are_422_naming_the_field(fx) {
        let name = "k".repeat(900 * 1024);
        let response = as_admin(fx, fx.client().post(format!("{}/api/apiKey", fx.base)).json(&json!({"name": name}))).await;
        let body = assert_problem(&response, 422, "validation_failed");
        assert_eq!(body["errors"][0]["field"], "name", "{body}");
        assert!(body["errors"][0]["message"].as_str().unwrap().contains("at most 500"), "{body}");
        let response = as_admin(
            fx,
            fx.client().post(format!("{}/api/user", fx.base)).json(&json!({
                "name": "ok", "email": format!("{}@example.test", "e".repeat(300)), "type": "admin",
                "detail": {"lang": "l".repeat(101)},
            })),
        )
        .await;
        let body = assert_problem(&response, 422, "validation_failed");
        let fields: Vec<&str> = body["errors"].as_array().unwrap().iter().map(|e| e["field"].as_str().unwrap()).collect();
        assert_eq!(fields, vec!["detail.lang", "email"], "{body}");
        still_answers(fx).await;
    }

    proxied: async fn a_cell_longer_than_a_cell_skips_its_row_and_nothing_of_it_is_stored(fx) {
        let brand = a_brand(fx).await;
        let (kept, huge, after) = (new_code("EDGE"), new_code("EDGE"), new_code("EDGE"));
        let title = noisy_text(5_000_000);
        let sheet = product_xlsx(&[
            ["Product Code", "Title", "Barcode"],
            [&kept, "A fine title", &new_code("B")],
            [&huge, &title, &new_code("B")],
            [&after, "Another fine title", &new_code("B")],
        ]);
        assert!(sheet.len() < 1024 * 1024, "under the fixture's upload limit: {}", sheet.len());
        let file = upload(fx, &format!("product,{brand}"), "huge.xlsx", &sheet).await;
        assert_eq!(file["status"], "processed", "{file}");
        let detail = &file["detail"];
        assert_eq!((detail["rowsRead"].as_i64(), detail["rowsApplied"].as_i64(), detail["rowsSkipped"].as_i64()),
                   (Some(3), Some(2), Some(1)), "{detail}");
        assert_eq!(
            detail["error"],
            "Warning: 1 row skipped: row 3 (column B holds 5,000,000 characters, more than the 32,767 a cell may hold)"
        );
        let found = |code: String| async move {
            fx.get(&format!("/api/product?code={code}&fields=id,title")).await.records("product")
        };
        assert_eq!(found(kept).await[0]["title"], "A fine title");
        assert!(found(huge).await.is_empty(), "the row with the huge cell wrote nothing");
        assert_eq!(found(after).await.len(), 1);

        // A title within a cell's limit but past the field's: the row is skipped with the
        // field's reason (CSV this time).
        let (long, fine) = (new_code("EDGE"), new_code("EDGE"));
        let csv = format!(
            "Product Code,Title,Barcode\n{long},{},{}\n{fine},Fine,{}\n",
            "t".repeat(600),
            new_code("B"),
            new_code("B")
        );
        let file = upload(fx, &format!("product,{brand}"), "long.csv", csv.as_bytes()).await;
        assert_eq!(
            file["detail"]["error"],
            "Warning: 1 row skipped: row 2 (Title has 600 characters; at most 500 are allowed (the product title it sets))"
        );
        assert!(found(long).await.is_empty());
        assert_eq!(found(fine).await.len(), 1);
        still_answers(fx).await;
    }

    proxied: async fn a_blocked_address_still_lets_a_valid_key_through(fx) {
        let address = fresh_address();
        block(fx, |_| address.clone()).await;
        assert_eq!(bad_key_from(fx, &address).await, 429, "still blocked");
        // A key the server has seen before passes at no cost…
        let admin = fx.credential("admin");
        assert_eq!(get_as(fx, &admin.email, &admin.secret, &address).await, 200);
        // …and a key it has never checked is checked too.
        let created = as_admin(fx, fx.client().post(format!("{}/api/apiKey", fx.base)).json(&json!({"name": "edge"}))).await;
        assert_eq!(created.status, 201, "{}", String::from_utf8_lossy(&created.body));
        let secret = created.records("apiKey")[0]["secret"].as_str().unwrap().to_string();
        assert_eq!(get_as(fx, &admin.email, &secret, &address).await, 200);
        // Wrong credentials from it are still refused, and another address is not blocked.
        assert_eq!(bad_key_from(fx, &address).await, 429);
        assert_eq!(bad_key_from(fx, &fresh_address()).await, 401);
    }

    proxied: async fn only_what_trusted_proxies_append_is_believed(fx) {
        // The client writes any address it likes on the left; the proxy appends the real one.
        let real = fresh_address();
        block(fx, |attempt| format!("203.0.113.{}, {real}", attempt % 250)).await;
        assert_eq!(bad_key_from(fx, &format!("192.0.2.1, {real}")).await, 429);
        // Another client behind the same proxy is not affected.
        assert_eq!(bad_key_from(fx, &format!("{real}, {}", fresh_address())).await, 401);
    }

    slow: async fn without_trusted_proxies_x_forwarded_for_is_ignored(fx) {
        // Every try claims another address: the limiter keys on the connection's peer.
        block(fx, |attempt| format!("203.0.113.{}", attempt % 250)).await;
        // The demo admin's key still works from there.
        let admin = fx.credential("admin");
        assert_eq!(get_as(fx, &admin.email, &admin.secret, "203.0.113.77").await, 200);
    }

    slow: async fn half_a_request_is_closed(fx) {
        let mut tls = common::tls_connect(fx).await;
        tls.write_all(b"GET /api/brand HTTP/1.1\r\nHost: localhost\r\nX-Slow: ").await.unwrap();
        tls.flush().await.unwrap();
        assert!(closed_within(&mut tls, CLOSED_WITHIN).await.is_some(), "the connection stays open");
        still_answers(fx).await;
    }

    slow: async fn a_stalled_body_is_closed(fx) {
        use base64::Engine;
        let admin = fx.credential("admin");
        let token = base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", admin.email, admin.secret));
        let mut tls = common::tls_connect(fx).await;
        let head = format!(
            "POST /api/brand/query HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic {token}\r\n\
             Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"query\": ["
        );
        tls.write_all(head.as_bytes()).await.unwrap();
        tls.flush().await.unwrap();
        assert!(closed_within(&mut tls, CLOSED_WITHIN).await.is_some(), "the connection stays open");
        still_answers(fx).await;
    }

    slow: async fn a_body_before_the_caller_is_known_is_bounded_in_time(fx) {
        // 4,000 bytes at 2 KB/s: fast enough for the minimum rate, longer than the bound.
        for path in ["/api/session", "/api/invitation/some-token-that-is-not-known"] {
            let head = format!(
                "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
                 Content-Length: 4000\r\n\r\n"
            );
            let outcome = trickle(fx, head, 4000, 100, Duration::from_millis(50)).await;
            assert_cut_off(outcome, BODY_BEFORE_CALLER);
        }
        // A known caller's body may take longer: the same pace, answered.
        let head = format!(
            "POST /api/brand/count HTTP/1.1\r\nHost: localhost\r\nAuthorization: {}\r\n\
             Content-Type: application/json\r\nContent-Length: 4002\r\nConnection: close\r\n\r\n{{",
            admin_authorization(fx)
        );
        let tls = common::tls_connect_from(fx, TRICKLER).await.expect("TLS");
        let (mut reader, mut writer) = tokio::io::split(tls);
        writer.write_all(head.as_bytes()).await.unwrap();
        let started = std::time::Instant::now();
        for _ in 0..40 {
            writer.write_all(&[b' '; 100]).await.unwrap();
            writer.flush().await.unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        writer.write_all(b"}").await.unwrap();
        writer.flush().await.unwrap();
        assert!(started.elapsed() > BODY_BEFORE_CALLER);
        let answer = closed_within(&mut reader, CLOSED_WITHIN).await.expect("answered and closed");
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        still_answers(fx).await;
    }

    slow: async fn a_body_slower_than_the_minimum_rate_is_cut_off(fx) {
        // 50 bytes a second, each pause far shorter than the idle bound: a known caller's
        // query, and an upload.
        let head = format!(
            "POST /api/brand/count HTTP/1.1\r\nHost: localhost\r\nAuthorization: {}\r\n\
             Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n",
            admin_authorization(fx)
        );
        let outcome = trickle(fx, head, 100_000, 10, Duration::from_millis(200)).await;
        assert_cut_off(outcome, BODY_RATE_WINDOW);
        let brand = a_brand(fx).await;
        let head = format!(
            "POST /api/file HTTP/1.1\r\nHost: localhost\r\nAuthorization: {}\r\n\
             Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: 100000\r\n\r\n\
             --{BOUNDARY}\r\nContent-Disposition: form-data; name=\"product,{brand}\"; filename=\"p.csv\"\r\n\r\n\
             Product Code,Title,Barcode\n",
            admin_authorization(fx)
        );
        let outcome = trickle(fx, head, 100_000, 10, Duration::from_millis(200)).await;
        assert_cut_off(outcome, BODY_RATE_WINDOW);
        still_answers(fx).await;
    }

    few: async fn connections_are_capped_per_address_and_per_proxy(fx) {
        let client = std::net::IpAddr::from([127, 0, 0, 1]);
        let proxy = std::net::IpAddr::from([127, 0, 0, 2]);
        // Refused: the connection is closed before its TLS handshake completes.
        let refused = |local| async move {
            match tokio::time::timeout(CUT_WITHIN, common::tls_connect_from(fx, local)).await {
                Ok(Ok(_)) => panic!("a connection past the cap of {local} was served"),
                Ok(Err(_)) => {}
                Err(_) => panic!("a connection past the cap of {local} was left hanging"),
            }
        };
        let mut open = Vec::new();
        for _ in 0..3 {
            open.push(common::tls_connect_from(fx, client).await.expect("within the cap"));
        }
        refused(client).await;
        // A trusted proxy carries many clients: it has a cap of its own.
        let mut proxied = Vec::new();
        for _ in 0..5 {
            proxied.push(common::tls_connect_from(fx, proxy).await.expect("within the proxy's cap"));
        }
        refused(proxy).await;
        // The connections within the cap are served.
        let request = format!(
            "GET /api/brand?pageSize=1 HTTP/1.1\r\nHost: localhost\r\nAuthorization: {}\r\nConnection: close\r\n\r\n",
            admin_authorization(fx)
        );
        let mut served = open.pop().unwrap();
        served.write_all(request.as_bytes()).await.unwrap();
        let answer = closed_within(&mut served, CLOSED_WITHIN).await.expect("answered");
        assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"));
        // Once one closed, the address may open another.
        drop(served);
        let deadline = std::time::Instant::now() + CLOSED_WITHIN;
        loop {
            if common::tls_connect_from(fx, client).await.is_ok() {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "the closed connection's place stays taken");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        drop(open);
        drop(proxied);
    }

    slow: async fn a_silent_tls_handshake_is_closed(fx) {
        let address = fx.base.trim_start_matches("https://").to_string();
        let mut tcp = tokio::net::TcpStream::connect(&address).await.unwrap();
        assert!(closed_within(&mut tcp, CLOSED_WITHIN).await.is_some(), "the connection stays open");
        // Half a ClientHello is no better.
        let mut tcp = tokio::net::TcpStream::connect(&address).await.unwrap();
        tcp.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00]).await.unwrap();
        assert!(closed_within(&mut tcp, CLOSED_WITHIN).await.is_some(), "the connection stays open");
        still_answers(fx).await;
    }

    slow: async fn an_idle_connection_is_closed_after_its_answer(fx) {
        use base64::Engine;
        let admin = fx.credential("admin");
        let token = base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", admin.email, admin.secret));
        let mut tls = common::tls_connect(fx).await;
        let request = format!(
            "GET /api/brand?pageSize=1 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic {token}\r\n\r\n"
        );
        tls.write_all(request.as_bytes()).await.unwrap();
        let answer = closed_within(&mut tls, CLOSED_WITHIN).await.expect("the idle connection stays open");
        assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"), "it was answered first");
    }

    slow: async fn an_answer_that_takes_longer_than_the_bounds_is_not_cut_short(fx) {
        // No workers here: the upload waits its whole three seconds, three times the bounds.
        let brand = a_brand(fx).await;
        let sheet = product_xlsx(&[["Product Code", "Title", "Barcode"], [&new_code("SLOW"), "Slow", &new_code("B")]]);
        let started = std::time::Instant::now();
        let response = as_admin(
            fx,
            fx.client()
                .post(format!("{}/api/file?wait=3", fx.base))
                .header("content-type", format!("multipart/form-data; boundary={BOUNDARY}"))
                .body(multipart(&[(&format!("product,{brand}"), Some("slow.xlsx"), &sheet)])),
        )
        .await;
        assert_eq!(response.status, 201, "{}", String::from_utf8_lossy(&response.body));
        assert!(started.elapsed() >= Duration::from_secs(3));
        assert_eq!(response.records("file")[0]["status"], "pending");
    }
}
