//! Users and API keys: creating them, revoking keys, and checking a key on each request.
//!
//! A key is `bhk_` and 30 random letters and digits (about 178 bits). Only its SHA-256 is
//! stored: the secret has so much entropy that a slow password hash would add cost to every
//! request and no safety. The first 8 characters (the `prefix`) find the candidate keys; their
//! hashes are compared in constant time.
//!
//! A key allows what its stored grants and its user's current type both allow
//! ([`crate::grants::effective`]), judged afresh whenever anything about users changes.

use crate::db::{Kind, Store, Timing};
use crate::grants::{Grant, default_grants, effective};
use crate::ids::{new_id, now_timestamp};
use crate::rights::{Principal, principal, require_visible, require_writable};
use brandhub_catalog::{Cell, Layout, Record, UserType, catalog};
use brandhub_problem::{ApiError, ApiResult, Code, FieldError};
use brandhub_query::judge::Known;
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

/// The most active (unrevoked) keys one user may have: enough for every system a user
/// connects, few enough that keys stay reviewable and a leaked key cannot mint keys without
/// end. A further key is 409 until one is revoked.
pub const MAX_ACTIVE_KEYS: i64 = 50;

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
    fn new(user: Principal, key_id: String, stored: &[Grant]) -> Caller {
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

/// A new random key secret.
pub fn new_secret() -> String {
    let random: String = rand::rng()
        .sample_iter(&Alphanumeric)
        .take(30)
        .map(char::from)
        .collect();
    format!("bhk_{random}")
}

/// The tables whose writes can change who a key authenticates as (and, through sponsorship,
/// which companies a sponsor covers).
pub const AUTH_TABLES: [&str; 5] = [
    "users",
    "api_key",
    "api_key_grant",
    "user_company",
    "company",
];

fn validation(errors: Vec<FieldError>) -> ApiError {
    let summary: Vec<String> = errors
        .iter()
        .map(|e| format!("{}: {}", e.field, e.message))
        .collect();
    let mut error = ApiError::new(Code::ValidationFailed, summary.join("; "));
    error.errors = errors;
    error
}

impl Store {
    /// The id of the user with this email (any case) or id.
    pub async fn find_user_id(&self, email_or_id: &str) -> ApiResult<Option<String>> {
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

    /// Creates a key for a user (by email or id). Grants default to the user type's; given
    /// grants must lie within them. Made through the API, `writer` is the caller and the
    /// grants of its key: the key must be one the caller may write (the catalog's rule for
    /// `apiKey`: its own, for non-admins) and never allows more than the caller's key.
    pub async fn create_key(
        &self,
        user: &str,
        name: Option<&str>,
        grants: Option<&[String]>,
        writer: Option<(&Viewer, &[Grant])>,
    ) -> ApiResult<NewKey> {
        let resource = catalog().resource("apiKey").expect("apiKey is a resource");
        if let Some((viewer, _)) = writer {
            // Judged before the user is looked up: whether another user exists is none of a
            // caller's business if it may not make keys for it.
            let known = Known::new().value("fk_user", [user.to_string()]);
            require_writable(&mut &*self, resource, &known, viewer).await?;
        }
        let within = writer.map(|(_, grants)| grants);
        let user_id = self.find_user_id(user).await?.ok_or_else(|| {
            ApiError::new(Code::NotFound, format!("No user has email or id '{user}'."))
        })?;
        let user_type = self.user_type_of(&user_id).await?;
        let defaults = default_grants(user_type);
        // A key made with another key never allows more than that key does.
        let fits =
            |grant: &Grant| grant.is_within(&defaults) && within.is_none_or(|w| grant.is_within(w));
        let describe = |grants: &[Grant]| {
            grants
                .iter()
                .map(Grant::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        };
        let problem = |message: String| FieldError {
            field: "grants".into(),
            message,
            index: None,
        };
        let grants: Vec<Grant> = match grants {
            None => {
                // The type's defaults, as far as the key making this one allows them.
                let mut granted: Vec<Grant> = Vec::new();
                for default in &defaults {
                    for allowed in within.unwrap_or(std::slice::from_ref(default)) {
                        if let Some(both) = default.intersect(allowed)
                            && !both.is_within(&granted)
                        {
                            granted.push(both);
                        }
                    }
                }
                if granted.is_empty() {
                    return Err(validation(vec![problem(format!(
                        "the key making this one allows none of a {} user's grants ({}); name the grants",
                        user_type.as_str(),
                        describe(&defaults)
                    ))]));
                }
                granted
            }
            Some(texts) => {
                let mut parsed = Vec::new();
                let mut errors = Vec::new();
                for text in texts {
                    match Grant::parse(text) {
                        Ok(grant) if fits(&grant) => parsed.push(grant),
                        Ok(grant) if !grant.is_within(&defaults) => errors.push(problem(format!(
                            "{grant} is wider than a {} user may have ({})",
                            user_type.as_str(),
                            describe(&defaults)
                        ))),
                        Ok(grant) => errors.push(problem(format!(
                            "{grant} is wider than the key making this one allows ({})",
                            describe(within.unwrap_or_default())
                        ))),
                        Err(message) => errors.push(problem(message)),
                    }
                }
                if !errors.is_empty() {
                    return Err(validation(errors));
                }
                parsed
            }
        };
        if let Some((viewer, _)) = writer {
            let known = Known::new()
                .value("id", None)
                .value("fk_user", [user_id.clone()]);
            require_visible(&mut &*self, resource, &known, viewer).await?;
        }
        let secret = new_secret();
        let layout = Layout::of(resource);
        let mut record = Record::empty(resource);
        let id = new_id();
        record.cells[layout.cell("id")] = Cell::Text(id.clone());
        let owner = user_id.clone();
        record.cells[layout.cell("fk_user")] = Cell::Text(user_id);
        record.cells[layout.cell("name")] = name.unwrap_or("API key").into();
        record.cells[layout.cell("prefix")] = secret[..8].into();
        record.cells[layout.cell("createdDate")] = now_timestamp().into();
        record.cells[layout.cell("revoked")] = false.into();
        record.cells[layout.cell("secretHash")] = secret_hash(&secret).into();
        record.lists[layout.list("grants")] = grants.iter().map(Grant::to_string).collect();
        let mut tx = self.begin().await?;
        // Under the user's row lock, so that two creations cannot both pass the limit.
        tx.lock_record("users", &owner).await?;
        let active = Query::select()
            .expr(sea_query::Func::count(Expr::col(Alias::new("id"))))
            .from(Alias::new("api_key"))
            .and_where(Expr::col(Alias::new("fk_user")).eq(owner.as_str()))
            .and_where(Expr::col(Alias::new("revoked")).eq(false))
            .to_owned();
        let active = match tx.fetch(&active, &[Kind::Integer]).await?.first() {
            Some(row) => match row[0] {
                Cell::Integer(n) => n,
                _ => 0,
            },
            None => 0,
        };
        if active >= MAX_ACTIVE_KEYS {
            return Err(ApiError::new(
                Code::Conflict,
                format!(
                    "User '{owner}' has {MAX_ACTIVE_KEYS} active API keys, the most a user may have: revoke one (DELETE /api/apiKey/<id>) before creating another."
                ),
            ));
        }
        tx.insert_records(resource, &[record]).await?;
        tx.commit().await?;
        Ok(NewKey { id, secret })
    }

    /// Stores a key with a known secret (the demo's documented keys).
    pub async fn insert_key_with_secret(&self, record: Record) -> ApiResult<()> {
        let resource = catalog().resource("apiKey").expect("apiKey is a resource");
        let mut tx = self.begin().await?;
        tx.insert_records(resource, &[record]).await?;
        tx.commit().await
    }

    async fn user_type_of(&self, user_id: &str) -> ApiResult<UserType> {
        let statement = Query::select()
            .column(Alias::new("type"))
            .from(Alias::new("users"))
            .and_where(Expr::col(Alias::new("id")).eq(user_id))
            .to_owned();
        let rows = self
            .fetch(&statement, &[Kind::Text], &Timing::default())
            .await?;
        rows.first()
            .and_then(|r| r[0].as_text())
            .and_then(UserType::parse)
            .ok_or_else(|| ApiError::new(Code::NotFound, format!("No user has id '{user_id}'.")))
    }

    /// Revokes a key; revoking twice is harmless.
    pub async fn revoke_key(&self, key_id: &str) -> ApiResult<()> {
        let update = Query::update()
            .table(Alias::new("api_key"))
            .value(Alias::new("revoked"), true)
            .and_where(Expr::col(Alias::new("id")).eq(key_id.to_ascii_uppercase()))
            .to_owned();
        let mut tx = self.begin().await?;
        let affected = tx.execute("api_key", &update).await?;
        if affected == 0 {
            return Err(ApiError::new(
                Code::NotFound,
                format!("No API key has id '{key_id}'."),
            ));
        }
        tx.commit().await
    }

    /// Checks a user name (email or id) and key secret; `None` when they do not identify an
    /// active user's unrevoked key.
    pub async fn authenticate(
        &self,
        user_name: &str,
        secret: &str,
        timing: &Timing,
    ) -> ApiResult<Option<Caller>> {
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
        Ok(Some(Caller::new(user, key_id, &stored)))
    }

    /// The grants stored with a key (as created; what they allow now is cut by the user's
    /// type, see [`effective`]).
    async fn stored_grants(&self, key_id: &str, timing: &Timing) -> ApiResult<Vec<Grant>> {
        Ok(self
            .list_values("api_key_grant", "api_key_id", "grant_text", key_id, timing)
            .await?
            .iter()
            .filter_map(|g| Grant::parse(g).ok())
            .collect())
    }

    /// What a key allows now (its stored grants cut to its user's current type); `None`
    /// when there is no such key.
    pub async fn key_grants(&self, key_id: &str) -> ApiResult<Option<Vec<Grant>>> {
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
    ) -> ApiResult<Vec<String>> {
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

    /// Records that a key was used (callers throttle this: it is a write).
    pub async fn touch_key(&self, key_id: &str) -> ApiResult<()> {
        let update = Query::update()
            .table(Alias::new("api_key"))
            .value(Alias::new("last_used"), now_timestamp())
            .and_where(Expr::col(Alias::new("id")).eq(key_id))
            .to_owned();
        let mut tx = self.begin().await?;
        tx.execute("api_key", &update).await?;
        tx.commit().await
    }
}
