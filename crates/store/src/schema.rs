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

use crate::db::{Backend, Store, internal, on_pool};
use brandhub_catalog::{
    Field, FieldType, Resource, catalog, naming::folded_column, record::stored_fields,
};
use brandhub_problem::{ApiError, ApiResult, Code};
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

/// Every column of a resource's table: (name, type), folded copies right after their source.
pub fn table_columns(resource: &Resource, backend: Backend) -> Vec<(String, String)> {
    let mut columns = Vec::new();
    for field in stored_fields(resource) {
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
    statements
}

/// The bookkeeping tables: table versions (for cached counts), the count cache, and facts
/// about the database itself.
pub fn bookkeeping_statements() -> Vec<String> {
    let mut statements = vec![
        "CREATE TABLE IF NOT EXISTS \"bh_table_version\" (\"table_name\" TEXT PRIMARY KEY, \"version\" BIGINT NOT NULL)".to_string(),
        "CREATE TABLE IF NOT EXISTS \"bh_count_cache\" (\"cache_key\" TEXT PRIMARY KEY, \"stamp\" BIGINT NOT NULL, \"record_count\" BIGINT NOT NULL, \"created_at\" BIGINT NOT NULL)".to_string(),
        "CREATE TABLE IF NOT EXISTS \"bh_meta\" (\"name\" TEXT PRIMARY KEY, \"value\" TEXT NOT NULL)".to_string(),
    ];
    for table in versioned_tables() {
        statements.push(format!(
            "INSERT INTO \"bh_table_version\" (\"table_name\", \"version\") VALUES ('{table}', 0) ON CONFLICT DO NOTHING"
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
    async fn existing_columns(&self, table: &str) -> ApiResult<Vec<String>> {
        let columns: Vec<String> = on_pool!(&self.pool, |pool, _builder| {
            let sql = match self.backend() {
                Backend::Sqlite => "SELECT name FROM pragma_table_info($1)",
                Backend::Postgres => {
                    "SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1"
                }
            };
            sqlx::query_scalar(sql)
                .bind(table)
                .fetch_all(pool)
                .await
                .map_err(|e| internal("cannot read the schema", e))?
        });
        Ok(columns)
    }

    /// What the schema lacks of what this build needs (`"table stock"`, `"column
    /// stock.available"`), empty when migrations are applied: every resource's table with every
    /// column, its list tables, the bookkeeping tables and the job queue. One statement, so
    /// it also says whether the database answers; for readiness checks.
    pub async fn schema_gaps(&self) -> ApiResult<Vec<String>> {
        let backend = self.backend();
        let pairs: Vec<(String, String)> = on_pool!(&self.pool, |pool, _builder| {
            let sql = match backend {
                Backend::Sqlite => {
                    "SELECT m.name, p.name FROM sqlite_schema AS m, pragma_table_info(m.name) AS p WHERE m.type = 'table'"
                }
                Backend::Postgres => {
                    "SELECT table_name::text, column_name::text FROM information_schema.columns WHERE table_schema = current_schema()"
                }
            };
            sqlx::query_as(sql)
                .fetch_all(pool)
                .await
                .map_err(|e| internal("cannot read the schema", e))?
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
            "bh_count_cache",
            "bh_meta",
            crate::jobs::JOB_TABLE,
        ] {
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
    pub async fn migrate(&self) -> ApiResult<()> {
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

    async fn migrate_locked(&self, backend: Backend) -> ApiResult<()> {
        for statement in bookkeeping_statements() {
            self.execute_raw(&statement).await?;
        }
        for resource in catalog().resources() {
            let existing = self.existing_columns(resource.table).await?;
            if !existing.is_empty() {
                for (name, ty) in table_columns(resource, backend) {
                    if existing.contains(&name) {
                        continue;
                    }
                    if ty.contains("NOT NULL") && !ty.contains("DEFAULT") {
                        return Err(ApiError::new(
                            Code::Conflict,
                            format!(
                                "table {} lacks the required column {name}; add it with a value for every row, then migrate again",
                                resource.table
                            ),
                        ));
                    }
                    self.execute_raw(&format!(
                        "ALTER TABLE {} ADD COLUMN {} {}",
                        quote(resource.table),
                        quote(&name),
                        ty
                    ))
                    .await?;
                    if let Some(fill) = derived_fill_statement(resource, &name) {
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
        }
        for statement in queue_statements(backend) {
            self.execute_raw(&statement).await?;
        }
        Ok(())
    }

    /// Drops everything brandhub created (tests and `demo --fresh` only).
    pub async fn drop_everything(&self) -> ApiResult<()> {
        let mut tables: Vec<&str> = versioned_tables();
        // The queue refers to files: it goes first (the list is dropped from its end).
        tables.extend([
            "bh_table_version",
            "bh_count_cache",
            "bh_meta",
            crate::jobs::JOB_TABLE,
        ]);
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

    /// Updates the planner's statistics after a bulk load.
    pub async fn analyze(&self) -> ApiResult<()> {
        match self.backend() {
            Backend::Sqlite => self.execute_raw("ANALYZE").await,
            Backend::Postgres => {
                // VACUUM also sets the visibility map, which index-only scans need.
                on_pool!(&self.pool, |pool, _builder| {
                    sqlx::raw_sql(AssertSqlSafe("VACUUM ANALYZE".to_string()))
                        .execute(pool)
                        .await
                        .map_err(|e| internal("VACUUM ANALYZE failed", e))?;
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
        let stock = catalog().resource("stock").unwrap();
        assert_eq!(
            derived_fill_statement(stock, "fk_scope_brand").unwrap(),
            "UPDATE \"stock\" SET \"fk_scope_brand\" = (SELECT (SELECT \"fk_brand\" FROM \"product\" WHERE \"product\".\"id\" = \"variant\".\"fk_product\") FROM \"variant\" WHERE \"variant\".\"id\" = \"stock\".\"fk_variant\")"
        );
        assert!(derived_fill_statement(stock, "fk_variant").is_none());
    }

    #[test]
    fn text_fields_get_folded_copies_and_ids_use_the_c_collation_on_postgres() {
        let variant = catalog().resource("variant").unwrap();
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
        let stock = catalog().resource("stock").unwrap();
        let statements = resource_statements(stock, Backend::Sqlite).join("\n");
        assert!(statements.contains("CREATE INDEX IF NOT EXISTS \"ix_stock_fk_variant\" ON \"stock\" (\"fk_variant\", \"id\")"));
        assert!(statements.contains("CREATE INDEX IF NOT EXISTS \"ix_stock_last_update\" ON \"stock\" (\"last_update\", \"id\")"));
        assert!(
            statements
                .contains("CREATE UNIQUE INDEX IF NOT EXISTS \"ux_stock_fk_warehouse_fk_variant\"")
        );
        let order = catalog().resource("order").unwrap();
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
    fn list_fields_have_tables_of_their_own() {
        let user = catalog().resource("user").unwrap();
        let statements = resource_statements(user, Backend::Sqlite).join("\n");
        assert!(
            statements.contains("CREATE TABLE IF NOT EXISTS \"user_company\""),
            "{statements}"
        );
        assert!(versioned_tables().contains(&"api_key_grant"));
    }
}
