//! The integration-test harness: a real server (HTTPS on a random port, self-signed
//! certificate) over a real, freshly created database with the demo data loaded, and a real
//! HTTP client that trusts exactly that certificate.
//!
//! SQLite fixtures always run; PostgreSQL fixtures run when `BRANDHUB_TEST_DATABASE_URL` names
//! a server where the test may create databases (each fixture gets its own database). Without
//! it the PostgreSQL variants are skipped with a notice on the terminal, and under `CI=true`
//! they fail.
//! Fixtures ([`shared`]) are shared by the tests of one test binary and live on a thread of
//! their own, so the server outlives every test's runtime. The tests of a binary run at once:
//! on a shared fixture a test asserts only on records it made, or on deltas. A test that
//! counts, or reads metrics or cache counters, takes a fixture of its own ([`own`]), over a
//! copy of a template database that is loaded once per binary.

#![allow(dead_code)]

/// A number no other call of this process and no earlier run returns: the time in
/// microseconds, times ten, and at least one more than the last number returned (a loop may
/// ask many times within one microsecond, and values made from one, such as barcodes, must
/// still differ).
pub fn unique_number() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
        % 10_000_000_000
        * 10;
    let previous = LAST
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| {
            Some(now.max(last + 1))
        })
        .expect("the update always gives a value");
    now.max(previous + 1)
}

pub mod orders;
pub mod process;
pub mod scope_reference;
pub mod world;

use brandhub::demo_load::load_demo;
use brandhub_demo::{Chunk, DemoCredential, DemoOptions, DemoSummary, generate_all};
use brandhub_filestore::FileStore;
use brandhub_ingest::WorkerSettings;
use brandhub_server::tls::TlsSource;
use brandhub_server::{Settings, Uploads, start};
use brandhub_store::{Store, StoreOptions};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock, mpsc};

/// The demo scale every shared fixture loads.
pub const SCALE: u64 = 2000;

/// Records the fixtures' servers read at a time for an export.
pub const EXPORT_CHUNK: u64 = 300;

/// The upload limit of the fixtures' servers: small, so a test can pass it cheaply.
pub const MAX_UPLOAD: u64 = 1024 * 1024;

/// Which database a fixture runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Db {
    Sqlite,
    Postgres,
}

/// A running server over demo data.
pub struct Fixture {
    pub db: Db,
    /// `https://127.0.0.1:<port>`.
    pub base: String,
    certificate_pem: String,
    pub summary: DemoSummary,
    /// A store on the same database, for checks that look beside the API.
    pub store: Store,
    /// The database URL, for tests that open more stores on it.
    pub database_url: String,
    /// Where the server keeps uploaded bytes.
    pub files: FileStore,
    /// `http://127.0.0.1:<port>`: the server's metrics listener (`--metrics-listen`).
    pub metrics_base: String,
    runtime: tokio::runtime::Handle,
}

impl Fixture {
    /// A client that trusts this server's certificate only.
    pub fn client(&self) -> reqwest::Client {
        client_trusting(&self.certificate_pem)
    }

    /// The demo credential of a user type's first user.
    pub fn credential(&self, user_type: &str) -> &DemoCredential {
        self.summary
            .credentials
            .iter()
            .find(|c| c.user_type.as_str() == user_type)
            .expect("the demo has every user type")
    }

    /// A GET as the demo admin.
    pub async fn get(&self, path_and_query: &str) -> Response {
        let admin = self.credential("admin");
        let response = self
            .client()
            .get(format!("{}{path_and_query}", self.base))
            .basic_auth(&admin.email, Some(&admin.secret))
            .send()
            .await
            .expect("the server answers");
        Response::read(response).await
    }

    /// A POST of a JSON body as the demo admin.
    pub async fn post(&self, path: &str, body: &serde_json::Value) -> Response {
        let admin = self.credential("admin");
        let response = self
            .client()
            .post(format!("{}{path}", self.base))
            .basic_auth(&admin.email, Some(&admin.secret))
            .json(body)
            .send()
            .await
            .expect("the server answers");
        Response::read(response).await
    }

    /// Uploads for another server over the same database: the same file store and no
    /// workers of its own, so that it never claims a file of this fixture.
    pub fn side_uploads(&self) -> Uploads {
        Uploads {
            files: self.files.clone(),
            max_upload: MAX_UPLOAD,
            workers: WorkerSettings {
                workers: 0,
                ..WorkerSettings::default()
            },
        }
    }

    /// Runs a future on the fixture's own runtime (where its store's pool lives).
    pub async fn on_server<F, T>(&self, future: F) -> T
    where
        F: std::future::Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        self.runtime.spawn(future).await.expect("the task finishes")
    }
}

/// Who a test request is sent as.
#[derive(Clone, Copy)]
pub enum As<'a> {
    /// The demo user of this user type.
    Demo(&'a str),
    /// A user's email (or a key's id) and its secret.
    Key(&'a str, &'a str),
    /// No credentials at all.
    Nobody,
}

/// A request to the server at `base` (usually `fx.base`; another server over the same
/// database in some tests) as `who`, with extra headers and an optional JSON body: the one
/// place tests build requests.
pub async fn send(
    fx: &Fixture,
    base: &str,
    method: reqwest::Method,
    path: &str,
    who: As<'_>,
    headers: &[(&str, &str)],
    body: Option<&serde_json::Value>,
) -> Response {
    let mut request = fx.client().request(method, format!("{base}{path}"));
    request = match who {
        As::Demo(user_type) => {
            let credential = fx.credential(user_type);
            request.basic_auth(&credential.email, Some(&credential.secret))
        }
        As::Key(user, secret) => request.basic_auth(user, Some(secret)),
        As::Nobody => request,
    };
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request.json(body);
    }
    Response::read(request.send().await.expect("the server answers")).await
}

/// A request as a demo user of `user_type`, with an optional JSON body.
pub async fn call(
    fx: &Fixture,
    method: reqwest::Method,
    path: &str,
    user_type: &str,
    body: Option<serde_json::Value>,
) -> Response {
    send(
        fx,
        &fx.base,
        method,
        path,
        As::Demo(user_type),
        &[],
        body.as_ref(),
    )
    .await
}

/// An .xlsx whose first sheet holds these rows as text cells (empty strings stay empty).
pub fn xlsx(rows: &[Vec<String>]) -> Vec<u8> {
    let mut workbook = rust_xlsxwriter::Workbook::new();
    let sheet = workbook.add_worksheet();
    for (r, row) in rows.iter().enumerate() {
        for (c, value) in row.iter().enumerate() {
            if !value.is_empty() {
                sheet.write_string(r as u32, c as u16, value).unwrap();
            }
        }
    }
    workbook.save_to_buffer().unwrap()
}

/// A sheet row of texts.
pub fn row(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| v.to_string()).collect()
}

/// One part of a multipart body: name, filename, bytes.
pub type Part<'a> = (&'a str, Option<&'a str>, &'a [u8]);

pub const BOUNDARY: &str = "brandhub-test-boundary-7d3f0c";

/// A `multipart/form-data` body of these parts, separated by [`BOUNDARY`].
pub fn multipart(parts: &[Part<'_>]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, file_name, bytes) in parts {
        body.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
        let disposition = match file_name {
            Some(file_name) => {
                format!(
                    "Content-Disposition: form-data; name=\"{name}\"; filename=\"{file_name}\"\r\n"
                )
            }
            None => format!("Content-Disposition: form-data; name=\"{name}\"\r\n"),
        };
        body.extend_from_slice(disposition.as_bytes());
        body.extend_from_slice(b"Content-Type: application/octet-stream\r\n\r\n");
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    body
}

/// An HTTPS client that trusts exactly the certificates of a PEM text.
pub fn client_trusting(certificate_pem: &str) -> reqwest::Client {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(certificate_pem.as_bytes()) {
        roots
            .add(cert.expect("the server's certificate parses"))
            .expect("a valid root");
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(config)
        .build()
        .expect("a client")
}

/// A TLS connection to the fixture's server, for tests that speak HTTP byte by byte.
pub async fn tls_connect(fx: &Fixture) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    tls_connect_from(fx, std::net::Ipv4Addr::LOCALHOST.into())
        .await
        .expect("TLS")
}

/// A TLS connection to the fixture's server from a loopback address of the test's choice
/// (127.0.0.2 is another client than 127.0.0.1), or the error of the connect or handshake.
pub async fn tls_connect_from(
    fx: &Fixture,
    local: std::net::IpAddr,
) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(fx.certificate_pem.as_bytes()) {
        roots.add(cert.expect("a certificate")).expect("a root");
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let address: std::net::SocketAddr = fx
        .base
        .trim_start_matches("https://")
        .parse()
        .expect("the server's address");
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind(std::net::SocketAddr::new(local, 0))?;
    let tcp = socket.connect(address).await?;
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("a name");
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
}

/// Sends raw bytes over TLS and returns the raw answer: for requests an HTTP client would
/// rewrite (such as unencoded `<` in a URL, which reqwest percent-encodes).
pub async fn raw_https(fx: &Fixture, request: String) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tls = tls_connect(fx).await;
    tls.write_all(request.as_bytes())
        .await
        .expect("the request is sent");
    // Whatever arrived within the time: a server that never answers fails the test rather
    // than hanging it.
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        tls.read_to_end(&mut answer),
    )
    .await;
    String::from_utf8_lossy(&answer).to_string()
}

/// A client for plain HTTP (the behind-proxy mode).
pub fn plain_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// A response read whole.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

impl Response {
    /// Reads a response whole.
    pub async fn read(response: reqwest::Response) -> Response {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.bytes().await.expect("a body").to_vec();
        Response {
            status,
            headers,
            body,
        }
    }

    /// The body as JSON (panics with the body when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// A header's value as text.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    }

    /// The database statements the answer ran, as its Server-Timing header counts them
    /// (`db;dur=…;desc="N statements"`).
    pub fn statements(&self) -> u64 {
        let timing = self
            .header("server-timing")
            .expect("Server-Timing on every answer");
        timing
            .split("desc=\"")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no statement count in {timing}"))
    }

    /// The records of an envelope.
    pub fn records(&self, resource: &str) -> Vec<serde_json::Value> {
        let json = self.json();
        json["response"][resource]
            .as_array()
            .unwrap_or_else(|| panic!("no {resource} array in {json}"))
            .clone()
    }

    /// The ids of an envelope's records, in order.
    pub fn ids(&self, resource: &str) -> Vec<String> {
        self.records(resource)
            .iter()
            .map(|r| r["id"].as_str().expect("records have ids").to_string())
            .collect()
    }

    /// Asserts a problem+json error with this status and code; returns the body.
    pub fn assert_problem(&self, status: u16, code: &str) -> serde_json::Value {
        let json = self.json();
        assert_eq!(self.status, status, "{json}");
        assert_eq!(json["code"], code, "{json}");
        assert_eq!(
            self.header("content-type").as_deref(),
            Some("application/problem+json")
        );
        assert_eq!(json["status"], status);
        assert!(
            json["detail"].as_str().is_some_and(|d| !d.is_empty()),
            "{json}"
        );
        json
    }
}

/// The PostgreSQL server tests may use, if any.
pub fn postgres_url() -> Option<String> {
    std::env::var("BRANDHUB_TEST_DATABASE_URL")
        .ok()
        .filter(|u| !u.is_empty())
}

fn with_database(url: &str, database: &str) -> String {
    match url.rfind('/') {
        Some(slash) if url[..slash].contains("://") && slash > url.find("://").unwrap() + 2 => {
            let (base, rest) = url.split_at(slash);
            let query = rest.find('?').map(|q| &rest[q..]).unwrap_or("");
            format!("{base}/{database}{query}")
        }
        _ => format!("{url}/{database}"),
    }
}

/// The database a PostgreSQL URL names (`test` in `postgres://u@h:5432/test?x=y`).
fn database_name(url: &str) -> &str {
    let after_host = url.split("://").nth(1).unwrap_or(url);
    after_host
        .split_once('/')
        .map(|(_, rest)| rest.split('?').next().unwrap_or(rest))
        .unwrap_or("")
}

/// A fresh empty database for a fixture; returns its URL and a temporary directory.
pub async fn fresh_database(db: Db, name: &str) -> (String, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let url = match db {
        Db::Sqlite => format!("sqlite://{}", dir.path().join("brandhub.db").display()),
        Db::Postgres => {
            let admin_url =
                postgres_url().expect("PostgreSQL fixtures need BRANDHUB_TEST_DATABASE_URL");
            let database = fixture_database(&admin_url, name);
            postgres_admin(
                &admin_url,
                &[
                    format!("DROP DATABASE IF EXISTS \"{database}\" WITH (FORCE)"),
                    format!("CREATE DATABASE \"{database}\""),
                ],
            )
            .await;
            with_database(&admin_url, &database)
        }
    };
    (url, dir)
}

/// The test binary's name without cargo's hash (`caching-0123abcd` → `caching`).
fn binary_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().to_string()))
        .map(|name| {
            name.rsplit_once('-')
                .map_or(name.clone(), |(n, _)| n.to_string())
        })
        .unwrap_or_default()
}

/// The PostgreSQL database of the fixture `name` of this test binary. Databases are named
/// after the server's database too, so that two checkouts testing against one PostgreSQL
/// server (each with its own database in the URL) never drop each other's fixtures.
fn fixture_database(admin_url: &str, name: &str) -> String {
    let plain = |text: &str| -> String {
        text.chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    format!(
        "bh_{}_{}_{}",
        plain(database_name(admin_url)),
        plain(&binary_name()),
        plain(name)
    )
    .to_ascii_lowercase()
}

/// Runs administrative statements (creating and dropping databases) on the configured server.
async fn postgres_admin(admin_url: &str, statements: &[String]) {
    use sqlx::Connection;
    let mut admin = sqlx::PgConnection::connect(admin_url)
        .await
        .expect("PostgreSQL is reachable");
    for statement in statements {
        sqlx::raw_sql(sqlx::AssertSqlSafe(statement.clone()))
            .execute(&mut admin)
            .await
            .unwrap_or_else(|e| panic!("the test may run {statement}: {e}"));
    }
    admin.close().await.ok();
}

/// Starts a fixture: fresh database, demo data at `scale`, server. Runs on its own thread.
pub fn start_fixture(db: Db, name: &str, scale: u64) -> Fixture {
    start_fixture_with(db, name, scale, |_| {})
}

/// [`start_fixture`] with the server's settings changed by `configure` (limits, timeouts,
/// trusted proxies, workers) before it starts.
pub fn start_fixture_with(db: Db, name: &str, scale: u64, configure: fn(&mut Settings)) -> Fixture {
    start_fixture_with_store(db, name, scale, |_| {}, configure)
}

/// [`start_fixture_with`] with the store's options changed by `store_options` too (such as
/// how long it waits for the database).
pub fn start_fixture_with_store(
    db: Db,
    name: &str,
    scale: u64,
    store_options: fn(&mut StoreOptions),
    configure: fn(&mut Settings),
) -> Fixture {
    let name = name.to_string();
    let database =
        move || -> std::pin::Pin<Box<dyn std::future::Future<Output = Loaded> + Send>> {
            Box::pin(async move {
                let (url, dir) = fresh_database(db, &name).await;
                let store = Store::connect(&store_options_for(&url, store_options))
                    .await
                    .expect("the database opens");
                store.migrate().await.expect("migrations apply");
                let summary = load_demo(
                    &store,
                    DemoOptions {
                        scale,
                        ..DemoOptions::default()
                    },
                )
                .await
                .expect("the demo loads");
                Loaded {
                    url,
                    dir,
                    summary,
                    store,
                }
            })
        };
    launch(db, Box::new(database), configure, None).0
}

/// A fixture's database, open and holding the demo data.
struct Loaded {
    url: String,
    /// Where the fixture keeps its files (and on SQLite its database).
    dir: tempfile::TempDir,
    summary: DemoSummary,
    store: Store,
}

/// Makes a fixture's database, on the fixture's runtime.
type MakeDatabase =
    Box<dyn FnOnce() -> std::pin::Pin<Box<dyn std::future::Future<Output = Loaded> + Send>> + Send>;

/// The store options of every fixture on `url`, changed by `store_options`.
fn store_options_for(url: &str, store_options: fn(&mut StoreOptions)) -> StoreOptions {
    let mut options = StoreOptions {
        url: url.to_string(),
        max_connections: 8,
        page_cache_bytes: 8 << 20,
        // Small, so that pages of the small demo data take both ways of finding ids.
        matches_first_limit: 40,
        pg_settings: Vec::new(),
        database_wait: brandhub_store::db::DEFAULT_DATABASE_WAIT,
    };
    store_options(&mut options);
    options
}

/// Logs the servers' warnings and errors (a 500's cause, a write lost to another) into the
/// output of the test that started them, which the test harness prints when it fails.
fn keep_server_warnings() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("warn,rustls=error"))
            .with_test_writer()
            .with_ansi(false)
            .try_init()
            .ok();
    });
}

/// Starts a server over the database `database` makes, on a thread and runtime of its own.
/// With `stop`, the server stops when it is told (or its sender is dropped), closes its
/// store and, on PostgreSQL, drops its database; the thread then ends. Without, the server
/// runs until the process ends.
fn launch(
    db: Db,
    database: MakeDatabase,
    configure: fn(&mut Settings),
    stop: Option<tokio::sync::oneshot::Receiver<()>>,
) -> (Fixture, std::thread::JoinHandle<()>) {
    keep_server_warnings();
    let (sender, receiver) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let handle = runtime.handle().clone();
        runtime.block_on(async move {
            let Loaded {
                url,
                dir,
                summary,
                store,
            } = database().await;
            let files = FileStore::open(None, dir.path()).expect("the file store opens");
            let uploads = Uploads {
                files: files.clone(),
                max_upload: MAX_UPLOAD,
                workers: WorkerSettings {
                    job_timeout: std::time::Duration::from_secs(30),
                    ..WorkerSettings::default()
                },
            };
            let mut settings = Settings::new(
                "127.0.0.1:0".parse().expect("an address"),
                Some(TlsSource::SelfSigned {
                    dir: dir.path().join("tls"),
                }),
                uploads,
            );
            settings.metrics_listen = Some("127.0.0.1:0".parse().expect("an address"));
            // Small, so that exports of the small demo data cross chunk boundaries.
            settings.export_chunk = EXPORT_CHUNK;
            // Every test of the binary connects from 127.0.0.1 at once, each with clients of
            // its own: far more than one real client address holds (the cap has tests of its
            // own on servers of their own).
            settings.connections.per_address = 4096;
            configure(&mut settings);
            let running = start(settings, store.clone())
                .await
                .expect("the server starts");
            let fixture = Fixture {
                db,
                base: format!("https://{}", running.address),
                certificate_pem: running.certificate_pem.clone().expect("TLS is on"),
                summary,
                store: store.clone(),
                database_url: url.clone(),
                files,
                metrics_base: format!(
                    "http://{}",
                    running.metrics_address.expect("metrics are on")
                ),
                runtime: handle,
            };
            sender.send(fixture).expect("the test waits");
            let _keep = dir;
            let Some(stop) = stop else {
                running.wait().await.expect("the server runs");
                return;
            };
            let _ = stop.await;
            let _ = running.shutdown(std::time::Duration::from_secs(5)).await;
            store.close().await;
            if db == Db::Postgres {
                let admin_url = postgres_url().expect("a PostgreSQL fixture ran");
                let database = database_name(&url).to_string();
                postgres_admin(
                    &admin_url,
                    &[format!(
                        "DROP DATABASE IF EXISTS \"{database}\" WITH (FORCE)"
                    )],
                )
                .await;
            }
        });
    });
    (receiver.recv().expect("the fixture starts"), thread)
}

/// The demo data at [`SCALE`], loaded once per test binary and backend, which the databases
/// of [`own`] fixtures are copied from.
struct Template {
    /// The SQLite file, or the PostgreSQL database's name.
    source: String,
    summary: DemoSummary,
}

/// The template of `db`, made on first use (on a runtime of its own: callers may be on any).
fn template(db: Db) -> &'static Template {
    static SQLITE: OnceLock<Template> = OnceLock::new();
    static POSTGRES: OnceLock<Template> = OnceLock::new();
    let cell = match db {
        Db::Sqlite => &SQLITE,
        Db::Postgres => &POSTGRES,
    };
    cell.get_or_init(|| {
        std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime")
                .block_on(make_template(db))
        })
        .join()
        .expect("the template is made")
    })
}

async fn make_template(db: Db) -> Template {
    let (url, dir) = fresh_database(db, "template").await;
    let store = Store::connect(&store_options_for(&url, |_| {}))
        .await
        .expect("the template opens");
    store.migrate().await.expect("migrations apply");
    let summary = load_demo(
        &store,
        DemoOptions {
            scale: SCALE,
            ..DemoOptions::default()
        },
    )
    .await
    .expect("the demo loads");
    let source = match db {
        Db::Postgres => {
            store.close().await;
            database_name(&url).to_string()
        }
        Db::Sqlite => {
            // One file, written by nobody after: each fixture's database is a copy of it.
            // Kept under the build's temporary directory, named after the binary and the
            // process; the files earlier runs of the binary left there are removed.
            let templates = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("templates");
            std::fs::create_dir_all(&templates).expect("a directory for templates");
            let binary = binary_name();
            if let Ok(entries) = std::fs::read_dir(&templates) {
                for entry in entries.flatten() {
                    let name = entry.file_name().to_string_lossy().to_string();
                    if name.starts_with(&format!("{binary}-")) {
                        let _ = std::fs::remove_file(entry.path());
                    }
                }
            }
            let file = templates.join(format!("{binary}-{}.db", std::process::id()));
            use sqlx::Connection;
            let mut connection = sqlx::SqliteConnection::connect(&url)
                .await
                .expect("the template opens");
            sqlx::query("VACUUM INTO ?")
                .bind(file.display().to_string())
                .execute(&mut connection)
                .await
                .expect("the template is copied");
            connection.close().await.ok();
            store.close().await;
            file.display().to_string()
        }
    };
    drop(dir);
    Template { source, summary }
}

/// A fixture of one test's own: a server over a copy of the demo data that nothing else
/// writes (see [`own`]). It stops, and its database goes, when it is dropped.
pub struct OwnFixture {
    fixture: Fixture,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::ops::Deref for OwnFixture {
    type Target = Fixture;

    fn deref(&self) -> &Fixture {
        &self.fixture
    }
}

impl Drop for OwnFixture {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A fixture of one test's own, over a copy of the demo data at [`SCALE`] (copied from a
/// template loaded once per binary: a PostgreSQL `CREATE DATABASE … TEMPLATE`, a copy of the
/// SQLite file). For a test that counts, or reads counters, that other tests' writes would
/// move. `name` names its database. `None` for PostgreSQL when no test database is
/// configured (see [`postgres_or_skip`]).
pub fn own(db: Db, name: &str) -> Option<OwnFixture> {
    own_with(db, name, |_| {})
}

/// [`own`] with the server's settings changed by `configure`.
pub fn own_with(db: Db, name: &str, configure: fn(&mut Settings)) -> Option<OwnFixture> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    if db == Db::Postgres && postgres_or_skip().is_none() {
        return None;
    }
    let template = template(db);
    // Two tests of one binary may share a name (in modules of their own): the number tells
    // their databases apart.
    let name = format!("own{}_{name}", NEXT.fetch_add(1, Ordering::Relaxed));
    let database =
        move || -> std::pin::Pin<Box<dyn std::future::Future<Output = Loaded> + Send>> {
            Box::pin(async move {
                let dir = tempfile::tempdir().expect("a temporary directory");
                let url = match db {
                    Db::Sqlite => {
                        let file = dir.path().join("brandhub.db");
                        std::fs::copy(&template.source, &file).expect("the template is copied");
                        format!("sqlite://{}", file.display())
                    }
                    Db::Postgres => {
                        let admin_url = postgres_url().expect("PostgreSQL is configured");
                        // PostgreSQL's names hold 63 bytes.
                        let database: String = fixture_database(&admin_url, &name)
                            .chars()
                            .take(63)
                            .collect();
                        postgres_admin(
                            &admin_url,
                            &[
                                format!("DROP DATABASE IF EXISTS \"{database}\" WITH (FORCE)"),
                                format!(
                                    "CREATE DATABASE \"{database}\" TEMPLATE \"{}\"",
                                    template.source
                                ),
                            ],
                        )
                        .await;
                        with_database(&admin_url, &database)
                    }
                };
                let store = Store::connect(&store_options_for(&url, |_| {}))
                    .await
                    .expect("the database opens");
                store.migrate().await.expect("migrations apply");
                Loaded {
                    url,
                    dir,
                    summary: template.summary.clone(),
                    store,
                }
            })
        };
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let (fixture, thread) = launch(db, Box::new(database), configure, Some(stopped));
    Some(OwnFixture {
        fixture,
        stop: Some(stop),
        thread: Some(thread),
    })
}

static SHARED: OnceLock<Mutex<HashMap<(Db, String), &'static Fixture>>> = OnceLock::new();

/// The PostgreSQL server for a test, or `None` when `BRANDHUB_TEST_DATABASE_URL` is not set:
/// then the test's PostgreSQL variant is skipped, loudly, once per test binary (under
/// `CI=true` it fails instead). A server that is set but unreachable fails the test in any case.
pub fn postgres_or_skip() -> Option<String> {
    static NOTED: std::sync::Once = std::sync::Once::new();
    let url = postgres_url();
    if url.is_none() {
        let binary = binary_name();
        let skip = || {
            brandhub_filestore::testing::skip(
                &format!("the PostgreSQL variants of {binary}"),
                "BRANDHUB_TEST_DATABASE_URL is not set",
            )
        };
        // Under CI every such test fails; elsewhere one notice per binary is enough.
        if brandhub_filestore::testing::in_ci() {
            skip();
        }
        NOTED.call_once(skip);
    }
    url
}

/// The fixture of this name on this database, started on first use and shared after.
/// `None` for PostgreSQL when no test database is configured (see [`postgres_or_skip`]).
pub fn shared(db: Db, name: &str) -> Option<&'static Fixture> {
    if db == Db::Postgres && postgres_or_skip().is_none() {
        return None;
    }
    let map = SHARED.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
    let fixture = map
        .entry((db, name.to_string()))
        .or_insert_with(|| Box::leak(Box::new(start_fixture(db, name, SCALE))));
    Some(*fixture)
}

/// [`shared`] for a fixture whose server `configure` sets up, at `scale`; the name tells the
/// fixtures apart.
pub fn shared_with(
    db: Db,
    name: &str,
    scale: u64,
    configure: fn(&mut Settings),
) -> Option<&'static Fixture> {
    if db == Db::Postgres && postgres_or_skip().is_none() {
        return None;
    }
    let map = SHARED.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
    let fixture = map
        .entry((db, name.to_string()))
        .or_insert_with(|| Box::leak(Box::new(start_fixture_with(db, name, scale, configure))));
    Some(*fixture)
}

/// The demo records in memory, exactly as the fixtures loaded them.
pub fn demo_records() -> &'static Vec<Chunk> {
    static RECORDS: OnceLock<Vec<Chunk>> = OnceLock::new();
    RECORDS.get_or_init(|| {
        generate_all(&DemoOptions {
            scale: SCALE,
            ..DemoOptions::default()
        })
        .0
    })
}

/// Declares each test twice: once on SQLite, once on PostgreSQL (skipped without a server,
/// and failing for want of one under `CI=true`).
#[macro_export]
macro_rules! on_both_backends {
    ($fixture_name:literal; $(async fn $name:ident($fx:ident) $body:block)*) => {
        mod sqlite {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test]
                async fn $name() {
                    let $fx = common::shared(common::Db::Sqlite, $fixture_name).expect("SQLite always runs");
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
                    let Some($fx) = common::shared(common::Db::Postgres, $fixture_name) else { return };
                    $body
                }
            )*
        }
    };
}

/// Declares each test twice, like [`on_both_backends`], each run on a fixture of its own
/// ([`own`]): for tests that count, or read counters, that other tests' writes would move.
#[macro_export]
macro_rules! each_on_own_fixture {
    ($(async fn $name:ident($fx:ident) $body:block)*) => {
        mod sqlite {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test]
                async fn $name() {
                    let own = common::own(common::Db::Sqlite, stringify!($name)).expect("SQLite always runs");
                    let $fx: &common::Fixture = &own;
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
                    let Some(own) = common::own(common::Db::Postgres, stringify!($name)) else { return };
                    let $fx: &common::Fixture = &own;
                    $body
                }
            )*
        }
    };
}

/// A sample's value in Prometheus's text format: the line of `name` with exactly these labels.
pub fn metric_sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let wanted: BTreeMap<&str, &str> = labels.iter().copied().collect();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (series_name, label_text) = match series.split_once('{') {
                Some((n, rest)) => (n, rest.strip_suffix('}')?),
                None => (series, ""),
            };
            if series_name != name {
                return None;
            }
            let found: BTreeMap<&str, &str> = label_text
                .split("\",")
                .filter(|p| !p.is_empty())
                .filter_map(|pair| {
                    let (k, v) = pair.split_once("=\"")?;
                    Some((k, v.trim_end_matches('"')))
                })
                .collect();
            (found == wanted).then(|| value.parse().ok())?
        })
}

pub async fn scrape_metrics(fx: &Fixture) -> String {
    let response = plain_client()
        .get(format!("{}/metrics", fx.metrics_base))
        .send()
        .await
        .expect("the metrics listener answers");
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    response.text().await.unwrap()
}
