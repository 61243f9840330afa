//! The ods reader: any bytes read as an uploaded .ods spreadsheet under the default limits
//! (`brandhub_sheet::read`), which must answer rows or a `SheetError`, never panic, and stay
//! within the limits' memory.
#![no_main]

use brandhub_sheet::{Format, Limits, read};
use libfuzzer_sys::fuzz_target;

#[path = "../caught_panics.rs"]
mod caught_panics;

fuzz_target!(init: caught_panics::tolerate_calamine_panics(), |data: &[u8]| {
    let _ = read(data, Format::Ods, &Limits::default());
});
