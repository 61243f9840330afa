//! Writes the hostile workbook of `bench/hostile_cell.sh`: a product `.xlsx` whose row 3 has
//! a title of `megabytes` MB in one inline string, compressing about 200 times (a letter every
//! 700 characters breaks the runs), as found in review: a small upload that expands far beyond
//! what a row should cost. Rows 2 and 4 are ordinary. The cell is written in pieces, so this
//! tool itself never holds it.
//!
//! ```text
//! cargo run --release --example hostile_cell -- 400 hostile.xlsx
//! ```

use std::io::Write;

const MAIN: &str = "http://schemas.openxmlformats.org/spreadsheetml/2006/main";
const RELS: &str = "http://schemas.openxmlformats.org/package/2006/relationships";
const DOC: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";

/// The product codes of the three rows (the benchmark looks them up afterwards).
const CODES: [&str; 3] = ["HOSTILE-BEFORE", "HOSTILE-HUGE", "HOSTILE-AFTER"];

fn inline(reference: &str, text: &str) -> String {
    format!(r#"<c r="{reference}" t="inlineStr"><is><t>{text}</t></is></c>"#)
}

fn row(number: u32, code: &str, title: &str, barcode: u64) -> String {
    format!(
        r#"<row r="{number}">{}{}{}</row>"#,
        inline(&format!("A{number}"), code),
        inline(&format!("B{number}"), title),
        inline(&format!("C{number}"), &barcode.to_string())
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: hostile_cell <megabytes of the huge cell> <out.xlsx>";
    let [megabytes, out] = args.as_slice() else {
        return Err(usage.into());
    };
    let megabytes: u64 = megabytes.parse().map_err(|_| usage)?;
    let file = std::fs::File::create(out)?;
    let mut zip = zip::ZipWriter::new(std::io::BufWriter::new(file));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true);
    let small = [
        (
            "[Content_Types].xml",
            r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>"#.to_string(),
        ),
        (
            "_rels/.rels",
            format!(r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{RELS}"><Relationship Id="rId1" Type="{DOC}/officeDocument" Target="xl/workbook.xml"/></Relationships>"#),
        ),
        (
            "xl/workbook.xml",
            format!(r#"<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{MAIN}" xmlns:r="{DOC}"><sheets><sheet name="Products" sheetId="1" r:id="rId1"/></sheets></workbook>"#),
        ),
        (
            "xl/_rels/workbook.xml.rels",
            format!(r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{RELS}"><Relationship Id="rId1" Type="{DOC}/worksheet" Target="worksheets/sheet1.xml"/></Relationships>"#),
        ),
    ];
    for (name, content) in small {
        zip.start_file(name, options)?;
        zip.write_all(content.as_bytes())?;
    }
    zip.start_file("xl/worksheets/sheet1.xml", options)?;
    let header = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{MAIN}"><sheetData><row r="1">{}{}{}</row>{}<row r="3">{}<c r="B3" t="inlineStr"><is><t>"#,
        inline("A1", "Product Code"),
        inline("B1", "Title"),
        inline("C1", "Barcode"),
        row(2, CODES[0], "An ordinary title", 2_800_000_000_001),
        inline("A3", CODES[1]),
    );
    zip.write_all(header.as_bytes())?;
    // The huge title, a mebibyte at a time.
    let mut state: u32 = 0x2545_F491;
    let mut piece = vec![b'x'; 1024 * 1024];
    let mut written: u64 = 0;
    let total = megabytes * 1024 * 1024;
    while written < total {
        let take = (total - written).min(piece.len() as u64) as usize;
        for (i, byte) in piece[..take].iter_mut().enumerate() {
            *byte = if (written + i as u64) % 700 == 699 {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                b'a' + (state % 26) as u8
            } else {
                b'x'
            };
        }
        zip.write_all(&piece[..take])?;
        written += take as u64;
    }
    let trailer = format!(
        r#"</t></is></c>{}</row>{}</sheetData></worksheet>"#,
        inline("C3", "2800000000002"),
        row(4, CODES[2], "Another ordinary title", 2_800_000_000_003),
    );
    zip.write_all(trailer.as_bytes())?;
    zip.finish()?.flush()?;
    Ok(())
}
