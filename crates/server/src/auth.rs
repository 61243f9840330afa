//! Authentication as an extractor: `Authorization: Basic base64(<email or id>:<api key>)`
//! becomes a [`Caller`], or the request ends with 401.
//!
//! Checked keys are kept in memory, validated on every request by one cheap statement that
//! reads the write versions of the user and key tables: revoking a key or disabling a user
//! takes effect on the next request, in every server process. `lastUsed` is written at most
//! once a minute per key, by one background writer, so reads never wait on it.

use crate::AppState;
use crate::problem::Problem;
use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use brandhub_problem::{ApiError, ApiResult, Code};
use brandhub_store::accounts::AUTH_TABLES;
use brandhub_store::{Caller, Store, Timing, Versions};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How often `lastUsed` of one key is written at most.
const TOUCH_EVERY: Duration = Duration::from_secs(60);
/// Bound on remembered keys (the map is cleared when it grows past it).
const MAX_REMEMBERED: usize = 10_000;

/// The authenticated caller of a request, and the table versions read to check it (which the
/// rest of the request uses for its caches too: one versions read per request).
#[derive(Debug, Clone)]
pub struct Authenticated {
    pub caller: Arc<Caller>,
    pub versions: Arc<Versions>,
}

/// (lower-cased user name, secret) → (auth stamp when checked, the caller).
type Remembered = HashMap<(String, String), (i64, Arc<Caller>)>;

/// Checks keys and remembers the ones that passed while nothing they depend on changes.
pub struct Authenticator {
    remembered: Mutex<Remembered>,
    touched: Mutex<HashMap<String, Instant>>,
    touch_queue: mpsc::Sender<String>,
}

fn unauthenticated(detail: &str) -> Problem {
    Problem(ApiError::new(Code::Unauthenticated, detail))
}

/// Splits a Basic authorization header into user name and secret.
pub fn parse_basic(header: &str) -> Result<(String, String), Problem> {
    let explain = "Send Authorization: Basic base64(<user email or id>:<API key>).";
    let encoded = header
        .strip_prefix("Basic ")
        .or_else(|| header.strip_prefix("basic "))
        .ok_or_else(|| unauthenticated(explain))?;
    let decoded = STANDARD
        .decode(encoded.trim())
        .map_err(|_| unauthenticated(explain))?;
    let text = String::from_utf8(decoded).map_err(|_| unauthenticated(explain))?;
    let (user, secret) = text
        .split_once(':')
        .ok_or_else(|| unauthenticated(explain))?;
    if user.is_empty() || secret.is_empty() {
        return Err(unauthenticated(explain));
    }
    Ok((user.to_string(), secret.to_string()))
}

impl Authenticator {
    /// An authenticator whose `lastUsed` writes go to `store`.
    pub fn new(store: Store) -> Authenticator {
        let (touch_queue, mut receiver) = mpsc::channel::<String>(1024);
        tokio::spawn(async move {
            while let Some(key_id) = receiver.recv().await {
                if let Err(error) = store.touch_key(&key_id).await {
                    tracing::debug!(%error, "lastUsed not written");
                }
            }
        });
        Authenticator {
            remembered: Mutex::new(HashMap::new()),
            touched: Mutex::new(HashMap::new()),
            touch_queue,
        }
    }

    /// The caller a user name and secret identify, or 401.
    pub async fn authenticate(
        &self,
        store: &Store,
        user: &str,
        secret: &str,
        versions: &Versions,
        timing: &Timing,
    ) -> ApiResult<Arc<Caller>> {
        let stamp = versions.stamp(&AUTH_TABLES);
        let key = (user.to_lowercase(), secret.to_string());
        let known = self
            .remembered
            .lock()
            .expect("lock")
            .get(&key)
            .filter(|(at, _)| *at == stamp)
            .map(|(_, caller)| caller.clone());
        let caller = match known {
            Some(caller) => caller,
            None => {
                let caller = store
                    .authenticate(user, secret, timing)
                    .await?
                    .ok_or_else(|| {
                        ApiError::new(
                            Code::Unauthenticated,
                            "The user name and API key do not identify an active user's valid key.",
                        )
                    })?;
                let caller = Arc::new(caller);
                let mut remembered = self.remembered.lock().expect("lock");
                if remembered.len() >= MAX_REMEMBERED {
                    remembered.clear();
                }
                remembered.insert(key, (stamp, caller.clone()));
                caller
            }
        };
        self.touch(&caller.key_id);
        Ok(caller)
    }

    fn touch(&self, key_id: &str) {
        let now = Instant::now();
        let mut touched = self.touched.lock().expect("lock");
        let due = touched
            .get(key_id)
            .is_none_or(|at| now.duration_since(*at) >= TOUCH_EVERY);
        if due {
            if touched.len() >= MAX_REMEMBERED {
                touched.clear();
            }
            touched.insert(key_id.to_string(), now);
            let _ = self.touch_queue.try_send(key_id.to_string());
        }
    }
}

impl FromRequestParts<AppState> for Authenticated {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Problem> {
        let timing = parts
            .extensions
            .get::<Arc<Timing>>()
            .cloned()
            .unwrap_or_default();
        let header = parts
            .headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| unauthenticated("This call needs an API key: send Authorization: Basic base64(<user email or id>:<API key>)."))?;
        let (user, secret) = parse_basic(header)?;
        let versions = Arc::new(state.store.versions(&timing).await?);
        let caller = state
            .auth
            .authenticate(&state.store, &user, &secret, &versions, &timing)
            .await?;
        Ok(Authenticated { caller, versions })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_headers_split_into_user_and_secret() {
        let header = format!("Basic {}", STANDARD.encode("a@b.test:bhk_secret"));
        assert_eq!(
            parse_basic(&header).unwrap(),
            ("a@b.test".to_string(), "bhk_secret".to_string())
        );
        for bad in [
            "Bearer x",
            "Basic !!!",
            &format!("Basic {}", STANDARD.encode("nocolon")),
            &format!("Basic {}", STANDARD.encode(":x")),
        ] {
            assert_eq!(
                parse_basic(bad).unwrap_err().0.code,
                Code::Unauthenticated,
                "{bad}"
            );
        }
    }
}
