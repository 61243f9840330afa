//! An independent reference of the scope rules (docs/API.md, "Scope: who sees what"), written from the contract text
//! in plain Rust over the demo records in memory. It shares nothing with the server but the
//! catalog's field lists and relations (names, targets, foreign keys) and the record layout:
//! the scope declarations of the catalog and the planner are deliberately not used, since this
//! is what checks them.

use brandhub_catalog::{Cell, Layout, Record, RelationKind, Resource, UserType, catalog};
use brandhub_demo::Chunk;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Every resource the contract names.
pub const RESOURCES: [&str; 16] = [
    "company",
    "brand",
    "warehouse",
    "host",
    "store",
    "brandStore",
    "product",
    "variant",
    "stock",
    "order",
    "orderItem",
    "user",
    "file",
    "price",
    "image",
    "apiKey",
];

/// The records of one resource.
pub struct Table {
    pub resource: &'static Resource,
    pub layout: Layout,
    pub records: Vec<Record>,
    pub by_id: HashMap<String, usize>,
}

/// Everything in the database, in memory: the demo records plus what a test added.
pub struct World {
    tables: HashMap<&'static str, Table>,
}

fn normal_id(text: &str) -> Option<String> {
    let upper = text.to_ascii_uppercase();
    (!upper.is_empty() && upper.bytes().any(|b| b != b'0')).then_some(upper)
}

impl World {
    /// The demo records (every resource of the catalog gets a table, empty if need be).
    pub fn new(chunks: &[Chunk]) -> World {
        let mut tables = HashMap::new();
        for resource in catalog().resources() {
            tables.insert(
                resource.name,
                Table {
                    resource,
                    layout: Layout::of(resource),
                    records: Vec::new(),
                    by_id: HashMap::new(),
                },
            );
        }
        let mut world = World { tables };
        for chunk in chunks {
            for record in &chunk.records {
                world.add(chunk.resource.name, record.clone());
            }
        }
        world
    }

    /// Adds one record (the test's own users and keys).
    pub fn add(&mut self, resource: &str, record: Record) {
        let table = self
            .tables
            .get_mut(resource)
            .unwrap_or_else(|| panic!("no resource {resource}"));
        table
            .by_id
            .insert(record.id().to_ascii_uppercase(), table.records.len());
        table.records.push(record);
    }

    pub fn table(&self, resource: &str) -> &Table {
        &self.tables[resource]
    }

    /// The record of a resource with this id (any case).
    pub fn get(&self, resource: &str, id: &str) -> Option<&Record> {
        let table = self.table(resource);
        table
            .by_id
            .get(&id.to_ascii_uppercase())
            .map(|&i| &table.records[i])
    }

    /// Every id of a resource, sorted.
    pub fn all_ids(&self, resource: &str) -> BTreeSet<String> {
        self.table(resource)
            .records
            .iter()
            .map(|r| r.id().to_ascii_uppercase())
            .collect()
    }

    /// The id stored in a foreign key (or id field) of a record; `None` when unset (null, empty
    /// or 32 zeros).
    pub fn id_at(&self, resource: &str, record: &Record, path: &str) -> Option<String> {
        let table = self.table(resource);
        match &record.cells[table.layout.cell(path)] {
            Cell::Text(text) => normal_id(text),
            _ => None,
        }
    }

    /// A text cell of a record ("" when unset).
    pub fn text_at<'a>(&self, resource: &str, record: &'a Record, path: &str) -> &'a str {
        let table = self.table(resource);
        record.cells[table.layout.cell(path)]
            .as_text()
            .unwrap_or_default()
    }

    /// The elements of a list field (ids upper-cased).
    pub fn ids_in_list(&self, resource: &str, record: &Record, path: &str) -> Vec<String> {
        let table = self.table(resource);
        record.lists[table.layout.list(path)]
            .iter()
            .filter_map(|id| normal_id(id))
            .collect()
    }

    /// The ids of the records of `resource` whose foreign key `fk` is one of `targets`.
    pub fn ids_where_in(
        &self,
        resource: &str,
        fk: &str,
        targets: &BTreeSet<String>,
    ) -> BTreeSet<String> {
        self.table(resource)
            .records
            .iter()
            .filter(|r| {
                self.id_at(resource, r, fk)
                    .is_some_and(|id| targets.contains(&id))
            })
            .map(|r| r.id().to_ascii_uppercase())
            .collect()
    }

    /// The values of foreign key `fk` over the records of `resource` with these ids.
    pub fn fk_values(&self, resource: &str, ids: &BTreeSet<String>, fk: &str) -> BTreeSet<String> {
        ids.iter()
            .filter_map(|id| self.get(resource, id))
            .filter_map(|r| self.id_at(resource, r, fk))
            .collect()
    }

    /// The to-one relation `relation` of a record: the related id, if any.
    pub fn related_one(&self, resource: &str, record: &Record, relation: &str) -> Option<String> {
        let rel = catalog()
            .resource(resource)
            .and_then(|r| r.relation(relation))
            .unwrap_or_else(|| panic!("no relation {resource}.{relation}"));
        match rel.kind {
            RelationKind::ToOne { fk } => self.id_at(resource, record, fk),
            RelationKind::ToMany { .. } => panic!("{relation} is to-many"),
        }
    }

    /// The ids a relation leads to from a record (zero or one for a to-one relation).
    pub fn related(&self, resource: &str, record: &Record, relation: &str) -> BTreeSet<String> {
        let rel = catalog()
            .resource(resource)
            .and_then(|r| r.relation(relation))
            .unwrap_or_else(|| panic!("no relation {resource}.{relation}"));
        match rel.kind {
            RelationKind::ToOne { fk } => self.id_at(resource, record, fk).into_iter().collect(),
            RelationKind::ToMany { target_fk } => {
                let id: BTreeSet<String> = [record.id().to_ascii_uppercase()].into();
                self.ids_where_in(rel.target, target_fk, &id)
            }
        }
    }
}

/// A caller as the scope rules see it: its type and the ids its scope is anchored at.
#[derive(Debug, Clone)]
pub struct Viewer {
    pub user_id: String,
    pub user_type: UserType,
    /// C: for a company user its `fk_company` and `detail.companies`; for a sponsor user the
    /// sponsor company and every company whose `fk_sponsor` is it; empty otherwise.
    pub companies: BTreeSet<String>,
    pub host: Option<String>,
    pub warehouse: Option<String>,
}

impl Viewer {
    /// The viewer of a user of the world.
    pub fn of(world: &World, user_id: &str) -> Viewer {
        let user = world
            .get("user", user_id)
            .unwrap_or_else(|| panic!("no user {user_id}"));
        let type_text = world.text_at("user", user, "type");
        let user_type =
            UserType::parse(type_text).unwrap_or_else(|| panic!("user type {type_text}"));
        let mut companies = BTreeSet::new();
        match user_type {
            UserType::Company => {
                companies.extend(world.id_at("user", user, "fk_company"));
                companies.extend(world.ids_in_list("user", user, "detail.companies"));
            }
            UserType::Sponsor => {
                if let Some(sponsor) = world.id_at("user", user, "fk_sponsor") {
                    let sponsor_set: BTreeSet<String> = [sponsor.clone()].into();
                    companies.extend(world.ids_where_in("company", "fk_sponsor", &sponsor_set));
                    companies.insert(sponsor);
                }
            }
            _ => {}
        }
        Viewer {
            user_id: user_id.to_ascii_uppercase(),
            user_type,
            companies,
            host: world.id_at("user", user, "fk_host"),
            warehouse: world.id_at("user", user, "fk_warehouse"),
        }
    }

    /// A short description for failure messages.
    pub fn describe(&self) -> String {
        match self.user_type {
            UserType::Admin => "admin".to_string(),
            UserType::Company | UserType::Sponsor => format!(
                "{} with companies {:?}",
                self.user_type.as_str(),
                self.companies
            ),
            UserType::Host => format!("host of host {:?}", self.host),
            UserType::Warehouse => format!("warehouse user of warehouse {:?}", self.warehouse),
        }
    }
}

/// The ids of every resource that a viewer may see.
#[derive(Debug, Clone)]
pub struct Visible {
    pub sets: BTreeMap<&'static str, BTreeSet<String>>,
}

impl Visible {
    pub fn of(&self, resource: &str) -> &BTreeSet<String> {
        &self.sets[resource]
    }

    pub fn contains(&self, resource: &str, id: &str) -> bool {
        self.sets[resource].contains(&id.to_ascii_uppercase())
    }
}

fn single(id: &Option<String>) -> BTreeSet<String> {
    id.iter().cloned().collect()
}

/// docs/API.md, "Scope: who sees what", rule by rule.
pub fn visible(world: &World, viewer: &Viewer) -> Visible {
    let mut sets: BTreeMap<&'static str, BTreeSet<String>> =
        RESOURCES.iter().map(|r| (*r, BTreeSet::new())).collect();
    let own: BTreeSet<String> = [viewer.user_id.clone()].into();
    match viewer.user_type {
        UserType::Admin => {
            for resource in RESOURCES {
                sets.insert(resource, world.all_ids(resource));
            }
            return Visible { sets };
        }
        UserType::Company | UserType::Sponsor => {
            let c = &viewer.companies;
            let companies: BTreeSet<String> =
                world.all_ids("company").intersection(c).cloned().collect();
            let brands = world.ids_where_in("brand", "fk_company", c);
            let warehouses = world.ids_where_in("warehouse", "fk_company", c);
            let products = world.ids_where_in("product", "fk_brand", &brands);
            let variants = world.ids_where_in("variant", "fk_product", &products);
            let prices = world.ids_where_in("price", "fk_variant", &variants);
            let images = world.ids_where_in("image", "fk_product", &products);
            let files = world.ids_where_in("file", "fk_brand", &brands);
            let stock = world.ids_where_in("stock", "fk_variant", &variants);
            let brand_stores = world.ids_where_in("brandStore", "fk_brand", &brands);
            let stores = world.fk_values("brandStore", &brand_stores, "fk_store");
            let hosts = world.fk_values("store", &stores, "fk_host");
            let orders = world.ids_where_in("order", "fk_brandStore", &brand_stores);
            let items = world.ids_where_in("orderItem", "fk_order", &orders);
            let users: BTreeSet<String> = world
                .table("user")
                .records
                .iter()
                .filter(|u| {
                    world
                        .id_at("user", u, "fk_company")
                        .is_some_and(|id| c.contains(&id))
                        || world
                            .ids_in_list("user", u, "detail.companies")
                            .iter()
                            .any(|id| c.contains(id))
                })
                .map(|u| u.id().to_ascii_uppercase())
                .chain(own.iter().cloned())
                .collect();
            sets.insert("company", companies);
            sets.insert("brand", brands);
            sets.insert("warehouse", warehouses);
            sets.insert("product", products);
            sets.insert("variant", variants);
            sets.insert("price", prices);
            sets.insert("image", images);
            sets.insert("file", files);
            sets.insert("stock", stock);
            sets.insert("brandStore", brand_stores);
            sets.insert("store", stores);
            sets.insert("host", hosts);
            sets.insert("order", orders);
            sets.insert("orderItem", items);
            sets.insert("user", users);
        }
        UserType::Host => {
            let host = single(&viewer.host);
            let stores = world.ids_where_in("store", "fk_host", &host);
            let brand_stores = world.ids_where_in("brandStore", "fk_store", &stores);
            let orders = world.ids_where_in("order", "fk_brandStore", &brand_stores);
            let items = world.ids_where_in("orderItem", "fk_order", &orders);
            let brands = world.fk_values("brandStore", &brand_stores, "fk_brand");
            let products = world.ids_where_in("product", "fk_brand", &brands);
            let variants = world.ids_where_in("variant", "fk_product", &products);
            let images = world.ids_where_in("image", "fk_product", &products);
            let store_warehouses = world.fk_values("brandStore", &brand_stores, "fk_warehouse");
            let stock: BTreeSet<String> = world
                .ids_where_in("stock", "fk_variant", &variants)
                .intersection(&world.ids_where_in("stock", "fk_warehouse", &store_warehouses))
                .cloned()
                .collect();
            let prices = world.ids_where_in("price", "fk_host", &host);
            sets.insert(
                "host",
                world.all_ids("host").intersection(&host).cloned().collect(),
            );
            sets.insert("store", stores);
            sets.insert("brandStore", brand_stores);
            sets.insert("order", orders);
            sets.insert("orderItem", items);
            sets.insert("brand", brands);
            sets.insert("product", products);
            sets.insert("variant", variants);
            sets.insert("image", images);
            sets.insert("stock", stock);
            sets.insert("price", prices);
            sets.insert("user", own.clone());
        }
        UserType::Warehouse => {
            let warehouse = single(&viewer.warehouse);
            let stock = world.ids_where_in("stock", "fk_warehouse", &warehouse);
            let variants = world.fk_values("stock", &stock, "fk_variant");
            let products = world.fk_values("variant", &variants, "fk_product");
            let brands = world.fk_values("product", &products, "fk_brand");
            let orders = world.ids_where_in("order", "fk_warehouse", &warehouse);
            let items = world.ids_where_in("orderItem", "fk_order", &orders);
            let brand_stores = world.ids_where_in("brandStore", "fk_warehouse", &warehouse);
            let warehouse_users = world.ids_where_in("user", "fk_warehouse", &warehouse);
            let files = world.ids_where_in("file", "fk_user", &warehouse_users);
            sets.insert(
                "warehouse",
                world
                    .all_ids("warehouse")
                    .intersection(&warehouse)
                    .cloned()
                    .collect(),
            );
            sets.insert("stock", stock);
            sets.insert("variant", variants);
            sets.insert("product", products);
            sets.insert("brand", brands);
            sets.insert("order", orders);
            sets.insert("orderItem", items);
            sets.insert("brandStore", brand_stores);
            sets.insert("file", files);
            sets.insert("user", own.clone());
        }
    }
    // Everyone sees their own keys (admins all, above); company and sponsor users also the
    // keys of the users whose `fk_company` is one of their companies (they may write those,
    // docs/API.md, "Writes: users and keys"); nobody else's.
    let mut key_owners = own.clone();
    if matches!(viewer.user_type, UserType::Company | UserType::Sponsor) {
        key_owners.extend(world.ids_where_in("user", "fk_company", &viewer.companies));
    }
    sets.insert(
        "apiKey",
        world.ids_where_in("apiKey", "fk_user", &key_owners),
    );
    Visible { sets }
}

/// The resources a user type sees nothing of, whatever its anchors: relations into them do
/// not exist for it (docs/API.md, "Scope: who sees what").
pub fn sees_nothing_of(user_type: UserType) -> &'static [&'static str] {
    match user_type {
        UserType::Host => &["file", "company", "warehouse"],
        UserType::Warehouse => &["price", "host", "store", "company", "image"],
        UserType::Admin | UserType::Company | UserType::Sponsor => &[],
    }
}

/// The restricted properties of a user type: (resource, path inside the resource).
pub fn restricted_properties(user_type: UserType) -> &'static [(&'static str, &'static str)] {
    match user_type {
        UserType::Warehouse => &[
            ("order", "detail.net"),
            ("order", "detail.gross"),
            ("order", "detail.vat"),
            ("order", "detail.shippingGross"),
            ("order", "detail.shippingTax"),
            ("orderItem", "itemPrice"),
            ("orderItem", "lineNet"),
            ("orderItem", "lineTax"),
            ("orderItem", "lineGross"),
        ],
        UserType::Host => &[
            // product.detail has only importFile, so the whole object does not exist.
            ("product", "detail"),
            ("variant", "detail.importFile"),
            ("price", "fk_file"),
            ("image", "fk_file"),
            ("brandStore", "detail.adjustType"),
            ("brandStore", "detail.adjustValue"),
        ],
        UserType::Admin | UserType::Company | UserType::Sponsor => &[],
    }
}

/// Whether a property path inside a resource (no relations) is restricted for a user type:
/// it or an object it lies in is listed.
pub fn is_restricted(user_type: UserType, resource: &str, path: &str) -> bool {
    restricted_properties(user_type)
        .iter()
        .any(|(r, p)| *r == resource && (path == *p || path.starts_with(&format!("{p}."))))
}

/// Whether a relation of a resource does not exist for a user type: it leads into a resource
/// the type sees nothing of, or its foreign key is a restricted property.
pub fn relation_hidden(user_type: UserType, resource: &Resource, relation: &str) -> bool {
    let Some(rel) = resource.relation(relation) else {
        return false;
    };
    if sees_nothing_of(user_type).contains(&rel.target) {
        return true;
    }
    match rel.kind {
        RelationKind::ToOne { fk } => is_restricted(user_type, resource.name, fk),
        RelationKind::ToMany { .. } => false,
    }
}

/// Whether a dotted path (through relations, then a property) names something that does not
/// exist for the user type. Panics on a path that does not exist for anyone (a test bug).
pub fn path_unknown_for(user_type: UserType, resource: &str, path: &str) -> bool {
    let mut current = catalog().resource(resource).expect("a resource");
    let segments: Vec<&str> = path.split('.').collect();
    for (i, segment) in segments.iter().enumerate() {
        if let Some(rel) = current.relation(segment) {
            if relation_hidden(user_type, current, segment) {
                return true;
            }
            current = catalog().target(rel);
            continue;
        }
        let rest = segments[i..].join(".");
        assert!(
            current.field_at(&rest).is_some(),
            "{path} of {resource} is not a path"
        );
        return is_restricted(user_type, current.name, &rest);
    }
    false
}

/// A filter path through relations to an id field: `order_orderItem.fk_variant`,
/// `stock_variant.variant_product.fk_brand`.
#[derive(Debug, Clone)]
pub struct RelationPath {
    pub resource: &'static str,
    pub text: String,
    /// (owner resource, relation name) per hop.
    pub hops: Vec<(&'static str, &'static str)>,
    /// The resource the field belongs to and its path there.
    pub owner: &'static str,
    pub field: String,
    pub through_many: bool,
}

/// Every path from a resource through one or two relations (to-many only as the first hop)
/// to a stored id field.
pub fn relation_paths() -> Vec<RelationPath> {
    fn id_fields(resource: &Resource) -> Vec<String> {
        resource
            .leaf_fields()
            .filter(|f| f.ty == brandhub_catalog::FieldType::Id && f.has_column() && !f.internal)
            .map(|f| f.path.clone())
            .collect()
    }
    let mut out = Vec::new();
    for name in RESOURCES {
        let resource = catalog().resource(name).expect("a resource");
        for first in resource.public_relations() {
            let t1 = catalog().target(first);
            let many = !first.is_to_one();
            for field in id_fields(t1) {
                out.push(RelationPath {
                    resource: resource.name,
                    text: format!("{}.{field}", first.name),
                    hops: vec![(resource.name, first.name)],
                    owner: t1.name,
                    field,
                    through_many: many,
                });
            }
            for second in t1.public_relations().filter(|r| r.is_to_one()) {
                let t2 = catalog().target(second);
                for field in id_fields(t2) {
                    out.push(RelationPath {
                        resource: resource.name,
                        text: format!("{}.{}.{field}", first.name, second.name),
                        hops: vec![(resource.name, first.name), (t1.name, second.name)],
                        owner: t2.name,
                        field,
                        through_many: many,
                    });
                }
            }
        }
    }
    out
}

/// What a filter path reaches on one branch from a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reached {
    /// A set id.
    Value(String),
    /// The field is unset, or a to-one relation on the way is missing.
    Unset,
    /// A to-one relation on the way leads to a record outside the caller's scope (which the
    /// caller sees as `{"__KEY": id}`: present, but with nothing to compare).
    Hidden,
}

/// How a filter treats a related record outside the caller's scope. The contract limits
/// every related entity to the scope; it does not say more, so two leak-free readings exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hidden {
    /// The data as it is, scope or not (what an admin gets; for others it would leak).
    Followed,
    /// A condition on a hidden to-one record never holds (`#` is its complement).
    AsUnknown,
}

/// What a relation path reaches from a record: one entry per branch. A to-many hop keeps only
/// related records in scope (unless `hidden` is `Followed`); a to-one hop to a record outside
/// the scope is `Hidden`.
pub fn reach(
    world: &World,
    scope: &Visible,
    hidden: Hidden,
    path: &RelationPath,
    record_id: &str,
) -> Vec<Reached> {
    let mut current: Vec<Reached> = vec![Reached::Value(record_id.to_ascii_uppercase())];
    for (owner, relation) in &path.hops {
        let rel = catalog()
            .resource(owner)
            .and_then(|r| r.relation(relation))
            .expect("a relation");
        let in_scope = |id: &String| hidden == Hidden::Followed || scope.contains(rel.target, id);
        let mut next = Vec::new();
        for branch in current {
            let Reached::Value(id) = branch else {
                next.push(branch);
                continue;
            };
            let record = world.get(owner, &id).expect("reached records exist");
            let related = world.related(owner, record, relation);
            if rel.is_to_one() {
                next.push(match related.into_iter().next() {
                    None => Reached::Unset,
                    Some(id) if in_scope(&id) => Reached::Value(id),
                    Some(_) => Reached::Hidden,
                });
            } else {
                next.extend(related.into_iter().filter(in_scope).map(Reached::Value));
            }
        }
        current = next;
    }
    current
        .into_iter()
        .map(|branch| match branch {
            Reached::Value(id) => {
                let record = world.get(path.owner, &id).expect("reached records exist");
                world
                    .id_at(path.owner, record, &path.field)
                    .map_or(Reached::Unset, Reached::Value)
            }
            other => other,
        })
        .collect()
}

/// The set values at a relation path from a record, following the data.
pub fn values_at(world: &World, path: &RelationPath, record_id: &str) -> Vec<String> {
    let everything = Visible {
        sets: BTreeMap::new(),
    };
    reach(world, &everything, Hidden::Followed, path, record_id)
        .into_iter()
        .filter_map(|r| match r {
            Reached::Value(v) => Some(v),
            _ => None,
        })
        .collect()
}

/// Whether `path = value` holds for a record (an id value; `None` is the empty value, which
/// matches an unset value or a missing related record). Through a to-many relation it holds
/// when any related record satisfies it.
pub fn filter_holds(
    world: &World,
    scope: &Visible,
    hidden: Hidden,
    path: &RelationPath,
    record_id: &str,
    value: Option<&str>,
) -> bool {
    let wanted = value.map(str::to_ascii_uppercase);
    reach(world, scope, hidden, path, record_id)
        .iter()
        .any(|r| match r {
            Reached::Value(v) => wanted.as_ref() == Some(v),
            Reached::Unset => wanted.is_none(),
            // docs/API.md: a related record outside scope satisfies no condition.
            Reached::Hidden => false,
        })
}
