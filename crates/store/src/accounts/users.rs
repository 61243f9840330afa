//! Users, as the write pipeline makes and changes them (the `UserProfile` policy, docs/API.md,
//! "Writes: users and keys"): a user's type decides which links it needs (a company user its company, a host user
//! its host, …), and a writer never gives a type wider than its own, nor companies, hosts or
//! warehouses beyond its own, so that no key can widen its own user. The command line's
//! `user create` and `key create` go through the same pipeline as an admin.

use super::NewKey;
use crate::db::{Kind, Store, WriteTx};
use crate::error::{StoreError, StoreResult};
use crate::records::Writer;
use crate::write::EntryPoint;
use brandhub_catalog::Res;
use brandhub_catalog::{Anchor, Cell, Layout, Record, Resource, UserType, catalog};
use brandhub_problem::{FieldError, Words, words};
use brandhub_query::plan::Viewer;
use brandhub_query::write::{WriteMode, WriteValues, parse_write};
use sea_query::{Alias, Expr, ExprTrait, Query};
use serde_json::{Value, json};

/// A user to create from the command line or a test.
#[derive(Debug, Clone)]
pub struct NewUser {
    pub email: String,
    pub name: String,
    pub user_type: UserType,
    /// The first becomes `fk_company`, the others `detail.companies`.
    pub companies: Vec<String>,
    pub host: Option<String>,
    pub warehouse: Option<String>,
    pub sponsor: Option<String>,
}

/// What a user is and is linked to, as stored or as a write would leave it.
#[derive(Debug, Clone, Default)]
struct Profile {
    name: String,
    user_type: Option<UserType>,
    company: Option<String>,
    companies: Vec<String>,
    host: Option<String>,
    warehouse: Option<String>,
    sponsor: Option<String>,
}

impl Profile {
    fn of(resource: &Resource, record: &Record) -> Profile {
        let layout = Layout::of(resource);
        let text = |path: &str| {
            record.cells[layout.cell(path)]
                .as_text()
                .filter(|t| !t.is_empty())
                .map(str::to_string)
        };
        Profile {
            name: text("name").unwrap_or_default(),
            user_type: text("type").as_deref().and_then(UserType::parse),
            company: text("fk_company"),
            companies: record.lists[layout.list("detail.companies")].clone(),
            host: text("fk_host"),
            warehouse: text("fk_warehouse"),
            sponsor: text("fk_sponsor"),
        }
    }
}

/// The links a user of `user_type` needs, with the message that asks for each.
fn needed_link(user_type: UserType) -> Option<(&'static str, &'static str)> {
    match user_type {
        UserType::Company => Some(("fk_company", "a company user needs a company")),
        UserType::Host => Some(("fk_host", "a host user needs a host")),
        UserType::Warehouse => Some(("fk_warehouse", "a warehouse user needs a warehouse")),
        UserType::Sponsor => Some(("fk_sponsor", "a sponsor user needs its sponsor company")),
        UserType::Admin => None,
    }
}

/// Whether every id exists in `table` (companies of `detail.companies`, which are not a
/// foreign key the pipeline's link check sees).
async fn missing_ids(tx: &mut WriteTx, resource: Res, ids: &[String]) -> StoreResult<Vec<String>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let statement = Query::select()
        .column(Alias::new("id"))
        .from(Alias::new(catalog().get(resource).table))
        .and_where(Expr::col(Alias::new("id")).is_in(ids.iter().cloned()))
        .to_owned();
    let found: Vec<String> = tx
        .fetch(&statement, &[Kind::Text])
        .await?
        .into_iter()
        .filter_map(|row| row[0].as_text().map(str::to_string))
        .collect();
    Ok(ids
        .iter()
        .filter(|id| !found.contains(id))
        .cloned()
        .collect())
}

/// What `writer` may not do with a user of this profile beyond the catalog's write rule
/// (which the pipeline judges): never a wider type than the writer may give, every company
/// of `detail.companies` one of the writer's, a sponsor user only of the writer's own
/// sponsor company; and of what a write sets (`given`), a company only one of the writer's
/// and no host or warehouse links. Nothing for admins.
fn writer_problems(viewer: &Viewer, profile: &Profile, given: &WriteValues) -> Vec<FieldError> {
    let writer_type = viewer.user_type();
    if writer_type == UserType::Admin {
        return Vec::new();
    }
    let mut problems = Vec::new();
    let allowed = writer_type.writable_types();
    if let Some(user_type) = profile.user_type
        && !allowed.contains(&user_type)
    {
        let names: Vec<&str> = allowed.iter().map(|t| t.as_str()).collect();
        let message = if names.is_empty() {
            format!("a {} user writes no users", writer_type.as_str())
        } else {
            format!(
                "a {} user gives users the type {}, never a wider one such as {}",
                writer_type.as_str(),
                names.join(" or "),
                user_type.as_str()
            )
        };
        problems.push(FieldError::new("type", message));
    }
    let own = viewer.anchor_ids(Anchor::Companies);
    let foreign: Vec<&str> = profile
        .companies
        .iter()
        .filter(|c| !own.contains(c))
        .map(String::as_str)
        .collect();
    if !foreign.is_empty() {
        problems.push(FieldError::new(
            "detail.companies",
            format!(
                "{} is not {}",
                foreign.join(", "),
                Anchor::Companies.describe()
            ),
        ));
    }
    if profile.user_type == Some(UserType::Sponsor)
        && profile.sponsor.as_ref().map(|s| vec![s.clone()])
            != Some(viewer.anchor_ids(Anchor::Sponsor))
    {
        problems.push(FieldError::new(
            "fk_sponsor",
            format!("is not {}", Anchor::Sponsor.describe()),
        ));
    }
    let set = |link: &str| given.cell(link).and_then(Cell::as_text).map(str::to_string);
    if let Some(company) = set("fk_company")
        && !own.contains(&company)
    {
        problems.push(FieldError::new(
            "fk_company",
            format!("is not {}", Anchor::Companies.describe()),
        ));
    }
    for link in ["fk_host", "fk_warehouse"] {
        if set(link).is_some() {
            problems.push(FieldError::new(link, "is set by admins only"));
        }
    }
    problems
}

/// Every problem of a user as a write would leave it: a name, the links its type needs,
/// companies that exist, and what the writer may not give (see [`writer_problems`]). A user
/// the writer could not have written as it was before is 403: the write changes nothing.
pub(crate) async fn profile_problems(
    tx: &mut WriteTx,
    resource: &'static Resource,
    writer: &Writer<'_>,
    record: &mut Record,
    before: Option<&Record>,
    given: &WriteValues,
) -> StoreResult<Vec<FieldError>> {
    let viewer = writer.viewer;
    if let Some(before) = before {
        let refused = writer_problems(
            viewer,
            &Profile::of(resource, before),
            &WriteValues::default(),
        );
        if !refused.is_empty() {
            let reasons: Vec<Words> = refused.iter().map(FieldError::said).collect();
            let (kind, id) = (viewer.user_type().as_str(), record.id());
            return Err(StoreError::Refused(
                words!(
                    "A {kind} user may not change user '{id}': ",
                    "Ein Benutzer vom Typ {kind} darf Benutzer '{id}' nicht ändern: "
                )
                .then(&Words::join(&reasons, "; "))
                .then(&Words::english(".")),
            ));
        }
    }
    let profile = Profile::of(resource, record);
    let mut problems = Vec::new();
    if profile.name.trim().is_empty() && !given.has_problem("name") {
        problems.push(FieldError::new("name", "must not be empty"));
    }
    if let Some((field, message)) = profile.user_type.and_then(needed_link) {
        let linked = match field {
            "fk_company" => profile.company.is_some(),
            "fk_host" => profile.host.is_some(),
            "fk_warehouse" => profile.warehouse.is_some(),
            _ => profile.sponsor.is_some(),
        };
        if !linked && !given.has_problem(field) {
            problems.push(FieldError::new(field, message));
        }
    }
    let missing = missing_ids(tx, Res::Company, &profile.companies).await?;
    if !missing.is_empty() && !given.has_problem("detail.companies") {
        problems.push(FieldError::new(
            "detail.companies",
            format!("no company has id {}", missing.join(", ")),
        ));
    }
    let email = profile_email(resource, record);
    if !given.has_problem("email") && (!email.contains('@') || email.trim() != email) {
        problems.push(FieldError::new(
            "email",
            format!("'{email}' is not an email address"),
        ));
    }
    problems.extend(writer_problems(viewer, &profile, given));
    // One problem per field: the rule and what the write sets may both name one.
    let mut named = std::collections::HashSet::new();
    problems.retain(|p| !given.has_problem(&p.field) && named.insert(p.field.clone()));
    Ok(problems)
}

fn profile_email(resource: &Resource, record: &Record) -> String {
    let layout = Layout::of(resource);
    record.cells[layout.cell("email")]
        .as_text()
        .unwrap_or_default()
        .to_string()
}

fn users() -> &'static Resource {
    catalog().get(Res::User)
}

/// The resource of API keys.
pub(crate) fn keys() -> &'static Resource {
    catalog().get(Res::ApiKey)
}

impl Store {
    /// Creates a user as an admin (the command line, tests) through the write pipeline;
    /// returns its id.
    pub async fn create_user(&self, user: &NewUser) -> StoreResult<String> {
        let mut body = json!({
            "email": user.email,
            "name": user.name,
            "type": user.user_type.as_str(),
            "fk_company": user.companies.first(),
            "fk_host": user.host,
            "fk_warehouse": user.warehouse,
            "fk_sponsor": user.sponsor,
        });
        if user.companies.len() > 1 {
            body["detail"] = json!({"companies": user.companies[1..]});
        }
        let written = self.create_as_admin(users(), &body).await?;
        Ok(written.0)
    }

    /// Creates a key for a user (by email or id) as an admin, through the write pipeline.
    /// Grants default to the user type's; given grants must lie within them.
    pub async fn create_key(
        &self,
        user: &str,
        name: Option<&str>,
        grants: Option<&[String]>,
    ) -> StoreResult<NewKey> {
        let user_id = self.user_id_named(user).await?;
        let mut body = json!({"fk_user": user_id});
        if let Some(name) = name {
            body["name"] = Value::from(name);
        }
        if let Some(grants) = grants {
            body["grants"] = json!(grants);
        }
        let (id, secret) = self.create_as_admin(keys(), &body).await?;
        Ok(NewKey {
            id,
            secret: secret.unwrap_or_default(),
        })
    }

    /// Revokes a key as an admin; revoking twice is harmless.
    pub async fn revoke_key(&self, key_id: &str) -> StoreResult<()> {
        let admin = Viewer::admin();
        self.delete_record(keys(), key_id, &Writer::of(&admin))
            .await
    }

    /// One record created by an admin from a JSON body: its id and, for a resource with a
    /// secret, the secret.
    async fn create_as_admin(
        &self,
        resource: &'static Resource,
        body: &Value,
    ) -> StoreResult<(String, Option<String>)> {
        let admin = Viewer::admin();
        let bytes = serde_json::to_vec(body).map_err(|_| StoreError::Internal)?;
        let values = parse_write(resource, WriteMode::Create, &bytes, &admin)?;
        let written = self
            .create_records(resource, &[values], &Writer::of(&admin), false, false)
            .await?;
        let first = written.into_iter().next().ok_or(StoreError::Internal)?;
        Ok((first.id, first.secret))
    }

    /// Whether `writer` may write the user `id` as it is now (what inviting it asks); `None`
    /// when there is no such user.
    pub async fn may_write_user(&self, id: &str, writer: &Viewer) -> StoreResult<Option<bool>> {
        let mut tx = self.begin_apart(EntryPoint::Accounts).await?;
        may_write_user_in(&mut tx, id, writer).await
    }
}

/// [`Store::may_write_user`] inside a write transaction: the catalog's write rule and scope
/// for the user as stored, and what [`writer_problems`] asks of it (never a wider type,
/// companies all the writer's). Keys are made and revoked, and invitations accepted, only
/// for users their writer may write as they are now.
pub(crate) async fn may_write_user_in(
    tx: &mut WriteTx,
    id: &str,
    writer: &Viewer,
) -> StoreResult<Option<bool>> {
    let resource = users();
    let id = id.to_ascii_uppercase();
    let condition = sea_query::Condition::all().add(Expr::col(Alias::new("id")).eq(id.as_str()));
    let Some(mut record) = tx.load_records(resource, condition).await?.pop() else {
        return Ok(None);
    };
    tx.load_lists(resource, std::slice::from_mut(&mut record))
        .await?;
    let (sees, writes) = tx.may_write(resource, &id, writer).await?;
    let within = writer_problems(
        writer,
        &Profile::of(resource, &record),
        &WriteValues::default(),
    )
    .is_empty();
    Ok(Some(sees && writes && within))
}
