//! Files that are broken, mislabelled or built to exhaust memory: each gives a clear
//! `SheetError`, never a panic or an abort.

mod common;

use brandhub_sheet::{Format, Limits, SheetError, read};
use common::{fixture, noisy_text, ods, xlsx, zip};

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

/// A cell of five million characters: under the upload and expansion limits, it compresses to
/// a few kilobytes.
const HUGE: usize = 5_000_000;

fn huge_reason(column: &str) -> String {
    format!("column {column} holds 5,000,000 characters, more than the 32,767 a cell may hold")
}

/// Rows 2 and 4 read; row 3 skipped for its huge title; nothing of the title kept.
fn assert_huge_title_skipped(table: &brandhub_sheet::Table, what: &str) {
    let numbers: Vec<u32> = table.rows().iter().map(|r| r.number()).collect();
    assert_eq!(numbers, vec![2, 4], "{what}");
    assert_eq!(table.skipped().len(), 1, "{what}");
    assert_eq!(table.skipped()[0].number, 3, "{what}");
    assert_eq!(table.skipped()[0].reason, huge_reason("B"), "{what}");
}

fn inline(reference: &str, text: &str) -> String {
    format!(r#"<c r="{reference}" t="inlineStr"><is><t>{text}</t></is></c>"#)
}

#[test]
fn an_xlsx_inline_string_longer_than_a_cell_skips_its_row() {
    let huge = noisy_text(HUGE);
    let rows = format!(
        r#"<row r="1">{}{}</row><row r="2">{}{}</row><row r="3">{}{}</row><row r="4">{}<c r="B4"><v>12.5</v></c></row>"#,
        inline("A1", "Barcode"),
        inline("B1", "Title"),
        inline("A2", "1"),
        inline("B2", "short"),
        inline("A3", "2"),
        inline("B3", &huge),
        inline("A4", "3"),
    );
    let bytes = xlsx(&rows, None);
    assert!(
        bytes.len() < 100_000,
        "it compresses: {} bytes",
        bytes.len()
    );
    let table = read(&bytes, Format::Xlsx, &Limits::default()).unwrap();
    assert_huge_title_skipped(&table, "inline string");
    assert_eq!(table.rows()[1].cell(1).as_number(), Some(12.5));
    // A number of five million digits is as long.
    let rows = rows.replace(
        &inline("B3", &huge),
        &format!(
            r#"<c r="B3"><v>{}</v></c>"#,
            noisy_text(HUGE)
                .replace(|c: char| c != 'x', "7")
                .replace('x', "9")
        ),
    );
    let table = read(&xlsx(&rows, None), Format::Xlsm, &Limits::default()).unwrap();
    assert_huge_title_skipped(&table, "long number");
}

#[test]
fn an_xlsx_shared_string_longer_than_a_cell_skips_the_rows_using_it() {
    let huge = noisy_text(HUGE);
    let shared = format!(
        "<si><t>Barcode</t></si><si><t>Title</t></si><si><r><t>{huge}</t></r></si><si><t>fine</t></si>"
    );
    let rows = r#"<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row><row r="2"><c r="A2"><v>1</v></c><c r="B2" t="s"><v>3</v></c></row><row r="3"><c r="A3"><v>2</v></c><c r="B3" t="s"><v>2</v></c></row><row r="4"><c r="A4"><v>3</v></c><c r="B4" t="s"><v>3</v></c></row>"#;
    let table = read(&xlsx(rows, Some(&shared)), Format::Xlsx, &Limits::default()).unwrap();
    assert_huge_title_skipped(&table, "shared string");
    assert_eq!(table.rows()[0].cell(1).as_text().unwrap(), "fine");
}

#[test]
fn an_ods_cell_longer_than_a_cell_skips_its_row() {
    let cell = |text: &str| {
        format!(
            r#"<table:table-cell office:value-type="string"><text:p>{text}</text:p></table:table-cell>"#
        )
    };
    let row =
        |a: &str, b: &str| format!("<table:table-row>{}{}</table:table-row>", cell(a), cell(b));
    let rows = [
        row("Barcode", "Title"),
        row("1", "short"),
        row("2", &noisy_text(HUGE)),
        row("3", "also short"),
    ]
    .concat();
    let table = read(&ods(&rows), Format::Ods, &Limits::default()).unwrap();
    assert_huge_title_skipped(&table, "ods text");
    // Spaces written as one element count as what they expand to.
    let spaces = format!(r#"a<text:s text:c="{HUGE}"/>"#);
    let rows = [
        row("Barcode", "Title"),
        row("1", "short"),
        format!(
            r#"<table:table-row>{}<table:table-cell office:value-type="string"><text:p>{spaces}</text:p></table:table-cell></table:table-row>"#,
            cell("2")
        ),
        row("3", "also short"),
    ]
    .concat();
    let table = read(&ods(&rows), Format::Ods, &Limits::default()).unwrap();
    assert_eq!(table.skipped().len(), 1);
    assert!(
        table.skipped()[0]
            .reason
            .starts_with("column B holds 5,000,001 characters")
    );
}

#[test]
fn a_csv_field_longer_than_a_cell_skips_its_row() {
    let text = format!(
        "Barcode,Title\n1,short\n2,\"{}\"\n3,also short\n",
        "w".repeat(HUGE)
    );
    let table = read(text.as_bytes(), Format::Csv, &Limits::default()).unwrap();
    assert_huge_title_skipped(&table, "csv");
}

#[test]
fn a_huge_header_cell_fails_the_file() {
    let rows = format!(
        r#"<row r="1">{}{}</row>"#,
        inline("A1", "Barcode"),
        inline("B1", &noisy_text(HUGE))
    );
    let err = read(&xlsx(&rows, None), Format::Xlsx, &Limits::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the header row has a cell (B1) of 5,000,000 characters; a cell may hold at most 32,767"
    );
}

#[test]
fn a_huge_attribute_refuses_the_file() {
    let rows = format!(
        r#"<row r="1"><c r="A1" t="inlineStr" x="{}"><is><t>Barcode</t></is></c></row>"#,
        noisy_text(2 * 1024 * 1024)
    );
    let err = read(&xlsx(&rows, None), Format::Xlsx, &Limits::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the file is too large to read: xl/worksheets/sheet1.xml holds a tag or comment larger than 1 MiB"
    );
}
