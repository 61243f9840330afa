//! Image files: images of the brand's products, named by barcode (an image of that variant) or
//! by product code (an image of the product). Only http and https URLs are accepted. An image
//! with the same product, variant and URL is kept (its position updated when the file gives
//! one), so uploading the same file again adds nothing; a new image without a position goes
//! after the product's others.

use crate::lookup::{
    brand_barcodes, brand_product_codes, either_text, fitting, optional_integer, refers_to,
    required_text, resource, take_changed, text_in,
};
use crate::process::{FileJob, ProcessError};
use crate::report::{Missing, Report};
use brandhub_catalog::Res;
use brandhub_catalog::{Cell, Layout, Record};
use brandhub_problem::{Words, words};
use brandhub_query::text::fold;
use brandhub_sheet::{Column as C, ColumnMap, Table};
use brandhub_store::WriteTx;
use brandhub_store::ids::new_id;
use sea_query::Cond;
use std::collections::HashMap;

/// Applies an image file inside `tx`.
pub(crate) async fn apply(
    tx: &mut WriteTx,
    job: &FileJob,
    table: &Table,
    map: &ColumnMap,
    report: &mut Report,
) -> Result<(), ProcessError> {
    let image = resource(Res::Image);
    let product = resource(Res::Product);
    let l = Layout::of(image);
    let barcodes = brand_barcodes(tx, &job.brand).await?;
    let codes = brand_product_codes(tx, &job.brand).await?;
    let mut images = tx
        .load_records(
            image,
            Cond::all().add(refers_to(
                image,
                "fk_product",
                product,
                "fk_brand",
                &job.brand,
            )),
        )
        .await?;
    // (product, variant or "", url) → index; the next free position of each product.
    let mut by_key: HashMap<(String, String, String), usize> = HashMap::new();
    let mut next_position: HashMap<String, i64> = HashMap::new();
    for (i, record) in images.iter().enumerate() {
        let product_id = text_in(record, l.cell("fk_product")).to_string();
        let key = (
            product_id.clone(),
            text_in(record, l.cell("fk_variant")).to_string(),
            text_in(record, l.cell("url")).to_string(),
        );
        by_key.entry(key).or_insert(i);
        if let Cell::Integer(position) = record.cells[l.cell("position")] {
            let next = next_position.entry(product_id).or_insert(1);
            *next = Ord::max(*next, position + 1);
        }
    }
    let mut changed = std::collections::BTreeSet::new();
    for row in table.rows() {
        let line = (|| -> Result<_, Words> {
            let url = fitting(
                resource(Res::Image),
                "url",
                C::ImageUrl,
                required_text(row, map, C::ImageUrl)?,
            )?;
            let position =
                optional_integer(row, map, C::Position, resource(Res::Image), "position")?;
            let (code, barcode) = either_text(row, map, C::ProductCode, C::Barcode)?;
            Ok((url, position, barcode, code))
        })();
        let Some((url, position, barcode, code)) = report.checked(row.number(), line) else {
            continue;
        };
        // A barcode names a variant (and its product); a product code the product alone.
        let (product_id, variant_id) = if !barcode.is_empty() {
            let Some(found) = barcodes.get(&fold(&barcode)) else {
                report.not_found(row.number(), Missing::Barcode, &barcode);
                continue;
            };
            if !code.is_empty() && codes.get(&fold(&code)) != Some(&found.product) {
                report.skip(
                    row.number(),
                    words!(
                        "barcode {barcode} is not a variant of product {code}",
                        "Barcode {barcode} ist keine Variante von Produkt {code}"
                    ),
                );
                continue;
            }
            (found.product.clone(), Some(found.id.clone()))
        } else {
            let Some(found) = codes.get(&fold(&code)) else {
                report.not_found(row.number(), Missing::ProductCode, &code);
                continue;
            };
            (found.clone(), None)
        };
        let key = (
            product_id.clone(),
            variant_id.clone().unwrap_or_default(),
            url.clone(),
        );
        let i = match by_key.get(&key) {
            Some(i) => *i,
            None => {
                let mut record = Record::empty(image);
                record.cells[l.cell("id")] = Cell::Text(new_id());
                record.cells[l.cell("fk_product")] = Cell::Text(product_id.clone());
                record.cells[l.cell("fk_variant")] = variant_id.map_or(Cell::Null, Cell::Text);
                record.cells[l.cell("url")] = Cell::Text(url);
                images.push(record);
                by_key.insert(key, images.len() - 1);
                changed.insert(images.len() - 1);
                images.len() - 1
            }
        };
        let record = &mut images[i];
        let before = record.cells.clone();
        let next = next_position.entry(product_id).or_insert(1);
        match position {
            Some(Cell::Integer(position)) => {
                record.cells[l.cell("position")] = Cell::Integer(position);
                *next = Ord::max(*next, position + 1);
            }
            _ if record.cells[l.cell("position")] == Cell::Null => {
                record.cells[l.cell("position")] = Cell::Integer(*next);
                *next += 1;
            }
            _ => {}
        }
        if record.cells != before {
            changed.insert(i);
        }
        if changed.contains(&i) {
            record.cells[l.cell("fk_file")] = Cell::Text(job.id.clone());
        }
        report.applied();
    }
    tx.upsert_records(image, &mut take_changed(images, &changed))
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::lookup::{fitting, resource};
    use brandhub_catalog::Res;
    use brandhub_sheet::Column as C;

    /// Image URLs from a file follow the catalog's rule for `image.url`, as JSON writes do.
    #[test]
    fn only_http_and_https_urls_with_a_host() {
        let url = |text: &str| fitting(resource(Res::Image), "url", C::ImageUrl, text.to_string());
        assert!(url("https://images.example.com/a.jpg").is_ok());
        assert!(url("HTTP://images.example.com").is_ok());
        for bad in [
            "ftp://x/a.jpg",
            "javascript:alert(1)",
            "images/a.jpg",
            "https://",
            "https:///a.jpg",
            "https://x/a b.jpg",
        ] {
            let problem = url(bad).unwrap_err();
            assert!(
                problem.starts_with(&format!("Image URL \"{bad}\"")),
                "{problem}"
            );
        }
        assert!(url(&format!("https://x/{}", "a".repeat(2048))).is_err());
    }
}
