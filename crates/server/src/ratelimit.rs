//! Token buckets: each API key may make `rate` requests a second with bursts up to `burst`,
//! and each client address may fail authentication only so often (so keys cannot be guessed
//! at speed). An empty bucket answers 429 `rate_limited` with `Retry-After`.

use brandhub_problem::{ApiError, Code, Words, words};
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Above this many tracked keys or addresses, idle ones are forgotten.
const MAX_TRACKED: usize = 100_000;

/// How fast a bucket refills and how much it holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    /// Tokens per second; 0 turns the limit off.
    pub rate: f64,
    /// The most tokens a bucket holds.
    pub burst: f64,
}

impl Limit {
    /// A limit of `rate` per second with bursts up to `burst` (at least 1).
    pub fn new(rate: f64, burst: f64) -> Limit {
        Limit {
            rate,
            burst: burst.max(1.0),
        }
    }

    fn is_off(&self) -> bool {
        self.rate <= 0.0
    }
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Buckets by key (an API key id, a client address).
#[derive(Debug)]
pub struct Buckets<K> {
    limit: Limit,
    buckets: Mutex<HashMap<K, Bucket>>,
}

impl<K: Hash + Eq + Clone> Buckets<K> {
    /// Buckets that all follow `limit`.
    pub fn new(limit: Limit) -> Self {
        Buckets {
            limit,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    fn refill(&self, bucket: &mut Bucket, now: Instant) {
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.limit.rate).min(self.limit.burst);
        bucket.at = now;
    }

    fn wait_for_one(&self, bucket: &Bucket) -> Duration {
        Duration::from_secs_f64(((1.0 - bucket.tokens) / self.limit.rate).max(0.0))
    }

    /// Takes a token for `key`, or says how long to wait for one.
    pub fn take(&self, key: &K, now: Instant) -> Result<(), Duration> {
        if self.limit.is_off() {
            return Ok(());
        }
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() >= MAX_TRACKED && !buckets.contains_key(key) {
            let horizon = Duration::from_secs_f64(self.limit.burst / self.limit.rate);
            buckets.retain(|_, b| now.saturating_duration_since(b.at) < horizon);
        }
        let burst = self.limit.burst;
        let bucket = buckets.entry(key.clone()).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        self.refill(bucket, now);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(self.wait_for_one(bucket))
        }
    }

    /// Returns a token taken for `key` (an attempt counted before it was judged turned out
    /// not to count), up to the bucket's burst.
    pub fn give_back(&self, key: &K, now: Instant) {
        if self.limit.is_off() {
            return;
        }
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(bucket) = buckets.get_mut(key) {
            self.refill(bucket, now);
            bucket.tokens = (bucket.tokens + 1.0).min(self.limit.burst);
        }
    }

    /// Whether `key` has a token now, without taking it (or how long until it has).
    pub fn check(&self, key: &K, now: Instant) -> Result<(), Duration> {
        if self.limit.is_off() {
            return Ok(());
        }
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        match buckets.get_mut(key) {
            None => Ok(()),
            Some(bucket) => {
                self.refill(bucket, now);
                if bucket.tokens >= 1.0 {
                    Ok(())
                } else {
                    Err(self.wait_for_one(bucket))
                }
            }
        }
    }
}

/// What a key's requests are limited by, as a 429 says it.
pub fn for_this_key() -> Words {
    words!("requests for this key", "Anfragen mit diesem Schlüssel")
}

/// What an address's failed sign-ins are limited by, as a 429 says it.
pub fn failed_from_this_address() -> Words {
    words!(
        "failed authentications from this address",
        "fehlgeschlagene Anmeldungen von dieser Adresse"
    )
}

/// The 429 for a wait.
pub fn too_many(wait: Duration, what: Words) -> ApiError {
    let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
    let mut error = ApiError::new(
        Code::RateLimited,
        what.led_by(words!("Too many ", "Zu viele ")).then(&words!(
            "; retry in {seconds} s.",
            "; bitte in {seconds} s erneut versuchen."
        )),
    );
    error.retry_after = Some(seconds);
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_refills_at_its_rate() {
        let buckets = Buckets::new(Limit::new(2.0, 3.0));
        let start = Instant::now();
        for _ in 0..3 {
            assert!(buckets.take(&"k", start).is_ok());
        }
        let wait = buckets.take(&"k", start).unwrap_err();
        assert!(
            wait > Duration::from_millis(400) && wait <= Duration::from_millis(500),
            "{wait:?}"
        );
        assert!(
            buckets
                .take(&"k", start + Duration::from_millis(500))
                .is_ok()
        );
        assert!(buckets.take(&"other", start).is_ok(), "buckets are per key");
    }

    #[test]
    fn checking_does_not_take_and_off_means_unlimited() {
        let buckets = Buckets::new(Limit::new(1.0, 1.0));
        let now = Instant::now();
        assert!(buckets.check(&1, now).is_ok());
        assert!(buckets.take(&1, now).is_ok());
        assert!(buckets.check(&1, now).is_err());
        let off = Buckets::new(Limit::new(0.0, 1.0));
        for _ in 0..1000 {
            assert!(off.take(&1, now).is_ok());
        }
    }

    #[test]
    fn the_answer_carries_whole_seconds() {
        let error = too_many(Duration::from_millis(1200), for_this_key());
        assert_eq!(error.code, Code::RateLimited);
        assert_eq!(error.retry_after, Some(2));
    }
}
