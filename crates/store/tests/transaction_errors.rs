//! What a transaction that PostgreSQL gave up is told as: a real deadlock between two
//! sessions is "lost to another transaction" (the executor runs such a write again), not the
//! database being unreachable and not a fault of ours; a constraint violation is neither.

mod support;

use brandhub_store::db::{lost_to_another_transaction, unreachable};
use sqlx::{Connection, PgConnection};

#[tokio::test]
async fn a_deadlock_is_lost_to_another_transaction_and_a_violation_is_not() {
    let Some(url) = support::fresh_postgres("transaction_errors", "deadlock").await else {
        return;
    };
    let mut first = PgConnection::connect(&url).await.unwrap();
    let mut second = PgConnection::connect(&url).await.unwrap();
    sqlx::raw_sql(
        "CREATE TABLE pair (id INT PRIMARY KEY, n INT NOT NULL); INSERT INTO pair VALUES (1, 0), (2, 0)",
    )
    .execute(&mut first)
    .await
    .unwrap();
    for connection in [&mut first, &mut second] {
        sqlx::raw_sql("BEGIN")
            .execute(&mut *connection)
            .await
            .unwrap();
    }
    sqlx::raw_sql("UPDATE pair SET n = 1 WHERE id = 1")
        .execute(&mut first)
        .await
        .unwrap();
    sqlx::raw_sql("UPDATE pair SET n = 2 WHERE id = 2")
        .execute(&mut second)
        .await
        .unwrap();
    // Each now waits for the row the other holds: PostgreSQL ends one of them.
    let (one, other) = tokio::join!(
        sqlx::raw_sql("UPDATE pair SET n = 1 WHERE id = 2").execute(&mut first),
        sqlx::raw_sql("UPDATE pair SET n = 2 WHERE id = 1").execute(&mut second),
    );
    let error = match (one, other) {
        (Err(error), Ok(_)) | (Ok(_), Err(error)) => error,
        (one, other) => panic!("exactly one of two deadlocked sessions fails: {one:?} {other:?}"),
    };
    assert!(lost_to_another_transaction(&error), "{error:?}");
    assert!(!unreachable(&error), "{error:?}");
    for connection in [&mut first, &mut second] {
        sqlx::raw_sql("ROLLBACK")
            .execute(&mut *connection)
            .await
            .unwrap();
    }

    let violation = sqlx::raw_sql("INSERT INTO pair VALUES (1, 0)")
        .execute(&mut first)
        .await
        .unwrap_err();
    assert!(!lost_to_another_transaction(&violation), "{violation:?}");
    first.close().await.ok();
    second.close().await.ok();
    support::drop_postgres(&url).await;
}
