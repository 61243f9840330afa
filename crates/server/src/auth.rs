//! Authentication as an extractor: `Authorization: Basic base64(<email or id>:<api key>)`
//! becomes a [`Caller`], or the request ends with 401.
//!
//! Checked keys are kept in memory, validated on every request by one cheap statement that
//! reads the write versions of the user and key tables: revoking a key, disabling a user or
//! changing its type or companies takes effect on the next request, in every server process
//! (a key allows its stored grants cut to what its user's type allows at that moment).
//! `lastUsed` is written at most once a minute per key, by one background writer, so reads
//! never wait on it; its writes have a version of their own, which remembered callers do
//! not depend on (`brandhub_store::accounts::auth_versions`).

use crate::AppState;
use crate::problem::{Answer, Problem};
use crate::proxies::TrustedProxies;
use crate::ratelimit::{Buckets, Limit, failed_from_this_address, for_this_key, too_many};
use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use brandhub_problem::{ApiError, ApiResult, Code, words};
use brandhub_store::accounts::auth_stamp;
use brandhub_store::accounts::sessions::{SESSION_IDLE_MILLIS, session_of};
use brandhub_store::{Caller, CallerCheck, Store, Timing, Versions};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
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

/// (lower-cased user name, secret) → (auth stamp when checked, the caller, when it was last
/// used by the store's clock: a session idle too long is checked again, and then fails).
type Remembered = HashMap<(String, String), (i64, Arc<Caller>, i64)>;

/// Checks keys and remembers the ones that passed while nothing they depend on changes.
pub struct Authenticator {
    remembered: Mutex<Remembered>,
    /// Requests per key.
    per_key: Buckets<String>,
    /// Failed authentications per client address.
    failures: Buckets<IpAddr>,
    /// Keys checked for an address past its failure limit, within the same limit: a valid key
    /// still gets through, guessing gains at most that, and the checks stay bounded.
    blocked_checks: Buckets<IpAddr>,
    touched: Mutex<HashMap<String, Instant>>,
    touch_queue: mpsc::Sender<String>,
}

fn unauthenticated(detail: &str) -> Problem {
    Problem(ApiError::new(Code::Unauthenticated, detail))
}

/// Splits a Basic authorization header into user name and secret.
pub fn parse_basic(header: &str) -> Result<(String, String), Problem> {
    let explain = "Send Authorization: Basic base64(<user email or id>:<API key>).";
    // The scheme is case-insensitive (RFC 9110 §11.1), followed by one or more spaces.
    let (scheme, encoded) = header
        .trim_start()
        .split_once([' ', '\t'])
        .ok_or_else(|| unauthenticated(explain))?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(unauthenticated(explain));
    }
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
    pub fn new(store: Store, key_limit: Limit, failure_limit: Limit) -> Authenticator {
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
            per_key: Buckets::new(key_limit),
            failures: Buckets::new(failure_limit),
            blocked_checks: Buckets::new(failure_limit),
            touched: Mutex::new(HashMap::new()),
            touch_queue,
        }
    }

    /// A caller already checked with these credentials, while nothing it depends on changed.
    fn remembered(
        &self,
        user: &str,
        secret: &str,
        versions: &Versions,
        now: i64,
    ) -> Option<Arc<Caller>> {
        let stamp = auth_stamp(versions);
        self.remembered_at(user, secret, Some(stamp), now)
            .map(|(_, caller)| caller)
    }

    /// The caller remembered for these credentials and the authentication stamp it was
    /// checked at, if that is `stamp` (any, for `None`) and its session is not idle.
    fn remembered_at(
        &self,
        user: &str,
        secret: &str,
        stamp: Option<i64>,
        now: i64,
    ) -> Option<(i64, Arc<Caller>)> {
        let key = (user.to_lowercase(), secret.to_string());
        let mut remembered = self.remembered.lock().expect("lock");
        let (at, caller, used) = remembered.get_mut(&key)?;
        let idle = session_of(&caller.key_id).is_some() && now - *used >= SESSION_IDLE_MILLIS;
        if stamp.is_some_and(|stamp| *at != stamp) || idle {
            return None;
        }
        *used = now;
        Some((*at, caller.clone()))
    }

    /// The caller a user name and secret identify, or 401. For an address past its failure
    /// limit (`blocked`), keys already checked pass at no cost, and others are checked only
    /// within the address's budget of checks (401 beyond it, which counts as a failure).
    pub async fn authenticate(
        &self,
        store: &Store,
        user: &str,
        secret: &str,
        versions: &Versions,
        timing: &Timing,
        blocked: Option<IpAddr>,
    ) -> ApiResult<Arc<Caller>> {
        let stamp = auth_stamp(versions);
        let key = (user.to_lowercase(), secret.to_string());
        let now = store.clock().now_millis();
        let known = self.remembered(user, secret, versions, now);
        if known.is_none()
            && let Some(address) = blocked
            && self.blocked_checks.take(&address, Instant::now()).is_err()
        {
            return Err(ApiError::new(
                Code::Unauthenticated,
                words!(
                    "Too many failed authentications from this address to check another key now.",
                    "Zu viele fehlgeschlagene Anmeldungen von dieser Adresse, um jetzt einen weiteren Schlüssel zu prüfen."
                ),
            ));
        }
        let caller = match known {
            Some(caller) => caller,
            None => {
                let caller = store
                    .authenticate(user, secret, timing)
                    .await
                    .map_err(crate::problem::from_store)?
                    .ok_or_else(|| {
                        ApiError::new(
                            Code::Unauthenticated,
                            words!("The user name and API key do not identify an active user's valid key.", "Benutzername und API-Schlüssel nennen keinen gültigen Schlüssel eines aktiven Benutzers."),
                        )
                    })?;
                let caller = Arc::new(caller);
                let mut remembered = self.remembered.lock().expect("lock");
                if remembered.len() >= MAX_REMEMBERED {
                    remembered.clear();
                }
                remembered.insert(key, (stamp, caller.clone(), now));
                caller
            }
        };
        self.touch(&caller.key_id);
        Ok(caller)
    }

    /// How long an address must wait before its next failed authentication is even looked
    /// at (sign-in checks a password, which must not be guessed faster than keys).
    pub(crate) fn failure_wait(&self, address: IpAddr) -> Option<Duration> {
        self.failures.check(&address, Instant::now()).err()
    }

    /// Counts an attempt with a password (a sign-in, an invitation's token) as a failure of
    /// the address before it is checked, or says how long the address must wait: attempts
    /// that arrive together are each counted, so no more of them are checked than the
    /// address's budget. One that succeeds is given back ([`Authenticator::forgive_attempt`]).
    pub(crate) fn begin_attempt(&self, address: IpAddr) -> Result<(), Duration> {
        self.failures.take(&address, Instant::now())
    }

    /// An attempt counted by [`Authenticator::begin_attempt`] that was no failure.
    pub(crate) fn forgive_attempt(&self, address: IpAddr) {
        self.failures.give_back(&address, Instant::now());
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

/// The client's address: the peer, or what trusted proxies say of it (see `proxies`).
pub(crate) fn client_address(parts: &Parts, proxies: &TrustedProxies) -> IpAddr {
    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
        .unwrap_or(IpAddr::from([0, 0, 0, 0]));
    let forwarded = parts
        .headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok());
    proxies.client(peer, forwarded)
}

impl FromRequestParts<AppState> for Authenticated {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Problem> {
        let timing = request_timing(parts);
        let address = client_address(parts, &state.trusted_proxies);
        let authenticated = checked(state, &timing, credentials(parts), address, true).await?;
        crate::bodies::caller_known(&parts.extensions);
        Ok(authenticated)
    }
}

/// The request's timing, which the authentication's statements are counted in.
fn request_timing(parts: &Parts) -> Arc<Timing> {
    parts
        .extensions
        .get::<Arc<Timing>>()
        .cloned()
        .unwrap_or_default()
}

/// The user name and secret of the request's `Authorization`, or 401.
fn credentials(parts: &Parts) -> Result<(String, String), Problem> {
    let header = parts
        .headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| unauthenticated("This call needs an API key: send Authorization: Basic base64(<user email or id>:<API key>)."))?;
    parse_basic(header)
}

/// The caller of `credentials` checked against the versions read now (which the rest of the
/// request uses too), within the address's failure limit and, when `counted` (the request's
/// first check), the key's request limit.
async fn checked(
    state: &AppState,
    timing: &Timing,
    credentials: Result<(String, String), Problem>,
    address: IpAddr,
    counted: bool,
) -> Result<Authenticated, Problem> {
    let auth = &state.auth;
    // Only failures are throttled, and only after the credentials were checked: an address
    // that failed too often (perhaps another client behind the same address) still gets a
    // valid key through.
    let blocked = auth.failures.check(&address, Instant::now()).err();
    let attempt = async {
        let (user, secret) = credentials?;
        let versions = Arc::new(state.store.versions(timing).await?);
        // A write's answer reads under them too (`Timing::versions_after_writes`).
        timing.keep_request_versions(versions.clone());
        let caller = auth
            .authenticate(
                &state.store,
                &user,
                &secret,
                &versions,
                timing,
                blocked.map(|_| address),
            )
            .await?;
        Ok::<_, Problem>(Authenticated { caller, versions })
    };
    match attempt.await {
        Ok(authenticated) => {
            crate::problem::caller_known(&authenticated.caller.user_id);
            if counted {
                auth.per_key
                    .take(&authenticated.caller.key_id, Instant::now())
                    .map_err(|wait| Problem(too_many(wait, for_this_key())))?;
            }
            Ok(authenticated)
        }
        Err(problem) if problem.0.code == Code::Unauthenticated => {
            let _ = auth.failures.take(&address, Instant::now());
            match blocked {
                Some(wait) => Err(Problem(too_many(wait, failed_from_this_address()))),
                None => Err(problem),
            }
        }
        Err(problem) => Err(problem),
    }
}

/// The caller of a write of records (`POST`, `PATCH`, `DELETE`). A caller remembered from an
/// earlier request is taken without the versions read that would check it: the statement
/// that commits its write (on SQLite, the batch) checks it instead ([`Timing::check_caller_at`]),
/// and [`WriteCaller::run`] checks it after anything that committed no write, so an answer
/// is only given to a caller that was valid while it was made. A write is then one
/// statement fewer, and it is the database's busiest statement
/// (docs/decisions/0009-remembered-caller-unchecked.md).
pub struct WriteCaller {
    caller: Arc<Caller>,
    unchecked: Option<Unchecked>,
}

/// What checks a remembered caller taken unchecked, or again from the start.
struct Unchecked {
    user: String,
    secret: String,
    address: IpAddr,
    /// The authentication stamp it was remembered at.
    stamp: i64,
}

impl FromRequestParts<AppState> for WriteCaller {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Problem> {
        let auth = &state.auth;
        if let Ok((user, secret)) = credentials(parts)
            && let Some((stamp, caller)) =
                auth.remembered_at(&user, &secret, None, state.store.clock().now_millis())
        {
            auth.per_key
                .take(&caller.key_id, Instant::now())
                .map_err(|wait| Problem(too_many(wait, for_this_key())))?;
            let address = client_address(parts, &state.trusted_proxies);
            // Its credentials are those of a caller checked before: it is known.
            crate::bodies::caller_known(&parts.extensions);
            crate::problem::caller_known(&caller.user_id);
            return Ok(WriteCaller {
                caller,
                unchecked: Some(Unchecked {
                    user,
                    secret,
                    address,
                    stamp,
                }),
            });
        }
        let Authenticated { caller, .. } = Authenticated::from_request_parts(parts, state).await?;
        Ok(WriteCaller {
            caller,
            unchecked: None,
        })
    }
}

impl WriteCaller {
    /// The caller, checked now if it was taken unchecked: for a write that keeps something
    /// outside the statement that commits it (a file, an order, an idempotency key's answer).
    pub async fn checked(self, state: &AppState, timing: &Timing) -> Result<Arc<Caller>, Problem> {
        match self.unchecked {
            None => Ok(self.caller),
            Some(unchecked) => Ok(unchecked.check(state, timing).await?.caller),
        }
    }

    /// `work` (a write as `caller`) with the caller checked as it commits. Its answer stands
    /// when a commit found the caller unchanged, or, when nothing committed (a refusal, an
    /// error), when a versions read finds it unchanged now; otherwise the caller is checked
    /// from the start and `work` runs again as what it now is (nothing was written).
    pub async fn run<F, W>(self, state: &AppState, timing: &Timing, work: F) -> Answer<Response>
    where
        F: Fn(Arc<Caller>) -> W,
        W: std::future::Future<Output = Answer<Response>>,
    {
        let Some(unchecked) = self.unchecked else {
            return work(self.caller).await;
        };
        timing.check_caller_at(Some(unchecked.stamp));
        let key_id = self.caller.key_id.clone();
        let answer = work(self.caller).await;
        let check = timing.caller_check();
        timing.check_caller_at(None);
        let held = match check {
            CallerCheck::Held => true,
            CallerCheck::Unchecked => {
                let versions = state.store.versions(timing).await?;
                auth_stamp(&versions) == unchecked.stamp
            }
            CallerCheck::Changed => false,
        };
        if held {
            // Its use, once it is known to have been valid (`lastUsed`).
            state.auth.touch(&key_id);
            return answer;
        }
        let authenticated = unchecked.check(state, timing).await?;
        work(authenticated.caller).await
    }
}

impl Unchecked {
    /// The caller checked from the start, as a request whose caller was never remembered.
    async fn check(self, state: &AppState, timing: &Timing) -> Result<Authenticated, Problem> {
        // The request was counted against its key's limit when its caller was taken.
        checked(
            state,
            timing,
            Ok((self.user, self.secret)),
            self.address,
            false,
        )
        .await
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
        for scheme in ["basic", "BASIC", "bAsIc"] {
            let header = format!("{scheme}  {}", STANDARD.encode("a@b.test:bhk_secret"));
            assert_eq!(parse_basic(&header).unwrap().1, "bhk_secret", "{scheme}");
        }
        for bad in [
            "Bearer x",
            "Basic",
            "Basicx YTpi",
            "Bearer YTpi",
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
