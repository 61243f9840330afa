//! Uploaded files: per brand a product, stock, price (one or two hosts), image and order-dispatch
//! upload, sometimes an earlier failed product upload. Products, variants, prices and images
//! refer to the processed ones.

use brandhub_catalog::{Cell, FileStatus, file_paths};

use crate::barcode;
use crate::emit::{Emitter, Table};
use crate::ids::Id;
use crate::names::{self, XLSX_MIME};
use crate::random::{below, between, distinct, percent, pick};
use crate::time::{self, DAY, END, START};
use crate::{DemoRng, Stream, World};

/// The kinds of upload, as stored in `fileType`, and the word their file names start with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Product,
    Stock,
    Price,
    Image,
    OrderDispatch,
}

impl Kind {
    /// The stored `fileType`.
    fn file_type(self) -> &'static str {
        match self {
            Kind::Product => "product",
            Kind::Stock => "stock",
            Kind::Price => "price",
            Kind::Image => "image",
            Kind::OrderDispatch => "orderDispatch",
        }
    }

    /// The first word of the file name.
    fn file_word(self) -> &'static str {
        match self {
            Kind::Product => "products",
            Kind::Stock => "stock",
            Kind::Price => "prices",
            Kind::Image => "images",
            Kind::OrderDispatch => "dispatch",
        }
    }
}

/// What one upload looks like before it becomes a record.
struct Upload {
    kind: Kind,
    failed: bool,
    /// Host index and validity window (start, end or none) of a price file.
    price: Option<(usize, i64, Option<i64>)>,
}

/// The cell indexes of the file table.
struct Cells {
    fk_brand: usize,
    fk_user: usize,
    file_type: usize,
    file_name: usize,
    created: usize,
    status: usize,
    mime: usize,
    host: usize,
    start: usize,
    end: usize,
    error: usize,
    read: usize,
    applied: usize,
    skipped: usize,
}

/// A warning about rows the importer could not match, or an empty text.
fn warning(rng: &mut DemoRng, kind: Kind) -> (String, i64) {
    if !percent(rng, 15) {
        return (String::new(), 0);
    }
    match kind {
        Kind::Product => ("Warning: 1 row without a size was skipped.".to_string(), 1),
        Kind::Image => (
            "Warning: 2 image URLs could not be fetched and were skipped.".to_string(),
            2,
        ),
        _ => {
            let count = between(rng, 1, 3);
            let codes: Vec<String> = (0..count)
                .map(|_| barcode::unknown(between(rng, 1, 999_999) as u32))
                .collect();
            let noun = if count == 1 { "barcode" } else { "barcodes" };
            (
                format!("Warning: {count} {noun} not found: {}", codes.join(", ")),
                count,
            )
        }
    }
}

/// Files of every brand; records the processed product, image and price files on the brand.
pub(crate) fn files(world: &mut World, out: &mut Emitter) {
    let mut rng = world.rng(Stream::Files);
    let t = Table::new("file");
    let [
        fk_brand,
        fk_user,
        file_type,
        file_name,
        created,
        status,
        mime,
        host,
        start,
        end,
        error,
        read,
        applied,
        skipped,
    ] = t.cells([
        file_paths::BRAND,
        file_paths::USER,
        file_paths::FILE_TYPE,
        file_paths::FILE_NAME,
        file_paths::CREATED,
        file_paths::STATUS,
        file_paths::MIME,
        file_paths::HOST,
        file_paths::START,
        file_paths::END,
        file_paths::ERROR,
        file_paths::ROWS_READ,
        file_paths::ROWS_APPLIED,
        file_paths::ROWS_SKIPPED,
    ]);
    let cells = Cells {
        fk_brand,
        fk_user,
        file_type,
        file_name,
        created,
        status,
        mime,
        host,
        start,
        end,
        error,
        read,
        applied,
        skipped,
    };
    for b in 0..world.brands.len() {
        let mut uploads = Vec::new();
        if percent(&mut rng, 20) {
            uploads.push(Upload {
                kind: Kind::Product,
                failed: true,
                price: None,
            });
        }
        uploads.push(Upload {
            kind: Kind::Product,
            failed: false,
            price: None,
        });
        uploads.push(Upload {
            kind: Kind::Stock,
            failed: percent(&mut rng, 15),
            price: None,
        });
        let hosts = world.brands[b].hosts.clone();
        let price_files = if hosts.len() > 1 && percent(&mut rng, 50) {
            2
        } else {
            1
        };
        for h in distinct(&mut rng, hosts.len(), price_files) {
            let from = time::moment(&mut rng, START + 30 * DAY, END - 120 * DAY);
            let until = (!percent(&mut rng, 40)).then(|| from + between(&mut rng, 14, 90) * DAY);
            uploads.push(Upload {
                kind: Kind::Price,
                failed: false,
                price: Some((hosts[h], from, until)),
            });
        }
        uploads.push(Upload {
            kind: Kind::Image,
            failed: false,
            price: None,
        });
        uploads.push(Upload {
            kind: Kind::OrderDispatch,
            failed: percent(&mut rng, 15),
            price: None,
        });
        for upload in uploads {
            let id = world.id();
            let uploader = uploader(world, &mut rng, b);
            let r = file_record(world, &mut rng, &t, &cells, id, b, uploader, &upload);
            out.push(&t, r);
            let brand = &mut world.brands[b];
            match (upload.kind, upload.failed) {
                (Kind::Product, false) => brand.product_file = Some(id),
                (Kind::Image, false) => brand.image_file = Some(id),
                (Kind::Price, false) => {
                    let (h, ..) = upload.price.expect("price uploads have a host");
                    brand.price_files.push((id, h));
                }
                _ => {}
            }
        }
    }
}

/// A user who can see the brand: its company's user mostly, the admin otherwise.
fn uploader(world: &World, rng: &mut DemoRng, brand: usize) -> Id {
    let uploaders = world.uploaders.as_ref().expect("users come before files");
    let company = world.brands[brand].company;
    let candidates: Vec<Id> = uploaders
        .company_users
        .iter()
        .filter(|(_, companies)| companies.contains(&company))
        .map(|(id, _)| *id)
        .collect();
    if !candidates.is_empty() && percent(rng, 75) {
        candidates[below(rng, candidates.len())]
    } else {
        uploaders.admin
    }
}

/// The record of one upload: name and dates, price window, outcome and row counts.
#[allow(clippy::too_many_arguments)]
fn file_record(
    world: &World,
    rng: &mut DemoRng,
    t: &Table,
    c: &Cells,
    id: Id,
    b: usize,
    uploader: Id,
    upload: &Upload,
) -> brandhub_catalog::Record {
    let brand = &world.brands[b];
    let at = match upload.price {
        Some((_, from, _)) => from - between(rng, 1, 7) * DAY,
        None => time::moment(rng, START + 30 * DAY, END),
    };
    let csv = upload.kind == Kind::OrderDispatch && percent(rng, 60) || percent(rng, 25);
    let mut r = t.record(id);
    r.cells[c.fk_brand] = brand.id.cell();
    r.cells[c.fk_user] = uploader.cell();
    r.cells[c.file_type] = upload.kind.file_type().into();
    r.cells[c.file_name] = format!(
        "{}-{}.{}",
        upload.kind.file_word(),
        time::year_month(at),
        if csv { "csv" } else { "xlsx" }
    )
    .into();
    r.cells[c.created] = time::timestamp(at).into();
    r.cells[c.mime] = if csv { "text/csv" } else { XLSX_MIME }.into();
    if let Some((h, from, until)) = upload.price {
        r.cells[c.host] = world.hosts[h].id.cell();
        r.cells[c.start] = time::precise(from, 0).into();
        r.cells[c.end] = match until {
            Some(until) => time::precise(until, 0),
            None => time::NO_END_DATE.to_string(),
        }
        .into();
    }
    let rows = match upload.kind {
        Kind::Product | Kind::Stock | Kind::Price => brand.variants.len() as i64,
        Kind::Image => brand.products.len() as i64,
        Kind::OrderDispatch => between(rng, 5, 400),
    };
    if upload.failed {
        r.cells[c.status] = FileStatus::Failed.as_str().into();
        r.cells[c.error] = (*pick(rng, names::FILE_FAILURES)).into();
        r.cells[c.read] = Cell::Integer(0);
        r.cells[c.applied] = Cell::Integer(0);
        r.cells[c.skipped] = Cell::Integer(0);
    } else {
        let (text, skipped) = warning(rng, upload.kind);
        r.cells[c.status] = FileStatus::Processed.as_str().into();
        r.cells[c.error] = text.into();
        r.cells[c.read] = Cell::Integer(rows + skipped);
        r.cells[c.applied] = Cell::Integer(rows);
        r.cells[c.skipped] = Cell::Integer(skipped);
    }
    r
}
