//! Users: creating and changing them. A user's type decides which links it needs (a company
//! user its company, a host user its host, …); every create and update checks the profile the
//! write would leave, all problems at once, before writing anything. Who writes a user is
//! bounded by the catalog's write rule for users and by "never of a wider type" (CONTRACT §9):
//! a key can never be used to widen its own user.

use crate::db::{Kind, Store, Timing};
use crate::ids::{looks_like_id, new_id, now_timestamp};
use crate::rights::{outcomes, require_visible};
use brandhub_catalog::{Anchor, Cell, Layout, Record, UserType, WriteAction, catalog};
use brandhub_problem::{ApiError, ApiResult, Code, FieldError};
use brandhub_query::judge::{Known, Verdict, judge};
use brandhub_query::plan::Viewer;
use brandhub_query::text::fold;
use brandhub_query::write::{WriteValues, validation_failed};
use sea_query::{Alias, Expr, ExprTrait, Query, Value};

/// The user statuses; a disabled user's keys all fail.
pub const STATUSES: [&str; 2] = ["active", "disabled"];

/// A user to create.
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

/// What a user is and is linked to: as stored, or as a write would leave it.
#[derive(Debug, Clone, Default)]
struct Profile {
    name: String,
    user_type: String,
    status: String,
    company: Option<String>,
    companies: Vec<String>,
    host: Option<String>,
    warehouse: Option<String>,
    sponsor: Option<String>,
}

fn problem(field: &str, message: impl Into<String>) -> FieldError {
    FieldError {
        field: field.to_string(),
        message: message.into(),
        index: None,
    }
}

impl Profile {
    /// Applies the given values over this profile.
    fn with(mut self, values: &WriteValues) -> Profile {
        let id = |cell: &Cell| cell.as_text().map(str::to_string);
        if let Some(name) = values.text("name") {
            self.name = name;
        }
        if let Some(user_type) = values.text("type") {
            self.user_type = user_type;
        }
        if let Some(status) = values.text("status") {
            self.status = status;
        }
        if let Some(cell) = values.cell("fk_company") {
            self.company = id(cell);
        }
        if let Some(cell) = values.cell("fk_host") {
            self.host = id(cell);
        }
        if let Some(cell) = values.cell("fk_warehouse") {
            self.warehouse = id(cell);
        }
        if let Some(cell) = values.cell("fk_sponsor") {
            self.sponsor = id(cell);
        }
        if let Some(companies) = values.list("detail.companies") {
            self.companies = companies.clone();
        }
        self
    }
}

impl Store {
    /// What `writer` may not do with a user of this profile (CONTRACT §9, "user"): the
    /// catalog's write rule (its own record, or a user of its companies), never a wider type
    /// than the writer may give, every company of `detail.companies` one of the writer's, a
    /// sponsor user only of the writer's own sponsor company; and of what a write sets
    /// (`given`), a company only one of the writer's and no host or warehouse links. `id` is
    /// the user's (`None` for a new one). Nothing for admins.
    async fn writer_problems(
        &self,
        writer: &Viewer,
        profile: &Profile,
        id: Option<&str>,
        given: Option<&WriteValues>,
    ) -> ApiResult<Vec<FieldError>> {
        let writer_type = writer.user_type();
        if writer_type == UserType::Admin {
            return Ok(Vec::new());
        }
        let user = catalog().resource("user").expect("user is a resource");
        let known = Known::new()
            .value("id", id.map(str::to_string))
            .value("fk_company", profile.company.clone())
            .value("fk_host", profile.host.clone())
            .value("fk_warehouse", profile.warehouse.clone())
            .value("fk_sponsor", profile.sponsor.clone())
            .value("detail.companies", profile.companies.clone());
        let judgement = judge(
            user,
            &user.authority_of(WriteAction::Write, writer_type),
            writer,
            &known,
        );
        let outcomes = outcomes(&mut &*self, &judgement).await?;
        let mut problems = Vec::new();
        if judgement.verdict(&outcomes) != Verdict::Yes {
            let refused = judgement.refused(&outcomes);
            if refused.is_empty() {
                problems.push(problem(
                    "type",
                    format!("a {} user writes no users", writer_type.as_str()),
                ));
            }
            // A user's own id is nothing a write sets: the other terms say what is wrong.
            for term in refused.iter().filter(|term| term.path != "id") {
                problems.push(problem(
                    term.path,
                    format!("is not {}", term.anchor.describe()),
                ));
            }
        }
        let allowed = writer_type.writable_types();
        if let Some(user_type) = UserType::parse(&profile.user_type)
            && !allowed.contains(&user_type)
        {
            let names: Vec<&str> = allowed.iter().map(|t| t.as_str()).collect();
            problems.push(problem(
                "type",
                format!(
                    "a {} user gives users the type {}, never a wider one such as {}",
                    writer_type.as_str(),
                    names.join(" or "),
                    user_type.as_str()
                ),
            ));
        }
        let own = writer.anchor_ids(Anchor::Companies);
        let foreign: Vec<&str> = profile
            .companies
            .iter()
            .filter(|c| !own.contains(c))
            .map(String::as_str)
            .collect();
        if !foreign.is_empty() {
            problems.push(problem(
                "detail.companies",
                format!(
                    "{} is not {}",
                    foreign.join(", "),
                    Anchor::Companies.describe()
                ),
            ));
        }
        if profile.user_type == UserType::Sponsor.as_str()
            && profile.sponsor.as_ref().map(|s| vec![s.clone()])
                != Some(writer.anchor_ids(Anchor::Sponsor))
        {
            problems.push(problem(
                "fk_sponsor",
                format!("is not {}", Anchor::Sponsor.describe()),
            ));
        }
        let set = |link: &str| {
            given
                .and_then(|values| values.cell(link))
                .and_then(Cell::as_text)
                .map(str::to_string)
        };
        if let Some(company) = set("fk_company")
            && !own.contains(&company)
        {
            problems.push(problem(
                "fk_company",
                format!("is not {}", Anchor::Companies.describe()),
            ));
        }
        for link in ["fk_host", "fk_warehouse"] {
            if set(link).is_some() {
                problems.push(problem(link, "is set by admins only"));
            }
        }
        // One problem per field: the rule and what the write sets may both name one.
        let mut named = std::collections::HashSet::new();
        problems.retain(|p| named.insert(p.field.clone()));
        Ok(problems)
    }

    async fn exists_in(&self, table: &str, id: &str, timing: &Timing) -> ApiResult<bool> {
        let statement = Query::select()
            .column(Alias::new("id"))
            .from(Alias::new(table))
            .and_where(Expr::col(Alias::new("id")).eq(id.to_ascii_uppercase()))
            .to_owned();
        Ok(!self
            .fetch(&statement, &[Kind::Text], timing)
            .await?
            .is_empty())
    }

    /// Every problem of a profile: its type, status and name, the links its type needs, and
    /// links to records that do not exist.
    async fn profile_problems(
        &self,
        profile: &Profile,
        timing: &Timing,
    ) -> ApiResult<Vec<FieldError>> {
        let mut problems = Vec::new();
        let Some(user_type) = UserType::parse(&profile.user_type) else {
            problems.push(problem(
                "type",
                format!(
                    "'{}' is not one of admin, sponsor, company, host, warehouse",
                    profile.user_type
                ),
            ));
            return Ok(problems);
        };
        if !STATUSES.contains(&profile.status.as_str()) {
            problems.push(problem(
                "status",
                format!("'{}' is not active or disabled", profile.status),
            ));
        }
        if profile.name.trim().is_empty() {
            problems.push(problem("name", "must not be empty"));
        }
        let needs = match user_type {
            UserType::Company if profile.company.is_none() => {
                Some(("fk_company", "a company user needs a company"))
            }
            UserType::Host if profile.host.is_none() => {
                Some(("fk_host", "a host user needs a host"))
            }
            UserType::Warehouse if profile.warehouse.is_none() => {
                Some(("fk_warehouse", "a warehouse user needs a warehouse"))
            }
            UserType::Sponsor if profile.sponsor.is_none() => {
                Some(("fk_sponsor", "a sponsor user needs its sponsor company"))
            }
            _ => None,
        };
        if let Some((field, message)) = needs {
            problems.push(problem(field, message));
        }
        let mut links: Vec<(&str, &str, &String)> = Vec::new();
        links.extend(
            profile
                .company
                .iter()
                .map(|id| ("fk_company", "company", id)),
        );
        links.extend(
            profile
                .companies
                .iter()
                .map(|id| ("detail.companies", "company", id)),
        );
        links.extend(profile.host.iter().map(|id| ("fk_host", "host", id)));
        links.extend(
            profile
                .warehouse
                .iter()
                .map(|id| ("fk_warehouse", "warehouse", id)),
        );
        links.extend(
            profile
                .sponsor
                .iter()
                .map(|id| ("fk_sponsor", "company", id)),
        );
        for (field, table, id) in links {
            if !looks_like_id(id) || !self.exists_in(table, id, timing).await? {
                problems.push(problem(field, format!("no {table} has id '{id}'")));
            }
        }
        Ok(problems)
    }

    /// Creates a user after checking every field; returns its id.
    pub async fn create_user(&self, user: &NewUser) -> ApiResult<String> {
        let values = WriteValues::default();
        self.create_user_with(user, &values, &Viewer::admin()).await
    }

    /// Creates a user from a checked API write (`type`, `email`, `name` and the links), as far
    /// as `writer` may create it.
    pub async fn create_user_from(
        &self,
        values: &WriteValues,
        writer: &Viewer,
    ) -> ApiResult<String> {
        let user_type = values.text("type").unwrap_or_default();
        let user = NewUser {
            email: values.text("email").unwrap_or_default(),
            name: values.text("name").unwrap_or_default(),
            user_type: UserType::parse(&user_type).unwrap_or(UserType::Admin),
            companies: Vec::new(),
            host: None,
            warehouse: None,
            sponsor: None,
        };
        self.create_user_with(&user, values, writer).await
    }

    async fn create_user_with(
        &self,
        user: &NewUser,
        values: &WriteValues,
        writer: &Viewer,
    ) -> ApiResult<String> {
        let timing = Timing::default();
        let base = Profile {
            name: user.name.clone(),
            user_type: user.user_type.as_str().to_string(),
            status: "active".to_string(),
            company: user.companies.first().map(|c| c.to_ascii_uppercase()),
            companies: user
                .companies
                .iter()
                .skip(1)
                .map(|c| c.to_ascii_uppercase())
                .collect(),
            host: user.host.as_ref().map(|h| h.to_ascii_uppercase()),
            warehouse: user.warehouse.as_ref().map(|w| w.to_ascii_uppercase()),
            sponsor: user.sponsor.as_ref().map(|s| s.to_ascii_uppercase()),
        };
        let profile = base.with(values);
        let email = values.text("email").unwrap_or_else(|| user.email.clone());
        // Every problem at once: those of the write itself, then those of the profile it
        // makes and of the writer's rights, for fields the write had no problem with.
        let mut problems = values.problems.clone();
        let profile_problems = self.profile_problems(&profile, &timing).await?;
        let writer_problems = self
            .writer_problems(writer, &profile, None, Some(values))
            .await?;
        for found in profile_problems.into_iter().chain(writer_problems) {
            if !values.has_problem(&found.field) {
                problems.push(found);
            }
        }
        if !values.has_problem("email") && (!email.contains('@') || email.trim() != email) {
            problems.push(problem(
                "email",
                format!("'{email}' is not an email address"),
            ));
        }
        if !problems.is_empty() {
            problems.sort_by(|a, b| a.field.cmp(&b.field));
            return Err(validation_failed(problems));
        }
        if self.find_user_id(&email).await?.is_some() {
            return Err(ApiError::new(
                Code::Conflict,
                format!("A user with email '{email}' exists already."),
            )
            .with_field("email"));
        }
        let resource = catalog().resource("user").expect("user is a resource");
        let known = Known::new()
            .value("id", None)
            .value("fk_company", profile.company.clone())
            .value("fk_host", profile.host.clone())
            .value("fk_warehouse", profile.warehouse.clone())
            .value("fk_sponsor", profile.sponsor.clone())
            .value("detail.companies", profile.companies.clone());
        require_visible(&mut &*self, resource, &known, writer).await?;
        let layout = Layout::of(resource);
        let mut record = Record::empty(resource);
        let id = new_id();
        let id_cell = |id: &Option<String>| id.clone().map_or(Cell::Null, Cell::Text);
        record.cells[layout.cell("id")] = Cell::Text(id.clone());
        record.cells[layout.cell("name")] = profile.name.as_str().into();
        record.cells[layout.cell("email")] = email.as_str().into();
        record.cells[layout.cell("type")] = profile.user_type.as_str().into();
        record.cells[layout.cell("status")] = profile.status.as_str().into();
        record.cells[layout.cell("createdDate")] = now_timestamp().into();
        record.cells[layout.cell("detail.lang")] = values
            .text("detail.lang")
            .unwrap_or_else(|| "en".into())
            .into();
        record.cells[layout.cell("fk_company")] = id_cell(&profile.company);
        record.cells[layout.cell("fk_host")] = id_cell(&profile.host);
        record.cells[layout.cell("fk_warehouse")] = id_cell(&profile.warehouse);
        record.cells[layout.cell("fk_sponsor")] = id_cell(&profile.sponsor);
        record.lists[layout.list("detail.companies")] = profile.companies.clone();
        let mut tx = self.begin().await?;
        tx.insert_records(resource, &[record]).await?;
        tx.commit().await?;
        Ok(id)
    }

    async fn stored_profile(&self, id: &str, timing: &Timing) -> ApiResult<Option<Profile>> {
        let statement = Query::select()
            .columns(
                [
                    "name",
                    "type",
                    "status",
                    "fk_company",
                    "fk_host",
                    "fk_warehouse",
                    "fk_sponsor",
                ]
                .map(Alias::new),
            )
            .from(Alias::new("users"))
            .and_where(Expr::col(Alias::new("id")).eq(id))
            .to_owned();
        let rows = self.fetch(&statement, &[Kind::Text; 7], timing).await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let text = |i: usize| row[i].as_text().map(str::to_string);
        let companies = Query::select()
            .column(Alias::new("company_id"))
            .from(Alias::new("user_company"))
            .and_where(Expr::col(Alias::new("user_id")).eq(id))
            .order_by(Alias::new("position"), sea_query::Order::Asc)
            .to_owned();
        let companies = self
            .fetch(&companies, &[Kind::Text], timing)
            .await?
            .into_iter()
            .filter_map(|r| r[0].as_text().map(str::to_string))
            .collect();
        Ok(Some(Profile {
            name: text(0).unwrap_or_default(),
            user_type: text(1).unwrap_or_default(),
            status: text(2).unwrap_or_default(),
            company: text(3),
            host: text(4),
            warehouse: text(5),
            sponsor: text(6),
            companies,
        }))
    }

    /// Changes a user (the caller has checked it is in scope); `None` when there is no such
    /// user. Disabling a user makes its keys fail on the next request. A user the writer may
    /// not write at all is 403; a change that would leave it beyond the writer's rights, 422.
    pub async fn update_user(
        &self,
        id: &str,
        values: &WriteValues,
        writer: &Viewer,
    ) -> ApiResult<Option<()>> {
        let timing = Timing::default();
        let id = id.to_ascii_uppercase();
        let Some(current) = self.stored_profile(&id, &timing).await? else {
            return Ok(None);
        };
        let refused = self
            .writer_problems(writer, &current, Some(&id), None)
            .await?;
        if !refused.is_empty() {
            let reasons: Vec<String> = refused
                .iter()
                .map(|p| format!("{} {}", p.field, p.message))
                .collect();
            return Err(ApiError::new(
                Code::Forbidden,
                format!(
                    "A {} user may not change user '{id}': {}.",
                    writer.user_type().as_str(),
                    reasons.join("; ")
                ),
            ));
        }
        let profile = current.with(values);
        let mut problems = values.problems.clone();
        if problems.is_empty() {
            // The profile is judged only once the write itself is acceptable.
            problems = self.profile_problems(&profile, &timing).await?;
            problems.extend(
                self.writer_problems(writer, &profile, Some(&id), Some(values))
                    .await?,
            );
        }
        if !problems.is_empty() {
            problems.sort_by(|a, b| a.field.cmp(&b.field));
            return Err(validation_failed(problems));
        }
        let mut update = Query::update();
        update
            .table(Alias::new("users"))
            .and_where(Expr::col(Alias::new("id")).eq(id.as_str()));
        let mut changed = false;
        for (field, cell) in &values.cells {
            let value = crate::write::cell_value(field, cell);
            update.value(Alias::new(field.column.as_str()), value);
            if let Some(folded) = field.folded_column() {
                update.value(
                    Alias::new(folded),
                    Value::from(fold(cell.as_text().unwrap_or_default())),
                );
            }
            changed = true;
        }
        let mut tx = self.begin().await?;
        if changed {
            tx.execute("users", &update).await?;
        }
        if let Some(companies) = values.list("detail.companies") {
            let delete = Query::delete()
                .from_table(Alias::new("user_company"))
                .and_where(Expr::col(Alias::new("user_id")).eq(id.as_str()))
                .to_owned();
            tx.execute("user_company", &delete).await?;
            let field = catalog()
                .resource("user")
                .and_then(|r| r.field_at("detail.companies"))
                .expect("users have detail.companies");
            let elements: Vec<(&str, usize, &str)> = companies
                .iter()
                .enumerate()
                .map(|(i, c)| (id.as_str(), i, c.as_str()))
                .collect();
            tx.insert_list_elements(field, &elements).await?;
        }
        tx.commit().await?;
        Ok(Some(()))
    }
}
