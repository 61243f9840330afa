//! The resource catalog: the one place where brandhub says what its resources are. Parsing,
//! planning, SQL, the database schema, rendering, OpenAPI and the docs all read it; none of them
//! lists a resource's fields again.
//!
//! This crate is pure data with lookups; it does no I/O.

pub mod address;
mod check;
mod handle;
pub mod lifecycle;
pub mod model;
pub mod naming;
pub mod record;
mod resources;
pub mod words;

pub use handle::Res;
pub use model::{
    Anchor, Bound, BulkSet, Domain, Events, Field, FieldDefault, FieldType, Generated, IndexDef,
    ListStorage, NoneAs, Policy, Relation, RelationKind, Resource, Scope, ScopeTerm, Secret,
    SecretKept, UserType, WriteAction, Writes, grouped, is_insecure_loopback_url, lengths, limits,
    secure_url_problem, web_url_problem, webhook_url_problem,
};
pub use record::{Cell, Layout, Record};
pub use resources::{
    ADDRESS_PARTS, BATCH_EVENT, DELIVERY_STATUSES, DELIVERY_TYPES, DeliveryStatus, EVENT_TYPES,
    FILE_STATUSES, FILE_TYPES, FileStatus, MAX_BATCH_EVENTS, UPDATED_DATE, USER_STATUSES,
    file_paths,
};

/// What a price file's `detail.endDate` (and a price's precise end) holds when the price has no
/// end date: the contract's zero timestamp (docs/API.md, "Values").
pub const NO_END_DATE: &str = "0000-00-00T00:00:00.000Z";

use std::sync::LazyLock;

/// All resources, checked for consistency when first used.
#[derive(Debug)]
pub struct Catalog {
    resources: Vec<Resource>,
    /// The position in `resources` of each handle's declaration, by [`Res::ALL`] order.
    handles: Vec<usize>,
}

static CATALOG: LazyLock<Catalog> = LazyLock::new(|| {
    let resources = resources::declare();
    let handles = Res::ALL
        .iter()
        .map(|res| {
            resources
                .iter()
                .position(|r| r.name == res.name())
                .unwrap_or_else(|| panic!("the catalog declares no resource {res}"))
        })
        .collect();
    let catalog = Catalog { resources, handles };
    if let Err(problem) = catalog.check() {
        panic!("the resource catalog is inconsistent: {problem}");
    }
    catalog
});

/// The catalog of this build.
pub fn catalog() -> &'static Catalog {
    &CATALOG
}

impl Catalog {
    /// Every resource, in documentation order.
    pub fn resources(&self) -> &[Resource] {
        &self.resources
    }

    /// The declaration of a resource named by its handle.
    pub fn get(&self, res: Res) -> &Resource {
        &self.resources[self.handles[res.index()]]
    }

    /// The resource with this URL name: for names that arrive from outside (a request's
    /// path, a stored event type); code names resources by [`Res`] and [`Catalog::get`].
    pub fn resource(&self, name: &str) -> Option<&Resource> {
        self.resources.iter().find(|r| r.name == name)
    }

    /// The resource whose records an event type is about (`order.updated`: order; a file's
    /// events: file), to check that a subscriber may read it.
    pub fn event_resource(&self, event_type: &str) -> Option<&Resource> {
        let announced = |r: &&Resource| {
            r.events.is_some_and(|e| {
                e.created == event_type || e.updated == event_type || e.deleted == Some(event_type)
            })
        };
        self.resources.iter().find(announced).or_else(|| {
            FileStatus::ALL
                .iter()
                .any(|status| status.event() == Some(event_type))
                .then(|| self.resource("file"))
                .flatten()
        })
    }

    /// The resource a relation leads to.
    pub fn target(&self, relation: &Relation) -> &Resource {
        self.resource(relation.target)
            .expect("relation targets are checked when the catalog loads")
    }

    /// A path with every internal shortcut spelled out as the relations it stands for
    /// (`stock_scopeBrand.fk_company` → `stock_variant.variant_product.product_brand.fk_company`),
    /// for documentation: shortcuts are storage, not part of the API.
    pub fn spelled_out(&self, resource: &Resource, path: &str) -> String {
        let mut current = resource;
        let mut out: Vec<String> = Vec::new();
        for segment in path.split('.') {
            let Some(relation) = current.relation(segment) else {
                out.push(segment.to_string());
                continue;
            };
            let derived = current.fk_field(relation).and_then(|fk| fk.derived_from);
            match derived {
                Some(derived) => {
                    // `a.b.fk_x` names the relation fed by fk_x on the resource `a.b` reaches.
                    let (hops, fk) = derived.rsplit_once('.').unwrap_or(("", derived));
                    let mut inner = current;
                    for hop in hops.split('.').filter(|h| !h.is_empty()) {
                        out.push(hop.to_string());
                        inner = self.target(inner.relation(hop).expect("checked derived path"));
                    }
                    let fed = inner
                        .relations
                        .iter()
                        .find(|r| r.kind == RelationKind::ToOne { fk })
                        .expect("checked derived path");
                    out.push(fed.name.to_string());
                }
                None => out.push(segment.to_string()),
            }
            current = self.target(relation);
        }
        out.join(".")
    }

    /// The `fields` items that select what the display label of a record of `resource` shows
    /// (see [`Resource::label`]): its fields, and through each relation it names, what the
    /// label of the related record shows (`stock_variant.variant_product.title`).
    pub fn label_fields(&self, resource: &Resource) -> Vec<String> {
        let mut fields = Vec::new();
        for name in resource.label_parts().into_iter().flatten() {
            match resource.relation(name) {
                Some(relation) => fields.extend(
                    self.label_fields(self.target(relation))
                        .into_iter()
                        .map(|inner| format!("{name}.{inner}")),
                ),
                None => fields.push(name.to_string()),
            }
        }
        fields
    }

    /// The title of a relation: a to-one relation's is its foreign key's, a to-many
    /// relation's what the records it leads to are called.
    pub fn relation_title(&self, resource: &Resource, relation: &Relation) -> Option<words::Words> {
        match relation.kind {
            RelationKind::ToOne { fk } => words::field_title(resource.name, fk),
            RelationKind::ToMany { .. } => {
                Res::named(relation.target).map(|target| words::resource_names(target).many)
            }
        }
    }

    /// The URL names of all resources, for error messages.
    pub fn resource_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.resources.iter().map(|r| r.name)
    }
}

#[cfg(test)]
mod tests;
