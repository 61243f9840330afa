//! What a plan would ask of the database, counted before any SQL is built: comparisons, the
//! nesting of the condition, bound values, joined tables, expanded relations and columns. A
//! plan past one of the plan limits of [`crate::limits`] is refused with a 400 naming it, so
//! that no request reaches a backend's own limits (which answer with errors the server could
//! only report as 500s) or makes it build a statement it cannot run.
//!
//! The counts follow the shapes `crate::sql` builds and err on the large side; a property test
//! checks that every plan they admit runs on SQLite.

use super::filter::Predicate;
use super::path::FieldPath;
use super::selection::Selection;
use super::value::Test;
use super::{OrderKey, ReadPlan};
use crate::limits::{
    BOUND_VALUES, COMPARISONS, CONDITION_DEPTH, EXPANDED_RELATIONS, JOINED_TABLES, RESULT_COLUMNS,
    SUBQUERIES,
};
use brandhub_problem::ApiResult;

/// The counts of one plan, each against its limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    /// Leaves of the requested filter (an `IN` list is one).
    pub comparisons: usize,
    /// Nesting of the deepest condition a statement carries (scope and filter together).
    pub depth: usize,
    /// Subqueries of the page statement (semi-joins of relations and scopes).
    pub subqueries: usize,
    /// Values bound into the page statement.
    pub bound_values: usize,
    /// Tables the page statement joins (the resource's own included).
    pub joined_tables: usize,
    /// Relations the selection expands, at every level.
    pub expanded_relations: usize,
    /// Columns of the widest statement.
    pub result_columns: usize,
}

/// Levels a test on one column adds: `col IS NULL OR NOT (low <= col AND col < high AND col
/// LIKE p ESCAPE e)` at worst, or an `IN (SELECT …)` over a list's table.
const FIELD_DEPTH: usize = 8;
/// Levels one relation of a path adds: `fk IS NULL OR fk NOT IN (SELECT … WHERE fk IS NOT
/// NULL AND inner AND scope)`.
const HOP_DEPTH: usize = 5;

/// Levels a balanced tree of `n` operands adds (the SQL stage pairs them up).
fn balanced_levels(n: usize) -> usize {
    match n {
        0 | 1 => 0,
        n => (usize::BITS - (n - 1).leading_zeros()) as usize,
    }
}

/// The nesting of a predicate's SQL form.
pub fn depth(predicate: &Predicate) -> usize {
    match predicate {
        Predicate::All(items) | Predicate::Any(items) => {
            balanced_levels(items.len()) + items.iter().map(depth).max().unwrap_or(1)
        }
        // Negation is pushed down to the leaves, whose depth counts its forms.
        Predicate::Not(inner) => depth(inner),
        Predicate::Leaf(leaf) => path_depth(&leaf.path),
    }
}

fn path_depth(path: &FieldPath) -> usize {
    // Innermost first: the field's test, then each relation around it with its scope.
    path.hop_scopes
        .iter()
        .rev()
        .fold(FIELD_DEPTH, |inner, scope| {
            HOP_DEPTH + inner.max(depth(scope))
        })
}

/// Subqueries a predicate's SQL form carries: one for each relation of a path and for a
/// list field, with those of the scopes of the relations.
pub fn subqueries(predicate: &Predicate) -> usize {
    predicate
        .leaves()
        .into_iter()
        .map(|leaf| path_subqueries(&leaf.path))
        .sum()
}

fn path_subqueries(path: &FieldPath) -> usize {
    path.hop_scopes
        .iter()
        .map(|scope| 1 + subqueries(scope))
        .sum::<usize>()
        + usize::from(path.field.list.is_some())
}

/// Values a test binds.
fn test_values(test: &Test) -> usize {
    match test {
        Test::Empty | Test::Compare(..) => 1,
        Test::OneOf(operands) => operands.len(),
        Test::Within(..) => 2,
        // A prefix range beside the LIKE.
        Test::Like(_) => 3,
        Test::Never => 0,
    }
}

/// Values a predicate binds, the scopes of its paths' relations included.
pub fn bound_values(predicate: &Predicate) -> usize {
    predicate
        .leaves()
        .into_iter()
        .map(|leaf| {
            test_values(&leaf.test) + leaf.path.hop_scopes.iter().map(bound_values).sum::<usize>()
        })
        .sum()
}

fn order_values(order: &[OrderKey]) -> usize {
    order
        .iter()
        .flat_map(|key| &key.path.hop_scopes)
        .map(bound_values)
        .sum()
}

/// Tables the order keys join, besides the resource's own: one per distinct relation path.
fn order_joins(order: &[OrderKey]) -> usize {
    let mut prefixes: Vec<Vec<&'static str>> = Vec::new();
    for key in order {
        for depth in 1..=key.path.hops.len() {
            let prefix: Vec<&'static str> = key.path.hops[..depth]
                .iter()
                .map(|h| h.relation.name)
                .collect();
            if !prefixes.contains(&prefix) {
                prefixes.push(prefix);
            }
        }
    }
    prefixes.len()
}

/// Expanded relations of a selection, at every level, and its widest node's columns.
fn selection_counts(selection: &Selection) -> (usize, usize) {
    let mut expanded = 0;
    let mut widest = 0;
    let mut pending = vec![selection];
    while let Some(node) = pending.pop() {
        // The id, every leaf, each to-one relation's key and a to-many load's back reference.
        widest = widest.max(2 + node.leaf_fields().len() + node.relations.len());
        for relation in &node.relations {
            if let Some(sub) = &relation.expanded {
                expanded += 1;
                pending.push(sub);
            }
        }
    }
    (expanded, widest)
}

impl Cost {
    /// The counts of a read plan.
    pub fn of(plan: &ReadPlan) -> Cost {
        let (expanded_relations, widest) = selection_counts(&plan.selection);
        let order_depth = plan
            .order
            .iter()
            .flat_map(|key| &key.path.hop_scopes)
            .map(|scope| 1 + depth(scope))
            .max()
            .unwrap_or(0);
        let scope_columns = plan.scope.leaves().len();
        // An order key's relations are joins, not subqueries; their scopes' relations are.
        let order_subqueries: usize = plan
            .order
            .iter()
            .flat_map(|key| &key.path.hop_scopes)
            .map(subqueries)
            .sum();
        Cost {
            comparisons: plan.filter.leaves().len(),
            depth: (1 + depth(&plan.scope).max(depth(&plan.filter))).max(order_depth),
            subqueries: subqueries(&plan.scope) + subqueries(&plan.filter) + order_subqueries,
            // Limit, offset and a by-id test besides.
            bound_values: bound_values(&plan.scope)
                + bound_values(&plan.filter)
                + order_values(&plan.order)
                + 3,
            joined_tables: 1 + order_joins(&plan.order),
            expanded_relations,
            result_columns: widest + plan.order.len() + scope_columns,
        }
    }

    /// A 400 naming the first limit the counts exceed.
    pub fn check(&self) -> ApiResult<()> {
        COMPARISONS.check_plan("The filter", self.comparisons, "")?;
        CONDITION_DEPTH.check_plan("The condition this request needs", self.depth, "")?;
        SUBQUERIES.check_plan("The statement this request needs", self.subqueries, "")?;
        BOUND_VALUES.check_plan("The statement this request needs", self.bound_values, "")?;
        JOINED_TABLES.check_plan(
            "The page statement for this order_by",
            self.joined_tables,
            "order_by",
        )?;
        EXPANDED_RELATIONS.check_plan(
            "The selection (template and fields)",
            self.expanded_relations,
            "fields",
        )?;
        RESULT_COLUMNS.check_plan("The statement this request needs", self.result_columns, "")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_request;
    use crate::plan::{Viewer, plan_read};
    use brandhub_catalog::{UserType, catalog};
    use brandhub_problem::Code;

    fn cost(resource: &str, query: &str, body: &str, viewer: &Viewer) -> ApiResult<Cost> {
        let request = parse_request(query, body.as_bytes())?;
        let plan = plan_read(catalog().resource(resource).unwrap(), &request, viewer)?;
        Ok(Cost::of(&plan))
    }

    fn host() -> Viewer {
        Viewer::new(
            UserType::Host,
            "U1",
            Vec::new(),
            Some("H1".to_string()),
            None,
        )
    }

    #[test]
    fn balanced_trees_add_logarithmic_levels() {
        assert_eq!(balanced_levels(1), 0);
        assert_eq!(balanced_levels(2), 1);
        assert_eq!(balanced_levels(3), 2);
        assert_eq!(balanced_levels(4), 2);
        assert_eq!(balanced_levels(1025), 11);
    }

    #[test]
    fn counts_follow_the_request() {
        let admin = Viewer::admin();
        let plain = cost("stock", "", "", &admin).unwrap();
        assert_eq!(plain.comparisons, 0);
        assert_eq!(plain.joined_tables, 1);
        assert_eq!(plain.expanded_relations, 4, "the stock template");
        let ordered = cost(
            "stock",
            "order_by=stock_variant.variant_product.title;stock_variant.barcode;stock_warehouse.code",
            "",
            &admin,
        )
        .unwrap();
        assert_eq!(ordered.joined_tables, 4, "variant, product, warehouse");
        let values = cost(
            "variant",
            "barcode=1&barcode=2&barcode=3&code=x@",
            "",
            &admin,
        )
        .unwrap();
        assert_eq!(values.comparisons, 2, "one IN list and one pattern");
        assert_eq!(values.bound_values, 3 + 3 + 3);
        // A host's scope goes into every relation a filter passes.
        let scoped = cost(
            "stock",
            "stock_variant.variant_product.title=x",
            "",
            &host(),
        )
        .unwrap();
        let unscoped = cost("stock", "stock_variant.variant_product.title=x", "", &admin).unwrap();
        assert!(scoped.depth > unscoped.depth, "{scoped:?} {unscoped:?}");
        assert!(scoped.bound_values > unscoped.bound_values);
    }

    #[test]
    fn many_dates_are_too_many_comparisons() {
        let days: Vec<String> = (0..400)
            .map(|i| format!("createdDate=2026-01-{:02}", i % 28 + 1))
            .collect();
        let error = cost("file", &days.join("&"), "", &Viewer::admin()).unwrap_err();
        assert!(error.detail.contains("comparisons"), "{}", error.detail);
        assert_eq!(error.status(), 400);
    }

    #[test]
    fn order_keys_share_their_joins_and_are_refused_past_the_limit() {
        let sponsors = |n: usize| vec!["company_sponsor"; n].join(".");
        // Each key extends the one before: the joins are shared, eight in all.
        let chain: Vec<String> = (0..8)
            .map(|n| {
                let mut names = vec!["brand_company"];
                names.extend(std::iter::repeat_n("company_sponsor", n));
                names.push("code");
                names.join(".")
            })
            .collect();
        let shared = cost(
            "brand",
            &format!("order_by={}", chain.join(";")),
            "",
            &Viewer::admin(),
        );
        assert_eq!(shared.unwrap().joined_tables, 9);
        // Seven keys through distinct relations of a price: 37 joins.
        let keys = [
            format!("price_file.file_user.user_company.{}.code", sponsors(5)),
            format!("price_file.file_user.user_sponsor.{}.code", sponsors(5)),
            format!(
                "price_file.file_user.user_warehouse.warehouse_company.{}.code",
                sponsors(4)
            ),
            format!("price_file.file_brand.brand_company.{}.code", sponsors(5)),
            format!(
                "price_variant.variant_product.product_brand.brand_company.{}.code",
                sponsors(4)
            ),
            "price_host.code".to_string(),
            "price_file.file_user.user_host.code".to_string(),
        ];
        let error = cost(
            "price",
            &format!("order_by={}", keys.join(";")),
            "",
            &Viewer::admin(),
        )
        .unwrap_err();
        assert_eq!(error.code, Code::InvalidParameter);
        assert!(error.detail.contains("joined_tables"), "{}", error.detail);
        assert!(error.detail.contains("38 tables"), "{}", error.detail);
    }

    #[test]
    fn a_selection_expands_at_most_so_many_relations() {
        let sponsors = |n: usize| vec!["company_sponsor"; n].join(".");
        let mut items = vec![
            format!("file_brand.brand_company.{}", sponsors(6)),
            format!("file_user.user_company.{}", sponsors(6)),
            format!("file_user.user_sponsor.{}", sponsors(6)),
            format!("file_user.user_warehouse.warehouse_company.{}", sponsors(5)),
            "file_user.user_host".to_string(),
        ];
        let fits = cost(
            "file",
            &format!("fields={}", items.join(",")),
            "",
            &Viewer::admin(),
        );
        assert_eq!(fits.unwrap().expanded_relations, 31);
        items.push(
            "file_brand.brand_product.product_variant.variant_stock.stock_warehouse".to_string(),
        );
        let error = cost(
            "file",
            &format!("fields={}", items.join(",")),
            "",
            &Viewer::admin(),
        )
        .unwrap_err();
        assert_eq!(error.code, Code::InvalidParameter);
        assert!(
            error.detail.contains("expanded_relations"),
            "{}",
            error.detail
        );
        assert!(
            error.detail.contains("35 expanded relations"),
            "{}",
            error.detail
        );
    }

    #[test]
    fn the_widest_records_are_far_from_the_column_limit() {
        // The columns a statement reads come from the catalog, not from the request: a limit
        // that a request cannot reach, kept in case the catalog grows towards it.
        for resource in catalog().resources() {
            let widest = cost(resource.name, "fields=*", "", &Viewer::admin()).unwrap();
            assert!(
                widest.result_columns * 10 < RESULT_COLUMNS.max,
                "{}: {widest:?}",
                resource.name
            );
        }
    }
}
