//! The tables brandhub keeps beside the records: versions, the rows' log, counts and the
//! file queue.

use super::*;
use crate::db::Backend;

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
