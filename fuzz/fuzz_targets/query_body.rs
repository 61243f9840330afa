//! The complex-query body parser and everything after it: `<resource>`, a newline and a JSON
//! body, parsed, planned for every user type and compiled to SQL (`brandhub_query::fuzz`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| brandhub_query::fuzz::query_body(data));
