//! Record ids: UUIDv7 whose timestamp is a counter, so ids are unique, increasing in generation
//! order and identical for the same seed on every machine.

use rand::Rng;

use crate::DemoRng;

/// 2026-01-01T00:00:00Z in Unix milliseconds: the timestamp of the first id.
const FIRST_ID_MILLIS: u64 = 1_767_225_600_000;

/// An id kept as its 128 bits (16 bytes) while the generator holds it, and turned into the
/// catalog's 32-uppercase-hex text only when a record is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Id(u128);

impl Id {
    /// The 32 uppercase hex characters the catalog stores.
    pub(crate) fn text(self) -> String {
        const HEX: &[u8; 16] = b"0123456789ABCDEF";
        let mut out = String::with_capacity(32);
        for shift in (0..32).rev() {
            out.push(HEX[((self.0 >> (shift * 4)) & 0xF) as usize] as char);
        }
        out
    }
}

/// Hands out ids: the timestamp advances one millisecond per id, the ten other bytes come from
/// the generator's own random stream.
pub(crate) struct IdGen {
    rng: DemoRng,
    issued: u64,
}

impl IdGen {
    /// Ids drawing their random bytes from this stream.
    pub(crate) fn new(rng: DemoRng) -> IdGen {
        IdGen { rng, issued: 0 }
    }

    /// Where the stream is, to come back to with [`IdGen::rewind`]: a phase planned ahead
    /// hands its ids back.
    pub(crate) fn mark(&self) -> (u128, u64) {
        (self.rng.get_word_pos(), self.issued)
    }

    /// Back to a [`IdGen::mark`]: the same ids are handed out again.
    pub(crate) fn rewind(&mut self, (word, issued): (u128, u64)) {
        self.rng.set_word_pos(word);
        self.issued = issued;
    }

    /// The next id.
    pub(crate) fn next(&mut self) -> Id {
        let mut random = [0u8; 10];
        self.rng.fill_bytes(&mut random);
        let millis = FIRST_ID_MILLIS + self.issued;
        self.issued += 1;
        Id(uuid::Builder::from_unix_timestamp_millis(millis, &random)
            .into_uuid()
            .as_u128())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn ids_match_the_uuid_crate_formatting_and_increase() {
        let mut ids = IdGen::new(DemoRng::seed_from_u64(1));
        let first = ids.next();
        let second = ids.next();
        let expected = uuid::Uuid::from_u128(first.0)
            .simple()
            .to_string()
            .to_ascii_uppercase();
        assert_eq!(first.text(), expected);
        assert_eq!(uuid::Uuid::from_u128(first.0).get_version_num(), 7);
        assert!(first.text() < second.text());
        assert!(first.text().starts_with("019B7"), "{}", first.text());
    }
}
