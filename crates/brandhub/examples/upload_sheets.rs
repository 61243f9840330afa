//! Writes the spreadsheets of the upload benchmark (`bench/uploads.sh`): a product file of
//! `products` × `variants` rows and a stock file over the same barcodes, as `.xlsx` made by
//! rust_xlsxwriter, the way a brand's export would look (barcodes stored as numbers, prices with
//! decimals, every column of the template).
//!
//! ```text
//! cargo run --release --example upload_sheets -- product 20000 5 products.xlsx
//! cargo run --release --example upload_sheets -- stock 20000 5 stock.xlsx
//! ```

use rust_xlsxwriter::{Workbook, Worksheet, XlsxError};

/// The barcode of a product's variant: 13 digits starting 27, which no demo barcode uses.
fn barcode(product: u64, variant: u64, variants: u64) -> f64 {
    (2_700_000_000_000 + product * variants + variant) as f64
}

fn product_sheet(sheet: &mut Worksheet, products: u64, variants: u64) -> Result<(), XlsxError> {
    let header = [
        "Product Code",
        "Title",
        "Barcode",
        "Variant Code",
        "Colour",
        "Size",
        "Sequence",
        "RRP",
        "Price",
        "Vatable",
        "Category",
        "Season",
    ];
    sheet.write_row(0, 0, header)?;
    const COLOURS: [&str; 5] = ["Navy", "Sand", "Black", "Olive", "White"];
    const SIZES: [&str; 5] = ["XS", "S", "M", "L", "XL"];
    let mut row = 1u32;
    for product in 0..products {
        let code = format!("BENCH-{product:06}");
        let title = format!("Bench product {product}");
        let rrp = 10.0 + (product % 90) as f64;
        for variant in 0..variants {
            let colour = COLOURS[(product % 5) as usize];
            let size = SIZES[(variant % 5) as usize];
            sheet.write_string(row, 0, &code)?;
            sheet.write_string(row, 1, &title)?;
            sheet.write_number(row, 2, barcode(product, variant, variants))?;
            sheet.write_string(row, 3, format!("{code}-{size}"))?;
            sheet.write_string(row, 4, colour)?;
            sheet.write_string(row, 5, size)?;
            sheet.write_number(row, 6, (variant + 1) as f64)?;
            sheet.write_number(row, 7, rrp)?;
            sheet.write_number(row, 8, rrp * 0.8)?;
            sheet.write_boolean(row, 9, true)?;
            sheet.write_string(row, 10, "Bench")?;
            sheet.write_string(row, 11, "SS27")?;
            row += 1;
        }
    }
    Ok(())
}

fn stock_sheet(sheet: &mut Worksheet, products: u64, variants: u64) -> Result<(), XlsxError> {
    sheet.write_row(0, 0, ["Barcode", "In Stock", "Demand", "Supply"])?;
    let mut row = 1u32;
    for product in 0..products {
        for variant in 0..variants {
            let n = product * variants + variant;
            sheet.write_number(row, 0, barcode(product, variant, variants))?;
            sheet.write_number(row, 1, (n % 50) as f64)?;
            sheet.write_number(row, 2, (n % 7) as f64)?;
            sheet.write_number(row, 3, (n % 11) as f64)?;
            row += 1;
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: upload_sheets product|stock <products> <variants per product> <out.xlsx>";
    let [kind, products, variants, out] = args.as_slice() else {
        return Err(usage.into());
    };
    let products: u64 = products.parse().map_err(|_| usage)?;
    let variants: u64 = variants.parse().map_err(|_| usage)?;
    let mut workbook = Workbook::new();
    let sheet = workbook.add_worksheet();
    match kind.as_str() {
        "product" => product_sheet(sheet, products, variants)?,
        "stock" => stock_sheet(sheet, products, variants)?,
        _ => return Err(usage.into()),
    }
    workbook.save(out)?;
    Ok(())
}
