//! The csv reader: any bytes read as an uploaded .csv spreadsheet under the default limits
//! (`brandhub_sheet::read`), which must answer rows or a `SheetError`, never panic, and stay
//! within the limits' memory.
#![no_main]

use brandhub_sheet::{Format, Limits, read};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = read(data, Format::Csv, &Limits::default());
});
