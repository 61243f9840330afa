//! Judging a record before it is written (or the target of an upload) by a catalog rule — a
//! write rule or a scope rule — from what is known of it: the values of its own fields and the
//! records it hangs from (an upload's brand, warehouse and host). A term decided by those
//! values is decided here; a term whose path reaches a known record becomes a check of that
//! one record by id (a small statement the store runs, [`crate::sql::satisfying_ids`]); a term
//! that reaches no known record stays open, and the records themselves are checked when they
//! are written (an orderDispatch file's orders, for a warehouse user).

use crate::plan::{Predicate, Viewer};
use brandhub_catalog::Res;
use brandhub_catalog::{Anchor, Resource, Scope, ScopeTerm, catalog};

/// What is known of a record about to be written.
#[derive(Debug, Clone, Default)]
pub struct Known {
    /// Values of the record's own fields by path (ids upper-cased; a list holds its elements,
    /// a missing foreign key nothing).
    values: Vec<(String, Vec<String>)>,
    /// Records the write hangs from, by resource name.
    records: Vec<(Res, String)>,
}

impl Known {
    /// Nothing known yet.
    pub fn new() -> Known {
        Known::default()
    }

    /// The record's own field at `path` holds these values (none: unset).
    pub fn value(mut self, path: &str, values: impl IntoIterator<Item = String>) -> Known {
        let values = values.into_iter().map(|v| v.to_ascii_uppercase()).collect();
        self.values.push((path.to_string(), values));
        self
    }

    /// The write hangs from this record of `resource` (every path through that resource
    /// reaches it).
    pub fn record(mut self, resource: Res, id: &str) -> Known {
        self.records.push((resource, id.to_ascii_uppercase()));
        self
    }

    fn value_of(&self, path: &str) -> Option<&Vec<String>> {
        self.values.iter().find(|(p, _)| p == path).map(|(_, v)| v)
    }

    fn record_of(&self, resource: &str) -> Option<&str> {
        self.records
            .iter()
            .find(|(r, _)| r.name() == resource)
            .map(|(_, id)| id.as_str())
    }
}

/// How one term of a rule stands.
#[derive(Debug, Clone)]
pub enum Check {
    /// Decided by the known values.
    Holds(bool),
    /// Holds when this record satisfies the predicate (the rest of the term's path).
    Record {
        resource: &'static Resource,
        id: String,
        predicate: Predicate,
    },
    /// Cannot be told from what is known.
    Open,
}

/// What a rule says of a record: yes, no, or not before its records are known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Yes,
    No,
    Open,
}

/// A rule applied to what is known: its groups (any of them) of terms (all of each), each
/// term with its check.
#[derive(Debug, Clone)]
pub struct Judgement {
    groups: Vec<Vec<(ScopeTerm, Check)>>,
}

impl Judgement {
    /// The record checks to run, in the order [`Judgement::verdict`] takes their outcomes.
    pub fn record_checks(&self) -> Vec<(&'static Resource, &str, &Predicate)> {
        self.checks()
            .filter_map(|(_, check)| match check {
                Check::Record {
                    resource,
                    id,
                    predicate,
                } => Some((*resource, id.as_str(), predicate)),
                _ => None,
            })
            .collect()
    }

    fn checks(&self) -> impl Iterator<Item = &(ScopeTerm, Check)> {
        self.groups.iter().flatten()
    }

    /// Each term's truth (`None`: open), given the outcomes of the record checks.
    fn truths(&self, outcomes: &[bool]) -> Vec<Vec<(&ScopeTerm, Option<bool>)>> {
        let mut outcomes = outcomes.iter().copied();
        self.groups
            .iter()
            .map(|group| {
                group
                    .iter()
                    .map(|(term, check)| {
                        let truth = match check {
                            Check::Holds(truth) => Some(*truth),
                            Check::Record { .. } => Some(outcomes.next().unwrap_or(false)),
                            Check::Open => None,
                        };
                        (term, truth)
                    })
                    .collect()
            })
            .collect()
    }

    /// The verdict, given the outcomes of [`Judgement::record_checks`] in their order.
    pub fn verdict(&self, outcomes: &[bool]) -> Verdict {
        let mut verdict = Verdict::No;
        for group in self.truths(outcomes) {
            let group_verdict = if group.iter().any(|(_, t)| *t == Some(false)) {
                Verdict::No
            } else if group.iter().all(|(_, t)| *t == Some(true)) {
                Verdict::Yes
            } else {
                Verdict::Open
            };
            match group_verdict {
                Verdict::Yes => return Verdict::Yes,
                Verdict::Open => verdict = Verdict::Open,
                Verdict::No => {}
            }
        }
        verdict
    }

    /// The terms found false: what a refusal names.
    pub fn refused(&self, outcomes: &[bool]) -> Vec<ScopeTerm> {
        let mut terms: Vec<ScopeTerm> = Vec::new();
        for (term, truth) in self.truths(outcomes).into_iter().flatten() {
            if truth == Some(false) && !terms.contains(term) {
                terms.push(term.clone());
            }
        }
        terms
    }
}

/// Applies `rule` (of `resource`, for `viewer`) to what is known of a record.
pub fn judge(
    resource: &'static Resource,
    rule: &Scope,
    viewer: &Viewer,
    known: &Known,
) -> Judgement {
    let groups = match rule {
        Scope::Everything => vec![Vec::new()],
        Scope::Nothing => Vec::new(),
        Scope::AnyOf(groups) => groups
            .iter()
            .map(|group| {
                group
                    .iter()
                    .map(|term| {
                        let check = check(resource, term.path, term.anchor, viewer, known);
                        (term.clone(), check)
                    })
                    .collect()
            })
            .collect(),
    };
    Judgement { groups }
}

/// Follows a term's path from the record through to-one relations until it reaches a known
/// value or record.
fn check(
    resource: &'static Resource,
    path: &str,
    anchor: Anchor,
    viewer: &Viewer,
    known: &Known,
) -> Check {
    let anchors = viewer.anchor_ids(anchor);
    // Known values are upper-cased like ids; words (a user type) compare without case.
    let one_of = |values: &[String]| {
        values
            .iter()
            .any(|v| anchors.iter().any(|a| a.eq_ignore_ascii_case(v)))
    };
    let segments: Vec<&str> = path.split('.').collect();
    let mut current = resource;
    for (i, segment) in segments.iter().enumerate() {
        let Some(relation) = current.relation(segment) else {
            // A field: of the record itself (its value may be known), else of a record on
            // the way that is not known.
            let rest = segments[i..].join(".");
            if i == 0
                && let Some(values) = known.value_of(&rest)
            {
                return Check::Holds(one_of(values));
            }
            let reached = current
                .field_at(&rest)
                .and_then(|field| field.relation)
                .and_then(|name| current.relation(name))
                .and_then(|relation| known.record_of(catalog().target(relation).name));
            return match reached {
                Some(id) => Check::Holds(one_of(&[id.to_string()])),
                None => Check::Open,
            };
        };
        if !relation.is_to_one() {
            return Check::Open;
        }
        let target = catalog().target(relation);
        let fk_value = (i == 0)
            .then(|| current.fk_field(relation))
            .flatten()
            .and_then(|fk| known.value_of(&fk.path));
        let id = match fk_value {
            Some(values) => match values.first() {
                Some(id) => Some(id.clone()),
                // A missing relation satisfies no test of an id.
                None => return Check::Holds(false),
            },
            None => known.record_of(target.name).map(str::to_string),
        };
        if let Some(id) = id {
            let rest = segments[i + 1..].join(".");
            return Check::Record {
                resource: target,
                id,
                predicate: viewer.term(target, &rest, anchor),
            };
        }
        current = target;
    }
    Check::Open
}

#[cfg(test)]
mod tests {
    use super::*;
    use brandhub_catalog::{UserType, WriteAction};

    const C1: &str = "0190AAAAAAAAAAAAAAAAAAAAAAAAAAA1";
    const C2: &str = "0190AAAAAAAAAAAAAAAAAAAAAAAAAAA2";
    const W1: &str = "0190BBBBBBBBBBBBBBBBBBBBBBBBBBB1";
    const W2: &str = "0190BBBBBBBBBBBBBBBBBBBBBBBBBBB2";
    const BRAND: &str = "0190CCCCCCCCCCCCCCCCCCCCCCCCCCC1";

    fn resource(name: &str) -> &'static Resource {
        catalog().resource(name).unwrap()
    }

    fn company() -> Viewer {
        Viewer::new(UserType::Company, "U1", vec![C1.into()], None, None)
    }

    fn warehouse() -> Viewer {
        Viewer::new(UserType::Warehouse, "U2", Vec::new(), None, Some(W1.into()))
    }

    fn write_rule(name: &str, viewer: &Viewer, known: &Known) -> Judgement {
        let resource = resource(name);
        judge(
            resource,
            &resource.authority_of(WriteAction::Write, viewer.user_type()),
            viewer,
            known,
        )
    }

    #[test]
    fn a_catalogue_write_is_a_check_of_the_known_brand() {
        let known = Known::new().record(Res::Brand, BRAND);
        for name in ["product", "variant", "image", "price"] {
            let judgement = write_rule(name, &company(), &known);
            let checks = judgement.record_checks();
            assert_eq!(checks.len(), 1, "{name}");
            let (target, id, _) = checks[0];
            assert_eq!((target.name, id), ("brand", BRAND), "{name}");
            assert_eq!(judgement.verdict(&[true]), Verdict::Yes);
            assert_eq!(judgement.verdict(&[false]), Verdict::No);
            assert_eq!(judgement.refused(&[false]).len(), 1);
        }
        // A warehouse user writes no catalogue, whatever the records.
        let judgement = write_rule("price", &warehouse(), &known);
        assert!(judgement.record_checks().is_empty());
        assert_eq!(judgement.verdict(&[]), Verdict::No);
    }

    #[test]
    fn known_values_decide_terms_on_the_record_itself() {
        let stock = |w: &str| {
            Known::new()
                .record(Res::Brand, BRAND)
                .record(Res::Warehouse, w)
        };
        assert_eq!(
            write_rule("stock", &warehouse(), &stock(W1)).verdict(&[]),
            Verdict::Yes
        );
        let refused = write_rule("stock", &warehouse(), &stock(W2));
        assert_eq!(refused.verdict(&[]), Verdict::No);
        let terms = refused.refused(&[]);
        assert_eq!(terms.len(), 1);
        assert_eq!(
            (terms[0].path, terms[0].anchor),
            ("fk_warehouse", Anchor::Warehouse)
        );
        // The company's rule asks the warehouse's company.
        let checks = write_rule("stock", &company(), &stock(W2))
            .record_checks()
            .len();
        assert_eq!(checks, 1);

        let user = |company: Option<&str>| {
            Known::new()
                .value("id", None)
                .value("fk_company", company.map(str::to_string))
        };
        assert_eq!(
            write_rule("user", &company(), &user(Some(C1))).verdict(&[]),
            Verdict::Yes
        );
        assert_eq!(
            write_rule("user", &company(), &user(Some(C2))).verdict(&[]),
            Verdict::No
        );
        assert_eq!(
            write_rule("user", &company(), &user(None)).verdict(&[]),
            Verdict::No
        );
        // Its own record is its to write; another's, the rest of the rule decides.
        let own = Known::new().value("id", ["U1".to_string()]);
        assert_eq!(
            write_rule("user", &company(), &own).verdict(&[]),
            Verdict::Yes
        );
        let other = Known::new().value("id", ["U9".to_string()]);
        assert_eq!(
            write_rule("user", &company(), &other).verdict(&[]),
            Verdict::Open
        );
    }

    #[test]
    fn a_foreign_key_value_leads_to_its_record() {
        let known = Known::new().value(
            "fk_product",
            ["0190DDDDDDDDDDDDDDDDDDDDDDDDDDD1".to_string()],
        );
        let judgement = write_rule("variant", &company(), &known);
        let checks = judgement.record_checks();
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].0.name, "product");
        // Unset, the relation holds no id at all.
        let unset = Known::new().value("fk_product", None);
        assert_eq!(
            write_rule("variant", &company(), &unset).verdict(&[]),
            Verdict::No
        );
    }

    #[test]
    fn what_no_known_record_reaches_stays_open() {
        let order = resource("order");
        let known = Known::new().record(Res::Brand, BRAND);
        let dispatch = |viewer: &Viewer| {
            judge(
                order,
                &order.authority_of(WriteAction::Dispatch, viewer.user_type()),
                viewer,
                &known,
            )
        };
        assert_eq!(dispatch(&warehouse()).verdict(&[]), Verdict::Open);
        let by_company = dispatch(&company());
        assert_eq!(by_company.record_checks()[0].0.name, "brand");
        assert_eq!(by_company.verdict(&[true]), Verdict::Yes);
        let host = Viewer::new(UserType::Host, "U3", Vec::new(), Some("H".into()), None);
        assert_eq!(dispatch(&host).verdict(&[]), Verdict::No);
        assert_eq!(dispatch(&Viewer::admin()).verdict(&[]), Verdict::Yes);
    }

    #[test]
    fn scope_rules_judge_new_records_too() {
        // A new user (never the caller itself) is seen by a company user through its companies.
        let user = resource("user");
        let viewer = company();
        let scope = user.scope_of(UserType::Company);
        let new_user = |company: &str, extra: &[&str]| {
            Known::new()
                .value("id", None)
                .value("fk_company", [company.to_string()])
                .value("detail.companies", extra.iter().map(|c| c.to_string()))
        };
        assert_eq!(
            judge(user, &scope, &viewer, &new_user(C1, &[])).verdict(&[]),
            Verdict::Yes
        );
        assert_eq!(
            judge(user, &scope, &viewer, &new_user(C2, &[C1])).verdict(&[]),
            Verdict::Yes
        );
        assert_eq!(
            judge(user, &scope, &viewer, &new_user(C2, &[])).verdict(&[]),
            Verdict::No
        );
        // Another user's key is out of sight.
        let key = resource("apiKey");
        let of = |owner: &str| Known::new().value("fk_user", [owner.to_string()]);
        let scope = key.scope_of(UserType::Company);
        assert_eq!(
            judge(key, &scope, &viewer, &of("U1")).verdict(&[]),
            Verdict::Yes
        );
        assert_eq!(
            judge(key, &scope, &viewer, &of("U9")).verdict(&[]),
            Verdict::No
        );
    }
}
