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

mod bookkeeping;
mod fills;
mod fingerprint;
mod held;
mod keys;
mod migrate;

pub use bookkeeping::*;
pub use fills::*;
pub use fingerprint::*;
pub use held::*;
pub use keys::*;

use crate::db::Backend;
use brandhub_catalog::{
    Field, FieldDefault, FieldType, Generated, Resource, catalog, naming::folded_column,
    record::stored_fields,
};

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

/// When a field of a rule compared exactly counts: a text when not empty, any other value
/// when set. The rule's partial unique index holds the rows whose fields all count
/// ([`exact_index`]), and a lookup of taken values says so too ([`exact_key_counts`]), so
/// that the database may use that index.
enum Counts {
    NotEmpty,
    Set,
}

impl Counts {
    fn of(field: &Field) -> Counts {
        match field.ty {
            FieldType::Text => Counts::NotEmpty,
            _ => Counts::Set,
        }
    }

    /// The condition in the index's DDL, after the column.
    fn sql(&self) -> &'static str {
        match self {
            Counts::NotEmpty => "<> ''",
            Counts::Set => "IS NOT NULL",
        }
    }
}

/// The condition under which `field` counts in its rule ([`Counts`]), for a statement.
pub(crate) fn exact_key_counts(field: &Field) -> sea_query::SimpleExpr {
    let column = sea_query::Expr::col(sea_query::Alias::new(field.column.as_str()));
    match Counts::of(field) {
        Counts::NotEmpty => sea_query::ExprTrait::ne(column, ""),
        Counts::Set => sea_query::ExprTrait::is_not_null(column),
    }
}

/// The partial unique index of a rule compared exactly ([`brandhub_catalog::IndexDef::exact`]):
/// over the columns as written (not their folded copies, so letter case counts), among rows
/// whose fields all count ([`Counts`]).
fn exact_index(resource: &Resource, fields: &[&Field], name: &str) -> String {
    let set: Vec<String> = fields
        .iter()
        .map(|field| format!("{} {}", quote(&field.column), Counts::of(field).sql()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::StoreError;

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
