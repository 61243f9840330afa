//! Reading the committed fixtures: every format yields the same typed rows, headers match in
//! any spelling, and cells keep their types.

mod common;

use brandhub_sheet::{
    Cell, Column, ColumnMap, FileType, Format, Limits, SheetError, SkippedRow, read,
};
use chrono::NaiveDate;
use common::{fixture, read_fixture};

/// The same product sheet, written by rust_xlsxwriter, LibreOffice and three CSV dialects.
const PRODUCT_FIXTURES: [&str; 6] = [
    "product.xlsx",
    "product.xls",
    "product.ods",
    "product_comma.csv",
    "product_bom_semicolon.csv",
    "product_cp1252_tab.csv",
];

/// A product row as a processor reads it, through the typed accessors.
#[derive(Debug, PartialEq)]
struct Product {
    row: u32,
    code: String,
    title: String,
    barcode: String,
    colour: String,
    size: String,
    rrp: f64,
    price: f64,
    vatable: bool,
    launch: NaiveDate,
    description: Option<String>,
}

fn products(name: &str) -> Vec<Product> {
    let table = read_fixture(name, &Limits::default()).unwrap();
    let map = ColumnMap::match_headers(FileType::Product, table.header()).unwrap();
    assert_eq!(map.unknown(), &["Launch Date".to_string()], "{name}");
    let launch = table
        .header()
        .cells()
        .iter()
        .position(|c| c.as_text().as_deref() == Some("Launch Date"))
        .unwrap();
    let text = |cell: &Cell| cell.as_text().map(|t| t.into_owned());
    table
        .rows()
        .iter()
        .map(|row| Product {
            row: row.number(),
            code: text(row.get(&map, Column::ProductCode)).unwrap(),
            title: text(row.get(&map, Column::Title)).unwrap(),
            barcode: text(row.get(&map, Column::Barcode)).unwrap(),
            colour: text(row.get(&map, Column::Colour)).unwrap(),
            size: text(row.get(&map, Column::Size)).unwrap(),
            rrp: row.get(&map, Column::Rrp).as_number().unwrap(),
            price: row.get(&map, Column::Price).as_number().unwrap(),
            vatable: row.get(&map, Column::Vatable).as_bool().unwrap(),
            launch: row.cell(launch).as_date().unwrap(),
            description: text(row.get(&map, Column::Description)),
        })
        .collect()
}

#[test]
fn every_format_gives_the_same_typed_rows() {
    let expected = products("product.xlsx");
    assert_eq!(expected.len(), 3);
    assert_eq!(
        expected[0],
        Product {
            row: 2,
            code: "TSHIRT-001".into(),
            title: "Crème Tee".into(),
            barcode: "5012345678900".into(),
            colour: "Navy".into(),
            size: "M".into(),
            rrp: 25.0,
            price: 19.99,
            vatable: true,
            launch: NaiveDate::from_ymd_opt(2024, 3, 15).unwrap(),
            description: Some("Soft cotton, crew neck".into()),
        }
    );
    assert_eq!(expected[1].title, "Ärmel Jacket");
    assert_eq!(
        expected[1].description.as_deref(),
        Some("Café \"Ärmel\" lining")
    );
    assert_eq!(expected[2].description, None);
    for name in PRODUCT_FIXTURES {
        assert_eq!(products(name), expected, "{name}");
    }
}

#[test]
fn workbook_cells_keep_their_types() {
    for name in ["product.xlsx", "product.xls", "product.ods"] {
        let table = read_fixture(name, &Limits::default()).unwrap();
        let row = &table.rows()[0];
        assert_eq!(row.cell(2), &Cell::Number(5_012_345_678_900.0), "{name}");
        assert_eq!(row.cell(7), &Cell::Bool(true), "{name}");
        assert!(matches!(row.cell(8), Cell::Date(_)), "{name}");
        assert_eq!(row.cell(1), &Cell::Text("Crème Tee".into()), "{name}");
    }
}

#[test]
fn csv_cells_are_text() {
    for name in &PRODUCT_FIXTURES[3..] {
        let table = read_fixture(name, &Limits::default()).unwrap();
        assert!(
            table.rows()[0]
                .cells()
                .iter()
                .all(|c| matches!(c, Cell::Text(_))),
            "{name}"
        );
    }
}

#[test]
fn the_empty_row_is_skipped_and_numbers_are_kept() {
    for name in PRODUCT_FIXTURES {
        let table = read_fixture(name, &Limits::default()).unwrap();
        assert_eq!(table.header().number(), 1, "{name}");
        let numbers: Vec<u32> = table.rows().iter().map(|r| r.number()).collect();
        assert_eq!(numbers, vec![2, 4, 5], "{name}");
    }
}

#[test]
fn headers_match_in_odd_case_and_spacing() {
    let table = read_fixture("stock.xlsx", &Limits::default()).unwrap();
    let map = ColumnMap::match_headers(FileType::Stock, table.header()).unwrap();
    assert_eq!(map.index(Column::Barcode), Some(0));
    assert_eq!(map.index(Column::InStock), Some(1));
    assert_eq!(map.index(Column::Demand), Some(2));
    assert_eq!(map.unknown(), &["Warehouse Note".to_string()]);
    let rows = table.rows();
    assert_eq!(
        rows[0].get(&map, Column::Barcode).as_text().unwrap(),
        "5012345678900"
    );
    assert_eq!(rows[0].get(&map, Column::InStock).as_integer(), Some(12));
    assert_eq!(
        rows[1].get(&map, Column::Barcode).as_text().unwrap(),
        "0012345678905"
    );
    assert_eq!(rows[1].get(&map, Column::InStock).as_integer(), Some(0));
    assert_eq!(rows[1].get(&map, Column::Supply), &Cell::Empty);
}

#[test]
fn a_missing_required_column_is_named() {
    let table = read_fixture("stock.xlsx", &Limits::default()).unwrap();
    let err = ColumnMap::match_headers(FileType::Price, table.header()).unwrap_err();
    assert_eq!(err.to_string(), "missing required column: Price");
    let err = ColumnMap::match_headers(FileType::Product, table.header()).unwrap_err();
    assert_eq!(
        err,
        SheetError::MissingColumns(vec!["Product Code".into(), "Title".into()])
    );
}

#[test]
fn xlsm_reads_like_xlsx() {
    let table = read(&fixture("product.xlsx"), Format::Xlsm, &Limits::default()).unwrap();
    assert_eq!(table.rows().len(), 3);
}

#[test]
fn too_many_rows_are_refused_in_every_format() {
    let tight = Limits {
        max_rows: 2,
        ..Limits::default()
    };
    let enough = Limits {
        max_rows: 3,
        ..Limits::default()
    };
    for name in PRODUCT_FIXTURES {
        let err = read_fixture(name, &tight).unwrap_err();
        assert_eq!(err, SheetError::TooManyRows { max: 2 }, "{name}");
        assert_eq!(
            err.to_string(),
            "the sheet has more than 2 data rows",
            "{name}"
        );
        assert!(read_fixture(name, &enough).is_ok(), "{name}");
    }
}

#[test]
fn the_header_is_the_first_non_empty_row() {
    let mut workbook = rust_xlsxwriter::Workbook::new();
    let sheet = workbook.add_worksheet();
    sheet.write_string(0, 3, "   ").unwrap();
    sheet.write_string(2, 1, "Barcode").unwrap();
    sheet.write_string(2, 2, "Qty").unwrap();
    sheet.write_number(3, 1, 42.0).unwrap();
    sheet.write_number(3, 2, 7.0).unwrap();
    let bytes = workbook.save_to_buffer().unwrap();
    let table = read(&bytes, Format::Xlsx, &Limits::default()).unwrap();
    assert_eq!(table.header().number(), 3);
    let map = ColumnMap::match_headers(FileType::Stock, table.header()).unwrap();
    assert_eq!(map.index(Column::Barcode), Some(1));
    assert_eq!(table.rows()[0].number(), 4);
    assert_eq!(
        table.rows()[0]
            .get(&map, Column::Barcode)
            .as_text()
            .unwrap(),
        "42"
    );
}

#[test]
fn an_empty_workbook_has_no_header() {
    let mut workbook = rust_xlsxwriter::Workbook::new();
    workbook.add_worksheet();
    let bytes = workbook.save_to_buffer().unwrap();
    assert_eq!(
        read(&bytes, Format::Xlsx, &Limits::default()).unwrap_err(),
        SheetError::Empty
    );
}

#[test]
fn a_cell_over_the_limit_skips_its_row_in_every_format() {
    // The longest header is 12 characters; row 2's description has 22.
    let limits = Limits {
        max_cell_chars: 20,
        ..Limits::default()
    };
    for name in PRODUCT_FIXTURES {
        let table = read_fixture(name, &limits).unwrap();
        let kept: Vec<u32> = table.rows().iter().map(|r| r.number()).collect();
        assert_eq!(kept.len(), 2, "{name}");
        assert_eq!(
            table.skipped(),
            &[SkippedRow {
                number: 2,
                reason: "column J holds 22 characters, more than the 20 a cell may hold".into()
            }],
            "{name}"
        );
    }
}
