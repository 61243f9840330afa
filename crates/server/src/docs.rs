//! The reference sections of `docs/API.md`, generated from the catalog and the error table so
//! the documentation cannot drift from the code. A test compares them with the file; run it
//! with `BRANDHUB_UPDATE_DOCS=1` to rewrite the sections after changing the catalog.

use brandhub_catalog::{
    Anchor, Field, FieldType, NoneAs, RelationKind, Resource, Scope, UserType, catalog,
};
use brandhub_problem::Code;
use std::fmt::Write;

fn type_name(field: &Field) -> String {
    let name = match (&field.ty, &field.list) {
        (FieldType::List, Some(list)) => format!("array of {}", list.element.describe()),
        (ty, _) => ty.describe().to_string(),
    };
    match (field.max_chars, field.ty) {
        (Some(max), FieldType::List) => format!("{name} (≤ {max} characters each)"),
        (Some(max), _) => format!("{name} (≤ {max} characters)"),
        (None, _) => name,
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

fn anchor_text(anchor: Anchor) -> &'static str {
    match anchor {
        Anchor::Companies => "one of the caller's companies",
        Anchor::Host => "the caller's host",
        Anchor::Warehouse => "the caller's warehouse",
        Anchor::Own => "the caller's own user id",
    }
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
                        format!("`{path}` is {}", anchor_text(term.anchor))
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
            .expect("docs/API.md has the generated:resources and generated:errors markers");
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
    fn restricted_fields_are_documented_as_such() {
        let reference = resource_reference();
        assert!(
            reference.contains("| `detail.net` | number | Does not exist for warehouse users. |"),
            "{reference}"
        );
        assert!(!reference.contains("secretHash"));
    }
}
