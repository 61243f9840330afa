//! The workers inside `brandhub serve`: tokio tasks that claim queued files from the database
//! (any process's uploads: the queue is shared), process them, and wake whoever waits for a
//! file to finish. An upload in the same process wakes a worker at once; otherwise each idle
//! worker looks at the queue every poll interval, with a cheap read before it takes any lock.

use brandhub_catalog::FileStatus;
use brandhub_filestore::FileStore;
use brandhub_sheet::Limits;
use brandhub_store::Store;
use brandhub_store::ids::new_id;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tracing::Instrument;

/// How the workers run.
#[derive(Debug, Clone, Copy)]
pub struct WorkerSettings {
    /// Workers in this process (0: this process only serves the API).
    pub workers: usize,
    /// A claimed file whose heartbeat is older than this is claimed again by another worker.
    pub job_timeout: Duration,
    /// How often an idle worker looks at the queue for other processes' uploads.
    pub poll_interval: Duration,
    /// What reading one file may cost.
    pub limits: Limits,
}

impl Default for WorkerSettings {
    fn default() -> WorkerSettings {
        WorkerSettings {
            workers: 2,
            job_timeout: Duration::from_secs(120),
            poll_interval: Duration::from_secs(1),
            limits: Limits::default(),
        }
    }
}

/// Wake-ups between the upload handlers and the workers of one process, and the tally of the
/// files its workers finished (for metrics).
#[derive(Debug, Default)]
pub struct Signals {
    queued: Notify,
    finished: Notify,
    tally: FileTally,
}

/// How a worker's file ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Applied (possibly with warnings).
    Processed,
    /// Failed with the reason in `detail.error`, nothing applied.
    Failed,
    /// Given back to the queue after a passing failure, to be tried again.
    Retried,
}

impl Outcome {
    /// Every outcome, with the name metrics label it by.
    pub const ALL: [(Outcome, &'static str); 3] = [
        (Outcome::Processed, FileStatus::Processed.as_str()),
        (Outcome::Failed, FileStatus::Failed.as_str()),
        (Outcome::Retried, "retried"),
    ];
}

/// Files finished by this process's workers since it started, by outcome.
#[derive(Debug, Default)]
pub struct FileTally {
    processed: AtomicU64,
    failed: AtomicU64,
    retried: AtomicU64,
}

impl FileTally {
    fn counter(&self, outcome: Outcome) -> &AtomicU64 {
        match outcome {
            Outcome::Processed => &self.processed,
            Outcome::Failed => &self.failed,
            Outcome::Retried => &self.retried,
        }
    }

    /// Counts one finished file.
    pub fn record(&self, outcome: Outcome) {
        self.counter(outcome).fetch_add(1, Ordering::Relaxed);
    }

    /// The files that ended so.
    pub fn get(&self, outcome: Outcome) -> u64 {
        self.counter(outcome).load(Ordering::Relaxed)
    }
}

impl Signals {
    /// The files this process's workers finished.
    pub fn tally(&self) -> &FileTally {
        &self.tally
    }

    /// Tells a worker that a file was queued, so it does not wait for its next poll.
    pub fn notify_queued(&self) {
        self.queued.notify_one();
    }

    /// Tells everyone waiting that some file finished (processed, failed or released).
    pub fn notify_finished(&self) {
        self.finished.notify_waiters();
    }

    /// Resolves at the next [`Signals::notify_finished`]; create it before checking a file's
    /// status, so that a finish in between is not missed.
    pub fn finished(&self) -> tokio::sync::futures::Notified<'_> {
        self.finished.notified()
    }
}

/// What a worker works with.
pub(crate) struct Context {
    pub store: Store,
    pub files: FileStore,
    pub settings: WorkerSettings,
    pub signals: Arc<Signals>,
    /// This worker's name in the queue (`claimed_by`): unique across processes.
    pub worker: String,
}

/// The running workers of a process. Dropping them stops them between files.
pub struct Workers {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Workers {
    /// Starts `settings.workers` workers over the store's queue.
    pub fn start(
        store: Store,
        files: FileStore,
        settings: WorkerSettings,
        signals: Arc<Signals>,
    ) -> Workers {
        let (stop, stopped) = watch::channel(false);
        // The process's part of worker names: unique across processes and restarts.
        let process = format!("{}-{}", std::process::id(), &new_id()[20..]);
        let tasks = (0..settings.workers)
            .map(|n| {
                let context = Arc::new(Context {
                    store: store.clone(),
                    files: files.clone(),
                    settings,
                    signals: signals.clone(),
                    worker: format!("{process}-{n}"),
                });
                tokio::spawn(work(context, stopped.clone()))
            })
            .collect();
        Workers { stop, tasks }
    }

    /// Stops the workers: each finishes the file it is on, within `grace`; a file still being
    /// processed after that is left to be claimed again (nothing of it is applied).
    pub async fn stop(self, grace: Duration) {
        let _ = self.stop.send(true);
        let deadline = tokio::time::Instant::now() + grace;
        for mut task in self.tasks {
            if tokio::time::timeout_at(deadline, &mut task).await.is_err() {
                task.abort();
            }
        }
    }
}

/// One worker: claim, process, repeat; wait when the queue is empty.
async fn work(context: Arc<Context>, mut stop: watch::Receiver<bool>) {
    let stale_after = context.settings.job_timeout.as_millis() as i64;
    loop {
        if *stop.borrow() {
            return;
        }
        let claimed = match context.store.has_claimable_job(stale_after).await {
            Ok(true) => context.store.claim_job(&context.worker, stale_after).await,
            Ok(false) => Ok(None),
            Err(error) => Err(error),
        };
        match claimed {
            Ok(Some(job)) => {
                let file = job.file_id.clone();
                // Its own task: a panic while processing one file must not end the worker.
                // Every line logged while processing, down to the store's, names the file.
                let span = tracing::info_span!("file", file = %file, worker = %context.worker);
                let outcome =
                    tokio::spawn(crate::process::run(context.clone(), job).instrument(span)).await;
                if let Err(error) = outcome {
                    tracing::error!(%error, %file, "processing a file panicked; it will be claimed again after the timeout");
                }
                continue;
            }
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(%error, worker = %context.worker, "the job queue could not be read")
            }
        }
        tokio::select! {
            _ = context.signals.queued.notified() => {}
            _ = tokio::time::sleep(context.settings.poll_interval) => {}
            changed = stop.changed() => {
                if changed.is_err() {
                    return;
                }
            }
        }
    }
}
