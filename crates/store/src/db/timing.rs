//! Database time per request, reported in `Server-Timing`, and what a write's answer may
//! take from the caches.

use crate::versions::Versions;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::Duration;

tokio::task_local! {
    /// The [`Timing`] of the request a task serves. Reads take their `Timing` as an argument;
    /// a write's transaction is opened deep inside the store (one per write, per intake, per
    /// file), so its statements report here instead, when the request's task set it
    /// ([`Timing::scope`]).
    static REQUEST_TIMING: std::sync::Arc<Timing>;
}

/// Database time spent for one request, reported in `Server-Timing`; and, because a
/// request's write transactions report here, what a write's answer may take from the caches
/// ([`Timing::versions_after_writes`]).
#[derive(Debug, Default)]
pub struct Timing {
    pub(super) micros: AtomicU64,
    pub(super) statements: AtomicU64,
    /// The versions the request read when it began (its authentication's).
    request_versions: std::sync::OnceLock<std::sync::Arc<Versions>>,
    /// The versions the request's committed writes bumped.
    pub(super) written: std::sync::Mutex<Vec<&'static str>>,
    /// PostgreSQL: the authentication stamp of a caller taken from memory unchecked, which
    /// the request's writes must still find when they commit ([`Timing::check_caller_at`]).
    caller_stamp: std::sync::Mutex<Option<i64>>,
    /// What the request's commits found of that stamp ([`CallerCheck`] as a number).
    caller_check: AtomicU8,
}

/// What the commits of a request found of its caller's authentication stamp
/// ([`Timing::check_caller_at`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallerCheck {
    /// No commit checked it (nothing was written, or no stamp was asked for).
    Unchecked,
    /// A commit found it unchanged: the caller was valid when its write committed.
    Held,
    /// A commit found it changed and failed: nothing was written.
    Changed,
}

impl CallerCheck {
    pub(super) fn of(value: u8) -> CallerCheck {
        match value {
            1 => CallerCheck::Held,
            2 => CallerCheck::Changed,
            _ => CallerCheck::Unchecked,
        }
    }
}

impl Timing {
    /// Adds the time of one statement.
    pub fn add(&self, elapsed: Duration) {
        self.add_statements(elapsed, 1);
    }

    /// Adds the time of `count` statements sent together.
    fn add_statements(&self, elapsed: Duration, count: u64) {
        self.micros
            .fetch_add(elapsed.as_micros() as u64, Ordering::Relaxed);
        self.statements.fetch_add(count, Ordering::Relaxed);
    }

    /// Runs `work` (a request's handling) with `timing` as the request's timing, so that the
    /// statements of the write transactions it opens are counted in it too.
    pub async fn scope<F: std::future::Future>(
        timing: std::sync::Arc<Timing>,
        work: F,
    ) -> F::Output {
        REQUEST_TIMING.scope(timing, work).await
    }

    /// Keeps the versions the request read when it began, for its write's answer.
    pub fn keep_request_versions(&self, versions: std::sync::Arc<Versions>) {
        let _ = self.request_versions.set(versions);
    }

    /// The versions a write's answer reads under: the request's own, read before it wrote,
    /// with every version its writes bumped unknown (nothing kept of those tables is taken or
    /// kept). Rows of the other tables read now are at least as new as the request's
    /// versions say, as a read's are. `None` when the request kept no versions.
    pub fn versions_after_writes(&self) -> Option<Versions> {
        let versions = self.request_versions.get()?;
        let written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        Some(versions.with_unknown(&written))
    }

    /// Makes every write this request commits on PostgreSQL hold only while the caller's
    /// authentication stamp is still `stamp` (`None`: no such condition). A caller taken
    /// from memory then needs no versions read before it writes: its write's own statement
    /// checks it ([`crate::accounts::caller_unchanged`]), and fails if it moved
    /// ([`Timing::caller_check`]).
    pub fn check_caller_at(&self, stamp: Option<i64>) {
        *self.caller_stamp.lock().unwrap_or_else(|e| e.into_inner()) = stamp;
        self.caller_check.store(0, Ordering::Relaxed);
    }

    /// What the request's commits found of the stamp asked for by
    /// [`Timing::check_caller_at`].
    pub fn caller_check(&self) -> CallerCheck {
        CallerCheck::of(self.caller_check.load(Ordering::Relaxed))
    }

    /// The stamp the current request's commits must find ([`Timing::check_caller_at`]).
    pub(super) fn caller_stamp_of_request() -> Option<i64> {
        REQUEST_TIMING
            .try_with(|timing| {
                *timing
                    .caller_stamp
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
            })
            .ok()
            .flatten()
    }

    /// Notes what a commit of the current request found of its caller's stamp; a change
    /// found is never forgotten.
    pub(super) fn note_caller_check(check: CallerCheck) {
        let _ = REQUEST_TIMING.try_with(|timing| {
            let value = match check {
                CallerCheck::Unchecked => return,
                CallerCheck::Held => 1,
                CallerCheck::Changed => 2,
            };
            let _ = timing.caller_check.fetch_max(value, Ordering::Relaxed);
        });
    }

    /// Whether the current request read no versions (its caller was taken unchecked).
    pub(super) fn request_lacks_versions() -> bool {
        REQUEST_TIMING
            .try_with(|timing| timing.request_versions.get().is_none())
            .unwrap_or(false)
    }

    /// Keeps `versions` as the current request's own ([`Timing::keep_request_versions`]).
    pub(super) fn keep_versions_of_request(versions: Versions) {
        let _ = REQUEST_TIMING
            .try_with(|timing| timing.keep_request_versions(std::sync::Arc::new(versions)));
    }

    /// Notes the versions a transaction of the current request is about to bump.
    pub(super) fn note_written_in_request(versions: &[&'static str]) {
        let _ = REQUEST_TIMING.try_with(|timing| {
            let mut written = timing.written.lock().unwrap_or_else(|e| e.into_inner());
            for version in versions {
                if !written.contains(version) {
                    written.push(version);
                }
            }
        });
    }

    /// Adds a statement of a write transaction to the current request's timing, if any.
    pub(super) fn add_to_request(elapsed: Duration) {
        Timing::add_batch_to_request(elapsed, 1);
    }

    /// Adds `count` statements of a write transaction sent together (a SQLite batch).
    pub(super) fn add_batch_to_request(elapsed: Duration, count: u64) {
        let _ = REQUEST_TIMING.try_with(|timing| timing.add_statements(elapsed, count));
    }

    /// Total database time so far.
    pub fn database_time(&self) -> Duration {
        Duration::from_micros(self.micros.load(Ordering::Relaxed))
    }

    /// Statements run so far.
    pub fn statements(&self) -> u64 {
        self.statements.load(Ordering::Relaxed)
    }
}
