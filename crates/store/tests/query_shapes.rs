//! Random request shapes, deep and wide, against the planner and a real database: paths of
//! up to a dozen relations, long `order_by`, `fields` and `exclude` lists, thousands of values,
//! a hundred conditions, callers with hundreds of companies. Parsing and planning must never
//! panic and either refuse with a 4xx or produce a plan; every statement the store could build
//! from that plan (each page and count strategy, each relation load) must then be accepted by
//! SQLite, and by PostgreSQL when `BRANDHUB_TEST_DATABASE_URL` names a server. The schema is
//! the real one, migrated into an empty database: what is checked is that the backends take
//! the statements, whatever they would find.

mod support;

use brandhub_catalog::{Field, FieldType, Resource, UserType, catalog};
use brandhub_query::fuzz::statements;
use brandhub_query::parse::parse_request;
use brandhub_query::plan::{ReadPlan, Viewer, plan_read};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use sea_query::{PostgresQueryBuilder, SqliteQueryBuilder};
use sea_query_sqlx::SqlxBinder;
use sqlx::AssertSqlSafe;

/// A walk through the catalog: relations picked by `steps`, then a field picked by `end`.
#[derive(Debug, Clone)]
struct Walk {
    steps: Vec<u16>,
    end: u16,
    unknown: bool,
}

impl Walk {
    /// The dotted path the walk spells from `resource`, and the field it ends at; `to_one`
    /// keeps to to-one relations (order keys), as far as a resource has one.
    fn path(&self, resource: &'static Resource, to_one: bool) -> (String, &'static Field) {
        let mut names = Vec::new();
        let mut current = resource;
        for step in &self.steps {
            let relations: Vec<_> = current
                .public_relations()
                .filter(|r| !to_one || r.is_to_one())
                .collect();
            if relations.is_empty() {
                break;
            }
            let relation = relations[*step as usize % relations.len()];
            names.push(relation.name.to_string());
            current = catalog().target(relation);
        }
        let fields: Vec<&'static Field> = current.fields.iter().filter(|f| !f.internal).collect();
        let mut field = fields[self.end as usize % fields.len()];
        names.push(field.name.to_string());
        if !field.subfields.is_empty() {
            field = &field.subfields[(self.end as usize / 7) % field.subfields.len()];
            names.push(field.name.to_string());
        }
        if self.unknown {
            names.push("nope".to_string());
        }
        (names.join("."), field)
    }

    fn text(&self, resource: &'static Resource, to_one: bool) -> String {
        self.path(resource, to_one).0
    }
}

/// Hops of a walk: mostly a few, sometimes around the limits.
fn walk() -> impl Strategy<Value = Walk> {
    let hops = prop_oneof![40 => 0usize..4, 4 => 5usize..9, 1 => 9usize..14];
    (
        hops.prop_flat_map(|n| proptest::collection::vec(any::<u16>(), n)),
        any::<u16>(),
        proptest::bool::weighted(0.01),
    )
        .prop_map(|(steps, end, unknown)| Walk {
            steps,
            end,
            unknown,
        })
}

/// A value for a field, of the form `kind` picks among those its type takes (one kind in
/// thirty is text that fits no type but text, or none at all).
fn value(field: &Field, kind: u8, n: usize) -> String {
    let ty = match (&field.ty, &field.list) {
        (FieldType::List, Some(list)) => list.element,
        (ty, _) => *ty,
    };
    if kind % 30 == 29 {
        // Text that fits no other type, sometimes with a character no database column holds.
        return if n.is_multiple_of(2) {
            format!("x{n}y")
        } else {
            format!("x\0{n}")
        };
    }
    let forms: &[&dyn Fn(usize) -> String] = match ty {
        FieldType::Text => &[
            &|n| format!("word{n}"),
            &|n| format!("w{n}@"),
            &|n| format!("@{n}@x"),
            &|n| format!("É{n}@"),
            &|_| String::new(),
        ],
        FieldType::Id => &[&|n| format!("{n:032X}"), &|n| format!("{n:X}@"), &|_| {
            String::new()
        }],
        FieldType::Integer | FieldType::Number => &[
            &|n| n.to_string(),
            &|n| format!("{n}.5"),
            &|n| format!("-{n}"),
            &|_| String::new(),
        ],
        FieldType::Boolean => &[&|_| "true".into(), &|_| "0".into(), &|_| String::new()],
        FieldType::Timestamp | FieldType::PreciseTimestamp => &[
            &|n| format!("2026-01-{:02}", n % 28 + 1),
            &|n| format!("2026-01-02T03:04:{:02}", n % 60),
            &|_| "2026-01@".into(),
            &|_| String::new(),
        ],
        FieldType::Object | FieldType::List => &[&|n| n.to_string()],
    };
    forms[kind as usize % forms.len()](n)
}

/// An operator that takes the value (mostly): ordering only for plain values of ordered types.
fn operator(field: &Field, value: &str, pick: u8) -> &'static str {
    let ordered = !matches!(field.ty, FieldType::Boolean | FieldType::List)
        && !value.is_empty()
        && !value.contains('@');
    if ordered || pick % 20 == 19 {
        ["=", "#", "<", "<=", ">", ">="][pick as usize % 6]
    } else {
        ["=", "#"][pick as usize % 2]
    }
}

/// How many of something: mostly few, sometimes around a limit.
fn amount(few: usize, around: usize) -> impl Strategy<Value = usize> {
    prop_oneof![12 => 0..few, 1 => around.saturating_sub(3)..around + 3]
}

#[derive(Debug, Clone)]
struct Filter {
    walk: Walk,
    kinds: Vec<u8>,
    repeat: usize,
}

fn filter() -> impl Strategy<Value = Filter> {
    (
        walk(),
        proptest::collection::vec(any::<u8>(), 1..4),
        prop_oneof![8 => Just(1usize), 2 => 1usize..200, 1 => 3_300usize..3_400],
    )
        .prop_map(|(walk, kinds, repeat)| Filter {
            walk,
            kinds,
            repeat,
        })
}

#[derive(Debug, Clone)]
struct Condition {
    walk: Walk,
    operator: u8,
    kind: u8,
    conjunction: u8,
}

#[derive(Debug, Clone)]
struct Shape {
    resource: usize,
    user_type: usize,
    companies: usize,
    filters: Vec<Filter>,
    order: Vec<(Walk, bool)>,
    fields: Option<Vec<Walk>>,
    exclude: Vec<Walk>,
    conditions: Vec<Condition>,
    array: Option<Filter>,
}

fn condition() -> impl Strategy<Value = Condition> {
    (walk(), any::<u8>(), any::<u8>(), any::<u8>()).prop_map(
        |(walk, operator, kind, conjunction)| Condition {
            walk,
            operator,
            kind,
            conjunction,
        },
    )
}

fn shape() -> impl Strategy<Value = Shape> {
    (
        (
            0..catalog().resources().len(),
            0..UserType::ALL.len(),
            prop_oneof![4 => 1usize..4, 1 => 200usize..800],
        ),
        amount(4, 100).prop_flat_map(|n| proptest::collection::vec(filter(), n)),
        amount(3, 8).prop_flat_map(|n| proptest::collection::vec((walk(), any::<bool>()), n)),
        proptest::option::weighted(
            0.5,
            amount(4, 64).prop_flat_map(|n| proptest::collection::vec(walk(), n)),
        ),
        amount(2, 64).prop_flat_map(|n| proptest::collection::vec(walk(), n)),
        amount(5, 100).prop_flat_map(|n| proptest::collection::vec(condition(), n)),
        proptest::option::weighted(0.3, filter()),
    )
        .prop_map(
            |(
                (resource, user_type, companies),
                filters,
                order,
                fields,
                exclude,
                conditions,
                array,
            )| {
                Shape {
                    resource,
                    user_type,
                    companies,
                    filters,
                    order,
                    fields,
                    exclude,
                    conditions,
                    array,
                }
            },
        )
}

impl Shape {
    fn resource(&self) -> &'static Resource {
        &catalog().resources()[self.resource]
    }

    fn viewer(&self) -> Viewer {
        Viewer::new(
            UserType::ALL[self.user_type],
            &format!("{:032X}", 1),
            (0..self.companies)
                .map(|i| format!("{:032X}", i + 100))
                .collect(),
            Some(format!("{:032X}", 2)),
            Some(format!("{:032X}", 3)),
        )
    }

    fn query_string(&self) -> String {
        let resource = self.resource();
        let mut query = form_urlencoded::Serializer::new(String::new());
        for filter in &self.filters {
            let (path, field) = filter.walk.path(resource, false);
            for n in 0..filter.repeat {
                query.append_pair(
                    &path,
                    &value(field, filter.kinds[n % filter.kinds.len()], n),
                );
            }
        }
        if !self.order.is_empty() {
            let keys: Vec<String> = self
                .order
                .iter()
                .map(|(walk, up)| {
                    format!(
                        "{}{}",
                        if *up { ">" } else { "<" },
                        walk.text(resource, true)
                    )
                })
                .collect();
            query.append_pair("order_by", &keys.join(";"));
        }
        if let Some(fields) = &self.fields {
            let items: Vec<String> = fields.iter().map(|w| w.text(resource, false)).collect();
            query.append_pair("fields", &items.join(","));
        }
        if !self.exclude.is_empty() {
            let items: Vec<String> = self
                .exclude
                .iter()
                .map(|w| w.text(resource, false))
                .collect();
            query.append_pair("exclude", &items.join(","));
        }
        query.finish()
    }

    fn body(&self) -> String {
        let resource = self.resource();
        let mut body = serde_json::Map::new();
        if !self.conditions.is_empty() {
            let conditions: Vec<serde_json::Value> = self
                .conditions
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let (path, field) = c.walk.path(resource, false);
                    let value = value(field, c.kind, i);
                    let mut condition = serde_json::json!({
                        "field": path,
                        "operator": operator(field, &value, c.operator),
                        "value": value,
                    });
                    if i > 0 {
                        condition["conjunction"] =
                            ["&", "|", "#"][c.conjunction as usize % 3].into();
                    }
                    condition
                })
                .collect();
            body.insert("queryselection".into(), conditions.into());
        }
        if let Some(array) = &self.array {
            let (path, field) = array.walk.path(resource, false);
            let values: Vec<String> = (0..array.repeat)
                .map(|n| value(field, array.kinds[n % array.kinds.len()], n))
                .collect();
            body.insert(
                "querywitharray".into(),
                serde_json::json!({"field": path, "values": values}),
            );
        }
        if body.is_empty() {
            String::new()
        } else {
            serde_json::Value::Object(body).to_string()
        }
    }
}

/// The databases the statements run on: a migrated SQLite file, and PostgreSQL if configured.
struct Databases {
    sqlite: sqlx::SqlitePool,
    postgres: Option<sqlx::PgPool>,
    _dir: tempfile::TempDir,
}

async fn migrated(url: &str) {
    support::migrated_store(url, 2).await.close().await;
}

/// Fresh databases for one test, `name` telling them apart on the PostgreSQL server.
async fn databases(name: &str) -> Databases {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let url = format!("sqlite://{}", dir.path().join("shapes.db").display());
    migrated(&url).await;
    let sqlite = sqlx::SqlitePool::connect(&url).await.expect("SQLite opens");
    let postgres = match support::fresh_postgres("query_shapes", name).await {
        Some(url) => {
            migrated(&url).await;
            Some(sqlx::PgPool::connect(&url).await.expect("PostgreSQL opens"))
        }
        None => None,
    };
    Databases {
        sqlite,
        postgres,
        _dir: dir,
    }
}

/// What one shape did, for the statistics at the end.
#[derive(Debug, Default)]
struct Outcome {
    /// Refusals by code, and by limit where one is named.
    reasons: std::collections::BTreeMap<String, usize>,
    refused: usize,
    planned: usize,
    statements: usize,
}

impl Outcome {
    fn refuse(&mut self, error: &brandhub_problem::ApiError) {
        self.refused += 1;
        let limit = brandhub_query::limits::ALL
            .iter()
            .find(|l| error.detail.contains(&format!("the limit {} ", l.name)));
        let reason = match limit {
            Some(limit) => limit.name.to_string(),
            None => error.code.as_str().to_string(),
        };
        *self.reasons.entry(reason).or_default() += 1;
    }
}

async fn check(shape: &Shape, db: &Databases, outcome: &mut Outcome) -> Result<(), String> {
    let query = shape.query_string();
    let body = shape.body();
    let request = match parse_request(&query, body.as_bytes()) {
        Ok(request) => request,
        Err(error) if error.status() < 500 => {
            outcome.refuse(&error);
            return Ok(());
        }
        Err(error) => return Err(format!("parsing answered {error}")),
    };
    let viewer = shape.viewer();
    let plan = match plan_read(shape.resource(), &request, &viewer) {
        Ok(plan) => plan,
        Err(error) if error.status() < 500 => {
            outcome.refuse(&error);
            return Ok(());
        }
        Err(error) => return Err(format!("planning answered {error}")),
    };
    outcome.planned += 1;
    outcome.statements += run_all(&plan, &viewer, db).await?;
    Ok(())
}

/// Runs every statement a plan can become on each database; returns how many there were.
async fn run_all(plan: &ReadPlan, viewer: &Viewer, db: &Databases) -> Result<usize, String> {
    let mut count = 0;
    for statement in statements(plan, viewer, true) {
        count += 1;
        let (sql, values) = statement.build_sqlx(SqliteQueryBuilder);
        if let Err(error) = sqlx::query_with(AssertSqlSafe(sql.clone()), values)
            .fetch_all(&db.sqlite)
            .await
        {
            return Err(format!("SQLite refused ({error}): {}", cut(&sql)));
        }
    }
    if let Some(postgres) = &db.postgres {
        for statement in statements(plan, viewer, false) {
            count += 1;
            let (sql, values) = statement.build_sqlx(PostgresQueryBuilder);
            if let Err(error) = sqlx::query_with(AssertSqlSafe(sql.clone()), values)
                .fetch_all(postgres)
                .await
            {
                return Err(format!("PostgreSQL refused ({error}): {}", cut(&sql)));
            }
        }
    }
    Ok(count)
}

fn cut(sql: &str) -> String {
    brandhub_query::limits::shorten(sql)
}

#[test]
fn random_request_shapes_are_refused_or_run() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let db = runtime.block_on(databases("random"));
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let outcome = std::cell::RefCell::new(Outcome::default());
    let result = runner.run(&shape(), |shape| {
        runtime
            .block_on(check(&shape, &db, &mut outcome.borrow_mut()))
            .map_err(|failure| {
                TestCaseError::fail(format!(
                    "{failure}\n  query: {}\n  body: {}",
                    cut(&shape.query_string()),
                    cut(&shape.body())
                ))
            })
    });
    let outcome = outcome.into_inner();
    eprintln!("{outcome:?}");
    if let Err(error) = result {
        panic!("{error}");
    }
    // The shapes reach both outcomes: the property is not vacuous.
    assert!(outcome.refused > 0 && outcome.planned > 0, "{outcome:?}");
}

/// A chain of `n` conditions on `path`, alternating OR and AND (the deepest nesting).
fn alternating(path: &str, n: usize) -> String {
    let conditions: Vec<String> = (0..n)
        .map(|i| {
            let conjunction = match i {
                0 => String::new(),
                i if i % 2 == 0 => r#","conjunction":"&""#.to_string(),
                _ => r#","conjunction":"|""#.to_string(),
            };
            format!(r##"{{"field":"{path}","operator":"#","value":"v{i}@x"{conjunction}}}"##)
        })
        .collect();
    format!(r#"{{"queryselection":[{}]}}"#, conditions.join(","))
}

fn caller(user_type: UserType, companies: usize) -> Viewer {
    Viewer::new(
        user_type,
        &format!("{:032X}", 1),
        (0..companies)
            .map(|i| format!("{:032X}", i + 100))
            .collect(),
        Some(format!("{:032X}", 2)),
        Some(format!("{:032X}", 3)),
    )
}

#[test]
fn the_largest_requests_within_the_limits_run() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let db = runtime.block_on(databases("largest"));
    // Eight relations, ping-ponging between brands and their products, each in the caller's
    // scope; a hundred conditions on it, alternating OR and AND.
    let deep = "orderItem_variant.variant_product.product_brand.brand_product.product_brand.brand_product.product_brand.brand_product.title";
    let values: Vec<String> = (0..9_900).map(|i| format!("code=C{i}")).collect();
    let patterns: Vec<String> = (0..100).map(|i| format!("title={i}@")).collect();
    let orders = [
        "orderItem_order.order_brandStore.brandStore_brand.brand_company.company_sponsor.company_sponsor.company_sponsor.company_sponsor.code",
        "orderItem_order.order_brandStore.brandStore_warehouse.warehouse_company.company_sponsor.company_sponsor.company_sponsor.company_sponsor.code",
        "orderItem_order.order_warehouse.warehouse_company.company_sponsor.company_sponsor.company_sponsor.company_sponsor.company_sponsor.code",
        "orderItem_variant.variant_product.product_brand.brand_company.company_sponsor.company_sponsor.company_sponsor.company_sponsor.code",
        "orderItem_order.order_brandStore.brandStore_store.store_host.code",
        "lineGross",
        "orderItem_order.orderDate",
        "status",
    ];
    let fields: Vec<String> = catalog()
        .resource("order")
        .unwrap()
        .public_relations()
        .map(|r| format!("{}.*", r.name))
        .collect();
    // Eight relations for a host: four conditions fit the subqueries of their scopes.
    let cases: Vec<(&str, UserType, usize, String, String)> = vec![
        (
            "orderItem",
            UserType::Host,
            1,
            String::new(),
            alternating(deep, 4),
        ),
        (
            "orderItem",
            UserType::Sponsor,
            3,
            String::new(),
            alternating(deep, 9),
        ),
        (
            "orderItem",
            UserType::Host,
            1,
            String::new(),
            alternating("hostItemRef", 100),
        ),
        (
            "orderItem",
            UserType::Admin,
            0,
            String::new(),
            alternating(deep, 16),
        ),
        (
            "product",
            UserType::Sponsor,
            40,
            format!("{}&{}", values.join("&"), patterns.join("&")),
            String::new(),
        ),
        (
            "orderItem",
            UserType::Company,
            3,
            format!("order_by={}", orders.join(";")),
            String::new(),
        ),
        (
            "orderItem",
            UserType::Admin,
            0,
            format!("order_by={}", orders.join(";")),
            String::new(),
        ),
        (
            "order",
            UserType::Company,
            3,
            format!("fields=*,{}", fields.join(",")),
            String::new(),
        ),
        // The longest value, a pattern of wildcards.
        (
            "product",
            UserType::Host,
            1,
            format!("description={}", "a@".repeat(2048)),
            String::new(),
        ),
    ];
    for (resource, user_type, companies, query, body) in cases {
        let viewer = caller(user_type, companies);
        let request = parse_request(&query, body.as_bytes())
            .unwrap_or_else(|e| panic!("{resource} as {user_type:?}: {e}"));
        let plan = plan_read(catalog().resource(resource).unwrap(), &request, &viewer)
            .unwrap_or_else(|e| panic!("{resource} as {user_type:?}: {e}"));
        let cost = brandhub_query::plan::cost::Cost::of(&plan);
        let started = std::time::Instant::now();
        runtime
            .block_on(run_all(&plan, &viewer, &db))
            .unwrap_or_else(|e| panic!("{resource} as {user_type:?}: {e}"));
        eprintln!(
            "{resource} as {user_type:?}: {cost:?}, ran in {:?}",
            started.elapsed()
        );
    }
    // A host's scope goes into every relation of every condition: a hundred conditions
    // through eight relations would have the database plan thousands of subqueries.
    let request = parse_request("", alternating(deep, 100).as_bytes()).unwrap();
    let error = plan_read(
        catalog().resource("orderItem").unwrap(),
        &request,
        &caller(UserType::Host, 1),
    )
    .unwrap_err();
    assert!(error.detail.contains("subqueries"), "{}", error.detail);
    // A sponsor of hundreds of companies takes them into every relation's scope: too many
    // bound values.
    let values: Vec<String> = (0..9_000).map(|i| format!("code=C{i}")).collect();
    let request = parse_request(
        &format!("{}&variant_product.title=x", values.join("&")),
        alternating("variant_product.product_brand.name", 10).as_bytes(),
    )
    .unwrap();
    let error = plan_read(
        catalog().resource("variant").unwrap(),
        &request,
        &caller(UserType::Sponsor, 1000),
    )
    .unwrap_err();
    assert!(error.detail.contains("bound_values"), "{}", error.detail);
}
