//! The resource catalog: the one place where brandhub says what its resources are. Parsing,
//! planning, SQL, the database schema, rendering, OpenAPI and the docs all read it; none of them
//! lists a resource's fields again.
//!
//! This crate is pure data with lookups; it does no I/O.

pub mod address;
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

/// Defaults fit their fields, a revoking flag is a boolean, a secret is kept in internal
/// fields of the resource.
fn check_write_declarations(resource: &Resource) -> Result<(), String> {
    let fail = |what: String| Err(format!("{}: {what}", resource.name));
    for field in resource
        .fields
        .iter()
        .flat_map(|f| std::iter::once(f).chain(&f.subfields))
    {
        let fits = match field.default {
            None => true,
            Some(FieldDefault::Text(text)) => {
                field.ty == FieldType::Text
                    && field.domain.is_none_or(|d| d.problem(text).is_none())
            }
            Some(FieldDefault::Boolean(_)) => field.ty == FieldType::Boolean,
            Some(FieldDefault::Writer(_)) => field.ty == FieldType::Id,
            Some(FieldDefault::WriterKey) => field.ty == FieldType::Id && field.internal,
        };
        if !fits {
            return fail(format!("the default of {} does not fit it", field.path));
        }
        let numeric = matches!(field.ty, FieldType::Integer | FieldType::Number);
        if let Some(domain) = field.domain
            && domain.holds_numbers() != numeric
        {
            return fail(format!(
                "the domain of {} does not fit its type",
                field.path
            ));
        }
        if let Some((least, most)) = field.held {
            // A held count is an integer whose written values lie within what it is held to.
            let within = field
                .domain
                .and_then(|d| d.bounds())
                .is_some_and(|(l, m)| l >= least as f64 && m <= most as f64);
            if field.ty != FieldType::Integer || !within {
                return fail(format!(
                    "{} is held within {least}..{most}, which its type and domain must fit",
                    field.path
                ));
            }
        }
    }
    let writes = &resource.writes;
    if let Some(flag) = writes.revoked_by
        && resource
            .field_at(flag)
            .is_none_or(|f| f.ty != FieldType::Boolean)
    {
        return fail(format!("DELETE sets {flag}, not a boolean field"));
    }
    if let Some(secret) = writes.secret {
        let kept = match secret.kept {
            SecretKept::HashIn(field) | SecretKept::In(field) => field,
        };
        if resource
            .field_at(kept)
            .is_none_or(|f| !f.internal || f.ty != FieldType::Text)
        {
            return fail(format!(
                "its secret is kept in {kept}, not an internal text field"
            ));
        }
        if let Some(start) = secret.start_in
            && resource
                .field_at(start)
                .is_none_or(|f| f.ty != FieldType::Text)
        {
            return fail(format!(
                "its secret's start is kept in {start}, not a text field"
            ));
        }
        if let Some(used) = secret.used_in
            && resource
                .secret_use()
                .is_none_or(|f| f.ty != FieldType::Timestamp || !f.indexed)
        {
            return fail(format!(
                "its secret's use is kept in {used}, not an indexed timestamp field"
            ));
        }
    }
    Ok(())
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

    /// Every resource is called something, has a display label of fields and to-one
    /// relations (no relation leading back to where it started), and each field and relation
    /// a client sees has a title, each code its domain allows a word, and each amount of money
    /// with a currency a path to it.
    fn check_words(&self, resource: &Resource, depth: usize) -> Result<(), String> {
        let fail = |what: String| Err(format!("{}: {what}", resource.name));
        if depth > 4 {
            return fail("its display label leads through more than four relations".into());
        }
        if resource.label_parts().is_empty() {
            return fail("no display label (Resource::labelled)".into());
        }
        for name in resource.label_parts().into_iter().flatten() {
            if let Some(relation) = resource.public_relations().find(|r| r.name == name) {
                if !relation.is_to_one() {
                    return fail(format!("its label names the to-many relation {name}"));
                }
                self.check_words(self.target(relation), depth + 1)?;
            } else if resource
                .field_at(name)
                .is_none_or(|f| f.internal || f.ty == FieldType::Object)
            {
                return fail(format!("its label names {name}, not a field or relation"));
            }
        }
        if depth > 0 {
            return Ok(());
        }
        let mut fields: Vec<&Field> = Vec::new();
        let mut stack: Vec<&Field> = resource.fields.iter().collect();
        while let Some(field) = stack.pop() {
            if field.internal {
                continue;
            }
            fields.push(field);
            stack.extend(&field.subfields);
        }
        for field in fields {
            if words::field_title(resource.name, &field.path).is_none() {
                return fail(format!("no title for {} (words::field_title)", field.path));
            }
            for code in field.domain.and_then(|d| d.words()).unwrap_or_default() {
                if words::code_word(code).is_none() {
                    return fail(format!("no word for {code} (words::code_word)"));
                }
            }
            if let Some(path) = field.currency {
                self.check_template_path(resource, path)?;
            }
            if let Some(target) = field.refers_to
                && self.resource(target).is_none()
            {
                return fail(format!("{} refers to unknown {target}", field.path));
            }
        }
        for relation in resource.public_relations() {
            if self.relation_title(resource, relation).is_none() {
                return fail(format!("no title for {}", relation.name));
            }
        }
        Ok(())
    }

    /// The URL names of all resources, for error messages.
    pub fn resource_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.resources.iter().map(|r| r.name)
    }

    /// Checks what the type system cannot: names unique, relations and templates pointing at
    /// things that exist. Run once at start; a failure is a bug in `resources`.
    fn check(&self) -> Result<(), String> {
        let mut names = std::collections::HashSet::new();
        for resource in &self.resources {
            if !names.insert(resource.name) {
                return Err(format!("resource {} declared twice", resource.name));
            }
            if Res::named(resource.name).is_none() {
                return Err(format!("resource {} has no handle", resource.name));
            }
            let mut own = std::collections::HashSet::new();
            for field in &resource.fields {
                if !own.insert(field.name) {
                    return Err(format!("{}.{} declared twice", resource.name, field.name));
                }
            }
            for relation in &resource.relations {
                if !own.insert(relation.name) {
                    return Err(format!(
                        "{}.{} declared twice",
                        resource.name, relation.name
                    ));
                }
                let target = self.resource(relation.target).ok_or_else(|| {
                    format!("{} targets unknown {}", relation.name, relation.target)
                })?;
                match relation.kind {
                    RelationKind::ToOne { fk } => {
                        let field = resource
                            .field_named(fk)
                            .ok_or_else(|| format!("{} has no field {fk}", resource.name))?;
                        if field.ty != FieldType::Id {
                            return Err(format!("{}.{fk} is not an id", resource.name));
                        }
                    }
                    RelationKind::ToMany { target_fk } => {
                        let back = target.relations.iter().any(|r| {
                            r.target == resource.name
                                && r.kind == RelationKind::ToOne { fk: target_fk }
                        });
                        if !back {
                            return Err(format!(
                                "{}: {}.{target_fk} is not a relation back to {}",
                                relation.name, target.name, resource.name
                            ));
                        }
                    }
                }
            }
            for path in &resource.template {
                self.check_template_path(resource, path)?;
            }
            for (_, scope) in &resource.scopes {
                if let Scope::AnyOf(groups) = scope {
                    for term in groups.iter().flatten() {
                        self.check_scope_path(resource, term.path, term.anchor.value_type())?;
                    }
                }
            }
            for (_, _, rule) in &resource.authority {
                if let Scope::AnyOf(groups) = rule {
                    for term in groups.iter().flatten() {
                        self.check_authority_path(resource, term.path, term.anchor.value_type())?;
                    }
                }
            }
            for field in resource.fields.iter() {
                if let Some(path) = field.derived_from {
                    self.check_derived_path(resource, field, path)?;
                }
            }
            let writes = &resource.writes;
            for (path, field) in &writes.agreements {
                self.check_authority_path(resource, path, FieldType::Id)?;
                if resource
                    .field_at(field)
                    .is_none_or(|f| f.ty != FieldType::Id)
                {
                    return Err(format!(
                        "{}: {path} agrees with {field}, not an id",
                        resource.name
                    ));
                }
            }
            for bound in &writes.bounds {
                let number = resource
                    .field_at(bound.field)
                    .is_some_and(|f| matches!(f.ty, FieldType::Integer | FieldType::Number));
                let word = resource.field_at(bound.when).is_some_and(|f| {
                    f.ty == FieldType::Text
                        && f.domain
                            .and_then(Domain::words)
                            .is_some_and(|words| words.contains(&bound.is))
                });
                if !number || !word {
                    return Err(format!(
                        "{}: {} is bounded while {} is {}, which is not a number bounded by a word of a text field's domain",
                        resource.name, bound.field, bound.when, bound.is
                    ));
                }
            }
            for field in resource.leaf_fields() {
                if let Some(word) = field.repaired_to
                    && !(word.is_empty()
                        || field
                            .domain
                            .and_then(Domain::words)
                            .is_some_and(|w| w.contains(&word)))
                {
                    return Err(format!(
                        "{}.{} is repaired to '{word}', which its domain does not allow",
                        resource.name, field.path
                    ));
                }
            }
            for path in writes
                .create
                .iter()
                .chain(&writes.update)
                .chain(&writes.create_required)
            {
                if resource.field_at(path).is_none() {
                    return Err(format!("writes of {} name {path}", resource.name));
                }
            }
            if let Some(lifecycle) = resource.lifecycle {
                self.check_lifecycle(resource, lifecycle)?;
            }
            check_write_declarations(resource)?;
            self.check_words(resource, 0)?;
            for index in &resource.indexes {
                for path in &index.paths {
                    if resource.field_at(path).is_none_or(|f| !f.has_column()) {
                        return Err(format!("index of {} names {path}", resource.name));
                    }
                }
            }
            if let Some(bulk) = resource.writes.bulk {
                if !resource.writes.update.contains(&bulk.field) {
                    return Err(format!(
                        "{} is set in bulk, but an update may not change {}",
                        resource.name, bulk.field
                    ));
                }
                for path in bulk.named_by.iter().flat_map(|way| way.iter()) {
                    if resource.field_at(path).is_none_or(|f| !f.has_column()) {
                        return Err(format!(
                            "{} names its records in bulk by {path}",
                            resource.name
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// A lifecycle names its status field, a to-many relation to its lines, and fields of
    /// the record or its lines for what intakes and actions set.
    fn check_lifecycle(
        &self,
        resource: &Resource,
        lifecycle: &lifecycle::Lifecycle,
    ) -> Result<(), String> {
        let fail = |what: &str| Err(format!("the lifecycle of {} names {what}", resource.name));
        if resource.field_at(lifecycle.status).is_none() {
            return fail(lifecycle.status);
        }
        let Some(relation) = resource
            .relation(lifecycle.lines)
            .filter(|r| matches!(r.kind, RelationKind::ToMany { .. }))
        else {
            return fail(lifecycle.lines);
        };
        let line = self.target(relation);
        for path in lifecycle
            .line_intake
            .iter()
            .chain(lifecycle.line_required)
            .chain(lifecycle.line_action)
        {
            if line.field_at(path).is_none() {
                return fail(path);
            }
        }
        for path in lifecycle.action {
            if resource.field_at(path).is_none() && line.field_at(path).is_none() {
                return fail(path);
            }
        }
        Ok(())
    }

    /// A scope path must walk relations and end at a value of `ends_at`'s type (an id or a
    /// list of ids; a word for a rule over user types).
    fn check_scope_path(
        &self,
        resource: &Resource,
        path: &str,
        ends_at: FieldType,
    ) -> Result<(), String> {
        let mut current = resource;
        let segments: Vec<&str> = path.split('.').collect();
        for (i, segment) in segments.iter().enumerate() {
            if let Some(relation) = current.relation(segment) {
                current = self.target(relation);
                continue;
            }
            let rest = segments[i..].join(".");
            let field = current
                .field_at(&rest)
                .ok_or_else(|| format!("scope of {} names {path}", resource.name))?;
            let element = field.list.as_ref().map_or(field.ty, |l| l.element);
            return if element == ends_at {
                Ok(())
            } else {
                Err(format!(
                    "scope path {path} of {} does not end at an id",
                    resource.name
                ))
            };
        }
        Err(format!(
            "scope path {path} of {} ends at a relation",
            resource.name
        ))
    }

    /// A write rule's path is a scope path through to-one relations to one id (not a list):
    /// a record about to be written is judged by following its foreign keys.
    fn check_authority_path(
        &self,
        resource: &Resource,
        path: &str,
        ends_at: FieldType,
    ) -> Result<(), String> {
        self.check_scope_path(resource, path, ends_at)?;
        let mut current = resource;
        let segments: Vec<&str> = path.split('.').collect();
        for (i, segment) in segments.iter().enumerate() {
            match current.relation(segment) {
                Some(relation) if relation.is_to_one() => current = self.target(relation),
                Some(_) => {
                    return Err(format!(
                        "write rule {path} of {} goes through a to-many relation",
                        resource.name
                    ));
                }
                None => {
                    let rest = segments[i..].join(".");
                    return match current.field_at(&rest) {
                        Some(field) if field.ty == ends_at => Ok(()),
                        _ => Err(format!(
                            "write rule {path} of {} does not end at one id",
                            resource.name
                        )),
                    };
                }
            }
        }
        Ok(())
    }

    /// A shortcut copies an id found through to-one relations only (one value per record).
    fn check_derived_path(
        &self,
        resource: &Resource,
        field: &Field,
        path: &str,
    ) -> Result<(), String> {
        let mut current = resource;
        let segments: Vec<&str> = path.split('.').collect();
        let (last, hops) = segments.split_last().expect("split yields one part");
        // A shortcut is filled when its record is written; a link further along its path
        // that an update could change would leave it stale.
        let fixed = |owner: &Resource, name: &str| {
            if owner.writes.update.contains(&name) {
                Err(format!(
                    "{}.{} is derived from {path}, but updates of {} may change {name}",
                    resource.name, field.name, owner.name
                ))
            } else {
                Ok(())
            }
        };
        for (i, hop) in hops.iter().enumerate() {
            let relation = current
                .relation(hop)
                .filter(|r| r.is_to_one())
                .ok_or_else(|| {
                    format!(
                        "{}.{}: {path} is not a to-one path",
                        resource.name, field.name
                    )
                })?;
            if i > 0
                && let RelationKind::ToOne { fk } = relation.kind
            {
                fixed(current, fk)?;
            }
            current = self.target(relation);
        }
        fixed(current, last)?;
        match current.field_named(last) {
            Some(target) if target.ty == FieldType::Id && field.ty == FieldType::Id => Ok(()),
            _ => Err(format!(
                "{}.{} is derived from {path}, which is not an id",
                resource.name, field.name
            )),
        }
    }

    fn check_template_path(&self, resource: &Resource, path: &str) -> Result<(), String> {
        let mut current = resource;
        let mut parts = path.split('.').peekable();
        while let Some(part) = parts.next() {
            if let Some(relation) = current.relation(part) {
                current = self.target(relation);
            } else if parts.peek().is_none() && current.field_at(part).is_some() {
                return Ok(());
            } else {
                return Err(format!("template of {} names {path}", resource.name));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_types_are_what_resources_and_files_announce() {
        let mut announced: Vec<&str> = catalog()
            .resources()
            .iter()
            .filter_map(|r| r.events)
            .flat_map(|e| [Some(e.created), Some(e.updated), e.deleted])
            .flatten()
            .chain(FileStatus::ALL.into_iter().filter_map(FileStatus::event))
            .collect();
        announced.sort();
        announced.dedup();
        let mut declared = EVENT_TYPES.to_vec();
        declared.sort();
        assert_eq!(announced, declared);
        for event in EVENT_TYPES {
            let about = catalog().event_resource(event).map(|r| r.name);
            assert_eq!(about, event.split('.').next(), "{event}");
        }
        assert!(catalog().event_resource("order.eaten").is_none());
    }

    #[test]
    fn webhook_urls_are_https_to_public_hosts_or_loopback_literals() {
        assert_eq!(secure_url_problem("https://example.com/hook"), None);
        assert_eq!(secure_url_problem("https://93.184.216.34/hook"), None);
        assert_eq!(secure_url_problem("https://[2606:4700::1111]/hook"), None);
        // Loopback literals pass the domain; the store refuses them unless allowed.
        for url in [
            "http://127.0.0.1:8080/hook",
            "http://[::1]/hook",
            "https://127.0.0.1/",
        ] {
            assert_eq!(secure_url_problem(url), None, "{url}");
            assert!(is_insecure_loopback_url(url), "{url}");
        }
        assert_eq!(
            secure_url_problem("http://example.com/hook").as_deref(),
            Some("is not an https URL")
        );
        assert_eq!(
            secure_url_problem("http://127.0.0.1.example.com/").as_deref(),
            Some("is not an https URL")
        );
        assert!(!is_insecure_loopback_url("http://localhost:9/x"));
        assert!(!is_insecure_loopback_url("https://example.com/"));
    }

    #[test]
    fn webhook_urls_naming_addresses_that_are_not_public_are_refused_however_spelled() {
        for (url, named) in [
            (
                "https://169.254.169.254/latest/meta-data/",
                "169.254.169.254, a link-local",
            ),
            ("https://10.1.2.3/", "10.1.2.3, a private"),
            ("https://0.0.0.0/", "0.0.0.0, the unspecified"),
            ("https://100.64.0.1/", "100.64.0.1, a shared"),
            ("https://192.0.2.1/", "192.0.2.1, a documentation"),
            ("https://[fd00::1]/", "fd00::1, a unique local"),
            ("https://[fe80::1]/", "fe80::1, a link-local"),
            ("https://[::ffff:10.0.0.1]/", "::ffff:10.0.0.1, a private"),
            (
                "https://[::ffff:127.0.0.1]/",
                "::ffff:127.0.0.1, a loopback",
            ),
            ("https://224.0.0.1/", "224.0.0.1, a multicast"),
            ("https://[::]/", "::, the unspecified"),
        ] {
            let problem = secure_url_problem(url).unwrap_or_default();
            assert!(
                problem.starts_with(&format!("names {named}")),
                "{url}: {problem}"
            );
            assert!(problem.contains("public"), "{url}: {problem}");
        }
        // Every spelling a client reads as 127.0.0.1 is the loopback address.
        for url in [
            "https://127.0.0.1/",
            "https://0x7f000001/",
            "https://2130706433/",
            "https://127.1/",
            "https://0177.0.0.1/",
            "https://0x7f.0.0.1/",
        ] {
            let problem = webhook_url_problem(url, false).unwrap_or_default();
            assert!(
                problem.starts_with("names 127.0.0.1, a loopback address"),
                "{url}: {problem}"
            );
            assert!(is_insecure_loopback_url(url), "{url}");
            assert_eq!(webhook_url_problem(url, true), None, "{url}");
        }
        assert!(
            webhook_url_problem("http://[::1]:9/", false)
                .unwrap()
                .contains("--webhook-allow-insecure-localhost")
        );
        for url in [
            "https://localhost/",
            "https://LocalHost./x",
            "https://api.localhost/",
            "http://localhost:9/",
        ] {
            let problem = secure_url_problem(url).unwrap_or_default();
            assert!(
                problem.contains("this machine, not a public address"),
                "{url}: {problem}"
            );
        }
        // A user name is not the host: refused, with or without the loopback allowance.
        for url in [
            "http://localhost:80@example.invalid/",
            "https://user:pw@example.com/",
            "http://x@127.0.0.1/",
        ] {
            for allowed in [false, true] {
                let problem = webhook_url_problem(url, allowed).unwrap_or_default();
                assert!(
                    problem.contains("user name or password"),
                    "{url}: {problem}"
                );
            }
            assert!(!is_insecure_loopback_url(url), "{url}");
        }
        // Names are left to the resolver when a delivery connects.
        assert_eq!(webhook_url_problem("https://localhost/", false), None);
        assert_eq!(
            webhook_url_problem("https://hooks.example.com/", false),
            None
        );
    }

    #[test]
    fn quantities_are_whole_numbers_within_their_range() {
        let item = catalog().resource("orderItem").unwrap();
        let qty = item.field_at("orderQty").unwrap();
        for fine in [1, 2, 1_000_000] {
            assert_eq!(qty.admit(Cell::Integer(fine)), Ok(Cell::Integer(fine)));
        }
        for outside in [0, -1, 1_000_001, i64::MAX, i64::MIN] {
            let refused = qty.admit(Cell::Integer(outside)).unwrap_err();
            assert_eq!(refused, "must be a whole number from 1 to 1,000,000");
            assert_eq!(
                refused.in_lang(brandhub_problem::Lang::De),
                "muss eine ganze Zahl von 1 bis 1.000.000 sein"
            );
        }
        let shipped = item.field_at("shipQty").unwrap();
        assert!(shipped.value_problem(&Cell::Integer(0)).is_none());
        assert!(
            shipped
                .value_problem(&Cell::Integer(1_000_000_000))
                .is_none()
        );
        let problem = shipped
            .value_problem(&Cell::Integer(1_000_000_001))
            .unwrap();
        assert_eq!(problem, "must be a whole number from 0 to 1,000,000,000");
        // A number that is not whole, or not finite, is no quantity.
        for not_whole in [1.5, f64::NAN, f64::INFINITY, 1e300] {
            assert!(shipped.value_problem(&Cell::Number(not_whole)).is_some());
        }
    }

    #[test]
    fn amounts_are_finite_bounded_and_kept_to_two_decimals() {
        let item = catalog().resource("orderItem").unwrap();
        let price = item.field_at("itemPrice").unwrap();
        assert_eq!(price.admit(Cell::Number(19.999)), Ok(Cell::Number(20.0)));
        assert_eq!(price.admit(Cell::Number(0.125)), Ok(Cell::Number(0.13)));
        assert_eq!(price.admit(Cell::Number(-0.0)), Ok(Cell::Number(0.0)));
        assert_eq!(
            price.admit(Cell::Number(1e9)),
            Ok(Cell::Number(1_000_000_000.0))
        );
        for outside in [-0.01, 1_000_000_000.01, 1e308, f64::INFINITY, f64::NAN] {
            assert_eq!(
                price.value_problem(&Cell::Number(outside)).as_deref(),
                Some("must be an amount from 0 to 1,000,000,000, kept to 2 decimals"),
                "{outside}"
            );
        }
        let tax = item.field_at("lineTax").unwrap();
        assert_eq!(tax.admit(Cell::Number(-12.345)), Ok(Cell::Number(-12.35)));
        assert_eq!(
            format!("{:?}", tax.admit(Cell::Number(-0.001)).unwrap()),
            "Number(0.0)",
            "no negative zero is kept"
        );
        assert!(tax.value_problem(&Cell::Number(-1e9)).is_none());
        assert!(tax.value_problem(&Cell::Number(-1e9 - 1.0)).is_some());
        assert_eq!(
            tax.expected(),
            "an amount from -1,000,000,000 to 1,000,000,000, kept to 2 decimals"
        );
    }

    #[test]
    fn a_number_domain_fits_only_a_number_field_and_a_held_count_its_domain() {
        let text_with_units =
            Resource::new("x", "x", "").field(model::text("name").domain(Domain::UNITS));
        assert!(check_write_declarations(&text_with_units).is_err());
        let number_with_words =
            Resource::new("x", "x", "").field(model::integer("n").domain(Domain::OneOf(&["a"])));
        assert!(check_write_declarations(&number_with_words).is_err());
        let held_money = Resource::new("x", "x", "")
            .field(model::number("n").domain(Domain::MONEY).held_within(-1, 1));
        assert!(check_write_declarations(&held_money).is_err());
        let held_narrower = Resource::new("x", "x", "")
            .field(model::integer("n").domain(Domain::UNITS).held_within(0, 10));
        assert!(check_write_declarations(&held_narrower).is_err());
        let held = Resource::new("x", "x", "").field(
            model::integer("n")
                .domain(Domain::UNITS)
                .held_within(-limits::MOST_UNITS, limits::MOST_UNITS),
        );
        assert!(check_write_declarations(&held).is_ok());
    }

    #[test]
    fn moved_counts_are_held_within_the_move_range() {
        let stock = catalog().resource("stock").unwrap();
        for path in ["inStock", "demand"] {
            let field = stock.field_at(path).unwrap();
            assert_eq!(
                field.held,
                Some((-limits::MOST_UNITS, limits::MOST_UNITS)),
                "{path}"
            );
        }
        assert_eq!(grouped(-1_000_000_000), "-1,000,000,000");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(i64::MIN), "-9,223,372,036,854,775,808");
    }

    #[test]
    fn every_record_has_a_display_label_and_every_field_its_words() {
        let cat = catalog();
        let stock = cat.resource("stock").unwrap();
        assert_eq!(
            cat.label_fields(stock),
            [
                "stock_variant.variant_product.title",
                "stock_variant.variant_product.code",
                "stock_variant.colour",
                "stock_variant.size",
                "stock_variant.barcode",
                "stock_warehouse.name",
            ]
        );
        let order = cat.resource("order").unwrap();
        assert_eq!(order.label_parts(), [vec!["brandOrderRef", "hostOrderRef"]]);
        assert_eq!(
            words::field_title("order", "sentToWH").map(|w| w.de),
            Some("An das Lager gegeben")
        );
        assert_eq!(
            words::field_title("order", "shipAddress.title").map(|w| w.en),
            Some("Title")
        );
        assert_eq!(words::code_word("DSP").map(|w| w.de), Some("Versandt"));
        let lines = order.relation("order_orderItem").unwrap();
        assert_eq!(
            cat.relation_title(order, lines).map(|w| w.en),
            Some("Order lines")
        );
        let net = order.field_at("detail.net").unwrap();
        assert!(net.is_money() && net.currency == Some("order_orderItem.currency"));
    }

    #[test]
    fn the_catalog_is_consistent_and_has_every_contract_resource() {
        let names: Vec<_> = catalog().resource_names().collect();
        for expected in [
            "file",
            "stock",
            "order",
            "orderItem",
            "brand",
            "brandStore",
            "warehouse",
            "host",
            "store",
            "product",
            "variant",
            "user",
            "company",
            "price",
            "image",
            "apiKey",
        ] {
            assert!(names.contains(&expected), "missing {expected}");
        }
    }

    #[test]
    fn object_subfields_get_dotted_paths_and_flat_columns() {
        let order = catalog().resource("order").unwrap();
        let net = order.field_at("detail.net").unwrap();
        assert_eq!(net.path, "detail.net");
        assert_eq!(net.column, "detail_net");
        assert_eq!(net.ty, FieldType::Number);
        assert!(!net.visible_to(UserType::Warehouse));
        assert!(net.visible_to(UserType::Host));
        let line1 = order.field_at("billAddress.line1").unwrap();
        assert_eq!(line1.folded_column().unwrap(), "bill_address_line1_ci");
    }

    #[test]
    fn relations_resolve_to_their_targets() {
        let stock = catalog().resource("stock").unwrap();
        let variant = stock.relation("stock_variant").unwrap();
        assert_eq!(catalog().target(variant).name, "variant");
        assert_eq!(stock.fk_field(variant).unwrap().name, "fk_variant");
        let order = catalog().resource("order").unwrap();
        assert!(!order.relation("order_orderItem").unwrap().is_to_one());
    }

    /// The paths of a rule's only group, or `None` for everything / nothing.
    fn rule_paths(scope: &Scope) -> Option<Vec<(&'static str, Anchor)>> {
        match scope {
            Scope::AnyOf(groups) => Some(
                groups
                    .iter()
                    .flatten()
                    .map(|term| (term.path, term.anchor))
                    .collect(),
            ),
            _ => None,
        }
    }

    #[test]
    fn who_writes_what_follows_the_contract_table() {
        let rule = |resource: &str, action: WriteAction, user_type: UserType| {
            catalog()
                .resource(resource)
                .unwrap()
                .authority_of(action, user_type)
        };
        use UserType::*;
        use WriteAction::*;
        // Admins write everything, whatever the declarations say.
        for resource in catalog().resources() {
            for action in WriteAction::ALL {
                assert_eq!(resource.authority_of(action, Admin), Scope::Everything);
            }
        }
        // A brand's catalogue: its company's users (and sponsors over their companies).
        for resource in ["product", "variant", "image", "price"] {
            for user_type in [Company, Sponsor] {
                let paths = rule_paths(&rule(resource, Write, user_type)).unwrap();
                assert_eq!(paths.len(), 1, "{resource}");
                assert!(
                    paths[0].0.ends_with("_brand.fk_company"),
                    "{resource}: {paths:?}"
                );
                assert_eq!(paths[0].1, Anchor::Companies);
            }
            for user_type in [Host, Warehouse] {
                assert_eq!(
                    rule(resource, Write, user_type),
                    Scope::Nothing,
                    "{resource}"
                );
            }
        }
        // Stock: the owners of its warehouse, and the warehouse's own users.
        assert_eq!(
            rule_paths(&rule("stock", Write, Company)).unwrap(),
            vec![("stock_warehouse.fk_company", Anchor::Companies)]
        );
        assert_eq!(
            rule_paths(&rule("stock", Write, Warehouse)).unwrap(),
            vec![("fk_warehouse", Anchor::Warehouse)]
        );
        assert_eq!(rule("stock", Write, Host), Scope::Nothing);
        // Orders move through their lifecycle: dispatch by the warehouse or the brand's owner.
        assert_eq!(
            rule_paths(&rule("order", Dispatch, Warehouse)).unwrap(),
            vec![("fk_warehouse", Anchor::Warehouse)]
        );
        assert!(rule_paths(&rule("order", Dispatch, Sponsor)).is_some());
        assert_eq!(rule("order", Dispatch, Host), Scope::Nothing);
        assert_eq!(rule("order", Write, Company), Scope::Nothing);
        // Hosts write their own stores; sponsors the companies they sponsor.
        assert_eq!(
            rule_paths(&rule("store", Write, Host)).unwrap(),
            vec![("fk_host", Anchor::Host)]
        );
        assert_eq!(rule("host", Write, Host), Scope::Nothing);
        assert_eq!(
            rule_paths(&rule("company", Write, Sponsor)).unwrap(),
            vec![("fk_sponsor", Anchor::Sponsor)]
        );
        assert_eq!(rule("company", Write, Company), Scope::Nothing);
        // Keys: one's own, and for company and sponsor users those of the users of their
        // companies; users: of one's companies, never of a wider type.
        for user_type in [Host, Warehouse] {
            assert_eq!(
                rule_paths(&rule("apiKey", Write, user_type)).unwrap(),
                vec![("fk_user", Anchor::Own)]
            );
        }
        for user_type in [Sponsor, Company] {
            assert_eq!(
                rule_paths(&rule("apiKey", Write, user_type)).unwrap(),
                vec![
                    ("fk_user", Anchor::Own),
                    ("apiKey_user.fk_company", Anchor::Companies),
                    ("apiKey_user.type", Anchor::WritableTypes)
                ]
            );
        }
        assert_eq!(rule("user", Write, Host), Scope::Nothing);
        assert_eq!(Company.writable_types(), &[Company]);
        assert!(!Sponsor.writable_types().contains(&Admin));
        assert!(Warehouse.writable_types().is_empty());
        assert_eq!(Admin.writable_types().len(), UserType::ALL.len());
    }

    #[test]
    fn write_rules_follow_to_one_relations_to_one_id() {
        let broken = |rule: &'static str| {
            let brand = catalog().resource("brand").unwrap().clone().writable_by(
                WriteAction::Write,
                &[UserType::Company],
                &[&[(rule, Anchor::Companies)]],
            );
            let mut resources = catalog().resources().to_vec();
            let at = resources.iter().position(|r| r.name == "brand").unwrap();
            resources[at] = brand;
            Catalog {
                resources,
                handles: Vec::new(),
            }
            .check()
        };
        assert!(broken("fk_company").is_ok());
        let through_many = broken("brand_product.fk_brand").unwrap_err();
        assert!(through_many.contains("to-many"), "{through_many}");
        assert!(
            broken("name")
                .unwrap_err()
                .contains("does not end at an id")
        );
        assert!(
            broken("brand_company")
                .unwrap_err()
                .contains("ends at a relation")
        );
    }

    #[test]
    fn every_resource_has_a_stamped_updated_date_rendered_last() {
        for resource in catalog().resources() {
            let updated = resource.field_named(UPDATED_DATE).unwrap();
            assert!(updated.stamped, "{}", resource.name);
            assert_eq!(resource.fields.last().unwrap().path, UPDATED_DATE);
            for stamped in resource.stamped_fields() {
                assert_eq!(stamped.ty, FieldType::Timestamp, "{}", resource.name);
                assert!(!resource.writes.create.contains(&stamped.path.as_str()));
                assert!(!resource.writes.update.contains(&stamped.path.as_str()));
            }
        }
    }

    #[test]
    fn internal_fields_are_invisible_to_everyone() {
        let key = catalog().resource("apiKey").unwrap();
        let hash = key.field_named("secretHash").unwrap();
        assert!(UserType::ALL.iter().all(|t| !hash.visible_to(*t)));
        assert!(hash.folded_column().is_none());
    }

    #[test]
    fn the_file_paths_code_uses_are_fields_of_file() {
        let file = catalog().resource("file").unwrap();
        for path in file_paths::ALL {
            let field = file.field_at(path);
            assert!(field.is_some_and(|f| f.has_column()), "{path}");
        }
        let status = file.field_at(file_paths::STATUS).unwrap();
        assert_eq!(
            status.domain.and_then(|d| d.words()),
            Some(&FILE_STATUSES[..])
        );
        for status in FileStatus::ALL {
            assert_eq!(FileStatus::named(status.as_str()), Some(status));
        }
    }

    #[test]
    fn an_object_in_a_write_declaration_stands_for_its_parts() {
        let order = catalog().resource("order").unwrap();
        for object in ["shipAddress", "billAddress"] {
            for part in ADDRESS_PARTS {
                let path = format!("{object}.{part}");
                assert!(order.writes.create.contains(&path.as_str()), "{path}");
            }
            assert!(!order.writes.create.contains(&object));
        }
        assert!(order.writes.create.contains(&"shipAddress.id"));
    }
}
