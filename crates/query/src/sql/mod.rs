//! Stage 3 of the pipeline: plans become sea-query statements. Every identifier comes from the
//! catalog and every value is a bound parameter; nothing the client sent becomes SQL text.
//!
//! Filters are semi-joins (`fk IN (SELECT id FROM target WHERE …)`), so a filter through a
//! relation never multiplies rows; order keys through relations become LEFT JOINs. Negation is
//! pushed down to the leaves and made null-safe there, so that `#` is always the exact
//! complement of `=` (an unset value is "not equal" to everything but the empty value).

mod count;
mod export;
mod ids;
mod page;
mod predicate;
mod tables;

pub use count::*;
pub use export::*;
pub use ids::*;
pub use page::*;
pub use predicate::*;
pub use tables::*;

use crate::plan::Operand;
use brandhub_catalog::Field;
use sea_query::{Alias, Expr, ExprTrait, Value};

/// The alias of the queried table in a page or count statement.
pub const ROOT: &str = "t0";

/// Where a column lives: in the aliased root table (with joins around it) or unqualified (the
/// only table of an uncorrelated subquery).
#[derive(Clone, Copy)]
pub(crate) enum Table<'a> {
    Aliased(&'a str),
    /// Aliased, and its semi-joins may only be probed, never drive the query (SQLite's
    /// `+column IN (…)`): the page walks the records in order instead.
    Probed(&'a str),
    /// Aliased, for a statement that starts from a few known rows: a relation's condition is
    /// a correlated `EXISTS`, looked up for each of those rows, rather than a list of every
    /// related record that satisfies it (which SQLite builds in full first).
    Correlated(&'a str),
    Bare,
}

fn column(table: Table<'_>, name: &str) -> Expr {
    match table {
        Table::Aliased(alias) | Table::Probed(alias) | Table::Correlated(alias) => {
            Expr::col((Alias::new(alias), Alias::new(name)))
        }
        Table::Bare => Expr::col(Alias::new(name)),
    }
}

/// The left side of a semi-join (`column IN (subquery)`). SQLite's planner cannot know how
/// many ids a subquery yields and likes to drive from it; when brandhub knows matches are
/// common, a unary `+` keeps the column from being used that way, so the order is walked.
fn semi_join_column(table: Table<'_>, name: &str) -> Expr {
    match table {
        Table::Probed(_) => unindexed(column(table, name)),
        _ => column(table, name),
    }
}

/// `+expr`: the same value, which SQLite's planner cannot serve from an index, so it neither
/// drives a query from it nor walks an order by it. SQLite only (its placeholder is `?`);
/// the strategies that use it are chosen for SQLite.
fn unindexed(expr: Expr) -> Expr {
    Expr::cust_with_expr("+?", expr)
}

/// The column a field is compared and ordered by: the folded copy for text.
fn comparable_column(field: &Field) -> String {
    field
        .folded_column()
        .unwrap_or_else(|| field.column.clone())
}

fn operand_value(operand: &Operand) -> Value {
    match operand {
        Operand::Text(text) => text.clone().into(),
        Operand::Integer(n) => (*n).into(),
        Operand::Number(n) => (*n).into(),
        Operand::Boolean(b) => (*b).into(),
    }
}

fn always(truth: bool) -> Expr {
    Expr::cust(if truth { "1 = 1" } else { "1 = 0" })
}

/// Joins operands into a balanced tree of `join`s: the SQL of many conditions nests only
/// logarithmically deep (SQLite refuses expressions nested 1,000 deep, and every renderer and
/// parser walks them recursively). Paired left to right, so the order of operands stays.
fn balanced(mut exprs: Vec<Expr>, join: fn(Expr, Expr) -> Expr) -> Option<Expr> {
    while exprs.len() > 1 {
        let mut paired = Vec::with_capacity(exprs.len().div_ceil(2));
        let mut operands = exprs.into_iter();
        while let Some(left) = operands.next() {
            paired.push(match operands.next() {
                Some(right) => join(left, right),
                None => left,
            });
        }
        exprs = paired;
    }
    exprs.pop()
}

/// Every condition ([`balanced`]; true when there is none).
pub fn all(exprs: Vec<Expr>) -> Expr {
    balanced(exprs, Expr::and).unwrap_or_else(|| always(true))
}

/// Any of the conditions ([`balanced`]; false when there is none): what a statement that
/// looks up many keys at once ORs them with.
pub fn any(exprs: Vec<Expr>) -> Expr {
    balanced(exprs, Expr::or).unwrap_or_else(|| always(false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{parse_body, parse_query_string};
    use crate::plan::{CountPlan, Predicate, ReadPlan, Viewer, plan_count, plan_read};
    use brandhub_catalog::catalog;
    use sea_query::{PostgresQueryBuilder, SelectStatement, SqliteQueryBuilder};

    fn read(resource: &str, query: &str, body: &str) -> ReadPlan {
        let mut request = parse_query_string(query).unwrap();
        request.body = parse_body(body.as_bytes()).unwrap();
        plan_read(
            catalog().resource(resource).unwrap(),
            &request,
            &Viewer::admin(),
        )
        .unwrap()
    }

    fn sqlite(statement: &SelectStatement) -> String {
        statement.to_string(SqliteQueryBuilder)
    }

    #[test]
    fn a_plan_reaches_its_own_table_only_through_a_relation_back_to_it() {
        assert!(!reaches_own_table(&read("stock", "", "")));
        assert!(!reaches_own_table(&read(
            "stock",
            "stock_variant.barcode=5@&order_by=stock_warehouse.code",
            ""
        )));
        assert!(reaches_own_table(&read(
            "stock",
            "stock_variant.variant_stock.inStock=5",
            ""
        )));
        assert!(reaches_own_table(&read(
            "variant",
            "variant_product.product_variant.colour=Teal",
            ""
        )));
    }

    #[test]
    fn an_export_continues_after_the_last_id_without_an_offset() {
        let plan = read("variant", "fields=barcode", "");
        let first = sqlite(&export_statement(&plan, None, 500, false));
        assert_eq!(
            first,
            r#"SELECT "t0"."id", "t0"."barcode" FROM "variant" AS "t0" ORDER BY "t0"."id" ASC LIMIT 500"#
        );
        let after = Keyset {
            keys: Vec::new(),
            id: "0190".into(),
        };
        let next = sqlite(&export_statement(&plan, Some(&after), 500, false));
        assert!(
            next.contains(r#"WHERE "t0"."id" > '0190' ORDER BY "t0"."id" ASC LIMIT 500"#),
            "{next}"
        );
        assert!(!next.contains("OFFSET"), "{next}");
    }

    #[test]
    fn an_export_by_uniform_keys_compares_rows_and_by_nullable_keys_spells_it_out() {
        // Text keys are never unset: one row comparison over the folded column and the id.
        let plan = read("variant", "order_by=barcode", "");
        let after = Keyset {
            keys: vec![Some(Operand::Text("501".into()))],
            id: "0190".into(),
        };
        let sql = sqlite(&export_statement(&plan, Some(&after), 10, false));
        assert!(
            sql.contains(r#"("t0"."barcode_ci", "t0"."id") > ('501', '0190')"#),
            "{sql}"
        );
        assert!(sql.contains(r#""t0"."barcode_ci" AS "k0" FROM"#), "{sql}");
        // A nullable key descending: after = smaller, or unset (last), or equal and a smaller id.
        let plan = read("stock", "order_by=inStock<&demand=1", "");
        let after = Keyset {
            keys: vec![Some(Operand::Integer(5))],
            id: "0190".into(),
        };
        let sql = sqlite(&export_statement(&plan, Some(&after), 10, false));
        assert!(
            sql.contains(r#"WHERE "t0"."demand" = 1 AND ("t0"."in_stock" < 5 OR "t0"."in_stock" IS NULL OR ("t0"."in_stock" = 5 AND "t0"."id" < '0190')) ORDER BY "t0"."in_stock" DESC NULLS LAST, "t0"."id" DESC LIMIT 10"#),
            "{sql}"
        );
        let unset = Keyset {
            keys: vec![None],
            id: "0190".into(),
        };
        let sql = sqlite(&export_statement(&plan, Some(&unset), 10, false));
        assert!(
            sql.contains(r#"((1 = 0) OR ("t0"."in_stock" IS NULL AND "t0"."id" < '0190'))"#),
            "{sql}"
        );
    }

    #[test]
    fn a_plain_page_reads_by_id_with_limit_and_offset() {
        let plan = read("variant", "fields=barcode&page=2&pageSize=10", "");
        assert_eq!(
            sqlite(&page_statement(&plan, PageStrategy::InOrder)),
            r#"SELECT "t0"."id", "t0"."barcode" FROM (SELECT "t0"."id" AS "id" FROM "variant" AS "t0" ORDER BY "t0"."id" ASC LIMIT 10 OFFSET 10) AS "page" INNER JOIN "variant" AS "t0" ON "t0"."id" = "page"."id" ORDER BY "page"."id" ASC"#
        );
    }

    #[test]
    fn few_matches_are_collected_first_and_then_sorted() {
        let plan = read(
            "variant",
            "fields=barcode&barcode=501234@&order_by=code<",
            "",
        );
        let sql = sqlite(&page_statement(
            &plan,
            PageStrategy::MatchesFirst { probe_scope: false },
        ));
        assert!(sql.starts_with(r#"WITH "matches" AS"#), "{sql}");
        assert!(sql.contains(r#"MATERIALIZED (SELECT "t0"."id" AS "id", "t0"."code_ci" AS "k0" FROM "variant" AS "t0" WHERE"#), "{sql}");
        assert!(sql.contains(r#"(SELECT "id", "k0" FROM "matches" AS "t0" ORDER BY "k0" DESC, "id" DESC LIMIT 100 OFFSET 0) AS "page""#), "{sql}");
        assert_eq!(
            PageStrategy::choose(10_000, 1_000_000, MATCHES_FIRST_LIMIT),
            PageStrategy::MatchesFirst { probe_scope: false }
        );
        assert_eq!(
            PageStrategy::choose(500_000, 1_000_000, MATCHES_FIRST_LIMIT),
            PageStrategy::InOrder
        );
        assert_eq!(
            PageStrategy::choose(30_000, 2_000_000, MATCHES_FIRST_LIMIT),
            PageStrategy::MatchesFirst { probe_scope: false }
        );
    }

    #[test]
    fn probing_pages_keep_semi_joins_from_driving() {
        let plan = read("stock", "fields=inStock&stock_variant.barcode=501@", "");
        let (sql, _) =
            page_statement(&plan, PageStrategy::InOrderProbing).build(SqliteQueryBuilder);
        assert!(
            sql.contains(r#"WHERE (+"t0"."fk_variant") IN (SELECT "id" FROM "variant" WHERE"#),
            "{sql}"
        );
        assert!(!sqlite(&page_statement(&plan, PageStrategy::InOrder)).contains('+'));
    }

    #[test]
    fn few_matches_on_sqlite_are_sorted_and_a_wide_scope_only_probed() {
        let mut plan = read(
            "stock",
            "fields=inStock&stock_variant.barcode=501@&order_by=lastUpdate<",
            "",
        );
        plan.scope = plan.filter.clone();
        let sql = sqlite(&page_statement(
            &plan,
            PageStrategy::SortMatches { probe_scope: true },
        ));
        assert!(
            sql.contains(r#"ORDER BY +"t0"."last_update" DESC, +"t0"."id" DESC LIMIT"#),
            "{sql}"
        );
        assert!(sql.contains(r#"WHERE (+"t0"."fk_variant") IN"#), "{sql}");
        assert!(sql.contains(r#" AND "t0"."fk_variant" IN"#), "{sql}");
    }

    #[test]
    fn prefix_filters_become_index_ranges_on_the_folded_column() {
        let plan = read("variant", "fields=barcode&barcode=501234@", "");
        let sql = sqlite(&page_statement(&plan, PageStrategy::InOrder));
        assert!(
            sql.contains(r#""t0"."barcode_ci" >= '501234' AND "t0"."barcode_ci" < '501235'"#),
            "{sql}"
        );
        assert!(!sql.contains("LIKE"), "{sql}");
    }

    #[test]
    fn dotted_filters_are_semi_joins_and_dotted_order_keys_are_left_joins() {
        let plan = read(
            "stock",
            "fields=inStock&stock_variant.barcode=501@&order_by=stock_variant.variant_product.title<",
            "",
        );
        let sql = sqlite(&page_statement(&plan, PageStrategy::InOrder));
        assert!(sql.contains(r#""t0"."fk_variant" IN (SELECT "id" FROM "variant" WHERE "barcode_ci" >= '501' AND "barcode_ci" < '502')"#), "{sql}");
        assert!(
            sql.contains(r#"LEFT JOIN "variant" AS "j1" ON "j1"."id" = "t0"."fk_variant""#),
            "{sql}"
        );
        assert!(
            sql.contains(r#"LEFT JOIN "product" AS "j2" ON "j2"."id" = "j1"."fk_product""#),
            "{sql}"
        );
        assert!(
            sql.contains(r#""j2"."title_ci" AS "k0""#),
            "the inner query carries the key: {sql}"
        );
        assert!(
            sql.contains(r#"ORDER BY "j2"."title_ci" DESC, "t0"."id" DESC LIMIT"#),
            "{sql}"
        );
        assert!(
            sql.ends_with(r#"ORDER BY "page"."k0" DESC, "page"."id" DESC"#),
            "the outer query keeps the order: {sql}"
        );
    }

    #[test]
    fn not_equal_is_the_null_safe_complement() {
        let plan = read(
            "order",
            "fields=id",
            r##"{"query":[{"field":"carrier","operator":"#","value":"dhl"},{"field":"shipDate","operator":"#","value":"2026-01-01","conjunction":"&"}]}"##,
        );
        let sql = sqlite(&page_statement(&plan, PageStrategy::InOrder));
        assert!(sql.contains(r#"(NOT "t0"."carrier_ci" = 'dhl')"#), "{sql}");
        assert!(sql.contains(r#""t0"."ship_date" IS NULL OR (NOT ("t0"."ship_date" >= '2026-01-01T00:00:00' AND "t0"."ship_date" < '2026-01-02T00:00:00'))"#), "{sql}");
    }

    #[test]
    fn empty_through_a_relation_matches_a_missing_relation() {
        let plan = read("image", "fields=id&image_variant.colour=", "");
        let sql = sqlite(&page_statement(&plan, PageStrategy::InOrder));
        assert!(sql.contains(r#""t0"."fk_variant" IS NULL OR "t0"."fk_variant" IN (SELECT "id" FROM "variant" WHERE "colour_ci" = '')"#), "{sql}");
    }

    #[test]
    fn to_many_filters_mean_any_related_record() {
        let plan = read("order", "fields=id&order_orderItem.status=ACC", "");
        let sql = sqlite(&page_statement(&plan, PageStrategy::InOrder));
        assert!(sql.contains(r#""t0"."id" IN (SELECT "fk_order" FROM "order_item" WHERE "fk_order" IS NOT NULL AND "status_ci" = 'acc')"#), "{sql}");
    }

    #[test]
    fn values_arrays_become_in_lists_and_counts_share_the_filter() {
        let request = {
            let mut r = parse_query_string("").unwrap();
            r.body =
                parse_body(br#"{"querywitharray":{"field":"fk_brandStore","values":["a","b"]}}"#)
                    .unwrap();
            r
        };
        let plan = plan_count(
            catalog().get(brandhub_catalog::Res::Order),
            &request,
            &Viewer::admin(),
        )
        .unwrap();
        let sql = count_statement(&plan, CountStrategy::Plain).to_string(PostgresQueryBuilder);
        assert_eq!(
            sql,
            r#"SELECT COUNT(*) FROM "orders" AS "t0" WHERE "t0"."fk_brand_store" IN ('A', 'B')"#
        );
    }

    fn host_count(resource: &str, query: &str) -> CountPlan {
        let viewer = Viewer::new(
            brandhub_catalog::UserType::Host,
            "U1",
            Vec::new(),
            Some("H1".to_string()),
            None,
        );
        plan_count(
            catalog().resource(resource).unwrap(),
            &parse_query_string(query).unwrap(),
            &viewer,
        )
        .unwrap()
    }

    #[test]
    fn a_wide_scope_counts_a_rare_filters_matches_first() {
        let plan = host_count("stock", "stock_variant.barcode=501000@");
        for sql in [
            count_statement(&plan, CountStrategy::MatchesFirst).to_string(PostgresQueryBuilder),
            sqlite(&count_statement(&plan, CountStrategy::MatchesFirst)),
        ] {
            // The filter alone finds the matches, with the columns the scope reads...
            assert!(sql.starts_with(r#"WITH "matches" AS"#), "{sql}");
            assert!(sql.contains(r#"MATERIALIZED (SELECT "t0"."fk_scope_brand", "t0"."fk_warehouse" FROM "stock" AS "t0" WHERE "t0"."fk_variant" IN (SELECT "id" FROM "variant" WHERE "barcode_ci" >= '501000' AND "barcode_ci" < '501001' AND "fk_scope_brand" IN"#), "{sql}");
            // ...and the scope judges only those: the table is not read again.
            assert!(sql.contains(r#") SELECT COUNT(*) FROM "matches" AS "t0" WHERE "t0"."fk_scope_brand" IN (SELECT "id" FROM "brand" WHERE"#), "{sql}");
            assert!(
                sql.contains(r#" AND "t0"."fk_warehouse" IN (SELECT "id" FROM "warehouse" WHERE"#),
                "{sql}"
            );
            assert_eq!(sql.matches(r#"FROM "stock""#).count(), 1, "{sql}");
        }
        // Values stay bound parameters.
        let (sql, values) =
            count_statement(&plan, CountStrategy::MatchesFirst).build(PostgresQueryBuilder);
        assert!(!sql.contains("501000") && !sql.contains("'H1'"), "{sql}");
        assert!(values.0.len() >= 3);
    }

    #[test]
    fn a_scope_read_through_to_many_hops_keeps_the_ids_of_the_matches() {
        let plan = host_count("brand", "code=BR00@");
        let sql = sqlite(&count_statement(&plan, CountStrategy::MatchesFirst));
        assert!(
            sql.contains(r#"MATERIALIZED (SELECT "t0"."id" FROM "brand" AS "t0" WHERE "t0"."code_ci" >= 'br00'"#),
            "{sql}"
        );
        assert!(
            sql.contains(r#"SELECT COUNT(*) FROM "matches" AS "t0" WHERE "t0"."id" IN (SELECT "fk_brand" FROM "brand_store""#),
            "{sql}"
        );
    }

    #[test]
    fn counts_probe_a_wide_scope_or_count_in_one_pass() {
        let plan = host_count("stock", "stock_variant.barcode=501000@");
        let probed = sqlite(&count_statement(&plan, CountStrategy::ProbeScope));
        assert!(
            probed.starts_with(
                r#"SELECT COUNT(*) FROM "stock" AS "t0" WHERE (+"t0"."fk_scope_brand") IN"#
            ),
            "{probed}"
        );
        assert!(probed.contains(r#" AND "t0"."fk_variant" IN"#), "{probed}");
        let plain = count_statement(&plan, CountStrategy::Plain).to_string(PostgresQueryBuilder);
        assert!(
            plain.starts_with(
                r#"SELECT COUNT(*) FROM "stock" AS "t0" WHERE "t0"."fk_scope_brand" IN"#
            ),
            "{plain}"
        );
        assert!(!plain.contains('+') && !plain.contains("WITH"), "{plain}");
    }

    #[test]
    fn a_rare_filter_drives_within_a_wide_scope() {
        let limit = MATCHES_FIRST_LIMIT;
        // A wide scope and a rare or small filter: the filter's matches first.
        assert!(filter_drives(790_000, 8_000, 1_000_000, limit));
        assert!(filter_drives(9_000, 900, 10_000, limit));
        // A narrow scope drives itself, whatever the filter.
        assert!(!filter_drives(10_000, 8_000, 1_000_000, limit));
        // A common filter does not.
        assert!(!filter_drives(790_000, 300_000, 1_000_000, limit));
    }

    #[test]
    fn a_wide_scope_judges_the_matches_of_a_page_collected_first() {
        let mut plan = read(
            "stock",
            "fields=inStock&stock_variant.barcode=501@&order_by=lastUpdate<",
            "",
        );
        plan.scope = host_count("stock", "").scope;
        let sql = page_statement(&plan, PageStrategy::MatchesFirst { probe_scope: true })
            .to_string(PostgresQueryBuilder);
        assert!(sql.contains(r#"MATERIALIZED (SELECT "t0"."id" AS "id", "t0"."fk_scope_brand", "t0"."fk_warehouse", "t0"."last_update" AS "k0" FROM "stock" AS "t0" WHERE "t0"."fk_variant" IN (SELECT "id" FROM "variant" WHERE "barcode_ci" >= '501' AND "barcode_ci" < '502'))"#), "{sql}");
        assert!(sql.contains(r#"(SELECT "id", "k0" FROM "matches" AS "t0" WHERE "t0"."fk_scope_brand" IN (SELECT "id" FROM "brand" WHERE"#), "{sql}");
        assert!(
            sql.contains(r#") ORDER BY "k0" DESC, "id" DESC LIMIT 100 OFFSET 0) AS "page""#),
            "{sql}"
        );
        // Without it the scope helps to find the matches.
        let sql = page_statement(&plan, PageStrategy::MatchesFirst { probe_scope: false })
            .to_string(PostgresQueryBuilder);
        assert!(sql.contains(r#"MATERIALIZED (SELECT "t0"."id" AS "id", "t0"."last_update" AS "k0" FROM "stock" AS "t0" WHERE "t0"."fk_scope_brand" IN"#), "{sql}");
        assert!(
            sql.contains(r#"(SELECT "id", "k0" FROM "matches" AS "t0" ORDER BY"#),
            "{sql}"
        );
    }

    #[test]
    fn related_loads_pad_their_key_lists() {
        let plan = read("stock", "", "");
        let variant = plan
            .selection
            .relations
            .iter()
            .find(|r| r.relation.name == "stock_variant")
            .unwrap();
        let sub = variant.expanded.as_ref().unwrap();
        let id = sub.resource.field_named("id").unwrap();
        let keys: Vec<String> = ["A", "B", "C"].iter().map(|s| s.to_string()).collect();
        let sql = sqlite(&related_statement(
            sub,
            id,
            &keys,
            &Predicate::always(),
            true,
        ));
        assert!(
            sql.ends_with(r#"WHERE "t0"."id" IN ('A', 'B', 'C', 'C')"#),
            "{sql}"
        );
    }

    #[test]
    fn a_page_depends_on_its_relations_order_joins_and_lists() {
        let plan = read("stock", "order_by=stock_variant.barcode", "");
        assert_eq!(
            page_tables(&plan, &Viewer::admin()),
            vec!["brand", "product", "stock", "variant", "warehouse"]
        );
        let plan = read("user", "fields=email,detail.companies", "");
        assert_eq!(
            page_tables(&plan, &Viewer::admin()),
            vec!["user_company", "users"]
        );
    }

    #[test]
    fn a_few_known_rows_look_their_relations_up_one_by_one() {
        let plan = read("stock", "stock_variant.barcode=501023@", "");
        let ids = vec!["a".to_string(), "B".to_string()];
        let sql = sqlite(&any_satisfying(plan.resource, &ids, &plan.full_filter()));
        assert!(
            sql.starts_with(r#"SELECT "t0"."id" FROM "stock" AS "t0" WHERE "t0"."id" IN ('A', 'B') AND EXISTS(SELECT 1 FROM "variant" WHERE "variant"."id" = "t0"."fk_variant" AND "#),
            "{sql}"
        );
        assert!(sql.ends_with("LIMIT 1"), "{sql}");
        // Through a to-many relation, the related records point back at the row.
        let plan = read("variant", "variant_stock.inStock=3", "");
        let sql = sqlite(&any_satisfying(plan.resource, &ids, &plan.full_filter()));
        assert!(
            sql.contains(
                r#"EXISTS(SELECT 1 FROM "stock" WHERE "stock"."fk_variant" = "t0"."id" AND "in_stock" = 3)"#
            ),
            "{sql}"
        );
        // A negated condition keeps its semi-join (a missing record satisfies it).
        let plan = read(
            "stock",
            "",
            r##"{"query":[{"field":"stock_variant.barcode","operator":"#","value":"501023"}]}"##,
        );
        let sql = sqlite(&any_satisfying(plan.resource, &ids, &plan.full_filter()));
        assert!(!sql.contains("EXISTS"), "{sql}");
    }

    #[test]
    fn tables_read_follow_the_filter() {
        let plan = read("stock", "stock_variant.variant_product.fk_brand=X", "");
        assert_eq!(
            tables_read(plan.resource, &plan.full_filter()),
            vec!["product", "stock", "variant"]
        );
    }

    fn company_read(resource: &str, query: &str) -> (ReadPlan, Viewer) {
        let viewer = Viewer::new(
            brandhub_catalog::UserType::Company,
            "U1",
            vec!["C1".to_string()],
            None,
            None,
        );
        let plan = plan_read(
            catalog().resource(resource).unwrap(),
            &parse_query_string(query).unwrap(),
            &viewer,
        )
        .unwrap();
        (plan, viewer)
    }

    #[test]
    fn order_keys_through_relations_join_only_related_records_in_scope() {
        let (plan, viewer) = company_read("file", "fields=id&order_by=file_user.detail.lang");
        let sql = sqlite(&page_statement(&plan, PageStrategy::InOrder));
        // The user joins only when the company user may see it; otherwise it sorts as null.
        assert!(
            sql.contains(r#"LEFT JOIN "users" AS "j1" ON "j1"."id" = "t0"."fk_user" AND ("j1"."id" = 'U1' OR "j1"."fk_company" = 'C1' OR "j1"."id" IN (SELECT "user_id" FROM "user_company" WHERE "company_id" = 'C1')) WHERE"#),
            "{sql}"
        );
        assert!(sql.contains(r#""j1"."detail_lang_ci" AS "k0""#), "{sql}");
        // A user outside scope sorts as unset: first, on PostgreSQL too (whose NULLs are last).
        let sql = page_statement(&plan, PageStrategy::InOrder).to_string(PostgresQueryBuilder);
        assert!(
            sql.contains(r#"ORDER BY "j1"."detail_lang_ci" ASC NULLS FIRST"#),
            "{sql}"
        );
        // What the scope reads makes the page's tables, so a cached page follows it.
        let tables = page_tables(&plan, &viewer);
        assert!(tables.contains(&"user_company"), "{tables:?}");
        // Admins see every user: a plain join.
        let plan = read("file", "fields=id&order_by=file_user.detail.lang", "");
        let sql = sqlite(&page_statement(&plan, PageStrategy::InOrder));
        assert!(
            sql.contains(r#"LEFT JOIN "users" AS "j1" ON "j1"."id" = "t0"."fk_user" ORDER BY"#),
            "{sql}"
        );
    }

    /// The deepest nesting of parentheses in an SQL text.
    fn nesting(sql: &str) -> usize {
        let mut depth = 0usize;
        let mut deepest = 0;
        for c in sql.chars() {
            match c {
                '(' => {
                    depth += 1;
                    deepest = Ord::max(deepest, depth);
                }
                ')' => depth -= 1,
                _ => {}
            }
        }
        deepest
    }

    #[test]
    fn many_conditions_nest_logarithmically() {
        let conditions: Vec<String> = (0..100)
            .map(|i| {
                let conjunction = if i == 0 { "" } else { r#","conjunction":"|""# };
                format!(r#"{{"field":"code","operator":"=","value":"a{i}@b"{conjunction}}}"#)
            })
            .collect();
        let plan = read(
            "product",
            "fields=id",
            &format!(r#"{{"query":[{}]}}"#, conditions.join(",")),
        );
        let sql = sqlite(&page_statement(&plan, PageStrategy::InOrder));
        assert_eq!(sql.matches(" LIKE ").count(), 100, "{sql}");
        assert!(nesting(&sql) <= 12, "nested {} deep: {sql}", nesting(&sql));
        let depth = crate::plan::cost::depth(&plan.filter);
        assert!(
            depth >= 7 + 8,
            "the estimate counts the tree and the leaf: {depth}"
        );
    }
}
