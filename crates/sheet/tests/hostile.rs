//! Files that are broken, mislabelled or built to exhaust memory: each gives a clear
//! `SheetError`, never a panic or an abort.

mod common;

use brandhub_sheet::{Format, Limits, SheetError, read};
use common::{fixture, zip};

fn assert_unreadable(result: Result<brandhub_sheet::Table, SheetError>, what: &str) {
    match result {
        Err(SheetError::Unreadable { .. }) => {}
        other => panic!("{what}: expected an unreadable file, got {other:?}"),
    }
}

fn assert_too_large(result: Result<brandhub_sheet::Table, SheetError>, what: &str) {
    match result {
        Err(SheetError::TooLarge { .. }) => {}
        other => panic!("{what}: expected a refusal for size, got {other:?}"),
    }
}

#[test]
fn a_text_file_renamed_xlsx() {
    let bytes = b"Barcode,Qty\n5012345678900,4\n";
    let format = Format::from_file_name("stock.xlsx").unwrap();
    let err = read(bytes, format, &Limits::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the file is not a readable .xlsx workbook: it is not a zip archive"
    );
}

#[test]
fn a_workbook_under_the_wrong_extension() {
    let err = read(&fixture("product.xlsx"), Format::Xls, &Limits::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the file is not a readable .xls workbook: it is a zip archive (perhaps an .xlsx or .ods file renamed)"
    );
    let err = read(&fixture("product.xls"), Format::Csv, &Limits::default()).unwrap_err();
    assert!(err.to_string().contains("Excel 97-2003"), "{err}");
}

#[test]
fn truncated_workbooks() {
    for (name, format) in [
        ("product.xlsx", Format::Xlsx),
        ("product.ods", Format::Ods),
        ("product.xls", Format::Xls),
    ] {
        let bytes = fixture(name);
        for keep in [8, bytes.len() / 3, bytes.len() / 2, bytes.len() - 10] {
            assert_unreadable(
                read(&bytes[..keep], format, &Limits::default()),
                &format!("{name} cut at {keep}"),
            );
        }
    }
}

#[test]
fn corrupted_workbooks() {
    for (name, format) in [
        ("product.xlsx", Format::Xlsx),
        ("product.ods", Format::Ods),
        ("product.xls", Format::Xls),
    ] {
        let mut bytes = fixture(name);
        // Overwrite the middle third: compressed streams and records break, the zip central
        // directory or compound file header at the ends survive.
        let (from, to) = (bytes.len() / 3, 2 * bytes.len() / 3);
        for (i, byte) in bytes[from..to].iter_mut().enumerate() {
            *byte = (i * 131 % 251) as u8;
        }
        let result = read(&bytes, format, &Limits::default());
        assert_unreadable(result, &format!("{name} overwritten"));
    }
    let mut bytes = fixture("product.xlsx");
    let middle = bytes.len() / 2;
    bytes[middle..middle + 64].fill(0);
    assert_unreadable(
        read(&bytes, Format::Xlsx, &Limits::default()),
        "zeroed xlsx",
    );
}

#[test]
fn a_zip_bomb_over_the_size_limit() {
    // Realistic sheet XML, compressing as real sheets do: the declared size alone refuses it.
    let mut sheet = String::new();
    for r in 1..60_000u64 {
        sheet.push_str(&format!(
            "<row r=\"{r}\"><c r=\"A{r}\"><v>{}</v></c></row>",
            r * 7919 % 100_003
        ));
    }
    let bytes = zip(&[("xl/worksheets/sheet1.xml", sheet.as_bytes())]);
    assert!(sheet.len() > 2 * 1024 * 1024 && bytes.len() < sheet.len() / 4);
    let limits = Limits {
        max_decompressed_bytes: 2 * 1024 * 1024,
        ..Limits::default()
    };
    let err = read(&bytes, Format::Xlsx, &limits).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the file is too large to read: it expands to more than 2 MiB once decompressed"
    );
}

#[test]
fn a_zip_bomb_by_compression_ratio() {
    // Under the default size limit, but expanding about a thousand times.
    let sheet = vec![b'0'; 32 * 1024 * 1024];
    let bytes = zip(&[
        ("content.xml", b"<x/>"),
        ("xl/worksheets/sheet1.xml", &sheet),
    ]);
    for format in [Format::Xlsx, Format::Ods] {
        let err = read(&bytes, format, &Limits::default()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("the file is too large to read: an archive entry expands"),
            "{err}"
        );
    }
}

/// product.xls with its DIMENSIONS record, or its first shared-string cell, rewritten.
fn patched_xls(patch: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let mut bytes = fixture("product.xls");
    patch(&mut bytes);
    bytes
}

fn record(bytes: &mut [u8], header: [u8; 4]) -> usize {
    bytes
        .windows(4)
        .position(|w| w == header)
        .expect("the record is in the fixture")
        + 4
}

#[test]
fn an_xls_declaring_huge_dimensions() {
    let bytes = patched_xls(|bytes| {
        // DIMENSIONS (0x0200, 14 bytes): rows 0..u32::MAX, columns 0..u16::MAX.
        let at = record(bytes, [0x00, 0x02, 0x0E, 0x00]);
        bytes[at..at + 4].copy_from_slice(&0u32.to_le_bytes());
        bytes[at + 4..at + 8].copy_from_slice(&u32::MAX.to_le_bytes());
        bytes[at + 8..at + 10].copy_from_slice(&0u16.to_le_bytes());
        bytes[at + 10..at + 12].copy_from_slice(&u16::MAX.to_le_bytes());
    });
    assert_too_large(
        read(&bytes, Format::Xls, &Limits::default()),
        "huge dimensions",
    );
}

#[test]
fn an_xls_with_a_far_away_cell() {
    let bytes = patched_xls(|bytes| {
        // LABELSST (0x00FD, 10 bytes) moved to row and column 65535.
        let at = record(bytes, [0xFD, 0x00, 0x0A, 0x00]);
        bytes[at..at + 2].copy_from_slice(&u16::MAX.to_le_bytes());
        bytes[at + 2..at + 4].copy_from_slice(&u16::MAX.to_le_bytes());
    });
    assert_too_large(
        read(&bytes, Format::Xls, &Limits::default()),
        "far-away cell",
    );
}

#[test]
fn an_ods_whose_repeated_cells_expand_beyond_memory() {
    let text = "x".repeat(100_000);
    let content = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0">
<office:body><office:spreadsheet><table:table table:name="Sheet1">
<table:table-row table:number-rows-repeated="1000">
<table:table-cell office:value-type="string" table:number-columns-repeated="16384"><text:p>{text}</text:p></table:table-cell>
</table:table-row>
</table:table></office:spreadsheet></office:body></office:document-content>"#
    );
    let bytes = zip(&[
        (
            "mimetype",
            b"application/vnd.oasis.opendocument.spreadsheet",
        ),
        ("content.xml", content.as_bytes()),
    ]);
    assert_too_large(
        read(&bytes, Format::Ods, &Limits::default()),
        "repeated cells",
    );
}

#[test]
fn an_xlsx_with_a_huge_sparse_grid() {
    // Two cells at opposite corners: a dense grid would be 17 billion cells.
    let mut workbook = rust_xlsxwriter::Workbook::new();
    let sheet = workbook.add_worksheet();
    sheet.write_string(0, 0, "Barcode").unwrap();
    sheet.write_string(1_048_575, 16_383, "far away").unwrap();
    let bytes = workbook.save_to_buffer().unwrap();
    let table = read(&bytes, Format::Xlsx, &Limits::default()).unwrap();
    assert!(table.rows().is_empty());
}

#[test]
fn an_xlsx_over_max_rows_stops_early() {
    let mut workbook = rust_xlsxwriter::Workbook::new();
    let sheet = workbook.add_worksheet();
    sheet.write_string(0, 0, "Barcode").unwrap();
    for row in 1..=50u32 {
        sheet.write_number(row, 0, f64::from(row)).unwrap();
    }
    let bytes = workbook.save_to_buffer().unwrap();
    let limits = Limits {
        max_rows: 10,
        ..Limits::default()
    };
    assert_eq!(
        read(&bytes, Format::Xlsx, &limits).unwrap_err(),
        SheetError::TooManyRows { max: 10 }
    );
}

#[test]
fn binary_bytes_named_csv() {
    let err = read(b"\x00\x01\x02binary", Format::Csv, &Limits::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the file is not a readable .csv file: it contains binary data, not text"
    );
}
