//! Resolving dotted paths (`stock_variant.variant_product.title`, `detail.net`) against the
//! catalog, as the caller sees it. An unknown name is `unknown_field` here, with the valid names.

use super::{Predicate, Viewer};
use crate::limits::{PATH_HOPS, shorten};
use brandhub_catalog::{Field, FieldType, Relation, Resource, catalog};
use brandhub_problem::{ApiError, ApiResult, Code};

/// One step of a path through a relation.
#[derive(Debug, Clone, Copy)]
pub struct Hop {
    pub from: &'static Resource,
    pub relation: &'static Relation,
    pub to: &'static Resource,
}

/// A path resolved to a field, through zero or more relations.
#[derive(Debug, Clone)]
pub struct FieldPath {
    pub hops: Vec<Hop>,
    /// For each hop, the records of its target the caller may see: a condition through a
    /// relation only ever looks at related records in scope.
    pub hop_scopes: Vec<Predicate>,
    pub field: &'static Field,
    /// The path as the client wrote it, for messages.
    pub text: String,
}

impl FieldPath {
    /// The resource that owns the field.
    pub fn owner(&self, root: &'static Resource) -> &'static Resource {
        self.hops.last().map_or(root, |hop| hop.to)
    }
}

/// What a path may end at: the caller of [`resolve`] says which kinds of field it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathUse {
    /// A filter or condition: scalars and lists; through any relation.
    Filter,
    /// An order key: scalars only; through to-one relations only.
    Order,
}

/// The names a caller may use at one level of a path: visible fields and relations.
pub fn visible_names(resource: &'static Resource, viewer: &Viewer) -> Vec<&'static str> {
    resource
        .fields
        .iter()
        .filter(|f| viewer.sees_field(f))
        .map(|f| f.name)
        .chain(
            resource
                .relations
                .iter()
                .filter(|r| viewer.sees_relation(resource, r))
                .map(|r| r.name),
        )
        .collect()
}

/// Resolves `path` from `root` for `viewer`.
pub fn resolve(
    root: &'static Resource,
    path: &str,
    viewer: &Viewer,
    usage: PathUse,
) -> ApiResult<FieldPath> {
    let mut hops = Vec::new();
    let mut hop_scopes = Vec::new();
    let mut current = root;
    let segments: Vec<&str> = path.split('.').collect();
    let mut index = 0;
    while index < segments.len() {
        let segment = segments[index];
        if let Some(relation) = current
            .relation(segment)
            .filter(|r| viewer.sees_relation(current, r))
        {
            if usage == PathUse::Order && !relation.is_to_one() {
                return Err(ApiError::new(
                    Code::InvalidParameter,
                    format!("order_by '{path}' goes through {segment}, which holds many records; order by fields of to-one relations only."),
                )
                .with_field(path));
            }
            let to = catalog().target(relation);
            if hops.len() == PATH_HOPS.max {
                // Only worked out past the limit: every scope of every plan is resolved here.
                PATH_HOPS.check_plan(
                    &format!("The path '{}'", shorten(path)),
                    hops.len() + 1,
                    path,
                )?;
            }
            hops.push(Hop {
                from: current,
                relation,
                to,
            });
            hop_scopes.push(viewer.scope(to));
            current = to;
            index += 1;
            if index == segments.len() {
                return Err(ApiError::new(
                    Code::InvalidParameter,
                    format!("'{path}' is a relation; name one of its fields, such as {path}.id."),
                )
                .with_field(path));
            }
            continue;
        }
        let field = field_within(current, &segments[index..], path, viewer)?;
        check_use(field, path, usage)?;
        return Ok(FieldPath {
            hops,
            hop_scopes,
            field,
            text: path.to_string(),
        });
    }
    unreachable!("a path has at least one segment")
}

/// Resolves the rest of a path inside one resource: a field, or a subfield of an object.
fn field_within(
    resource: &'static Resource,
    segments: &[&str],
    path: &str,
    viewer: &Viewer,
) -> ApiResult<&'static Field> {
    let unknown = |segment: &str, valid: Vec<&'static str>| {
        let mut error = ApiError::unknown_field(
            &format!(
                "In '{path}', '{segment}' is not a field or relation of {}: the name",
                resource.name
            ),
            segment,
            valid,
        );
        error.field = Some(path.to_string());
        error
    };
    let first = segments[0];
    let mut field = resource
        .field_named(first)
        .filter(|f| viewer.sees_field(f))
        .ok_or_else(|| unknown(first, visible_names(resource, viewer)))?;
    for segment in &segments[1..] {
        if field.ty != FieldType::Object {
            return Err(unknown(segment, Vec::new()));
        }
        field = field
            .subfield(segment)
            .filter(|f| viewer.sees_field(f))
            .ok_or_else(|| {
                unknown(
                    segment,
                    field
                        .subfields
                        .iter()
                        .filter(|f| viewer.sees_field(f))
                        .map(|f| f.name)
                        .collect(),
                )
            })?;
    }
    Ok(field)
}

fn check_use(field: &Field, path: &str, usage: PathUse) -> ApiResult<()> {
    match field.ty {
        FieldType::Object => {
            let subfields: Vec<String> = field
                .subfields
                .iter()
                .map(|s| format!("{path}.{}", s.name))
                .collect();
            Err(ApiError::new(
                Code::InvalidParameter,
                format!(
                    "'{path}' is an object; name one of its properties: {}.",
                    subfields.join(", ")
                ),
            )
            .with_field(path))
        }
        FieldType::List if usage == PathUse::Order => Err(ApiError::new(
            Code::InvalidParameter,
            format!("'{path}' is an array and cannot order records."),
        )
        .with_field(path)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stock() -> &'static Resource {
        catalog().get(brandhub_catalog::Res::Stock)
    }

    #[test]
    fn paths_walk_relations_and_objects() {
        let viewer = Viewer::admin();
        let path = resolve(
            stock(),
            "stock_variant.variant_product.title",
            &viewer,
            PathUse::Filter,
        )
        .unwrap();
        assert_eq!(path.hops.len(), 2);
        assert_eq!(path.field.name, "title");
        assert_eq!(path.owner(stock()).name, "product");
        let detail = resolve(stock(), "stock_variant.detail.rrp", &viewer, PathUse::Order).unwrap();
        assert_eq!(detail.field.column, "detail_rrp");
    }

    #[test]
    fn unknown_names_list_the_valid_ones() {
        let error = resolve(
            stock(),
            "stock_variant.barcod",
            &Viewer::admin(),
            PathUse::Filter,
        )
        .unwrap_err();
        assert_eq!(error.code, Code::UnknownField);
        assert_eq!(error.field.as_deref(), Some("stock_variant.barcod"));
        assert!(error.detail.contains("barcode"), "{}", error.detail);
        assert!(
            error.detail.contains("Did you mean 'barcode'"),
            "{}",
            error.detail
        );
    }

    #[test]
    fn objects_and_relations_are_not_filter_targets() {
        let viewer = Viewer::admin();
        assert_eq!(
            resolve(stock(), "stock_variant", &viewer, PathUse::Filter)
                .unwrap_err()
                .code,
            Code::InvalidParameter
        );
        assert_eq!(
            resolve(stock(), "stock_variant.detail", &viewer, PathUse::Filter)
                .unwrap_err()
                .code,
            Code::InvalidParameter
        );
        let order = catalog().get(brandhub_catalog::Res::Order);
        assert_eq!(
            resolve(order, "order_orderItem.status", &viewer, PathUse::Order)
                .unwrap_err()
                .code,
            Code::InvalidParameter
        );
        assert!(resolve(order, "order_orderItem.status", &viewer, PathUse::Filter).is_ok());
    }

    #[test]
    fn restricted_fields_do_not_exist_for_the_restricted() {
        let order = catalog().get(brandhub_catalog::Res::Order);
        let warehouse = Viewer::of_type(brandhub_catalog::UserType::Warehouse);
        let error = resolve(order, "detail.net", &warehouse, PathUse::Filter).unwrap_err();
        assert_eq!(error.code, Code::UnknownField);
        assert!(!error.detail.contains("net,"));
        assert!(resolve(order, "detail.net", &Viewer::admin(), PathUse::Filter).is_ok());
    }
}
