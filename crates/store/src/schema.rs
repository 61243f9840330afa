//! The database schema, derived from the catalog for each backend, and the migration that
//! brings a database to it.
//!
//! Every resource is a table; every stored field a column (`detail.net` → `detail_net`); every
//! text field also has a folded copy `<column>_ci` that filters, ordering and indexes use; list
//! fields are tables of their own. Indexes serve every foreign key and every `indexed` field,
//! with the id appended so that the semi-join subqueries of filters are index-only.
//!
//! Migration is additive and idempotent: missing tables, columns and indexes are created; a
//! change that cannot be made by adding (a type change, a removed column, a new required
//! column on a filled table) stops with a message naming it.

use crate::db::{Backend, Store, failed, on_pool};
use crate::error::{StoreError, StoreResult};
use brandhub_catalog::{
    Field, FieldDefault, FieldType, Generated, Resource, catalog, grouped, naming::folded_column,
    record::stored_fields,
};
use brandhub_problem::Words;
use sqlx::AssertSqlSafe;

fn quote(identifier: &str) -> String {
    format!("\"{identifier}\"")
}

/// The SQL type (with collation and nullability) of a field's column.
fn column_type(field: &Field, backend: Backend) -> String {
    let pg = backend == Backend::Postgres;
    let text_c = if pg { "TEXT COLLATE \"C\"" } else { "TEXT" };
    let base = match field.ty {
        FieldType::Id | FieldType::Timestamp | FieldType::PreciseTimestamp => text_c.to_string(),
        FieldType::Text => return "TEXT NOT NULL DEFAULT ''".to_string(),
        FieldType::Integer => "BIGINT".to_string(),
        FieldType::Number => if pg { "DOUBLE PRECISION" } else { "REAL" }.to_string(),
        FieldType::Boolean => "BOOLEAN".to_string(),
        FieldType::Object | FieldType::List => unreachable!("objects and lists have no column"),
    };
    if field.name == "id" && field.path == "id" {
        format!("{base} PRIMARY KEY")
    } else if field.required {
        format!("{base} NOT NULL")
    } else {
        base
    }
}

fn folded_type(backend: Backend) -> &'static str {
    match backend {
        Backend::Postgres => "TEXT COLLATE \"C\" NOT NULL DEFAULT ''",
        Backend::Sqlite => "TEXT NOT NULL DEFAULT ''",
    }
}

/// The column holding a record's version: 1 when inserted, one more with every write of the
/// record (`ETag`, `If-Match`: docs/API.md, "Writes: concurrency and idempotency"). Storage, like the folded copies: it
/// is no field of the API.
pub const ROW_VERSION: &str = "row_version";

/// The version a record is inserted with (the column's default): a new record's `ETag`
/// without reading it back.
pub const FIRST_VERSION: i64 = 1;

/// The type of a column the database computes ([`Generated`]): PostgreSQL stores it, SQLite
/// computes it when read (SQLite cannot add a stored one to a filled table); both index it.
fn generated_type(resource: &Resource, how: Generated, backend: Backend) -> String {
    let column = |path: &str| {
        quote(
            &resource
                .field_at(path)
                .expect("generated columns name fields of their resource")
                .column,
        )
    };
    match how {
        Generated::ClampedDifference {
            minuend,
            subtrahend,
        } => {
            let (a, b) = (column(minuend), column(subtrahend));
            match backend {
                Backend::Postgres => format!(
                    "BIGINT GENERATED ALWAYS AS (GREATEST(0, COALESCE({a}, 0) - COALESCE({b}, 0))) STORED"
                ),
                Backend::Sqlite => format!(
                    "BIGINT GENERATED ALWAYS AS (max(0, coalesce({a}, 0) - coalesce({b}, 0))) VIRTUAL"
                ),
            }
        }
    }
}

/// Every column of a resource's table: (name, type), folded copies right after their source,
/// the record version last.
pub fn table_columns(resource: &Resource, backend: Backend) -> Vec<(String, String)> {
    let mut columns = table_field_columns(resource, backend);
    columns.push((
        ROW_VERSION.to_string(),
        format!("BIGINT NOT NULL DEFAULT {FIRST_VERSION}"),
    ));
    // Set by the database on every write (crate::changes); 0 for rows from before it was.
    columns.push((
        brandhub_query::changes::CHANGE_COLUMN.to_string(),
        "BIGINT NOT NULL DEFAULT 0".to_string(),
    ));
    columns
}

fn table_field_columns(resource: &Resource, backend: Backend) -> Vec<(String, String)> {
    let mut columns = Vec::new();
    for field in stored_fields(resource) {
        if let Some(how) = field.generated {
            columns.push((field.column.clone(), generated_type(resource, how, backend)));
            continue;
        }
        let mut ty = column_type(field, backend);
        if let Some(relation) = field.relation.and_then(|r| resource.relation(r)) {
            let target = catalog().target(relation);
            ty.push_str(&format!(" REFERENCES {}(\"id\")", quote(target.table)));
        }
        columns.push((field.column.clone(), ty));
        if let Some(folded) = field.folded_column() {
            columns.push((folded, folded_type(backend).to_string()));
        }
    }
    columns
}

fn index_column(field: &Field, backend: Backend) -> String {
    let column = quote(
        &field
            .folded_column()
            .unwrap_or_else(|| field.column.clone()),
    );
    // PostgreSQL sorts nulls last by default; brandhub sorts unset values first, so indexes on
    // nullable columns are built that way to serve ORDER BY in both directions.
    if backend == Backend::Postgres && !field.required && field.ty != FieldType::Text {
        format!("{column} NULLS FIRST")
    } else {
        column
    }
}

/// The SQL default of the column `column` of `resource` when its field declares a constant one
/// (a boolean's): what a column added to a filled table holds in every row.
fn constant_default(resource: &Resource, column: &str) -> Option<&'static str> {
    let field = stored_fields(resource)
        .into_iter()
        .find(|f| f.column == column)?;
    match field.default {
        Some(FieldDefault::Boolean(true)) => Some("TRUE"),
        Some(FieldDefault::Boolean(false)) => Some("FALSE"),
        _ => None,
    }
}

/// The CREATE statements of one resource: its table, list tables and indexes.
pub fn resource_statements(resource: &Resource, backend: Backend) -> Vec<String> {
    let table = resource.table;
    let columns: Vec<String> = table_columns(resource, backend)
        .into_iter()
        .map(|(name, ty)| format!("{} {ty}", quote(&name)))
        .collect();
    let mut statements = vec![format!(
        "CREATE TABLE IF NOT EXISTS {} ({})",
        quote(table),
        columns.join(", ")
    )];
    for field in resource.leaf_fields() {
        if let Some(list) = &field.list {
            let value_type = match (list.element, backend) {
                (FieldType::Id, Backend::Postgres) => "TEXT COLLATE \"C\" NOT NULL",
                _ => "TEXT NOT NULL",
            };
            let mut list_columns = vec![
                format!(
                    "{} TEXT{} NOT NULL REFERENCES {}(\"id\") ON DELETE CASCADE",
                    quote(list.owner_column),
                    if backend == Backend::Postgres {
                        " COLLATE \"C\""
                    } else {
                        ""
                    },
                    quote(table)
                ),
                "\"position\" BIGINT NOT NULL".to_string(),
                format!("{} {value_type}", quote(list.value_column)),
            ];
            if list.element == FieldType::Text {
                list_columns.push(format!(
                    "{} {}",
                    quote(&folded_column(list.value_column)),
                    folded_type(backend)
                ));
            }
            list_columns.push(format!(
                "PRIMARY KEY ({}, \"position\")",
                quote(list.owner_column)
            ));
            statements.push(format!(
                "CREATE TABLE IF NOT EXISTS {} ({})",
                quote(list.table),
                list_columns.join(", ")
            ));
            let value = if list.element == FieldType::Text {
                folded_column(list.value_column)
            } else {
                list.value_column.to_string()
            };
            statements.push(format!(
                "CREATE INDEX IF NOT EXISTS {} ON {} ({}, {})",
                quote(&format!("ix_{}_{}", list.table, value)),
                quote(list.table),
                quote(&value),
                quote(list.owner_column)
            ));
        }
    }
    for field in stored_fields(resource) {
        if field.path == "id" || !field.indexed {
            continue;
        }
        statements.push(format!(
            "CREATE INDEX IF NOT EXISTS {} ON {} ({}, \"id\")",
            quote(&format!("ix_{table}_{}", field.column)),
            quote(table),
            index_column(field, backend)
        ));
    }
    for index in &resource.indexes {
        let fields: Vec<&Field> = index
            .paths
            .iter()
            .map(|p| resource.field_at(p).expect("checked by the catalog"))
            .collect();
        let name = fields
            .iter()
            .map(|f| f.column.as_str())
            .collect::<Vec<_>>()
            .join("_");
        if index.exact {
            statements.push(exact_index(resource, &fields, &name));
            continue;
        }
        statements.push(format!(
            "CREATE {}INDEX IF NOT EXISTS {} ON {} ({})",
            if index.unique { "UNIQUE " } else { "" },
            quote(&format!(
                "{}_{table}_{name}",
                if index.unique { "ux" } else { "ix" }
            )),
            quote(table),
            fields
                .iter()
                .map(|f| index_column(f, backend))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    statements.extend(natural_key_index(resource, backend));
    statements.extend(held_statements(resource, backend));
    statements
}

/// The partial unique index of a rule compared exactly ([`brandhub_catalog::IndexDef::exact`]):
/// over the columns as written (not their folded copies, so letter case counts), among rows
/// whose fields are all set (no text empty).
fn exact_index(resource: &Resource, fields: &[&Field], name: &str) -> String {
    let set: Vec<String> = fields
        .iter()
        .map(|field| match field.ty {
            FieldType::Text => format!("{} <> ''", quote(&field.column)),
            _ => format!("{} IS NOT NULL", quote(&field.column)),
        })
        .collect();
    format!(
        "CREATE UNIQUE INDEX IF NOT EXISTS {} ON {} ({}) WHERE {}",
        quote(&format!("ux_{}_{name}", resource.table)),
        quote(resource.table),
        fields
            .iter()
            .map(|f| quote(&f.column))
            .collect::<Vec<_>>()
            .join(", "),
        set.join(" AND ")
    )
}

/// The name of the database rule that holds `field` of `resource` within its range.
fn held_name(resource: &Resource, field: &Field) -> String {
    format!("bh_held_{}_{}", resource.table, field.column)
}

/// The rules that hold each count of `resource` declared `held` within its range, whoever
/// writes it (docs/API.md, "Quantities and amounts": a stock move past ±1,000,000,000 is refused whole, and a sum
/// that passes what an integer holds, which SQLite would store as a real, never reads back):
/// on PostgreSQL a `CHECK` constraint, added `NOT VALID` so that migrating a filled table
/// reads none of its rows; on SQLite, which adds no constraint to a table it made, a trigger
/// before each insert and each update of the column that refuses a value that is not such a
/// whole number. Either fails the statement, and the write with it, naming the rule
/// ([`held_refusal`]).
pub fn held_statements(resource: &Resource, backend: Backend) -> Vec<String> {
    let mut statements = Vec::new();
    for field in stored_fields(resource) {
        let Some((least, most)) = field.held else {
            continue;
        };
        let (table, column, name) = (
            quote(resource.table),
            quote(&field.column),
            held_name(resource, field),
        );
        match backend {
            Backend::Postgres => statements.push(format!(
                "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = '{name}' AND conrelid = '{table}'::regclass) THEN ALTER TABLE {table} ADD CONSTRAINT {} CHECK ({column} BETWEEN {least} AND {most}) NOT VALID; END IF; END $$",
                quote(&name)
            )),
            Backend::Sqlite => {
                let outside = format!(
                    "NEW.{column} IS NOT NULL AND (typeof(NEW.{column}) <> 'integer' OR NEW.{column} NOT BETWEEN {least} AND {most})"
                );
                for (when, on) in [("insert", "INSERT".to_string()), ("update", format!("UPDATE OF {column}"))] {
                    statements.push(format!(
                        "CREATE TRIGGER IF NOT EXISTS {} BEFORE {on} ON {table} WHEN {outside} BEGIN SELECT RAISE(ABORT, '{name}'); END",
                        quote(&format!("{name}_{when}"))
                    ));
                }
            }
        }
    }
    statements
}

/// The refusal of a write that a rule of [`held_statements`] stopped: 422 naming the count
/// and its range, nothing of the write kept. `None` for any other database error.
pub(crate) fn held_refusal(error: &dyn sqlx::error::DatabaseError) -> Option<StoreError> {
    // PostgreSQL names the constraint; SQLite's trigger raises its name as the message.
    let named = error.constraint().unwrap_or(error.message());
    catalog().resources().iter().find_map(|resource| {
        stored_fields(resource).into_iter().find_map(|field| {
            let (least, most) = field.held?;
            (held_name(resource, field) == named).then(|| {
                StoreError::invalid(vec![brandhub_problem::FieldError::new(
                    format!("{}.{}", resource.name, field.path),
                    format!(
                        "would be taken outside {} to {} by this change, so none of it was written",
                        grouped(least),
                        grouped(most)
                    ),
                )])
            })
        })
    })
}

/// The unique index of a resource's natural key (docs/API.md, "Writes: master data and catalogue"), unless a declared unique index
/// says the same: two writers creating one key at once (two requests, or a request and a
/// file) cannot both insert it. Records whose key is partly unset are not named by it, and
/// are left out.
pub fn natural_key_index(resource: &Resource, backend: Backend) -> Option<String> {
    let key = &resource.writes.natural_key;
    if key.is_empty()
        || resource
            .indexes
            .iter()
            .any(|index| index.unique && index.paths == *key)
    {
        return None;
    }
    let fields: Vec<&Field> = key
        .iter()
        .map(|path| resource.field_at(path).expect("natural keys are fields"))
        .collect();
    // A part with a default is always set (a price's currency: empty for any).
    let set: Vec<String> = fields
        .iter()
        .filter(|field| field.default.is_none())
        .map(|field| match field.folded_column() {
            Some(folded) => format!("{} <> ''", quote(&folded)),
            None => format!("{} IS NOT NULL", quote(&field.column)),
        })
        .collect();
    Some(format!(
        "CREATE UNIQUE INDEX IF NOT EXISTS {} ON {} ({}){}",
        quote(&natural_key_index_name(resource)),
        quote(resource.table),
        fields
            .iter()
            .map(|f| index_column(f, backend))
            .collect::<Vec<_>>()
            .join(", "),
        if set.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", set.join(" AND "))
        }
    ))
}

/// The name of a resource's natural key index (`nk_<table>_<columns>`): a key of other fields
/// is another index, and the migration drops the one of a key the catalog no longer declares
/// (a price's before its currency).
pub fn natural_key_index_name(resource: &Resource) -> String {
    let columns: Vec<&str> = resource
        .writes
        .natural_key
        .iter()
        .filter_map(|path| resource.field_at(path))
        .map(|field| field.column.as_str())
        .collect();
    format!("nk_{}_{}", resource.table, columns.join("_"))
}

/// How full PostgreSQL fills a page of version rows, in percent ([`bookkeeping_statements`]):
/// 100 let the table grow from 2 to 14–18 pages in 10 s of `PATCH`es, 30 to 10–17, with about
/// 4% more `PATCH`es and 3% more cached reads a second.
const VERSION_PAGE_FILL: u32 = 30;

/// The bookkeeping tables: table versions (for cached counts), the count cache, and facts
/// about the database itself.
///
/// On PostgreSQL the version rows keep room on their pages (`fillfactor`): every write
/// rewrites some of them and every request reads all of them, so a full page, which the
/// readers' pins keep from being pruned, would send the new row versions to new pages and
/// the table, read whole by every request, would grow
/// (docs/decisions/0015-postgres-version-pages-with-room.md). Applied again on
/// every migration; pages already full get the room when they are rewritten.
pub fn bookkeeping_statements(backend: Backend) -> Vec<String> {
    let mut statements = vec![
        "CREATE TABLE IF NOT EXISTS \"bh_table_version\" (\"table_name\" TEXT PRIMARY KEY, \"version\" BIGINT NOT NULL)".to_string(),
        "CREATE TABLE IF NOT EXISTS \"bh_count_cache\" (\"cache_key\" TEXT PRIMARY KEY, \"stamp\" BIGINT NOT NULL, \"record_count\" BIGINT NOT NULL, \"created_at\" BIGINT NOT NULL)".to_string(),
        "CREATE TABLE IF NOT EXISTS \"bh_meta\" (\"name\" TEXT PRIMARY KEY, \"value\" TEXT NOT NULL)".to_string(),
        // Counters drawn in write transactions (`brandOrderRef` numbers, `orders::intake`).
        "CREATE TABLE IF NOT EXISTS \"bh_counter\" (\"name\" TEXT PRIMARY KEY, \"value\" BIGINT NOT NULL)".to_string(),
        // The outbox of events not yet fanned out to webhooks (`events`).
        format!("CREATE TABLE IF NOT EXISTS \"{}\" (\"id\" TEXT PRIMARY KEY, \"event_type\" TEXT NOT NULL, \"resource\" TEXT NOT NULL, \"record_id\" TEXT NOT NULL, \"created_at\" BIGINT NOT NULL, \"created_date\" TEXT NOT NULL)", crate::events::EVENT_TABLE),
        format!("CREATE INDEX IF NOT EXISTS \"ix_bh_event_created_at\" ON \"{}\" (\"created_at\", \"id\")", crate::events::EVENT_TABLE),
    ];
    if backend == Backend::Postgres {
        statements.push(format!(
            "ALTER TABLE \"bh_table_version\" SET (fillfactor = {VERSION_PAGE_FILL})"
        ));
        statements.push(crate::accounts::caller_check_function());
    } else {
        statements.extend(crate::write_turn::assertion_statements());
    }
    statements.extend(crate::row_log::statements());
    for name in crate::versions::all_keys() {
        statements.push(format!(
            "INSERT INTO \"bh_table_version\" (\"table_name\", \"version\") VALUES ('{name}', 0) ON CONFLICT DO NOTHING"
        ));
    }
    statements
}

/// The job queue of uploaded files ([`crate::jobs`]): one row per file, created with the file
/// record and claimed by workers. It refers to the file table, so it is created after the
/// resources. Times are milliseconds since the Unix epoch.
pub fn queue_statements(backend: Backend) -> Vec<String> {
    let id = match backend {
        Backend::Postgres => "TEXT COLLATE \"C\"",
        Backend::Sqlite => "TEXT",
    };
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {} (\"file_id\" {id} PRIMARY KEY REFERENCES \"file\"(\"id\") ON DELETE CASCADE, \"state\" TEXT NOT NULL, \"attempts\" BIGINT NOT NULL DEFAULT 0, \"claimed_by\" TEXT, \"heartbeat_at\" BIGINT, \"available_at\" BIGINT NOT NULL, \"created_at\" BIGINT NOT NULL)",
            quote(crate::jobs::JOB_TABLE)
        ),
        format!(
            "CREATE INDEX IF NOT EXISTS \"ix_bh_job_state_available_at\" ON {} (\"state\", \"available_at\")",
            quote(crate::jobs::JOB_TABLE)
        ),
        // The rows a file's processing skipped, with their reasons, for its error report.
        format!(
            "CREATE TABLE IF NOT EXISTS {} (\"file_id\" {id} NOT NULL REFERENCES \"file\"(\"id\") ON DELETE CASCADE, \"row_number\" BIGINT NOT NULL, \"reason\" TEXT NOT NULL, PRIMARY KEY (\"file_id\", \"row_number\"))",
            quote(crate::jobs::SKIPPED_ROWS_TABLE)
        ),
    ]
}

/// For a new column that is a shortcut (`Field::derived`), the statement giving every existing
/// row its value: nested lookups along the to-one path it copies.
pub fn derived_fill_statement(resource: &Resource, column: &str) -> Option<String> {
    let field = stored_fields(resource)
        .into_iter()
        .find(|f| f.column == column)?;
    let path = field.derived_from?;
    let segments: Vec<&str> = path.split('.').collect();
    let (last, hops) = segments.split_last()?;
    // Walk the hops, remembering (table, fk column that leads there) pairs.
    let mut current = resource;
    let mut steps = Vec::new();
    for hop in hops {
        let relation = current.relation(hop)?;
        let fk = current.fk_field(relation)?;
        let target = catalog().target(relation);
        steps.push((fk.column.clone(), target.table));
        current = target;
    }
    let mut value = quote(&current.field_named(last)?.column);
    let mut tables: Vec<&str> = vec![resource.table];
    tables.extend(steps.iter().map(|(_, table)| *table));
    // Innermost first: SELECT value FROM last WHERE last.id = previous.fk.
    for (i, (fk, table)) in steps.iter().enumerate().rev() {
        let outer = tables[i];
        value = format!(
            "(SELECT {value} FROM {} WHERE {}.\"id\" = {}.{})",
            quote(table),
            quote(table),
            quote(outer),
            quote(fk)
        );
    }
    Some(format!(
        "UPDATE {} SET {} = {value}",
        quote(resource.table),
        quote(column)
    ))
}

/// The statements that repair stored values outside their domain of words
/// (`Field::repaired_to`: a brand store's unknown `stockType` becomes `live`, an unknown
/// `adjustType` empty), with their folded copies, stamped fields and record versions, one per
/// such field. Run on every migration: once repaired, no row matches it again. Words are compared
/// in any case, as their domain compares them; an empty value is unset, never repaired.
pub fn repair_statements(resource: &Resource, now: &str) -> Vec<String> {
    let literal = |text: &str| format!("'{}'", text.replace('\'', "''"));
    let mut statements = Vec::new();
    for field in resource.leaf_fields() {
        let (Some(word), Some(words)) = (
            field.repaired_to,
            field.domain.and_then(brandhub_catalog::Domain::words),
        ) else {
            continue;
        };
        let column = quote(&field.column);
        let mut set = vec![format!("{column} = {}", literal(word))];
        if let Some(folded) = field.folded_column() {
            set.push(format!(
                "{} = {}",
                quote(&folded),
                literal(&brandhub_query::text::fold(word))
            ));
        }
        for stamped in resource.stamped_fields() {
            set.push(format!("{} = {}", quote(&stamped.column), literal(now)));
        }
        set.push(format!("{0} = {0} + 1", quote(ROW_VERSION)));
        let allowed: Vec<String> = words
            .iter()
            .map(|w| literal(&w.to_ascii_lowercase()))
            .collect();
        statements.push(format!(
            "UPDATE {} SET {} WHERE {column} <> '' AND lower({column}) NOT IN ({})",
            quote(resource.table),
            set.join(", "),
            allowed.join(", ")
        ));
    }
    statements
}

/// For a new stamped column (`updatedDate`), the statement giving every existing row a value:
/// its `createdDate` where the resource has one, else `now` (the time of the migration).
pub fn stamped_fill_statement(resource: &Resource, column: &str, now: &str) -> Option<String> {
    let field = resource.stamped_fields().find(|f| f.column == column)?;
    let value = match resource.field_named("createdDate") {
        Some(created) => format!(
            "COALESCE({}, '{}')",
            quote(&created.column),
            now.replace('\'', "")
        ),
        None => format!("'{}'", now.replace('\'', "")),
    };
    Some(format!(
        "UPDATE {} SET {} = {value} WHERE {} IS NULL",
        quote(resource.table),
        quote(&field.column),
        quote(&field.column)
    ))
}

/// Every table whose writes are versioned: resource tables and list tables.
pub fn versioned_tables() -> Vec<&'static str> {
    let mut tables = Vec::new();
    for resource in catalog().resources() {
        tables.push(resource.table);
        for field in resource.leaf_fields() {
            if let Some(list) = &field.list {
                tables.push(list.table);
            }
        }
    }
    tables
}

/// The PostgreSQL advisory lock key under which one process at a time migrates.
const MIGRATION_LOCK: i64 = 4_242_001;

impl Store {
    /// Repairs stored values outside their domain ([`repair_statements`]) in one write through
    /// the executor, which bumps the versions of what it changed: another process's caches
    /// (and this one's) see the repaired records.
    async fn repair_values(&self) -> StoreResult<()> {
        use crate::write::{EntryPoint, Outcome, WritePlan};
        let now = crate::ids::timestamp_at(self.clock.now_millis());
        let repairs: Vec<(&'static str, String)> = catalog()
            .resources()
            .iter()
            .flat_map(|r| {
                repair_statements(r, &now)
                    .into_iter()
                    .map(move |sql| (r.table, sql))
            })
            .collect();
        if repairs.is_empty() {
            return Ok(());
        }
        self.execute(
            WritePlan::locking(EntryPoint::Migration),
            move |mut tx, _| {
                let repairs = repairs.clone();
                Box::pin(async move {
                    let result = async {
                        for (table, sql) in repairs {
                            let statement = crate::offers::clock::Raw {
                                sql,
                                values: Vec::new(),
                            };
                            if tx.execute_untracked(table, &statement).await? > 0 {
                                tx.touch(table);
                            }
                        }
                        Ok(Outcome::Commit(()))
                    }
                    .await;
                    (tx, result)
                })
            },
        )
        .await
    }

    /// Drops the natural key indexes of `resource` that name another key than the catalog's
    /// (made by an earlier version: a price's `(variant, host, startDate)` would refuse a price
    /// in a second currency).
    async fn drop_stale_key_indexes(&self, resource: &Resource) -> StoreResult<()> {
        let prefix = format!("nk_{}_", resource.table);
        let current =
            natural_key_index(resource, self.backend()).map(|_| natural_key_index_name(resource));
        let names: Vec<String> = on_pool!(&self.pool, |pool, _builder| {
            let sql = match self.backend() {
                Backend::Sqlite => {
                    "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = $1"
                }
                Backend::Postgres => {
                    "SELECT indexname::text FROM pg_indexes WHERE schemaname = current_schema() AND tablename = $1"
                }
            };
            sqlx::query_scalar(sql)
                .bind(resource.table)
                .fetch_all(pool)
                .await
                .map_err(|e| failed("cannot read the schema", e))?
        });
        for name in names {
            if name.starts_with(&prefix) && Some(&name) != current.as_ref() {
                self.execute_raw(&format!("DROP INDEX IF EXISTS {}", quote(&name)))
                    .await?;
            }
        }
        Ok(())
    }

    async fn existing_columns(&self, table: &str) -> StoreResult<Vec<String>> {
        let columns: Vec<String> = on_pool!(&self.pool, |pool, _builder| {
            let sql = match self.backend() {
                Backend::Sqlite => "SELECT name FROM pragma_table_xinfo($1)",
                Backend::Postgres => {
                    "SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1"
                }
            };
            sqlx::query_scalar(sql)
                .bind(table)
                .fetch_all(pool)
                .await
                .map_err(|e| failed("cannot read the schema", e))?
        });
        Ok(columns)
    }

    /// What the schema lacks of what this build needs (`"table stock"`, `"column
    /// stock.available"`), empty when migrations are applied: every resource's table with every
    /// column, its list tables, the bookkeeping tables and the job queue. One statement, so
    /// it also says whether the database answers; for readiness checks.
    pub async fn schema_gaps(&self) -> StoreResult<Vec<String>> {
        let backend = self.backend();
        let pairs: Vec<(String, String)> = on_pool!(&self.pool, |pool, _builder| {
            let sql = match backend {
                Backend::Sqlite => {
                    "SELECT m.name, p.name FROM sqlite_schema AS m, pragma_table_xinfo(m.name) AS p WHERE m.type = 'table'"
                }
                Backend::Postgres => {
                    "SELECT table_name::text, column_name::text FROM information_schema.columns WHERE table_schema = current_schema()"
                }
            };
            sqlx::query_as(sql)
                .fetch_all(pool)
                .await
                .map_err(|e| failed("cannot read the schema", e))?
        });
        let present: std::collections::HashSet<(&str, &str)> = pairs
            .iter()
            .map(|(table, column)| (table.as_str(), column.as_str()))
            .collect();
        let tables: std::collections::HashSet<&str> =
            pairs.iter().map(|(t, _)| t.as_str()).collect();
        let mut gaps = Vec::new();
        let need_table = |table: &str, gaps: &mut Vec<String>| {
            let there = tables.contains(table);
            if !there {
                gaps.push(format!("table {table}"));
            }
            there
        };
        for table in [
            "bh_table_version",
            crate::row_log::TABLE,
            crate::count::COUNT_TABLE,
            "bh_meta",
            crate::jobs::JOB_TABLE,
            crate::idempotency::IDEMPOTENCY_TABLE,
        ]
        .into_iter()
        .chain(crate::accounts::sessions::TABLES)
        {
            need_table(table, &mut gaps);
        }
        for resource in catalog().resources() {
            if need_table(resource.table, &mut gaps) {
                for (column, _) in table_columns(resource, backend) {
                    if !present.contains(&(resource.table, column.as_str())) {
                        gaps.push(format!("column {}.{column}", resource.table));
                    }
                }
            }
            for field in resource.leaf_fields() {
                if let Some(list) = &field.list {
                    need_table(list.table, &mut gaps);
                }
            }
        }
        Ok(gaps)
    }

    /// Brings the database to the catalog's schema (see the module docs).
    pub async fn migrate(&self) -> StoreResult<()> {
        let backend = self.backend();
        // Several servers may start together: one migrates while the others wait. (SQLite's
        // write transactions already serialise them.)
        let lock = self.pg_session_lock(MIGRATION_LOCK).await?;
        let result = self.migrate_locked(backend).await;
        if let Some(session) = lock {
            use sqlx::Connection;
            // Closing the session releases the lock.
            if let Err(error) = session.close().await {
                tracing::warn!(%error, "the migration lock's session did not close cleanly");
            }
        }
        result
    }

    /// The triggers that keep offers; on the migration that made the offer table, every
    /// offer derived, and the moment dated prices are applied up to set to now.
    async fn migrate_offers(&self, backend: Backend) -> StoreResult<()> {
        let outbox = crate::events::EVENT_TABLE;
        if !self
            .existing_columns(outbox)
            .await?
            .iter()
            .any(|c| c == crate::events::REMOVED_COLUMN)
        {
            self.execute_raw(&format!(
                "ALTER TABLE \"{outbox}\" ADD COLUMN \"{}\" TEXT",
                crate::events::REMOVED_COLUMN
            ))
            .await?;
        }
        for statement in crate::offers::statements(backend) {
            self.execute_raw(&statement).await?;
        }
        use sea_query::{Alias, Expr, ExprTrait, Query};
        let offer = catalog().get(brandhub_catalog::Res::Offer).table;
        let any_offer = Query::select()
            .column(Alias::new("id"))
            .from(Alias::new(offer))
            .limit(1)
            .to_owned();
        let timing = crate::db::Timing::default();
        let empty = self
            .fetch(&any_offer, &[crate::db::Kind::Text], &timing)
            .await?
            .is_empty();
        let applied = Query::select()
            .column(Alias::new("value"))
            .from(Alias::new("bh_meta"))
            .and_where(Expr::col(Alias::new("name")).eq(crate::offers::clock::APPLIED_UNTIL))
            .to_owned();
        let started = !self
            .fetch(&applied, &[crate::db::Kind::Text], &timing)
            .await?
            .is_empty();
        if empty && !started {
            let fill = crate::offers::fill_statement(backend);
            let fill = match backend {
                Backend::Postgres => {
                    format!("BEGIN; SET LOCAL statement_timeout = 0; {fill}; COMMIT")
                }
                Backend::Sqlite => fill,
            };
            self.execute_raw(&fill).await?;
        }
        self.execute_raw(&crate::offers::clock::start_statement(backend))
            .await
    }

    async fn migrate_locked(&self, backend: Backend) -> StoreResult<()> {
        for statement in bookkeeping_statements(backend) {
            self.execute_raw(&statement).await?;
        }
        for resource in catalog().resources() {
            let existing = self.existing_columns(resource.table).await?;
            if !existing.is_empty() {
                for (name, ty) in table_columns(resource, backend) {
                    if existing.contains(&name) {
                        continue;
                    }
                    // A required column whose field has a constant default is added with it.
                    let ty = match constant_default(resource, &name) {
                        Some(default) if !ty.contains("DEFAULT") => {
                            format!("{ty} DEFAULT {default}")
                        }
                        _ => ty,
                    };
                    if ty.contains("NOT NULL") && !ty.contains("DEFAULT") {
                        return Err(StoreError::Conflict {
                            detail: Words::english(format!(
                                "table {} lacks the required column {name}; add it with a value for every row, then migrate again",
                                resource.table
                            )),
                            field: None,
                        });
                    }
                    self.execute_raw(&format!(
                        "ALTER TABLE {} ADD COLUMN {} {}",
                        quote(resource.table),
                        quote(&name),
                        ty
                    ))
                    .await?;
                    let now = crate::ids::timestamp_at(self.clock.now_millis());
                    let fill = derived_fill_statement(resource, &name)
                        .or_else(|| stamped_fill_statement(resource, &name, &now));
                    if let Some(fill) = fill {
                        // A fill touches every row: no statement timeout for it.
                        let fill = match backend {
                            Backend::Postgres => {
                                format!("BEGIN; SET LOCAL statement_timeout = 0; {fill}; COMMIT")
                            }
                            Backend::Sqlite => fill,
                        };
                        self.execute_raw(&fill).await?;
                    }
                }
            }
            for statement in resource_statements(resource, backend) {
                self.execute_raw(&statement).await?;
            }
            self.drop_stale_key_indexes(resource).await?;
        }
        for statement in queue_statements(backend) {
            self.execute_raw(&statement).await?;
        }
        for statement in crate::idempotency::idempotency_statements() {
            self.execute_raw(&statement).await?;
        }
        for statement in crate::accounts::sessions::statements(backend) {
            self.execute_raw(&statement).await?;
        }
        // Last: the triggers that see writes from outside brandhub need every table and
        // version row.
        for statement in crate::external::statements(backend) {
            self.execute_raw(&statement).await?;
        }
        // In one transaction: each schema change rewrites the schema's pages, which SQLite
        // would otherwise log once per statement. On SQLite it takes the write lock at once:
        // a transaction that began by reading is refused the lock without waiting when
        // another process (a running server, as `brandhub import` meets it) holds it.
        let begin = match backend {
            Backend::Sqlite => "BEGIN IMMEDIATE",
            Backend::Postgres => "BEGIN",
        };
        self.execute_raw(&format!(
            "{begin}; {}; COMMIT",
            crate::changes::statements(backend).join("; ")
        ))
        .await?;
        self.migrate_offers(backend).await?;
        // After the triggers: a repaired rule changes its offers as any write of it does.
        self.repair_values().await?;
        if backend == Backend::Sqlite {
            // A database analyzed by an earlier version may still hold samples.
            self.forget_sqlite_samples().await?;
        }
        Ok(())
    }

    /// Drops everything brandhub created (tests and `demo --fresh` only).
    pub async fn drop_everything(&self) -> StoreResult<()> {
        // The list is dropped from its end. The versions, the row log and the mark of
        // brandhub's own writes go last: the triggers of the resource tables write them
        // while a table is dropped (SQLite empties it first, and its foreign keys' actions
        // change other tables). The queue refers to files: it goes before them.
        let mut tables: Vec<&str> = vec![
            brandhub_query::changes::TOMBSTONE_TABLE,
            crate::changes::CLOCK_TABLE,
            crate::external::MARK_TABLE,
            "bh_table_version",
            crate::row_log::TABLE,
        ];
        tables.extend(versioned_tables());
        tables.extend([
            crate::count::COUNT_TABLE,
            "bh_meta",
            crate::orders::intake::COUNTER_TABLE,
            crate::jobs::JOB_TABLE,
            crate::idempotency::IDEMPOTENCY_TABLE,
        ]);
        tables.extend(crate::accounts::sessions::TABLES);
        for table in tables.iter().rev() {
            let cascade = if self.backend() == Backend::Postgres {
                " CASCADE"
            } else {
                ""
            };
            self.execute_raw(&format!("DROP TABLE IF EXISTS {}{cascade}", quote(table)))
                .await?;
        }
        Ok(())
    }

    /// Empties SQLite's `sqlite_stat4` (the key samples `ANALYZE` gathers where SQLite is
    /// built with STAT4, as the bundled one is), keeping `sqlite_stat1`'s averages. While
    /// samples exist, SQLite compiles a statement again whenever a value bound in its WHERE
    /// clause changes, which for brandhub, whose every statement binds its values, is every
    /// execution (docs/decisions/0018-sqlite-statistics-without-stat4.md, which also shows that
    /// the plans the averages give are as good for the workloads). The connection that ran it reloads its
    /// statistics (`ANALYZE sqlite_schema`); connections opened later read them as they are.
    async fn forget_sqlite_samples(&self) -> StoreResult<()> {
        // The table exists only where SQLite gathers samples (and once ANALYZE has run).
        let sampled: bool = on_pool!(&self.pool, |pool, _builder| {
            sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'sqlite_stat4')",
            )
            .fetch_one(pool)
            .await
            .map_err(|e| failed("cannot read the schema", e))?
        });
        if sampled {
            self.execute_raw("DELETE FROM sqlite_stat4; ANALYZE sqlite_schema")
                .await?;
        }
        Ok(())
    }

    /// Updates the planner's statistics after a bulk load.
    pub async fn analyze(&self) -> StoreResult<()> {
        match self.backend() {
            Backend::Sqlite => {
                self.execute_raw("ANALYZE").await?;
                self.forget_sqlite_samples().await
            }
            Backend::Postgres => {
                // VACUUM also sets the visibility map, which index-only scans need.
                on_pool!(&self.pool, |pool, _builder| {
                    sqlx::raw_sql(AssertSqlSafe("VACUUM ANALYZE".to_string()))
                        .execute(pool)
                        .await
                        .map_err(|e| failed("VACUUM ANALYZE failed", e))?;
                });
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortcut_columns_are_filled_along_their_path() {
        let stock = catalog().get(brandhub_catalog::Res::Stock);
        assert_eq!(
            derived_fill_statement(stock, "fk_scope_brand").unwrap(),
            "UPDATE \"stock\" SET \"fk_scope_brand\" = (SELECT (SELECT \"fk_brand\" FROM \"product\" WHERE \"product\".\"id\" = \"variant\".\"fk_product\") FROM \"variant\" WHERE \"variant\".\"id\" = \"stock\".\"fk_variant\")"
        );
        assert!(derived_fill_statement(stock, "fk_variant").is_none());
    }

    #[test]
    fn a_required_boolean_with_a_constant_default_is_added_with_it() {
        let webhook = catalog().get(brandhub_catalog::Res::Webhook);
        assert_eq!(constant_default(webhook, "batch"), Some("FALSE"));
        assert_eq!(constant_default(webhook, "active"), Some("TRUE"));
        assert_eq!(constant_default(webhook, "url"), None);
    }

    #[test]
    fn updated_dates_are_filled_from_the_creation_date_or_the_time_of_migration() {
        let company = catalog().get(brandhub_catalog::Res::Company);
        assert_eq!(
            stamped_fill_statement(company, "updated_date", "2026-05-01T10:00:00").unwrap(),
            "UPDATE \"company\" SET \"updated_date\" = COALESCE(\"created_date\", '2026-05-01T10:00:00') WHERE \"updated_date\" IS NULL"
        );
        let stock = catalog().get(brandhub_catalog::Res::Stock);
        assert_eq!(
            stamped_fill_statement(stock, "updated_date", "2026-05-01T10:00:00").unwrap(),
            "UPDATE \"stock\" SET \"updated_date\" = '2026-05-01T10:00:00' WHERE \"updated_date\" IS NULL"
        );
        assert!(stamped_fill_statement(stock, "in_stock", "x").is_none());
        let columns = table_columns(stock, Backend::Sqlite);
        assert_eq!(
            columns[columns.len() - 2..],
            [
                (
                    ROW_VERSION.to_string(),
                    "BIGINT NOT NULL DEFAULT 1".to_string()
                ),
                (
                    brandhub_query::changes::CHANGE_COLUMN.to_string(),
                    "BIGINT NOT NULL DEFAULT 0".to_string()
                )
            ]
        );
    }

    #[test]
    fn exact_unique_rules_are_partial_indexes_of_the_columns_as_written() {
        let offer = catalog().get(brandhub_catalog::Res::Offer);
        for backend in [Backend::Sqlite, Backend::Postgres] {
            let statements = resource_statements(offer, backend);
            assert!(
                statements.contains(&"CREATE UNIQUE INDEX IF NOT EXISTS \"ux_offer_fk_store_host_sku\" ON \"offer\" (\"fk_store\", \"host_sku\") WHERE \"fk_store\" IS NOT NULL AND \"host_sku\" <> ''".to_string()),
                "{statements:?}"
            );
        }
    }

    #[test]
    fn stored_rules_outside_their_domain_are_repaired_on_migration() {
        let brand_store = catalog().get(brandhub_catalog::Res::BrandStore);
        let repairs = repair_statements(brand_store, "2026-12-01T00:00:00");
        assert_eq!(repairs.len(), 2, "{repairs:?}");
        assert!(
            repairs[0].starts_with("UPDATE \"brand_store\" SET \"detail_stock_type\" = 'live', \"detail_stock_type_ci\" = 'live', "),
            "{}",
            repairs[0]
        );
        assert!(repairs[0].ends_with(
            "WHERE \"detail_stock_type\" <> '' AND lower(\"detail_stock_type\") NOT IN ('live', 'fixed', 'none')"
        ));
        assert!(
            repairs[1].contains("SET \"detail_adjust_type\" = '', \"detail_adjust_type_ci\" = ''")
        );
        assert!(repairs[1].contains("\"row_version\" = \"row_version\" + 1"));
        let stock = catalog().get(brandhub_catalog::Res::Stock);
        assert!(repair_statements(stock, "2026-12-01T00:00:00").is_empty());
    }

    #[test]
    fn natural_keys_are_unique_where_they_are_set() {
        let store = catalog().get(brandhub_catalog::Res::Store);
        assert_eq!(
            natural_key_index(store, Backend::Sqlite).unwrap(),
            "CREATE UNIQUE INDEX IF NOT EXISTS \"nk_store_fk_host_code\" ON \"store\" (\"fk_host\", \"code_ci\") WHERE \"fk_host\" IS NOT NULL AND \"code_ci\" <> ''"
        );
        // A price in any currency (`""`) has a key too.
        let price = catalog().get(brandhub_catalog::Res::Price);
        assert_eq!(
            natural_key_index(price, Backend::Sqlite).unwrap(),
            "CREATE UNIQUE INDEX IF NOT EXISTS \"nk_price_fk_variant_fk_host_currency_start_date\" ON \"price\" (\"fk_variant\", \"fk_host\", \"currency_ci\", \"start_date\") WHERE \"fk_variant\" IS NOT NULL AND \"fk_host\" IS NOT NULL AND \"start_date\" IS NOT NULL"
        );
        // A declared unique index of the same fields serves already.
        let brand_store = catalog().get(brandhub_catalog::Res::BrandStore);
        assert!(natural_key_index(brand_store, Backend::Postgres).is_none());
        let order = catalog().get(brandhub_catalog::Res::File);
        assert!(natural_key_index(order, Backend::Postgres).is_none());
    }

    #[test]
    fn text_fields_get_folded_copies_and_ids_use_the_c_collation_on_postgres() {
        let variant = catalog().get(brandhub_catalog::Res::Variant);
        let pg = table_columns(variant, Backend::Postgres);
        let barcode = pg.iter().position(|(n, _)| n == "barcode").unwrap();
        assert_eq!(pg[barcode + 1].0, "barcode_ci");
        assert!(pg[barcode + 1].1.contains("COLLATE \"C\""));
        let id = pg.iter().find(|(n, _)| n == "id").unwrap();
        assert_eq!(id.1, "TEXT COLLATE \"C\" PRIMARY KEY");
        let fk = pg.iter().find(|(n, _)| n == "fk_product").unwrap();
        assert_eq!(
            fk.1,
            "TEXT COLLATE \"C\" NOT NULL REFERENCES \"product\"(\"id\")"
        );
    }

    #[test]
    fn indexes_cover_foreign_keys_and_indexed_fields_with_the_id() {
        let stock = catalog().get(brandhub_catalog::Res::Stock);
        let statements = resource_statements(stock, Backend::Sqlite).join("\n");
        assert!(statements.contains("CREATE INDEX IF NOT EXISTS \"ix_stock_fk_variant\" ON \"stock\" (\"fk_variant\", \"id\")"));
        assert!(statements.contains("CREATE INDEX IF NOT EXISTS \"ix_stock_last_update\" ON \"stock\" (\"last_update\", \"id\")"));
        assert!(
            statements
                .contains("CREATE UNIQUE INDEX IF NOT EXISTS \"ux_stock_fk_warehouse_fk_variant\"")
        );
        let order = catalog().get(brandhub_catalog::Res::Order);
        let statements = resource_statements(order, Backend::Postgres).join("\n");
        assert!(
            statements.contains("(\"order_date\" NULLS FIRST, \"id\")"),
            "{statements}"
        );
        assert!(
            statements.contains("(\"brand_order_ref_ci\", \"id\")"),
            "{statements}"
        );
    }

    #[test]
    fn the_job_queue_refers_to_files_with_the_ids_collation() {
        let pg = queue_statements(Backend::Postgres).join("\n");
        assert!(
            pg.contains("\"file_id\" TEXT COLLATE \"C\" PRIMARY KEY REFERENCES \"file\"(\"id\")"),
            "{pg}"
        );
        let sqlite = queue_statements(Backend::Sqlite).join("\n");
        assert!(sqlite.contains("\"file_id\" TEXT PRIMARY KEY"), "{sqlite}");
        assert!(sqlite.contains("(\"state\", \"available_at\")"), "{sqlite}");
    }

    #[test]
    fn moved_counts_are_held_by_the_database() {
        let stock = catalog().get(brandhub_catalog::Res::Stock);
        let pg = held_statements(stock, Backend::Postgres);
        assert_eq!(pg.len(), 2, "inStock and demand: {pg:?}");
        assert!(
            pg[0].contains(r#"ADD CONSTRAINT "bh_held_stock_in_stock" CHECK ("in_stock" BETWEEN -1000000000 AND 1000000000) NOT VALID"#),
            "{}",
            pg[0]
        );
        let sqlite = held_statements(stock, Backend::Sqlite);
        assert_eq!(
            sqlite.len(),
            4,
            "an insert and an update trigger each: {sqlite:?}"
        );
        assert!(
            sqlite[3].starts_with(r#"CREATE TRIGGER IF NOT EXISTS "bh_held_stock_demand_update" BEFORE UPDATE OF "demand" ON "stock" WHEN NEW."demand" IS NOT NULL AND (typeof(NEW."demand") <> 'integer' OR NEW."demand" NOT BETWEEN -1000000000 AND 1000000000)"#),
            "{}",
            sqlite[3]
        );
        let order = catalog().get(brandhub_catalog::Res::Order);
        assert!(held_statements(order, Backend::Sqlite).is_empty());
    }

    /// A move that would take a count past its range, or past what an integer holds (which
    /// SQLite would store as a real that no longer reads back), fails its write, which is
    /// told as the 422 naming the count; the count stays as it was.
    #[tokio::test]
    async fn sqlite_refuses_a_move_past_the_range_and_the_count_stays() {
        use crate::db::{Kind, Timing};
        use sea_query::{Alias, Expr, ExprTrait, Query};
        let dir = tempfile::tempdir().unwrap();
        let store = crate::db::migrated_sqlite(&dir.path().join("held.db"), 1).await;
        // A stock record without the records it links to: this connection checks no links.
        store
            .execute_raw("PRAGMA foreign_keys = OFF; INSERT INTO stock (id, fk_warehouse, fk_variant, in_stock, demand, supply, last_update) VALUES ('S1', 'W', 'V', 5, 999999999, 0, '2026-01-01T00:00:00')")
            .await
            .unwrap();
        let add = |n: i64| {
            Query::update()
                .table(Alias::new("stock"))
                .value(Alias::new("demand"), Expr::col(Alias::new("demand")).add(n))
                .and_where(Expr::col(Alias::new("id")).eq("S1"))
                .to_owned()
        };
        let write = |n: i64| {
            let store = store.clone();
            async move {
                let mut tx = store.begin().await?;
                tx.execute("stock", &add(n)).await?;
                tx.commit().await.map(|_| ())
            }
        };
        write(1).await.expect("the top of the range is a count");
        for past in [1, i64::MAX] {
            match write(past).await {
                Err(StoreError::Invalid { problems, .. }) => {
                    assert_eq!(problems[0].field, "stock.demand");
                    assert!(
                        problems[0]
                            .message
                            .contains("-1,000,000,000 to 1,000,000,000"),
                        "{}",
                        problems[0].message
                    );
                }
                other => panic!("a move past the range is refused, not {other:?}"),
            }
        }
        let read = Query::select()
            .column(Alias::new("demand"))
            .from(Alias::new("stock"))
            .to_owned();
        let rows = store
            .fetch(&read, &[Kind::Integer], &Timing::default())
            .await
            .unwrap();
        assert_eq!(rows[0][0], brandhub_catalog::Cell::Integer(1_000_000_000));
    }

    #[test]
    fn list_fields_have_tables_of_their_own() {
        let user = catalog().get(brandhub_catalog::Res::User);
        let statements = resource_statements(user, Backend::Sqlite).join("\n");
        assert!(
            statements.contains("CREATE TABLE IF NOT EXISTS \"user_company\""),
            "{statements}"
        );
        assert!(versioned_tables().contains(&"api_key_grant"));
    }
}
