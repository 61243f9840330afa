//! The entry points of the fuzz targets (`fuzz/`), and the replay of every input that once
//! made them fail or crashed the server (`fuzz/regressions/<target>/`, the review's requests
//! among them), so a fixed crash stays fixed without a fuzzer. An entry point runs an input
//! through the whole pure pipeline: parse, plan, and the SQL of every statement the store
//! could build from the plan, for one user type under the fuzzer and for every user type in
//! the replay. What it asserts is what the server relies on: no panic, every error a 4xx,
//! every plan within the limits.
//!
//! An input is text: `<resource>?<URL query>` for [`url_query`], `<resource>` and a newline
//! and then a complex-query body for [`query_body`]. Seeds are the test suite's URLs and
//! bodies.

use crate::parse::{parse_body, parse_query_string};
use crate::plan::cost::Cost;
use crate::plan::{ReadPlan, Selection, Viewer, plan_by_id, plan_count, plan_read};
use crate::request::ReadRequest;
use crate::sql::{
    CountStrategy, PageStrategy, count_statement, page_statement, page_tables, related_statement,
};
use brandhub_catalog::{Resource, UserType, catalog};
use brandhub_problem::ApiResult;
use sea_query::{PostgresQueryBuilder, SqliteQueryBuilder};

/// Fuzz entry: a URL query string, planned for one caller (picked by the input's length, so
/// mutations reach every user type).
pub fn url_query(data: &[u8]) {
    url_query_as(data, &[viewer_for(data)]);
}

/// Fuzz entry: a complex-query body (after a resource name and a newline), planned for one
/// caller as [`url_query`].
pub fn query_body(data: &[u8]) {
    query_body_as(data, &[viewer_for(data)]);
}

fn url_query_as(data: &[u8], viewers: &[Viewer]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (resource, query) = text.split_once('?').unwrap_or((text, ""));
    exercise(resource_named(resource), parse_query_string(query), viewers);
}

fn query_body_as(data: &[u8], viewers: &[Viewer]) {
    let split = data.iter().position(|b| *b == b'\n').unwrap_or(data.len());
    let resource = std::str::from_utf8(&data[..split]).unwrap_or_default();
    let body = data.get(split + 1..).unwrap_or_default();
    let request = parse_body(body).map(|body| ReadRequest {
        body,
        ..ReadRequest::default()
    });
    exercise(resource_named(resource), request, viewers);
}

fn viewer_for(data: &[u8]) -> Viewer {
    let mut all = viewers();
    all.swap_remove(data.len() % all.len())
}

/// The resource a name stands for; any other name still picks one, so no input is wasted.
fn resource_named(name: &str) -> &'static Resource {
    let resources = catalog().resources();
    catalog()
        .resource(name)
        .unwrap_or(&resources[name.len() % resources.len()])
}

/// A caller of each type, with ids of its own (several companies, so scopes have lists).
fn viewers() -> Vec<Viewer> {
    let companies: Vec<String> = (1..=3).map(|i| format!("{i:032X}")).collect();
    UserType::ALL
        .iter()
        .map(|&user_type| {
            Viewer::new(
                user_type,
                &format!("{:032X}", 9),
                companies.clone(),
                Some(format!("{:032X}", 7)),
                Some(format!("{:032X}", 8)),
            )
        })
        .collect()
}

/// Asserts that an error is the client's: a 4xx problem, never a 500.
fn assert_client_error<T>(result: &ApiResult<T>, stage: &str) {
    if let Err(error) = result {
        assert!(
            (400..500).contains(&error.status()),
            "{stage} answered {}: {}",
            error.status(),
            error.detail
        );
        assert!(
            !error.detail.is_empty(),
            "{stage}: an error says what is wrong"
        );
    }
}

fn exercise(resource: &'static Resource, request: ApiResult<ReadRequest>, viewers: &[Viewer]) {
    assert_client_error(&request, "parsing");
    let Ok(request) = request else {
        return;
    };
    for viewer in viewers {
        let plan = plan_read(resource, &request, viewer);
        assert_client_error(&plan, "planning");
        let Ok(plan) = plan else {
            continue;
        };
        let cost = Cost::of(&plan);
        assert!(cost.check().is_ok(), "a plan past its limits: {cost:?}");
        build_all(&plan, viewer);
        assert_client_error(&plan_count(resource, &request, viewer), "counting");
        assert_client_error(
            &plan_by_id(resource, "0123456789ABCDEF", &request, viewer),
            "planning by id",
        );
    }
}

/// Every statement the store could build for a plan, rendered for the backend it is for.
pub fn build_all(plan: &ReadPlan, viewer: &Viewer) {
    for statement in statements(plan, viewer, true) {
        let _ = statement.to_string(SqliteQueryBuilder);
    }
    for statement in statements(plan, viewer, false) {
        let _ = statement.to_string(PostgresQueryBuilder);
    }
    let _ = page_tables(plan, viewer);
}

/// Every statement the store could build for a plan on SQLite (`sqlite`) or PostgreSQL:
/// each page and count strategy of that backend, and a batched load of every expanded
/// relation.
pub fn statements(
    plan: &ReadPlan,
    viewer: &Viewer,
    sqlite: bool,
) -> Vec<sea_query::SelectStatement> {
    let mut out = Vec::new();
    let mut pages = vec![
        PageStrategy::InOrder,
        PageStrategy::MatchesFirst { probe_scope: false },
        PageStrategy::MatchesFirst { probe_scope: true },
    ];
    let mut counts = vec![CountStrategy::Plain, CountStrategy::MatchesFirst];
    if sqlite {
        // The forms that keep SQLite's planner from driving by an index (`+column`).
        pages.extend([
            PageStrategy::InOrderProbing,
            PageStrategy::SortMatches { probe_scope: false },
            PageStrategy::SortMatches { probe_scope: true },
        ]);
        counts.push(CountStrategy::ProbeScope);
    }
    for strategy in pages {
        out.push(page_statement(plan, strategy));
    }
    // A scope of a few parents: the statement finding them, and a page read by two of them.
    if let Some((fk, parents)) = crate::sql::scope_parents(plan) {
        out.push(parents);
        let two = ["0".repeat(32), "F".repeat(32)];
        out.push(page_statement(
            &plan.scoped_to_parents(fk, &two),
            PageStrategy::ByParents,
        ));
    }
    let count = crate::plan::CountPlan {
        resource: plan.resource,
        scope: plan.scope.clone(),
        filter: plan.filter.clone(),
    };
    for strategy in counts {
        out.push(count_statement(&count, strategy));
    }
    let mut pending: Vec<&Selection> = vec![&plan.selection];
    while let Some(selection) = pending.pop() {
        for relation in &selection.relations {
            let Some(sub) = &relation.expanded else {
                continue;
            };
            let key = match relation.relation.kind {
                brandhub_catalog::RelationKind::ToOne { .. } => "id",
                brandhub_catalog::RelationKind::ToMany { target_fk } => target_fk,
            };
            let key = sub.resource.field_named(key).expect("relations have keys");
            let keys = vec!["0123456789ABCDEF".to_string(); 3];
            out.push(related_statement(
                sub,
                key,
                &keys,
                &viewer.scope(sub.resource),
                sqlite,
            ));
            pending.push(sub);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Every input kept in `fuzz/regressions/<target>/`.
    fn regressions(target: &str) -> Vec<(String, Vec<u8>)> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/regressions")
            .join(target);
        let mut inputs: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|e| {
                        let name = e.file_name().to_string_lossy().to_string();
                        (name, std::fs::read(e.path()).expect("a readable input"))
                    })
                    .collect()
            })
            .unwrap_or_default();
        inputs.sort();
        // The review's requests that crashed the server are kept there, so a replay that
        // finds nothing has lost them.
        assert!(!inputs.is_empty(), "no inputs in {}", dir.display());
        inputs
    }

    #[test]
    fn url_query_regressions_stay_fixed() {
        for (name, input) in regressions("url_query") {
            eprintln!("url_query/{name}");
            url_query_as(&input, &viewers());
        }
    }

    #[test]
    fn query_body_regressions_stay_fixed() {
        for (name, input) in regressions("query_body") {
            eprintln!("query_body/{name}");
            query_body_as(&input, &viewers());
        }
    }
}
