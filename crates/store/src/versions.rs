//! Per-table write versions: every committed write bumps the versions of the tables it wrote
//! (see [`crate::db::WriteTx::commit`]). A request reads all versions once ([`Versions`]);
//! anything cached for it (an authenticated key, a count, a rendered page) is stamped with the
//! sum of the versions it depends on. Versions only grow, so the sum changes exactly when one
//! of them was bumped, and nothing stale is ever served. The versions live in the database, so
//! this holds across server processes.
//!
//! A table has several versions, so that a count is not invalidated by writes that cannot
//! change it:
//! - its own name: any write of the table (pages depend on it);
//! - [`rows_key`]: rows came or went;
//! - [`columns_key`]: rows changed in columns the write did not name;
//! - one per indexed field ([`field_key`]): an update that named the field's column (the
//!   indexed fields are the ones filters, joins and scopes go through);
//! - [`others_key`]: an update that named a column of a field that is not indexed.
//!
//! A count depends on the rows and unnamed-column versions of every table its filter reaches
//! and on the versions of the fields it compares and joins through ([`predicate_keys`]), so a
//! `PATCH` of a stock record's `inStock` leaves the count of a brand's stock cached.
//!
//! On PostgreSQL a version is held in [`STRIPES`] rows and is their sum: a write bumps the
//! rows of one stripe, so that writes of one table in flight at once do not wait for each
//! other's commits on one locked row (see [`crate::row_log`] for what that means for the
//! log of written rows).

use crate::db::{Backend, Kind, Store, Timing};
use crate::error::StoreResult;
use brandhub_catalog::{Field, RelationKind, Resource, catalog};
use brandhub_query::plan::{FieldPath, Predicate, ReadPlan};
use sea_query::{Alias, Expr, ExprTrait, InsertStatement, OnConflict, Query, SelectStatement};
use std::collections::{BTreeSet, HashMap};
use std::sync::LazyLock;

/// The versions table.
pub const TABLE: &str = "bh_table_version";

/// The version every bump of any other version bumps too, in the same statement (brandhub's
/// commits, [`bump_statement`]; a write from outside, [`crate::external`]). While it stands no
/// version moved, so a process keeps the versions it last read whole and reads only this one
/// again ([`Store::versions`], docs/CACHE.md, "Versions").
pub const ANY_WRITE: &str = "*";

fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

/// The derived version names of every versioned table, made once.
struct Names {
    rows: HashMap<&'static str, &'static str>,
    columns: HashMap<&'static str, &'static str>,
    others: HashMap<&'static str, &'static str>,
    /// table → SQL column → the versions an update of that column bumps: the field's own
    /// (its folded copy's column names it too) and those of the generated fields computed
    /// from it.
    written: HashMap<&'static str, HashMap<String, Vec<&'static str>>>,
    /// table → field column → the indexed field's version.
    fields: HashMap<&'static str, HashMap<String, &'static str>>,
}

static NAMES: LazyLock<Names> = LazyLock::new(|| {
    let mut names = Names {
        rows: HashMap::new(),
        columns: HashMap::new(),
        others: HashMap::new(),
        written: HashMap::new(),
        fields: HashMap::new(),
    };
    for table in crate::schema::versioned_tables() {
        names.rows.insert(table, leak(format!("{table}#rows")));
        names.columns.insert(table, leak(format!("{table}#cols")));
        names.others.insert(table, leak(format!("{table}#other")));
    }
    for resource in catalog().resources() {
        let table = resource.table;
        let other = names.others[table];
        let own =
            |field: &Field, fields: &mut HashMap<&'static str, HashMap<String, &'static str>>| {
                if !field.indexed {
                    return other;
                }
                *fields
                    .entry(table)
                    .or_default()
                    .entry(field.column.clone())
                    .or_insert_with(|| leak(format!("{table}.{}", field.column)))
            };
        for field in resource.leaf_fields().filter(|f| f.has_column()) {
            let key = own(field, &mut names.fields);
            let mut columns = vec![field.column.clone()];
            columns.extend(field.folded_column());
            for column in columns {
                names
                    .written
                    .entry(table)
                    .or_default()
                    .entry(column)
                    .or_default()
                    .push(key);
            }
        }
        for field in resource.leaf_fields().filter(|f| f.has_column()) {
            let Some(brandhub_catalog::Generated::ClampedDifference {
                minuend,
                subtrahend,
            }) = field.generated
            else {
                continue;
            };
            let key = own(field, &mut names.fields);
            for input in [minuend, subtrahend] {
                let input = resource.field_at(input).expect("generated from fields");
                names
                    .written
                    .entry(table)
                    .or_default()
                    .entry(input.column.clone())
                    .or_default()
                    .push(key);
            }
        }
    }
    names
});

/// The name of a table's version of its rows rather than their contents: bumped by every
/// write that may insert or delete rows of the table, and not by an update, which changes
/// what rows hold but never how many there are. The count of every record of a resource is
/// stamped with it alone, so that `PATCH`es leave it cached. A table brandhub does not
/// version answers its own name (its one version).
pub fn rows_key(table: &'static str) -> &'static str {
    NAMES.rows.get(table).copied().unwrap_or(table)
}

/// The name of a table's version bumped by writes that may change any column of existing
/// rows (an upsert, an update that does not say which columns it sets).
pub fn columns_key(table: &'static str) -> &'static str {
    NAMES.columns.get(table).copied().unwrap_or(table)
}

/// The name of a table's version bumped by updates of the columns of fields that are not
/// indexed.
pub fn others_key(table: &'static str) -> &'static str {
    NAMES.others.get(table).copied().unwrap_or(table)
}

/// The version of one field of a resource's records: its own for an indexed field, else the
/// one all its table's other fields share.
pub fn field_key(resource: &Resource, field: &Field) -> &'static str {
    NAMES
        .fields
        .get(resource.table)
        .and_then(|fields| fields.get(&field.column))
        .copied()
        .unwrap_or_else(|| others_key(resource.table))
}

/// The versions an update of these SQL columns of `table` bumps beside the table's own. A
/// column no field owns (the row version) counts as another field's.
pub fn written_keys<'a>(
    table: &'static str,
    columns: impl IntoIterator<Item = &'a str>,
) -> Vec<&'static str> {
    let mut keys = Vec::new();
    for column in columns {
        match NAMES.written.get(table).and_then(|by| by.get(column)) {
            Some(found) => keys.extend(found.iter().copied()),
            None => keys.push(others_key(table)),
        }
    }
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// The versions of `resource`'s table that every write of it bumps, except an update of
/// `field` alone: its rows', its unnamed columns', and every field's but `field`'s own. A
/// field without a version of its own (not indexed) shares it with others: then the
/// table's own name, which every write bumps.
pub fn keys_of_all_writes_but(resource: &'static Resource, field: &Field) -> Vec<&'static str> {
    let table = resource.table;
    let apart = field_key(resource, field);
    if apart == others_key(table) {
        return vec![table];
    }
    let mut keys = vec![rows_key(table), columns_key(table), others_key(table)];
    keys.extend(
        NAMES
            .fields
            .get(table)
            .into_iter()
            .flat_map(|by_column| by_column.values().copied())
            .filter(|key| *key != apart),
    );
    keys.sort_unstable();
    keys
}

/// Every version name: the rows [`crate::schema`] creates in the versions table.
pub fn all_keys() -> Vec<&'static str> {
    let mut keys = Vec::new();
    for table in crate::schema::versioned_tables() {
        keys.extend([
            table,
            rows_key(table),
            columns_key(table),
            others_key(table),
        ]);
    }
    let mut fields: Vec<&'static str> = NAMES
        .fields
        .values()
        .flat_map(|by_column| by_column.values().copied())
        .collect();
    fields.sort_unstable();
    keys.extend(fields);
    keys.push(ANY_WRITE);
    keys
}

/// The versions a filter of `resource`'s records depends on: for the resource and every
/// resource its conditions reach, whether rows came or went or changed in unnamed columns;
/// the fields the conditions compare and the foreign keys they join through; the scopes of
/// the relations they pass; the list tables they look into.
pub fn predicate_keys(
    resource: &'static Resource,
    predicate: &Predicate,
    keys: &mut BTreeSet<&'static str>,
) {
    keys.insert(rows_key(resource.table));
    keys.insert(columns_key(resource.table));
    for leaf in predicate.leaves() {
        path_keys(resource, &leaf.path, keys);
    }
}

/// The versions that decide which records a page of a plan lists and in which order: those
/// of its filter and scope ([`matching_keys`]) and of the fields its order keys reach
/// ([`ordering_keys`]). While they stand, the page lists the same ids, whatever else its
/// records' fields became.
pub fn listing_keys(plan: &ReadPlan) -> Vec<&'static str> {
    let mut keys: BTreeSet<&'static str> = matching_keys(plan).into_iter().collect();
    keys.extend(ordering_keys(plan));
    keys.into_iter().collect()
}

/// The versions that decide which records a plan finds (its filter and scope): while they
/// stand, the same records match and the count is the same.
pub fn matching_keys(plan: &ReadPlan) -> Vec<&'static str> {
    let mut keys = BTreeSet::new();
    predicate_keys(plan.resource, &plan.full_filter(), &mut keys);
    keys.into_iter().collect()
}

/// The versions of the fields a plan's order keys reach.
pub fn ordering_keys(plan: &ReadPlan) -> Vec<&'static str> {
    let mut keys = BTreeSet::new();
    for order in &plan.order {
        path_keys(plan.resource, &order.path, &mut keys);
    }
    keys.into_iter().collect()
}

/// The versions of what a path from `resource` reads: the foreign keys it joins through, the
/// rows and scopes of the records it reaches, and the field (or list table) it ends at.
fn path_keys(resource: &'static Resource, path: &FieldPath, keys: &mut BTreeSet<&'static str>) {
    let mut at = resource;
    for (hop, scope) in path.hops.iter().zip(&path.hop_scopes) {
        match hop.relation.kind {
            RelationKind::ToOne { fk } => {
                let field = at.field_named(fk).expect("catalog-checked relation");
                keys.insert(field_key(at, field));
            }
            RelationKind::ToMany { target_fk } => {
                let field = hop
                    .to
                    .field_named(target_fk)
                    .expect("catalog-checked relation");
                keys.insert(field_key(hop.to, field));
            }
        }
        predicate_keys(hop.to, scope, keys);
        at = hop.to;
    }
    match &path.field.list {
        Some(list) => {
            keys.insert(list.table);
        }
        None => {
            keys.insert(field_key(at, path.field));
        }
    }
}

/// How many rows hold each version on PostgreSQL. A bump locks its rows until its
/// transaction commits (the WAL flushed), so with one row per version the writes of one table
/// would take turns through each other's commits; each write bumps the rows of one stripe
/// ([`next_stripe`], docs/decisions/0014-postgres-striped-version-rows.md) and a version is the sum of its rows, which still only grows, by one
/// per transaction. SQLite, one writer at a time, bumps stripe 0 only.
pub const STRIPES: usize = 4;

/// The mark between a version's name and its stripe in the name of a stripe's row.
const STRIPE_MARK: char = '|';

/// Each version name's rows: the name itself (stripe 0), then `name|1` … (made once).
static STRIPED: LazyLock<HashMap<&'static str, [&'static str; STRIPES]>> = LazyLock::new(|| {
    all_keys()
        .into_iter()
        .map(|name| {
            let rows = std::array::from_fn(|stripe| match stripe {
                0 => name,
                _ => leak(format!("{name}{STRIPE_MARK}{stripe}")),
            });
            (name, rows)
        })
        .collect()
});

/// The row of version `name` in `stripe` (a name the schema does not create has stripe 0
/// only).
pub(crate) fn striped(name: &'static str, stripe: usize) -> &'static str {
    STRIPED
        .get(name)
        .map_or(name, |rows| rows[stripe % STRIPES])
}

/// Every row that holds a part of version `name`.
pub(crate) fn rows_of(name: &'static str) -> Vec<&'static str> {
    STRIPED
        .get(name)
        .map_or_else(|| vec![name], |rows| rows.to_vec())
}

/// The stripe the next PostgreSQL write bumps: each in turn, so that writes in flight at once
/// lock different rows.
pub(crate) fn next_stripe() -> usize {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % STRIPES
}

/// `INSERT INTO bh_table_version … VALUES (…), (…) ON CONFLICT DO UPDATE SET version =
/// version + 1` of the rows of `stripe`, in sorted order: rows are locked in the order of the
/// values, so concurrent writers lock the version rows they share in the same order and never
/// deadlock (an `UPDATE … WHERE table_name IN (…)` locks them in the order a scan meets them,
/// which changes as the rows are rewritten). A missing row is created.
pub fn bump_statement(names: &[&'static str], stripe: usize) -> InsertStatement {
    let mut insert = Query::insert();
    insert
        .into_table(Alias::new(TABLE))
        .columns([Alias::new("table_name"), Alias::new("version")]);
    for name in sorted_names(names, stripe) {
        insert.values_panic([name.into(), 1i64.into()]);
    }
    insert.on_conflict(one_up());
    insert.to_owned()
}

/// [`bump_statement`] whose rows come only once `after` is decided: a condition over what
/// other parts of the same statement wrote, so that PostgreSQL runs those (and takes their
/// locks) before it locks the version rows, as separate statements before the bump would.
pub(crate) fn bump_statement_after(
    names: &[&'static str],
    stripe: usize,
    after: Expr,
) -> InsertStatement {
    let rows: Vec<(String, i64)> = sorted_names(names, stripe)
        .into_iter()
        .map(|name| (name.to_string(), 1))
        .collect();
    let bumps = Alias::new("bumps");
    let select = Query::select()
        .column((bumps.clone(), Alias::new("column1")))
        .column((bumps.clone(), Alias::new("column2")))
        .from_values(rows, bumps)
        .and_where(after)
        .to_owned();
    let mut insert = Query::insert();
    insert
        .into_table(Alias::new(TABLE))
        .columns([Alias::new("table_name"), Alias::new("version")])
        .select_from(select)
        .expect("two columns from two");
    insert.on_conflict(one_up());
    insert.to_owned()
}

/// The rows of a bump of `stripe` in the order they are locked, [`ANY_WRITE`]'s among them.
fn sorted_names(names: &[&'static str], stripe: usize) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = names.iter().map(|name| striped(name, stripe)).collect();
    if !names.is_empty() {
        names.push(striped(ANY_WRITE, stripe));
    }
    names.sort_unstable();
    names.dedup();
    names
}

/// A bump's version one up where its row exists.
fn one_up() -> OnConflict {
    OnConflict::column(Alias::new("table_name"))
        .value(
            Alias::new("version"),
            Expr::col((Alias::new(TABLE), Alias::new("version"))).add(1),
        )
        .to_owned()
}

/// The rows of each versioned table's own version, and their places in [`ByName::rows`]: what
/// the log of written rows is kept by ([`crate::row_log`]).
static ROW_PLACES: LazyLock<HashMap<&'static str, usize>> = LazyLock::new(|| {
    let mut places = HashMap::new();
    for table in crate::schema::versioned_tables() {
        for row in rows_of(table) {
            let next = places.len();
            places.entry(row).or_insert(next);
        }
    }
    places
});

/// Where the value of each row the versions table may hold goes: its version name's place in
/// [`ByName::known`] (the rows of one name add up) and, for a row of a table's own version,
/// its place in [`ByName::rows`]. One lookup per row read.
static ROW_READS: LazyLock<HashMap<&'static str, (usize, Option<usize>)>> = LazyLock::new(|| {
    let mut reads = HashMap::new();
    for (name, rows) in STRIPED.iter() {
        for row in rows {
            reads.insert(*row, (PLACES[name], ROW_PLACES.get(row).copied()));
        }
    }
    reads
});

/// Each version name the schema creates ([`all_keys`]) and its place in [`ByName::known`].
static PLACES: LazyLock<HashMap<&'static str, usize>> = LazyLock::new(|| {
    let mut places = HashMap::new();
    for key in all_keys() {
        let next = places.len();
        places.entry(key).or_insert(next);
    }
    places
});

/// Versions by name. Every request reads all of them (about 190), so the names the schema
/// creates are kept by their place ([`PLACES`]) in one vector, read without an allocation
/// per name; any other name a write bumped (a bump makes its row when it is missing) is kept
/// beside them, so none is lost.
#[derive(Debug, Clone, Default)]
struct ByName {
    known: Vec<i64>,
    other: Vec<(String, i64)>,
    /// The rows of the tables' own versions, by their places in [`ROW_PLACES`].
    rows: Vec<i64>,
}

impl ByName {
    /// Versions read from `name:version,…` (names hold neither `:` nor `,`), a version's
    /// stripes ([`STRIPES`]) added up.
    fn parse(text: &str) -> ByName {
        let mut by_name = ByName {
            known: vec![0; PLACES.len()],
            other: Vec::new(),
            rows: vec![0; ROW_PLACES.len()],
        };
        for pair in text.split(',') {
            let Some((row, version)) = pair.rsplit_once(':') else {
                continue;
            };
            let Ok(version) = version.parse::<i64>() else {
                continue;
            };
            if let Some(&(at, row_at)) = ROW_READS.get(row) {
                by_name.known[at] += version;
                if let Some(row_at) = row_at {
                    by_name.rows[row_at] = version;
                }
                continue;
            }
            let name = row.split_once(STRIPE_MARK).map_or(row, |(name, _)| name);
            by_name.set(name, by_name.get(name).unwrap_or(0) + version);
        }
        by_name
    }

    /// One row of a table's own version ([`striped`]) as read; a row not kept apart (of a
    /// table the schema does not version) is its name's whole version.
    fn row(&self, row: &str) -> i64 {
        match ROW_PLACES.get(row) {
            Some(&at) => self.rows.get(at).copied().unwrap_or(0),
            None => self.get(row).unwrap_or(0),
        }
    }

    fn get(&self, name: &str) -> Option<i64> {
        match PLACES.get(name) {
            Some(&at) => self.known.get(at).copied(),
            None => self
                .other
                .iter()
                .find(|(other, _)| other == name)
                .map(|(_, version)| *version),
        }
    }

    fn set(&mut self, name: &str, version: i64) {
        match PLACES.get(name) {
            Some(&at) => {
                if self.known.len() <= at {
                    self.known.resize(PLACES.len(), 0);
                }
                self.known[at] = version;
            }
            None => match self.other.iter_mut().find(|(other, _)| other == name) {
                Some((_, kept)) => *kept = version,
                None => self.other.push((name.to_string(), version)),
            },
        }
    }
}

/// The write versions of every table, as read at one moment.
#[derive(Debug, Clone, Default)]
pub struct Versions {
    /// Shared: a write's answer copies the request's versions ([`Versions::with_unknown`]).
    by_name: std::sync::Arc<ByName>,
    /// Whether they were read from the database: [`Versions::default`] stands for versions
    /// not read, under which nothing may be taken from a cache.
    read: bool,
    /// Versions bumped since these were read ([`Versions::with_unknown`]): what reads any of
    /// them neither finds nor keeps anything cached.
    unknown: Vec<&'static str>,
    /// The only versions read, when not all were ([`Versions::parse_of`]): a write's answer
    /// reads those of the tables its expansions read, not every one.
    held: Option<std::sync::Arc<[&'static str]>>,
}

impl Versions {
    /// One version as read (0 for a name never bumped): the sum of its rows. Versions read
    /// only in part ([`Versions::parse_of`]) answer 0 for the names they lack too: only what
    /// asks [`Versions::know_all`] first may take them.
    pub fn of(&self, name: &str) -> i64 {
        self.by_name.get(name).unwrap_or(0)
    }

    /// One row of a table's own version as read ([`rows_of`]): what the log of written rows
    /// is kept by.
    pub fn of_row(&self, row: &str) -> i64 {
        self.by_name.row(row)
    }

    /// A number that changes whenever any of `tables` is written.
    pub fn stamp(&self, tables: &[&str]) -> i64 {
        let mut seen: Vec<&str> = Vec::with_capacity(tables.len());
        tables
            .iter()
            .filter(|t| {
                let fresh = !seen.contains(t);
                seen.push(t);
                fresh
            })
            .map(|t| self.by_name.get(t).unwrap_or(0))
            .sum()
    }

    /// These versions with `bumped` unknown: a request's own versions after its writes, which
    /// still stamp what it reads of the tables it did not write.
    pub fn with_unknown(&self, bumped: &[&'static str]) -> Versions {
        let mut versions = self.clone();
        versions.unknown.extend_from_slice(bumped);
        versions
    }

    /// Whether every one of `tables` has its version here: read from the database (not the
    /// default that stands for none, an export's), and not bumped since. Only what reads
    /// tables whose versions are known may find or keep anything cached.
    pub fn know_all(&self, tables: &[&str]) -> bool {
        self.read
            && !tables.iter().any(|t| self.unknown.contains(t))
            && self
                .held
                .as_ref()
                .is_none_or(|held| tables.iter().all(|t| held.contains(t)))
    }
}

/// Every version folded into one text, `name:version,…` ([`Versions::parse`]): constant SQL
/// over the bookkeeping table; no input reaches it.
pub(crate) fn folded_statement(backend: Backend) -> sea_query::SelectStatement {
    let folded = match backend {
        Backend::Sqlite => "group_concat(\"table_name\" || ':' || \"version\", ',')",
        Backend::Postgres => "string_agg(\"table_name\" || ':' || \"version\"::text, ',')",
    };
    Query::select()
        .expr(Expr::cust(folded))
        .from(Alias::new(TABLE))
        .to_owned()
}

/// [`folded_statement`] of the versions `names` only (all of their rows, [`rows_of`]): what
/// a write's answer reads its expansions under ([`Versions::parse_of`]). Read by the primary
/// key, the rows every write of a busy table bumps are not walked through
/// (docs/decisions/0005-write-answers-read-fresh.md).
pub(crate) fn folded_statement_of(
    backend: Backend,
    names: &[&'static str],
) -> sea_query::SelectStatement {
    let rows: Vec<&'static str> = names.iter().flat_map(|name| rows_of(name)).collect();
    folded_statement(backend)
        .and_where(Expr::col(Alias::new("table_name")).is_in(rows))
        .to_owned()
}

/// [`ANY_WRITE`] as the database holds it now, and every version folded as
/// [`folded_statement`] folds them unless [`ANY_WRITE`] is still `known` (then `NULL`): one
/// statement, so both come from one snapshot.
pub(crate) fn unless_unchanged_statement(backend: Backend, known: i64) -> SelectStatement {
    let any_write = Alias::new("any_write");
    let now = Alias::new("now");
    let read = Query::select()
        .expr_as(Expr::cust("CAST(SUM(\"version\") AS BIGINT)"), now.clone())
        .from(Alias::new(TABLE))
        .and_where(Expr::col(Alias::new("table_name")).is_in(rows_of(ANY_WRITE)))
        .to_owned();
    let folded = Expr::SubQuery(None, Box::new(folded_statement(backend).into()));
    let unchanged = Expr::col((any_write.clone(), now.clone())).eq(known);
    Query::select()
        .column((any_write.clone(), now))
        .expr(Expr::case(unchanged, Expr::cust("NULL")).finally(folded))
        .from_subquery(read, any_write)
        .to_owned()
}

/// The versions a process read whole last, under the value [`ANY_WRITE`] had then.
#[derive(Debug, Default)]
pub(crate) struct LastRead(std::sync::Mutex<Option<(i64, Versions)>>);

impl LastRead {
    fn get(&self) -> Option<(i64, Versions)> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn set(&self, any_write: i64, versions: &Versions) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some((any_write, versions.clone()));
    }
}

impl Store {
    /// Reads every version (one small statement per request). When no version moved since
    /// this process last read them all ([`ANY_WRITE`] unchanged), the statement reads that one
    /// version and the process keeps what it read; otherwise the rows come back folded into
    /// one text, `name:version,…`, so that a request pays for one row, not one per version.
    pub async fn versions(&self, timing: &Timing) -> StoreResult<Versions> {
        let last = self.last_versions.get();
        let known = last.as_ref().map_or(-1, |(any_write, _)| *any_write);
        let statement = unless_unchanged_statement(self.backend(), known);
        let rows = self
            .fetch(&statement, &[Kind::Integer, Kind::Text], timing)
            .await?;
        let (any_write, folded) = match rows.first().map(Vec::as_slice) {
            Some([any_write, folded]) => (any_write.as_integer(), folded.as_text()),
            _ => (None, None),
        };
        if let (Some(now), None, Some((known, versions))) = (any_write, folded, last)
            && now == known
        {
            return Ok(versions);
        }
        let versions = Versions::parse(folded.unwrap_or_default());
        if let Some(now) = any_write {
            self.last_versions.set(now, &versions);
        }
        Ok(versions)
    }
}

impl Versions {
    /// The versions in their folded form, `name:version,…` (names hold neither `:` nor `,`).
    pub(crate) fn parse(text: &str) -> Versions {
        Versions {
            by_name: std::sync::Arc::new(ByName::parse(text)),
            read: true,
            unknown: Vec::new(),
            held: None,
        }
    }

    /// The versions `names` in their folded form ([`folded_statement_of`]): known for those
    /// alone ([`Versions::know_all`]).
    pub(crate) fn parse_of(text: &str, names: &[&'static str]) -> Versions {
        Versions {
            held: Some(names.into()),
            ..Versions::parse(text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process reads every version again only once one moved: a bump of any name moves
    /// [`ANY_WRITE`] with it.
    #[tokio::test]
    async fn versions_are_read_whole_again_only_after_a_bump() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::db::migrated_sqlite(&dir.path().join("versions.db"), 2).await;
        let read = || async { store.versions(&Timing::default()).await.unwrap() };
        let first = read().await;
        let again = read().await;
        assert!(
            std::sync::Arc::ptr_eq(&first.by_name, &again.by_name),
            "nothing moved, yet the versions were read whole again"
        );
        let bump = bump_statement(&["stock"], 0).to_string(sea_query::SqliteQueryBuilder);
        assert!(bump.contains("'*'"), "{bump}");
        store.execute_raw(&bump).await.unwrap();
        let after = read().await;
        assert!(!std::sync::Arc::ptr_eq(&again.by_name, &after.by_name));
        assert_eq!(after.of("stock"), again.of("stock") + 1);
        assert_eq!(after.of(ANY_WRITE), again.of(ANY_WRITE) + 1);
    }

    #[test]
    fn the_read_of_versions_folds_them_only_when_any_write_moved() {
        for backend in [Backend::Sqlite, Backend::Postgres] {
            let sql = match backend {
                Backend::Sqlite => {
                    unless_unchanged_statement(backend, 41).to_string(sea_query::SqliteQueryBuilder)
                }
                Backend::Postgres => unless_unchanged_statement(backend, 41)
                    .to_string(sea_query::PostgresQueryBuilder),
            };
            assert!(sql.contains("= 41) THEN NULL ELSE (SELECT"), "{sql}");
            assert!(
                sql.contains("'*|3'"),
                "every stripe of the one version: {sql}"
            );
        }
    }

    #[test]
    fn versions_read_back_from_their_folded_text() {
        let versions = Versions::parse("stock:3,stock#rows:2,variant.barcode:7");
        assert_eq!(versions.stamp(&["stock", "variant.barcode"]), 10);
        assert_eq!(versions.stamp(&["stock#rows"]), 2);
        assert_eq!(Versions::parse("").stamp(&["stock"]), 0);
        for name in all_keys() {
            assert!(
                !name.contains([':', ',', STRIPE_MARK]),
                "{name} would not fold"
            );
        }
    }

    /// A version held in several rows (stripes) reads back as their sum; each stripe's bump
    /// names its own rows, every name's of one stripe.
    #[test]
    fn a_versions_stripes_add_up() {
        let versions =
            Versions::parse("stock:3,stock|1:4,stock|3:1,variant.barcode:7,bh_other|2:5");
        assert_eq!(versions.of("stock"), 8);
        assert_eq!(versions.stamp(&["stock", "variant.barcode"]), 15);
        assert_eq!(versions.of("bh_other"), 5);
        use sea_query::PostgresQueryBuilder;
        let sql = bump_statement(&["stock", "stock#rows"], 2).to_string(PostgresQueryBuilder);
        assert!(sql.contains("('stock#rows|2', 1), ('stock|2', 1)"), "{sql}");
        let sql = bump_statement(&["stock"], 0).to_string(PostgresQueryBuilder);
        assert!(sql.contains("('stock', 1)"), "{sql}");
        assert_eq!(
            rows_of("stock"),
            vec!["stock", "stock|1", "stock|2", "stock|3"]
        );
        assert_eq!(
            ["stock", "stock|1", "stock|2", "stock|3"].map(|row| versions.of_row(row)),
            [3, 4, 0, 1],
            "each row of a table's own version is kept apart"
        );
    }

    /// Every name the schema creates, and a name it does not, read back as written; a name
    /// never read is 0.
    #[test]
    fn every_version_name_and_any_other_reads_back_from_the_folded_text() {
        let names = all_keys();
        let mut text: Vec<String> = names
            .iter()
            .enumerate()
            .map(|(at, name)| format!("{name}:{}", at + 10))
            .collect();
        text.push("bh_from_elsewhere:7".into());
        text.push("malformed".into());
        let versions = Versions::parse(&text.join(","));
        for (at, name) in names.iter().enumerate() {
            assert_eq!(versions.of(name), at as i64 + 10, "{name}");
        }
        assert_eq!(versions.of("bh_from_elsewhere"), 7);
        assert_eq!(versions.of("bh_never_read"), 0);
        assert_eq!(Versions::default().of("stock"), 0);
        assert_eq!(
            versions.stamp(&["bh_from_elsewhere", names[0]]),
            7 + 10,
            "names of both kinds stamp"
        );
    }

    #[test]
    fn versions_with_a_table_unknown_know_only_the_others() {
        let read = Versions::parse("stock:3,variant:5");
        assert!(read.know_all(&["stock", "variant"]));
        let after = read.with_unknown(&["stock", "stock#rows"]);
        assert!(!after.know_all(&["variant", "stock"]));
        assert!(after.know_all(&["variant", "brand"]));
        assert_eq!(after.stamp(&["variant"]), read.stamp(&["variant"]));
        assert!(
            !Versions::default().know_all(&["variant"]),
            "versions never read"
        );
    }

    #[test]
    fn versions_read_in_part_know_only_the_names_read() {
        let names = ["variant", "warehouse"];
        let read = Versions::parse_of("variant:5,variant|2:1,warehouse:2", &names);
        assert!(read.know_all(&["variant", "warehouse"]));
        assert_eq!(read.stamp(&["variant"]), 6, "a version's stripes add up");
        assert!(!read.know_all(&["variant", "stock"]), "stock was not read");
        let after = read.with_unknown(&["warehouse"]);
        assert!(after.know_all(&["variant"]));
        assert!(!after.know_all(&["warehouse"]), "written since");
        let sql = folded_statement_of(Backend::Postgres, &names)
            .to_string(sea_query::PostgresQueryBuilder);
        for row in ["'variant'", "'variant|3'", "'warehouse|1'"] {
            assert!(sql.contains(row), "{row} is folded: {sql}");
        }
        assert!(!sql.contains("'stock"), "{sql}");
    }

    #[test]
    fn a_stamp_counts_each_table_once_and_grows_with_any_write() {
        let mut versions = Versions::default();
        let by_name = std::sync::Arc::make_mut(&mut versions.by_name);
        by_name.set("stock", 3);
        by_name.set("variant", 5);
        assert_eq!(versions.stamp(&["stock", "variant", "stock"]), 8);
        let before = versions.stamp(&["stock", "variant"]);
        std::sync::Arc::make_mut(&mut versions.by_name).set("variant", 6);
        assert!(versions.stamp(&["stock", "variant"]) > before);
        assert_eq!(versions.stamp(&["stock"]), 3);
    }

    #[test]
    fn every_versioned_table_has_a_rows_key_and_others_their_own_version() {
        assert_eq!(rows_key("stock"), "stock#rows");
        assert_eq!(rows_key("bh_not_versioned"), "bh_not_versioned");
        assert_eq!(columns_key("stock"), "stock#cols");
        assert_eq!(others_key("stock"), "stock#other");
    }

    fn filter_keys(resource: &str, query: &str) -> Vec<&'static str> {
        use brandhub_query::parse::parse_query_string;
        use brandhub_query::plan::{Viewer, plan_count};
        let resource = catalog().resource(resource).unwrap();
        let request = parse_query_string(query).unwrap();
        let plan = plan_count(resource, &request, &Viewer::admin()).unwrap();
        let mut keys = BTreeSet::new();
        predicate_keys(resource, &plan.full_filter(), &mut keys);
        keys.into_iter().collect()
    }

    #[test]
    fn a_filter_depends_on_the_fields_it_compares_and_joins_through() {
        assert_eq!(
            filter_keys("stock", "stock_variant.variant_product.fk_brand=X"),
            vec![
                "product#cols",
                "product#rows",
                "product.fk_brand",
                "stock#cols",
                "stock#rows",
                "stock.fk_variant",
                "variant#cols",
                "variant#rows",
                "variant.fk_product",
            ]
        );
        // Through a to-many relation the join is the related records' foreign key; a field
        // that is not indexed shares its table's other version.
        assert_eq!(
            filter_keys("variant", "variant_stock.inStock=3"),
            vec![
                "stock#cols",
                "stock#other",
                "stock#rows",
                "stock.fk_variant",
                "variant#cols",
                "variant#rows",
            ]
        );
    }

    #[test]
    fn an_update_bumps_its_indexed_fields_own_versions_and_what_is_generated_from_them() {
        assert_eq!(
            written_keys("variant", ["barcode"]),
            vec!["variant.barcode"]
        );
        assert_eq!(
            written_keys("variant", ["sequence", "row_version"]),
            vec!["variant#other"],
            "fields that are not indexed, and columns no field owns, share one version"
        );
        // `available` is computed by the database from `inStock` and `demand`.
        assert_eq!(
            written_keys("stock", ["in_stock"]),
            vec!["stock#other", "stock.available"]
        );
        let all = all_keys();
        for key in [
            "stock",
            "stock#rows",
            "stock#cols",
            "stock#other",
            "stock.fk_variant",
        ] {
            assert!(all.contains(&key), "{key} has a row");
        }
    }
}
