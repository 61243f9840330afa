//! A write transaction's state: its connection, the writes it holds back for one statement
//! to commit, and what it wrote.

use super::*;
use brandhub_catalog::Cell;
use sea_query::{Alias, CommonTableExpression, PostgresQueryBuilder, Query};
use sea_query_sqlx::SqlxBinder;

pub(crate) enum Tx {
    Sqlite(SqliteTx),
    /// [`crate::write::Begin::CheckingFirst`] on SQLite before it took the write turn: reads run on
    /// `reader`, a pooled connection, outside a transaction. `reader` is `None` once the
    /// write ended.
    SqliteUnbegun {
        reader: Option<sqlx::pool::PoolConnection<sqlx::Sqlite>>,
        turn: crate::write_turn::WriteTurn,
    },
    Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
    /// [`crate::write::Begin::Optimistic`] before its first write statement: reads run on the
    /// connection outside a transaction. `None` once it is ended.
    PostgresUnbegun(Option<sqlx::pool::PoolConnection<sqlx::Postgres>>),
}

/// A write transaction on SQLite, begun and ended by statements of its own: `BEGIN
/// IMMEDIATE` travels with the transaction's first statement and `COMMIT` with its last,
/// where sqlx's transactions send each alone. Every statement sent is a round trip to the
/// connection's thread, which costs about as much as a short statement itself.
pub(crate) struct SqliteTx {
    /// Held until the transaction ends; `None` once it has.
    pub(super) conn: Option<sqlx::pool::PoolConnection<sqlx::Sqlite>>,
    /// `BEGIN IMMEDIATE` is still to be sent, with the first statement.
    pub(super) unbegun: bool,
    /// This process's turn to write, given up when the transaction has ended.
    pub(super) turn: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl SqliteTx {
    /// A transaction to begin on the connection of `turn`, which it holds until it ends.
    pub(crate) fn in_turn(turn: crate::write_turn::Turn) -> SqliteTx {
        SqliteTx {
            conn: Some(turn.conn),
            unbegun: true,
            turn: Some(turn.permit),
        }
    }
}

impl Drop for SqliteTx {
    /// A transaction dropped before its commit (an error, a request gone) is rolled back on
    /// its connection, behind any statement of it still running there, before the
    /// connection and the turn to write are given up.
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        let turn = self.turn.take();
        if self.unbegun {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if let Err(error) = sqlx::query("ROLLBACK").execute(&mut *conn).await {
                        // None was open: its commit ran after all (a request dropped while
                        // its commit was on the way), or its BEGIN failed. The connection is
                        // closed rather than trusted.
                        tracing::debug!(%error, "a write transaction found nothing to roll back; its connection is closed");
                        conn.close_on_drop();
                    }
                    drop(turn);
                });
            }
            Err(_) => conn.close_on_drop(),
        }
    }
}

/// How a SQLite write transaction begins: with the write lock taken at once, so that two
/// writers never deadlock upgrading read locks.
pub(super) const BEGIN_SQL: &str = "BEGIN IMMEDIATE";

/// One statement of a batch sent to SQLite ([`WriteTx::send_sqlite`]), and what its error
/// is.
pub(super) struct Batched {
    pub(super) sql: String,
    pub(super) values: sea_query::Values,
    pub(super) part: Part,
}

/// Whose a statement of a batch is, for its error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Part {
    /// `BEGIN IMMEDIATE` or `COMMIT`.
    Transaction,
    /// Held back ([`WriteTx::update_unanswered`]), writing this table.
    Held(&'static str),
    /// The check of a caller taken from memory unchecked (`Timing::check_caller_at`), first
    /// in the batch that commits.
    CallerCheck,
    /// An optimistic write's insert held back ([`WriteTx::insert_unanswered_if_new`]): a
    /// unique value taken, or a record it refers to gone, means a concurrent write came
    /// first since the write's checks.
    HeldIfNew(&'static str),
    /// The assertion after an optimistic write's conditional update that it changed its row
    /// ([`WriteTx::update_unanswered`]): failing, a concurrent write came first, or the
    /// update's own conditions do not admit the row.
    ChangedItsRow,
    /// The statement the caller sends now.
    Own,
}

/// A write transaction. It remembers which tables it wrote and bumps their versions just
/// before committing, so cached counts over those tables stop being used the moment the
/// change is visible, and not a moment before.
pub struct WriteTx {
    pub(super) tx: Tx,
    /// SQLite only: counts this transaction's commit towards the next checkpoint.
    pub(super) checkpoints: Option<std::sync::Arc<crate::checkpoint::Checkpoints>>,
    /// Tables written by statements that may insert or delete rows: both their versions are
    /// bumped on commit (see [`crate::versions::rows_key`]).
    pub(super) touched: Vec<&'static str>,
    /// Tables updated in named columns, with the versions of those columns' fields.
    pub(super) updated_columns: Vec<(&'static str, Vec<&'static str>)>,
    /// Per table written, the ids of the rows written while every write of it named them:
    /// logged on commit ([`crate::row_log`]).
    pub(super) written_rows: Vec<(&'static str, crate::row_log::Written)>,
    /// The store's clock, for the job queue's times.
    pub(crate) clock: crate::clock::Clock,
    /// See [`Store::allowing_insecure_loopback_urls`].
    pub(crate) insecure_loopback: bool,
    /// The records written that announce events, written to the outbox on commit.
    pub(crate) outbox: crate::events::Outbox,
    /// Told when this transaction committed events, so this process's senders start at once.
    pub(super) events_written: std::sync::Arc<tokio::sync::Notify>,
    /// The first few records this transaction inserted, as written, until their table is
    /// written again: the derived fields of records inserted after them are read from here
    /// (an order's brand store for its lines, in an intake) instead of from the database.
    pub(crate) inserted: Vec<(
        &'static brandhub_catalog::Resource,
        brandhub_catalog::Record,
    )>,
    /// Derived fields' values read before this transaction began ([`WriteTx::knows`]), as
    /// (table, column, id, value): read from here as [`WriteTx::inserted`] is.
    pub(crate) known: Vec<(&'static str, &'static str, String, String)>,
    /// SQLite: statements nobody waits on the answer of, sent with the next statement
    /// ([`WriteTx::update_unanswered`]).
    pub(super) unanswered: Vec<Batched>,
    /// PostgreSQL: writes nobody waits on the answer of ([`WriteTx::update_unanswered`],
    /// and an optimistic write's inserts, [`WriteTx::insert_unanswered`]), with their table:
    /// sent alone before any other statement, or as parts of an optimistic write's one
    /// statement.
    pub(super) held_writes: Vec<HeldWrite>,
    /// The read that answers the write, when its commit may carry it ([`WriteTx::answer_with`]).
    pub(super) answer: Option<HeldAnswer>,
    /// The answer's rows, once a commit carried its read.
    pub(super) answered: Option<Vec<Vec<Cell>>>,
    /// Whether the commit reads the version its one held update wrote
    /// ([`WriteTx::update_unread`]).
    pub(super) version_asked: bool,
    /// That version, once the commit read it.
    pub(super) version_written: Option<i64>,
}

/// What a commit read besides writing ([`WriteTx::commit_answered`]).
pub(crate) struct Committed {
    /// The answer's rows, when the commit carried its read ([`WriteTx::answer_with`]).
    pub(crate) answer: Option<Vec<Vec<Cell>>>,
    /// The version of the record an unread update wrote ([`WriteTx::update_unread`]).
    pub(crate) version: Option<i64>,
}

/// A write's answer read by its commit ([`WriteTx::answer_with`]): one statement fewer, and
/// the rows are the ones the write made, not read back.
pub(super) struct HeldAnswer {
    /// The table written, whose name the answer's statement reads the written rows by.
    pub(super) table: &'static str,
    pub(super) statement: sea_query::SelectStatement,
    pub(super) kinds: Vec<Kind>,
    /// The versions the answer's expansions read under, if they read under any
    /// ([`crate::page::versions_its_expansions_read`]).
    pub(super) versions_read: Option<Vec<&'static str>>,
}

/// A write held back on PostgreSQL ([`WriteTx::held_writes`]).
pub(super) struct HeldWrite {
    pub(super) table: &'static str,
    pub(super) statement: HeldStatement,
    /// Whether it must write its one row, or else a concurrent write came first: an
    /// optimistic write's update whose `WHERE` names the version its row was read at,
    /// unlocked, or its insert that skips a row whose unique values are taken.
    pub(super) conditional: bool,
}

/// What a [`HeldWrite`] sends.
pub(super) enum HeldStatement {
    Update(sea_query::UpdateStatement),
    /// Only an optimistic write holds inserts: a transaction sends them at once.
    Insert(sea_query::InsertStatement),
}

/// What a held write's part of a larger statement returns ([`HeldStatement::into_cte`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Returned {
    Ids,
    IdsAndVersions,
    Whole,
}

impl HeldStatement {
    pub(super) fn build(&self) -> (String, sea_query_sqlx::SqlxValues) {
        match self {
            HeldStatement::Update(update) => update.build_sqlx(PostgresQueryBuilder),
            HeldStatement::Insert(insert) => insert.build_sqlx(PostgresQueryBuilder),
        }
    }

    /// The statement as the common table expression `name` of a larger one, returning its
    /// rows' ids, to be counted, or, for a write that answers with its row, its rows whole,
    /// or, for an update whose version is asked for, their ids and versions.
    pub(super) fn into_cte(self, name: &str, returned: Returned) -> CommonTableExpression {
        let mut cte = CommonTableExpression::new();
        let ids = || Query::returning().column(Alias::new("id"));
        match self {
            HeldStatement::Update(mut update) => {
                update.returning(match returned {
                    Returned::Whole => Query::returning().all(),
                    Returned::IdsAndVersions => Query::returning()
                        .columns([Alias::new("id"), Alias::new(crate::schema::ROW_VERSION)]),
                    Returned::Ids => ids(),
                });
                cte.query(update);
            }
            HeldStatement::Insert(mut insert) => {
                insert.returning(if returned == Returned::Whole {
                    Query::returning().all()
                } else {
                    ids()
                });
                cte.query(insert);
            }
        }
        cte.table_name(Alias::new(name)).to_owned()
    }
}
