//! What one write is, before it runs: the entry point that made it, how its transaction
//! begins and how often it runs again when it raced. The executor ([`super::executor`]) runs
//! any plan; the plan's step does the checks and writes inside the transaction the executor
//! began.

use crate::db::WriteTx;
use crate::error::StoreResult;
use std::future::Future;
use std::pin::Pin;

/// The way into the store a write came by: one per kind of request or job, so that every
/// write is counted and traced by the one executor under the name of what asked for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EntryPoint {
    /// A JSON `POST` of one record.
    Create,
    /// A JSON `POST` of an array of records.
    Array,
    /// A JSON `POST` with `?upsert=true`.
    Upsert,
    /// A JSON `PATCH` of one record.
    Update,
    /// A JSON `DELETE` of one record.
    Delete,
    /// The rows of an uploaded spreadsheet, applied with its job's outcome; the file type's
    /// API name.
    Sheet(&'static str),
    /// An uploaded file's progress or failure, written apart from its rows.
    FileStatus,
    /// An order intake (`POST /api/order/intake`).
    Intake,
    /// A block of order numbers reserved for intakes.
    OrderNumbers,
    /// One lifecycle step of one order.
    Lifecycle,
    /// One field set on many records in one request (`POST /api/offer/hostSku`).
    Bulk,
    /// Steps of many orders in one request (`POST /api/order/dispatch`).
    DispatchArray,
    /// A set-up document (`brandhub import`).
    Import,
    /// The demo data set (`brandhub demo`).
    Demo,
    /// Users, keys, grants and companies.
    Accounts,
    /// Sign-ins, invitations and sign-outs.
    Sessions,
    /// The queue of uploaded files (a file queued, released or given up).
    FileQueue,
    /// Webhook deliveries: fan-out and attempts.
    Deliveries,
    /// Prices that started or ended: their offers derived again (`Store::apply_price_dates`).
    PriceDates,
    /// Stored values a migration repairs (rules outside their domain, `Field::repaired_to`).
    Migration,
    /// A write a test makes beside the API.
    Test,
}

/// How a plan's transaction begins on its first run; every later run begins locking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Begin {
    /// At once, holding the write lock (on SQLite, the write turn) until the commit.
    Locking,
    /// Checks read outside any transaction, writes held until the commit, which on
    /// PostgreSQL is then one statement ([`crate::Store`]'s checked-first write).
    CheckingFirst,
    /// On PostgreSQL as [`Begin::CheckingFirst`]; on SQLite as [`Begin::Locking`].
    Optimistic,
}

/// What a step asks of the executor once it ran.
pub enum Outcome<T> {
    /// Commit what it wrote and answer `T`.
    Commit(T),
    /// Roll back whatever it wrote and answer `T` (a refusal found inside the transaction, an
    /// idempotency key used before).
    RollBack(T),
    /// A concurrent write took what it needed between its check and its write: roll back and
    /// run again, locking.
    Again,
}

/// A step's work: it owns the transaction while it runs and hands it back with its outcome.
pub type StepFuture<'a, T> =
    Pin<Box<dyn Future<Output = (WriteTx, StoreResult<Outcome<T>>)> + Send + 'a>>;

/// How many times a plan that runs again after a race runs at most.
pub const RACE_ATTEMPTS: usize = 4;

/// One write as the executor runs it.
#[derive(Debug, Clone, Copy)]
pub struct WritePlan {
    /// What asked for the write.
    pub entry: EntryPoint,
    /// How its first run begins.
    pub begin: Begin,
    /// How many times it runs at most: again, locking, after [`Outcome::Again`] or a
    /// [`crate::StoreError::raced`] of its step or its commit. One runs once, its race
    /// told to the caller.
    pub attempts: usize,
}

impl WritePlan {
    /// A write that locks from the start and runs once.
    pub fn locking(entry: EntryPoint) -> WritePlan {
        WritePlan {
            entry,
            begin: Begin::Locking,
            attempts: 1,
        }
    }

    /// A write that begins as `begin` and runs again, locking, when it raced.
    pub fn retrying(entry: EntryPoint, begin: Begin) -> WritePlan {
        WritePlan {
            entry,
            begin,
            attempts: RACE_ATTEMPTS,
        }
    }

    /// A write that begins as `begin` and runs once.
    pub fn once(entry: EntryPoint, begin: Begin) -> WritePlan {
        WritePlan {
            entry,
            begin,
            attempts: 1,
        }
    }
}
