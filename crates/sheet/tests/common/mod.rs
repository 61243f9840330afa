//! Helpers shared by the integration tests: fixtures on disk and workbooks built in memory.

#![allow(dead_code)]

use std::io::{Cursor, Write};
use std::path::Path;

use brandhub_sheet::{Format, Limits, SheetError, Table, read};

/// The bytes of a committed fixture.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Reads a committed fixture with the format its name says.
pub fn read_fixture(name: &str, limits: &Limits) -> Result<Table, SheetError> {
    let format = Format::from_file_name(name).expect("a supported fixture name");
    read(&fixture(name), format, limits)
}

/// A zip archive of `(name, content)` entries, deflated.
pub fn zip(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true);
    for (name, content) in entries {
        writer.start_file(*name, options).unwrap();
        writer.write_all(content).unwrap();
    }
    writer.finish().unwrap().into_inner()
}
