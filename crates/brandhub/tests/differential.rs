//! Differential property test (docs/API.md, "Parameters of reads" and "Complex queries"): random filters, order_by, paging and complex
//! queries over the demo data must give the same records, in the same order, with the same
//! counts, as a plain reference evaluator over the records in memory. The reference shares
//! nothing with the server but the catalog and the definition of case folding.

mod common;

use brandhub_catalog::{Cell, FieldType, Layout, Record, RelationKind, Resource, catalog};
use brandhub_query::text::fold;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use std::cmp::Ordering;
use std::collections::HashMap;

// ---------- the data in memory ----------

struct Table {
    layout: Layout,
    records: Vec<Record>,
    by_id: HashMap<String, usize>,
}

struct Data {
    tables: HashMap<&'static str, Table>,
}

impl Data {
    fn load() -> Data {
        let mut tables: HashMap<&'static str, Table> = HashMap::new();
        for chunk in common::demo_records() {
            let table = tables.entry(chunk.resource.name).or_insert_with(|| Table {
                layout: Layout::of(chunk.resource),
                records: Vec::new(),
                by_id: HashMap::new(),
            });
            for record in &chunk.records {
                table
                    .by_id
                    .insert(record.id().to_string(), table.records.len());
                table.records.push(record.clone());
            }
        }
        Data { tables }
    }

    fn table(&self, name: &str) -> &Table {
        &self.tables[name]
    }
}

/// A path resolved for the reference: relation hops, then a stored field.
#[derive(Debug, Clone)]
struct RefPath {
    text: String,
    hops: Vec<(&'static str, &'static brandhub_catalog::Relation)>,
    target: &'static str,
    field_path: String,
    ty: FieldType,
}

/// Every scalar path up to two relations deep (to-many only as the first hop).
fn paths_of(resource: &'static Resource) -> Vec<RefPath> {
    fn walk(
        resource: &'static Resource,
        prefix: String,
        hops: Vec<(&'static str, &'static brandhub_catalog::Relation)>,
        depth: usize,
        out: &mut Vec<RefPath>,
    ) {
        for field in resource.leaf_fields() {
            if field.internal || !field.has_column() {
                continue;
            }
            out.push(RefPath {
                text: format!("{prefix}{}", field.path),
                hops: hops.clone(),
                target: resource.name,
                field_path: field.path.clone(),
                ty: field.ty,
            });
        }
        if depth == 2 {
            return;
        }
        for relation in resource.public_relations() {
            if !relation.is_to_one() && !hops.is_empty() {
                continue;
            }
            let mut next = hops.clone();
            next.push((resource.name, relation));
            walk(
                catalog().target(relation),
                format!("{prefix}{}.", relation.name),
                next,
                depth + 1,
                out,
            );
        }
    }
    let mut out = Vec::new();
    walk(resource, String::new(), Vec::new(), 0, &mut out);
    out
}

/// The values at a path: one (possibly unset) through to-one relations, any number through a
/// to-many one. A missing to-one relation on a branch makes that branch's value unset.
fn values_at<'a>(
    data: &'a Data,
    from: &'static str,
    record: &'a Record,
    path: &RefPath,
) -> Vec<Option<&'a Cell>> {
    let mut current: Vec<Option<&'a Record>> = vec![Some(record)];
    let _ = from;
    for (owner, relation) in &path.hops {
        let owner_table = data.table(owner);
        let target = data.table(relation.target);
        let mut next = Vec::new();
        for branch in &current {
            let Some(record) = branch else {
                next.push(None);
                continue;
            };
            match relation.kind {
                RelationKind::ToOne { fk } => {
                    let fk_value = record.cells[owner_table.layout.cell(fk)].as_text();
                    next.push(
                        fk_value
                            .and_then(|id| target.by_id.get(id))
                            .map(|&i| &target.records[i]),
                    );
                }
                RelationKind::ToMany { target_fk } => {
                    let column = target.layout.cell(target_fk);
                    let id = record.id();
                    next.extend(
                        target
                            .records
                            .iter()
                            .filter(|r| r.cells[column].as_text() == Some(id))
                            .map(Some),
                    );
                }
            }
        }
        current = next;
    }
    let layout = &data.table(path.target).layout;
    let column = layout.cell(&path.field_path);
    current
        .into_iter()
        .map(|branch| branch.map(|r| &r.cells[column]))
        .collect()
}

// ---------- the reference semantics ----------

fn glob(pattern: &[char], text: &[char]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some(('@', rest)) => (0..=text.len()).any(|i| glob(rest, &text[i..])),
        Some((c, rest)) => text.first() == Some(c) && glob(rest, &text[1..]),
    }
}

fn unset(cell: Option<&Cell>) -> bool {
    cell.is_none_or(|c| c.is_unset())
}

/// Whether one value satisfies `op value` (op is never `#` here).
fn satisfies(cell: Option<&Cell>, ty: FieldType, op: &str, value: &str) -> bool {
    if value.is_empty() {
        return unset(cell);
    }
    let Some(cell) = cell.filter(|c| !matches!(c, Cell::Null)) else {
        return false;
    };
    let ordering = match (ty, cell) {
        (
            FieldType::Text | FieldType::Id | FieldType::Timestamp | FieldType::PreciseTimestamp,
            Cell::Text(stored),
        ) => {
            let normalise = |s: &str| {
                if ty == FieldType::Text {
                    fold(s)
                } else {
                    s.to_uppercase()
                }
            };
            let stored = normalise(stored);
            if value.contains('@') {
                let pattern: Vec<char> = normalise(value).chars().collect();
                let text: Vec<char> = stored.chars().collect();
                return glob(&pattern, &text);
            }
            if matches!(ty, FieldType::Timestamp | FieldType::PreciseTimestamp) && value.len() == 10
            {
                let day = &stored[..10.min(stored.len())];
                day.cmp(value)
            } else {
                stored.as_bytes().cmp(normalise(value).as_bytes())
            }
        }
        (FieldType::Integer | FieldType::Number, Cell::Integer(_) | Cell::Number(_)) => {
            let stored = match cell {
                Cell::Integer(n) => *n as f64,
                Cell::Number(n) => *n,
                _ => unreachable!(),
            };
            stored
                .partial_cmp(&value.parse::<f64>().expect("generated numbers parse"))
                .unwrap()
        }
        (FieldType::Boolean, Cell::Boolean(b)) => {
            return op == "=" && *b == matches!(value, "true" | "True" | "1");
        }
        _ => return false,
    };
    match op {
        "=" => ordering == Ordering::Equal,
        "<" => ordering == Ordering::Less,
        "<=" => ordering != Ordering::Greater,
        ">" => ordering == Ordering::Greater,
        ">=" => ordering != Ordering::Less,
        _ => unreachable!(),
    }
}

fn condition_holds(
    data: &Data,
    from: &'static str,
    record: &Record,
    path: &RefPath,
    op: &str,
    value: &str,
) -> bool {
    if op == "#" {
        return !condition_holds(data, from, record, path, "=", value);
    }
    let through_many = path.hops.iter().any(|(_, r)| !r.is_to_one());
    let values = values_at(data, from, record, path);
    if through_many {
        values.iter().any(|v| satisfies(*v, path.ty, op, value))
    } else {
        satisfies(values[0], path.ty, op, value)
    }
}

// ---------- generated queries ----------

#[derive(Debug, Clone)]
struct Condition {
    path: usize,
    op: &'static str,
    value: String,
    conjunction: &'static str,
}

/// One value of a URL filter: the comparison it begins with (`=` for a plain value) and the
/// value compared; `escaped` sends a plain value with a leading `=` (equality with the rest).
#[derive(Debug, Clone)]
struct UrlValue {
    op: &'static str,
    value: String,
    escaped: bool,
}

#[derive(Debug, Clone)]
struct Query {
    url: Vec<(usize, Vec<UrlValue>)>,
    query: Vec<Condition>,
    with_array: Option<(usize, Vec<String>, bool)>,
    selection: Vec<Condition>,
    order: Vec<(usize, bool, bool)>,
    page: u64,
    page_size: u64,
}

struct Case<'a> {
    data: &'a Data,
    resource: &'static str,
    paths: Vec<RefPath>,
}

fn value_for(case: &Case, path: usize, pick: usize, style: u8) -> String {
    let p = &case.paths[path];
    let table = case.data.table(case.resource);
    let record = &table.records[pick % table.records.len()];
    let values = values_at(case.data, case.resource, record, p);
    let cell = values.first().copied().flatten();
    match (cell, p.ty) {
        (None | Some(Cell::Null), _) => String::new(),
        (Some(Cell::Text(text)), FieldType::Text) => {
            let chars: Vec<char> = text.chars().collect();
            let cut = |n: usize| chars.iter().take(n).collect::<String>();
            match style % 5 {
                0 => text.clone(),
                1 => text.to_uppercase(),
                2 if !chars.is_empty() => format!("{}@", cut(1 + pick % chars.len().max(1))),
                3 if chars.len() > 2 => {
                    format!("@{}@", chars[1..chars.len() - 1].iter().collect::<String>())
                }
                4 if chars.len() > 1 => {
                    format!("@{}", chars[chars.len() / 2..].iter().collect::<String>())
                }
                _ => text.clone(),
            }
        }
        (Some(Cell::Text(text)), FieldType::Timestamp | FieldType::PreciseTimestamp) => {
            match style % 3 {
                0 => text[..10.min(text.len())].to_string(),
                1 => text.clone(),
                _ => format!("{}@", &text[..7.min(text.len())]),
            }
        }
        (Some(Cell::Text(text)), _) => {
            if style.is_multiple_of(2) {
                text.to_lowercase()
            } else {
                text.clone()
            }
        }
        (Some(Cell::Integer(n)), _) => {
            if style.is_multiple_of(3) {
                format!("{n}.0")
            } else {
                (n + (style as i64 % 3) - 1).to_string()
            }
        }
        (Some(Cell::Number(n)), _) => format!("{n}"),
        (Some(Cell::Boolean(b)), _) => {
            if style.is_multiple_of(2) {
                b.to_string()
            } else {
                if *b { "True" } else { "False" }.to_string()
            }
        }
    }
}

/// Draws that pick a value from the data: (record index, style of the value).
type Picks = Vec<(usize, u8)>;
/// Draws of one condition: (path, record, style, operator, conjunction).
type RawCondition = (usize, usize, u8, &'static str, &'static str);
/// Draws of one URL filter value: (record, style, operator, a plain value sent with `=`).
type UrlPicks = Vec<(usize, u8, &'static str, bool)>;

/// The random draws of one query, before they are turned into values taken from the data.
#[derive(Debug, Clone)]
struct RawQuery {
    url: Vec<(usize, UrlPicks)>,
    query: Vec<RawCondition>,
    with_array: Option<(usize, Picks, bool)>,
    selection: Vec<RawCondition>,
    order: Vec<(usize, bool, bool)>,
    page: u64,
    page_size: u64,
}

fn query_strategy(case: &Case) -> impl Strategy<Value = RawQuery> + use<> {
    let n = case.paths.len();
    let orderable: Vec<usize> = (0..n)
        .filter(|&i| case.paths[i].hops.iter().all(|(_, r)| r.is_to_one()))
        .collect();
    let operators = prop::sample::select(vec!["=", "#", "<", "<=", ">", ">="]);
    let conjunctions = prop::sample::select(vec!["&", "|", "#"]);
    let condition = (
        0..n,
        any::<usize>(),
        any::<u8>(),
        operators.clone(),
        conjunctions,
    );
    let picks = |most: usize| prop::collection::vec((any::<usize>(), any::<u8>()), 1..most);
    // A URL value is mostly plain (any of), else begins with a comparison (ANDed).
    let url_operators = prop::sample::select(vec!["=", "=", "=", "#", "<", "<=", ">", ">="]);
    let url_picks = prop::collection::vec(
        (any::<usize>(), any::<u8>(), url_operators, any::<bool>()),
        1..4,
    );
    (
        prop::collection::vec((0..n, url_picks), 0..3),
        prop::collection::vec(condition.clone(), 0..4),
        prop::option::of((0..n, picks(5), any::<bool>())),
        prop::collection::vec(condition, 0..3),
        prop::collection::vec(
            (
                prop::sample::select(orderable),
                any::<bool>(),
                any::<bool>(),
            ),
            0..3,
        ),
        1u64..4,
        1u64..40,
    )
        .prop_map(
            |(url, query, with_array, selection, order, page, page_size)| RawQuery {
                url,
                query,
                with_array,
                selection,
                order,
                page,
                page_size,
            },
        )
}

impl RawQuery {
    fn realise(&self, case: &Case) -> Query {
        let comparable = |path: usize, op: &'static str, value: &str| -> &'static str {
            let ty = case.paths[path].ty;
            let wildcard = value.contains('@') || value.is_empty();
            if ty == FieldType::Boolean || wildcard {
                if op == "#" { "#" } else { "=" }
            } else {
                op
            }
        };
        let conditions =
            |list: &[(usize, usize, u8, &'static str, &'static str)]| -> Vec<Condition> {
                list.iter()
                    .enumerate()
                    .map(|(i, (path, pick, style, op, conjunction))| {
                        let value = value_for(case, *path, *pick, *style);
                        Condition {
                            path: *path,
                            op: comparable(*path, op, &value),
                            value,
                            conjunction: if i == 0 { "" } else { conjunction },
                        }
                    })
                    .collect()
            };
        let use_array = self.with_array.is_some() && self.query.len() > 1;
        Query {
            // On the wire, filters on one path are one repeated parameter: its plain values
            // are any of, each comparison ANDed with them.
            url: self.url.iter().fold(
                Vec::new(),
                |mut url: Vec<(usize, Vec<UrlValue>)>, (path, picks)| {
                    let values = picks.iter().map(|(p, s, op, escaped)| {
                        let value = value_for(case, *path, *p, *s);
                        UrlValue {
                            op: comparable(*path, op, &value),
                            value,
                            escaped: *escaped,
                        }
                    });
                    match url.iter_mut().find(|(existing, _)| existing == path) {
                        Some((_, existing)) => existing.extend(values),
                        None => url.push((*path, values.collect())),
                    }
                    url
                },
            ),
            // Step 1 is `query` or `querywitharray`, never both: the array replaces longer chains.
            query: if use_array {
                Vec::new()
            } else {
                conditions(&self.query)
            },
            with_array: self.with_array.as_ref().filter(|_| use_array).map(
                |(path, picks, negated)| {
                    (
                        *path,
                        picks
                            .iter()
                            .map(|(p, s)| value_for(case, *path, *p, *s))
                            .collect(),
                        *negated,
                    )
                },
            ),
            selection: conditions(&self.selection),
            order: self.order.clone(),
            page: self.page,
            page_size: self.page_size,
        }
    }
}

fn reference(case: &Case, q: &Query) -> (Vec<String>, usize) {
    let data = case.data;
    let table = data.table(case.resource);
    let chain = |conditions: &[Condition], record: &Record| -> Option<bool> {
        let mut result: Option<bool> = None;
        for c in conditions {
            let next = condition_holds(
                data,
                case.resource,
                record,
                &case.paths[c.path],
                c.op,
                &c.value,
            );
            result = Some(match (result, c.conjunction) {
                (None, _) => next,
                (Some(a), "|") => a || next,
                (Some(a), "#") => a && !next,
                (Some(a), _) => a && next,
            });
        }
        result
    };
    let any_of = |path: usize, values: &[String], record: &Record| {
        values
            .iter()
            .any(|v| condition_holds(data, case.resource, record, &case.paths[path], "=", v))
    };
    let mut found: Vec<&Record> = table
        .records
        .iter()
        .filter(|record| {
            let step1 = chain(&q.query, record).unwrap_or(true)
                && q.with_array.as_ref().is_none_or(|(path, values, negated)| {
                    any_of(*path, values, record) != *negated
                });
            let step2 = chain(&q.selection, record).unwrap_or(true);
            let step3 = q.url.iter().all(|(path, values)| {
                let plain: Vec<String> = values
                    .iter()
                    .filter(|v| v.op == "=")
                    .map(|v| v.value.clone())
                    .collect();
                (plain.is_empty() || any_of(*path, &plain, record))
                    && values.iter().filter(|v| v.op != "=").all(|v| {
                        condition_holds(
                            data,
                            case.resource,
                            record,
                            &case.paths[*path],
                            v.op,
                            &v.value,
                        )
                    })
            });
            step1 && step2 && step3
        })
        .collect();
    let key = |record: &Record, path: usize| -> Option<Cell> {
        values_at(data, case.resource, record, &case.paths[path])[0].cloned()
    };
    let compare_cells = |a: &Option<Cell>, b: &Option<Cell>| -> Ordering {
        let rank = |c: &Option<Cell>| match c {
            None | Some(Cell::Null) => None,
            Some(cell) => Some(cell.clone()),
        };
        match (rank(a), rank(b)) {
            (None, None) => Ordering::Equal,
            (None, _) => Ordering::Less,
            (_, None) => Ordering::Greater,
            (Some(Cell::Text(x)), Some(Cell::Text(y))) => {
                fold(&x).as_bytes().cmp(fold(&y).as_bytes())
            }
            (Some(Cell::Integer(x)), Some(Cell::Integer(y))) => x.cmp(&y),
            (Some(Cell::Number(x)), Some(Cell::Number(y))) => x.total_cmp(&y),
            (Some(Cell::Boolean(x)), Some(Cell::Boolean(y))) => x.cmp(&y),
            (x, y) => panic!("mixed cells {x:?} {y:?}"),
        }
    };
    let last_descending = q.order.last().is_some_and(|(_, descending, _)| *descending);
    found.sort_by(|a, b| {
        for (path, descending, _) in &q.order {
            let ordering = compare_cells(&key(a, *path), &key(b, *path));
            let ordering = if *descending {
                ordering.reverse()
            } else {
                ordering
            };
            if ordering != Ordering::Equal {
                return ordering;
            }
        }
        let by_id = a.id().cmp(b.id());
        if last_descending {
            by_id.reverse()
        } else {
            by_id
        }
    });
    let total = found.len();
    let start = ((q.page - 1) * q.page_size) as usize;
    let page = found
        .iter()
        .skip(start)
        .take(q.page_size as usize)
        .map(|r| r.id().to_string())
        .collect();
    (page, total)
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn request_of(case: &Case, q: &Query) -> (String, Option<Value>) {
    let mut params = vec![
        format!("page={}", q.page),
        format!("pageSize={}", q.page_size),
        "fields=id".to_string(),
    ];
    for (path, values) in &q.url {
        for v in values {
            // A plain value that itself begins with an operator must be sent with `=`.
            let begins_with_operator = v.value.starts_with(['<', '>', '#', '=']);
            let op = match v.op {
                "=" if v.escaped || begins_with_operator => "=",
                "=" => "",
                op => op,
            };
            let text = format!("{op}{}", v.value);
            params.push(format!("{}={}", case.paths[*path].text, encode(&text)));
        }
    }
    if !q.order.is_empty() {
        let items: Vec<String> = q
            .order
            .iter()
            .map(|(path, descending, before)| {
                let sign = if *descending { "<" } else { ">" };
                if *before {
                    format!("{sign}{}", case.paths[*path].text)
                } else {
                    format!("{}{sign}", case.paths[*path].text)
                }
            })
            .collect();
        params.push(format!("order_by={}", encode(&items.join(";"))));
    }
    let conditions = |list: &[Condition]| -> Vec<Value> {
        list.iter()
            .map(|c| {
                let mut object =
                    json!({"field": case.paths[c.path].text, "operator": c.op, "value": c.value});
                if !c.conjunction.is_empty() {
                    object["conjunction"] = json!(c.conjunction);
                }
                object
            })
            .collect()
    };
    let mut body = serde_json::Map::new();
    if !q.query.is_empty() {
        body.insert("query".into(), Value::Array(conditions(&q.query)));
    }
    if let Some((path, values, negated)) = &q.with_array {
        body.insert("querywitharray".into(), json!({"field": case.paths[*path].text, "values": values, "operator": if *negated { "#" } else { "=" }}));
    }
    if !q.selection.is_empty() {
        body.insert(
            "queryselection".into(),
            Value::Array(conditions(&q.selection)),
        );
    }
    (
        params.join("&"),
        (!body.is_empty()).then_some(Value::Object(body)),
    )
}

fn run_differential(db: common::Db) {
    let Some(fx) = common::shared(db, "differential") else {
        return;
    };
    let data = Data::load();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = fx.client();
    let admin = fx.credential("admin").clone();
    for resource in [
        "stock",
        "variant",
        "product",
        "order",
        "orderItem",
        "file",
        "price",
        "image",
        "user",
    ] {
        let case = Case {
            data: &data,
            resource,
            paths: paths_of(catalog().resource(resource).unwrap()),
        };
        let mut runner = TestRunner::new(Config {
            cases: 60,
            failure_persistence: None,
            ..Config::default()
        });
        let strategy = query_strategy(&case);
        let result = runner.run(&strategy, |raw| {
            let q = raw.realise(&case);
            let (expected_ids, expected_total) = reference(&case, &q);
            let (query, body) = request_of(&case, &q);
            let (list, count) = runtime.block_on(async {
                let list = match &body {
                    Some(body) => client
                        .post(format!("{}/api/{resource}/query?{query}", fx.base))
                        .json(body),
                    None => client.get(format!("{}/api/{resource}?{query}", fx.base)),
                };
                let list = list
                    .basic_auth(&admin.email, Some(&admin.secret))
                    .send()
                    .await
                    .unwrap();
                let status = list.status();
                let list: Value = list.json().await.unwrap();
                let count = client
                    .post(format!("{}/api/{resource}/count?{query}", fx.base))
                    .basic_auth(&admin.email, Some(&admin.secret))
                    .json(body.as_ref().unwrap_or(&json!({})))
                    .send()
                    .await
                    .unwrap();
                let count: Value = count.json().await.unwrap();
                ((status, list), count)
            });
            let (status, list) = list;
            prop_assert_eq!(
                status.as_u16(),
                200,
                "{} {} {:?} → {}",
                resource,
                query,
                body,
                list
            );
            let ids: Vec<String> = list["response"][resource]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["id"].as_str().unwrap().to_string())
                .collect();
            prop_assert_eq!(
                list["response"]["recordsFound"].as_u64().unwrap() as usize,
                expected_total,
                "recordsFound of {} {} {:?}",
                resource,
                query,
                body
            );
            prop_assert_eq!(
                count["count"].as_u64().unwrap() as usize,
                expected_total,
                "count of {} {} {:?}",
                resource,
                query,
                body
            );
            prop_assert_eq!(
                ids,
                expected_ids,
                "page of {} {} {:?}",
                resource,
                query,
                body
            );
            Ok(())
        });
        if let Err(error) = result {
            panic!("{resource} on {db:?}: {error}");
        }
    }
}

#[test]
fn sqlite_agrees_with_the_reference() {
    run_differential(common::Db::Sqlite);
}

#[test]
fn postgres_agrees_with_the_reference() {
    run_differential(common::Db::Postgres);
}
