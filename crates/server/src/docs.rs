//! The reference sections of `docs/API.md`, generated from the catalog and the error table so
//! the documentation cannot drift from the code. A test compares them with the file; run it
//! with `BRANDHUB_UPDATE_DOCS=1` to rewrite the sections after changing the catalog.

use brandhub_catalog::{
    Field, FieldDefault, FieldType, NoneAs, RelationKind, Resource, Scope, UserType, WriteAction,
    catalog, grouped,
};
use brandhub_problem::Code;
use brandhub_query::limits::{self, Stage};
use std::fmt::Write;

fn type_name(field: &Field) -> String {
    let name = match (&field.ty, &field.list) {
        (FieldType::List, Some(list)) => format!("array of {}", list.element.describe()),
        (ty, _) => ty.describe().to_string(),
    };
    let described = field.domain.and_then(|d| d.describe());
    match (field.max_chars, field.ty, described) {
        (Some(max), FieldType::List, _) => format!("{name} (≤ {max} characters each)"),
        (Some(max), _, _) => format!("{name} (≤ {max} characters)"),
        // Quantities and amounts: what a write may give (docs/API.md, "Quantities and amounts").
        (None, _, Some(described)) => format!("{name}: {described}"),
        (None, _, None) => name,
    }
}

/// The notes column: the field's doc line and what the catalog says of it, as sentences.
fn notes(field: &Field) -> String {
    let mut notes: Vec<String> = Vec::new();
    if !field.doc.is_empty() {
        notes.push(field.doc.to_string());
    }
    if field.indexed && field.name != "id" {
        notes.push("Indexed.".into());
    }
    if field.none_as == NoneAs::ZeroId {
        notes.push("32 zeros when none.".into());
    }
    if field.nullable_object {
        notes.push("Null when empty.".into());
    }
    if field.generated.is_some() {
        notes.push("Computed by the database; read-only.".into());
    }
    if let Some((least, most)) = field.held {
        notes.push(format!(
            "Orders move it; a move that would take it outside {} to {} is refused whole.",
            grouped(least),
            grouped(most)
        ));
    }
    if !field.hidden_from.is_empty() {
        let types: Vec<&str> = field.hidden_from.iter().map(|t| t.as_str()).collect();
        notes.push(format!("Does not exist for {} users.", types.join(", ")));
    }
    notes.join(" ")
}

fn field_rows(out: &mut String, field: &Field) {
    if field.internal {
        return;
    }
    if field.ty == FieldType::Object {
        let _ = writeln!(out, "| `{}` | object | {} |", field.path, notes(field));
        for sub in &field.subfields {
            field_rows(out, sub);
        }
        return;
    }
    let _ = writeln!(
        out,
        "| `{}` | {} | {} |",
        field.path,
        type_name(field),
        notes(field)
    );
}

fn resource_section(out: &mut String, resource: &Resource) {
    let _ = writeln!(out, "### {}\n\n{}\n", resource.name, resource.doc);
    let _ = writeln!(out, "| field | type | notes |\n|---|---|---|");
    for field in &resource.fields {
        field_rows(out, field);
    }
    if resource.public_relations().next().is_some() {
        let _ = writeln!(
            out,
            "\n| relation | leads to | default template |\n|---|---|---|"
        );
        for relation in resource.public_relations() {
            let kind = match relation.kind {
                RelationKind::ToOne { fk } => format!("one `{}` (by `{fk}`)", relation.target),
                RelationKind::ToMany { target_fk } => {
                    format!("many `{}` (by their `{target_fk}`)", relation.target)
                }
            };
            let expanded = resource
                .template
                .iter()
                .any(|p| p.split('.').next() == Some(relation.name));
            let template = match (relation.is_to_one(), expanded) {
                (_, true) => "expanded",
                (true, false) => "`__KEY`",
                (false, false) => "not shown",
            };
            let _ = writeln!(out, "| `{}` | {kind} | {template} |", relation.name);
        }
    }
    if !resource.template.is_empty() {
        let paths: Vec<String> = resource.template.iter().map(|p| format!("`{p}`")).collect();
        let _ = writeln!(out, "\nDefault template expands: {}.", paths.join(", "));
    }
    let _ = writeln!(out, "\n| user type | sees |\n|---|---|");
    for user_type in UserType::ALL {
        let _ = writeln!(
            out,
            "| {} | {} |",
            user_type.as_str(),
            scope_text(resource, &resource.scope_of(user_type))
        );
    }
    out.push('\n');
}

fn scope_text(resource: &Resource, scope: &Scope) -> String {
    match scope {
        Scope::Everything => "every record".into(),
        Scope::Nothing => "nothing".into(),
        Scope::AnyOf(groups) => groups
            .iter()
            .map(|group| {
                group
                    .iter()
                    .map(|term| {
                        let path = catalog().spelled_out(resource, term.path);
                        format!("`{path}` is {}", term.anchor.describe())
                    })
                    .collect::<Vec<_>>()
                    .join(" and ")
            })
            .collect::<Vec<_>>()
            .join("; or "),
    }
}

/// The resource reference: every resource's fields, types, notes and relations.
pub fn resource_reference() -> String {
    let mut out = String::new();
    for resource in catalog().resources() {
        resource_section(&mut out, resource);
    }
    out
}

/// Who writes what (docs/API.md, "Who writes what"): per resource and action, the records each user type may
/// write. Admins write everything; a type with nothing there writes nothing.
pub fn authority_reference() -> String {
    let types = [
        UserType::Sponsor,
        UserType::Company,
        UserType::Host,
        UserType::Warehouse,
    ];
    let mut out = String::from("| resource | action |");
    for user_type in types {
        let _ = write!(out, " {} |", user_type.as_str());
    }
    out.push_str("\n|---|---|");
    out.push_str(&"---|".repeat(types.len()));
    out.push('\n');
    // Files are written by uploads, whose rules are those of what each file type writes.
    for resource in catalog().resources().iter().filter(|r| !r.uploads) {
        for action in WriteAction::ALL {
            let declared = resource.authority.iter().any(|(a, _, _)| *a == action);
            if !declared && action != WriteAction::Write {
                continue;
            }
            let _ = write!(out, "| {} | {} |", resource.name, action.as_str());
            for user_type in types {
                let rule = match resource.authority_of(action, user_type) {
                    Scope::Nothing => "—".to_string(),
                    rule => scope_text(resource, &rule),
                };
                let _ = write!(out, " {rule} |");
            }
            out.push('\n');
        }
    }
    out
}

/// The writes of the generic pipeline (docs/API.md, "Writes: master data and catalogue"), per resource: what a create sets (and
/// must), what an update changes, the natural key and what the server sets itself.
pub fn writes_reference() -> String {
    let mut out = String::from(
        "| resource | POST sets (* required; default) | PATCH changes | natural key | DELETE | set by the server |\n|---|---|---|---|---|---|\n",
    );
    let code = |paths: &[&str]| {
        paths
            .iter()
            .map(|p| format!("`{p}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for resource in catalog().resources().iter().filter(|r| r.written_as_json()) {
        let writes = &resource.writes;
        let sets: Vec<String> = writes
            .create
            .iter()
            .map(|p| {
                let star = if writes.create_required.contains(p) {
                    "*"
                } else {
                    ""
                };
                let default = match resource.field_at(p).and_then(|f| f.default) {
                    Some(FieldDefault::Text(text)) => format!(" (`{text}`)"),
                    Some(FieldDefault::Boolean(value)) => format!(" (`{value}`)"),
                    Some(FieldDefault::Writer(anchor)) => format!(" ({})", anchor.describe()),
                    Some(FieldDefault::WriterKey) => " (the writing API key)".to_string(),
                    None => String::new(),
                };
                format!("`{p}`{star}{default}")
            })
            .collect();
        let mut key = match resource.natural_key_names().as_slice() {
            [] => "none (an upsert creates)".to_string(),
            [one] => format!("`{one}`"),
            parts => format!("({})", code(parts)),
        };
        // A part kept as an internal shortcut, spelled out as the link it copies.
        for (path, name) in writes.natural_key.iter().zip(resource.natural_key_names()) {
            if let Some(from) = resource.field_named(path).and_then(|f| f.derived_from) {
                let _ = write!(key, ": `{name}` is `{from}`");
            }
        }
        let mut server: Vec<&str> = vec!["id"];
        for field in resource.leaf_fields().filter(|f| !f.internal) {
            if field.path == "createdDate" || field.stamped {
                server.push(field.path.as_str());
            }
        }
        let mut by_server = code(&server);
        if let Some(secret) = writes.secret {
            let _ = write!(
                by_server,
                "; `{}` (`{}…`, in the create's answer only)",
                secret.shown_as, secret.prefix
            );
        }
        let delete = match (writes.delete, writes.revoked_by) {
            (false, _) => "—".to_string(),
            (true, Some(flag)) => format!("sets `{flag}`"),
            (true, None) => "removes".to_string(),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {key} | {delete} | {by_server} |",
            resource.name,
            sets.join(", "),
            code(&writes.update)
        );
    }
    out
}

/// The error reference: every code with its status and title.
pub fn error_reference() -> String {
    let mut out = String::from("| status | code | title |\n|---|---|---|\n");
    for code in Code::ALL {
        let _ = writeln!(
            out,
            "| {} | `{}` | {} |",
            code.status(),
            code.as_str(),
            code.title()
        );
    }
    out
}

/// The limits of a read: every limit of `query::limits`, what it counts and what a request
/// past it gets.
pub fn limits_reference() -> String {
    let mut out = String::from("| limit | at most | counts | past it |\n|---|---|---|---|\n");
    for limit in limits::ALL {
        let past = match limit.stage {
            Stage::Url => "400 `invalid_parameter`".to_string(),
            Stage::Request => {
                "400 `invalid_parameter` in the URL, `invalid_query` in a body".to_string()
            }
            Stage::Plan(code) => format!("{} `{}`", code.status(), code.as_str()),
            Stage::Clamped => "lowered to the limit".to_string(),
            Stage::Body => format!(
                "{} `{}`",
                Code::PayloadTooLarge.status(),
                Code::PayloadTooLarge.as_str()
            ),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {past} |",
            limit.name,
            thousands(limit.max),
            limit.counts
        );
    }
    out
}

/// A number with thousands separated by commas, as the docs write them.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The order lifecycle (docs/API.md, "Orders: intake, lifecycle and stock") from the catalog's transition table: a table of the
/// steps and a Mermaid diagram of the statuses.
pub fn lifecycle_reference() -> String {
    use brandhub_catalog::lifecycle::TRANSITIONS;
    let mut out = String::from(
        "| step | from | to | who (and admin) | orderDispatch file | what it does |\n|---|---|---|---|---|---|\n",
    );
    for t in TRANSITIONS {
        let list = |items: &[&str]| {
            if items.is_empty() {
                "—".to_string()
            } else {
                items
                    .iter()
                    .map(|s| format!("`{s}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        let who: Vec<&str> = t.who.iter().map(|u| u.as_str()).collect();
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            t.step.as_str(),
            list(t.from),
            list(t.to),
            who.join(", "),
            if t.by_file { "yes" } else { "no" },
            t.effect
        ));
    }
    out.push_str("\n```mermaid\nstateDiagram-v2\n");
    for t in TRANSITIONS {
        let from: Vec<&str> = if t.from.is_empty() {
            vec!["[*]"]
        } else {
            t.from.to_vec()
        };
        for f in &from {
            for to in t.to {
                out.push_str(&format!("    {f} --> {to}: {}\n", t.step.as_str()));
            }
        }
    }
    out.push_str("```\n");
    out
}

/// Replaces the text between `<!-- generated:NAME -->` and `<!-- end:NAME -->`.
pub fn replace_section(document: &str, name: &str, content: &str) -> Option<String> {
    let begin = format!("<!-- generated:{name} -->\n");
    let end = format!("<!-- end:{name} -->");
    let start = document.find(&begin)? + begin.len();
    let stop = start + document[start..].find(&end)?;
    Some(format!(
        "{}{content}{}",
        &document[..start],
        &document[stop..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_document_carries_the_generated_reference() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/API.md");
        let document = std::fs::read_to_string(&path).expect("docs/API.md exists");
        let updated = replace_section(&document, "resources", &resource_reference())
            .and_then(|d| replace_section(&d, "errors", &error_reference()))
            .and_then(|d| replace_section(&d, "limits", &limits_reference()))
            .and_then(|d| replace_section(&d, "authority", &authority_reference()))
            .and_then(|d| replace_section(&d, "writes", &writes_reference()))
            .and_then(|d| replace_section(&d, "lifecycle", &lifecycle_reference()))
            .expect(
                "docs/API.md has the generated:resources, errors, limits, authority, writes and lifecycle markers",
            );
        if std::env::var("BRANDHUB_UPDATE_DOCS").is_ok_and(|v| v == "1") {
            std::fs::write(&path, &updated).expect("docs/API.md is writable");
            return;
        }
        assert!(
            updated == document,
            "docs/API.md is out of date with the catalog; run BRANDHUB_UPDATE_DOCS=1 cargo test -p brandhub-server docs"
        );
    }

    #[test]
    fn limits_are_documented_with_their_numbers() {
        let reference = limits_reference();
        assert!(reference.contains("| `path_hops` | 8 |"), "{reference}");
        assert!(reference.contains("| `values` | 10,000 |"), "{reference}");
        assert!(
            reference.contains("| `body_bytes` | 1,048,576 |"),
            "{reference}"
        );
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
    }

    #[test]
    fn restricted_fields_are_documented_as_such() {
        let reference = resource_reference();
        assert!(
            reference.contains("| `detail.net` | number: an amount from -1,000,000,000 to 1,000,000,000, kept to 2 decimals | Does not exist for warehouse users. |"),
            "{reference}"
        );
        assert!(!reference.contains("secretHash"));
    }
}
