//! The `brandhub` command as a user runs it: migrate, create users and keys, serve, revoke.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};

fn brandhub(data_dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_brandhub"))
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--log", "warn"])
        .args(args)
        .output()
        .expect("the binary runs")
}

fn last_line(output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout.lines().last().unwrap_or_default().trim().to_string()
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `brandhub serve` on a free port; returns the process and its base URL.
fn serve(data_dir: &std::path::Path) -> (Server, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_brandhub"))
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--log", "warn", "serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("the server starts");
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut lines = BufReader::new(stdout).lines();
    let base = loop {
        let line = lines
            .next()
            .expect("the server prints its address")
            .expect("a line");
        if let Some(rest) = line.strip_prefix("brandhub serves ") {
            break rest.split("/api").next().unwrap().to_string();
        }
    };
    (Server(child), base)
}

fn client(data_dir: &std::path::Path) -> reqwest::Client {
    common::client_trusting(
        &std::fs::read_to_string(data_dir.join("tls/cert.pem"))
            .expect("a certificate was generated"),
    )
}

#[tokio::test]
async fn users_and_keys_are_made_used_and_revoked_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    assert!(brandhub(data, &["migrate"]).status.success());
    let user = last_line(&brandhub(
        data,
        &[
            "user",
            "create",
            "--email",
            "Ops@Example.test",
            "--name",
            "Ops Ärmel",
            "--type",
            "admin",
        ],
    ));
    assert_eq!(user.len(), 32, "the last line is the id: {user}");
    let secret = last_line(&brandhub(
        data,
        &[
            "key",
            "create",
            "--user",
            "ops@example.test",
            "--name",
            "ci",
        ],
    ));
    assert!(secret.starts_with("bhk_") && secret.len() >= 30, "{secret}");
    let narrow = last_line(&brandhub(
        data,
        &["key", "create", "--user", &user, "--grant", "host:GET"],
    ));

    // Keys are stored only as hashes.
    let database = std::fs::read(data.join("brandhub.db")).unwrap();
    let wal = std::fs::read(data.join("brandhub.db-wal")).unwrap_or_default();
    for bytes in [&database, &wal] {
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "the secret is not stored"
        );
    }

    let (server, base) = serve(data);
    let client = client(data);
    let ok = client
        .get(format!("{base}/api/user"))
        .basic_auth("OPS@example.test", Some(&secret))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let body: serde_json::Value = ok.json().await.unwrap();
    assert_eq!(body["response"]["user"][0]["name"], "Ops Ärmel");
    let forbidden = client
        .get(format!("{base}/api/user"))
        .basic_auth(&user, Some(&narrow))
        .send()
        .await
        .unwrap();
    assert_eq!(forbidden.status(), 403);
    let keys = client
        .get(format!(
            "{base}/api/apiKey?fields=name,prefix,grants,revoked"
        ))
        .basic_auth(&user, Some(&secret))
        .send()
        .await
        .unwrap();
    let keys: serde_json::Value = keys.json().await.unwrap();
    let listed = keys["response"]["apiKey"].as_array().unwrap();
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|k| k.get("secretHash").is_none()));
    let ci = listed.iter().find(|k| k["name"] == "ci").unwrap();
    assert_eq!(ci["prefix"], &secret[..8]);
    assert_eq!(ci["grants"], serde_json::json!(["*:*"]));

    let key_id = {
        let all = client
            .get(format!("{base}/api/apiKey?name=ci&fields=id"))
            .basic_auth(&user, Some(&secret))
            .send()
            .await
            .unwrap();
        let all: serde_json::Value = all.json().await.unwrap();
        all["response"]["apiKey"][0]["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let revoked = brandhub(data, &["key", "revoke", &key_id]);
    assert!(revoked.status.success());
    let after = client
        .get(format!("{base}/api/user"))
        .basic_auth(&user, Some(&secret))
        .send()
        .await
        .unwrap();
    assert_eq!(
        after.status(),
        401,
        "a revoked key fails on the next request, even in a running server"
    );
    drop(server);
}

#[test]
fn bad_arguments_get_clear_messages() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "user", "create", "--email", "x@y.test", "--name", "X", "--type", "boss",
            ],
            "is not one of admin",
        ),
        (
            &[
                "user",
                "create",
                "--email",
                "not-an-email",
                "--name",
                "X",
                "--type",
                "admin",
            ],
            "email",
        ),
        (
            &[
                "user", "create", "--email", "c@y.test", "--name", "C", "--type", "company",
            ],
            "needs a company",
        ),
        (
            &[
                "user",
                "create",
                "--email",
                "c@y.test",
                "--name",
                "C",
                "--type",
                "company",
                "--company",
                "0123456789ABCDEF0123456789ABCDEF",
            ],
            "no company has id",
        ),
        (
            &["key", "create", "--user", "nobody@y.test"],
            "No user has email or id",
        ),
        (
            &["key", "revoke", "0123456789ABCDEF0123456789ABCDEF"],
            "No API key has id",
        ),
        (
            &["--database-url", "mysql://nope", "migrate"],
            "neither sqlite:// nor postgres://",
        ),
    ];
    for (args, expected) in cases {
        let output = brandhub(data, args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} should fail");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    last_line(&brandhub(
        data,
        &[
            "user", "create", "--email", "a@y.test", "--name", "A", "--type", "admin",
        ],
    ));
    let again = brandhub(
        data,
        &[
            "user", "create", "--email", "A@Y.TEST", "--name", "A", "--type", "admin",
        ],
    );
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists already"));
    let wide = brandhub(
        data,
        &[
            "key",
            "create",
            "--user",
            "a@y.test",
            "--grant",
            "nothing:GET",
        ],
    );
    assert!(String::from_utf8_lossy(&wide.stderr).contains("unknown resource"));
}

#[test]
fn demo_refuses_a_database_with_data_unless_replacing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let first = brandhub(data, &["demo", "--scale", "50"]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let stdout = String::from_utf8_lossy(&first.stdout);
    assert!(
        stdout.contains("admin@demo.brandhub.test : bhk_"),
        "{stdout}"
    );
    let second = brandhub(data, &["demo", "--scale", "50"]);
    assert!(!second.status.success());
    assert!(String::from_utf8_lossy(&second.stderr).contains("not empty"));
    let replaced = brandhub(data, &["demo", "--scale", "60", "--replace"]);
    assert!(
        replaced.status.success(),
        "{}",
        String::from_utf8_lossy(&replaced.stderr)
    );
    assert!(String::from_utf8_lossy(&replaced.stdout).contains("variant     60"));
}
