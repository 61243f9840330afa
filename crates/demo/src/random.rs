//! Small, portable helpers over the seeded generator. Every draw goes through fixed-width
//! integer ranges (never `usize` or floating-point sampling), so a seed means the same data on
//! every platform.

use rand::RngExt;

use crate::DemoRng;

/// A whole number in `from..=to`.
pub(crate) fn between(rng: &mut DemoRng, from: i64, to: i64) -> i64 {
    rng.random_range(from..=to)
}

/// An index in `0..len`.
pub(crate) fn below(rng: &mut DemoRng, len: usize) -> usize {
    debug_assert!(len > 0);
    rng.random_range(0..len as u64) as usize
}

/// True with the given chance in percent.
pub(crate) fn percent(rng: &mut DemoRng, chance: u32) -> bool {
    rng.random_range(0..100u32) < chance
}

/// One element of a non-empty slice.
pub(crate) fn pick<'a, T>(rng: &mut DemoRng, items: &'a [T]) -> &'a T {
    &items[below(rng, items.len())]
}

/// One value by integer weight.
pub(crate) fn weighted<T: Copy>(rng: &mut DemoRng, items: &[(T, u32)]) -> T {
    let total: u32 = items.iter().map(|(_, w)| w).sum();
    let mut roll = rng.random_range(0..total);
    for (item, weight) in items {
        if roll < *weight {
            return *item;
        }
        roll -= weight;
    }
    unreachable!("the roll is below the total weight")
}

/// `count` distinct indexes of `0..len`, in drawing order (partial Fisher–Yates).
pub(crate) fn distinct(rng: &mut DemoRng, len: usize, count: usize) -> Vec<usize> {
    let mut all: Vec<usize> = (0..len).collect();
    let count = count.min(len);
    for i in 0..count {
        let j = i + below(rng, len - i);
        all.swap(i, j);
    }
    all.truncate(count);
    all
}

/// `count` random decimal digits.
pub(crate) fn digits(rng: &mut DemoRng, count: usize) -> String {
    (0..count)
        .map(|_| char::from(b'0' + rng.random_range(0..10u8)))
        .collect()
}

/// `count` random ASCII letters and digits.
pub(crate) fn alphanumerics(rng: &mut DemoRng, count: usize) -> String {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    (0..count).map(|_| char::from(*pick(rng, CHARS))).collect()
}

/// `count` random uppercase letters.
pub(crate) fn letters(rng: &mut DemoRng, count: usize) -> String {
    (0..count)
        .map(|_| char::from(b'A' + rng.random_range(0..26u8)))
        .collect()
}
