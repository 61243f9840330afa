//! Creates: new records made from a body, checked, and inserted or upserted on their
//! natural keys.

use super::*;

/// The record a create makes of its values: a new id, `createdDate` and stamped fields now,
/// the given values, the catalog's defaults for what was not given, and every other field
/// unset (derived fields are filled later, from the database: [`WriteTx::fill_derived`]).
pub(super) fn new_record(
    resource: &'static Resource,
    values: &WriteValues,
    now: &str,
    writer: &Writer<'_>,
) -> Record {
    let mut record = Record::empty(resource);
    for (field, cell) in stored_fields(resource).into_iter().zip(&mut record.cells) {
        if field.path == "id" {
            *cell = Cell::Text(new_id());
        } else if field.path == "createdDate" || field.stamped {
            *cell = Cell::Text(now.to_string());
        } else if let Some(given) = values.cell(&field.path) {
            *cell = given.clone();
        } else if let Some(default) = field.default {
            *cell = match default {
                FieldDefault::Text(text) => Cell::Text(text.to_string()),
                FieldDefault::Boolean(value) => Cell::Boolean(value),
                FieldDefault::Writer(anchor) => writer
                    .viewer
                    .anchor_ids(anchor)
                    .into_iter()
                    .next()
                    .map_or(Cell::Null, Cell::Text),
                FieldDefault::WriterKey => writer
                    .api_key()
                    .map_or(Cell::Null, |id| Cell::Text(id.to_string())),
            };
        }
    }
    for (field, list) in list_fields(resource).into_iter().zip(&mut record.lists) {
        if let Some(given) = values.list(&field.path) {
            list.clone_from(given);
        }
    }
    record
}

/// Problems of fields a new record must have that neither the write nor a default gave.
pub(super) fn unset_problems(
    resource: &'static Resource,
    record: &Record,
    values: &WriteValues,
    index: Option<usize>,
) -> Vec<FieldError> {
    stored_fields(resource)
        .into_iter()
        .zip(&record.cells)
        .filter(|(field, cell)| {
            field.required
                && cell.is_unset()
                && field.derived_from.is_none()
                && field.generated.is_none()
                && !values.has_problem(&field.path)
        })
        .map(|(field, _)| problem(&field.path, "is required".into(), index))
        .collect()
}

/// [`Store::create_records`] inside a transaction of the caller's (the import command runs
/// many resources in one).
pub async fn create_in(
    tx: &mut WriteTx,
    resource: &'static Resource,
    items: &[WriteValues],
    writer: &Writer<'_>,
    upsert: bool,
    indexed: bool,
) -> StoreResult<Vec<Written>> {
    try_create_in(tx, resource, items, writer, upsert, indexed)
        .await?
        .ok_or_else(|| raced(resource))
}

/// [`create_in`], or `None` when a concurrent write took a natural key between the check and
/// the insert (the unique index on natural keys refuses the second record; the caller rolls
/// back and tries again, and then finds the other write's record).
pub(super) async fn try_create_in(
    tx: &mut WriteTx,
    resource: &'static Resource,
    items: &[WriteValues],
    writer: &Writer<'_>,
    upsert: bool,
    indexed: bool,
) -> StoreResult<Option<Vec<Written>>> {
    if let Some(never) = never_written_by(resource, writer.viewer) {
        return Err(never);
    }
    let index = |i: usize| indexed.then_some(i);
    let mut problems: Vec<FieldError> = items.iter().flat_map(|v| v.problems.clone()).collect();
    let given: Vec<(Option<usize>, &WriteValues)> = items
        .iter()
        .enumerate()
        .map(|(i, v)| (index(i), v))
        .collect();
    let mut memo = RuleMemo::new();
    problems.extend(
        tx.link_problems(resource, &given, writer.viewer, &mut memo)
            .await?,
    );
    let now = tx.now_timestamp();
    let mut records: Vec<Record> = items
        .iter()
        .map(|v| new_record(resource, v, &now, writer))
        .collect();
    for (i, (record, values)) in records.iter().zip(items).enumerate() {
        problems.extend(unset_problems(resource, record, values, index(i)));
    }
    tx.fill_derived(resource, &mut records).await?;
    let indexes: Vec<Option<usize>> = (0..items.len()).map(index).collect();
    problems.extend(tx.agreement_problems(resource, &records, &indexes).await?);
    problems.extend(tx.insecure_url_problems(resource, &records, &indexes));
    let bodies: Vec<&WriteValues> = items.iter().collect();
    problems.extend(bound_problems(resource, &records, &bodies, &indexes));
    // Natural keys: taken by an existing record, or repeated within the write.
    let mut holders: Vec<Option<String>> = vec![None; items.len()];
    let keyed = keys_within(resource, &records, &index, &mut problems);
    // An optimistic create (one new record, no upsert) leaves its key to the insert, which
    // writes nothing when the key is taken (`ON CONFLICT DO NOTHING`); the write then runs
    // again in a transaction, which finds the holder.
    let keys_left_to_the_insert = tx.is_optimistic() && !upsert;
    if !keys_left_to_the_insert {
        let keys: Vec<Vec<String>> = keyed.iter().map(|(_, key)| key.clone()).collect();
        let mut held = tx.holders_of(resource, &keys).await?;
        for (i, key) in keyed {
            holders[i] = held.remove(&key);
        }
    }
    for (i, record) in records.iter_mut().enumerate() {
        if holders[i].is_none() {
            problems.extend(
                tx.authority_problems(resource, record, None, writer.viewer, index(i), &mut memo)
                    .await?,
            );
            problems.extend(
                policy::problems(tx, resource, writer, record, None, &items[i], index(i)).await?,
            );
        }
    }
    if !problems.is_empty() {
        if keys_left_to_the_insert {
            // A record whose key is taken is not judged as a new one (its answer is 409):
            // the checked way, which knows the holder, tells which.
            return Err(StoreError::raced());
        }
        return Err(sorted(problems));
    }
    let held: Vec<String> = holders.iter().flatten().cloned().collect();
    let seen_holders = seen_ids(tx, resource, &held, writer.viewer).await?;
    let mut written = Vec::with_capacity(items.len());
    let mut fresh = Vec::new();
    let mut existing: Vec<(&str, &WriteValues, Option<usize>)> = Vec::new();
    for (i, record) in records.into_iter().enumerate() {
        match &holders[i] {
            None => {
                written.push(Written {
                    id: record.id().to_string(),
                    created: true,
                    secret: None,
                });
                fresh.push(record);
            }
            Some(holder) if !seen_holders.contains(holder) => {
                return Err(key_taken(resource, None, index(i)));
            }
            Some(holder) if !upsert => {
                return Err(key_taken(resource, Some(holder), index(i)));
            }
            Some(holder) => {
                // Checked above with the create's problems.
                existing.push((holder, &items[i], index(i)));
                written.push(Written {
                    id: holder.clone(),
                    created: false,
                    secret: None,
                });
            }
        }
    }
    update_many_in(tx, resource, &existing, writer).await?;
    policy::before_insert(tx, resource, &fresh).await?;
    let mut secrets = issue_secrets(resource, &mut fresh).into_iter();
    for written in written.iter_mut().filter(|w| w.created) {
        written.secret = secrets.next().flatten();
    }
    if !tx.insert_new_records(resource, &mut fresh).await? {
        return Ok(None);
    }
    Ok(Some(written))
}

/// The natural keys of new records with their positions, each once: a key repeated within
/// the write is a problem of the later record (found without I/O).
fn keys_within(
    resource: &'static Resource,
    records: &[Record],
    index: &dyn Fn(usize) -> Option<usize>,
    problems: &mut Vec<FieldError>,
) -> Vec<(usize, Vec<String>)> {
    let mut seen: HashMap<Vec<String>, usize> = HashMap::new();
    let mut keyed: Vec<(usize, Vec<String>)> = Vec::new();
    for (i, record) in records.iter().enumerate() {
        let Some(key) = key_of(resource, record) else {
            continue;
        };
        if let Some(first) = seen.insert(key.clone(), i) {
            problems.push(problem(
                resource.writes.natural_key.last().copied().unwrap_or("id"),
                words!(
                    "repeats the {} of element {first}",
                    "wiederholt {} von Element {first}",
                    key_name(resource)
                ),
                index(i),
            ));
            continue;
        }
        keyed.push((i, key));
    }
    keyed
}

/// Gives every new record of a resource with a secret (`Writes::secret`) a fresh one: kept
/// as the catalog says (its hash, or itself, in an internal field; its first characters where
/// declared) and returned, in the records' order, for the create's answer.
pub(super) fn issue_secrets(
    resource: &'static Resource,
    records: &mut [Record],
) -> Vec<Option<String>> {
    let Some(secret) = resource.writes.secret else {
        return vec![None; records.len()];
    };
    let (kept_in, hashed) = match secret.kept {
        SecretKept::HashIn(field) => (field, true),
        SecretKept::In(field) => (field, false),
    };
    let kept_at = position_of(resource, kept_in).expect("the catalog checks secret fields");
    let start_at = secret
        .start_in
        .map(|field| position_of(resource, field).expect("the catalog checks secret fields"));
    records
        .iter_mut()
        .map(|record| {
            let text = crate::accounts::new_secret(secret.prefix);
            record.cells[kept_at] = Cell::Text(if hashed {
                crate::accounts::secret_hash(&text)
            } else {
                text.clone()
            });
            if let Some(at) = start_at {
                record.cells[at] = Cell::Text(text.chars().take(8).collect());
            }
            Some(text)
        })
        .collect()
}
