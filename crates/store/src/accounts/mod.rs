//! Users and API keys: creating them, revoking keys, and checking a key on each request.
//!
//! A key is `bhk_` and 30 random letters and digits (about 178 bits). Only its SHA-256 is
//! stored: the secret has so much entropy that a slow password hash would add cost to every
//! request and no safety. The first 8 characters (the `prefix`) find the candidate keys; their
//! hashes are compared in constant time.
//!
//! A key allows what its stored grants and its user's current type both allow
//! ([`crate::accounts::grants::effective`]), judged afresh whenever anything about users changes.

pub mod grants;
pub mod keys;
pub mod sessions;
pub mod users;

use crate::accounts::grants::{Grant, effective};
use crate::db::{Kind, Store, Timing};
use crate::error::StoreResult;
use crate::ids::now_timestamp;
use crate::rights::{Principal, principal};
use crate::write::EntryPoint;
use brandhub_catalog::UserType;
use brandhub_query::plan::Viewer;
use brandhub_query::text::fold;
use rand::RngExt;
use rand::distr::Alphanumeric;
use sea_query::{Alias, Expr, ExprTrait, Query};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// A created key: its id and the secret, which is shown this once.
#[derive(Debug, Clone)]
pub struct NewKey {
    pub id: String,
    pub secret: String,
}

pub use keys::MAX_ACTIVE_KEYS;

/// The authenticated caller of a request: who, which key, and what the key allows.
#[derive(Debug, Clone)]
pub struct Caller {
    pub user_id: String,
    pub email: String,
    pub user_type: UserType,
    pub key_id: String,
    /// What the key allows now: its stored grants cut to what the user's type allows.
    pub grants: Vec<Grant>,
    pub company: Option<String>,
    pub companies: Vec<String>,
    pub host: Option<String>,
    pub warehouse: Option<String>,
    pub sponsor: Option<String>,
    /// The companies whose data the caller's scope covers: for a company user its
    /// `fk_company` and `detail.companies`; for a sponsor user the sponsor company and every
    /// company it sponsors; empty for the other types.
    pub scope_companies: Vec<String>,
}

impl Caller {
    /// The caller of a key with these stored grants, as its user is now.
    pub(crate) fn of(user: Principal, key_id: String, stored: &[Grant]) -> Caller {
        Caller {
            grants: effective(stored, user.user_type),
            user_id: user.user_id,
            email: user.email,
            user_type: user.user_type,
            key_id,
            company: user.company,
            companies: user.companies,
            host: user.host,
            warehouse: user.warehouse,
            sponsor: user.sponsor,
            scope_companies: user.scope_companies,
        }
    }

    /// Whether the key allows `method` on `resource`.
    pub fn may(&self, resource: &str, method: &str) -> bool {
        self.grants.iter().any(|g| g.allows(resource, method))
    }

    /// The caller's view of the catalog and the data: what scope and write rules compare with.
    pub fn viewer(&self) -> Viewer {
        Viewer::new(
            self.user_type,
            &self.user_id,
            self.scope_companies.clone(),
            self.host.clone(),
            self.warehouse.clone(),
        )
        .with_sponsor(self.sponsor.clone())
    }
}

/// The hex SHA-256 of a secret, as stored.
pub fn secret_hash(secret: &str) -> String {
    Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The SQLSTATE [`CALLER_CHECK`] raises when a caller's authentication stamp moved.
pub(crate) const CALLER_CHANGED_STATE: &str = "BHCAL";

/// PostgreSQL's function that keeps a write whose caller was taken from memory unchecked
/// ([`crate::Timing::check_caller_at`]) from committing once what the caller's
/// authentication depends on has changed: it raises [`CALLER_CHANGED_STATE`], which
/// aborts the whole statement, where a condition would only skip the part it guards.
/// `STABLE`, so that a condition holding it and no column is evaluated once a statement,
/// not once a row.
pub(crate) const CALLER_CHECK: &str = "bh_caller_unchanged";

/// The statement that (re)creates [`CALLER_CHECK`] (PostgreSQL's migrations).
pub(crate) fn caller_check_function() -> String {
    format!(
        "CREATE OR REPLACE FUNCTION {CALLER_CHECK}(expected NUMERIC, actual NUMERIC) RETURNS BOOLEAN LANGUAGE plpgsql STABLE AS $$ BEGIN IF expected IS DISTINCT FROM actual THEN RAISE EXCEPTION 'the credentials of the request changed' USING ERRCODE = '{CALLER_CHANGED_STATE}'; END IF; RETURN TRUE; END $$"
    )
}

/// On SQLite, the statement of a commit's batch that fails it unless the authentication
/// stamp is still `stamp` (an assertion of the batch: [`crate::write_turn::assertion`]).
pub(crate) fn caller_unchanged_on_sqlite(stamp: i64) -> sea_query::InsertStatement {
    crate::write_turn::assertion(current_auth_stamp().eq(stamp))
}

/// The version a remembered caller is stamped with: every commit that bumps one of
/// [`auth_versions`] bumps it too (`WriteTx`'s bump), so it moves exactly when their sum
/// does, and a check of it is one row. It is not striped: what bumps it (a key made or
/// revoked, a user changed) is rare, and a key's use does not.
pub const AUTH_STAMP: &str = "bh_auth";

/// The authentication stamp in `versions` ([`AUTH_STAMP`]).
pub fn auth_stamp(versions: &crate::Versions) -> i64 {
    versions.of(AUTH_STAMP)
}

/// Whether a commit that bumps `versions` changes what callers are authenticated as (every
/// write's commit asks, so the names are looked up in a set).
pub(crate) fn moves_auth_stamp(versions: &[&'static str]) -> bool {
    static NAMES: std::sync::LazyLock<std::collections::HashSet<&'static str>> =
        std::sync::LazyLock::new(|| auth_versions().iter().copied().collect());
    versions.iter().any(|name| NAMES.contains(name))
}

/// True while the authentication stamp ([`AUTH_STAMP`]) is still `stamp`; otherwise the
/// statement that holds it fails ([`CALLER_CHECK`]). Read in the statement's own snapshot:
/// a change committed before the write began is seen.
pub(crate) fn caller_unchanged(stamp: i64) -> Expr {
    sea_query::Func::cust(Alias::new(CALLER_CHECK))
        .arg(Expr::val(stamp))
        .arg(current_auth_stamp())
        .into()
}

/// The authentication stamp ([`AUTH_STAMP`]) as the database holds it now.
fn current_auth_stamp() -> Expr {
    let current = Query::select()
        .column(Alias::new("version"))
        .from(Alias::new(crate::versions::TABLE))
        .and_where(Expr::col(Alias::new("table_name")).eq(AUTH_STAMP))
        .to_owned();
    sea_query::Func::coalesce([
        Expr::SubQuery(None, Box::new(current.into())),
        Expr::val(0i64),
    ])
    .into()
}

/// A new random secret starting with `prefix` (30 alphanumerics: 178 bits).
pub fn new_secret(prefix: &str) -> String {
    let random: String = rand::rng()
        .sample_iter(&Alphanumeric)
        .take(30)
        .map(char::from)
        .collect();
    format!("{prefix}{random}")
}

/// The tables whose writes can change who a key authenticates as (and, through sponsorship,
/// which companies a sponsor covers).
pub const AUTH_TABLES: [&str; 6] = [
    "users",
    "api_key",
    "api_key_grant",
    "user_company",
    "company",
    "bh_session",
];

/// The versions a remembered caller is stamped with: those of [`AUTH_TABLES`], except that a
/// table whose secret records its use (`Secret::used_in`, a key's `lastUsed`) counts every
/// write but that bookkeeping. A key's first use in a minute then leaves every other
/// remembered caller valid instead of making each request after it authenticate again.
pub fn auth_versions() -> &'static [&'static str] {
    static NAMES: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
        let mut names = Vec::new();
        for table in AUTH_TABLES {
            let used = brandhub_catalog::catalog()
                .resources()
                .iter()
                .find(|resource| resource.table == table)
                .and_then(|resource| Some((resource, resource.secret_use()?)));
            match used {
                Some((resource, field)) => {
                    names.extend(crate::versions::keys_of_all_writes_but(resource, field))
                }
                None => names.push(table),
            }
        }
        names
    });
    &NAMES
}

impl Store {
    /// The id of the user with this email (any case) or id.
    pub async fn find_user_id(&self, email_or_id: &str) -> StoreResult<Option<String>> {
        let statement = Query::select()
            .column(Alias::new("id"))
            .from(Alias::new("users"))
            .cond_where(
                Expr::col(Alias::new("email_ci"))
                    .eq(fold(email_or_id))
                    .or(Expr::col(Alias::new("id")).eq(email_or_id.to_ascii_uppercase())),
            )
            .to_owned();
        let rows = self
            .fetch(&statement, &[Kind::Text], &Timing::default())
            .await?;
        Ok(rows
            .first()
            .and_then(|r| r[0].as_text())
            .map(str::to_string))
    }

    /// The id of the user with this email or id, or not found saying so (the command
    /// line's password and key commands).
    pub(crate) async fn user_id_named(&self, email_or_id: &str) -> StoreResult<String> {
        self.find_user_id(email_or_id).await?.ok_or_else(|| {
            crate::error::StoreError::NotFound(brandhub_problem::words!(
                "No user has email or id '{email_or_id}'.",
                "Kein Benutzer hat die E-Mail-Adresse oder Kennung '{email_or_id}'."
            ))
        })
    }

    /// Checks a user name (email or id) and key secret; `None` when they do not identify an
    /// active user's unrevoked key.
    pub async fn authenticate(
        &self,
        user_name: &str,
        secret: &str,
        timing: &Timing,
    ) -> StoreResult<Option<Caller>> {
        if secret.starts_with(crate::accounts::sessions::SESSION_PREFIX) {
            return self.authenticate_session(user_name, secret, timing).await;
        }
        if secret.len() < 8 || !secret.is_char_boundary(8) {
            return Ok(None);
        }
        let candidates = Query::select()
            .column((Alias::new("k"), Alias::new("id")))
            .column((Alias::new("k"), Alias::new("secret_hash")))
            .column((Alias::new("u"), Alias::new("id")))
            .from_as(Alias::new("api_key"), Alias::new("k"))
            .join_as(
                sea_query::JoinType::InnerJoin,
                Alias::new("users"),
                Alias::new("u"),
                Expr::col((Alias::new("u"), Alias::new("id")))
                    .equals((Alias::new("k"), Alias::new("fk_user"))),
            )
            .and_where(Expr::col((Alias::new("k"), Alias::new("prefix"))).eq(&secret[..8]))
            .and_where(Expr::col((Alias::new("k"), Alias::new("revoked"))).eq(false))
            .cond_where(
                Expr::col((Alias::new("u"), Alias::new("email_ci")))
                    .eq(fold(user_name))
                    .or(Expr::col((Alias::new("u"), Alias::new("id")))
                        .eq(user_name.to_ascii_uppercase())),
            )
            .to_owned();
        let rows = self.fetch(&candidates, &[Kind::Text; 3], timing).await?;
        let presented = secret_hash(secret);
        let Some(row) = rows.iter().find(|row| {
            let stored = row[1].as_text().unwrap_or_default();
            bool::from(stored.as_bytes().ct_eq(presented.as_bytes()))
        }) else {
            return Ok(None);
        };
        let key_id = row[0].as_text().unwrap_or_default().to_string();
        let user_id = row[2].as_text().unwrap_or_default();
        let Some(user) = principal(&mut &*self, user_id).await? else {
            return Ok(None);
        };
        if !user.active {
            return Ok(None);
        }
        let stored = self.stored_grants(&key_id, timing).await?;
        Ok(Some(Caller::of(user, key_id, &stored)))
    }

    /// The grants stored with a key (as created; what they allow now is cut by the user's
    /// type, see [`effective`]).
    async fn stored_grants(&self, key_id: &str, timing: &Timing) -> StoreResult<Vec<Grant>> {
        Ok(self
            .list_values("api_key_grant", "api_key_id", "grant_text", key_id, timing)
            .await?
            .iter()
            .filter_map(|g| Grant::parse(g).ok())
            .collect())
    }

    /// What a key allows now (its stored grants cut to its user's current type); `None`
    /// when there is no such key.
    pub async fn key_grants(&self, key_id: &str) -> StoreResult<Option<Vec<Grant>>> {
        let key_id = key_id.to_ascii_uppercase();
        let timing = Timing::default();
        let owner = Query::select()
            .column(Alias::new("fk_user"))
            .from(Alias::new("api_key"))
            .and_where(Expr::col(Alias::new("id")).eq(key_id.as_str()))
            .to_owned();
        let rows = self.fetch(&owner, &[Kind::Text], &timing).await?;
        let Some(owner) = rows.first().and_then(|r| r[0].as_text()) else {
            return Ok(None);
        };
        let stored = self.stored_grants(&key_id, &timing).await?;
        Ok(Some(match principal(&mut &*self, owner).await? {
            Some(user) if user.active => effective(&stored, user.user_type),
            // A disabled user's keys allow nothing.
            _ => Vec::new(),
        }))
    }

    async fn list_values(
        &self,
        table: &str,
        owner: &str,
        value: &str,
        id: &str,
        timing: &Timing,
    ) -> StoreResult<Vec<String>> {
        let statement = Query::select()
            .column(Alias::new(value))
            .from(Alias::new(table))
            .and_where(Expr::col(Alias::new(owner)).eq(id))
            .order_by(Alias::new("position"), sea_query::Order::Asc)
            .to_owned();
        Ok(self
            .fetch(&statement, &[Kind::Text], timing)
            .await?
            .into_iter()
            .filter_map(|row| row[0].as_text().map(str::to_string))
            .collect())
    }

    /// Records that a key was used (callers throttle this: it is a write). Bookkeeping, not a
    /// change of the key: `updatedDate` and the key's version stay as they are, so a key's
    /// own use never fails an `If-Match` on it.
    pub async fn touch_key(&self, key_id: &str) -> StoreResult<()> {
        if let Some(session) = crate::accounts::sessions::session_of(key_id) {
            return self.touch_session(session).await;
        }
        let keys = users::keys();
        let used_in = keys.secret_use().expect("a key's secret records its use");
        let update = Query::update()
            .table(Alias::new(keys.table))
            .value(Alias::new(used_in.column.as_str()), now_timestamp())
            .and_where(Expr::col(Alias::new("id")).eq(key_id))
            .to_owned();
        let mut tx = self.begin_apart(EntryPoint::Accounts).await?;
        tx.execute_update_of(keys.table, &update, &[key_id]).await?;
        tx.commit().await
    }
}
