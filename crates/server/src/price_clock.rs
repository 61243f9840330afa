//! The clock of dated prices (docs/API.md, "Offers"): a price that starts or ends changes its
//! offers at that moment. Each second, just after the second turns (record timestamps count
//! whole seconds), the task asks the store to apply what fell due
//! (`Store::apply_price_dates`); the store makes sure that one process applies each moment.
//! Once an hour (and at start) the same task removes the tombstones of sync by cursor that are
//! older than they are kept (`Store::prune_tombstones`).

use brandhub_store::Store;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::Notify;

/// How long after a second turns the tick runs: a price dated to that second has started.
const AFTER_THE_SECOND: u64 = 20;

/// The running clock, stopped with the server.
pub(crate) struct PriceClock {
    stop: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl PriceClock {
    /// Starts ticking: the first tick at once, which applies what fell due while no process
    /// ran.
    pub(crate) fn start(store: Store) -> PriceClock {
        let stop = Arc::new(Notify::new());
        let task = tokio::spawn(tick(store, stop.clone()));
        PriceClock { stop, task }
    }

    /// Stops ticking once the tick under way, if any, has ended.
    pub(crate) async fn stop(self) {
        self.stop.notify_one();
        let _ = self.task.await;
    }
}

/// Until the next second turns, plus [`AFTER_THE_SECOND`].
fn until_the_next_second() -> Duration {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    Duration::from_millis(1000 - millis % 1000 + AFTER_THE_SECOND)
}

/// Ticks between two prunes of tombstones: an hour.
const TICKS_PER_PRUNE: u64 = 3_600;

async fn tick(store: Store, stop: Arc<Notify>) {
    let mut ticks: u64 = 0;
    loop {
        if ticks.is_multiple_of(TICKS_PER_PRUNE) {
            let now = store.clock().now_millis();
            match store.prune_tombstones(now).await {
                Ok(0) => {}
                Ok(removed) => tracing::info!(removed, "old tombstones removed"),
                Err(error) => tracing::warn!(%error, "old tombstones could not be removed"),
            }
        }
        ticks += 1;
        match store.apply_price_dates().await {
            Ok(0) => {}
            Ok(changed) => tracing::info!(changed, "dated prices took effect"),
            Err(error) => tracing::warn!(%error, "dated prices could not be applied; trying again"),
        }
        tokio::select! {
            _ = tokio::time::sleep(until_the_next_second()) => {}
            _ = stop.notified() => return,
        }
    }
}
