//! The merchandise: products, their variants with barcodes, one stock record per variant,
//! host prices and product images.

use brandhub_catalog::Cell;
use std::collections::HashMap;

use crate::barcode::Barcodes;
use crate::emit::{Emitter, Table, id_or_null, money};
use crate::names::{self, COLOURS, GARMENTS, MATERIALS, SIZES, TITLE_FIRST};
use crate::random::{below, between, percent, pick, weighted};
use crate::time::{self, DAY, END, HOUR, MINUTE, START};
use crate::{Product, Stream, Variant, World};

/// 2026-06-01T00:00:00Z: products are created before it.
const LAST_PRODUCT_CREATED: i64 = 1_780_272_000;

/// The first products of the first brand, so the docs can name them: title word, material and
/// garment indexes.
const FIXED_TITLES: [(usize, usize, usize); 3] = [(0, 0, 0), (1, 1, 1), (2, 2, 2)];

/// A product's code: its brand's code and its number within the brand.
fn product_code(brand_code: &str, number: u32) -> String {
    format!("{brand_code}-P{number:06}")
}

/// Products, spread evenly over the brands in brand order.
pub(crate) fn products(world: &mut World, out: &mut Emitter) {
    let mut rng = world.rng(Stream::Products);
    let t = Table::new("product");
    let [
        fk_brand,
        code,
        title,
        category,
        description,
        product_brand,
        season,
        origin,
        composition,
        care,
        created,
        status,
        import_file,
        commodity,
    ] = t.cells([
        "fk_brand",
        "code",
        "title",
        "category",
        "description",
        "productBrand",
        "season",
        "origin",
        "composition",
        "careInstructions",
        "createdDate",
        "status",
        "detail.importFile",
        "commodityCode",
    ]);
    let sizes = world.sizes;
    world.products.reserve_exact(sizes.products);
    for b in 0..world.brands.len() {
        let brand = &world.brands[b];
        for (n, p) in brand.products.clone().enumerate() {
            let (first, material, garment) = match FIXED_TITLES.get(p) {
                Some(fixed) => *fixed,
                None => (
                    below(&mut rng, TITLE_FIRST.len()),
                    below(&mut rng, MATERIALS.len()),
                    below(&mut rng, GARMENTS.len()),
                ),
            };
            let (material_word, material_label, material_phrase) = MATERIALS[material];
            let (garment_word, garment_category, garment_code, low, high) = GARMENTS[garment];
            let number = n as u32 + 1;
            let id = world.ids.next();
            let mut r = t.record(id);
            r.cells[fk_brand] = brand.id.cell();
            r.cells[code] = product_code(&brand.code, number).into();
            r.cells[title] =
                format!("{} {material_word} {garment_word}", TITLE_FIRST[first]).into();
            r.cells[category] = garment_category.into();
            r.cells[description] = format!(
                "{} {} in {material_phrase}, {}",
                pick(&mut rng, names::DESCRIPTION_STYLES),
                garment_word.to_lowercase(),
                pick(&mut rng, names::DESCRIPTION_ENDINGS)
            )
            .into();
            r.cells[product_brand] = brand.name.as_str().into();
            r.cells[season] = (*pick(&mut rng, names::SEASONS)).into();
            r.cells[origin] = (*pick(&mut rng, names::ORIGINS)).into();
            r.cells[composition] = material_label.into();
            r.cells[care] = (*pick(&mut rng, names::CARE)).into();
            r.cells[created] =
                time::timestamp(time::moment(&mut rng, START, LAST_PRODUCT_CREATED)).into();
            r.cells[status] = weighted(&mut rng, &[("active", 93), ("discontinued", 7)]).into();
            r.cells[import_file] = id_or_null(brand.product_file);
            r.cells[commodity] = garment_code.into();
            out.push(&t, r);
            // Whole pounds, half of them as x.95.
            let pounds = between(&mut rng, low / 100, high / 100);
            let rrp = pounds * 100 - if percent(&mut rng, 50) { 5 } else { 0 };
            let first_variant = p * 5;
            world.products.push(Product {
                id,
                brand: b as u32,
                number,
                first_variant: first_variant as u32,
                variant_count: (sizes.variants - first_variant).min(5) as u8,
                colour: below(&mut rng, COLOURS.len()) as u8,
                vatable: percent(&mut rng, 95),
                rrp: rrp as u32,
            });
        }
    }
}

/// Five variants (XS to XL) per product until the scale is reached.
pub(crate) fn variants(world: &mut World, out: &mut Emitter) {
    let mut rng = world.rng(Stream::Variants);
    let t = Table::new("variant");
    let [
        fk_product,
        code,
        barcode,
        colour,
        sequence,
        size,
        detail_rrp,
        detail_price,
        import_file,
        vatable,
        rrp,
    ] = t.cells([
        "fk_product",
        "code",
        "barcode",
        "colour",
        "sequence",
        "size",
        "detail.rrp",
        "detail.price",
        "detail.importFile",
        "vatable",
        "rrp",
    ]);
    let mut barcodes = Barcodes::new();
    world.variants.reserve_exact(world.sizes.variants);
    for (p, product) in world.products.iter().enumerate() {
        let brand = &world.brands[product.brand as usize];
        let product_code = product_code(&brand.code, product.number);
        // A product is on sale (every size at the same discount) or at full price.
        let discount = weighted(&mut rng, &[(0, 80), (10, 6), (20, 7), (30, 5), (50, 2)]);
        let price = i64::from(product.rrp) * (100 - discount) / 100 / 5 * 5;
        for (k, size_name) in SIZES
            .iter()
            .enumerate()
            .take(usize::from(product.variant_count))
        {
            let id = world.ids.next();
            let mut r = t.record(id);
            r.cells[fk_product] = product.id.cell();
            r.cells[code] = format!("{product_code}-{size_name}").into();
            r.cells[barcode] = barcodes.next(product.brand as usize).into();
            r.cells[colour] = COLOURS[usize::from(product.colour)].into();
            r.cells[sequence] = Cell::Integer(k as i64 + 1);
            r.cells[size] = (*size_name).into();
            r.cells[detail_rrp] = money(i64::from(product.rrp));
            r.cells[detail_price] = money(price);
            r.cells[import_file] = id_or_null(brand.product_file);
            r.cells[vatable] = Cell::Boolean(product.vatable);
            r.cells[rrp] = money(i64::from(product.rrp));
            out.push(&t, r);
            world.variants.push(Variant {
                id,
                product: p as u32,
                price: price as u32,
            });
        }
    }
}

/// One stock record per variant, in the warehouse of its brand's company.
pub(crate) fn stock(world: &mut World, out: &mut Emitter, open: &[i64]) {
    let mut rng = world.rng(Stream::Stock);
    let t = Table::new("stock");
    let [
        fk_warehouse,
        fk_variant,
        in_stock,
        demand,
        supply,
        last_update,
        available,
    ] = t.cells([
        "fk_warehouse",
        "fk_variant",
        "inStock",
        "demand",
        "supply",
        "lastUpdate",
        "available",
    ]);
    for v in 0..world.variants.len() {
        let variant = &world.variants[v];
        let brand = &world.brands[world.products[variant.product as usize].brand as usize];
        let warehouse = world.companies[brand.company]
            .warehouse
            .expect("warehouses come before stock");
        let id = world.ids.next();
        let mut r = t.record(id);
        r.cells[fk_warehouse] = warehouse.cell();
        r.cells[fk_variant] = variant.id.cell();
        r.cells[in_stock] = Cell::Integer(if percent(&mut rng, 8) {
            0
        } else {
            between(&mut rng, 1, 200)
        });
        // The draw is kept so that the other values stay as they were.
        let _ = between(&mut rng, 0, 20);
        let open = open.get(v).copied().unwrap_or(0);
        r.cells[demand] = Cell::Integer(open);
        if let Cell::Integer(on_hand) = r.cells[in_stock] {
            r.cells[available] = Cell::Integer((on_hand - open).max(0));
        }
        r.cells[supply] = Cell::Integer(if percent(&mut rng, 60) {
            0
        } else {
            between(&mut rng, 1, 50)
        });
        r.cells[last_update] = time::timestamp(time::moment(&mut rng, START, END)).into();
        out.push(&t, r);
    }
}

/// A quarter of the variants get one price record each, for a host selling the brand (the
/// host of one of its price files), in the currency of one of that host's stores selling the
/// brand (one in five in any currency, `""`). Most are dated in the demo world, half with an
/// end; one in five around the load moment (`World::now`): running since up to ten days, some
/// ending within the next half hour, or starting later, some within the next half hour, so
/// that a demo shows prices, and offers, changing.
pub(crate) fn prices(world: &mut World, out: &mut Emitter) {
    let mut rng = world.rng(Stream::Prices);
    let t = Table::new("price");
    let [
        fk_variant,
        fk_host,
        fk_file,
        price,
        rrp,
        currency,
        start,
        end,
    ] = t.cells([
        "fk_variant",
        "fk_host",
        "fk_file",
        "price",
        "rrp",
        "currency",
        "startDate",
        "endDate",
    ]);
    // The currencies each (brand, host) sells in: those of the host's stores with the brand.
    let mut currencies: HashMap<(usize, usize), Vec<&'static str>> = HashMap::new();
    for brand_store in &world.brand_stores {
        let store = &world.stores[brand_store.store];
        let sold = currencies
            .entry((brand_store.brand, store.host))
            .or_default();
        if !sold.contains(&store.currency) {
            sold.push(store.currency);
        }
    }
    let now = world.now;
    let count = world.sizes.variants / 4;
    for i in 0..count {
        // One variant out of each block of four.
        let v = (i * 4 + below(&mut rng, 4)).min(world.variants.len() - 1);
        let variant = &world.variants[v];
        let product = &world.products[variant.product as usize];
        let brand = &world.brands[product.brand as usize];
        let (file, host) = *pick(&mut rng, &brand.price_files);
        let full = i64::from(product.rrp);
        let off = *pick(&mut rng, &[10, 15, 20, 25, 30, 40, 50]);
        let id = world.ids.next();
        let mut r = t.record(id);
        r.cells[fk_variant] = variant.id.cell();
        r.cells[fk_host] = world.hosts[host].id.cell();
        r.cells[fk_file] = file.cell();
        r.cells[price] = money(full * (100 - off) / 100 / 5 * 5);
        r.cells[rrp] = money(full);
        let sold = currencies
            .get(&(product.brand as usize, host))
            .map_or(&[][..], Vec::as_slice);
        if !sold.is_empty() && !percent(&mut rng, 20) {
            r.cells[currency] = (*pick(&mut rng, sold)).into();
        }
        let (from, until) = if percent(&mut rng, 80) {
            let from = time::moment(&mut rng, START + 60 * DAY, END - 70 * DAY);
            let until = percent(&mut rng, 50).then(|| from + between(&mut rng, 7, 60) * DAY);
            (from, until)
        } else if percent(&mut rng, 50) {
            // Running now: ending within the half hour, within days, or not at all.
            let from = now - between(&mut rng, HOUR, 10 * DAY);
            let until = match below(&mut rng, 3) {
                0 => Some(now + between(&mut rng, MINUTE, 30 * MINUTE)),
                1 => Some(now + between(&mut rng, HOUR, 5 * DAY)),
                _ => None,
            };
            (from, until)
        } else {
            // Starting later: within the half hour, or within days.
            let from = if percent(&mut rng, 50) {
                now + between(&mut rng, MINUTE, 30 * MINUTE)
            } else {
                now + between(&mut rng, HOUR, 5 * DAY)
            };
            let until = percent(&mut rng, 50).then(|| from + between(&mut rng, 1, 7) * DAY);
            (from, until)
        };
        r.cells[start] = time::timestamp(from).into();
        if let Some(until) = until {
            r.cells[end] = time::timestamp(until).into();
        }
        out.push(&t, r);
    }
}

/// One or two images per product; some show one variant.
pub(crate) fn images(world: &mut World, out: &mut Emitter) {
    let mut rng = world.rng(Stream::Images);
    let t = Table::new("image");
    let [fk_product, fk_variant, fk_file, url, position] =
        t.cells(["fk_product", "fk_variant", "fk_file", "url", "position"]);
    for p in 0..world.products.len() {
        let product = &world.products[p];
        let brand = &world.brands[product.brand as usize];
        let code = product_code(&brand.code, product.number);
        let count = if percent(&mut rng, 50) { 2 } else { 1 };
        for n in 1..=count {
            let variant = percent(&mut rng, 15).then(|| {
                let k = below(&mut rng, usize::from(product.variant_count));
                world.variants[product.first_variant as usize + k].id
            });
            let id = world.ids.next();
            let mut r = t.record(id);
            r.cells[fk_product] = product.id.cell();
            r.cells[fk_variant] = id_or_null(variant);
            r.cells[fk_file] = id_or_null(brand.image_file);
            r.cells[url] =
                format!("https://img.brandhub.example/{}/{code}-{n}.jpg", brand.code).into();
            r.cells[position] = Cell::Integer(n);
            out.push(&t, r);
        }
    }
}
