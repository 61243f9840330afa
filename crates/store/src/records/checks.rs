//! The checks a write makes in its transaction: links, write and scope rules, natural
//! keys held, agreements, URLs.

use super::*;

/// [`outcomes`] through a [`RuleMemo`].
pub(super) async fn remembered_outcomes(
    tx: &mut WriteTx,
    judgement: &Judgement,
    memo: &mut RuleMemo,
) -> StoreResult<Vec<bool>> {
    let mut found = Vec::new();
    for (resource, id, predicate) in judgement.record_checks() {
        let key = check_key(resource, id, predicate);
        let holds = match memo.get(&key) {
            Some(holds) => *holds,
            None => {
                let statement = satisfying_ids(resource, &[id.to_string()], predicate);
                let holds = !tx.fetch(&statement, &[Kind::Text]).await?.is_empty();
                memo.insert(key, holds);
                holds
            }
        };
        found.push(holds);
    }
    Ok(found)
}

/// Reads a rule's verdict on a record about to be written, as problems (nothing when it
/// holds). `why` says what the rule is.
#[allow(clippy::too_many_arguments)]
pub(super) async fn rule_problems(
    tx: &mut WriteTx,
    resource: &'static Resource,
    rule: &Scope,
    viewer: &Viewer,
    known: &Known,
    why: &str,
    index: Option<usize>,
    memo: &mut RuleMemo,
) -> StoreResult<Vec<FieldError>> {
    let judgement = judge(resource, rule, viewer, known);
    let outcomes = remembered_outcomes(tx, &judgement, memo).await?;
    if judgement.verdict(&outcomes) == Verdict::Yes {
        return Ok(Vec::new());
    }
    let mut problems: Vec<FieldError> = judgement
        .refused(&outcomes)
        .into_iter()
        .filter(|term| term.path != "id")
        .map(|term| {
            // A rule through a link is the problem of the foreign key that feeds it.
            let first = term.path.split('.').next().unwrap_or(term.path);
            let field = resource
                .relation(first)
                .and_then(|r| resource.fk_field(r))
                .map_or(first, |f| f.name);
            problem(
                field,
                Words::english(format!("is not {}: {why}", term.anchor.describe())),
                index,
            )
        })
        .collect();
    if problems.is_empty() {
        problems.push(problem(resource.name, why.into(), index));
    }
    Ok(problems)
}

impl WriteTx {
    /// Problems of foreign keys that name no record the caller sees (one statement per
    /// foreign key field, for every record of the write); what each check found is kept in
    /// `memo`, for the rules that ask the same.
    pub(super) async fn link_problems(
        &mut self,
        resource: &'static Resource,
        records: &[(Option<usize>, &WriteValues)],
        viewer: &Viewer,
        memo: &mut RuleMemo,
    ) -> StoreResult<Vec<FieldError>> {
        let mut problems = Vec::new();
        for (field, target) in links(resource) {
            let given: Vec<(Option<usize>, String)> = records
                .iter()
                .filter(|(_, values)| !values.has_problem(&field.path))
                .filter_map(|(index, values)| values.text(&field.path).map(|id| (*index, id)))
                .collect();
            let ids: Vec<String> = given
                .iter()
                .map(|(_, id)| id.clone())
                .collect::<HashSet<_>>()
                .into_iter()
                .collect();
            let found = seen_ids(self, target, &ids, viewer).await?;
            let scope = viewer.scope(target);
            for id in &ids {
                memo.insert(check_key(target, id, &scope), found.contains(id));
            }
            for (index, id) in given {
                if !found.contains(&id) {
                    let message = if viewer.user_type() == UserType::Admin {
                        words!(
                            "no {} has id '{id}'",
                            "kein {} hat die Kennung '{id}'",
                            target.name
                        )
                    } else {
                        words!(
                            "no {} the caller sees has id '{id}'",
                            "kein für den Aufrufer sichtbares {} hat die Kennung '{id}'",
                            target.name
                        )
                    };
                    problems.push(problem(&field.path, message, index));
                }
            }
        }
        Ok(problems)
    }

    /// Problems of the write and scope rules with a record as it would be written.
    pub(super) async fn authority_problems(
        &mut self,
        resource: &'static Resource,
        record: &Record,
        own_id: Option<&str>,
        viewer: &Viewer,
        index: Option<usize>,
        memo: &mut RuleMemo,
    ) -> StoreResult<Vec<FieldError>> {
        if viewer.user_type() == UserType::Admin {
            return Ok(Vec::new());
        }
        let known = known_of(resource, record, own_id);
        let kind = viewer.user_type().as_str();
        let why = format!("a {kind} user may not write such a {}", resource.name);
        let rule = resource.authority_of(WriteAction::Write, viewer.user_type());
        let mut problems =
            rule_problems(self, resource, &rule, viewer, &known, &why, index, memo).await?;
        if problems.is_empty() {
            let why = format!(
                "the {} would be outside what the caller sees",
                resource.name
            );
            let scope = resource.scope_of(viewer.user_type());
            problems =
                rule_problems(self, resource, &scope, viewer, &known, &why, index, memo).await?;
        }
        Ok(problems)
    }

    /// The ids of the records holding each of many natural keys, in a few statements: keys
    /// are grouped by all their parts but the last (a brand, a warehouse), and each group is
    /// one `… AND last IN (…)` lookup per 500 keys, served by the natural key's unique index.
    /// Keys whose last part is not text or an id are looked up one by one.
    pub(super) async fn holders_of(
        &mut self,
        resource: &'static Resource,
        keys: &[Vec<String>],
    ) -> StoreResult<HashMap<Vec<String>, String>> {
        const KEYS_PER_STATEMENT: usize = 500;
        let mut found = HashMap::new();
        let columns: Vec<(String, FieldType)> = resource
            .writes
            .natural_key
            .iter()
            .map(|path| {
                let field = resource.field_at(path).expect("natural keys are fields");
                let column = field
                    .folded_column()
                    .unwrap_or_else(|| field.column.clone());
                (column, field.ty)
            })
            .collect();
        let Some(((last, last_type), prefix)) = columns.split_last() else {
            return Ok(found);
        };
        if !matches!(last_type, FieldType::Text | FieldType::Id) {
            for key in keys {
                if let Some(holder) = self.holder_of(resource, key, None).await? {
                    found.insert(key.clone(), holder);
                }
            }
            return Ok(found);
        }
        let mut groups: HashMap<&[String], Vec<&str>> = HashMap::new();
        for key in keys {
            let (tail, head) = key.split_last().expect("a key has every part");
            groups.entry(head).or_default().push(tail.as_str());
        }
        for (head, tails) in groups {
            for chunk in tails.chunks(KEYS_PER_STATEMENT) {
                let mut condition = Condition::all();
                for ((column, _), value) in prefix.iter().zip(head) {
                    condition = condition.add(Expr::col(Alias::new(column)).eq(value.as_str()));
                }
                condition = condition
                    .add(Expr::col(Alias::new(last)).is_in(chunk.iter().map(|t| t.to_string())));
                let statement = Query::select()
                    .column(Alias::new("id"))
                    .column(Alias::new(last))
                    .from(Alias::new(resource.table))
                    .cond_where(condition)
                    .to_owned();
                for row in self.fetch(&statement, &[Kind::Text, Kind::Text]).await? {
                    if let (Some(id), Some(tail)) = (row[0].as_text(), row[1].as_text()) {
                        let mut key = head.to_vec();
                        key.push(tail.to_string());
                        found.insert(key, id.to_string());
                    }
                }
            }
        }
        Ok(found)
    }

    /// The id of the record that holds a natural key, other than `except`.
    pub(super) async fn holder_of(
        &mut self,
        resource: &'static Resource,
        key: &[String],
        except: Option<&str>,
    ) -> StoreResult<Option<String>> {
        let mut condition = Condition::all();
        for (path, value) in resource.writes.natural_key.iter().zip(key) {
            let field = resource.field_at(path).expect("natural keys are fields");
            let column = field
                .folded_column()
                .unwrap_or_else(|| field.column.clone());
            condition = condition.add(Expr::col(Alias::new(column)).eq(value.as_str()));
        }
        if let Some(except) = except {
            condition = condition.add(Expr::col(Alias::new("id")).ne(except));
        }
        let statement = Query::select()
            .column(Alias::new("id"))
            .from(Alias::new(resource.table))
            .cond_where(condition)
            .limit(1)
            .to_owned();
        let rows = self.fetch(&statement, &[Kind::Text]).await?;
        Ok(rows
            .first()
            .and_then(|row| row[0].as_text().map(str::to_string)))
    }

    /// Whether the caller sees and may write the existing record `id`; a record it sees stays
    /// locked until the transaction ends.
    pub(crate) async fn may_write(
        &mut self,
        resource: &'static Resource,
        id: &str,
        viewer: &Viewer,
    ) -> StoreResult<(bool, bool)> {
        let found = self
            .seen_and_writable(resource, &[id.to_string()], viewer)
            .await?;
        let seen = found.values().next();
        Ok((seen.is_some(), seen.is_some_and(|f| f.writable)))
    }

    /// The records among `ids` (distinct) that the caller sees, by id, each with whether it
    /// may write it and its version: both rules in one statement
    /// (`sql::seen_and_writable_ids`), which locks those records until the transaction ends
    /// (`FOR NO KEY UPDATE` on PostgreSQL; SQLite writes one transaction at a time), so what
    /// it found holds until the write commits.
    pub(super) async fn seen_and_writable(
        &mut self,
        resource: &'static Resource,
        ids: &[String],
        viewer: &Viewer,
    ) -> StoreResult<HashMap<String, Found>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let mut statement = seen_and_writable_ids(
            resource,
            ids,
            &viewer.scope(resource),
            &viewer.authority(resource, WriteAction::Write),
        );
        // The stored record comes with its check: an update compares it with the values it
        // was given, and reading it here spares a statement while the write waits its turn.
        let fields = stored_fields(resource);
        statement
            .column(Alias::new(ROW_VERSION))
            .columns(fields.iter().map(|f| Alias::new(f.column.as_str())));
        if !self.is_optimistic() {
            // An optimistic write names the version it read in its update instead.
            statement.lock(LockType::NoKeyUpdate);
        }
        let mut found = HashMap::with_capacity(ids.len());
        let mut kinds = vec![Kind::Text, Kind::Integer, Kind::Integer];
        kinds.extend(fields.iter().map(|f| Kind::of(f.ty)));
        for mut row in self.fetch(&statement, &kinds).await? {
            let stored = row.split_off(3);
            let (Some(id), Cell::Integer(version)) = (row[0].as_text(), &row[2]) else {
                continue;
            };
            let writable = row[1] == Cell::Integer(1);
            let record = records_of(resource, vec![stored]).pop();
            found.insert(
                id.to_string(),
                Found {
                    writable,
                    version: *version,
                    record,
                },
            );
        }
        Ok(found)
    }

    /// URLs naming the loopback address where the catalog asks for a public https receiver
    /// (`Domain::SecureUrl`), unless the store was opened to allow them
    /// (`--webhook-allow-insecure-localhost`, for tests).
    pub(super) fn insecure_url_problems(
        &self,
        resource: &'static Resource,
        records: &[Record],
        indexes: &[Option<usize>],
    ) -> Vec<FieldError> {
        if self.insecure_loopback {
            return Vec::new();
        }
        let mut problems = Vec::new();
        for field in stored_fields(resource) {
            if field.domain != Some(Domain::SecureUrl) {
                continue;
            }
            for (record, index) in records.iter().zip(indexes) {
                if let Some(url) = cell_of(resource, record, &field.path).and_then(Cell::as_text)
                    && is_insecure_loopback_url(url)
                {
                    problems.push(problem(
                        &field.path,
                        brandhub_catalog::webhook_url_problem(url, false)
                            .unwrap_or_default()
                            .into(),
                        *index,
                    ));
                }
            }
        }
        problems
    }

    /// Problems of the catalog's agreements (`Writes::agreements`) in records about to be
    /// written: the value reached through a path differs from the record's own field.
    pub(super) async fn agreement_problems(
        &mut self,
        resource: &'static Resource,
        records: &[Record],
        indexes: &[Option<usize>],
    ) -> StoreResult<Vec<FieldError>> {
        let mut problems = Vec::new();
        for (path, own) in &resource.writes.agreements {
            let reached = self.follow(resource, records, path).await?;
            let link = path.split('.').next().unwrap_or(path);
            let link_field = resource
                .relation(link)
                .and_then(|r| resource.fk_field(r))
                .map_or(*path, |f| f.name);
            for ((record, value), index) in records.iter().zip(reached).zip(indexes) {
                let mine = cell_of(resource, record, own).and_then(Cell::as_text);
                if let (Some(value), Some(mine)) = (value, mine)
                    && !value.eq_ignore_ascii_case(mine)
                {
                    problems.push(problem(
                        link_field,
                        words!(
                            "belongs to another {own} ('{value}', not '{mine}')",
                            "gehört zu einem anderen {own} ('{value}', nicht '{mine}')"
                        ),
                        *index,
                    ));
                }
            }
        }
        Ok(problems)
    }
}
