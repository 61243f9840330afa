//! Stage 2 of the pipeline: a [`ReadRequest`] is checked against the catalog, as the caller
//! sees it, and becomes a plan: which records (filter, scope), in which order, which page, and
//! what to show of each (selection). Names and values are all decided here; the SQL stage only
//! translates.

pub mod cost;
pub mod filter;
pub mod path;
pub mod selection;
pub mod value;

pub use filter::{Leaf, Predicate};
pub use path::{FieldPath, Hop};
pub use selection::{SelectedField, SelectedRelation, Selection};
pub use value::{Comparison, Operand, Test};

use crate::request::{Direction, ReadRequest};
use brandhub_catalog::{Anchor, Field, Relation, Resource, Scope, UserType, WriteAction, catalog};
use brandhub_problem::ApiResult;
use path::{PathUse, resolve};

/// The page size when none is asked for.
pub const DEFAULT_PAGE_SIZE: u64 = 100;
/// Larger page sizes are clamped to this.
pub const MAX_PAGE_SIZE: u64 = crate::limits::PAGE_SIZE.max as u64;

/// Who is asking. It decides which fields and relations exist for the request and, through
/// [`Viewer::scope`], which records: the catalog's scope rules (docs/API.md, "Scope: who sees what") over the caller's
/// own ids. The planner joins that scope into every list, count, related-entity load and
/// dotted filter it plans.
#[derive(Debug, Clone)]
pub struct Viewer {
    user_type: UserType,
    user_id: String,
    companies: Vec<String>,
    host: Option<String>,
    warehouse: Option<String>,
    /// A sponsor user's sponsor company (write rules of sponsored companies).
    sponsor: Option<String>,
    /// Sees internal fields too: only the catalog's own scope rules are resolved this way.
    sees_internal: bool,
}

impl Viewer {
    /// A caller who sees everything.
    pub fn admin() -> Viewer {
        Viewer::of_type(UserType::Admin)
    }

    /// A caller of the given type with no ids of its own (sees what needs none).
    pub fn of_type(user_type: UserType) -> Viewer {
        Viewer {
            user_type,
            user_id: String::new(),
            companies: Vec::new(),
            host: None,
            warehouse: None,
            sponsor: None,
            sees_internal: false,
        }
    }

    /// The catalog itself, resolving its scope rules: everything, internal shortcuts included.
    fn catalog_rules() -> Viewer {
        Viewer {
            sees_internal: true,
            ..Viewer::admin()
        }
    }

    /// A caller with its own ids: its user id, its companies (for sponsors: the sponsor
    /// company and those it sponsors), its host and its warehouse.
    pub fn new(
        user_type: UserType,
        user_id: &str,
        companies: Vec<String>,
        host: Option<String>,
        warehouse: Option<String>,
    ) -> Viewer {
        let mut companies: Vec<String> = companies.iter().map(|c| c.to_ascii_uppercase()).collect();
        companies.sort();
        companies.dedup();
        Viewer {
            user_type,
            user_id: user_id.to_ascii_uppercase(),
            companies,
            host: host.map(|h| h.to_ascii_uppercase()),
            warehouse: warehouse.map(|w| w.to_ascii_uppercase()),
            sponsor: None,
            sees_internal: false,
        }
    }

    /// The same caller with its sponsor company (for a sponsor user).
    pub fn with_sponsor(mut self, sponsor: Option<String>) -> Viewer {
        self.sponsor = sponsor.map(|s| s.to_ascii_uppercase());
        self
    }

    /// The caller's user type.
    pub fn user_type(&self) -> UserType {
        self.user_type
    }

    /// Whether the field exists for this caller (restricted properties do not).
    pub fn sees_field(&self, field: &Field) -> bool {
        field.visible_to(self.user_type) || (self.sees_internal && field.internal)
    }

    /// Whether the caller sees any records of the resource at all.
    pub fn sees_resource(&self, resource: &Resource) -> bool {
        resource.scope_of(self.user_type) != Scope::Nothing
    }

    /// Whether the relation exists for the caller at all: a to-one relation whose foreign key
    /// is restricted would reveal it, so it does not.
    pub fn has_relation(&self, owner: &Resource, relation: &Relation) -> bool {
        owner
            .fk_field(relation)
            .is_none_or(|fk| self.sees_field(fk))
    }

    /// Whether paths and `fields` may go through the relation: only into resources the caller
    /// sees. (A relation it may not traverse still shows as a `__KEY` reference.)
    pub fn sees_relation(&self, owner: &Resource, relation: &Relation) -> bool {
        self.has_relation(owner, relation) && self.sees_resource(catalog().target(relation))
    }

    /// What distinguishes this caller's view for caches: two callers with the same key see the
    /// same fields and the same records.
    pub fn cache_key(&self) -> String {
        format!(
            "{}|{}|{}|{}|{}|{}",
            self.user_type.as_str(),
            self.user_id,
            self.companies.join(","),
            self.host.as_deref().unwrap_or_default(),
            self.warehouse.as_deref().unwrap_or_default(),
            self.sponsor.as_deref().unwrap_or_default()
        )
    }

    /// The caller's ids (or, for [`Anchor::WritableTypes`], words) a rule term compares with.
    pub fn anchor_ids(&self, anchor: Anchor) -> Vec<String> {
        match anchor {
            Anchor::Companies => self.companies.clone(),
            Anchor::Host => self.host.iter().cloned().collect(),
            Anchor::Warehouse => self.warehouse.iter().cloned().collect(),
            Anchor::Own => (!self.user_id.is_empty())
                .then(|| self.user_id.clone())
                .into_iter()
                .collect(),
            Anchor::Sponsor => self.sponsor.iter().cloned().collect(),
            Anchor::WritableTypes => self
                .user_type
                .writable_types()
                .iter()
                .map(|t| t.as_str().to_string())
                .collect(),
        }
    }

    /// The records of `resource` this caller may see, as a predicate over that resource.
    pub fn scope(&self, resource: &'static Resource) -> Predicate {
        self.rule(resource, &resource.scope_of(self.user_type))
    }

    /// The records of `resource` this caller may `action` (docs/API.md, "Writes: master data and catalogue"), as a predicate.
    pub fn authority(&self, resource: &'static Resource, action: WriteAction) -> Predicate {
        self.rule(resource, &resource.authority_of(action, self.user_type))
    }

    /// A catalog rule (scope or write rule) over this caller's ids, as a predicate.
    fn rule(&self, resource: &'static Resource, rule: &Scope) -> Predicate {
        match rule {
            Scope::Everything => Predicate::always(),
            Scope::Nothing => Predicate::never(),
            Scope::AnyOf(groups) => Predicate::Any(
                groups
                    .iter()
                    .map(|group| {
                        Predicate::All(
                            group
                                .iter()
                                .map(|term| self.term(resource, term.path, term.anchor))
                                .collect(),
                        )
                    })
                    .collect(),
            ),
        }
    }

    /// One rule term: the value at `path` (a path the catalog checked) is one of the caller's
    /// `anchor` ids.
    pub fn term(&self, resource: &'static Resource, path: &str, anchor: Anchor) -> Predicate {
        let path = resolve(resource, path, &Viewer::catalog_rules(), PathUse::Filter)
            .expect("rule paths are checked by the catalog");
        let ids: Vec<Operand> = self
            .anchor_ids(anchor)
            .into_iter()
            .map(Operand::Text)
            .collect();
        let test = if ids.is_empty() {
            Test::Never
        } else {
            Test::OneOf(ids)
        };
        Predicate::Leaf(Box::new(Leaf { path, test }))
    }
}

/// One order key: a field (through to-one relations) and a direction.
#[derive(Debug, Clone)]
pub struct OrderKey {
    pub path: FieldPath,
    pub direction: Direction,
}

/// Everything needed to answer a list (or by-id) request.
#[derive(Debug, Clone)]
pub struct ReadPlan {
    pub resource: &'static Resource,
    /// The records the caller may see (docs/API.md, "Scope: who sees what").
    pub scope: Predicate,
    /// What the request asks for among them: complex query and URL filters.
    pub filter: Predicate,
    /// Order keys; the id always follows as the tie-breaker.
    pub order: Vec<OrderKey>,
    pub page: u64,
    pub page_size: u64,
    pub selection: Selection,
}

impl ReadPlan {
    /// Scope and requested filter together: what a record must satisfy to be listed.
    pub fn full_filter(&self) -> Predicate {
        self.scope.clone().and(self.filter.clone())
    }

    /// Rows to skip before the page.
    pub fn offset(&self) -> u64 {
        (self.page - 1).saturating_mul(self.page_size)
    }

    /// The same plan for only the records of `ids`, all on its first page, in the plan's
    /// order: the records of a page whose ids are known, read again. The filter still
    /// applies, so a record that stopped matching is left out.
    pub fn narrowed_to(&self, ids: &[String]) -> ReadPlan {
        let id_path = resolve(
            self.resource,
            "id",
            &Viewer::catalog_rules(),
            PathUse::Filter,
        )
        .expect("every resource has an id");
        let by_id = Predicate::Leaf(Box::new(Leaf {
            path: id_path,
            test: Test::OneOf(
                ids.iter()
                    .map(|id| Operand::Text(id.to_ascii_uppercase()))
                    .collect(),
            ),
        }));
        ReadPlan {
            filter: by_id.and(self.filter.clone()),
            page: 1,
            page_size: ids.len().max(1) as u64,
            ..self.clone()
        }
    }

    /// The plan with its scope stated as the parents it found (`parents`, the ids of the
    /// records its scope's one link leads to: `crate::sql::scope_parents`): the records whose
    /// foreign key `fk` is one of them, the same records. For a page by parents.
    pub fn scoped_to_parents(&self, fk: &'static Field, parents: &[String]) -> ReadPlan {
        let fk_path = resolve(
            self.resource,
            &fk.path,
            &Viewer::catalog_rules(),
            PathUse::Filter,
        )
        .expect("a foreign key of the resource is a path of it");
        let scope = Predicate::Leaf(Box::new(Leaf {
            path: fk_path,
            test: Test::OneOf(parents.iter().map(|id| Operand::Text(id.clone())).collect()),
        }));
        ReadPlan {
            scope,
            ..self.clone()
        }
    }

    /// The direction of the id tie-breaker: that of the last order key.
    pub fn tie_break(&self) -> Direction {
        self.order
            .last()
            .map_or(Direction::Ascending, |k| k.direction)
    }
}

/// Everything needed to count what a list request would find.
#[derive(Debug, Clone)]
pub struct CountPlan {
    pub resource: &'static Resource,
    /// The records the caller may see.
    pub scope: Predicate,
    /// What the request asks for among them.
    pub filter: Predicate,
}

impl CountPlan {
    /// Every record of a resource.
    pub fn everything(resource: &'static Resource) -> CountPlan {
        CountPlan {
            resource,
            scope: Predicate::always(),
            filter: Predicate::always(),
        }
    }

    /// Everything a caller may see of a resource.
    pub fn visible(resource: &'static Resource, scope: Predicate) -> CountPlan {
        CountPlan {
            resource,
            scope,
            filter: Predicate::always(),
        }
    }

    /// Scope and requested filter together.
    pub fn full_filter(&self) -> Predicate {
        self.scope.clone().and(self.filter.clone())
    }
}

/// Plans a list request.
pub fn plan_read(
    resource: &'static Resource,
    request: &ReadRequest,
    viewer: &Viewer,
) -> ApiResult<ReadPlan> {
    let filter = filter::record_filter(resource, &request.filters, request.body.as_ref(), viewer)?;
    let order = request
        .order_by
        .iter()
        .map(|item| {
            Ok(OrderKey {
                path: resolve(resource, &item.path, viewer, PathUse::Order)?,
                direction: item.direction,
            })
        })
        .collect::<ApiResult<Vec<_>>>()?;
    let selection = selection::select(
        resource,
        request.fields.as_deref(),
        &request.exclude,
        viewer,
    )?;
    let plan = ReadPlan {
        resource,
        scope: viewer.scope(resource),
        filter,
        order,
        page: request.page.unwrap_or(1),
        page_size: request
            .page_size
            .unwrap_or(DEFAULT_PAGE_SIZE)
            .min(MAX_PAGE_SIZE),
        selection,
    };
    // Refused before any SQL is built: nothing past a plan limit reaches a backend.
    cost::Cost::of(&plan).check()?;
    Ok(plan)
}

/// Plans a by-id request: the list plan narrowed to one id.
pub fn plan_by_id(
    resource: &'static Resource,
    id: &str,
    request: &ReadRequest,
    viewer: &Viewer,
) -> ApiResult<ReadPlan> {
    plan_by_ids(resource, &[id.to_string()], request, viewer)
}

/// Plans the records of some ids in one page (ordered by id): what a write answers with.
pub fn plan_by_ids(
    resource: &'static Resource,
    ids: &[String],
    request: &ReadRequest,
    viewer: &Viewer,
) -> ApiResult<ReadPlan> {
    Ok(plan_read(resource, request, viewer)?.narrowed_to(ids))
}

/// Plans a count request.
pub fn plan_count(
    resource: &'static Resource,
    request: &ReadRequest,
    viewer: &Viewer,
) -> ApiResult<CountPlan> {
    // The other reserved parameters do not change a count, but they must still make sense.
    plan_read(resource, request, viewer).map(|plan| CountPlan {
        resource,
        scope: plan.scope,
        filter: plan.filter,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{parse_body, parse_query_string};
    use brandhub_catalog::catalog;
    use brandhub_problem::Code;

    fn plan(resource: &str, query: &str, body: &str) -> ApiResult<ReadPlan> {
        let mut request = parse_query_string(query)?;
        request.body = parse_body(body.as_bytes())?;
        plan_read(
            catalog().resource(resource).unwrap(),
            &request,
            &Viewer::admin(),
        )
    }

    #[test]
    fn page_size_defaults_and_clamps() {
        assert_eq!(plan("stock", "", "").unwrap().page_size, 100);
        assert_eq!(plan("stock", "pageSize=5000", "").unwrap().page_size, 1000);
        assert_eq!(
            plan("stock", "page=3&pageSize=10", "").unwrap().offset(),
            20
        );
    }

    #[test]
    fn conditions_chain_left_to_right() {
        let p = plan(
            "file",
            "",
            r#"{"query":[{"field":"status","operator":"=","value":"a"},
                         {"field":"status","operator":"=","value":"b","conjunction":"|"},
                         {"field":"fileType","operator":"=","value":"c","conjunction":"&"}]}"#,
        )
        .unwrap();
        // (a OR b) AND c
        let Predicate::All(items) = &p.filter else {
            panic!("{:?}", p.filter)
        };
        assert_eq!(items.len(), 2);
        assert!(matches!(items[0], Predicate::Any(_)));
        assert!(matches!(items[1], Predicate::Leaf(_)));
    }

    #[test]
    fn by_id_reads_pin_their_ids_and_other_filters_do_not() {
        let viewer = Viewer::admin();
        let stock = catalog().get(brandhub_catalog::Res::Stock);
        let id = "0190AAAAAAAAAAAAAAAAAAAAAAAAAAAA";
        let by_id = plan_by_id(stock, id, &ReadRequest::default(), &viewer).unwrap();
        assert!(by_id.filter.pins_ids());
        assert!(
            plan("stock", &format!("id={id}&inStock=3"), "")
                .unwrap()
                .filter
                .pins_ids()
        );
        assert!(!plan("stock", "inStock=3", "").unwrap().filter.pins_ids());
        assert!(
            !plan("stock", &format!("id={}@", &id[..10]), "")
                .unwrap()
                .filter
                .pins_ids()
        );
        assert!(
            !plan("stock", &format!("stock_variant.id={id}"), "")
                .unwrap()
                .filter
                .pins_ids()
        );
        assert!(!plan("stock", "", "").unwrap().filter.pins_ids());
    }

    #[test]
    fn repeated_url_filters_gather_into_one_in_list() {
        let p = plan("file", "status=processed&status=failed", "").unwrap();
        let Predicate::Leaf(leaf) = &p.filter else {
            panic!("{:?}", p.filter)
        };
        assert_eq!(
            leaf.test,
            Test::OneOf(vec![
                Operand::Text("processed".into()),
                Operand::Text("failed".into())
            ])
        );
    }

    /// The leaf of a one-leaf predicate, or of a negated one.
    fn leaf_test(predicate: &Predicate) -> (bool, &Test) {
        match predicate {
            Predicate::Leaf(leaf) => (false, &leaf.test),
            Predicate::Not(inner) => match inner.as_ref() {
                Predicate::Leaf(leaf) => (true, &leaf.test),
                other => panic!("not one leaf: {other:?}"),
            },
            other => panic!("not one leaf: {other:?}"),
        }
    }

    #[test]
    fn a_url_value_may_begin_with_a_comparison() {
        let stamp = |s: &str| Operand::Text(s.into());
        let test = |resource: &str, query: &str| {
            let p = plan(resource, query, "").unwrap_or_else(|e| panic!("{query}: {e:?}"));
            let (negated, test) = leaf_test(&p.filter);
            (negated, test.clone())
        };
        assert_eq!(
            test("order", "updatedDate=>=2026-12-05T10:00:00"),
            (
                false,
                Test::Compare(Comparison::GreaterOrEqual, stamp("2026-12-05T10:00:00"))
            )
        );
        assert_eq!(
            test("stock", "available=>0"),
            (
                false,
                Test::Compare(Comparison::Greater, Operand::Integer(0))
            )
        );
        // Raw or percent-encoded; `#` must be encoded in a URL.
        assert_eq!(
            test("stock", "available=%3C%3D7"),
            (
                false,
                Test::Compare(Comparison::LessOrEqual, Operand::Integer(7))
            )
        );
        assert_eq!(
            test("order", "status=%23cancelled"),
            (true, Test::OneOf(vec![Operand::Text("cancelled".into())]))
        );
        // `=` first compares the rest for equality: a value that itself begins with `#`.
        assert_eq!(
            test("order", "hostOrderRef==%231001"),
            (false, Test::OneOf(vec![Operand::Text("#1001".into())]))
        );
        // A date alone: the start of the day for < and >=, its end for > and <=.
        assert_eq!(
            test("order", "orderDate=<2026-12-01"),
            (
                false,
                Test::Compare(Comparison::Less, stamp("2026-12-01T00:00:00"))
            )
        );
        assert_eq!(
            test("order", "orderDate=<=2026-12-01"),
            (
                false,
                Test::Compare(Comparison::Less, stamp("2026-12-02T00:00:00"))
            )
        );
        assert_eq!(
            test("order", "orderDate=>2026-12-01"),
            (
                false,
                Test::Compare(Comparison::GreaterOrEqual, stamp("2026-12-02T00:00:00"))
            )
        );
        assert_eq!(
            test("order", "orderDate=%3E%3D2026-12-01"),
            (
                false,
                Test::Compare(Comparison::GreaterOrEqual, stamp("2026-12-01T00:00:00"))
            )
        );
        // `#` with a wildcard, and with nothing: not matching, not empty.
        assert_eq!(test("order", "trackingRef=%23").1, Test::Empty,);
        assert!(matches!(
            test("order", "trackingRef=%23RM@"),
            (true, Test::Like(_))
        ));
    }

    #[test]
    fn of_a_repeated_filter_plain_values_are_any_of_and_comparisons_narrow_them() {
        let p = plan(
            "order",
            "orderDate=>=2026-11-01&orderDate=<2026-12-01&status=new&status=%23accepted&status=accepted",
            "",
        )
        .unwrap();
        let Predicate::All(items) = &p.filter else {
            panic!("{:?}", p.filter)
        };
        let tests: Vec<(bool, Test)> = items
            .iter()
            .map(|i| {
                let (negated, test) = leaf_test(i);
                (negated, test.clone())
            })
            .collect();
        let text = |s: &str| Operand::Text(s.into());
        assert_eq!(
            tests,
            vec![
                (
                    false,
                    Test::Compare(Comparison::GreaterOrEqual, text("2026-11-01T00:00:00"))
                ),
                (
                    false,
                    Test::Compare(Comparison::Less, text("2026-12-01T00:00:00"))
                ),
                (false, Test::OneOf(vec![text("new"), text("accepted")])),
                (true, Test::OneOf(vec![text("accepted")])),
            ]
        );
    }

    #[test]
    fn url_comparisons_that_do_not_fit_are_invalid_values() {
        for query in [
            "orderDate=>=",
            "orderDate=<yesterday",
            "available=>many",
            "sentToWH=<2026-02-30",
            "trackingRef=>RM@",
        ] {
            let error = plan(
                if query.starts_with("available") {
                    "stock"
                } else {
                    "order"
                },
                query,
                "",
            )
            .unwrap_err();
            assert_eq!(error.code, Code::InvalidValue, "{query}: {error:?}");
            assert!(error.field.is_some(), "{query}");
        }
        let error = plan("variant", "vatable=>0", "").unwrap_err();
        assert_eq!(error.code, Code::InvalidValue, "{error:?}");
    }

    /// A URL value that begins with an operator, percent-encoded as a client sends it.
    fn url_value(operator: &str, value: &str) -> String {
        form_urlencoded::byte_serialize(format!("{operator}{value}").as_bytes()).collect()
    }

    /// A complex query of one condition.
    fn one_condition(path: &str, operator: &str, value: &str) -> String {
        serde_json::json!({"query": [{"field": path, "operator": operator, "value": value}]})
            .to_string()
    }

    #[test]
    fn url_comparisons_plan_as_the_complex_query_conditions_do() {
        // (resource, path, operator, value): every operator, every type that takes it, paths
        // through to-one and to-many relations, patterns and the empty value with `#`.
        let cases = [
            ("order", "updatedDate", ">=", "2026-12-05T10:00:00"),
            ("order", "orderDate", "<", "2026-12-01"),
            ("order", "orderDate", "<=", "2026-12-01"),
            ("order", "orderDate", ">", "2026-12-01"),
            ("order", "orderDate", ">=", "2026-12-01"),
            ("order", "orderDate", "#", "2026-12-01"),
            ("order", "orderDate", "#", "2026-12-01T10:00:00"),
            ("stock", "available", ">", "0"),
            ("stock", "available", "<=", "2.5"),
            ("stock", "available", "#", "3"),
            ("variant", "rrp", "<", "10.5"),
            ("order", "status", "#", "Cancelled"),
            ("order", "status", "<", "NEW"),
            ("order", "hostOrderRef", "=", "#1001"),
            ("order", "trackingRef", "#", "RM@"),
            ("order", "carrier", "#", ""),
            ("variant", "vatable", "#", "true"),
            ("variant", "vatable", "=", "False"),
            ("stock", "fk_variant", ">=", "0190abc"),
            (
                "stock",
                "stock_variant.variant_product.title",
                ">=",
                "Éclair",
            ),
            ("stock", "stock_variant.rrp", "#", "9.99"),
            ("order", "order_orderItem.orderQty", ">", "2"),
            ("order", "order_orderItem.status", "#", "CAN"),
            ("orderItem", "orderItem_order.orderDate", "<", "2026-11-01"),
            ("file", "detail.startDate", ">=", "2026-11-01"),
        ];
        for (resource, path, operator, value) in cases {
            let url = format!("{path}={}", url_value(operator, value));
            let from_url = plan(resource, &url, "").unwrap_or_else(|e| panic!("{url}: {e:?}"));
            let body = one_condition(path, operator, value);
            let from_body = plan(resource, "", &body).unwrap_or_else(|e| panic!("{body}: {e:?}"));
            assert_eq!(
                format!("{:?}", from_url.filter),
                format!("{:?}", from_body.filter),
                "{resource}?{url}"
            );
        }
    }

    #[test]
    fn url_comparisons_are_refused_where_complex_queries_refuse_them() {
        // What a condition refuses, the URL refuses as a value that does not fit the field
        // (`invalid_value`), naming the same field: a URL has no operators of its own.
        let cases = [
            ("order", "orderDate", "<", "yesterday", Code::InvalidValue),
            ("order", "orderDate", ">", "", Code::InvalidValue),
            ("order", "orderDate", ">=", "2026-11@", Code::InvalidValue),
            ("order", "trackingRef", "<", "RM@", Code::InvalidValue),
            ("stock", "available", ">", "many", Code::InvalidValue),
            ("stock", "available", ">", ">1", Code::InvalidValue),
            ("variant", "vatable", "#", "maybe", Code::InvalidValue),
            ("variant", "vatable", "<", "1", Code::InvalidQuery),
            ("variant", "vatable", ">=", "true", Code::InvalidQuery),
            (
                "stock",
                "stock_variant.vatable",
                ">",
                "false",
                Code::InvalidQuery,
            ),
            ("apiKey", "grants", ">", "a", Code::InvalidQuery),
        ];
        for (resource, path, operator, value, in_body) in cases {
            let url = format!("{path}={}", url_value(operator, value));
            let from_url = plan(resource, &url, "").unwrap_err();
            assert_eq!(from_url.code, Code::InvalidValue, "{url}: {from_url:?}");
            let from_body = plan(resource, "", &one_condition(path, operator, value)).unwrap_err();
            assert_eq!(
                from_body.code, in_body,
                "{path} {operator} {value}: {from_body:?}"
            );
            assert_eq!(from_url.field.as_deref(), Some(path), "{url}");
            assert_eq!(from_body.field, from_url.field, "{url}");
        }
    }

    #[test]
    fn an_equals_sign_first_escapes_operators_not_wildcards() {
        let test = |resource: &str, query: &str| {
            let p = plan(resource, query, "").unwrap_or_else(|e| panic!("{query}: {e:?}"));
            let (negated, test) = leaf_test(&p.filter);
            (negated, test.clone())
        };
        let text = |s: &str| Test::OneOf(vec![Operand::Text(s.into())]);
        assert_eq!(test("order", "hostOrderRef==%3E5"), (false, text(">5")));
        assert_eq!(test("order", "hostOrderRef===5"), (false, text("=5")));
        assert_eq!(test("order", "hostOrderRef==%23"), (false, text("#")));
        // Decision: `@` stays a wildcard after `=` (as in a condition with operator `=`);
        // `=` alone is the empty value.
        assert!(matches!(
            test("order", "trackingRef==RM@"),
            (false, Test::Like(_))
        ));
        assert_eq!(test("order", "trackingRef=="), (false, Test::Empty));
        assert_eq!(
            test("variant", "vatable==1"),
            (false, Test::OneOf(vec![Operand::Boolean(true)]))
        );
        assert_eq!(
            test("variant", "vatable=%230"),
            (true, Test::OneOf(vec![Operand::Boolean(false)]))
        );
    }

    #[test]
    fn unknown_and_invalid_are_told_apart() {
        assert_eq!(
            plan("stock", "nope=1", "").unwrap_err().code,
            Code::UnknownField
        );
        assert_eq!(
            plan("stock", "inStock=many", "").unwrap_err().code,
            Code::InvalidValue
        );
        assert_eq!(
            plan("stock", "order_by=nope", "").unwrap_err().code,
            Code::UnknownField
        );
        assert_eq!(
            plan("order", "order_by=order_orderItem.status", "")
                .unwrap_err()
                .code,
            Code::InvalidParameter
        );
        let error = plan(
            "stock",
            "",
            r#"{"query":[{"field":"nope","operator":"=","value":"1"}]}"#,
        )
        .unwrap_err();
        assert_eq!(error.code, Code::UnknownField);
    }

    #[test]
    fn a_path_goes_through_at_most_eight_relations() {
        // brand → company → sponsor → sponsor …: to-one hops that always resolve.
        let path = |hops: usize| {
            let mut names = vec!["brand_company"];
            names.extend(std::iter::repeat_n("company_sponsor", hops - 1));
            names.push("code");
            names.join(".")
        };
        for usage in ["{}=x", "order_by={}", "fields={}"] {
            let query = |hops| usage.replace("{}", &path(hops));
            assert!(plan("brand", &query(8), "").is_ok(), "{}", query(8));
            let error = plan("brand", &query(9), "").unwrap_err();
            assert_eq!(error.code, Code::InvalidParameter, "{}", query(9));
            assert!(error.detail.contains("path_hops"), "{}", error.detail);
        }
        let body = format!(
            r#"{{"query":[{{"field":"{}","operator":"=","value":"x"}}]}}"#,
            path(9)
        );
        assert!(
            plan("brand", "", &body)
                .unwrap_err()
                .detail
                .contains("path_hops")
        );
    }

    #[test]
    fn many_equal_values_are_one_in_list_and_many_patterns_are_refused() {
        let values: Vec<String> = (0..10_000).map(|i| format!("code=c{i}")).collect();
        let p = plan("product", &values.join("&"), "").unwrap();
        let Predicate::Leaf(leaf) = &p.filter else {
            panic!("one leaf")
        };
        assert!(matches!(&leaf.test, Test::OneOf(v) if v.len() == 10_000));
        let patterns: Vec<String> = (0..1000).map(|i| format!("code={i}@")).collect();
        let error = plan("product", &patterns.join("&"), "").unwrap_err();
        assert!(error.detail.contains("wildcard_values"), "{}", error.detail);
    }
}
