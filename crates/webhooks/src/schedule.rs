//! When a failed attempt is tried again (docs/API.md, "Events and webhooks": exponential backoff for 24 hours).

use std::time::Duration;

/// The retry schedule: the n-th failed attempt waits `first × 2^(n-1)`, at most `longest`, and
/// no attempt is started once `period` has passed since the delivery was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetrySchedule {
    pub first: Duration,
    pub longest: Duration,
    pub period: Duration,
}

impl Default for RetrySchedule {
    /// 30 s, 1 min, 2 min, … up to an hour between attempts, for 24 hours.
    fn default() -> RetrySchedule {
        RetrySchedule {
            first: Duration::from_secs(30),
            longest: Duration::from_secs(3600),
            period: Duration::from_secs(24 * 3600),
        }
    }
}

impl RetrySchedule {
    /// When to try again after `attempts` failed attempts of a delivery made at `created`
    /// (milliseconds), at `now`; `None` when the retry period is over.
    pub fn next_due(&self, attempts: i64, created: i64, now: i64) -> Option<i64> {
        let exponent = u32::try_from(attempts.saturating_sub(1).clamp(0, 30)).unwrap_or(30);
        let wait = self
            .first
            .saturating_mul(2u32.saturating_pow(exponent))
            .min(self.longest);
        let due = now.saturating_add(i64::try_from(wait.as_millis()).unwrap_or(i64::MAX));
        let end =
            created.saturating_add(i64::try_from(self.period.as_millis()).unwrap_or(i64::MAX));
        (due <= end).then_some(due)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_default_schedule_doubles_up_to_an_hour_for_a_day() {
        let schedule = RetrySchedule::default();
        let waits: Vec<i64> = (1..=9)
            .map(|n| schedule.next_due(n, 0, 0).unwrap() / 1000)
            .collect();
        assert_eq!(waits, [30, 60, 120, 240, 480, 960, 1920, 3600, 3600]);
        let day = 24 * 3600 * 1000;
        assert_eq!(schedule.next_due(12, 0, day - 10_000), None);
        assert_eq!(schedule.next_due(12, 0, day - 3_600_000), Some(day));
    }

    proptest! {
        #[test]
        fn waits_grow_and_never_pass_the_period(
            first in 1u64..100_000,
            longest in 1u64..10_000_000,
            attempts in 1i64..100,
            now in 0i64..100_000_000,
        ) {
            let schedule = RetrySchedule {
                first: Duration::from_millis(first),
                longest: Duration::from_millis(longest),
                period: Duration::from_millis(50_000_000),
            };
            let this = schedule.next_due(attempts, 0, now);
            if let Some(due) = this {
                prop_assert!(due > now && due <= 50_000_000);
                prop_assert!(due - now <= longest.max(1) as i64);
            }
            let later = schedule.next_due(attempts + 1, 0, now);
            if let (Some(a), Some(b)) = (this, later) {
                prop_assert!(b >= a);
            }
        }
    }
}
