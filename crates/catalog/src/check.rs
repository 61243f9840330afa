//! The catalog's consistency checks: what the type system cannot hold the declarations to
//! (unique names, paths that lead where they say, defaults and domains that fit their fields,
//! words for all a client reads). They run once, when the catalog is first used.

use crate::{
    Catalog, Domain, Field, FieldDefault, FieldType, RelationKind, Res, Resource, Scope,
    SecretKept, lifecycle, words,
};

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

    /// Checks what the type system cannot: names unique, relations and templates pointing at
    /// things that exist. Run once at start; a failure is a bug in `resources`.
    pub(crate) fn check(&self) -> Result<(), String> {
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
    use crate::{Anchor, UserType, WriteAction, catalog, limits, model};

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
}
