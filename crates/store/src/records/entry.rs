//! The entry points of JSON writes: each a plan run by the one executor
//! ([`crate::write::executor`]).

use super::*;
use brandhub_problem::words;

impl Store {
    /// Creates the records of a write (all or none); with `upsert`, a record whose natural key
    /// is taken changes that record instead (it must be one the caller may write). `indexed`
    /// says whether the body was an array (problems then carry each record's index).
    pub async fn create_records(
        &self,
        resource: &'static Resource,
        items: &[WriteValues],
        writer: &Writer<'_>,
        upsert: bool,
        indexed: bool,
    ) -> StoreResult<Vec<Written>> {
        let (written, _) = self
            .create_records_answered(resource, items, writer, upsert, indexed, None)
            .await?;
        Ok(written)
    }

    /// [`Store::create_records`], with the answer of one new record when the write's own
    /// statement could read it: `answer` (a read of the resource as the caller sees it, with
    /// its timing) narrowed to the new record's id, rendered. `None` when the write did not
    /// read it (SQLite, an array or an upsert, a retry after a race, a plan that reaches its
    /// own table again), and the caller reads it after the write.
    pub async fn create_records_answered(
        &self,
        resource: &'static Resource,
        items: &[WriteValues],
        writer: &Writer<'_>,
        upsert: bool,
        indexed: bool,
        answer: Option<(&ReadPlan, &Timing)>,
    ) -> StoreResult<(Vec<Written>, Option<RenderedPage>)> {
        // One new record is first checked unlocked and written by one statement that commits
        // itself (on SQLite one batch in the write turn: [`Begin::CheckingFirst`]), on
        // condition that its natural key is still free; a key taken meanwhile is checked
        // again in a transaction, which then finds its holder.
        let begin = if items.len() == 1 && !upsert {
            Begin::CheckingFirst
        } else {
            Begin::Locking
        };
        let plan = WritePlan::retrying(create_entry(items, upsert, indexed), begin);
        let created = self
            .execute_committed(plan, |mut tx, _| {
                Box::pin(async move {
                    let stepped = async {
                        let Some(written) =
                            try_create_in(&mut tx, resource, items, writer, upsert, indexed)
                                .await?
                        else {
                            return Ok(Outcome::Again);
                        };
                        // The one record created, read by the statement that writes it.
                        let plan = match (answer, written.as_slice()) {
                            (Some((template, _)), [one])
                                if one.created && tx.commit_can_answer() =>
                            {
                                Some(template.narrowed_to(std::slice::from_ref(&one.id)))
                            }
                            _ => None,
                        }
                        .filter(|plan| !reaches_own_table(plan));
                        if let Some(plan) = &plan {
                            self.answer_within(&mut tx, plan, writer.viewer);
                        }
                        Ok(Outcome::Commit((written, plan)))
                    }
                    .await;
                    (tx, stepped)
                })
            })
            .await;
        let ((written, plan), committed) = match created {
            Err(error) if error.is_raced() => return Err(raced(resource)),
            done => done?,
        };
        let read = plan.zip(committed.and_then(|c| c.answer));
        let page = match (read, answer) {
            (Some((plan, rows)), Some((_, timing))) => Some(
                self.render_read_by_write(&plan, rows, writer.viewer, timing)
                    .await?,
            ),
            _ => None,
        };
        Ok((written, page.filter(|page| page.records > 0)))
    }

    /// [`Store::create_records`] applied once per `key` (docs/API.md, "Writes: concurrency
    /// and idempotency"): the key is claimed in the write's own transaction; when the same
    /// request came first, nothing is written and its kept answer is returned instead (`Err`
    /// 409 when another request did).
    pub async fn create_records_once(
        &self,
        resource: &'static Resource,
        items: &[WriteValues],
        writer: &Writer<'_>,
        upsert: bool,
        indexed: bool,
        key: &IdempotencyKey,
    ) -> StoreResult<Result<Vec<Written>, KeptAnswer>> {
        let plan = WritePlan::retrying(create_entry(items, upsert, indexed), Begin::Locking);
        let done = self
            .execute(plan, |mut tx, _| {
                Box::pin(async move {
                    let stepped = async {
                        if let Some(kept) = tx.claim_key(key).await? {
                            return Ok(Outcome::RollBack(Err(kept)));
                        }
                        let Some(written) =
                            try_create_in(&mut tx, resource, items, writer, upsert, indexed)
                                .await?
                        else {
                            return Ok(Outcome::Again);
                        };
                        let pairs: Vec<(String, bool)> =
                            written.iter().map(|w| (w.id.clone(), w.created)).collect();
                        tx.keep_written(key, &pairs).await?;
                        Ok(Outcome::Commit(Ok(written)))
                    }
                    .await;
                    (tx, stepped)
                })
            })
            .await;
        match done {
            Err(error) if error.is_raced() => Err(raced(resource)),
            done => done,
        }
    }

    /// Changes the given fields of the record `id` of `answer`'s resource: 404 outside the
    /// caller's scope, 403 when the caller may not write it, 422 listing every problem, 409
    /// for a natural key taken, 412 under an `If-Match` precondition the record's version
    /// does not meet. Returns the record's version after the write and the answer: the
    /// record as `answer` (a by-id read of it, as the caller sees it) shows it after the
    /// write, `None` when the caller no longer sees it.
    ///
    /// The record is first checked unlocked and written on condition that its version did
    /// not move ([`Begin::CheckingFirst`]: on PostgreSQL a `PATCH` of one record is then
    /// two statements, the check and the write, neither of them `BEGIN` or `COMMIT`); a
    /// record that changed meanwhile is checked again with its row locked until the commit,
    /// as every other write does. On PostgreSQL the statement that writes and commits reads
    /// the answer's record too, from the row it wrote ([`WriteTx::answer_with`]), and only
    /// its expansions are read apart; on SQLite, and when the `PATCH` ran again the locking
    /// way, the record is read after the commit.
    pub async fn update_record_answered(
        &self,
        id: &str,
        values: &WriteValues,
        writer: &Writer<'_>,
        if_match: Option<&IfMatch>,
        answer: &ReadPlan,
        timing: &Timing,
    ) -> StoreResult<(i64, Option<RenderedPage>)> {
        let resource = answer.resource;
        let id = id.to_ascii_uppercase();
        let plan = WritePlan::retrying(EntryPoint::Update, Begin::CheckingFirst);
        let (checked, committed) = self
            .execute_committed(plan, |mut tx, attempt| {
                let id = id.as_str();
                Box::pin(async move {
                    let stepped = async {
                        if attempt > 0 {
                            // Again, locking: the record is read with its row locked.
                            let version =
                                update_in(&mut tx, resource, id, values, writer, if_match).await?;
                            return Ok(Outcome::Commit(Some(version)));
                        }
                        // Only a PostgreSQL write that checks before it locks can carry its
                        // answer.
                        if tx.commit_can_answer() && !reaches_own_table(answer) {
                            self.answer_within(&mut tx, answer, writer.viewer);
                        }
                        if update_unread_in(&mut tx, resource, id, values, writer, if_match).await?
                        {
                            return Ok(Outcome::Commit(None));
                        }
                        let version =
                            update_in(&mut tx, resource, id, values, writer, if_match).await?;
                        Ok(Outcome::Commit(Some(version)))
                    }
                    .await;
                    (tx, stepped)
                })
            })
            .await?;
        let committed = committed.ok_or(StoreError::Internal)?;
        let version = checked.or(committed.version).ok_or_else(|| {
            crate::db::internal("a PATCH", "its commit did not read the version it wrote")
        })?;
        let rows = committed.answer;
        let page = match rows {
            Some(rows) => {
                self.render_read_by_write(answer, rows, writer.viewer, timing)
                    .await?
            }
            None => self.render_fresh(answer, writer.viewer, timing).await?,
        };
        Ok((version, (page.records > 0).then_some(page)))
    }

    /// Removes the record `id`: 404 outside the caller's scope, 403 when the caller may not
    /// write it, 409 naming what still refers to it.
    pub async fn delete_record(
        &self,
        resource: &'static Resource,
        id: &str,
        writer: &Writer<'_>,
    ) -> StoreResult<()> {
        self.delete_record_if(resource, id, writer, None).await
    }

    /// [`Store::delete_record`] under an `If-Match` precondition (412 when the record's
    /// version is not one it names), checked with the record's row locked.
    pub async fn delete_record_if(
        &self,
        resource: &'static Resource,
        id: &str,
        writer: &Writer<'_>,
        if_match: Option<&IfMatch>,
    ) -> StoreResult<()> {
        let id = id.to_ascii_uppercase();
        self.execute(WritePlan::locking(EntryPoint::Delete), |mut tx, _| {
            let id = id.as_str();
            Box::pin(async move {
                let stepped = delete_in(&mut tx, resource, id, writer, if_match).await;
                (tx, stepped.map(Outcome::Commit))
            })
        })
        .await
    }
}

/// The delete of [`Store::delete_record_if`] inside its transaction.
pub(super) async fn delete_in(
    tx: &mut WriteTx,
    resource: &'static Resource,
    id: &str,
    writer: &Writer<'_>,
    if_match: Option<&IfMatch>,
) -> StoreResult<()> {
    precondition_in(tx, resource, id, writer, if_match).await?;
    policy::before_removal(tx, resource, writer, id).await?;
    if let Some(flag) = resource.writes.revoked_by {
        // Revoked, not removed: the record stays listed with its flag set.
        let field = resource
            .field_at(flag)
            .expect("the catalog checks the flag");
        tx.update_cells(resource, id, &[(field, Cell::Boolean(true))], None)
            .await?;
        return Ok(());
    }
    let mut referrers = Vec::new();
    // Records the database keeps from this one (offers) go with it, by trigger.
    for other in catalog()
        .resources()
        .iter()
        .filter(|r| r.kept_from.is_empty())
    {
        for relation in &other.relations {
            let RelationKind::ToOne { fk } = relation.kind else {
                continue;
            };
            let Some(field) = other.field_named(fk).filter(|f| !f.internal) else {
                continue;
            };
            if relation.target != resource.name {
                continue;
            }
            let count = Query::select()
                .expr(Expr::col(Alias::new("id")).count())
                .from(Alias::new(other.table))
                .and_where(Expr::col(Alias::new(field.column.as_str())).eq(id))
                .to_owned();
            let rows = tx.fetch(&count, &[Kind::Integer]).await?;
            if let Some(Cell::Integer(n)) = rows.first().map(|r| &r[0])
                && *n > 0
            {
                referrers.push(format!("{n} {} ({fk})", other.name));
            }
        }
    }
    if !referrers.is_empty() {
        return Err(StoreError::Conflict {
            detail: words!(
                "The {} '{id}' is still referred to by {}; change or delete those first.",
                "{} '{id}' wird noch verwendet von {}; diese zuerst ändern oder löschen.",
                resource.name,
                referrers.join(", ")
            ),
            field: None,
        });
    }
    for field in list_fields(resource) {
        tx.replace_list(field, id, &[]).await?;
    }
    let delete = Query::delete()
        .from_table(Alias::new(resource.table))
        .and_where(Expr::col(Alias::new("id")).eq(id))
        .to_owned();
    tx.execute(resource.table, &delete).await?;
    Ok(())
}

/// Inside a write of the record `id`, which it locks: 404 outside the caller's scope, 403
/// when the caller may not write it, then 412 when `if_match` does not name its version (all
/// read by one statement). The scope comes first, so a precondition never tells whether a
/// record exists.
pub(super) async fn precondition_in(
    tx: &mut WriteTx,
    resource: &'static Resource,
    id: &str,
    writer: &Writer<'_>,
    if_match: Option<&IfMatch>,
) -> StoreResult<()> {
    let found = tx
        .seen_and_writable(resource, &[id.to_string()], writer.viewer)
        .await?;
    let Some(found) = found.get(id) else {
        return Err(not_found(resource, id));
    };
    if !found.writable {
        return Err(forbidden(resource, writer.viewer));
    }
    // The version was read with the row locked, by the same statement.
    match if_match {
        Some(if_match) if !if_match.matches(found.version) => {
            Err(precondition_failed(resource, id, found.version))
        }
        _ => Ok(()),
    }
}
