//! The job queue's clock. Claims, heartbeats and retry times are compared against it, so tests
//! of time-outs set the time instead of sleeping against short windows: a [`Clock::manual`]
//! stands still until it is advanced.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// Milliseconds since the Unix epoch, from the system or from a test's hand.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    /// `None`: the system clock.
    manual: Option<Arc<AtomicI64>>,
}

impl Clock {
    /// The system clock (what every server uses).
    pub fn system() -> Clock {
        Clock::default()
    }

    /// A clock that shows `start` until [`Clock::advance`] moves it; clones share the time.
    pub fn manual(start_millis: i64) -> Clock {
        Clock {
            manual: Some(Arc::new(AtomicI64::new(start_millis))),
        }
    }

    /// The time now, in milliseconds since the Unix epoch.
    pub fn now_millis(&self) -> i64 {
        match &self.manual {
            Some(now) => now.load(Ordering::SeqCst),
            None => chrono::Utc::now().timestamp_millis(),
        }
    }

    /// Moves a manual clock forward (the system clock moves by itself: a no-op there).
    pub fn advance(&self, by: Duration) {
        if let Some(now) = &self.manual {
            now.fetch_add(
                i64::try_from(by.as_millis()).unwrap_or(i64::MAX),
                Ordering::SeqCst,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Clock;
    use std::time::Duration;

    #[test]
    fn a_manual_clock_moves_only_when_told_and_clones_share_it() {
        let clock = Clock::manual(1_000);
        let other = clock.clone();
        assert_eq!(clock.now_millis(), 1_000);
        other.advance(Duration::from_millis(250));
        assert_eq!(clock.now_millis(), 1_250);
    }

    #[test]
    fn the_system_clock_is_the_time_of_day() {
        let before = chrono::Utc::now().timestamp_millis();
        let now = Clock::system().now_millis();
        assert!(now >= before && now - before < 60_000);
    }
}
