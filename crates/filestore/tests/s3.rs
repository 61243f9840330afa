//! The S3 backend against a local moto server (`pip install 'moto[server]'`). Skipped, with a
//! line saying so, when `moto_server` is not on PATH.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use brandhub_filestore::FileStore;

const BUCKET: &str = "brandhub-test";

/// A running moto server, killed when dropped.
struct Moto {
    child: Child,
    port: u16,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// One bare HTTP/1.1 request to the server, unsigned (moto does not check signatures):
/// enough to create the bucket and look at it behind the store's back.
fn http(port: u16, method: &str, path: &str) -> std::io::Result<(u16, String)> {
    let mut conn = TcpStream::connect(("127.0.0.1", port))?;
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        conn,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    conn.read_to_string(&mut response)?;
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad response: {response:.200}")))?;
    Ok((status, response))
}

fn start_moto(bin: &PathBuf) -> Moto {
    let port = free_port();
    let child = Command::new(bin)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start moto_server");
    let mut moto = Moto { child, port };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = moto.child.try_wait().expect("moto_server status") {
            panic!("moto_server exited before answering: {status}");
        }
        if http(port, "GET", "/").is_ok() {
            return moto;
        }
        assert!(
            Instant::now() < deadline,
            "moto_server did not answer on port {port} within 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test]
async fn s3_store_streams_in_and_out_and_aborts_cleanly() {
    let Some(bin) = find_on_path("moto_server") else {
        eprintln!(
            "SKIP s3_store_streams_in_and_out_and_aborts_cleanly: moto_server is not on PATH \
             (pip install 'moto[server]')"
        );
        return;
    };
    let moto = start_moto(&bin);
    let (status, response) = http(moto.port, "PUT", &format!("/{BUCKET}")).expect("create bucket");
    assert_eq!(status, 200, "create bucket: {response}");

    let endpoint = format!("http://127.0.0.1:{}", moto.port);
    let data_dir = tempfile::tempdir().expect("tempdir");
    let store = FileStore::open_with_env(
        Some(&format!("s3://{BUCKET}/uploads/")),
        data_dir.path(),
        &[
            ("AWS_ENDPOINT_URL", &endpoint),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_REGION", "us-east-1"),
        ],
    )
    .expect("open");
    assert!(
        store
            .describe()
            .starts_with(&format!("s3://{BUCKET}/uploads")),
        "{}",
        store.describe()
    );
    assert!(
        !data_dir.path().join("files").exists(),
        "no local directory"
    );

    common::exercise(&store).await;

    // Objects sit under the prefix, and only the completed ones are there.
    let keys = |moto: &Moto| {
        let (status, listing) = http(moto.port, "GET", &format!("/{BUCKET}")).expect("list");
        assert_eq!(status, 200, "{listing}");
        between(&listing, "<Key>", "</Key>")
    };
    assert_eq!(
        keys(&moto),
        [
            "uploads/0123456789abcdef0123456789abcdef",
            "uploads/empty",
            "uploads/exact"
        ]
    );

    // No aborted multipart upload is left in the bucket, nor one whose request was dropped.
    let uploads = |moto: &Moto| {
        let (status, listing) =
            http(moto.port, "GET", &format!("/{BUCKET}?uploads")).expect("list");
        assert_eq!(status, 200, "{listing}");
        between(&listing, "<Key>", "</Key>")
    };
    assert_eq!(uploads(&moto), Vec::<String>::new());
    common::cancel_an_upload(&store, "cancelled").await;
    assert_eq!(
        uploads(&moto),
        ["uploads/cancelled"],
        "under way when dropped"
    );
    assert!(
        common::eventually(|| uploads(&moto).is_empty()).await,
        "{:?}",
        uploads(&moto)
    );
    common::assert_missing(&store, "cancelled").await;
    assert_eq!(keys(&moto).len(), 3);
    drop(moto);
}

/// The texts between each `open` and the next `close`, in order.
fn between(text: &str, open: &str, close: &str) -> Vec<String> {
    text.split(open)
        .skip(1)
        .filter_map(|s| s.split_once(close).map(|(inner, _)| inner.to_owned()))
        .collect()
}
