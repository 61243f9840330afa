//! One field set on many records at once (`POST /api/<resource>/<field>`, docs/API.md "Host
//! SKUs"): each element's record found by its id or by the fields the catalog names it by
//! ([`brandhub_catalog::BulkSet`]), within the caller's scope; then every record updated as a
//! `PATCH` would be, as one batch in one transaction through the executor, all or nothing,
//! its unique rules judged on the records as they all end up.

use super::*;
use brandhub_query::bulk::{BulkElement, Named};

impl Store {
    /// Sets the resource's bulk field ([`brandhub_catalog::Writes::bulk`]) on the records
    /// the elements name; their ids, in the elements' order. 403 for a caller whose user type
    /// never writes the resource; otherwise every problem of every element (a record not
    /// found, named twice, a value refused or taken) in one 422, by index, and nothing
    /// written.
    pub async fn set_in_bulk(
        &self,
        resource: &'static Resource,
        elements: &[BulkElement],
        writer: &Writer<'_>,
    ) -> StoreResult<Vec<String>> {
        if let Some(never) = never_written_by(resource, writer.viewer) {
            return Err(never);
        }
        let plan = WritePlan::locking(EntryPoint::Bulk);
        self.execute(plan, |mut tx, _| {
            Box::pin(async move {
                let stepped = bulk_in(&mut tx, resource, elements, writer).await;
                (tx, stepped.map(Outcome::Commit))
            })
        })
        .await
    }
}

/// The write of [`Store::set_in_bulk`] inside its transaction.
async fn bulk_in(
    tx: &mut WriteTx,
    resource: &'static Resource,
    elements: &[BulkElement],
    writer: &Writer<'_>,
) -> StoreResult<Vec<String>> {
    let mut problems: Vec<FieldError> = Vec::new();
    let ids = resolve(tx, resource, elements, writer, &mut problems).await?;
    // The same record named twice.
    let mut first: HashMap<&str, usize> = HashMap::new();
    for (index, id) in ids.iter().enumerate() {
        if let Some(id) = id
            && let Some(earlier) = first.insert(id.as_str(), index)
        {
            first.insert(id.as_str(), earlier);
            problems.push(problem(
                "id",
                words!(
                    "names the same {} as element {earlier}",
                    "nennt dasselbe {} wie Element {earlier}",
                    resource.name
                ),
                Some(index),
            ));
        }
    }
    let updates: Vec<(&str, &WriteValues, Option<usize>)> = ids
        .iter()
        .zip(elements)
        .enumerate()
        .filter_map(|(index, (id, element))| {
            let id = id.as_deref()?;
            (first.get(id) == Some(&index)).then_some((id, &element.values, Some(index)))
        })
        .collect();
    // What an element not found is told of its value too.
    for (index, (id, element)) in ids.iter().zip(elements).enumerate() {
        if id.is_none() {
            problems.extend(element.values.problems.iter().map(|p| FieldError {
                index: Some(index),
                ..p.clone()
            }));
        }
    }
    let written = if updates.is_empty() {
        Ok(Vec::new())
    } else {
        update_batch_in(tx, resource, &updates, writer, None).await
    };
    match written {
        Err(StoreError::Invalid { problems: more, .. }) => {
            problems.extend(more);
            Err(sorted(problems))
        }
        // Anything else refused: told as it is, unless the elements had problems of their
        // own, which come first.
        Err(error) if problems.is_empty() => Err(error),
        _ if !problems.is_empty() => Err(sorted(problems)),
        Err(error) => Err(error),
        Ok(_) => Ok(ids.into_iter().flatten().collect()),
    }
}

/// The id of each element's record, `None` (with a problem) for one the caller does not see.
async fn resolve(
    tx: &mut WriteTx,
    resource: &'static Resource,
    elements: &[BulkElement],
    writer: &Writer<'_>,
    problems: &mut Vec<FieldError>,
) -> StoreResult<Vec<Option<String>>> {
    let mut ids: Vec<Option<String>> = vec![None; elements.len()];
    // By id: those the caller sees.
    let given: Vec<String> = elements
        .iter()
        .filter_map(|e| match &e.named {
            Some(Named::Id(id)) => Some(id.to_ascii_uppercase()),
            _ => None,
        })
        .collect();
    let seen = seen_ids(tx, resource, &given, writer.viewer).await?;
    for (index, element) in elements.iter().enumerate() {
        if let Some(Named::Id(id)) = &element.named {
            let id = id.to_ascii_uppercase();
            if seen.contains(&id) {
                ids[index] = Some(id);
            } else {
                problems.push(problem(
                    "id",
                    words!(
                        "there is no {} with id '{id}'",
                        "es gibt kein {} mit der Kennung '{id}'",
                        resource.name
                    ),
                    Some(index),
                ));
            }
        }
    }
    // By other fields: one statement for all, within the caller's scope.
    let compared = |field: &Field, value: &str| match field.ty {
        FieldType::Text => fold(value),
        FieldType::Id => value.to_ascii_uppercase(),
        _ => value.to_string(),
    };
    let column = |field: &Field| {
        field
            .folded_column()
            .unwrap_or_else(|| field.column.clone())
    };
    let named: Vec<(usize, Vec<(&'static Field, String)>)> = elements
        .iter()
        .enumerate()
        .filter_map(|(index, e)| match &e.named {
            Some(Named::By(by)) => Some((
                index,
                by.iter().map(|(f, v)| (*f, compared(f, v))).collect(),
            )),
            _ => None,
        })
        .collect();
    if named.is_empty() {
        return Ok(ids);
    }
    let mut fields: Vec<&'static Field> = Vec::new();
    for (_, by) in &named {
        for (field, _) in by {
            if !fields.iter().any(|f| f.path == field.path) {
                fields.push(field);
            }
        }
    }
    // One statement for every key.
    let keys: Vec<Vec<(String, &str)>> = named
        .iter()
        .map(|(_, by)| by.iter().map(|(f, v)| (column(f), v.as_str())).collect())
        .collect();
    let mut statement = brandhub_query::sql::ids_with_any_key(
        resource.table,
        keys.iter()
            .map(|key| key.iter().map(|(c, v)| (c.as_str(), *v)).collect()),
    );
    let scope = writer.viewer.scope(resource);
    if !scope.is_always() {
        statement.and_where(condition(&scope));
    }
    let mut kinds = vec![Kind::Text];
    for field in &fields {
        statement.column(Alias::new(column(field)));
        kinds.push(Kind::Text);
    }
    let rows = tx.fetch(&statement, &kinds).await?;
    for (index, by) in named {
        let found = rows.iter().find(|row| {
            by.iter().all(|(field, value)| {
                let at = fields
                    .iter()
                    .position(|f| f.path == field.path)
                    .unwrap_or(0);
                row[at + 1].as_text() == Some(value.as_str())
            })
        });
        match found.and_then(|row| row[0].as_text()) {
            Some(id) => ids[index] = Some(id.to_string()),
            None => problems.push(problem(
                by.last().map_or("id", |(field, _)| field.path.as_str()),
                words!(
                    "names no {} the caller sees: none has {}",
                    "nennt kein für den Aufrufer sichtbares {}: keines hat {}",
                    resource.name,
                    by.iter()
                        .map(|(field, value)| format!("{} '{value}'", field.path))
                        .collect::<Vec<_>>()
                        .join(" and ")
                ),
                Some(index),
            )),
        }
    }
    Ok(ids)
}
