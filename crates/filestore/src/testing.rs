//! A local S3-compatible server for tests (feature `testing`): moto (`pip install
//! 'moto[server]'`), started on a free port and killed when dropped. Shared by this crate's S3
//! tests and the server's upload tests, so both reach S3 the same way; and the one rule for a
//! test whose server is missing ([`skip`]), shared by every crate's tests.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running moto server, killed when dropped.
pub struct Moto {
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

/// Whether the tests run in CI: `CI` is set to anything but empty, `0` or `false` (as CI
/// services and `.ci/run` set it). There a missing test server fails the run.
pub fn in_ci() -> bool {
    std::env::var("CI")
        .map(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "0" | "false"))
        .unwrap_or(false)
}

/// A test (or a variant of one) that cannot run here because `reason`. Under CI that is a
/// failure: this panics. Elsewhere it prints `SKIPPED <test>: <reason>` straight to the
/// terminal, past the test harness's capture of passing tests' output, so a skipped variant is
/// never mistaken for a passing one; the caller then returns.
pub fn skip(test: &str, reason: &str) {
    if in_ci() {
        panic!("{test} cannot run: {reason} (under CI=true a missing test server is an error)");
    }
    use std::io::Write as _;
    // `eprintln!` would be captured (and hidden) by the harness for a test that returns.
    let _ = writeln!(
        std::io::stderr().lock(),
        "SKIPPED {test}: {reason} (it passes without testing anything; CI=true makes this an error)"
    );
}

impl Moto {
    /// Starts `moto_server` on a free port and waits until it answers; `None` when it is not
    /// installed, after [`skip`] said so (under CI that fails the test instead).
    pub fn start(test: &str) -> Option<Moto> {
        let Some(bin) = find_on_path("moto_server") else {
            skip(
                test,
                "moto_server is not on PATH (pip install 'moto[server]')",
            );
            return None;
        };
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
            if moto.http("GET", "/").is_ok() {
                return Some(moto);
            }
            assert!(
                Instant::now() < deadline,
                "moto_server did not answer on port {port} within 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The server's address, as `AWS_ENDPOINT_URL` takes it.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The `AWS_*` settings that point an S3 client at this server.
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
            ("AWS_REGION", "us-east-1".into()),
        ]
    }

    /// Creates a bucket.
    pub fn create_bucket(&self, bucket: &str) {
        let (status, response) = self
            .http("PUT", &format!("/{bucket}"))
            .expect("create bucket");
        assert_eq!(status, 200, "create bucket: {response}");
    }

    /// The keys of a bucket's objects, in order.
    pub fn keys(&self, bucket: &str) -> Vec<String> {
        let (status, listing) = self.http("GET", &format!("/{bucket}")).expect("list");
        assert_eq!(status, 200, "{listing}");
        between(&listing, "<Key>", "</Key>")
    }

    /// The keys of a bucket's multipart uploads still under way (or abandoned).
    pub fn open_uploads(&self, bucket: &str) -> Vec<String> {
        let (status, listing) = self
            .http("GET", &format!("/{bucket}?uploads"))
            .expect("list");
        assert_eq!(status, 200, "{listing}");
        between(&listing, "<Key>", "</Key>")
    }

    /// One bare HTTP/1.1 request, unsigned (moto does not check signatures): enough to create
    /// a bucket and look at it behind the store's back.
    fn http(&self, method: &str, path: &str) -> std::io::Result<(u16, String)> {
        let port = self.port;
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
}

/// The texts between each `open` and the next `close`, in order.
fn between(text: &str, open: &str, close: &str) -> Vec<String> {
    text.split(open)
        .skip(1)
        .filter_map(|s| s.split_once(close).map(|(inner, _)| inner.to_owned()))
        .collect()
}
