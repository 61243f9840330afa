//! Sign-in for people (docs/API.md, "Sessions and invitations"): passwords, session keys used as Basic authentication,
//! signing out, idle expiry (on a store with a manual clock), invitations that set a
//! password once, and failed sign-ins counted by the failed-authentication limiter.

mod common;

use brandhub::demo_load::demo_password;
use brandhub_server::ratelimit::Limit;
use brandhub_server::tls::TlsSource;
use brandhub_server::{Settings, start};
use brandhub_store::accounts::sessions::SESSION_IDLE_MILLIS;
use brandhub_store::{Clock, Store, StoreOptions, Timing};
use serde_json::{Value, json};
use std::time::Duration;

/// A request with optional Basic credentials and JSON body.
async fn call(
    fx: &common::Fixture,
    method: reqwest::Method,
    path: &str,
    auth: Option<(&str, &str)>,
    body: Option<Value>,
) -> common::Response {
    let who = auth.map_or(common::As::Nobody, |(user, key)| common::As::Key(user, key));
    common::send(fx, &fx.base, method, path, who, &[], body.as_ref()).await
}

async fn sign_in(fx: &common::Fixture, email: &str, password: &str) -> common::Response {
    call(
        fx,
        reqwest::Method::POST,
        "/api/session",
        None,
        Some(json!({"email": email, "password": password})),
    )
    .await
}

on_both_backends! { "sessions";

async fn demo_users_sign_in_use_the_session_key_and_sign_out(fx) {
    for user_type in ["admin", "sponsor", "company", "host", "warehouse"] {
        let credential = fx.credential(user_type);
        let signed = sign_in(fx, &credential.email.to_uppercase(), &demo_password(credential.user_type)).await;
        assert_eq!(signed.status, 201, "{}", String::from_utf8_lossy(&signed.body));
        let answer = signed.json();
        let key = answer["key"].as_str().unwrap().to_string();
        assert!(key.starts_with("bhs_") && key.len() >= 30, "{key}");
        assert_eq!(answer["type"], user_type);
        assert_eq!(answer["idleSeconds"], 43200);
        let me = call(fx, reqwest::Method::GET, "/api/session", Some((&credential.email, &key)), None).await;
        assert_eq!(me.status, 200);
        assert_eq!(me.json()["session"], true);
        assert_eq!(me.json()["user"], credential.user_id.as_str());
        // The session sees what the user's own key sees.
        let with_key = call(fx, reqwest::Method::GET, "/api/brand/count", Some((&credential.email, &credential.secret)), None).await;
        let with_session = call(fx, reqwest::Method::GET, "/api/brand/count", Some((&credential.email, &key)), None).await;
        assert_eq!(with_session.status, 200);
        assert_eq!(with_key.json()["count"], with_session.json()["count"], "{user_type}");
        // Another user's name with this session fails.
        let other = fx.credential(if user_type == "admin" { "host" } else { "admin" });
        call(fx, reqwest::Method::GET, "/api/brand", Some((&other.email, &key)), None).await.assert_problem(401, "unauthenticated");
        assert_eq!(call(fx, reqwest::Method::DELETE, "/api/session", Some((&credential.email, &key)), None).await.status, 204);
        call(fx, reqwest::Method::GET, "/api/brand", Some((&credential.email, &key)), None).await.assert_problem(401, "unauthenticated");
    }
    // Signing out with a key is not a session's end.
    let admin = fx.credential("admin");
    call(fx, reqwest::Method::DELETE, "/api/session", Some((&admin.email, &admin.secret)), None).await.assert_problem(404, "not_found");
    assert_eq!(call(fx, reqwest::Method::GET, "/api/session", Some((&admin.email, &admin.secret)), None).await.json()["session"], false);
}

async fn wrong_passwords_and_bodies_are_refused(fx) {
    let host = fx.credential("host");
    sign_in(fx, &host.email, "not the password").await.assert_problem(401, "unauthenticated");
    sign_in(fx, "nobody@example.test", "whatever whatever").await.assert_problem(401, "unauthenticated");
    let missing = call(fx, reqwest::Method::POST, "/api/session", None, Some(json!({"email": host.email}))).await;
    assert_eq!(missing.assert_problem(422, "validation_failed")["errors"][0]["field"], "password");
    call(fx, reqwest::Method::POST, "/api/session", None, Some(json!([1]))).await.assert_problem(400, "invalid_query");
    call(fx, reqwest::Method::GET, "/api/session", None, None).await.assert_problem(401, "unauthenticated");
    // An API key is no password.
    sign_in(fx, &host.email, &host.secret).await.assert_problem(401, "unauthenticated");
}

async fn invitations_set_a_password_once(fx) {
    let admin = fx.credential("admin");
    let company = fx.credential("company");
    // A company user invites nobody.
    call(fx, reqwest::Method::POST, "/api/invitation", Some((&company.email, &company.secret)), Some(json!({"user": admin.email}))).await.assert_problem(403, "forbidden");
    // A fresh user without a password cannot sign in.
    let email = format!("invited-{:?}@example.test", fx.db).to_lowercase();
    let created = call(fx, reqwest::Method::POST, "/api/user", Some((&admin.email, &admin.secret)), Some(json!({"email": email, "name": "Invited Person", "type": "admin"}))).await;
    assert_eq!(created.status, 201, "{}", String::from_utf8_lossy(&created.body));
    sign_in(fx, &email, "anything at all").await.assert_problem(401, "unauthenticated");
    let invited = call(fx, reqwest::Method::POST, "/api/invitation", Some((&admin.email, &admin.secret)), Some(json!({"user": email}))).await;
    assert_eq!(invited.status, 201, "{}", String::from_utf8_lossy(&invited.body));
    let invitation = invited.json();
    let token = invitation["token"].as_str().unwrap().to_string();
    assert!(invitation["link"].as_str().unwrap().ends_with(&format!("/#/invitation/{token}")), "{invitation}");
    assert!(invitation["expires"].as_str().unwrap().len() == 19);
    let path = format!("/api/invitation/{token}");
    let short = call(fx, reqwest::Method::POST, &path, None, Some(json!({"password": "short"}))).await;
    assert_eq!(short.assert_problem(422, "validation_failed")["errors"][0]["field"], "password");
    let accepted = call(fx, reqwest::Method::POST, &path, None, Some(json!({"password": "a long new password"}))).await;
    assert_eq!(accepted.status, 200, "{}", String::from_utf8_lossy(&accepted.body));
    call(fx, reqwest::Method::POST, &path, None, Some(json!({"password": "another long password"}))).await.assert_problem(404, "not_found");
    let signed = sign_in(fx, &email, "a long new password").await;
    assert_eq!(signed.status, 201);
    // Unknown users are 404, whatever the caller.
    call(fx, reqwest::Method::POST, "/api/invitation", Some((&admin.email, &admin.secret)), Some(json!({"user": "nobody@example.test"}))).await.assert_problem(404, "not_found");
}

async fn an_invitation_ends_when_its_inviter_may_no_longer_write_the_user(fx) {
    // A sponsor invites a company user of a company it sponsors; an admin then promotes that
    // user to admin. The sponsor's link must not set an admin's password.
    let sponsor = fx.credential("sponsor");
    let admin = fx.credential("admin");
    let me = call(fx, reqwest::Method::GET, &format!("/api/user/{}?fields=fk_sponsor", sponsor.user_id), Some((&sponsor.email, &sponsor.secret)), None).await.records("user");
    let sponsor_company = me[0]["fk_sponsor"].as_str().unwrap().to_string();
    let sponsored = call(fx, reqwest::Method::GET, &format!("/api/company?fk_sponsor={sponsor_company}&fields=id&pageSize=1"), Some((&sponsor.email, &sponsor.secret)), None).await.ids("company");
    let company = sponsored.first().expect("the demo sponsor sponsors a company").clone();
    let email = format!("invited-promoted-{}-{:?}@example.test", common::unique_number(), fx.db).to_lowercase();
    let created = call(fx, reqwest::Method::POST, "/api/user", Some((&sponsor.email, &sponsor.secret)), Some(json!({"email": email, "name": "Later Admin", "type": "company", "fk_company": company}))).await;
    assert_eq!(created.status, 201, "{}", String::from_utf8_lossy(&created.body));
    let user = created.records("user")[0]["id"].as_str().unwrap().to_string();
    let invited = call(fx, reqwest::Method::POST, "/api/invitation", Some((&sponsor.email, &sponsor.secret)), Some(json!({"user": email}))).await;
    assert_eq!(invited.status, 201, "{}", String::from_utf8_lossy(&invited.body));
    let token = invited.json()["token"].as_str().unwrap().to_string();
    let promoted = call(fx, reqwest::Method::PATCH, &format!("/api/user/{user}"), Some((&admin.email, &admin.secret)), Some(json!({"type": "admin"}))).await;
    assert_eq!(promoted.status, 200, "{}", String::from_utf8_lossy(&promoted.body));
    let accepted = call(fx, reqwest::Method::POST, &format!("/api/invitation/{token}"), None, Some(json!({"password": "the sponsor's choice"}))).await;
    accepted.assert_problem(404, "not_found");
    sign_in(fx, &email, "the sponsor's choice").await.assert_problem(401, "unauthenticated");
    // Used up: demoting the user again does not revive the link.
    call(fx, reqwest::Method::PATCH, &format!("/api/user/{user}"), Some((&admin.email, &admin.secret)), Some(json!({"type": "company"}))).await;
    call(fx, reqwest::Method::POST, &format!("/api/invitation/{token}"), None, Some(json!({"password": "the sponsor's choice"}))).await.assert_problem(404, "not_found");
    // An invitation whose inviter still may write the user works.
    let again = call(fx, reqwest::Method::POST, "/api/invitation", Some((&sponsor.email, &sponsor.secret)), Some(json!({"user": email}))).await;
    assert_eq!(again.status, 201, "{}", String::from_utf8_lossy(&again.body));
    let token = again.json()["token"].as_str().unwrap().to_string();
    let accepted = call(fx, reqwest::Method::POST, &format!("/api/invitation/{token}"), None, Some(json!({"password": "a long new password"}))).await;
    assert_eq!(accepted.status, 200, "{}", String::from_utf8_lossy(&accepted.body));
}

async fn sessions_end_after_twelve_idle_hours(fx) {
    let clock = Clock::manual(chrono::Utc::now().timestamp_millis());
    let url = fx.database_url.clone();
    let admin = fx.credential("admin").clone();
    fx.on_server(async move {
        let store = Store::connect(&StoreOptions {
            url,
            max_connections: 2,
            page_cache_bytes: 1 << 20,
            matches_first_limit: 40,
            pg_settings: Vec::new(),
            database_wait: brandhub_store::db::DEFAULT_DATABASE_WAIT,
        })
        .await
        .unwrap()
        .with_clock(clock.clone());
        let password = demo_password(admin.user_type);
        let session = store.sign_in(&admin.email, &password).await.unwrap().expect("signed in");
        let timing = Timing::default();
        assert!(store.authenticate(&admin.email, &session.secret, &timing).await.unwrap().is_some());
        // Used after 11 hours: the idle time starts again.
        clock.advance(Duration::from_secs(11 * 3600));
        assert!(store.authenticate(&admin.email, &session.secret, &timing).await.unwrap().is_some());
        clock.advance(Duration::from_secs(11 * 3600));
        assert!(store.authenticate(&admin.email, &session.secret, &timing).await.unwrap().is_some(), "22 hours old, 11 idle");
        clock.advance(Duration::from_millis(SESSION_IDLE_MILLIS as u64));
        assert!(store.authenticate(&admin.email, &session.secret, &timing).await.unwrap().is_none(), "12 hours idle");
        assert!(store.sign_in(&admin.email, "wrong password!").await.unwrap().is_none());
        store.close().await;
    })
    .await;
}

async fn failed_sign_ins_are_limited_per_address(fx) {
    let store = fx.store.clone();
    let uploads = fx.side_uploads();
    let dir = std::env::temp_dir().join(format!("brandhub-sessions-{}-{:?}", std::process::id(), fx.db));
    let (address, cert, _running) = fx
        .on_server(async move {
            let mut settings = Settings::new("127.0.0.1:0".parse().unwrap(), Some(TlsSource::SelfSigned { dir }), uploads);
            // A failure bucket that hardly refills, so the test does not depend on the speed.
            settings.failure_limit = Limit::new(0.001, 2.0);
            let running = start(settings, store).await.expect("a limited server starts");
            (running.address, running.certificate_pem.clone().unwrap(), running)
        })
        .await;
    let client = common::client_trusting(&cert);
    let host = fx.credential("host");
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let response = client.post(format!("https://{address}/api/session")).json(&json!({"email": host.email, "password": "guess guess guess"})).send().await.unwrap();
        statuses.push(response.status().as_u16());
    }
    assert_eq!(statuses, vec![401, 401, 429]);
    let right = client.post(format!("https://{address}/api/session")).json(&json!({"email": host.email, "password": demo_password(host.user_type)})).send().await.unwrap();
    assert_eq!(right.status(), 429, "a blocked address waits before any password is checked");
    assert!(right.headers().get("retry-after").is_some());
    let token = client.post(format!("https://{address}/api/invitation/bhi_guess")).json(&json!({"password": "a long new password"})).send().await.unwrap();
    assert_eq!(token.status(), 429);
}

async fn concurrent_wrong_passwords_are_counted_before_they_are_checked(fx) {
    let store = fx.store.clone();
    let uploads = fx.side_uploads();
    let dir = std::env::temp_dir().join(format!("brandhub-concurrent-{}-{:?}", std::process::id(), fx.db));
    let (address, cert, _running) = fx
        .on_server(async move {
            let mut settings = Settings::new("127.0.0.1:0".parse().unwrap(), Some(TlsSource::SelfSigned { dir }), uploads);
            settings.failure_limit = Limit::new(0.001, 5.0);
            let running = start(settings, store).await.expect("a limited server starts");
            (running.address, running.certificate_pem.clone().unwrap(), running)
        })
        .await;
    let client = common::client_trusting(&cert);
    let host = fx.credential("host").clone();
    let guesses: Vec<_> = (0..60).map(|i| {
        let client = client.clone();
        let email = host.email.clone();
        tokio::spawn(async move {
            client.post(format!("https://{address}/api/session")).json(&json!({"email": email, "password": format!("guess number {i}")})).send().await.unwrap().status().as_u16()
        })
    }).collect();
    let mut statuses = Vec::new();
    for guess in guesses {
        statuses.push(guess.await.unwrap());
    }
    let checked = statuses.iter().filter(|s| **s == 401).count();
    let limited = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!(checked + limited, 60, "{statuses:?}");
    assert!(checked <= 5, "only the address's budget of passwords is checked, however many arrive at once: {checked} checked");
    // Invitation tokens are counted the same way (their passwords are hashed too).
    let tokens: Vec<_> = (0..20).map(|i| {
        let client = client.clone();
        tokio::spawn(async move {
            client.post(format!("https://{address}/api/invitation/bhi_guess{i}")).json(&json!({"password": "a long new password"})).send().await.unwrap().status().as_u16()
        })
    }).collect();
    let mut statuses = Vec::new();
    for token in tokens {
        statuses.push(token.await.unwrap());
    }
    assert!(statuses.iter().all(|s| *s == 429), "{statuses:?}");
}

}
