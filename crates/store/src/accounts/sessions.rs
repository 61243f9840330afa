//! Sign-in for people (docs/API.md, "Sessions and invitations"): passwords, session keys and invitations.
//!
//! A password is optional per user and stored only as an argon2id hash (`bh_password`): it is
//! what a person remembers, so it gets a slow hash; it is checked only when signing in, never
//! on each request. Signing in answers a session key (`bhs_` and 30 random letters and
//! digits): it is sent as Basic authentication like any API key, allows what the user's type
//! allows, and is stored as a SHA-256 like keys are (`bh_session`). A session ends after
//! [`SESSION_IDLE_MILLIS`] without use or when it is deleted. An invitation (`bh_invitation`)
//! is a one-time token, valid [`INVITATION_MILLIS`], that sets a user's password.
//!
//! Times are the store's [`crate::clock::Clock`], so tests reach expiry without sleeping.

use crate::accounts::grants::default_grants;
use crate::accounts::users::may_write_user_in;
use crate::accounts::{Caller, secret_hash};
use crate::db::{Backend, Kind, Store, Timing};
use crate::error::{StoreError, StoreResult};
use crate::ids::new_id;
use crate::rights::principal;
use crate::write::EntryPoint;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use brandhub_catalog::{Cell, UserType};
use brandhub_problem::{FieldError, Words, words};
use brandhub_query::text::fold;
use rand::RngExt;
use sea_query::{Alias, Expr, ExprTrait, Query};
use subtle::ConstantTimeEq;

/// How a session secret starts (API keys start with `bhk_`).
pub const SESSION_PREFIX: &str = "bhs_";
/// How a session's id is shown as a [`Caller::key_id`], so that it is never taken for a key's.
pub const SESSION_KEY_ID: &str = "session:";
/// A session ends after 12 hours without a request.
pub const SESSION_IDLE_MILLIS: i64 = 12 * 60 * 60 * 1000;
/// An invitation link is valid for 7 days.
pub const INVITATION_MILLIS: i64 = 7 * 24 * 60 * 60 * 1000;
/// How often a session's `last_used` is written at most (its idle time is measured from it).
pub const SESSION_TOUCH_MILLIS: i64 = 60 * 1000;
/// The shortest password accepted.
pub const MIN_PASSWORD_CHARS: usize = 10;
/// The longest password accepted (argon2 takes any length; this bounds the work of a request).
pub const MAX_PASSWORD_CHARS: usize = 256;

/// The tables of this module, which no resource of the catalog describes.
pub const TABLES: [&str; 3] = ["bh_password", "bh_session", "bh_invitation"];

/// The statements creating this module's tables. `bh_session` is versioned, so that a
/// session created or ended is seen by every process's key cache at once.
pub fn statements(backend: Backend) -> Vec<String> {
    let id = match backend {
        Backend::Postgres => "TEXT COLLATE \"C\"",
        Backend::Sqlite => "TEXT",
    };
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS \"bh_password\" (\"user_id\" {id} PRIMARY KEY, \"hash\" TEXT NOT NULL, \"set_at\" BIGINT NOT NULL)"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS \"bh_session\" (\"id\" {id} PRIMARY KEY, \"prefix\" TEXT NOT NULL, \"secret_hash\" TEXT NOT NULL, \"user_id\" {id} NOT NULL, \"created_at\" BIGINT NOT NULL, \"last_used\" BIGINT NOT NULL)"
        ),
        "CREATE INDEX IF NOT EXISTS \"ix_bh_session_prefix\" ON \"bh_session\" (\"prefix\")"
            .to_string(),
        "CREATE INDEX IF NOT EXISTS \"ix_bh_session_user_id\" ON \"bh_session\" (\"user_id\")"
            .to_string(),
        format!(
            "CREATE TABLE IF NOT EXISTS \"bh_invitation\" (\"id\" {id} PRIMARY KEY, \"token_hash\" TEXT NOT NULL UNIQUE, \"user_id\" {id} NOT NULL, \"created_by\" {id} NOT NULL, \"created_at\" BIGINT NOT NULL, \"expires_at\" BIGINT NOT NULL, \"used_at\" BIGINT)"
        ),
        "INSERT INTO \"bh_table_version\" (\"table_name\", \"version\") VALUES ('bh_session', 0) ON CONFLICT DO NOTHING".to_string(),
    ]
}

/// A session just begun: the secret is shown this once.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub id: String,
    pub secret: String,
    pub user_id: String,
    pub email: String,
    pub user_type: UserType,
}

/// An invitation just made: the token is shown this once (it is the link's last part).
#[derive(Debug, Clone)]
pub struct NewInvitation {
    pub token: String,
    pub user_id: String,
    /// Milliseconds since the Unix epoch.
    pub expires_at: i64,
}

/// The session id inside a caller's key id, when the caller signed in with a session.
pub fn session_of(key_id: &str) -> Option<&str> {
    key_id.strip_prefix(SESSION_KEY_ID)
}

/// How many password hashes or checks run at once in this process. Each holds 19 MiB for
/// its time, so requests that arrive together (a flood of sign-ins from many addresses) wait
/// their turn instead of taking the process's memory: at most this many × 19 MiB.
pub const PASSWORD_WORK_AT_ONCE: usize = 4;

/// The turns of [`PASSWORD_WORK_AT_ONCE`], shared by every store of the process (memory is
/// the process's).
static PASSWORD_WORK: tokio::sync::Semaphore =
    tokio::sync::Semaphore::const_new(PASSWORD_WORK_AT_ONCE);

/// Runs password work (hashing, checking) off the async threads, within the process's bound
/// of such work at once.
async fn password_work<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> StoreResult<T> {
    let _turn = PASSWORD_WORK
        .acquire()
        .await
        .map_err(|e| internal("waiting for a password turn", e))?;
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| internal("the password work", e))
}

/// The argon2id hasher (RFC 9106's second recommended option: 19 MiB, 2 passes).
fn hasher() -> Argon2<'static> {
    Argon2::new(Algorithm::Argon2id, Version::V0x13, Params::default())
}

/// The argon2id hash of a password in PHC form, with a random salt.
pub fn hash_password(password: &str) -> StoreResult<String> {
    let salt: [u8; 16] = rand::rng().random();
    let salt = SaltString::encode_b64(&salt).map_err(|e| internal("salt", e))?;
    hasher()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|e| internal("hashing a password", e))
}

/// Whether `password` matches a stored PHC hash.
pub fn verify_password(password: &str, stored: &str) -> bool {
    PasswordHash::new(stored)
        .is_ok_and(|hash| hasher().verify_password(password.as_bytes(), &hash).is_ok())
}

/// Problems of a new password: too short, too long, or nothing but spaces.
pub fn password_problems(password: &str) -> Vec<FieldError> {
    let chars = password.chars().count();
    let mut problems = Vec::new();
    let mut problem = |message: Words| {
        problems.push(FieldError {
            field: "password".into(),
            message,
            index: None,
        })
    };
    if chars < MIN_PASSWORD_CHARS {
        problem(words!(
            "must have at least {MIN_PASSWORD_CHARS} characters",
            "muss mindestens {MIN_PASSWORD_CHARS} Zeichen haben"
        ));
    } else if chars > MAX_PASSWORD_CHARS {
        problem(words!(
            "must have at most {MAX_PASSWORD_CHARS} characters",
            "darf höchstens {MAX_PASSWORD_CHARS} Zeichen haben"
        ));
    } else if password.trim().is_empty() {
        problem(words!(
            "must not be only spaces",
            "darf nicht nur aus Leerzeichen bestehen"
        ));
    }
    problems
}

fn internal(what: &str, error: impl std::fmt::Display) -> StoreError {
    tracing::error!(%error, "{what} failed");
    StoreError::Internal
}

/// The characters of a session secret that find its row (the prefix and 8 random ones).
fn lookup_prefix(secret: &str) -> Option<&str> {
    let end = SESSION_PREFIX.len() + 8;
    (secret.len() > end && secret.is_char_boundary(end)).then(|| &secret[..end])
}

fn text(cell: &Cell) -> String {
    cell.as_text().unwrap_or_default().to_string()
}

impl Store {
    /// Sets (or replaces) a user's password (by email or id); 404 without such a user, 422 for
    /// a password too short or too long. Hashing runs off the async threads.
    pub async fn set_password(&self, user: &str, password: &str) -> StoreResult<String> {
        let problems = password_problems(password);
        if !problems.is_empty() {
            return Err(StoreError::invalid(problems));
        }
        let user_id = self.user_id_named(user).await?;
        let password = password.to_string();
        let hash = password_work(move || hash_password(&password)).await??;
        self.store_password(&user_id, hash).await?;
        Ok(user_id)
    }

    async fn store_password(&self, user_id: &str, hash: String) -> StoreResult<()> {
        let now = self.clock.now_millis();
        let mut tx = self.begin_apart(EntryPoint::Sessions).await?;
        let delete = Query::delete()
            .from_table(Alias::new("bh_password"))
            .and_where(Expr::col(Alias::new("user_id")).eq(user_id))
            .to_owned();
        tx.execute_untracked("bh_password", &delete).await?;
        let insert = Query::insert()
            .into_table(Alias::new("bh_password"))
            .columns([
                Alias::new("user_id"),
                Alias::new("hash"),
                Alias::new("set_at"),
            ])
            .values_panic([user_id.into(), hash.into(), now.into()])
            .to_owned();
        tx.execute_untracked("bh_password", &insert).await?;
        // A new password ends the user's sessions: whoever knew the old one is signed out.
        let sessions = Query::delete()
            .from_table(Alias::new("bh_session"))
            .and_where(Expr::col(Alias::new("user_id")).eq(user_id))
            .to_owned();
        tx.execute("bh_session", &sessions).await?;
        tx.commit().await
    }

    /// Signs a user in: a new session when the email (any case) or id and the password match
    /// an active user's; `None` otherwise (which is all a caller learns). A user without a
    /// password cannot sign in; the password is still hashed so that the answer takes as long.
    pub async fn sign_in(&self, user: &str, password: &str) -> StoreResult<Option<NewSession>> {
        let timing = Timing::default();
        let user_id = self.find_user_id(user).await?;
        let stored = match &user_id {
            Some(id) => {
                let select = Query::select()
                    .column(Alias::new("hash"))
                    .from(Alias::new("bh_password"))
                    .and_where(Expr::col(Alias::new("user_id")).eq(id.as_str()))
                    .to_owned();
                self.fetch(&select, &[Kind::Text], &timing)
                    .await?
                    .first()
                    .map(|row| text(&row[0]))
            }
            None => None,
        };
        let password = password.to_string();
        let matches = password_work(move || match stored {
            Some(hash) => verify_password(&password, &hash),
            None => {
                // The same work as a real check, so timing tells nothing about the user.
                let _ = hash_password(&password);
                false
            }
        })
        .await?;
        let Some(user_id) = user_id.filter(|_| matches) else {
            return Ok(None);
        };
        let Some(principal) = principal(&mut &*self, &user_id).await? else {
            return Ok(None);
        };
        if !principal.active {
            return Ok(None);
        }
        let secret = crate::accounts::new_secret(SESSION_PREFIX);
        let id = new_id();
        let now = self.clock.now_millis();
        let insert = Query::insert()
            .into_table(Alias::new("bh_session"))
            .columns([
                Alias::new("id"),
                Alias::new("prefix"),
                Alias::new("secret_hash"),
                Alias::new("user_id"),
                Alias::new("created_at"),
                Alias::new("last_used"),
            ])
            .values_panic([
                id.clone().into(),
                lookup_prefix(&secret).unwrap_or_default().into(),
                secret_hash(&secret).into(),
                user_id.clone().into(),
                now.into(),
                now.into(),
            ])
            .to_owned();
        let mut tx = self.begin_apart(EntryPoint::Sessions).await?;
        tx.execute("bh_session", &insert).await?;
        tx.commit().await?;
        Ok(Some(NewSession {
            id,
            secret,
            user_id,
            email: principal.email,
            user_type: principal.user_type,
        }))
    }

    /// The caller a session secret identifies: an unexpired session of an active user named
    /// by email or id. `None` otherwise. Its `last_used` is moved at most once a minute.
    pub async fn authenticate_session(
        &self,
        user_name: &str,
        secret: &str,
        timing: &Timing,
    ) -> StoreResult<Option<Caller>> {
        let Some(prefix) = lookup_prefix(secret) else {
            return Ok(None);
        };
        let now = self.clock.now_millis();
        let select = Query::select()
            .column((Alias::new("s"), Alias::new("id")))
            .column((Alias::new("s"), Alias::new("secret_hash")))
            .column((Alias::new("s"), Alias::new("user_id")))
            .column((Alias::new("s"), Alias::new("last_used")))
            .from_as(Alias::new("bh_session"), Alias::new("s"))
            .join_as(
                sea_query::JoinType::InnerJoin,
                Alias::new("users"),
                Alias::new("u"),
                Expr::col((Alias::new("u"), Alias::new("id")))
                    .equals((Alias::new("s"), Alias::new("user_id"))),
            )
            .and_where(Expr::col((Alias::new("s"), Alias::new("prefix"))).eq(prefix))
            .and_where(
                Expr::col((Alias::new("s"), Alias::new("last_used"))).gt(now - SESSION_IDLE_MILLIS),
            )
            .cond_where(
                Expr::col((Alias::new("u"), Alias::new("email_ci")))
                    .eq(fold(user_name))
                    .or(Expr::col((Alias::new("u"), Alias::new("id")))
                        .eq(user_name.to_ascii_uppercase())),
            )
            .to_owned();
        let rows = self
            .fetch(
                &select,
                &[Kind::Text, Kind::Text, Kind::Text, Kind::Integer],
                timing,
            )
            .await?;
        let presented = secret_hash(secret);
        let Some(row) = rows
            .iter()
            .find(|row| bool::from(text(&row[1]).as_bytes().ct_eq(presented.as_bytes())))
        else {
            return Ok(None);
        };
        let session_id = text(&row[0]);
        let Some(user) = principal(&mut &*self, &text(&row[2])).await? else {
            return Ok(None);
        };
        if !user.active {
            return Ok(None);
        }
        if now - row[3].as_integer().unwrap_or(0) >= SESSION_TOUCH_MILLIS {
            self.touch_session(&session_id).await?;
        }
        let grants = default_grants(user.user_type);
        Ok(Some(Caller::of(
            user,
            format!("{SESSION_KEY_ID}{session_id}"),
            &grants,
        )))
    }

    /// Records that a session was used now (not versioned: no cache depends on the time).
    pub async fn touch_session(&self, session_id: &str) -> StoreResult<()> {
        let update = Query::update()
            .table(Alias::new("bh_session"))
            .value(Alias::new("last_used"), self.clock.now_millis())
            .and_where(Expr::col(Alias::new("id")).eq(session_id))
            .to_owned();
        self.execute_untracked("bh_session", &update).await?;
        Ok(())
    }

    /// Ends a session; `false` when there was none.
    pub async fn end_session(&self, session_id: &str) -> StoreResult<bool> {
        let delete = Query::delete()
            .from_table(Alias::new("bh_session"))
            .and_where(Expr::col(Alias::new("id")).eq(session_id))
            .to_owned();
        let mut tx = self.begin_apart(EntryPoint::Sessions).await?;
        let affected = tx.execute("bh_session", &delete).await?;
        tx.commit().await?;
        Ok(affected > 0)
    }

    /// Makes a one-time invitation for a user (the caller has checked it may), valid 7 days.
    pub async fn invite(&self, user_id: &str, created_by: &str) -> StoreResult<NewInvitation> {
        let token = super::new_secret("bhi_");
        let now = self.clock.now_millis();
        let expires_at = now + INVITATION_MILLIS;
        let insert = Query::insert()
            .into_table(Alias::new("bh_invitation"))
            .columns([
                Alias::new("id"),
                Alias::new("token_hash"),
                Alias::new("user_id"),
                Alias::new("created_by"),
                Alias::new("created_at"),
                Alias::new("expires_at"),
            ])
            .values_panic([
                new_id().into(),
                secret_hash(&token).into(),
                user_id.into(),
                created_by.into(),
                now.into(),
                expires_at.into(),
            ])
            .to_owned();
        let mut tx = self.begin_apart(EntryPoint::Sessions).await?;
        tx.execute_untracked("bh_invitation", &insert).await?;
        tx.commit().await?;
        Ok(NewInvitation {
            token,
            user_id: user_id.to_string(),
            expires_at,
        })
    }

    /// Sets a password through an invitation token, which is then used up. 404 for a token
    /// that is unknown, used or expired, or whose inviter may no longer write the user as it
    /// is now (one answer for all); 422 for a bad password.
    /// Answers the user's id.
    pub async fn accept_invitation(&self, token: &str, password: &str) -> StoreResult<String> {
        let problems = password_problems(password);
        if !problems.is_empty() {
            return Err(StoreError::invalid(problems));
        }
        let password = password.to_string();
        let hash = password_work(move || hash_password(&password)).await??;
        let now = self.clock.now_millis();
        let gone = || {
            StoreError::NotFound(words!(
                "This invitation link is unknown, used already or expired; ask for a new one.",
                "Dieser Einladungslink ist unbekannt, schon benutzt oder abgelaufen; bitte einen neuen anfordern."
            ))
        };
        let mut tx = self.begin_apart(EntryPoint::Sessions).await?;
        // Using it up first, under its row lock, so that a token works exactly once.
        let used = Query::update()
            .table(Alias::new("bh_invitation"))
            .value(Alias::new("used_at"), now)
            .and_where(Expr::col(Alias::new("token_hash")).eq(secret_hash(token)))
            .and_where(Expr::col(Alias::new("used_at")).is_null())
            .and_where(Expr::col(Alias::new("expires_at")).gt(now))
            .returning(
                Query::returning().columns([Alias::new("user_id"), Alias::new("created_by")]),
            )
            .to_owned();
        let rows = tx
            .fetch_returning(None, &used, &[Kind::Text, Kind::Text])
            .await?;
        let (user_id, inviter) = rows
            .first()
            .map(|row| (text(&row[0]), text(&row[1])))
            .ok_or_else(gone)?;
        // The inviter must still be an active user who may write the user as it is now: a
        // promotion, a move to another company or a demoted inviter since ends the link.
        let still_allowed = match principal(&mut tx, &inviter).await? {
            Some(inviter) if inviter.active => {
                may_write_user_in(&mut tx, &user_id, &inviter.viewer()).await? == Some(true)
            }
            _ => false,
        };
        if !still_allowed {
            // Used up all the same, so that no later change revives it.
            tx.commit().await?;
            return Err(gone());
        }
        let delete = Query::delete()
            .from_table(Alias::new("bh_password"))
            .and_where(Expr::col(Alias::new("user_id")).eq(user_id.as_str()))
            .to_owned();
        tx.execute_untracked("bh_password", &delete).await?;
        let insert = Query::insert()
            .into_table(Alias::new("bh_password"))
            .columns([
                Alias::new("user_id"),
                Alias::new("hash"),
                Alias::new("set_at"),
            ])
            .values_panic([user_id.clone().into(), hash.into(), now.into()])
            .to_owned();
        tx.execute_untracked("bh_password", &insert).await?;
        let sessions = Query::delete()
            .from_table(Alias::new("bh_session"))
            .and_where(Expr::col(Alias::new("user_id")).eq(user_id.as_str()))
            .to_owned();
        tx.execute("bh_session", &sessions).await?;
        tx.commit().await?;
        Ok(user_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_hash_with_argon2id_and_verify() {
        let hash = hash_password("correct horse battery").unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify_password("correct horse battery", &hash));
        assert!(!verify_password("correct horse batterY", &hash));
        assert!(!verify_password("x", "not a hash"));
        // Salted: the same password hashes differently.
        assert_ne!(hash, hash_password("correct horse battery").unwrap());
    }

    #[test]
    fn password_rules() {
        assert!(password_problems("short").len() == 1);
        assert!(password_problems("          ").len() == 1);
        assert!(password_problems("long enough now").is_empty());
        assert!(password_problems(&"x".repeat(MAX_PASSWORD_CHARS + 1)).len() == 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn password_work_runs_a_bounded_number_at_once() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..4 * PASSWORD_WORK_AT_ONCE)
            .map(|_| {
                let (running, peak) = (running.clone(), peak.clone());
                tokio::spawn(password_work(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    running.fetch_sub(1, Ordering::SeqCst);
                }))
            })
            .collect();
        for task in tasks {
            task.await.unwrap().unwrap();
        }
        let peak = peak.load(Ordering::SeqCst);
        assert!(
            (1..=PASSWORD_WORK_AT_ONCE).contains(&peak),
            "{peak} ran at once"
        );
    }

    #[test]
    fn session_secrets_have_a_prefix_that_finds_them() {
        let secret = crate::accounts::new_secret(SESSION_PREFIX);
        assert_eq!(secret.len(), 34);
        assert_eq!(lookup_prefix(&secret).unwrap().len(), 12);
        assert_eq!(lookup_prefix("bhs_short"), None);
        assert_eq!(session_of("session:ABC"), Some("ABC"));
        assert_eq!(session_of("ABC"), None);
    }
}
