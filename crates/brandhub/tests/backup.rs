//! `brandhub backup` and `brandhub restore` on the embedded SQLite database: a backup taken from
//! a running server while API writes and uploads stream in holds every write answered before
//! it began, as one consistent view, with the bytes of every file its database refers to; it
//! restores into an empty data dir, where a server serves it. A data dir holding a database or
//! files, and a foreign or damaged backup, are refused with the reason and nothing written; a
//! PostgreSQL database is sent to pg_dump, a bucket of files to the bucket's tools.

mod common;

use common::process::{Brandhub, Server};
use common::{BOUNDARY, multipart};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The API as the demo admin, on one server.
#[derive(Clone)]
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

    async fn send(&self, request: reqwest::RequestBuilder) -> common::Response {
        let response = request
            .basic_auth(&self.email, Some(&self.key))
            .send()
            .await
            .expect("the server answers");
        common::Response::read(response).await
    }

    async fn get(&self, path: &str) -> common::Response {
        self.send(self.client.get(format!("{}{path}", self.base)))
            .await
    }

    /// Writes JSON; returns the written record, asserting `status`.
    async fn write(&self, method: reqwest::Method, path: &str, body: Value, status: u16) -> Value {
        let response = self
            .send(
                self.client
                    .request(method, format!("{}{path}", self.base))
                    .json(&body),
            )
            .await;
        assert_eq!(
            response.status,
            status,
            "{path}: {}",
            String::from_utf8_lossy(&response.body)
        );
        response.records("company").remove(0)
    }

    /// Uploads a product file for `brand`; returns the new file's id.
    async fn upload(&self, brand: &str, file_name: &str, bytes: &[u8]) -> String {
        let part = format!("product,{brand}");
        let request = self
            .client
            .post(format!("{}/api/file", self.base))
            .header(
                "content-type",
                format!("multipart/form-data; boundary={BOUNDARY}"),
            )
            .body(multipart(&[(&part, Some(file_name), bytes)]));
        let response = self.send(request).await;
        assert_eq!(
            response.status,
            201,
            "upload: {}",
            String::from_utf8_lossy(&response.body)
        );
        response.ids("file").remove(0)
    }
}

/// A product file of one product, different for each `n` (codes `BKUP-<n>`).
fn product_csv(n: usize) -> Vec<u8> {
    format!(
        "Product Code;Title;Barcode;Colour;Size;RRP;Sequence\nBKUP-{n:05};Backed up {n};29{n:011};Navy;M;12.5;1\n"
    )
    .into_bytes()
}

/// The writes a stream had answered, with when each answer came.
#[derive(Debug, Default)]
struct Answered<T> {
    writes: Vec<(Instant, T)>,
}

impl<T: Clone> Answered<T> {
    fn before(&self, moment: Instant) -> Vec<T> {
        self.writes
            .iter()
            .filter(|(at, _)| *at < moment)
            .map(|(_, write)| write.clone())
            .collect()
    }

    fn between(&self, from: Instant, to: Instant) -> usize {
        self.writes
            .iter()
            .filter(|(at, _)| *at > from && *at < to)
            .count()
    }
}

/// Writers that create companies one after another (codes `BK<writer>-<n>`), until `stop`.
async fn create_companies(
    api: Api,
    writer: usize,
    stop: Arc<AtomicBool>,
) -> Answered<(String, String, String)> {
    let mut answered = Answered::default();
    for n in 0.. {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let code = format!("BK{writer}-{n:05}");
        let name = format!("Backed up {writer}/{n} · Ünïcode");
        let record = api
            .write(
                reqwest::Method::POST,
                "/api/company",
                json!({"code": code, "name": name, "detail": {"country": "GB"}}),
                201,
            )
            .await;
        let id = record["id"].as_str().expect("an id").to_string();
        answered.writes.push((Instant::now(), (id, code, name)));
    }
    answered
}

/// A writer that renames one company again and again (`rev <n>`), until `stop`.
async fn rename_company(api: Api, id: String, stop: Arc<AtomicBool>) -> Answered<usize> {
    let mut answered = Answered::default();
    for n in 1.. {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        api.write(
            reqwest::Method::PATCH,
            &format!("/api/company/{id}"),
            json!({"name": format!("rev {n}")}),
            200,
        )
        .await;
        answered.writes.push((Instant::now(), n));
    }
    answered
}

/// A writer that uploads product files one after another, until `stop`.
async fn upload_files(
    api: Api,
    brand: String,
    first: usize,
    stop: Arc<AtomicBool>,
) -> Answered<(String, Vec<u8>)> {
    let mut answered = Answered::default();
    for n in first.. {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let bytes = product_csv(n);
        let id = api.upload(&brand, &format!("backup-{n}.csv"), &bytes).await;
        answered.writes.push((Instant::now(), (id, bytes)));
    }
    answered
}

/// Runs a command of the binary off the async threads.
async fn run(brandhub: &Brandhub, args: &[&str]) -> std::process::Output {
    let brandhub = brandhub.clone();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        brandhub.run(&args)
    })
    .await
    .unwrap()
}

fn text(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The numbers `n` of the companies `BK<writer>-<n>` a server has, in order.
async fn company_numbers(api: &Api, writer: usize) -> Vec<usize> {
    let mut numbers = Vec::new();
    for page in 1.. {
        let response = api
            .get(&format!(
                "/api/company?code=BK{writer}-@&fields=code&order_by=code&pageSize=1000&page={page}"
            ))
            .await;
        assert_eq!(response.status, 200);
        let records = response.records("company");
        if records.is_empty() {
            break;
        }
        numbers.extend(records.iter().map(|r| {
            r["code"].as_str().unwrap()[format!("BK{writer}-").len()..]
                .parse::<usize>()
                .unwrap()
        }));
    }
    numbers
}

/// The one row `PRAGMA integrity_check` answers for a database file.
async fn integrity_check(database: &Path) -> Vec<String> {
    use sqlx::Connection;
    let url = format!("sqlite://{}?mode=ro", database.display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
    let rows: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    rows
}

/// What the store's own schema check (the one `/readyz` runs) finds missing, without
/// migrating.
async fn schema_gaps(database: &Path) -> Vec<String> {
    let store = brandhub_store::Store::connect(&brandhub_store::StoreOptions {
        url: format!("sqlite://{}", database.display()),
        max_connections: 1,
        page_cache_bytes: 0,
        matches_first_limit: 1000,
        pg_settings: Vec::new(),
        database_wait: brandhub_store::db::DEFAULT_DATABASE_WAIT,
    })
    .await
    .unwrap();
    let gaps = store.schema_gaps().await.unwrap();
    store.close().await;
    gaps
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_writes_stream_in_restores_every_answered_write_and_file() {
    let source = tempfile::tempdir().unwrap();
    let brandhub = Brandhub::new(source.path());
    let users = brandhub.demo(400);
    let server = brandhub.serve(&[]);
    let api = Api::new(&brandhub, &server, &users);
    let brand = api
        .get("/api/brand?fields=id&order_by=id&pageSize=1")
        .await
        .ids("brand")[0]
        .clone();
    let renamed = api
        .write(
            reqwest::Method::POST,
            "/api/company",
            json!({"code": "BK-RENAMED", "name": "rev 0"}),
            201,
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    // A file answered well before the backup, then a stream of them.
    let first_bytes = product_csv(0);
    let first_file = api.upload(&brand, "backup-0.csv", &first_bytes).await;

    let stop = Arc::new(AtomicBool::new(false));
    let creators: Vec<_> = (0..2)
        .map(|writer| tokio::spawn(create_companies(api.clone(), writer, stop.clone())))
        .collect();
    let renamer = tokio::spawn(rename_company(api.clone(), renamed.clone(), stop.clone()));
    let uploader = tokio::spawn(upload_files(api.clone(), brand.clone(), 1, stop.clone()));
    // The stream runs for a while before the backup begins.
    let warm = Instant::now();
    while company_numbers(&api, 0).await.len() < 20 {
        assert!(
            warm.elapsed() < Duration::from_secs(60),
            "the writes do not go on"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let backups = tempfile::tempdir().unwrap();
    let backup = backups.path().join("backup.zip");
    let began = Instant::now();
    let output = run(&brandhub, &["backup", backup.to_str().unwrap()]).await;
    let ended = Instant::now();
    assert!(output.status.success(), "{}", text(&output));
    println!("{}", text(&output).trim());
    // The stream goes on a little after it, then stops.
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let mut created = Vec::new();
    for creator in creators {
        created.push(creator.await.unwrap());
    }
    let renames = renamer.await.unwrap();
    let uploads = uploader.await.unwrap();
    let during = created
        .iter()
        .map(|c| c.between(began, ended))
        .sum::<usize>()
        + renames.between(began, ended)
        + uploads.between(began, ended);
    println!(
        "writes answered while the backup ran ({} ms): {during}",
        (ended - began).as_millis()
    );
    assert!(during > 0, "no write was answered while the backup ran");
    drop(server);

    let restored = tempfile::tempdir().unwrap();
    let target = Brandhub::new(restored.path());
    let output = run(&target, &["restore", backup.to_str().unwrap()]).await;
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        text(&output).contains("restored the database"),
        "{}",
        text(&output)
    );
    let database = restored.path().join("brandhub.db");
    assert_eq!(integrity_check(&database).await, ["ok"]);
    assert_eq!(schema_gaps(&database).await, Vec::<String>::new());

    let server = target.serve(&[]);
    let api = Api::new(&target, &server, &users);
    let ready = api.get("/readyz").await;
    assert_eq!(
        (ready.status, String::from_utf8_lossy(&ready.body).trim()),
        (200, "ready")
    );

    // Each creator's companies are a prefix of what it wrote (one view, no write half there),
    // holding at least every one answered before the backup began, with its values.
    for (writer, answered) in created.iter().enumerate() {
        let before = answered.before(began);
        let numbers = company_numbers(&api, writer).await;
        assert_eq!(
            numbers,
            (0..numbers.len()).collect::<Vec<_>>(),
            "writer {writer}"
        );
        assert!(
            numbers.len() >= before.len() && numbers.len() <= answered.writes.len(),
            "writer {writer}: {} restored, {} answered before the backup, {} in all",
            numbers.len(),
            before.len(),
            answered.writes.len()
        );
        for (id, code, name) in before {
            let response = api
                .get(&format!("/api/company/{id}?fields=code,name,detail"))
                .await;
            assert_eq!(response.status, 200, "{code}");
            let record = response.records("company").remove(0);
            assert_eq!(
                (
                    &record["code"],
                    &record["name"],
                    &record["detail"]["country"]
                ),
                (&json!(code), &json!(name), &json!("GB"))
            );
        }
    }
    let last_rename = renames.before(began).last().copied().unwrap_or(0);
    let response = api
        .get(&format!("/api/company/{renamed}?fields=name"))
        .await;
    let name = response.records("company")[0]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let revision: usize = name.strip_prefix("rev ").unwrap().parse().unwrap();
    assert!(
        revision >= last_rename && revision <= renames.writes.len(),
        "restored {name}, answered rev {last_rename} before the backup"
    );

    // Every file answered before the backup is there, and every file the restored database
    // has is served with its bytes.
    let mut files = vec![(first_file.clone(), first_bytes)];
    files.extend(uploads.writes.iter().map(|(_, file)| file.clone()));
    let answered_before: Vec<String> = std::iter::once(first_file)
        .chain(uploads.before(began).into_iter().map(|(id, _)| id))
        .collect();
    let mut served = 0;
    for (id, bytes) in &files {
        let record = api.get(&format!("/api/file/{id}?fields=id")).await;
        if record.status == 404 {
            assert!(
                !answered_before.contains(id),
                "file {id} was answered before the backup"
            );
            continue;
        }
        assert_eq!(record.status, 200);
        let content = api.get(&format!("/api/file/{id}/content")).await;
        assert_eq!(
            content.status,
            200,
            "{id}: {}",
            String::from_utf8_lossy(&content.body)
        );
        assert_eq!(&content.body, bytes, "{id}");
        served += 1;
    }
    assert!(served >= answered_before.len(), "{served} files served");
}

/// A small data dir with the demo data and one uploaded file, and a backup of it (taken
/// without a server).
struct Backed {
    source: tempfile::TempDir,
    backup: PathBuf,
}

fn backed_up() -> Backed {
    let source = tempfile::tempdir().unwrap();
    let brandhub = Brandhub::new(source.path());
    brandhub.demo(20);
    std::fs::create_dir_all(source.path().join("files")).unwrap();
    std::fs::write(
        source
            .path()
            .join("files")
            .join("0123456789ABCDEF0123456789ABCDEF"),
        b"the bytes of a file",
    )
    .unwrap();
    let backup = source.path().join("backup.zip");
    let output = brandhub.run(&["backup", backup.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output));
    // It holds password and key hashes: its owner's only.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&backup).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
    }
    Backed { source, backup }
}

fn refused(brandhub: &Brandhub, args: &[&str], says: &str) -> String {
    let output = brandhub.run(args);
    let said = text(&output);
    assert!(!output.status.success(), "{args:?} was not refused: {said}");
    assert!(said.contains(says), "{args:?}: {said}");
    said
}

/// The names in a directory, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn restore_refuses_a_data_dir_holding_a_database_or_files_and_backup_never_overwrites() {
    let Backed { source, backup } = backed_up();
    let path = backup.to_str().unwrap();

    // The data dir the backup came from holds a database.
    let database = source.path().join("brandhub.db");
    let before = std::fs::read(&database).unwrap();
    let said = refused(
        &Brandhub::new(source.path()),
        &["restore", path],
        "empty data dir",
    );
    assert!(said.contains("brandhub.db exists"), "{said}");
    assert_eq!(std::fs::read(&database).unwrap(), before);

    // A data dir holding uploaded files only.
    let files_only = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(files_only.path().join("files")).unwrap();
    std::fs::write(files_only.path().join("files/ABC"), b"kept").unwrap();
    let said = refused(
        &Brandhub::new(files_only.path()),
        &["restore", path],
        "holds uploaded files",
    );
    assert!(said.contains("empty data dir"), "{said}");
    assert_eq!(listing(files_only.path()), ["files"]);
    assert_eq!(listing(&files_only.path().join("files")), ["ABC"]);

    // A backup is never written over another file.
    refused(
        &Brandhub::new(source.path()),
        &["backup", path],
        "exists already",
    );

    // A data dir with an empty store and a certificate is empty enough.
    let fresh = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(fresh.path().join("files")).unwrap();
    std::fs::create_dir_all(fresh.path().join("tls")).unwrap();
    let target = Brandhub::new(fresh.path());
    let said = target.run_ok(&["restore", path]);
    assert!(said.contains("and 1 uploaded files"), "{said}");
    assert_eq!(
        std::fs::read(fresh.path().join("files/0123456789ABCDEF0123456789ABCDEF")).unwrap(),
        b"the bytes of a file"
    );
    // Restored once, it refuses a second time.
    refused(&target, &["restore", path], "brandhub.db exists");
}

/// A copy of the archive at `from` with its entries changed by `change` (name, bytes → kept
/// bytes, or none to leave the entry out), and `extra` entries added.
fn rewritten(
    from: &Path,
    to: &Path,
    change: impl Fn(&str, Vec<u8>) -> Option<Vec<u8>>,
    extra: &[(&str, &[u8])],
) {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(from).unwrap()).unwrap();
    let mut writer = zip::ZipWriter::new(std::fs::File::create(to).unwrap());
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).unwrap();
        let name = entry.name().unwrap().to_string();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        if let Some(bytes) = change(&name, bytes) {
            writer
                .start_file(name, zip::write::SimpleFileOptions::default())
                .unwrap();
            writer.write_all(&bytes).unwrap();
        }
    }
    for (name, bytes) in extra {
        writer
            .start_file(*name, zip::write::SimpleFileOptions::default())
            .unwrap();
        writer.write_all(bytes).unwrap();
    }
    writer.finish().unwrap();
}

#[test]
fn foreign_and_damaged_backups_are_refused_and_nothing_is_restored() {
    let Backed { source, backup } = backed_up();
    let dir = source.path();
    let target_dir = tempfile::tempdir().unwrap();
    let target = Brandhub::new(target_dir.path());
    let restore_refused = |file: &Path, says: &str| {
        let said = refused(&target, &["restore", file.to_str().unwrap()], says);
        assert!(
            listing(target_dir.path()).iter().all(|n| n == "files"),
            "a refused restore left {:?}",
            listing(target_dir.path())
        );
        assert!(listing(&target_dir.path().join("files")).is_empty());
        said
    };

    // Not a zip archive at all, and one cut short.
    let text_file = dir.join("notes.txt");
    std::fs::write(&text_file, "not a backup").unwrap();
    restore_refused(&text_file, "is not a brandhub backup: it is no zip archive");
    let bytes = std::fs::read(&backup).unwrap();
    let cut = dir.join("cut.zip");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    restore_refused(&cut, "is not a brandhub backup");

    // A zip archive of something else (a spreadsheet).
    let sheet = dir.join("sheet.zip");
    let mut workbook = rust_xlsxwriter::Workbook::new();
    workbook.add_worksheet().write(0, 0, "hello").unwrap();
    workbook.save(&sheet).unwrap();
    restore_refused(&sheet, "it has no brandhub-backup.json");

    // A manifest of another format, and of a newer version.
    let foreign = dir.join("foreign.zip");
    rewritten(
        &backup,
        &foreign,
        |name, bytes| {
            Some(if name == "brandhub-backup.json" {
                br#"{"format": "other"}"#.to_vec()
            } else {
                bytes
            })
        },
        &[],
    );
    restore_refused(&foreign, "does not say \"format\": \"brandhub-backup\"");
    let newer = dir.join("newer.zip");
    rewritten(
        &backup,
        &newer,
        |name, bytes| {
            if name != "brandhub-backup.json" {
                return Some(bytes);
            }
            let mut manifest: Value = serde_json::from_slice(&bytes).unwrap();
            manifest["formatVersion"] = 2.into();
            Some(manifest.to_string().into_bytes())
        },
        &[],
    );
    restore_refused(&newer, "format version 2");

    // An entry no backup holds, a file changed or left out, a database swapped for another.
    let extra = dir.join("extra.zip");
    rewritten(
        &backup,
        &extra,
        |_, bytes| Some(bytes),
        &[("files/../../escaped", b"x")],
    );
    restore_refused(
        &extra,
        "it holds \"files/../../escaped\", which no backup holds",
    );
    let changed = dir.join("changed.zip");
    rewritten(
        &backup,
        &changed,
        |name, bytes| {
            Some(if name.starts_with("files/") {
                b"x".to_vec()
            } else {
                bytes
            })
        },
        &[],
    );
    restore_refused(&changed, "is damaged or incomplete");
    let missing = dir.join("missing.zip");
    rewritten(
        &backup,
        &missing,
        |name, bytes| (!name.starts_with("files/")).then_some(bytes),
        &[],
    );
    restore_refused(
        &missing,
        "it holds 0 uploaded files of 0 bytes, its manifest says 1",
    );
    let swapped = dir.join("swapped.zip");
    rewritten(
        &backup,
        &swapped,
        |name, mut bytes| {
            if name == "database/brandhub.db" {
                // The same size, the pages past the first overwritten.
                bytes[4096..].fill(0);
            }
            Some(bytes)
        },
        &[],
    );
    let said = restore_refused(&swapped, "is damaged");
    assert!(
        !said.contains("damaged or incomplete"),
        "the directory is whole: {said}"
    );

    // A byte of the database's compressed bytes changed: its checksum (or inflating) fails.
    let mut archive = zip::ZipArchive::new(std::fs::File::open(&backup).unwrap()).unwrap();
    let entry = archive.by_name("database/brandhub.db").unwrap();
    let middle = (entry.data_start().unwrap() + entry.compressed_size() / 2) as usize;
    drop(entry);
    let mut flipped = bytes.clone();
    flipped[middle] ^= 0x55;
    let flipped_file = dir.join("flipped.zip");
    std::fs::write(&flipped_file, flipped).unwrap();
    restore_refused(&flipped_file, "is damaged");

    // The genuine backup still restores there.
    target.run_ok(&["restore", backup.to_str().unwrap()]);
}

#[test]
fn a_postgresql_database_is_backed_up_with_pg_dump_and_pg_restore() {
    let dir = tempfile::tempdir().unwrap();
    // No server is needed: the commands refuse before connecting.
    let brandhub = Brandhub::on(dir.path(), "postgres://brandhub@127.0.0.1:9/brandhub");
    let backup = dir.path().join("backup.zip");
    let said = refused(&brandhub, &["backup", backup.to_str().unwrap()], "pg_dump");
    assert!(said.contains("pg_restore"), "{said}");
    let files = dir.path().join("files");
    assert!(
        said.contains(&format!("the directory {}", files.display())),
        "{said}"
    );
    assert!(!backup.exists());
    std::fs::write(&backup, b"whatever").unwrap();
    let said = refused(
        &brandhub,
        &["restore", backup.to_str().unwrap()],
        "pg_restore",
    );
    assert!(said.contains("is PostgreSQL"), "{said}");
    assert_eq!(listing(dir.path()), ["backup.zip"]);
}

#[test]
fn with_files_in_a_bucket_the_backup_holds_the_database_and_says_so() {
    let source = tempfile::tempdir().unwrap();
    let mut brandhub = Brandhub::new(source.path());
    brandhub.demo(20);
    // The bucket is never contacted: its files are not copied.
    brandhub.env.push((
        "BRANDHUB_FILE_STORE".to_string(),
        "s3://brandhub-uploads/files".to_string(),
    ));
    let backup = source.path().join("backup.zip");
    let output = brandhub.run(&["backup", backup.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        text(&output)
            .contains("the uploaded files are in s3://brandhub-uploads/files, not in this backup"),
        "{}",
        text(&output)
    );
    let mut archive = zip::ZipArchive::new(std::fs::File::open(&backup).unwrap()).unwrap();
    let mut manifest = String::new();
    archive
        .by_name("brandhub-backup.json")
        .unwrap()
        .read_to_string(&mut manifest)
        .unwrap();
    let manifest: Value = serde_json::from_str(&manifest).unwrap();
    assert_eq!(
        manifest["files"],
        json!({"count": 0, "bytes": 0, "elsewhere": "s3://brandhub-uploads/files"})
    );
    let tables: BTreeMap<String, u64> =
        serde_json::from_value(manifest["database"]["tables"].clone()).unwrap();
    assert!(tables["brand"] > 0 && tables["company"] > 0, "{tables:?}");

    let target = tempfile::tempdir().unwrap();
    let output = Brandhub::new(target.path()).run(&["restore", backup.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        text(&output).contains("they were in s3://brandhub-uploads/files"),
        "{}",
        text(&output)
    );
}
