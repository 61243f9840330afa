//! Statements built by sea-query and rows decoded into [`Cell`]s by catalog type.

use super::*;
use crate::error::StoreResult;
use brandhub_catalog::{Cell, FieldType};
use sea_query_sqlx::SqlxBinder;
use sqlx::{AssertSqlSafe, Row};

/// How a column decodes, by the catalog type of its field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    Integer,
    Number,
    Boolean,
}

impl Kind {
    /// The decoding of a field type's column.
    pub fn of(ty: FieldType) -> Kind {
        match ty {
            FieldType::Integer => Kind::Integer,
            FieldType::Number => Kind::Number,
            FieldType::Boolean => Kind::Boolean,
            _ => Kind::Text,
        }
    }
}

pub(super) fn decode_row<'r, R>(row: &'r R, kinds: &[Kind]) -> Result<Vec<Cell>, sqlx::Error>
where
    R: Row,
    usize: sqlx::ColumnIndex<R>,
    Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    Option<i64>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    Option<f64>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    Option<bool>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    kinds
        .iter()
        .enumerate()
        .map(|(i, kind)| {
            Ok(match kind {
                Kind::Text => row
                    .try_get::<Option<String>, _>(i)?
                    .map_or(Cell::Null, Cell::Text),
                Kind::Integer => row
                    .try_get::<Option<i64>, _>(i)?
                    .map_or(Cell::Null, Cell::Integer),
                Kind::Number => row
                    .try_get::<Option<f64>, _>(i)?
                    .map_or(Cell::Null, Cell::Number),
                Kind::Boolean => row
                    .try_get::<Option<bool>, _>(i)?
                    .map_or(Cell::Null, Cell::Boolean),
            })
        })
        .collect()
}

/// `sql` with each `LIMIT ?` written `LIMIT +?`, so that SQLite compiles it once.
///
/// SQLite (3.51, the bundled one) reads a bound `LIMIT` while it compiles a statement, for its
/// planner, and then marks the statement to be compiled again whenever that parameter is
/// bound, so every page read that missed the page cache would be compiled at each execution
/// (docs/decisions/0016-sqlite-limit-compiled-once.md). SQLite looks through a unary plus only
/// for literals, so `LIMIT +?` is compiled once and planned as for a limit not known in
/// advance. PostgreSQL's text numbers its parameters
/// (`$1`), so it is left as it is.
pub(super) fn limit_compiled_once(sql: String) -> String {
    const BOUND_LIMIT: &str = " LIMIT ?";
    if sql.contains(BOUND_LIMIT) {
        sql.replace(BOUND_LIMIT, " LIMIT +?")
    } else {
        sql
    }
}

/// A statement's SQL and values for `builder`'s database, the limit written as
/// [`limit_compiled_once`] writes it: every statement the store runs on a pool is built here
/// (a transaction's SQLite batches are rewritten in [`WriteTx::send_sqlite`]).
pub(crate) fn built<S, B>(statement: &S, builder: B) -> (String, sea_query_sqlx::SqlxValues)
where
    S: SqlxBinder,
    B: sea_query::QueryBuilder,
{
    let (sql, values) = statement.build_sqlx(builder);
    (limit_compiled_once(sql), values)
}

/// Runs `$body` with `$pool` bound to the concrete pool and `$builder` to its sea-query
/// backend, so that one piece of code serves both databases.
macro_rules! on_pool {
    ($pool_enum:expr, |$pool:ident, $builder:ident| $body:expr) => {
        match $pool_enum {
            $crate::db::Pool::Sqlite($pool) => {
                let $builder = sea_query::SqliteQueryBuilder;
                $body
            }
            $crate::db::Pool::Postgres($pool) => {
                let $builder = sea_query::PostgresQueryBuilder;
                $body
            }
        }
    };
}
pub(crate) use on_pool;

/// Runs one write outside any transaction, returning the rows affected: on SQLite in the
/// write turn, on the connection writes run on ([`crate::write_turn`]), so it never waits for
/// the lock in SQLite's busy handler; on PostgreSQL on a pooled connection. For
/// [`Store::execute_untracked`] and the count cache's writer, which has no store.
pub(crate) async fn execute_outside_transaction<S>(
    pool: &Pool,
    write_turn: Option<&crate::write_turn::WriteTurn>,
    table: &str,
    statement: &S,
) -> StoreResult<u64>
where
    S: SqlxBinder,
{
    let done = match (pool, write_turn) {
        (Pool::Sqlite(_), Some(turn)) => {
            let mut turn = turn.take().await?;
            let (sql, values) = built(statement, sea_query::SqliteQueryBuilder);
            sqlx::query_with(AssertSqlSafe(sql), values)
                .execute(&mut *turn.conn)
                .await
                .map(|done| done.rows_affected())
        }
        _ => on_pool!(pool, |pool, builder| {
            let (sql, values) = built(statement, builder);
            sqlx::query_with(AssertSqlSafe(sql), values)
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
        }),
    };
    done.map_err(|e| write_error(table, e))
}
