//! The schema's fingerprint: whether a database already has every table, index, function and
//! trigger this build would create, so that a start-up leaves a current schema alone.
//!
//! Creating a trigger again locks its table against writes until the migration commits; a
//! process starting beside a running server (`brandhub import`, a second `serve`) would take
//! those locks in catalog order while the server's write transactions take them in theirs,
//! and on PostgreSQL one of the two is aborted as a deadlock. A database whose stored
//! fingerprint equals this build's is therefore not migrated again.

use super::*;
use sha2::{Digest, Sha256};

/// The `bh_meta` row holding the fingerprint of the schema the last migration made.
pub const FINGERPRINT_NAME: &str = "schema_fingerprint";

/// The tables beside the resources' that the migration makes after them: the file queue,
/// idempotency keys, sessions.
pub(super) fn service_statements(backend: Backend) -> Vec<String> {
    let mut all = queue_statements(backend);
    all.extend(crate::idempotency::idempotency_statements());
    all.extend(crate::accounts::sessions::statements(backend));
    all
}

/// The triggers the migration makes last, in one transaction: those that see writes from
/// outside brandhub and those that keep the change marks.
pub(super) fn trigger_statements(backend: Backend) -> Vec<String> {
    let mut all = crate::external::statements(backend);
    all.extend(crate::changes::statements(backend));
    all
}

/// Every statement the migration runs to make the schema (columns with their types, tables,
/// indexes, functions, triggers) on `backend`, in the order it runs them.
fn schema_statements(backend: Backend) -> Vec<String> {
    let mut all = bookkeeping_statements(backend);
    for resource in catalog().resources() {
        for (name, ty) in table_columns(resource, backend) {
            all.push(format!("column {}.{name} {ty}", resource.table));
        }
        all.extend(resource_statements(resource, backend));
    }
    all.extend(service_statements(backend));
    all.extend(trigger_statements(backend));
    all.extend(crate::offers::statements(backend));
    all
}

/// The SHA-256 of [`schema_statements`], in hexadecimal: equal for two builds exactly when
/// they would make the same schema.
pub fn schema_fingerprint(backend: Backend) -> String {
    let mut hasher = Sha256::new();
    for statement in schema_statements(backend) {
        hasher.update(statement.as_bytes());
        hasher.update([0u8]);
    }
    hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_is_stable_and_differs_by_backend() {
        let sqlite = schema_fingerprint(Backend::Sqlite);
        assert_eq!(sqlite, schema_fingerprint(Backend::Sqlite));
        assert_eq!(sqlite.len(), 64);
        assert_ne!(sqlite, schema_fingerprint(Backend::Postgres));
    }
}
