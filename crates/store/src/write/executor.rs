//! The one executor: runs any [`WritePlan`] in one transaction, with the one retry policy,
//! and counts each run under its entry point. Its commit bumps the versions of what the
//! step wrote, logs the rows and writes the outbox (`WriteTx::commit_answered`), which is
//! how every cache learns of the write (docs/CACHE.md).

use super::plan::{Begin, EntryPoint, Outcome, StepFuture, WritePlan};
use crate::db::{Committed, Store, WriteTx};
use crate::error::{StoreError, StoreResult};
use std::collections::BTreeMap;
use std::sync::Mutex;
use tracing::Instrument;

/// Plans run per entry point in this process, each counted once however often it ran again.
static RUNS: Mutex<BTreeMap<EntryPoint, u64>> = Mutex::new(BTreeMap::new());

/// How many plans of `entry` this process's executor has run (begun, whatever their end):
/// for tests and metrics, which compare it before and after.
pub fn runs(entry: EntryPoint) -> u64 {
    RUNS.lock()
        .map(|runs| runs.get(&entry).copied().unwrap_or(0))
        .unwrap_or(0)
}

fn count_run(entry: EntryPoint) {
    if let Ok(mut runs) = RUNS.lock() {
        *runs.entry(entry).or_insert(0) += 1;
    }
}

impl Store {
    /// Runs `plan`: begins its transaction, runs `step` in it, and commits or rolls back as
    /// the step's [`Outcome`] says; a step or commit that raced runs again, locking, while
    /// the plan has attempts left (then the race is the error). `step` is told the attempt's
    /// number (0 first).
    pub async fn execute<'a, T, F>(&self, plan: WritePlan, step: F) -> StoreResult<T>
    where
        F: FnMut(WriteTx, usize) -> StepFuture<'a, T>,
    {
        self.execute_committed(plan, step)
            .await
            .map(|(value, _)| value)
    }

    /// [`Store::execute`], with what the commit read (`None` when nothing was committed).
    pub(crate) async fn execute_committed<'a, T, F>(
        &self,
        plan: WritePlan,
        mut step: F,
    ) -> StoreResult<(T, Option<Committed>)>
    where
        F: FnMut(WriteTx, usize) -> StepFuture<'a, T>,
    {
        count_run(plan.entry);
        let span = tracing::debug_span!("write", entry = ?plan.entry);
        self.run_attempts(plan, &mut step).instrument(span).await
    }

    /// The attempts of [`Store::execute_committed`].
    async fn run_attempts<'a, T, F>(
        &self,
        plan: WritePlan,
        step: &mut F,
    ) -> StoreResult<(T, Option<Committed>)>
    where
        F: FnMut(WriteTx, usize) -> StepFuture<'a, T>,
    {
        let mut last = StoreError::raced();
        for attempt in 0..plan.attempts.max(1) {
            let begin = if attempt == 0 {
                plan.begin
            } else {
                Begin::Locking
            };
            let tx = match begin {
                Begin::Locking => self.begin_locking().await?,
                Begin::CheckingFirst => self.begin_checking_first().await?,
                Begin::Optimistic => self.begin_optimistic().await?,
            };
            let (tx, outcome) = step(tx, attempt).await;
            let raced = match outcome {
                Ok(Outcome::Commit(value)) => match tx.commit_answered().await {
                    Ok(committed) => return Ok((value, Some(committed))),
                    Err(error) => error,
                },
                Ok(Outcome::RollBack(value)) => return Ok((value, None)),
                Ok(Outcome::Again) => StoreError::raced(),
                Err(error) => error,
            };
            if !raced.is_raced() {
                return Err(raced);
            }
            last = raced;
        }
        Err(last)
    }
}

impl Store {
    /// A transaction begun locking for writes that stay apart from plans, counted under
    /// `entry`; the caller commits it. Only these use it: the outbox's fan-out and a
    /// delivery's claim and attempt ([`EntryPoint::Deliveries`]), the queue of uploaded
    /// files ([`EntryPoint::FileQueue`]), a block of order numbers
    /// ([`EntryPoint::OrderNumbers`]), users, keys and their use ([`EntryPoint::Accounts`]),
    /// sign-ins and invitations ([`EntryPoint::Sessions`]).
    pub(crate) async fn begin_apart(&self, entry: EntryPoint) -> StoreResult<WriteTx> {
        count_run(entry);
        self.begin_locking().await
    }
}
