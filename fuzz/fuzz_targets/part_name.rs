//! The upload's arguments: the first line an upload part name (`<fileType>,<arguments>`), the
//! rest a query string for `?wait=` (`brandhub_sheet::parse_part_name`, `parse_wait`); both
//! must answer a value or an `ArgumentError`, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (name, query) = text.split_once('\n').unwrap_or((text, ""));
    if let Ok(part) = brandhub_sheet::parse_part_name(name) {
        assert!(!part.brand.is_empty());
        if let (Some(start), Some(end)) = (part.start, part.end) {
            assert!(start <= end);
        }
    }
    if let Ok(wait) = brandhub_sheet::parse_wait(Some(query)) {
        assert!(wait <= brandhub_sheet::MAX_WAIT);
    }
});
