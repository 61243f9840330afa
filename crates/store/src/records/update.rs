//! Updates: a `PATCH` of one record (read or unread) and updates of many records in
//! batches.

use super::*;

/// The write of [`Store::update_record_answered`] inside a transaction of the caller's; the
/// record's version after the write.
pub(super) async fn update_in(
    tx: &mut WriteTx,
    resource: &'static Resource,
    id: &str,
    values: &WriteValues,
    writer: &Writer<'_>,
    if_match: Option<&IfMatch>,
) -> StoreResult<i64> {
    let versions = update_batch_in(tx, resource, &[(id, values, None)], writer, if_match).await?;
    Ok(versions.first().copied().unwrap_or_default())
}

/// A `PATCH` whose values need nothing of the record as stored, written without reading it
/// first: in an optimistic write ([`WriteTx::is_optimistic`]), an update whose `WHERE` asks
/// what [`update_batch_in`] checks before it writes (the record is in the caller's scope,
/// its write rule admits it, `If-Match` names its version), sent with the commit as one
/// statement on PostgreSQL, in the one batch of the write turn on SQLite: one statement
/// fewer. Whether it was; when it writes no row the
/// commit fails with [`StoreError::raced`], and the caller writes again the checked way,
/// which answers 404, 403 or 412 as the order of those checks says.
///
/// Only values that change neither a link (derived fields, the write rules), a natural key,
/// a field of a unique rule compared exactly (a value taken is told with its holder), a
/// list, a field another must agree with (`Writes::agreements`), a field of a bound across
/// fields (`Writes::bounds`), nor a URL that is checked, of a resource with no policy of its
/// own, and with no problem found by the parse: everything else [`update_batch_in`] checks is
/// then about the record as stored.
pub(super) async fn update_unread_in(
    tx: &mut WriteTx,
    resource: &'static Resource,
    id: &str,
    values: &WriteValues,
    writer: &Writer<'_>,
    if_match: Option<&IfMatch>,
) -> StoreResult<bool> {
    if !tx.is_optimistic() || !needs_no_stored_record(resource, values) {
        return Ok(false);
    }
    let viewer = writer.viewer;
    let mut conditions: Vec<Expr> = [
        viewer.scope(resource),
        viewer.authority(resource, WriteAction::Write),
    ]
    .iter()
    .filter(|rule| !rule.is_always())
    .map(condition)
    .collect();
    if let Some(IfMatch::Versions(versions)) = if_match {
        conditions.push(Expr::col(Alias::new(ROW_VERSION)).is_in(versions.iter().copied()));
    }
    tx.update_cells_unread(resource, id, &values.cells, conditions)
        .await?;
    Ok(true)
}

/// Whether an update's values can be written without the record as stored
/// ([`update_unread_in`]).
pub(super) fn needs_no_stored_record(resource: &'static Resource, values: &WriteValues) -> bool {
    let writes = &resource.writes;
    writes.policy.is_none()
        && values.problems.is_empty()
        && values.lists.is_empty()
        && !values.cells.is_empty()
        && values.cells.iter().all(|(field, _)| {
            let path = field.path.as_str();
            field.ty != FieldType::Id
                && !field.stamped
                && field.derived_from.is_none()
                && field.domain != Some(Domain::SecureUrl)
                && writes.update.contains(&path)
                && !writes.natural_key.contains(&path)
                && !resource
                    .exact_keys()
                    .any(|index| index.paths.contains(&path))
                && !writes.agreements.iter().any(|(_, own)| *own == path)
                && !writes
                    .bounds
                    .iter()
                    .any(|b| b.field == path || b.when == path)
        })
}

/// An upsert's records that exist already, at most this many checked and updated together.
pub(super) const UPDATES_PER_BATCH: usize = 500;

/// Updates records of one resource, each `(id, values, index)` (`index` where the write was
/// an array) as [`Store::update_record_answered`] does one: reads, checks and derived fields
/// in batches, every problem of every record in one 422, then one `UPDATE` a record. An
/// upsert's existing records go through here together instead of one at a time.
pub(super) async fn update_many_in(
    tx: &mut WriteTx,
    resource: &'static Resource,
    updates: &[(&str, &WriteValues, Option<usize>)],
    writer: &Writer<'_>,
) -> StoreResult<Vec<i64>> {
    let mut versions = Vec::with_capacity(updates.len());
    for batch in updates.chunks(UPDATES_PER_BATCH) {
        versions.extend(update_batch_in(tx, resource, batch, writer, None).await?);
    }
    Ok(versions)
}

/// [`update_many_in`] of one batch; for each update, its record's version after the write.
/// `if_match` (a single `PATCH`'s precondition) is checked against the version the scope
/// check read with the row locked: 404, then 403, then 412, in one statement.
pub(super) async fn update_batch_in(
    tx: &mut WriteTx,
    resource: &'static Resource,
    updates: &[(&str, &WriteValues, Option<usize>)],
    writer: &Writer<'_>,
    if_match: Option<&IfMatch>,
) -> StoreResult<Vec<i64>> {
    let at = |error: StoreError, index: Option<usize>| match index {
        Some(i) => error.at_element(i),
        None => error,
    };
    let ids: Vec<String> = updates.iter().map(|(id, _, _)| id.to_string()).collect();
    let mut found = tx.seen_and_writable(resource, &ids, writer.viewer).await?;
    if let Some((id, _, index)) = updates.iter().find(|(id, _, _)| !found.contains_key(*id)) {
        return Err(at(not_found(resource, id), *index));
    }
    if let Some((_, _, index)) = updates
        .iter()
        .find(|(id, _, _)| !found.get(*id).is_some_and(|f| f.writable))
    {
        return Err(at(forbidden(resource, writer.viewer), *index));
    }
    // The versions were read with the rows locked, by the same statement; a precondition
    // comes after the scope, so it never tells whether a record exists.
    if let Some(if_match) = if_match {
        for (id, _, index) in updates {
            let version = found.get(*id).map_or(0, |f| f.version);
            if !if_match.matches(version) {
                return Err(at(precondition_failed(resource, id, version), *index));
            }
        }
    }
    let mut loaded: Vec<Record> = found.values_mut().filter_map(|f| f.record.take()).collect();
    tx.load_lists(resource, &mut loaded).await?;
    let by_id: HashMap<String, Record> = loaded
        .into_iter()
        .map(|record| (record.id().to_string(), record))
        .collect();
    let Changed {
        mut problems,
        mut records,
        befores,
        changes: mut all_changes,
        list_changes: all_list_changes,
    } = changed(resource, updates, by_id)?;
    let given: Vec<(Option<usize>, &WriteValues)> = updates
        .iter()
        .map(|(_, values, index)| (*index, *values))
        .collect();
    let mut memo = RuleMemo::new();
    problems.extend(
        tx.link_problems(resource, &given, writer.viewer, &mut memo)
            .await?,
    );
    // Derived fields follow a changed link.
    let relinked: Vec<usize> = all_changes
        .iter()
        .enumerate()
        .filter(|(_, changes)| {
            changes.iter().any(|(field, _)| {
                stored_fields(resource).iter().any(|f| {
                    f.derived_from
                        .and_then(|path| path.split('.').next())
                        .and_then(|link| resource.relation(link))
                        .is_some_and(|r| r.kind == (RelationKind::ToOne { fk: field.name }))
                })
            })
        })
        .map(|(i, _)| i)
        .collect();
    if !relinked.is_empty() {
        let mut moved: Vec<Record> = relinked.iter().map(|i| records[*i].clone()).collect();
        tx.fill_derived(resource, &mut moved).await?;
        for (i, record) in relinked.iter().zip(moved) {
            records[*i] = record;
        }
    }
    let now = tx.now_timestamp();
    stamp(resource, &now, &mut records, &befores, &mut all_changes);
    let indexes: Vec<Option<usize>> = updates.iter().map(|(_, _, index)| *index).collect();
    problems.extend(tx.agreement_problems(resource, &records, &indexes).await?);
    problems.extend(tx.insecure_url_problems(resource, &records, &indexes));
    let bodies: Vec<&WriteValues> = updates.iter().map(|(_, values, _)| *values).collect();
    problems.extend(bound_problems(resource, &records, &bodies, &indexes));
    for (((id, values, index), record), before) in
        updates.iter().zip(records.iter_mut()).zip(&befores)
    {
        // The rules judge a record by its ids alone (`known_of`); with none of them changed,
        // the record as it will be is judged as the stored one was by `seen_and_writable`,
        // with its row locked: by the same rules.
        if ids_changed(resource, record, before) {
            problems.extend(
                tx.authority_problems(resource, record, Some(id), writer.viewer, *index, &mut memo)
                    .await?,
            );
        }
        problems.extend(
            policy::problems(tx, resource, writer, record, Some(before), values, *index).await?,
        );
    }
    // Unique rules compared exactly, on the batch as it ends up: each taken value is a
    // problem of its element in an array, a 409 naming its holder for one record.
    let mut taken_one = None;
    for taken in exact_keys_taken(tx, resource, &ids, &records, &befores, writer).await? {
        match updates[taken.at].2 {
            Some(index) => problems.push(problem(taken.path, taken.message(resource), Some(index))),
            None => taken_one = taken_one.or(Some(taken)),
        }
    }
    if !problems.is_empty() {
        return Err(sorted(problems));
    }
    if let Some(taken) = taken_one {
        let detail = format!("The {} {}.", taken.path, taken.message(resource));
        return Err(StoreError::conflict(detail, taken.path));
    }
    keys_free(tx, resource, updates, &records, &befores, writer).await?;
    // A value moving from one record of the batch to another (two swapping theirs) is
    // first let go by the record that has it, so that no row breaks the unique index on
    // the way to the end state the checks judged.
    free_exact_keys(tx, resource, &ids, &records, &befores).await?;
    let mut versions = Vec::with_capacity(updates.len());
    for ((id, _, _), (changes, list_changes)) in updates
        .iter()
        .zip(all_changes.iter().zip(&all_list_changes))
    {
        let read_at = found.get(*id).map(|f| f.version);
        let moved = tx.update_cells(resource, id, changes, read_at).await?;
        // No other write moves the version meanwhile: the row stays locked until the commit,
        // or (an optimistic write) the update is made only at the version read.
        versions.push(read_at.unwrap_or_default() + i64::from(moved));
        for (_, field, given) in list_changes {
            tx.replace_list(field, id, given).await?;
        }
    }
    Ok(versions)
}

/// The records of a batch of updates as they will be, with what changes in each, made
/// without I/O from the records as loaded. Its problems are those of the values themselves
/// and of fields an update may not change.
struct Changed {
    problems: Vec<FieldError>,
    records: Vec<Record>,
    befores: Vec<Record>,
    changes: Vec<Vec<(&'static Field, Cell)>>,
    list_changes: Vec<Vec<(usize, &'static Field, Vec<String>)>>,
}

/// See [`Changed`]; `Err` (404) names a record that was not loaded.
fn changed(
    resource: &'static Resource,
    updates: &[(&str, &WriteValues, Option<usize>)],
    mut by_id: HashMap<String, Record>,
) -> StoreResult<Changed> {
    let mut problems: Vec<FieldError> = Vec::new();
    let mut records = Vec::with_capacity(updates.len());
    let mut befores = Vec::with_capacity(updates.len());
    let mut all_changes = Vec::with_capacity(updates.len());
    let mut all_list_changes = Vec::with_capacity(updates.len());
    for (id, values, index) in updates {
        let Some(mut record) = by_id.remove(*id) else {
            let error = not_found(resource, id);
            return Err(match index {
                Some(i) => error.at_element(*i),
                None => error,
            });
        };
        // Fields an update may not change are refused by the parse; an upsert's body may
        // repeat the natural key and its fixed links unchanged.
        let changes: Vec<(&'static Field, Cell)> = values
            .cells
            .iter()
            .filter(|(field, cell)| cell_of(resource, &record, &field.path) != Some(cell))
            .cloned()
            .collect();
        let list_changes: Vec<(usize, &'static Field, Vec<String>)> = list_fields(resource)
            .into_iter()
            .enumerate()
            .filter_map(|(i, field)| {
                values
                    .list(&field.path)
                    .filter(|given| **given != record.lists[i])
                    .map(|given| (i, field, given.clone()))
            })
            .collect();
        problems.extend(values.problems.iter().map(|p| FieldError {
            index: *index,
            ..p.clone()
        }));
        let changed_paths = changes
            .iter()
            .map(|(field, _)| *field)
            .chain(list_changes.iter().map(|(_, field, _)| *field));
        for field in changed_paths {
            if !resource.writes.update.contains(&field.path.as_str())
                && !values.has_problem(&field.path)
            {
                problems.push(problem(&field.path, "cannot be changed".into(), *index));
            }
        }
        befores.push(record.clone());
        for (field, cell) in &changes {
            if let Some(i) = position_of(resource, &field.path) {
                record.cells[i] = cell.clone();
            }
        }
        for (i, _, given) in &list_changes {
            record.lists[*i].clone_from(given);
        }
        records.push(record);
        all_changes.push(changes);
        all_list_changes.push(list_changes);
    }
    Ok(Changed {
        problems,
        records,
        befores,
        changes: all_changes,
        list_changes: all_list_changes,
    })
}

/// Sets the stamped fields of `records` to `now` and adds to each record's changes whatever
/// else it now holds differently from `befores` (derived fields), without I/O.
fn stamp(
    resource: &'static Resource,
    now: &str,
    records: &mut [Record],
    befores: &[Record],
    all_changes: &mut [Vec<(&'static Field, Cell)>],
) {
    for ((record, before), changes) in records.iter_mut().zip(befores).zip(all_changes.iter_mut()) {
        for (i, field) in stored_fields(resource).into_iter().enumerate() {
            if field.stamped {
                record.cells[i] = Cell::Text(now.to_string());
            }
            if (field.stamped || record.cells[i] != before.cells[i])
                && !changes.iter().any(|(f, _)| f.path == field.path)
            {
                changes.push((field, record.cells[i].clone()));
            }
        }
    }
}

/// 409 when a record's natural key moved onto another record's (a key that did not move is
/// the record's own).
async fn keys_free(
    tx: &mut WriteTx,
    resource: &'static Resource,
    updates: &[(&str, &WriteValues, Option<usize>)],
    records: &[Record],
    befores: &[Record],
    writer: &Writer<'_>,
) -> StoreResult<()> {
    let keyed: Vec<(usize, Vec<String>)> = records
        .iter()
        .zip(befores)
        .enumerate()
        .filter_map(|(i, (record, before))| {
            key_of(resource, record)
                .filter(|key| key_of(resource, before).as_ref() != Some(key))
                .map(|key| (i, key))
        })
        .collect();
    if !keyed.is_empty() {
        let keys: Vec<Vec<String>> = keyed.iter().map(|(_, key)| key.clone()).collect();
        let holders = tx.holders_of(resource, &keys).await?;
        for (i, key) in &keyed {
            if let Some(holder) = holders.get(key)
                && holder != updates[*i].0
            {
                let seen =
                    seen_ids(tx, resource, std::slice::from_ref(holder), writer.viewer).await?;
                let named = seen.contains(holder).then_some(holder.as_str());
                return Err(key_taken(resource, named, updates[*i].2));
            }
        }
    }
    Ok(())
}

/// What an update found of a record it changes (`WriteTx::seen_and_writable`).
pub(super) struct Found {
    /// The caller may write it (it sees it, or it would not have been found).
    pub(super) writable: bool,
    /// Its version as locked.
    pub(super) version: i64,
    /// The record as stored (list fields empty).
    pub(super) record: Option<Record>,
}

/// Whether a record about to be written holds other ids (its own, its links, its derived
/// links) than it did.
pub(super) fn ids_changed(resource: &'static Resource, record: &Record, before: &Record) -> bool {
    stored_fields(resource)
        .iter()
        .zip(record.cells.iter().zip(&before.cells))
        .any(|(field, (now, then))| field.ty == FieldType::Id && now != then)
}

/// A value of a unique rule compared exactly ([`brandhub_catalog::IndexDef::exact`]) that a
/// record of a batch would take from another.
struct Taken {
    /// The position of the record in the batch.
    at: usize,
    /// The field of the rule that names the value (the one the write changed).
    path: &'static str,
    /// The value.
    value: String,
    /// The record that has it, when the caller sees that record.
    holder: Option<String>,
}

impl Taken {
    fn message(&self, resource: &Resource) -> Words {
        match &self.holder {
            Some(holder) => words!(
                "'{}' is taken by the {} '{holder}' (letter case counts): choose another",
                "'{}' ist schon vergeben an {} '{holder}' (Groß- und Kleinschreibung zählt): bitte einen anderen wählen",
                self.value,
                resource.name
            ),
            None => words!(
                "'{}' is taken by a record the caller does not see: choose another",
                "'{}' ist schon vergeben an einen Datensatz, den der Aufrufer nicht sieht: bitte einen anderen wählen",
                self.value
            ),
        }
    }
}

/// The values of a unique rule compared exactly, of a record as it is: `None` when one of
/// its fields is unset (empty text), which no such rule counts.
fn exact_key(resource: &Resource, paths: &[&'static str], record: &Record) -> Option<Vec<String>> {
    paths
        .iter()
        .map(|path| match cell_of(resource, record, path) {
            Some(Cell::Text(text)) if !text.is_empty() => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// The values of unique rules compared exactly that the records of a batch (`ids`, as they
/// will be, from `befores`) would take: from another record of the batch as it ends up (the
/// record that keeps its value, else the first that takes it, has it), or from a record
/// outside the batch. A value another record of the batch lets go of is free.
async fn exact_keys_taken(
    tx: &mut WriteTx,
    resource: &'static Resource,
    ids: &[String],
    records: &[Record],
    befores: &[Record],
    writer: &Writer<'_>,
) -> StoreResult<Vec<Taken>> {
    let mut taken = Vec::new();
    for index in resource.exact_keys() {
        let finals: Vec<Option<Vec<String>>> = records
            .iter()
            .map(|record| exact_key(resource, &index.paths, record))
            .collect();
        let moved: Vec<usize> = (0..records.len())
            .filter(|i| {
                finals[*i].is_some()
                    && finals[*i] != exact_key(resource, &index.paths, &befores[*i])
            })
            .collect();
        if moved.is_empty() {
            continue;
        }
        let path = |i: usize| {
            index
                .paths
                .iter()
                .copied()
                .find(|path| {
                    cell_of(resource, &records[i], path) != cell_of(resource, &befores[i], path)
                })
                .unwrap_or(index.paths[index.paths.len() - 1])
        };
        let value = |i: usize| {
            cell_of(resource, &records[i], path(i))
                .and_then(Cell::as_text)
                .unwrap_or_default()
                .to_string()
        };
        let mut found: Vec<(usize, String)> = Vec::new();
        // Within the batch.
        for &i in &moved {
            let keeper = (0..records.len())
                .filter(|j| *j != i && finals[*j] == finals[i])
                .min_by_key(|j| (moved.contains(j), *j));
            if let Some(j) = keeper
                && (!moved.contains(&j) || j < i)
            {
                found.push((i, ids[j].clone()));
            }
        }
        // Outside it: one statement for every key.
        let columns: Vec<&str> = index
            .paths
            .iter()
            .map(|path| {
                resource
                    .field_at(path)
                    .expect("the catalog checks index paths")
                    .column
                    .as_str()
            })
            .collect();
        let mut statement = brandhub_query::sql::ids_with_any_key(
            resource.table,
            moved.iter().map(|&i| {
                columns
                    .iter()
                    .copied()
                    .zip(finals[i].iter().flatten().map(String::as_str))
                    .collect()
            }),
        );
        statement.and_where(Expr::col(Alias::new("id")).is_not_in(ids.iter().map(String::as_str)));
        let mut kinds = vec![Kind::Text];
        for path in &index.paths {
            let field = resource
                .field_at(path)
                .expect("the catalog checks index paths");
            statement.column(Alias::new(field.column.as_str()));
            // The rule's own partial index holds only values that count: said here, the
            // database looks the keys up in it (not in a wider index of their first column).
            statement.and_where(crate::schema::exact_key_counts(field));
            kinds.push(Kind::Text);
        }
        for row in tx.fetch(&statement, &kinds).await? {
            let key: Option<Vec<String>> = row[1..]
                .iter()
                .map(|cell| cell.as_text().map(str::to_string))
                .collect();
            let Some(holder) = row[0].as_text() else {
                continue;
            };
            for &i in &moved {
                if finals[i] == key && !found.iter().any(|(at, _)| *at == i) {
                    found.push((i, holder.to_string()));
                }
            }
        }
        let holders: Vec<String> = found.iter().map(|(_, holder)| holder.clone()).collect();
        let seen = seen_ids(tx, resource, &holders, writer.viewer).await?;
        for (i, holder) in found {
            taken.push(Taken {
                at: i,
                path: path(i),
                value: value(i),
                holder: seen.contains(&holder).then_some(holder),
            });
        }
    }
    taken.sort_by_key(|t| t.at);
    Ok(taken)
}

/// Lets go, before a batch writes them, of the values of unique rules compared exactly that
/// a record of the batch has and another takes (one statement per rule): their text fields
/// set to empty, which no such rule counts. Each record is then written with its end value.
async fn free_exact_keys(
    tx: &mut WriteTx,
    resource: &'static Resource,
    ids: &[String],
    records: &[Record],
    befores: &[Record],
) -> StoreResult<()> {
    for index in resource.exact_keys() {
        let finals: Vec<Option<Vec<String>>> = records
            .iter()
            .map(|record| exact_key(resource, &index.paths, record))
            .collect();
        let freed: Vec<&str> = (0..records.len())
            .filter(|i| {
                let before = exact_key(resource, &index.paths, &befores[*i]);
                before.is_some()
                    && before != finals[*i]
                    && finals
                        .iter()
                        .enumerate()
                        .any(|(j, end)| j != *i && *end == before)
            })
            .map(|i| ids[i].as_str())
            .collect();
        if freed.is_empty() {
            continue;
        }
        let mut update = Query::update();
        update.table(Alias::new(resource.table));
        for path in &index.paths {
            let field = resource
                .field_at(path)
                .expect("the catalog checks index paths");
            if field.ty == FieldType::Text {
                crate::write::set_field(&mut update, field, &Cell::Text(String::new()));
            }
        }
        update.and_where(Expr::col(Alias::new("id")).is_in(freed.iter().copied()));
        tx.update_unanswered(resource.table, update, &freed, false)
            .await?;
    }
    Ok(())
}
