//! Timestamps of the demo world: every date lies between 2025-06-01 and 2026-11-01 and comes
//! from the random stream, never from the clock; only prices dated around the load moment
//! (`DemoOptions::now`, which the loader takes from its clock) may lie elsewhere.

use chrono::{DateTime, Datelike, Timelike};

use crate::DemoRng;
use crate::random::between;

/// 2025-06-01T00:00:00Z: the first moment of the demo world.
pub(crate) const START: i64 = 1_748_736_000;
/// 2026-11-01T00:00:00Z: nothing happens at or after it.
pub(crate) const END: i64 = 1_793_491_200;
/// 2026-10-18T12:00:00Z: the load moment of [`crate::DemoOptions::default`], two weeks before
/// the world's end, so that prices dated around it lie in the world too.
pub(crate) const DEFAULT_NOW: i64 = END - 13 * DAY - 12 * HOUR;
/// One minute in seconds.
pub(crate) const MINUTE: i64 = 60;
/// One day in seconds.
pub(crate) const DAY: i64 = 86_400;
/// One hour in seconds.
pub(crate) const HOUR: i64 = 3_600;

/// A moment in `[from, to)`, whole seconds.
pub(crate) fn moment(rng: &mut DemoRng, from: i64, to: i64) -> i64 {
    debug_assert!(START <= from && from < to && to <= END);
    between(rng, from, to - 1)
}

/// Calendar parts (UTC) of a moment.
fn parts(secs: i64) -> (i32, u32, u32, u32, u32, u32) {
    let t = DateTime::from_timestamp(secs, 0).expect("demo timestamps are in range");
    (
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
    )
}

/// `YYYY-MM-DDTHH:MM:SS` (the catalog's Timestamp).
pub(crate) fn timestamp(secs: i64) -> String {
    let (y, mo, d, h, mi, s) = parts(secs);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}")
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` (the catalog's PreciseTimestamp), with the given milliseconds.
pub(crate) fn precise(secs: i64, millis: u32) -> String {
    let (y, mo, d, h, mi, s) = parts(secs);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{millis:03}Z")
}

/// The `YYYY-MM` of a moment, for file names.
pub(crate) fn year_month(secs: i64) -> String {
    let (y, mo, ..) = parts(secs);
    format!("{y:04}-{mo:02}")
}

pub(crate) use brandhub_catalog::NO_END_DATE;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_the_documented_dates() {
        assert_eq!(timestamp(START), "2025-06-01T00:00:00");
        assert_eq!(timestamp(END), "2026-11-01T00:00:00");
        assert_eq!(
            precise(START + DAY + HOUR + 61, 7),
            "2025-06-02T01:01:01.007Z"
        );
        assert_eq!(year_month(END - 1), "2026-10");
        assert_eq!(timestamp(DEFAULT_NOW), "2026-10-18T12:00:00");
    }
}
