//! Writes made outside brandhub (an operator's `UPDATE` in `psql` or `sqlite3`, a migration
//! script): the database itself bumps every version of a table such a write changes, so the
//! next read of every brandhub process sees it (docs/CACHE.md, "Writes from outside").
//!
//! brandhub's own writes bump exactly the versions they change ([`crate::versions`]) and log
//! their rows ([`crate::row_log`]); a trigger on every versioned table bumps all of the
//! table's versions, unlogged (so no cached page of it is kept through the change), for a
//! write that does not come from brandhub. How a write tells that it comes from brandhub:
//! - PostgreSQL: brandhub's connections start with the setting [`PG_WRITER_SETTING`] on
//!   (a startup option, no statement); the statement-level trigger's `WHEN` reads it.
//! - SQLite has no session settings a trigger can read, and one writer at a time: each of
//!   brandhub's write transactions holds a row in [`MARK_TABLE`] from its `BEGIN` to just
//!   before its `COMMIT` (both sent in the transaction's own batches, so no round trip is
//!   added); another connection never sees that uncommitted row, and its writes fire the
//!   row triggers.

use crate::db::Backend;
use crate::versions;

/// PostgreSQL: the setting brandhub's connections start with.
pub const PG_WRITER_SETTING: &str = "brandhub.writer";

/// SQLite: the table whose row marks a write transaction as brandhub's while it runs.
pub const MARK_TABLE: &str = "bh_writer";

/// The trigger function (PostgreSQL) and the prefix of the triggers' names.
const TRIGGER: &str = "bh_external_write";

/// SQLite: the statement a write transaction sends after `BEGIN IMMEDIATE`.
pub(crate) const MARK_SQL: &str = "INSERT OR REPLACE INTO \"bh_writer\" (\"id\") VALUES (1)";

/// SQLite: the statement a write transaction sends before `COMMIT`.
pub(crate) const UNMARK_SQL: &str = "DELETE FROM \"bh_writer\"";

/// Every version of `table`: the table's own, its rows', its unnamed columns', its other
/// fields' and each indexed field's; the authentication stamp when the table's writes move it
/// (users and keys); and the one every write moves ([`versions::ANY_WRITE`]).
pub fn versions_of(table: &'static str) -> Vec<&'static str> {
    let own = [
        table,
        versions::rows_key(table),
        versions::columns_key(table),
        versions::others_key(table),
    ];
    let field = format!("{table}.");
    let mut keys: Vec<&'static str> = versions::all_keys()
        .into_iter()
        .filter(|key| own.contains(key) || key.starts_with(&field))
        .collect();
    if crate::accounts::moves_auth_stamp(&keys) {
        keys.push(crate::accounts::AUTH_STAMP);
    }
    keys.push(versions::ANY_WRITE);
    keys.sort_unstable();
    keys.dedup();
    keys
}

fn quoted_list(keys: &[&str]) -> String {
    keys.iter()
        .map(|key| format!("'{}'", key.replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The statements that make the triggers (run by every migration, after the tables and the
/// version rows exist; made again each time, so that they follow the catalog).
pub fn statements(backend: Backend) -> Vec<String> {
    let mut statements = Vec::new();
    match backend {
        Backend::Postgres => {
            // The version rows are locked in name order, as brandhub's own bumps lock them,
            // so an outside write and brandhub's writes never deadlock on them.
            statements.push(format!(
                "CREATE OR REPLACE FUNCTION {TRIGGER}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
                 INSERT INTO \"bh_table_version\" (\"table_name\", \"version\") \
                 SELECT name, 1 FROM unnest(TG_ARGV) AS name ORDER BY name COLLATE \"C\" \
                 ON CONFLICT (\"table_name\") DO UPDATE SET \"version\" = \"bh_table_version\".\"version\" + 1; \
                 RETURN NULL; END $$"
            ));
            for table in crate::schema::versioned_tables() {
                let keys = versions_of(table);
                statements.push(format!(
                    "CREATE OR REPLACE TRIGGER \"{TRIGGER}\" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON \"{table}\" \
                     FOR EACH STATEMENT WHEN (current_setting('{PG_WRITER_SETTING}', true) IS DISTINCT FROM 'on') \
                     EXECUTE FUNCTION {TRIGGER}({})",
                    quoted_list(&keys)
                ));
            }
        }
        Backend::Sqlite => {
            statements.push(format!(
                "CREATE TABLE IF NOT EXISTS \"{MARK_TABLE}\" (\"id\" INTEGER PRIMARY KEY)"
            ));
            // A mark can only be left by a transaction that committed it, which brandhub's
            // never do; removed anyway, as it would hide outside writes.
            statements.push(UNMARK_SQL.to_string());
            for table in crate::schema::versioned_tables() {
                let keys = quoted_list(&versions_of(table));
                for event in ["INSERT", "UPDATE", "DELETE"] {
                    let name = format!("{TRIGGER}_{table}_{}", event.to_lowercase());
                    // Dropped and made in one go, on one connection: another connection of
                    // the pool could still hold the schema from before the drop.
                    statements.push(format!(
                        "DROP TRIGGER IF EXISTS \"{name}\"; \
                         CREATE TRIGGER \"{name}\" AFTER {event} ON \"{table}\" \
                         WHEN NOT EXISTS (SELECT 1 FROM \"{MARK_TABLE}\") BEGIN \
                         UPDATE \"bh_table_version\" SET \"version\" = \"version\" + 1 WHERE \"table_name\" IN ({keys}); END"
                    ));
                }
            }
        }
    }
    statements
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outside_write_bumps_every_version_of_its_table() {
        let stock = versions_of("stock");
        for key in [
            "stock",
            versions::rows_key("stock"),
            versions::columns_key("stock"),
            versions::others_key("stock"),
        ] {
            assert!(stock.contains(&key), "{key} in {stock:?}");
        }
        assert!(
            stock.iter().any(|k| k.starts_with("stock.")),
            "indexed fields' versions: {stock:?}"
        );
        assert!(
            stock
                .iter()
                .all(|k| k.starts_with("stock") || *k == versions::ANY_WRITE),
            "nothing of another table: {stock:?}"
        );
        // The version every write moves, which tells each process to read the others again.
        assert!(stock.contains(&versions::ANY_WRITE));
        assert!(!stock.contains(&crate::accounts::AUTH_STAMP));
        // Users and keys move the authentication stamp, so remembered callers are checked
        // again.
        assert!(versions_of("users").contains(&crate::accounts::AUTH_STAMP));
        assert!(versions_of("api_key").contains(&crate::accounts::AUTH_STAMP));
        for table in crate::schema::versioned_tables() {
            assert!(versions_of(table).contains(&table), "{table}");
        }
    }

    #[test]
    fn every_versioned_table_gets_its_triggers() {
        let tables = crate::schema::versioned_tables().len();
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
                .filter(|s| s.starts_with("CREATE OR REPLACE TRIGGER"))
                .count(),
            tables
        );
    }
}
