//! SQLite only: the connections an export's chunks are read on, driven directly on a
//! blocking thread. Each row's values are decoded from the statement into cells as it steps,
//! where the pool's driver copies every value into a row of its own on its worker thread and
//! hands the rows over to the task one by one: for a chunk of thousands of rows that copy and
//! hand-over were most of an export's time (docs/decisions/0034-exports-read-directly.md).
//! Everything else reads on the pool; an export's related records too.

use super::Kind;
use super::failure::{internal, unreadable};
use crate::error::{StoreError, StoreResult};
use brandhub_catalog::Cell;
use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::{Connection, OpenFlags};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;

/// SQLite's primary result codes for a database another connection holds past the busy
/// timeout: `SQLITE_BUSY` and `SQLITE_LOCKED`.
const BUSY_CODES: [rusqlite::ErrorCode; 2] = [
    rusqlite::ErrorCode::DatabaseBusy,
    rusqlite::ErrorCode::DatabaseLocked,
];

/// A few connections of their own to one SQLite file, for reads only (`query_only`), opened
/// when first needed and kept.
#[derive(Debug)]
pub(crate) struct ExportReader {
    path: PathBuf,
    /// Connections not in use.
    idle: Mutex<Vec<Connection>>,
    /// At most this many reads at once (one connection each).
    permits: Semaphore,
    cache_kib: u32,
    wait: Duration,
}

impl ExportReader {
    /// A reader of the database file at `path` with at most `connections` connections, each
    /// with a page cache of `cache_kib` and waiting up to `wait` for a lock.
    pub(crate) fn new(path: PathBuf, connections: u32, cache_kib: u32, wait: Duration) -> Self {
        ExportReader {
            path,
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(connections.max(1) as usize),
            cache_kib,
            wait,
        }
    }

    /// Runs one select (SQL and values as sea-query built them for SQLite) and decodes each
    /// row by `kinds`, as [`super::Store::fetch`] does on the pool.
    pub(crate) async fn fetch(
        self: &Arc<Self>,
        sql: String,
        values: sea_query::Values,
        kinds: Vec<Kind>,
    ) -> StoreResult<Vec<Vec<Cell>>> {
        let permit = tokio::time::timeout(self.wait, self.permits.acquire())
            .await
            .map_err(|_| StoreError::Unavailable)?
            .map_err(|e| internal("the export connections closed", e))?;
        let reader = self.clone();
        let rows = tokio::task::spawn_blocking(move || {
            let connection = reader.connection()?;
            let rows = read(&connection, &sql, &values, &kinds);
            reader.give_back(connection);
            rows
        })
        .await
        .map_err(|e| internal("an export's read did not finish", e))?;
        drop(permit);
        rows
    }

    /// An idle connection, or a new one.
    fn connection(&self) -> StoreResult<Connection> {
        if let Some(connection) = self.idle.lock().ok().and_then(|mut idle| idle.pop()) {
            return Ok(connection);
        }
        // Read-write without create: a reader of a database in WAL mode may have to make its
        // shared-memory file; `query_only` keeps it from writing anything else.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection = Connection::open_with_flags(&self.path, flags)
            .map_err(|e| database_error("an export connection did not open", e))?;
        connection
            .busy_timeout(self.wait)
            .and_then(|_| {
                connection.execute_batch(&format!(
                    "PRAGMA query_only = 1; PRAGMA cache_size = -{}; PRAGMA temp_store = memory;",
                    self.cache_kib
                ))
            })
            .map_err(|e| database_error("an export connection was not set up", e))?;
        Ok(connection)
    }

    fn give_back(&self, connection: Connection) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.push(connection);
        }
    }
}

/// A failure of the database, told as [`super::failure::failed`] tells the pool's: busy or
/// locked past the wait is [`StoreError::Unavailable`], anything else ours.
fn database_error(context: &str, error: rusqlite::Error) -> StoreError {
    if error
        .sqlite_error_code()
        .is_some_and(|code| BUSY_CODES.contains(&code))
    {
        tracing::warn!(%error, "{context}: the database cannot be reached");
        return StoreError::Unavailable;
    }
    internal(context, error)
}

/// A bound value: the kinds of value brandhub binds (texts, numbers, booleans, nulls).
fn bound(value: &sea_query::Value) -> StoreResult<SqlValue> {
    use sea_query::Value as V;
    let integer = |n: Option<i64>| n.map_or(SqlValue::Null, SqlValue::Integer);
    Ok(match value {
        V::Bool(b) => integer(b.map(i64::from)),
        V::TinyInt(n) => integer(n.map(i64::from)),
        V::SmallInt(n) => integer(n.map(i64::from)),
        V::Int(n) => integer(n.map(i64::from)),
        V::BigInt(n) => integer(*n),
        V::TinyUnsigned(n) => integer(n.map(i64::from)),
        V::SmallUnsigned(n) => integer(n.map(i64::from)),
        V::Unsigned(n) => integer(n.map(i64::from)),
        V::BigUnsigned(n) => match n {
            Some(n) => SqlValue::Integer(
                i64::try_from(*n).map_err(|e| internal("a bound value is out of range", e))?,
            ),
            None => SqlValue::Null,
        },
        V::Float(f) => f.map_or(SqlValue::Null, |f| SqlValue::Real(f64::from(f))),
        V::Double(f) => f.map_or(SqlValue::Null, SqlValue::Real),
        V::String(s) => s.clone().map_or(SqlValue::Null, SqlValue::Text),
        V::Char(c) => c.map_or(SqlValue::Null, |c| SqlValue::Text(c.to_string())),
        V::Bytes(b) => b.clone().map_or(SqlValue::Null, SqlValue::Blob),
        other => {
            return Err(internal(
                "an export bound a value of a kind it cannot send",
                format!("{other:?}"),
            ));
        }
    })
}

/// The statement's rows, each decoded by `kinds` as the pool's reads decode theirs: a value
/// whose stored type is not the column's kind does not decode ([`StoreError::Unreadable`]).
fn read(
    connection: &Connection,
    sql: &str,
    values: &sea_query::Values,
    kinds: &[Kind],
) -> StoreResult<Vec<Vec<Cell>>> {
    let bound = values
        .0
        .iter()
        .map(bound)
        .collect::<StoreResult<Vec<_>>>()?;
    let mut statement = connection
        .prepare_cached(sql)
        .map_err(|e| database_error("an export's statement did not compile", e))?;
    let mut rows = statement
        .query(rusqlite::params_from_iter(bound))
        .map_err(|e| database_error("an export's read failed", e))?;
    let mut decoded = Vec::new();
    while let Some(row) = rows
        .next()
        .map_err(|e| database_error("an export's read failed", e))?
    {
        let mut cells = Vec::with_capacity(kinds.len());
        for (index, kind) in kinds.iter().enumerate() {
            let value = row
                .get_ref(index)
                .map_err(|e| database_error("an export's row did not read", e))?;
            cells.push(cell(value, *kind, index)?);
        }
        decoded.push(cells);
    }
    Ok(decoded)
}

/// One value as a cell of `kind`.
fn cell(value: ValueRef<'_>, kind: Kind, index: usize) -> StoreResult<Cell> {
    Ok(match (kind, value) {
        (_, ValueRef::Null) => Cell::Null,
        (Kind::Text, ValueRef::Text(bytes)) => Cell::Text(
            std::str::from_utf8(bytes)
                .map_err(|e| unreadable(format!("column {index}: {e}")))?
                .to_string(),
        ),
        (Kind::Integer, ValueRef::Integer(n)) => Cell::Integer(n),
        (Kind::Number, ValueRef::Real(f)) => Cell::Number(f),
        (Kind::Boolean, ValueRef::Integer(n)) => Cell::Boolean(n != 0),
        (kind, value) => {
            return Err(unreadable(format!(
                "column {index}: a stored {:?} is not a {kind:?}",
                value.data_type()
            )));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn database() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("export.db");
        let connection = Connection::open(&path).unwrap();
        connection
            .execute_batch(
                "PRAGMA journal_mode = wal;
                 CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER, x REAL, b INTEGER, s TEXT);
                 INSERT INTO t VALUES ('a', 1, 1.5, 1, 'one'), ('b', NULL, NULL, 0, NULL),
                                      ('c', 3, 2.5, 0, 'three');",
            )
            .unwrap();
        (dir, path)
    }

    fn select(after: &str) -> (String, sea_query::Values) {
        use sea_query::{Alias, Expr, ExprTrait, Query, SqliteQueryBuilder};
        Query::select()
            .columns(["id", "n", "x", "b", "s"].map(Alias::new))
            .from(Alias::new("t"))
            .and_where(Expr::col(Alias::new("id")).gt(after))
            .order_by(Alias::new("id"), sea_query::Order::Asc)
            .build(SqliteQueryBuilder)
    }

    const KINDS: [Kind; 5] = [
        Kind::Text,
        Kind::Integer,
        Kind::Number,
        Kind::Boolean,
        Kind::Text,
    ];

    #[tokio::test]
    async fn rows_decode_by_kind_with_bound_values() {
        let (_dir, path) = database();
        let reader = Arc::new(ExportReader::new(path, 2, 1_000, Duration::from_secs(5)));
        let (sql, values) = select("a");
        let rows = reader.fetch(sql, values, KINDS.to_vec()).await.unwrap();
        assert_eq!(
            rows,
            vec![
                vec![
                    Cell::Text("b".into()),
                    Cell::Null,
                    Cell::Null,
                    Cell::Boolean(false),
                    Cell::Null
                ],
                vec![
                    Cell::Text("c".into()),
                    Cell::Integer(3),
                    Cell::Number(2.5),
                    Cell::Boolean(false),
                    Cell::Text("three".into())
                ],
            ]
        );
        // The connection is kept and used again.
        let (sql, values) = select("");
        assert_eq!(
            reader
                .fetch(sql, values, KINDS.to_vec())
                .await
                .unwrap()
                .len(),
            3
        );
        assert_eq!(reader.idle.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_value_stored_as_another_type_does_not_decode_and_nothing_is_written() {
        let (_dir, path) = database();
        Connection::open(&path)
            .unwrap()
            .execute("UPDATE t SET n = 'seven' WHERE id = 'c'", [])
            .unwrap();
        let reader = Arc::new(ExportReader::new(path, 1, 1_000, Duration::from_secs(5)));
        let (sql, values) = select("");
        let error = reader.fetch(sql, values, KINDS.to_vec()).await.unwrap_err();
        assert!(matches!(error, StoreError::Unreadable(_)), "{error:?}");
        // The connection reads only.
        let connection = reader.connection().unwrap();
        assert!(connection.execute("DELETE FROM t", []).is_err());
    }
}
