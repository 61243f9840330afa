//! Writes made outside brandhub (an operator's `UPDATE` in `psql` or `sqlite3`): the next
//! list, by-id and count read of a running server, its page cache on, sees them
//! (docs/CACHE.md, "Writes from outside").

mod common;

use common::{Db, Fixture};
use serde_json::{Value, json};

/// Runs one statement on the fixture's database over a connection of its own, as another
/// program would.
async fn outside(fx: &Fixture, statement: String) -> u64 {
    use sqlx::Connection;
    let statement = sqlx::AssertSqlSafe(statement);
    match fx.db {
        Db::Sqlite => {
            let mut connection = sqlx::SqliteConnection::connect(&fx.database_url)
                .await
                .expect("SQLite opens");
            sqlx::raw_sql(statement)
                .execute(&mut connection)
                .await
                .expect("the statement runs")
                .rows_affected()
        }
        Db::Postgres => {
            let mut connection = sqlx::PgConnection::connect(&fx.database_url)
                .await
                .expect("PostgreSQL answers");
            sqlx::raw_sql(statement)
                .execute(&mut connection)
                .await
                .expect("the statement runs")
                .rows_affected()
        }
    }
}

async fn created(fx: &Fixture, resource: &str, body: Value) -> String {
    let answer = fx.post(&format!("/api/{resource}"), &body).await;
    assert_eq!(
        answer.status,
        201,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    answer.records(resource)[0]["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The names of the brands a list finds, the name a by-id read shows and the count, read
/// twice so that the second of each is served from the caches.
async fn reads(fx: &Fixture, company: &str, brand: &str) -> (Vec<String>, String, u64) {
    let mut last = None;
    for _ in 0..2 {
        let list = fx
            .get(&format!(
                "/api/brand?fk_company={company}&fields=name&order_by=name"
            ))
            .await;
        assert_eq!(list.status, 200);
        let names = list
            .records("brand")
            .iter()
            .map(|b| b["name"].as_str().unwrap().to_string())
            .collect();
        let one = fx.get(&format!("/api/brand/{brand}?fields=name")).await;
        assert_eq!(one.status, 200);
        let name = one.records("brand")[0]["name"]
            .as_str()
            .unwrap()
            .to_string();
        let count = fx
            .get(&format!("/api/brand/count?fk_company={company}"))
            .await
            .json()["count"]
            .as_u64()
            .unwrap();
        last = Some((names, name, count));
    }
    last.expect("read twice")
}

on_both_backends! { "outside_writes";

async fn a_row_changed_outside_brandhub_is_seen_by_the_next_read(fx) {
    let tag = format!("OUT{}", common::unique_number());
    let company = created(fx, "company", json!({"name": tag, "code": format!("{tag}-CO")})).await;
    let kept = created(fx, "brand", json!({"fk_company": company, "name": "Alpha", "code": format!("{tag}-A")})).await;
    let gone = created(fx, "brand", json!({"fk_company": company, "name": "Beta", "code": format!("{tag}-B")})).await;
    assert_eq!(reads(fx, &company, &kept).await, (vec!["Alpha".to_string(), "Beta".to_string()], "Alpha".to_string(), 2));

    // An operator renames a brand (its folded copy too, as every text column has one).
    let renamed = outside(fx, format!("UPDATE brand SET name = 'Gamma', name_ci = 'gamma' WHERE id = '{kept}'")).await;
    assert_eq!(renamed, 1);
    assert_eq!(reads(fx, &company, &kept).await, (vec!["Beta".to_string(), "Gamma".to_string()], "Gamma".to_string(), 2), "an outside update is seen by list, by-id and count reads");

    // And deletes one: the count follows.
    assert_eq!(outside(fx, format!("DELETE FROM brand WHERE id = '{gone}'")).await, 1);
    assert_eq!(reads(fx, &company, &kept).await, (vec!["Gamma".to_string()], "Gamma".to_string(), 1), "an outside delete is seen");
    fx.get(&format!("/api/brand/{gone}")).await.assert_problem(404, "not_found");

    // brandhub's own writes go on as before (a rename through the API is seen too).
    let patched = common::send(fx, &fx.base, reqwest::Method::PATCH, &format!("/api/brand/{kept}"), common::As::Demo("admin"), &[], Some(&json!({"name": "Delta"}))).await;
    assert_eq!(patched.status, 200);
    assert_eq!(reads(fx, &company, &kept).await, (vec!["Delta".to_string()], "Delta".to_string(), 1));
}

}
