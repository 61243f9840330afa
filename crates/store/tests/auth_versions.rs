//! A key's use is bookkeeping: recording it (`lastUsed`) must leave every remembered caller
//! valid (their stamp, `auth_stamp`, which moves with `auth_versions`), while what reads keys
//! still sees it, and a revocation, a new key or a user's change still ends them. On SQLite,
//! and on PostgreSQL when `BRANDHUB_TEST_DATABASE_URL` is set.

mod support;

use brandhub_catalog::UserType;
use brandhub_store::accounts::auth_stamp;
use brandhub_store::{NewUser, Store, Timing, Versions};
use support::{Db, on_both};

async fn open(db: Db, name: &str) -> Option<(Store, tempfile::TempDir)> {
    let dir = tempfile::tempdir().unwrap();
    let url = match db {
        Db::Sqlite => format!("sqlite://{}", dir.path().join("auth.db").display()),
        Db::Postgres => support::fresh_postgres("auth", name).await?,
    };
    Some((support::migrated_store(&url, 2).await, dir))
}

async fn versions(store: &Store) -> Versions {
    store.versions(&Timing::default()).await.unwrap()
}

fn user(email: &str) -> NewUser {
    NewUser {
        email: email.to_string(),
        name: "Someone".to_string(),
        user_type: UserType::Admin,
        companies: Vec::new(),
        host: None,
        warehouse: None,
        sponsor: None,
    }
}

async fn a_keys_use_leaves_remembered_callers_valid_and_its_revocation_does_not(db: Db) {
    let Some((store, _dir)) = open(db, "use").await else {
        return;
    };
    store.create_user(&user("one@example.test")).await.unwrap();
    let key = store
        .create_key("one@example.test", None, None)
        .await
        .unwrap();
    let before = versions(&store).await;
    store.touch_key(&key.id).await.unwrap();
    let used = versions(&store).await;
    assert_eq!(
        auth_stamp(&before),
        auth_stamp(&used),
        "a key's use changed the stamp of every remembered caller"
    );
    assert_ne!(
        before.of("api_key"),
        used.of("api_key"),
        "pages of keys must see lastUsed change"
    );
    let stamp = auth_stamp(&used);
    let another = store
        .create_key("one@example.test", None, None)
        .await
        .unwrap();
    let created = versions(&store).await;
    assert_ne!(stamp, auth_stamp(&created), "a new key must be known");
    store.revoke_key(&another.id).await.unwrap();
    let revoked = versions(&store).await;
    assert_ne!(
        auth_stamp(&created),
        auth_stamp(&revoked),
        "a revocation must end the key's remembered callers"
    );
    store.create_user(&user("two@example.test")).await.unwrap();
    assert_ne!(
        auth_stamp(&revoked),
        auth_stamp(&versions(&store).await),
        "a user's change must be known"
    );
}

on_both!(a_keys_use_leaves_remembered_callers_valid_and_its_revocation_does_not);
