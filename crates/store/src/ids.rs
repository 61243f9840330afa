//! New ids and timestamps in the contract's shapes (docs/API.md, "Values").

use chrono::Utc;

/// A new id: a UUIDv7 (time-ordered) as 32 uppercase hex characters.
pub fn new_id() -> String {
    format_id(uuid::Uuid::now_v7())
}

/// A UUID in the contract's id shape.
pub fn format_id(id: uuid::Uuid) -> String {
    id.simple().to_string().to_ascii_uppercase()
}

/// Whether a text has the shape of an id (input ids are matched case-insensitively).
pub fn looks_like_id(text: &str) -> bool {
    text.len() == 32 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The current time as a record timestamp, `YYYY-MM-DDTHH:MM:SS` in UTC.
pub fn now_timestamp() -> String {
    Utc::now().format("%Y-%m-%dT%H:%M:%S").to_string()
}

/// A moment (milliseconds since the Unix epoch, as [`crate::clock::Clock`] tells it) as a
/// record timestamp: writes stamp `updatedDate` from their store's clock, so tests set it.
pub fn timestamp_at(millis: i64) -> String {
    chrono::DateTime::from_timestamp_millis(millis)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%S")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_32_uppercase_hex_and_time_ordered() {
        let a = new_id();
        let b = new_id();
        assert!(looks_like_id(&a));
        assert_eq!(a, a.to_ascii_uppercase());
        assert!(a < b);
        assert!(!looks_like_id("xyz"));
    }
}
