//! Copies of an SQLite database taken while servers read and write it (`brandhub backup`), and
//! the checks a copy passes before it is put in place (`brandhub restore`).
//!
//! In WAL mode a reader sees the database as it was when its read transaction began, while
//! writers go on appending to the log. `VACUUM INTO` writes that view into a new file inside
//! one read transaction: the copy holds exactly the transactions committed before it began,
//! and, a reader, it never takes the write lock, so writers go on as before (a checkpoint
//! cannot copy the log past the copy's view while it runs: the log grows by the writes made
//! meanwhile and is copied back after). SQLite's online backup API is a reader too when it
//! copies in one step; in steps, it starts over whenever another connection writes, which under
//! a steady stream of writes may never end. `VACUUM INTO` also leaves the free pages out, and
//! needs nothing beyond plain SQL.

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode};
use sqlx::{ConnectOptions, Connection, SqliteConnection};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

/// The rows of each table of a database, by the table's name (SQLite's own tables left out).
pub type TableCounts = BTreeMap<String, u64>;

/// Why a copy was not made, or a copy is not fit to be restored: a sentence for the operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotError(pub String);

impl std::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SnapshotError {}

/// How long a copy or a check waits for a lock SQLite holds for a moment (a checkpoint's
/// reset of the log), as long as the store's own connections wait.
const BUSY_WAIT: Duration = Duration::from_secs(30);

/// The database file an `sqlite:` URL names; `None` for any other URL.
pub fn sqlite_file(url: &str) -> Option<PathBuf> {
    if !url.starts_with("sqlite:") {
        return None;
    }
    SqliteConnectOptions::from_str(url)
        .ok()
        .map(|options| options.get_filename().to_path_buf())
}

/// Opens the database at `path` without creating it; read-only unless `write`.
async fn open(path: &Path, write: bool) -> Result<SqliteConnection, SnapshotError> {
    SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(false)
        .read_only(!write)
        .busy_timeout(BUSY_WAIT)
        .connect()
        .await
        .map_err(|e| {
            SnapshotError(format!(
                "cannot open the SQLite database {}: {e}",
                path.display()
            ))
        })
}

/// Copies the live database at `database` into the new file `into` (which must not exist) as
/// one transactionally consistent view, without holding up its writers (see the module docs).
/// The copy is a database of one file (no write-ahead log beside it). Returns the copy's rows
/// by table.
pub async fn copy_sqlite(database: &Path, into: &Path) -> Result<TableCounts, SnapshotError> {
    if !database.is_file() {
        return Err(SnapshotError(format!(
            "there is no SQLite database at {}",
            database.display()
        )));
    }
    let target = into.to_str().ok_or_else(|| {
        SnapshotError(format!(
            "the path {} is not UTF-8, which SQLite needs",
            into.display()
        ))
    })?;
    let mut source = open(database, false).await?;
    let copied = sqlx::query("VACUUM INTO ?")
        .bind(target)
        .execute(&mut source)
        .await;
    let _ = source.close().await;
    copied.map_err(|e| {
        SnapshotError(format!(
            "cannot copy the database {} into {}: {e}",
            database.display(),
            into.display()
        ))
    })?;
    // The copy keeps the source's journal mode; a copy in the rollback mode is one file, which
    // travels alone (a server opening it turns the write-ahead log on again).
    let mut copy = SqliteConnectOptions::new()
        .filename(into)
        .create_if_missing(false)
        .journal_mode(SqliteJournalMode::Delete)
        .busy_timeout(BUSY_WAIT)
        .connect()
        .await
        .map_err(|e| SnapshotError(format!("cannot open the copy {}: {e}", into.display())))?;
    let counts = count_tables(&mut copy).await;
    let _ = copy.close().await;
    counts
}

/// Checks the database copy at `path` before it is put in place: it must pass SQLite's
/// `PRAGMA integrity_check` (every page, index and constraint readable and consistent).
/// Returns its rows by table, for comparison with what the backup recorded.
pub async fn check_sqlite(path: &Path) -> Result<TableCounts, SnapshotError> {
    let mut conn = open(path, false).await?;
    let checked = integrity_problems(&mut conn).await;
    let counts = match checked {
        Ok(problems) if problems.is_empty() => count_tables(&mut conn).await,
        Ok(problems) => Err(SnapshotError(format!(
            "the database fails SQLite's integrity check: {}",
            problems.join("; ")
        ))),
        Err(error) => Err(error),
    };
    let _ = conn.close().await;
    counts
}

/// The problems `PRAGMA integrity_check` lists (at most ten), none when it answers `ok`.
async fn integrity_problems(conn: &mut SqliteConnection) -> Result<Vec<String>, SnapshotError> {
    let lines: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check(10)")
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| SnapshotError(format!("cannot read the database: {e}")))?;
    Ok(match lines.as_slice() {
        [ok] if ok == "ok" => Vec::new(),
        _ => lines,
    })
}

/// The rows of every table of the database (SQLite's own tables left out).
async fn count_tables(conn: &mut SqliteConnection) -> Result<TableCounts, SnapshotError> {
    let unreadable = |e: sqlx::Error| SnapshotError(format!("cannot read the database: {e}"));
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
    )
    .fetch_all(&mut *conn)
    .await
    .map_err(unreadable)?;
    let mut counts = TableCounts::new();
    for table in tables {
        // The name is the database's own, quoted as an identifier.
        let sql = format!("SELECT count(*) FROM \"{}\"", table.replace('"', "\"\""));
        let rows: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_one(&mut *conn)
            .await
            .map_err(unreadable)?;
        counts.insert(table, u64::try_from(rows).unwrap_or(0));
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn database(path: &Path, statements: &str) {
        let mut conn = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .connect()
            .await
            .unwrap();
        sqlx::raw_sql(sqlx::AssertSqlSafe(statements.to_string()))
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
    }

    #[test]
    fn only_sqlite_urls_name_a_file() {
        assert_eq!(
            sqlite_file("sqlite:///srv/data/brandhub.db"),
            Some(PathBuf::from("/srv/data/brandhub.db"))
        );
        assert_eq!(
            sqlite_file("sqlite://data/brandhub.db?mode=rwc"),
            Some(PathBuf::from("data/brandhub.db"))
        );
        assert_eq!(sqlite_file("postgres://root@localhost/brandhub"), None);
    }

    #[tokio::test]
    async fn a_copy_holds_every_committed_row_in_one_file_and_passes_the_check() {
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join("live.db");
        database(
            &live,
            "CREATE TABLE \"a \"\"b\" (x); INSERT INTO \"a \"\"b\" VALUES (1), (2); CREATE TABLE c (y)",
        )
        .await;
        // A reader keeps the log from being checkpointed away: the copy must read it too.
        let mut writer = open(&live, true).await.unwrap();
        sqlx::query("INSERT INTO c VALUES (3)")
            .execute(&mut writer)
            .await
            .unwrap();
        let copy = dir.path().join("copy.db");
        let counts = copy_sqlite(&live, &copy).await.unwrap();
        assert_eq!(
            counts,
            TableCounts::from([("a \"b".to_string(), 2), ("c".to_string(), 1)])
        );
        writer.close().await.unwrap();
        assert!(!dir.path().join("copy.db-wal").exists());
        assert_eq!(check_sqlite(&copy).await.unwrap(), counts);
        // The copy is never written over.
        let again = copy_sqlite(&live, &copy).await.unwrap_err();
        assert!(again.0.contains("cannot copy"), "{again}");
    }

    #[tokio::test]
    async fn a_missing_database_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let error = copy_sqlite(&dir.path().join("none.db"), &dir.path().join("copy.db"))
            .await
            .unwrap_err();
        assert!(
            error.0.contains("there is no SQLite database at"),
            "{error}"
        );
        assert!(!dir.path().join("none.db").exists());
    }

    #[tokio::test]
    async fn a_damaged_or_foreign_file_fails_the_check() {
        let dir = tempfile::tempdir().unwrap();
        let foreign = dir.path().join("foreign.db");
        std::fs::write(&foreign, b"PK\x03\x04 not a database at all, just bytes").unwrap();
        let error = check_sqlite(&foreign).await.unwrap_err();
        assert!(error.0.contains("not a database"), "{error}");

        // A page of an index overwritten: SQLite opens the file, the check finds the damage.
        let damaged = dir.path().join("damaged.db");
        let mut rows = String::from("PRAGMA page_size = 4096; CREATE TABLE t (x TEXT); ");
        for i in 0..2000 {
            rows.push_str(&format!("INSERT INTO t VALUES ('row {i:05}'); "));
        }
        rows.push_str("CREATE INDEX ix_t ON t (x); PRAGMA journal_mode = DELETE;");
        database(&damaged, &rows).await;
        let mut bytes = std::fs::read(&damaged).unwrap();
        let pages = bytes.len() / 4096;
        let last = (pages - 1) * 4096;
        bytes[last + 100..last + 4000].fill(0x5a);
        std::fs::write(&damaged, bytes).unwrap();
        let error = check_sqlite(&damaged).await.unwrap_err();
        assert!(
            error.0.contains("integrity check") || error.0.contains("malformed"),
            "{error}"
        );
    }
}
