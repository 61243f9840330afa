//! How a failed statement is told: ours (500), the database unreachable (503), a write lost
//! to another (run again), or the caller's conflict; each logged with its cause.

use super::*;
use crate::error::StoreError;
use brandhub_problem::words;
use std::fmt::Display;

/// Logs a database failure with its cause and returns the client-facing 500.
pub(crate) fn internal(context: &str, error: impl Display) -> StoreError {
    tracing::error!(%error, "{context}");
    StoreError::Internal
}

/// A statement or connection that failed, logged with its cause: [`StoreError::raced`] when
/// PostgreSQL gave the transaction up for another ([`lost_to_another_transaction`]),
/// [`StoreError::Unavailable`] when the database cannot be reached now ([`unreachable`]),
/// else [`StoreError::Internal`].
/// Every failure the database driver returns is told here.
pub(crate) fn failed(context: &str, error: sqlx::Error) -> StoreError {
    if lost_to_another_transaction(&error) {
        tracing::warn!(%error, "{context}: lost to a concurrent transaction");
        return StoreError::raced();
    }
    if unreachable(&error) {
        tracing::warn!(%error, "{context}: the database cannot be reached");
        return StoreError::Unavailable;
    }
    internal(context, error)
}

/// PostgreSQL's error codes for a transaction it ended because another one touched the same
/// rows: 40P01 `deadlock_detected` and 40001 `serialization_failure`.
const PG_LOST_CODES: [&str; 2] = ["40P01", "40001"];

/// Whether PostgreSQL rolled the transaction back because of another one
/// ([`PG_LOST_CODES`]): nothing was written and the same transaction done again succeeds,
/// so it is [`StoreError::raced`], which the executor runs again.
pub fn lost_to_another_transaction(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db)
        if db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
            .is_some_and(|pg| PG_LOST_CODES.contains(&pg.code())))
}

/// PostgreSQL's error codes that say the session cannot go on or could not begin: class 08
/// (connection exceptions) is matched by its prefix; these are the server shutting down
/// (57P01 `admin_shutdown`, also what `pg_terminate_backend` sends; 57P02 `crash_shutdown`),
/// starting up (57P03 `cannot_connect_now`), or full (53300 `too_many_connections`).
const PG_UNREACHABLE_CODES: [&str; 4] = ["57P01", "57P02", "57P03", "53300"];

/// SQLite's primary result codes (the low byte of an extended one) for a database another
/// connection holds past the busy timeout: `SQLITE_BUSY` and `SQLITE_LOCKED`.
const SQLITE_BUSY: i32 = 5;
const SQLITE_LOCKED: i32 = 6;

/// Whether `error` says the database cannot be reached now, rather than that a statement was
/// wrong: the connection failed (refused, reset, closed: an I/O or TLS error), no pooled
/// connection came within the wait, the pool is closed (this process shuts down), PostgreSQL
/// ended or refused the session (an error of severity FATAL or PANIC, a connection
/// exception, the server shutting down or starting), or SQLite stayed busy or locked by
/// another connection past its busy timeout. The same request may succeed once it answers.
pub fn unreachable(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed => true,
        sqlx::Error::Database(db) => {
            if let Some(pg) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
                let code = pg.code();
                matches!(
                    pg.severity(),
                    sqlx::postgres::PgSeverity::Fatal | sqlx::postgres::PgSeverity::Panic
                ) || code.starts_with("08")
                    || PG_UNREACHABLE_CODES.contains(&code)
            } else if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                db.code()
                    .and_then(|code| code.parse::<i32>().ok())
                    .is_some_and(|code| matches!(code & 0xff, SQLITE_BUSY | SQLITE_LOCKED))
            } else {
                false
            }
        }
        _ => false,
    }
}

/// Logs a stored row that did not decode and returns [`StoreError::Unreadable`] saying why.
pub(super) fn unreadable(error: impl Display) -> StoreError {
    tracing::error!(%error, "a row did not decode");
    StoreError::Unreadable(format!("a stored row did not decode: {error}"))
}

/// A statement sent on an optimistic write that ended already: a bug, told as ours.
pub(super) fn ended() -> StoreError {
    internal(
        "a write ended",
        sqlx::Error::Protocol("the optimistic write ended".into()),
    )
}

/// The error of a statement of a batch sent to SQLite: `own`'s for the caller's statement, a
/// write's for one held back, ours for `BEGIN` or `COMMIT`.
pub(super) fn batch_error(
    part: Part,
    error: sqlx::Error,
    own: impl FnOnce(sqlx::Error) -> StoreError,
) -> StoreError {
    match part {
        Part::Own => own(error),
        Part::Held(table) => write_error(table, error),
        Part::HeldIfNew(table) => match &error {
            sqlx::Error::Database(db)
                if db.is_unique_violation() || db.is_foreign_key_violation() =>
            {
                StoreError::raced()
            }
            _ => write_error(table, error),
        },
        Part::Transaction => failed("cannot begin or commit a transaction", error),
        Part::CallerCheck => caller_changed(),
        Part::ChangedItsRow => StoreError::raced(),
    }
}

/// A write whose caller, taken from memory unchecked, changed before it committed: nothing
/// was written, and the server checks the caller again and makes the write as what it is
/// now (`server::auth::WriteCaller`); the conflict is told only if it does not.
fn caller_changed() -> StoreError {
    Timing::note_caller_check(CallerCheck::Changed);
    StoreError::Conflict {
        detail: words!(
            "The API key or its user changed while this write was made, so nothing was written; send the request again.",
            "Der API-Schlüssel oder sein Benutzer hat sich während dieses Schreibvorgangs geändert, daher wurde nichts geschrieben; bitte die Anfrage erneut senden."
        ),
        field: None,
    }
}

/// A constraint violation is the client's conflict; anything else is ours.
pub(super) fn write_error(table: &str, error: sqlx::Error) -> StoreError {
    if let sqlx::Error::Database(db) = &error {
        if db.code().as_deref() == Some(crate::accounts::CALLER_CHANGED_STATE) {
            return caller_changed();
        }
        if db.is_unique_violation() {
            return StoreError::Conflict {
                detail: words!(
                    "A {table} record with the same unique values exists already.",
                    "Ein Datensatz {table} mit denselben eindeutigen Werten existiert schon."
                ),
                field: None,
            };
        }
        if db.is_foreign_key_violation() {
            return StoreError::Conflict {
                detail: words!(
                    "The {table} change refers to a record that does not exist, or is still referred to.",
                    "Die Änderung an {table} verweist auf einen Datensatz, der nicht existiert, oder wird noch verwendet."
                ),
                field: None,
            };
        }
        if let Some(refused) = crate::schema::held_refusal(db.as_ref()) {
            return refused;
        }
    }
    failed(&format!("a write to {table} failed"), error)
}
