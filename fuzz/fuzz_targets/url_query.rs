//! The URL query parser and everything after it: `<resource>?<query string>` parsed, planned
//! for every user type and compiled to SQL for both backends (`brandhub_query::fuzz`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| brandhub_query::fuzz::url_query(data));
