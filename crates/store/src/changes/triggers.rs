//! The database side of sync by cursor: every insert and update of a resource table marks the
//! row ([`CHANGE_COLUMN`]); every delete, and every update that moves a row's scope columns,
//! leaves a tombstone with the scope columns the row had. In triggers, so that every writer
//! (brandhub's pipeline, `brandhub import`, the demo loader, an operator's `UPDATE`) is seen.
//!
//! The mark: on PostgreSQL the writing transaction's id (`txid_current()`, 64 bits, never
//! wrapping); a reader only takes marks below the oldest transaction still running, so a
//! transaction that commits late is never passed. On SQLite, whose writers take turns, a
//! counter bumped per row.

use crate::db::Backend;
use brandhub_catalog::{Resource, catalog};
use brandhub_query::changes::{CHANGE_COLUMN, TOMBSTONE_TABLE, scope_columns};

/// SQLite: the one-row table holding the last mark handed out.
pub const CLOCK_TABLE: &str = "bh_change_clock";

/// The prefix of the triggers' (and PostgreSQL's functions') names.
const PREFIX: &str = "bh_change";

fn quote(name: &str) -> String {
    format!("\"{name}\"")
}

/// SQLite: `UPDATE OF` every column of `resource`'s table but the mark, so that a trigger
/// does not fire again when the mark is set after a write. Triggers on updates of a resource
/// table name their columns this way.
pub fn update_of(resource: &Resource) -> String {
    let columns: Vec<String> = crate::schema::table_columns(resource, Backend::Sqlite)
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| name != CHANGE_COLUMN)
        .map(|name| quote(&name))
        .collect();
    format!("UPDATE OF {}", columns.join(", "))
}

/// The current time in milliseconds, in the database's dialect.
fn now_millis(backend: Backend) -> &'static str {
    match backend {
        Backend::Postgres => "(extract(epoch from clock_timestamp()) * 1000)::bigint",
        Backend::Sqlite => "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)",
    }
}

/// The scope columns of a row (`row`: `OLD`, or a transition table's alias) as a JSON text.
fn scope_json(backend: Backend, columns: &[String], row: &str) -> String {
    let pairs: Vec<String> = columns
        .iter()
        .map(|c| format!("'{c}', {row}.{}", quote(c)))
        .collect();
    match backend {
        Backend::Postgres => format!("jsonb_build_object({})::text", pairs.join(", ")),
        Backend::Sqlite => format!("json_object({})", pairs.join(", ")),
    }
}

/// `OLD.a IS DISTINCT FROM NEW.a OR …`: whether an update moved the row's scope columns.
fn moved(backend: Backend, columns: &[String]) -> String {
    let differs = match backend {
        Backend::Postgres => "IS DISTINCT FROM",
        Backend::Sqlite => "IS NOT",
    };
    columns
        .iter()
        .map(|c| format!("OLD.{0} {differs} NEW.{0}", quote(c)))
        .collect::<Vec<_>>()
        .join(" OR ")
}

const TOMBSTONE_COLUMNS: &str = "\"table_name\", \"id\", \"change\", \"deleted_millis\", \"scope\"";

/// Every statement (run by each migration, after the tables exist; made again each time, so
/// that they follow the catalog).
pub fn statements(backend: Backend) -> Vec<String> {
    let id_type = match backend {
        Backend::Postgres => "TEXT COLLATE \"C\" NOT NULL",
        Backend::Sqlite => "TEXT NOT NULL",
    };
    let mut statements = vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {} (\"table_name\" TEXT NOT NULL, \"id\" {id_type}, \
             \"change\" BIGINT NOT NULL, \"deleted_millis\" BIGINT NOT NULL, \"scope\" TEXT NOT NULL)",
            quote(TOMBSTONE_TABLE)
        ),
        format!(
            "CREATE INDEX IF NOT EXISTS \"ix_{TOMBSTONE_TABLE}_change\" ON {} (\"table_name\", \"change\", \"id\")",
            quote(TOMBSTONE_TABLE)
        ),
        format!(
            "CREATE INDEX IF NOT EXISTS \"ix_{TOMBSTONE_TABLE}_deleted\" ON {} (\"deleted_millis\")",
            quote(TOMBSTONE_TABLE)
        ),
    ];
    if backend == Backend::Sqlite {
        statements.push(format!(
            "CREATE TABLE IF NOT EXISTS {} (\"id\" INTEGER PRIMARY KEY CHECK (\"id\" = 1), \"n\" BIGINT NOT NULL)",
            quote(CLOCK_TABLE)
        ));
        statements.push(format!(
            "INSERT OR IGNORE INTO {} (\"id\", \"n\") VALUES (1, 0)",
            quote(CLOCK_TABLE)
        ));
    } else {
        statements.push(format!(
            "CREATE OR REPLACE FUNCTION \"{PREFIX}_stamp\"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
             NEW.{} := txid_current(); RETURN NEW; END $$",
            quote(CHANGE_COLUMN)
        ));
    }
    for resource in catalog().resources() {
        statements.push(format!(
            "CREATE INDEX IF NOT EXISTS {} ON {} ({}, \"id\")",
            quote(&format!("ix_{}_{CHANGE_COLUMN}", resource.table)),
            quote(resource.table),
            quote(CHANGE_COLUMN)
        ));
        match backend {
            Backend::Postgres => postgres(resource, &mut statements),
            Backend::Sqlite => sqlite(resource, &mut statements),
        }
    }
    statements
}

fn postgres(resource: &'static Resource, statements: &mut Vec<String>) {
    let table = quote(resource.table);
    let name = resource.table;
    let scope = scope_columns(resource);
    let now = now_millis(Backend::Postgres);
    statements.push(format!(
        "CREATE OR REPLACE TRIGGER \"{PREFIX}_stamp\" BEFORE INSERT OR UPDATE ON {table} \
         FOR EACH ROW EXECUTE FUNCTION \"{PREFIX}_stamp\"()"
    ));
    // Deletes: one insert of tombstones per statement, over the rows it removed.
    let delete = format!("{PREFIX}_{name}_delete");
    statements.push(format!(
        "CREATE OR REPLACE FUNCTION \"{delete}\"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
         INSERT INTO {} ({TOMBSTONE_COLUMNS}) SELECT '{name}', gone.\"id\", txid_current(), {now}, {} FROM gone; \
         RETURN NULL; END $$",
        quote(TOMBSTONE_TABLE),
        scope_json(Backend::Postgres, scope, "gone")
    ));
    statements.push(format!(
        "CREATE OR REPLACE TRIGGER \"{delete}\" AFTER DELETE ON {table} \
         REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION \"{delete}\"()"
    ));
    if scope.is_empty() {
        return;
    }
    // Moves: only updates that name a scope column, and only rows where one changed.
    let moves = format!("{PREFIX}_{name}_move");
    statements.push(format!(
        "CREATE OR REPLACE FUNCTION \"{moves}\"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
         INSERT INTO {} ({TOMBSTONE_COLUMNS}) VALUES ('{name}', OLD.\"id\", txid_current(), {now}, {}); \
         RETURN NULL; END $$",
        quote(TOMBSTONE_TABLE),
        scope_json(Backend::Postgres, scope, "OLD")
    ));
    let columns: Vec<String> = scope.iter().map(|c| quote(c)).collect();
    statements.push(format!(
        "CREATE OR REPLACE TRIGGER \"{moves}\" AFTER UPDATE OF {} ON {table} \
         FOR EACH ROW WHEN ({}) EXECUTE FUNCTION \"{moves}\"()",
        columns.join(", "),
        moved(Backend::Postgres, scope)
    ));
}

fn sqlite(resource: &'static Resource, statements: &mut Vec<String>) {
    let table = quote(resource.table);
    let name = resource.table;
    let scope = scope_columns(resource);
    let now = now_millis(Backend::Sqlite);
    let clock = quote(CLOCK_TABLE);
    let bump = format!("UPDATE {clock} SET \"n\" = \"n\" + 1");
    let mark = format!("(SELECT \"n\" FROM {clock})");
    let stamp = format!(
        "UPDATE {table} SET {} = {mark} WHERE \"id\" = NEW.\"id\"",
        quote(CHANGE_COLUMN)
    );
    let tombstone = |row: &str, when: &str| {
        format!(
            "INSERT INTO {} ({TOMBSTONE_COLUMNS}) SELECT '{name}', {row}.\"id\", {mark}, {now}, {} WHERE {when}",
            quote(TOMBSTONE_TABLE),
            scope_json(Backend::Sqlite, scope, row)
        )
    };
    let mut trigger = |event: &str, on: String, body: String| {
        let trigger = format!("{PREFIX}_{name}_{event}");
        // Dropped and made in one go, on one connection: another connection of the pool
        // could still hold the schema from before the drop.
        statements.push(format!(
            "DROP TRIGGER IF EXISTS \"{trigger}\"; CREATE TRIGGER \"{trigger}\" AFTER {on} ON {table} BEGIN {body}; END"
        ));
    };
    trigger("insert", "INSERT".into(), format!("{bump}; {stamp}"));
    let moved_scope = if scope.is_empty() {
        String::new()
    } else {
        format!("{}; ", tombstone("OLD", &moved(Backend::Sqlite, scope)))
    };
    trigger(
        "update",
        update_of(resource),
        format!("{bump}; {moved_scope}{stamp}"),
    );
    trigger(
        "delete",
        "DELETE".into(),
        format!("{bump}; {}", tombstone("OLD", "1 = 1")),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_resource_table_is_marked_on_both_backends() {
        let tables = catalog().resources().len();
        let sqlite = statements(Backend::Sqlite);
        assert_eq!(
            sqlite
                .iter()
                .filter(|s| s.contains("CREATE TRIGGER"))
                .count(),
            3 * tables
        );
        let postgres = statements(Backend::Postgres);
        assert_eq!(
            postgres
                .iter()
                .filter(|s| s.contains("_stamp\" BEFORE INSERT OR UPDATE"))
                .count(),
            tables
        );
        // The mark itself never fires an update trigger again.
        let stock = catalog().get(brandhub_catalog::Res::Stock);
        assert!(!update_of(stock).contains(CHANGE_COLUMN));
        assert!(
            update_of(stock).contains("\"in_stock\""),
            "{}",
            update_of(stock)
        );
    }
}
