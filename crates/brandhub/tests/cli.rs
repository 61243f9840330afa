//! The `brandhub` command as a user runs it: migrate, create users and keys, serve, revoke.

mod common;

use common::process::Brandhub;

/// Runs a command that must succeed; its last line of output (an id or a secret).
fn last_line(brandhub: &Brandhub, args: &[&str]) -> String {
    brandhub
        .run_ok(args)
        .lines()
        .last()
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[tokio::test]
async fn users_and_keys_are_made_used_and_revoked_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let brandhub = Brandhub::new(data);
    assert!(brandhub.run(&["migrate"]).status.success());
    let user = last_line(
        &brandhub,
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
    );
    assert_eq!(user.len(), 32, "the last line is the id: {user}");
    let secret = last_line(
        &brandhub,
        &[
            "key",
            "create",
            "--user",
            "ops@example.test",
            "--name",
            "ci",
        ],
    );
    assert!(secret.starts_with("bhk_") && secret.len() >= 30, "{secret}");
    let narrow = last_line(
        &brandhub,
        &["key", "create", "--user", &user, "--grant", "host:GET"],
    );

    // Keys are stored only as hashes.
    let database = std::fs::read(data.join("brandhub.db")).unwrap();
    let wal = std::fs::read(data.join("brandhub.db-wal")).unwrap_or_default();
    for bytes in [&database, &wal] {
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "the secret is not stored"
        );
    }

    let server = brandhub.serve(&[]);
    let base = server.base.clone();
    let client = brandhub.client();
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
    let revoked = brandhub.run(&["key", "revoke", &key_id]);
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
    let brandhub = Brandhub::new(data);
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
            "There is no apiKey with id",
        ),
        (
            &["--database-url", "mysql://nope", "migrate"],
            "neither sqlite:// nor postgres://",
        ),
    ];
    for (args, expected) in cases {
        let output = brandhub.run(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} should fail");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    last_line(
        &brandhub,
        &[
            "user", "create", "--email", "a@y.test", "--name", "A", "--type", "admin",
        ],
    );
    let again = brandhub.run(&[
        "user", "create", "--email", "A@Y.TEST", "--name", "A", "--type", "admin",
    ]);
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists already"));
    let wide = brandhub.run(&[
        "key",
        "create",
        "--user",
        "a@y.test",
        "--grant",
        "nothing:GET",
    ]);
    assert!(String::from_utf8_lossy(&wide.stderr).contains("unknown resource"));
}

#[test]
fn demo_refuses_a_database_with_data_unless_replacing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let brandhub = Brandhub::new(data);
    let stdout = brandhub.run_ok(&["demo", "--scale", "50"]);
    assert!(
        stdout.contains("admin@demo.brandhub.test : bhk_"),
        "{stdout}"
    );
    let second = brandhub.run(&["demo", "--scale", "50"]);
    assert!(!second.status.success());
    assert!(String::from_utf8_lossy(&second.stderr).contains("not empty"));
    let replaced = brandhub.run_ok(&["demo", "--scale", "60", "--replace"]);
    assert!(replaced.contains("variant     60"));
}
