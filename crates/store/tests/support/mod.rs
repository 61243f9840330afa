//! What the store's own tests share.

use brandhub_store::{Store, StoreOptions};

/// A store on `url` with its schema migrated, without page cache, for tests that talk to it
/// directly.
pub async fn migrated_store(url: &str, max_connections: u32) -> Store {
    let store = Store::connect(&StoreOptions {
        url: url.to_string(),
        max_connections,
        page_cache_bytes: 0,
        matches_first_limit: 40,
        pg_settings: Vec::new(),
    })
    .await
    .expect("the database opens");
    store.migrate().await.expect("migrations apply");
    store
}
