//! Writes the fixtures of `tests/fixtures/` that this crate's own dependencies can produce: the
//! `.xlsx` workbooks (rust_xlsxwriter) and the three CSV dialects (encoding_rs for
//! Windows-1252). The `.xls` and `.ods` fixtures come from LibreOffice; `tests/fixtures/README.md`
//! gives the commands.
//!
//! Run with `cargo run -p brandhub-sheet --example make_fixtures`.

use std::path::Path;

use rust_xlsxwriter::{ExcelDateTime, Format, Workbook, XlsxError};

/// The product sheet every format carries: header, then rows (`None` is the empty row).
const HEADER: [&str; 10] = [
    "product_code",
    "  Title ",
    "BARCODE",
    "Colour",
    "size",
    "RRP",
    "Price",
    "Vatable",
    "Launch Date",
    "Description",
];

/// One product row as typed values.
struct Product {
    code: &'static str,
    title: &'static str,
    barcode: f64,
    colour: &'static str,
    size: &'static str,
    rrp: f64,
    price: f64,
    vatable: bool,
    launch: (u16, u8, u8),
    description: &'static str,
}

const PRODUCTS: [Option<Product>; 4] = [
    Some(Product {
        code: "TSHIRT-001",
        title: "Crème Tee",
        barcode: 5_012_345_678_900.0,
        colour: "Navy",
        size: "M",
        rrp: 25.0,
        price: 19.99,
        vatable: true,
        launch: (2024, 3, 15),
        description: "Soft cotton, crew neck",
    }),
    None,
    Some(Product {
        code: "JACKET-002",
        title: "Ärmel Jacket",
        barcode: 4_006_381_333_931.0,
        colour: "Black",
        size: "L",
        rrp: 120.0,
        price: 99.5,
        vatable: false,
        launch: (2024, 9, 1),
        description: "Café \"Ärmel\" lining",
    }),
    Some(Product {
        code: "TSHIRT-001",
        title: "Crème Tee",
        barcode: 5_012_345_678_917.0,
        colour: "Navy",
        size: "L",
        rrp: 25.0,
        price: 19.99,
        vatable: true,
        launch: (2024, 3, 15),
        description: "",
    }),
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    std::fs::write(dir.join("product.xlsx"), product_xlsx()?)?;
    std::fs::write(dir.join("stock.xlsx"), stock_xlsx()?)?;
    std::fs::write(dir.join("product_comma.csv"), product_comma_csv())?;
    std::fs::write(
        dir.join("product_bom_semicolon.csv"),
        product_bom_semicolon_csv(),
    )?;
    std::fs::write(dir.join("product_cp1252_tab.csv"), product_cp1252_tab_csv())?;
    println!("fixtures written to {}", dir.display());
    Ok(())
}

/// Typed cells: the barcode a number, the launch date a date, Vatable a boolean.
fn product_xlsx() -> Result<Vec<u8>, XlsxError> {
    let mut workbook = Workbook::new();
    let sheet = workbook.add_worksheet();
    let date = Format::new().set_num_format("dd/mm/yyyy");
    for (col, name) in HEADER.iter().enumerate() {
        sheet.write_string(0, col as u16, *name)?;
    }
    for (i, product) in PRODUCTS.iter().enumerate() {
        let Some(p) = product else { continue };
        let row = i as u32 + 1;
        sheet.write_string(row, 0, p.code)?;
        sheet.write_string(row, 1, p.title)?;
        sheet.write_number(row, 2, p.barcode)?;
        sheet.write_string(row, 3, p.colour)?;
        sheet.write_string(row, 4, p.size)?;
        sheet.write_number(row, 5, p.rrp)?;
        sheet.write_number(row, 6, p.price)?;
        sheet.write_boolean(row, 7, p.vatable)?;
        let (y, m, d) = p.launch;
        sheet.write_datetime_with_format(row, 8, ExcelDateTime::from_ymd(y, m, d)?, &date)?;
        if !p.description.is_empty() {
            sheet.write_string(row, 9, p.description)?;
        }
    }
    // A second sheet, which must be ignored: only the first sheet is read.
    let other = workbook.add_worksheet();
    other.write_string(0, 0, "not read")?;
    workbook.save_to_buffer()
}

/// A stock sheet with headers in odd case and spacing and an unknown column.
fn stock_xlsx() -> Result<Vec<u8>, XlsxError> {
    let mut workbook = Workbook::new();
    let sheet = workbook.add_worksheet();
    for (col, name) in ["Bar_Code", "IN-STOCK", " demand ", "Warehouse Note"]
        .iter()
        .enumerate()
    {
        sheet.write_string(0, col as u16, *name)?;
    }
    sheet.write_number(1, 0, 5_012_345_678_900.0)?;
    sheet.write_number(1, 1, 12.0)?;
    sheet.write_number(1, 2, 3.0)?;
    sheet.write_string(1, 3, "aisle 4")?;
    sheet.write_string(2, 0, "0012345678905")?;
    sheet.write_number(2, 1, 0.0)?;
    workbook.save_to_buffer()
}

/// One CSV rendering of the product rows.
struct Dialect {
    delimiter: char,
    line_end: &'static str,
    decimal_comma: bool,
    date: fn((u16, u8, u8)) -> String,
    yes_no: (&'static str, &'static str),
}

fn csv(dialect: &Dialect) -> String {
    let quote = |field: &str| {
        if field.contains(dialect.delimiter) || field.contains('"') {
            format!("\"{}\"", field.replace('"', "\"\""))
        } else {
            field.to_string()
        }
    };
    let number = |n: f64| {
        let text = format!("{n}");
        if dialect.decimal_comma {
            text.replace('.', ",")
        } else {
            text
        }
    };
    let separator = dialect.delimiter.to_string();
    let mut out = String::new();
    out.push_str(&HEADER.map(quote).join(&separator));
    out.push_str(dialect.line_end);
    for product in &PRODUCTS {
        let fields = match product {
            // The empty row: a blank line in the `,` file, bare delimiters in the others.
            None if dialect.delimiter == ',' => Vec::new(),
            None => vec![String::new(); HEADER.len()],
            Some(p) => vec![
                quote(p.code),
                quote(p.title),
                number(p.barcode),
                quote(p.colour),
                quote(p.size),
                number(p.rrp),
                number(p.price),
                (if p.vatable {
                    dialect.yes_no.0
                } else {
                    dialect.yes_no.1
                })
                .to_string(),
                (dialect.date)(p.launch),
                quote(p.description),
            ],
        };
        out.push_str(&fields.join(&separator));
        out.push_str(dialect.line_end);
    }
    out
}

/// Plain UTF-8, `,`, quoted fields, ISO dates: also the source LibreOffice converts.
fn product_comma_csv() -> Vec<u8> {
    csv(&Dialect {
        delimiter: ',',
        line_end: "\n",
        decimal_comma: false,
        date: |(y, m, d)| format!("{y:04}-{m:02}-{d:02}"),
        yes_no: ("TRUE", "FALSE"),
    })
    .into_bytes()
}

/// UTF-8 with a byte order mark, `;`, decimal commas and DD/MM/YYYY dates, as a European Excel
/// exports.
fn product_bom_semicolon_csv() -> Vec<u8> {
    let text = csv(&Dialect {
        delimiter: ';',
        line_end: "\r\n",
        decimal_comma: true,
        date: |(y, m, d)| format!("{d:02}/{m:02}/{y:04}"),
        yes_no: ("yes", "no"),
    });
    [b"\xEF\xBB\xBF".as_slice(), text.as_bytes()].concat()
}

/// Windows-1252 (é is the byte 0xE9), tab separated, ISO timestamps.
fn product_cp1252_tab_csv() -> Vec<u8> {
    let text = csv(&Dialect {
        delimiter: '\t',
        line_end: "\r\n",
        decimal_comma: false,
        date: |(y, m, d)| format!("{y:04}-{m:02}-{d:02}T00:00:00"),
        yes_no: ("Y", "N"),
    });
    let (bytes, _, unmappable) = encoding_rs::WINDOWS_1252.encode(&text);
    assert!(!unmappable, "every character has a Windows-1252 byte");
    bytes.into_owned()
}
