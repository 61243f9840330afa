//! What a response shows of each record: the default template, `fields` and `exclude`, turned
//! into one [`Selection`] tree. Every name is checked against the catalog as the caller sees it.
//!
//! Rules (docs/API.md, "Resources" and "Parameters of reads"): a resource's *default node* is its own fields with every to-one
//! relation as a `__KEY` reference; its *template* is the default node plus the expansions its
//! catalog entry lists. In `fields`, `*` stands for the template (or, below a relation, for the
//! template's subtree there); a relation named alone expands as the template shows it (or as its
//! target's default node); `rel.sub` expands `rel` with only `sub`. Items add up. `exclude`
//! removes names (with `@` wildcards) afterwards; mandatory fields always stay.

use super::Viewer;
use super::path::visible_names;
use crate::limits::PATH_HOPS;
use crate::text::Pattern;
use brandhub_catalog::{Field, FieldType, Relation, Resource, UserType, catalog};
use brandhub_problem::{ApiError, ApiResult, Code};
use std::collections::{BTreeMap, HashMap};
use std::sync::{LazyLock, Mutex};

/// What to show of the records of one resource, in render order.
#[derive(Debug, Clone)]
pub struct Selection {
    pub resource: &'static Resource,
    pub fields: Vec<SelectedField>,
    pub relations: Vec<SelectedRelation>,
}

/// A property to show; an object may show only some of its subfields.
#[derive(Debug, Clone)]
pub struct SelectedField {
    pub field: &'static Field,
    /// `None`: the whole value; `Some`: only these subfields (objects only).
    pub subfields: Option<Vec<SelectedField>>,
}

/// A relation to show: as a `__KEY` reference, or expanded with its own selection.
#[derive(Debug, Clone)]
pub struct SelectedRelation {
    pub relation: &'static Relation,
    pub expanded: Option<Selection>,
}

impl Selection {
    /// A canonical text of what the selection shows (names, nesting, expansions): two
    /// selections with the same signature render the same rows identically.
    pub fn signature(&self) -> String {
        fn field(out: &mut String, selected: &SelectedField) {
            out.push_str(selected.field.name);
            if let Some(subs) = &selected.subfields {
                out.push('{');
                for sub in subs {
                    field(out, sub);
                    out.push(',');
                }
                out.push('}');
            }
        }
        let mut out = format!("{}(", self.resource.name);
        for selected in &self.fields {
            field(&mut out, selected);
            out.push(',');
        }
        for relation in &self.relations {
            out.push_str(relation.relation.name);
            match &relation.expanded {
                Some(sub) => out.push_str(&sub.signature()),
                None => out.push_str("=key"),
            }
            out.push(',');
        }
        out.push(')');
        out
    }

    /// Every leaf field whose column a query must read for this node (not its relations).
    pub fn leaf_fields(&self) -> Vec<&'static Field> {
        fn walk(selected: &SelectedField, out: &mut Vec<&'static Field>) {
            match &selected.subfields {
                Some(subs) => subs.iter().for_each(|s| walk(s, out)),
                None => out.push(selected.field),
            }
        }
        let mut out = Vec::new();
        self.fields.iter().for_each(|f| walk(f, &mut out));
        out
    }
}

#[derive(Debug, Clone, Default)]
struct Node {
    props: BTreeMap<&'static str, Prop>,
    rels: BTreeMap<&'static str, Rel>,
}

#[derive(Debug, Clone)]
enum Prop {
    Whole,
    Part(BTreeMap<&'static str, Prop>),
}

#[derive(Debug, Clone)]
enum Rel {
    Key,
    Expanded(Node),
}

fn merge_prop(into: &mut Prop, other: Prop) {
    match (into, other) {
        (Prop::Whole, _) => {}
        (into @ Prop::Part(_), Prop::Whole) => *into = Prop::Whole,
        (Prop::Part(a), Prop::Part(b)) => {
            for (name, prop) in b {
                match a.get_mut(name) {
                    Some(existing) => merge_prop(existing, prop),
                    None => {
                        a.insert(name, prop);
                    }
                }
            }
        }
    }
}

fn merge_rel(into: &mut Rel, other: Rel) {
    match (into, other) {
        (_, Rel::Key) => {}
        (into @ Rel::Key, expanded) => *into = expanded,
        (Rel::Expanded(a), Rel::Expanded(b)) => merge_node(a, b),
    }
}

fn merge_node(into: &mut Node, other: Node) {
    for (name, prop) in other.props {
        match into.props.get_mut(name) {
            Some(existing) => merge_prop(existing, prop),
            None => {
                into.props.insert(name, prop);
            }
        }
    }
    for (name, rel) in other.rels {
        match into.rels.get_mut(name) {
            Some(existing) => merge_rel(existing, rel),
            None => {
                into.rels.insert(name, rel);
            }
        }
    }
}

fn default_node(resource: &'static Resource, viewer: &Viewer) -> Node {
    let mut node = Node::default();
    for field in resource.fields.iter().filter(|f| viewer.sees_field(f)) {
        node.props.insert(field.name, Prop::Whole);
    }
    for relation in resource
        .relations
        .iter()
        .filter(|r| r.is_to_one() && viewer.has_relation(resource, r))
    {
        // Even into a resource the caller sees nothing of: it shows as a `__KEY` reference.
        node.rels.insert(relation.name, Rel::Key);
    }
    node
}

/// The template as a caller of this type sees it. It is the same for every caller of a type
/// and costly to work out (each template path the type cannot see is tried and dropped), so
/// each is worked out once per process.
fn template_node(resource: &'static Resource, viewer: &Viewer) -> ApiResult<Node> {
    type Key = (&'static str, UserType, bool);
    static TEMPLATES: LazyLock<Mutex<HashMap<Key, Node>>> = LazyLock::new(Default::default);
    let key = (resource.name, viewer.user_type, viewer.sees_internal);
    if let Some(node) = TEMPLATES.lock().ok().and_then(|t| t.get(&key).cloned()) {
        return Ok(node);
    }
    let node = build_template_node(resource, viewer)?;
    if let Ok(mut templates) = TEMPLATES.lock() {
        templates.insert(key, node.clone());
    }
    Ok(node)
}

fn build_template_node(resource: &'static Resource, viewer: &Viewer) -> ApiResult<Node> {
    let mut node = default_node(resource, viewer);
    for path in &resource.template {
        let segments: Vec<&str> = path.split('.').collect();
        // A template path through something the caller cannot see simply does not apply.
        match add_item(&mut node, resource, &segments, None, viewer, 0) {
            Ok(()) => {}
            Err(error) if error.code == Code::UnknownField => {}
            Err(error) => return Err(error),
        }
    }
    Ok(node)
}

/// Adds one `fields` item (its names from `segments` on, `hops` relations below the root).
fn add_item(
    node: &mut Node,
    resource: &'static Resource,
    segments: &[&str],
    context: Option<&Node>,
    viewer: &Viewer,
    hops: usize,
) -> ApiResult<()> {
    let name = segments[0];
    if name == "*" && segments.len() == 1 {
        let base = match context {
            Some(context) => context.clone(),
            None => default_node(resource, viewer),
        };
        merge_node(node, base);
        return Ok(());
    }
    if let Some(relation) = resource
        .relation(name)
        .filter(|r| viewer.sees_relation(resource, r))
    {
        let target = catalog().target(relation);
        PATH_HOPS.check(Code::InvalidParameter, "A fields item", hops + 1, "fields")?;
        let context_below =
            context
                .and_then(|c| c.rels.get(relation.name))
                .and_then(|rel| match rel {
                    Rel::Expanded(sub) => Some(sub),
                    Rel::Key => None,
                });
        let sub = if segments.len() == 1 {
            context_below
                .cloned()
                .unwrap_or_else(|| default_node(target, viewer))
        } else {
            let mut sub = Node::default();
            add_item(
                &mut sub,
                target,
                &segments[1..],
                context_below,
                viewer,
                hops + 1,
            )?;
            sub
        };
        let entry = node.rels.entry(relation.name).or_insert(Rel::Key);
        merge_rel(entry, Rel::Expanded(sub));
        return Ok(());
    }
    if let Some(field) = resource.field_named(name).filter(|f| viewer.sees_field(f)) {
        let prop = prop_for(field, &segments[1..], viewer, segments)?;
        match node.props.get_mut(field.name) {
            Some(existing) => merge_prop(existing, prop),
            None => {
                node.props.insert(field.name, prop);
            }
        }
        return Ok(());
    }
    let mut valid = visible_names(resource, viewer);
    valid.push("*");
    Err(unknown("fields", resource, name, valid, segments))
}

fn prop_for(
    field: &'static Field,
    rest: &[&str],
    viewer: &Viewer,
    whole: &[&str],
) -> ApiResult<Prop> {
    let Some(first) = rest.first() else {
        return Ok(Prop::Whole);
    };
    let sub = field
        .subfields
        .iter()
        .find(|s| s.name == *first && viewer.sees_field(s))
        .ok_or_else(|| {
            let valid: Vec<&str> = field
                .subfields
                .iter()
                .filter(|s| viewer.sees_field(s))
                .map(|s| s.name)
                .collect();
            let mut error = ApiError::unknown_field(
                &format!(
                    "In fields item '{}', '{first}' is not a property of {}: the name",
                    whole.join("."),
                    field.path
                ),
                first,
                valid,
            );
            error.field = Some(whole.join("."));
            error
        })?;
    let inner = prop_for(sub, &rest[1..], viewer, whole)?;
    Ok(Prop::Part(BTreeMap::from([(sub.name, inner)])))
}

fn unknown(
    parameter: &str,
    resource: &'static Resource,
    name: &str,
    valid: Vec<&'static str>,
    segments: &[&str],
) -> ApiError {
    let item = segments.join(".");
    let mut error = ApiError::unknown_field(
        &format!(
            "In {parameter} item '{item}', '{name}' is not a field or relation of {}: the name",
            resource.name
        ),
        name,
        valid,
    );
    error.field = Some(item);
    error
}

/// Removes what an `exclude` item names; `@` matches any run of characters in a name.
fn exclude_item(
    node: &mut Node,
    resource: &'static Resource,
    segments: &[&str],
    viewer: &Viewer,
    whole: &[&str],
) -> ApiResult<()> {
    let name = segments[0];
    let pattern = Pattern::over_names(name);
    let matches = |candidate: &str| match &pattern {
        Some(p) => p.matches(candidate),
        None => candidate == name,
    };
    // A name exists if the caller may name it, or if it is shown (a relation the caller may not
    // traverse still shows as a reference, and may be excluded).
    let exists = visible_names(resource, viewer).into_iter().any(&matches)
        || node.rels.keys().any(|name| matches(name));
    if pattern.is_none() && !exists {
        return Err(unknown(
            "exclude",
            resource,
            name,
            visible_names(resource, viewer),
            whole,
        ));
    }
    let last = segments.len() == 1;
    let mandatory = &resource.mandatory;
    let field_names: Vec<&'static str> =
        node.props.keys().copied().filter(|n| matches(n)).collect();
    for field_name in field_names {
        if last {
            if !mandatory.contains(&field_name) {
                node.props.remove(field_name);
            }
            continue;
        }
        let field = resource
            .field_named(field_name)
            .expect("selected fields exist");
        if field.ty != FieldType::Object {
            continue;
        }
        let prop = node.props.get_mut(field_name).expect("listed above");
        if exclude_in_object(prop, field, &segments[1..], viewer, whole)? {
            node.props.remove(field_name);
        }
    }
    let relation_names: Vec<&'static str> =
        node.rels.keys().copied().filter(|n| matches(n)).collect();
    for relation_name in relation_names {
        if last {
            node.rels.remove(relation_name);
            continue;
        }
        let relation = resource
            .relation(relation_name)
            .expect("selected relations exist");
        if let Some(Rel::Expanded(sub)) = node.rels.get_mut(relation_name) {
            exclude_item(
                sub,
                catalog().target(relation),
                &segments[1..],
                viewer,
                whole,
            )?;
        }
    }
    Ok(())
}

/// Removes subfields of an object; returns whether nothing of the object is left.
fn exclude_in_object(
    prop: &mut Prop,
    field: &'static Field,
    segments: &[&str],
    viewer: &Viewer,
    whole: &[&str],
) -> ApiResult<bool> {
    let name = segments[0];
    let pattern = Pattern::over_names(name);
    let matches = |candidate: &str| match &pattern {
        Some(p) => p.matches(candidate),
        None => candidate == name,
    };
    let visible: Vec<&'static Field> = field
        .subfields
        .iter()
        .filter(|s| viewer.sees_field(s))
        .collect();
    if pattern.is_none() && !visible.iter().any(|s| s.name == name) {
        let mut error = ApiError::unknown_field(
            &format!(
                "In exclude item '{}', '{name}' is not a property of {}: the name",
                whole.join("."),
                field.path
            ),
            name,
            visible.iter().map(|s| s.name),
        );
        error.field = Some(whole.join("."));
        return Err(error);
    }
    if let Prop::Whole = prop {
        *prop = Prop::Part(visible.iter().map(|s| (s.name, Prop::Whole)).collect());
    }
    let Prop::Part(parts) = prop else {
        unreachable!()
    };
    let names: Vec<&'static str> = parts.keys().copied().filter(|n| matches(n)).collect();
    for sub_name in names {
        if segments.len() == 1 {
            parts.remove(sub_name);
        } else {
            let sub = field.subfield(sub_name).expect("selected subfields exist");
            if sub.ty == FieldType::Object {
                let inner = parts.get_mut(sub_name).expect("listed above");
                if exclude_in_object(inner, sub, &segments[1..], viewer, whole)? {
                    parts.remove(sub_name);
                }
            }
        }
    }
    Ok(parts.is_empty())
}

fn to_selection(resource: &'static Resource, node: &Node, viewer: &Viewer) -> Selection {
    let mut fields = Vec::new();
    for field in &resource.fields {
        let prop = match node.props.get(field.name) {
            Some(prop) => prop.clone(),
            None if resource.mandatory.contains(&field.name) => Prop::Whole,
            None => continue,
        };
        if let Some(selected) = to_selected_field(field, &prop, viewer) {
            fields.push(selected);
        }
    }
    let relations = resource
        .relations
        .iter()
        .filter_map(|relation| {
            let rel = node.rels.get(relation.name)?;
            Some(SelectedRelation {
                relation,
                expanded: match rel {
                    Rel::Key => None,
                    Rel::Expanded(sub) => {
                        Some(to_selection(catalog().target(relation), sub, viewer))
                    }
                },
            })
        })
        .collect();
    Selection {
        resource,
        fields,
        relations,
    }
}

/// A whole object becomes the explicit list of the subfields the caller may see, so that later
/// stages never show a restricted subfield by showing "all" of an object.
fn to_selected_field(field: &'static Field, prop: &Prop, viewer: &Viewer) -> Option<SelectedField> {
    match prop {
        Prop::Whole if field.ty != FieldType::Object => Some(SelectedField {
            field,
            subfields: None,
        }),
        Prop::Whole => {
            let subfields: Vec<SelectedField> = field
                .subfields
                .iter()
                .filter(|sub| viewer.sees_field(sub))
                .filter_map(|sub| to_selected_field(sub, &Prop::Whole, viewer))
                .collect();
            (!subfields.is_empty()).then_some(SelectedField {
                field,
                subfields: Some(subfields),
            })
        }
        Prop::Part(parts) => {
            let subfields: Vec<SelectedField> = field
                .subfields
                .iter()
                .filter_map(|sub| to_selected_field(sub, parts.get(sub.name)?, viewer))
                .collect();
            (!subfields.is_empty()).then_some(SelectedField {
                field,
                subfields: Some(subfields),
            })
        }
    }
}

/// Builds the selection for `fields` (absent: the template) and `exclude`.
pub fn select(
    resource: &'static Resource,
    fields: Option<&[String]>,
    exclude: &[String],
    viewer: &Viewer,
) -> ApiResult<Selection> {
    let template = template_node(resource, viewer)?;
    let mut node = match fields {
        None => template.clone(),
        Some(items) => {
            let mut node = Node::default();
            for item in items {
                let segments: Vec<&str> = item.split('.').collect();
                if segments.iter().any(|s| s.is_empty()) {
                    return Err(ApiError::new(
                        Code::InvalidParameter,
                        format!("fields item '{item}' has an empty name."),
                    )
                    .with_field("fields"));
                }
                add_item(&mut node, resource, &segments, Some(&template), viewer, 0)?;
            }
            node
        }
    };
    for item in exclude {
        let segments: Vec<&str> = item.split('.').collect();
        if segments.iter().any(|s| s.is_empty()) {
            return Err(ApiError::new(
                Code::InvalidParameter,
                format!("exclude item '{item}' has an empty name."),
            )
            .with_field("exclude"));
        }
        exclude_item(&mut node, resource, &segments, viewer, &segments)?;
    }
    Ok(to_selection(resource, &node, viewer))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(selection: &Selection) -> Vec<String> {
        let mut out: Vec<String> = selection
            .fields
            .iter()
            .map(|f| f.field.name.to_string())
            .collect();
        for relation in &selection.relations {
            match &relation.expanded {
                None => out.push(format!("{}=key", relation.relation.name)),
                Some(sub) => out.push(format!(
                    "{}{{{}}}",
                    relation.relation.name,
                    names(sub).join(",")
                )),
            }
        }
        out
    }

    fn resource(name: &str) -> &'static Resource {
        catalog().resource(name).unwrap()
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn stock_template_expands_variant_product_brand_and_warehouse() {
        let s = select(resource("stock"), None, &[], &Viewer::admin()).unwrap();
        let shown = names(&s).join(" ");
        assert!(
            shown.contains(
                "stock_warehouse{id,fk_company,code,name,detail,updatedDate,warehouse_company=key}"
            ),
            "{shown}"
        );
        assert!(shown.contains("stock_variant{id,fk_product,"), "{shown}");
        assert!(shown.contains("variant_product{id,fk_brand,"), "{shown}");
        assert!(
            shown.contains(
                "product_brand{id,fk_company,name,detail,code,updatedDate,brand_company=key}"
            ),
            "{shown}"
        );
        assert!(
            !shown.contains("product_variant"),
            "to-many relations are not in the default node"
        );
    }

    #[test]
    fn order_template_has_items_with_a_partial_variant() {
        let s = select(resource("order"), None, &[], &Viewer::admin()).unwrap();
        let shown = names(&s).join(" ");
        assert!(shown.contains("order_brandStore{id,fk_brand,fk_store,fk_warehouse,detail,updatedDate,brandStore_brand=key,brandStore_store=key,brandStore_warehouse=key}"), "{shown}");
        assert!(shown.contains("orderItem_order=key"), "{shown}");
        assert!(
            shown.contains(
                "orderItem_variant{id,barcode,colour,size,vatable,variant_product{id,title}}"
            ),
            "{shown}"
        );
        assert!(shown.contains("order_warehouse=key"), "{shown}");
    }

    #[test]
    fn fields_pick_properties_and_sub_selections() {
        let s = select(
            resource("stock"),
            Some(&strings(&["inStock", "stock_variant.barcode"])),
            &[],
            &Viewer::admin(),
        )
        .unwrap();
        assert_eq!(
            names(&s),
            vec!["id", "inStock", "stock_variant{id,barcode}"]
        );
        let s = select(
            resource("stock"),
            Some(&strings(&["stock_variant"])),
            &[],
            &Viewer::admin(),
        )
        .unwrap();
        assert!(
            names(&s)[1].contains("variant_product{id,fk_brand"),
            "a relation named alone expands as the template shows it"
        );
    }

    #[test]
    fn star_adds_to_the_template() {
        let s = select(
            resource("file"),
            Some(&strings(&["*", "file_brand.brand_company"])),
            &[],
            &Viewer::admin(),
        )
        .unwrap();
        let shown = names(&s).join(" ");
        assert!(shown.contains("file_brand{id,fk_company,name,detail,code,updatedDate,brand_company{id,name,code,fk_sponsor,detail,createdDate,updatedDate,company_sponsor=key}}"), "{shown}");
        assert!(shown.contains("file_user{"), "{shown}");
    }

    #[test]
    fn object_sub_selection_and_exclusion() {
        let s = select(
            resource("order"),
            Some(&strings(&["detail.net", "detail.vat"])),
            &[],
            &Viewer::admin(),
        )
        .unwrap();
        let detail = &s.fields[1];
        let subs: Vec<_> = detail
            .subfields
            .as_ref()
            .unwrap()
            .iter()
            .map(|f| f.field.name)
            .collect();
        assert_eq!(subs, vec!["net", "vat"]);
        let s = select(
            resource("order"),
            Some(&strings(&["detail"])),
            &strings(&["detail.net", "detail.ship@"]),
            &Viewer::admin(),
        )
        .unwrap();
        let subs: Vec<_> = s.fields[1]
            .subfields
            .as_ref()
            .unwrap()
            .iter()
            .map(|f| f.field.name)
            .collect();
        assert_eq!(
            subs,
            vec![
                "hostCarrier",
                "hostStatus",
                "customerMessage",
                "gross",
                "vat"
            ]
        );
    }

    #[test]
    fn exclude_removes_with_wildcards_but_keeps_mandatory_fields() {
        let s = select(
            resource("file"),
            None,
            &strings(&["file_@", "id", "detail"]),
            &Viewer::admin(),
        )
        .unwrap();
        assert_eq!(
            names(&s),
            vec![
                "id",
                "fk_brand",
                "fk_user",
                "fileType",
                "fileName",
                "createdDate",
                "status",
                "updatedDate"
            ]
        );
        let s = select(
            resource("stock"),
            None,
            &strings(&["stock_variant.variant_product.product_brand"]),
            &Viewer::admin(),
        )
        .unwrap();
        assert!(!names(&s).join(" ").contains("product_brand"));
    }

    #[test]
    fn unknown_names_are_rejected_in_fields_and_exclude() {
        let admin = Viewer::admin();
        for (fields, exclude) in [
            (Some(strings(&["nope"])), vec![]),
            (Some(strings(&["stock_variant.nope"])), vec![]),
            (Some(strings(&["stock_variant.detail.nope"])), vec![]),
            (None, strings(&["nope"])),
            (None, strings(&["stock_variant.nope"])),
        ] {
            let error = select(resource("stock"), fields.as_deref(), &exclude, &admin).unwrap_err();
            assert_eq!(error.code, Code::UnknownField, "{fields:?} {exclude:?}");
        }
        assert!(
            select(resource("stock"), None, &strings(&["zz@"]), &admin).is_ok(),
            "a wildcard may match nothing"
        );
    }

    #[test]
    fn signatures_tell_selections_apart() {
        let admin = Viewer::admin();
        let a = select(resource("stock"), Some(&strings(&["inStock"])), &[], &admin).unwrap();
        let b = select(resource("stock"), Some(&strings(&["demand"])), &[], &admin).unwrap();
        let c = select(resource("stock"), Some(&strings(&["inStock"])), &[], &admin).unwrap();
        assert_ne!(a.signature(), b.signature());
        assert_eq!(a.signature(), c.signature());
        let nested = select(resource("stock"), None, &[], &admin)
            .unwrap()
            .signature();
        assert!(
            nested.contains("stock_variantvariant(id,fk_product,"),
            "{nested}"
        );
    }

    #[test]
    fn restricted_fields_vanish_from_templates() {
        let warehouse = Viewer::of_type(brandhub_catalog::UserType::Warehouse);
        let s = select(resource("orderItem"), None, &[], &warehouse).unwrap();
        assert!(!names(&s).contains(&"itemPrice".to_string()));
        assert_eq!(
            select(
                resource("orderItem"),
                Some(&strings(&["lineNet"])),
                &[],
                &warehouse
            )
            .unwrap_err()
            .code,
            Code::UnknownField
        );
    }
}
