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

/// A minimal `.xlsx` written by hand: `rows` is the `<sheetData>` content, `shared` the
/// `<sst>` content (or none). For cells no spreadsheet library would write, such as a text far
/// longer than Excel allows.
pub fn xlsx(rows: &str, shared: Option<&str>) -> Vec<u8> {
    let main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main";
    let relationships = "http://schemas.openxmlformats.org/package/2006/relationships";
    let document = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
    let types = r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>"#.to_string();
    let root_rels = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{relationships}"><Relationship Id="rId1" Type="{document}/officeDocument" Target="xl/workbook.xml"/></Relationships>"#
    );
    let workbook = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{main}" xmlns:r="{document}"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>"#
    );
    let workbook_rels = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{relationships}"><Relationship Id="rId1" Type="{document}/worksheet" Target="worksheets/sheet1.xml"/></Relationships>"#
    );
    let sheet = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{main}"><sheetData>{rows}</sheetData></worksheet>"#
    );
    let mut entries: Vec<(&str, Vec<u8>)> = vec![
        ("[Content_Types].xml", types.into_bytes()),
        ("_rels/.rels", root_rels.into_bytes()),
        ("xl/workbook.xml", workbook.into_bytes()),
        ("xl/_rels/workbook.xml.rels", workbook_rels.into_bytes()),
        ("xl/worksheets/sheet1.xml", sheet.into_bytes()),
    ];
    if let Some(shared) = shared {
        let sst =
            format!(r#"<?xml version="1.0" encoding="UTF-8"?><sst xmlns="{main}">{shared}</sst>"#);
        entries.push(("xl/sharedStrings.xml", sst.into_bytes()));
    }
    let borrowed: Vec<(&str, &[u8])> = entries.iter().map(|(n, b)| (*n, b.as_slice())).collect();
    zip(&borrowed)
}

/// A minimal `.ods` whose first table has these rows (`<table:table-row>` elements).
pub fn ods(rows: &str) -> Vec<u8> {
    let content = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:spreadsheet><table:table table:name="Sheet1">{rows}</table:table></office:spreadsheet></office:body></office:document-content>"#
    );
    zip(&[
        (
            "mimetype",
            b"application/vnd.oasis.opendocument.spreadsheet",
        ),
        ("META-INF/manifest.xml", MANIFEST.as_bytes()),
        ("content.xml", content.as_bytes()),
    ])
}

const MANIFEST: &str = r#"<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"><manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>"#;

/// `chars` letters that compress well, but not beyond the per-entry ratio limit: runs of `x`
/// broken by a pseudo-random letter every 100 characters (as deterministic as a fixture).
pub fn noisy_text(chars: usize) -> String {
    let mut state: u32 = 0x2545_F491;
    (0..chars)
        .map(|i| {
            if i % 100 == 99 {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                char::from(b'a' + (state % 26) as u8)
            } else {
                'x'
            }
        })
        .collect()
}
