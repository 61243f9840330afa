//! Whole-generation checks: determinism, referential integrity, value shapes and the
//! properties the docs and the tests of other crates rely on.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;
use std::time::Instant;

use proptest::prelude::*;

use brandhub_catalog::{Cell, FieldType, Layout, Record, catalog, record::stored_fields};
use brandhub_demo::{
    Chunk, DemoOptions, DemoSummary, MAX_CHUNK_RECORDS, generate, generate_all, is_valid_ean13,
};

const ORDER: [&str; 16] = [
    "company",
    "brand",
    "warehouse",
    "host",
    "store",
    "brandStore",
    "user",
    "file",
    "product",
    "variant",
    "stock",
    "order",
    "orderItem",
    "price",
    "image",
    "webhook",
];

static DEFAULT: LazyLock<(Vec<Chunk>, DemoSummary)> =
    LazyLock::new(|| generate_all(&DemoOptions::default()));

fn records<'a>(chunks: &'a [Chunk], name: &str) -> impl Iterator<Item = &'a Record> + use<'a> {
    let name = name.to_string();
    chunks
        .iter()
        .filter(move |c| c.resource.name == name)
        .flat_map(|c| c.records.iter())
}

fn layout(name: &str) -> Layout {
    Layout::of(catalog().resource(name).unwrap())
}

fn text<'a>(record: &'a Record, layout: &Layout, path: &str) -> &'a str {
    record.cells[layout.cell(path)]
        .as_text()
        .unwrap_or_else(|| panic!("{path} is not text"))
}

fn number(record: &Record, layout: &Layout, path: &str) -> f64 {
    match record.cells[layout.cell(path)] {
        Cell::Number(n) => n,
        ref other => panic!("{path} is {other:?}"),
    }
}

fn is_id(text: &str) -> bool {
    text.len() == 32
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b))
}

fn is_timestamp(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 19
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            _ => c.is_ascii_digit(),
        })
}

#[test]
fn the_same_options_give_the_same_data_and_another_seed_other_ids() {
    let (first, first_summary) = generate_all(&DemoOptions::default());
    let (again, again_summary) = &*DEFAULT;
    assert_eq!(first.len(), again.len());
    for (a, b) in first.iter().zip(again) {
        assert_eq!(a.resource.name, b.resource.name);
        assert_eq!(a.records, b.records);
    }
    assert_eq!(&first_summary, again_summary);

    let other = generate_all(&DemoOptions {
        seed: 7,
        ..DemoOptions::default()
    });
    let ids: HashSet<&str> = first
        .iter()
        .flat_map(|c| &c.records)
        .map(Record::id)
        .collect();
    let other_ids: Vec<&str> = other
        .0
        .iter()
        .flat_map(|c| &c.records)
        .map(Record::id)
        .collect();
    assert!(other_ids.iter().all(|id| !ids.contains(id)));
    assert_ne!(
        first_summary.credentials[0].secret,
        other.1.credentials[0].secret
    );
}

/// Checks chunk sizes, that a resource's chunks are consecutive, and that every reference
/// points at a record of the right resource in an earlier chunk; returns the resource order.
fn check_references(chunks: &[Chunk]) -> Vec<&'static str> {
    let mut seen: HashMap<&str, HashSet<&str>> = HashMap::new();
    let mut resource_order: Vec<&'static str> = Vec::new();
    for chunk in chunks {
        let resource = chunk.resource;
        assert!(!chunk.records.is_empty() && chunk.records.len() <= MAX_CHUNK_RECORDS);
        if resource_order.last() != Some(&resource.name) {
            assert!(
                !resource_order.contains(&resource.name),
                "{} resumed",
                resource.name
            );
            resource_order.push(resource.name);
        }
        let fields = stored_fields(resource);
        let companies_list =
            (resource.name == "user").then(|| layout("user").list("detail.companies"));
        for record in &chunk.records {
            for (field, cell) in fields.iter().zip(&record.cells) {
                // Foreign keys, and the plain id fields that name a file or a host.
                let target = match (field.relation, field.path.as_str()) {
                    (Some(relation), _) => {
                        catalog().target(resource.relation(relation).unwrap()).name
                    }
                    (None, "detail.importFile") => "file",
                    (None, "detail.host") => "host",
                    _ => continue,
                };
                match cell {
                    Cell::Null => {
                        assert!(!field.required, "{}.{} is null", resource.name, field.path)
                    }
                    Cell::Text(id) => assert!(
                        seen.get(target)
                            .is_some_and(|ids| ids.contains(id.as_str())),
                        "{}.{} = {id} is not an earlier {target}",
                        resource.name,
                        field.path
                    ),
                    other => panic!("{}.{} holds {other:?}", resource.name, field.path),
                }
            }
            if let Some(list) = companies_list {
                for id in &record.lists[list] {
                    assert!(seen["company"].contains(id.as_str()));
                }
            }
        }
        let ids = seen.entry(resource.name).or_default();
        for record in &chunk.records {
            ids.insert(record.id());
        }
    }
    resource_order
}

#[test]
fn chunks_come_in_foreign_key_order_and_every_reference_points_back() {
    let (chunks, summary) = &*DEFAULT;
    let resource_order = check_references(chunks);
    assert_eq!(resource_order, ORDER);
    let counted: Vec<&str> = summary.counts.iter().map(|(name, _)| *name).collect();
    assert_eq!(counted, ORDER);
    for (name, count) in &summary.counts {
        assert!(*count > 0, "no {name}");
        assert_eq!(records(chunks, name).count() as u64, *count, "{name}");
    }
    assert!(!chunks.iter().any(|c| c.resource.name == "apiKey"));
    // The demo's webhooks never send anything until someone turns one on.
    let hook = catalog().resource("webhook").unwrap();
    let active = Layout::of(hook).cell("active");
    assert!(records(chunks, "webhook").all(|r| r.cells[active] == Cell::Boolean(false)));
    // The sponsors are a chunk of their own, before the companies they sponsor.
    assert_eq!(chunks[0].records.len(), 2);
}

#[test]
fn every_value_has_its_field_type_and_ids_are_unique_and_increasing() {
    let (chunks, _) = &*DEFAULT;
    let mut all_ids = HashSet::new();
    let mut previous = String::new();
    for chunk in chunks {
        let fields = stored_fields(chunk.resource);
        for record in &chunk.records {
            assert_eq!(record.cells.len(), fields.len());
            let id = record.id();
            assert!(is_id(id), "{id}");
            assert!(all_ids.insert(id.to_string()), "duplicate id {id}");
            assert!(id > previous.as_str(), "ids do not increase at {id}");
            previous = id.to_string();
            for (field, cell) in fields.iter().zip(&record.cells) {
                let where_ = format!("{}.{} = {cell:?}", chunk.resource.name, field.path);
                let ok = match (field.ty, cell) {
                    (_, Cell::Null) => !field.required && field.ty != FieldType::Text,
                    (FieldType::Id, Cell::Text(t)) => is_id(t),
                    (FieldType::Text, Cell::Text(_)) => true,
                    (FieldType::Integer, Cell::Integer(_)) => true,
                    (FieldType::Number, Cell::Number(n)) => n.is_finite(),
                    (FieldType::Boolean, Cell::Boolean(_)) => true,
                    (FieldType::Timestamp, Cell::Text(t)) => {
                        is_timestamp(t)
                            && t.as_str() >= "2025-06-01T00:00:00"
                            && t.as_str() < "2026-11-01T00:00:00"
                    }
                    (FieldType::PreciseTimestamp, Cell::Text(t)) => {
                        t == "0000-00-00T00:00:00.000Z"
                            || (t.len() == 24
                                && is_timestamp(&t[..19])
                                && t.ends_with('Z')
                                && t.as_str() >= "2025-06-01"
                                && t.as_str() < "2026-11-01")
                    }
                    _ => false,
                };
                assert!(ok, "{where_}");
            }
        }
    }
}

#[test]
fn variants_have_unique_valid_barcodes_and_match_the_scale() {
    let (chunks, _) = &*DEFAULT;
    let l = layout("variant");
    let mut barcodes = HashSet::new();
    for variant in records(chunks, "variant") {
        let code = text(variant, &l, "barcode");
        assert!(is_valid_ean13(code), "{code}");
        assert!(code.starts_with("5010"), "{code}");
        assert!(barcodes.insert(code.to_string()), "duplicate {code}");
        assert!(number(variant, &l, "detail.price") <= number(variant, &l, "rrp"));
    }
    assert_eq!(barcodes.len() as u64, DemoOptions::default().scale);
    assert_eq!(records(chunks, "stock").count(), barcodes.len());
}

#[test]
fn text_carries_non_ascii_in_titles_and_names() {
    let (chunks, summary) = &*DEFAULT;
    let product = layout("product");
    let titles: Vec<&str> = records(chunks, "product")
        .map(|p| text(p, &product, "title"))
        .collect();
    assert!(titles.iter().any(|t| !t.is_ascii()));
    assert!(titles.contains(&"Crème Linen Shirt"));
    let order = layout("order");
    assert!(records(chunks, "order").any(|o| !text(o, &order, "shipAddress.surname").is_ascii()));
    let company = layout("company");
    assert!(records(chunks, "company").any(|c| text(c, &company, "name") == "Ärmel & Söhne GmbH"));
    assert!(summary.credentials.iter().any(|c| !c.name.is_ascii()));
}

#[test]
fn orders_have_items_statuses_and_consistent_money() {
    let (chunks, _) = &*DEFAULT;
    let order = layout("order");
    let item = layout("orderItem");
    let mut lines: HashMap<&str, Vec<&Record>> = HashMap::new();
    for record in records(chunks, "orderItem") {
        lines
            .entry(text(record, &item, "fk_order"))
            .or_default()
            .push(record);
    }
    let mut statuses = HashSet::new();
    let orders: Vec<&Record> = records(chunks, "order").collect();
    assert_eq!(orders.len() as u64, DemoOptions::default().scale / 5);
    for o in &orders {
        let status = text(o, &order, "status");
        statuses.insert(status);
        let items = lines
            .get(o.id())
            .unwrap_or_else(|| panic!("order {} has no items", o.id()));
        assert!((1..=4).contains(&items.len()));
        let mut gross = number(o, &order, "detail.shippingGross");
        let mut vat = number(o, &order, "detail.shippingTax");
        for line in items {
            let qty = match line.cells[item.cell("orderQty")] {
                Cell::Integer(q) => q,
                _ => panic!("orderQty"),
            };
            let line_gross = number(line, &item, "lineGross");
            assert!((number(line, &item, "itemPrice") * qty as f64 - line_gross).abs() < 0.005);
            assert!(
                (number(line, &item, "lineNet") + number(line, &item, "lineTax") - line_gross)
                    .abs()
                    < 0.005
            );
            gross += line_gross;
            vat += number(line, &item, "lineTax");
            let expected = match status {
                "new" | "accepted" => &["ACC"][..],
                "partDispatched" => &["ACC", "DSP"][..],
                "dispatched" => &["DSP"][..],
                "cancelled" => &["CAN"][..],
                "returned" => &["RET"][..],
                other => panic!("unknown status {other}"),
            };
            assert!(expected.contains(&text(line, &item, "status")));
            assert_eq!(
                line.cells[item.cell("returnDate")] != Cell::Null,
                status == "returned"
            );
        }
        assert!((number(o, &order, "detail.gross") - gross).abs() < 0.005);
        assert!((number(o, &order, "detail.vat") - vat).abs() < 0.005);
        let dispatched = matches!(status, "dispatched" | "partDispatched" | "returned");
        assert_eq!(o.cells[order.cell("shipDate")] != Cell::Null, dispatched);
        assert_eq!(!text(o, &order, "trackingRef").is_empty(), dispatched);
    }
    assert!(statuses.len() >= 4, "{statuses:?}");
}

#[test]
fn prices_files_and_images_vary_as_documented() {
    let (chunks, _) = &*DEFAULT;
    let price = layout("price");
    let ends: Vec<bool> = records(chunks, "price")
        .map(|p| p.cells[price.cell("endDate")] == Cell::Null)
        .collect();
    assert_eq!(ends.len() as u64, DemoOptions::default().scale / 4);
    assert!(ends.iter().any(|open| *open) && ends.iter().any(|open| !*open));

    let file = layout("file");
    let files: Vec<&Record> = records(chunks, "file").collect();
    assert!(
        files
            .iter()
            .any(|f| !text(f, &file, "detail.error").is_empty())
    );
    assert!(files.iter().any(|f| text(f, &file, "status") == "failed"));
    assert!(
        files
            .iter()
            .any(|f| text(f, &file, "detail.error").starts_with("Warning: "))
    );
    for f in &files {
        let is_price = text(f, &file, "fileType") == "price";
        assert_eq!(f.cells[file.cell("detail.host")] != Cell::Null, is_price);
    }

    let image = layout("image");
    let positions: HashSet<i64> = records(chunks, "image")
        .map(|i| match i.cells[image.cell("position")] {
            Cell::Integer(p) => p,
            _ => panic!("position"),
        })
        .collect();
    assert_eq!(positions, HashSet::from([1, 2]));
}

#[test]
fn credentials_cover_every_user_type() {
    let (chunks, summary) = &*DEFAULT;
    let user = layout("user");
    let users: Vec<&Record> = records(chunks, "user").collect();
    assert_eq!(summary.credentials.len(), users.len());
    assert_eq!(summary.credentials[0].email, "admin@demo.brandhub.test");
    assert_eq!(summary.credentials[0].name, "Demo Admin");
    for (credential, record) in summary.credentials.iter().zip(&users) {
        assert_eq!(credential.user_id, record.id());
        assert_eq!(credential.email, text(record, &user, "email"));
        assert_eq!(credential.user_type.as_str(), text(record, &user, "type"));
        assert!(is_id(&credential.key_id));
        assert_eq!(credential.key_name, "demo key");
        assert_eq!(credential.secret.len(), 34);
        assert!(credential.secret.starts_with("bhk_"));
        assert!(
            credential.secret[4..]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric())
        );
    }
    for ty in brandhub_catalog::UserType::ALL {
        assert!(summary.credentials.iter().any(|c| c.user_type == ty));
    }
}

#[test]
#[ignore = "a million variants: run with --release -- --ignored"]
fn a_million_variants_stream_with_even_barcode_prefix_groups() {
    let options = DemoOptions {
        scale: 1_000_000,
        ..DemoOptions::default()
    };
    let barcode = layout("variant").cell("barcode");
    let mut groups: HashMap<String, u64> = HashMap::new();
    let mut largest_chunk = 0;
    let started = Instant::now();
    let summary = generate(&options, &mut |chunk| {
        largest_chunk = largest_chunk.max(chunk.records.len());
        if chunk.resource.name == "variant" {
            for record in &chunk.records {
                let code = record.cells[barcode].as_text().unwrap();
                *groups.entry(code[..6].to_string()).or_default() += 1;
            }
        }
    });
    let elapsed = started.elapsed();
    let total: u64 = summary.counts.iter().map(|(_, n)| n).sum();
    eprintln!(
        "generated {total} records in {elapsed:.2?}: {:?}",
        summary.counts
    );
    assert!(largest_chunk <= MAX_CHUNK_RECORDS);
    assert_eq!(groups.len(), 100);
    for (prefix, count) in &groups {
        assert!((9_000..=11_000).contains(count), "{prefix}: {count}");
    }
    assert_eq!(groups.values().sum::<u64>(), 1_000_000);
}

#[test]
fn edge_scales_stay_consistent() {
    // Nothing, a lone variant, a short last product, and an odd number of brands (five).
    for scale in [0, 1, 4, 5, 6, 25_003] {
        let (chunks, summary) = generate_all(&DemoOptions {
            scale,
            seed: 1,
            ..DemoOptions::default()
        });
        check_references(&chunks);
        assert_eq!(records(&chunks, "variant").count() as u64, scale);
        assert_eq!(records(&chunks, "stock").count() as u64, scale);
        assert_eq!(summary.credentials.len(), 6);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Small and odd scales (no orders below five variants, a last product with fewer than five
    /// variants, brands without products) still give consistent data.
    #[test]
    fn any_small_scale_and_seed_is_consistent(scale in 0u64..3_000, seed in any::<u64>()) {
        let options = DemoOptions { scale, seed, ..DemoOptions::default() };
        let (chunks, summary) = generate_all(&options);
        check_references(&chunks);
        prop_assert_eq!(records(&chunks, "variant").count() as u64, scale);
        prop_assert_eq!(records(&chunks, "order").count() as u64, scale / 5);
        prop_assert_eq!(records(&chunks, "price").count() as u64, scale / 4);
        let l = layout("variant");
        let barcodes: HashSet<&str> = records(&chunks, "variant").map(|v| text(v, &l, "barcode")).collect();
        prop_assert_eq!(barcodes.len() as u64, scale);
        prop_assert_eq!(summary.credentials.len(), 6);
        prop_assert_eq!(generate_all(&options).0.len(), chunks.len());
    }
}

/// docs/API.md, "Orders: intake, lifecycle and stock": a variant's stock demand is the open quantity of the orders (accepted lines
/// of new, accepted and part-dispatched orders, less what shipped), and `available` is
/// max(0, inStock - demand), as the database computes it.
#[test]
fn stock_demand_is_the_open_quantity_of_the_orders() {
    let (chunks, _) = &*DEFAULT;
    let (order, item, stock) = (
        Layout::of(catalog().resource("order").unwrap()),
        Layout::of(catalog().resource("orderItem").unwrap()),
        Layout::of(catalog().resource("stock").unwrap()),
    );
    let int = |r: &Record, l: &Layout, p: &str| match r.cells[l.cell(p)] {
        Cell::Integer(n) => n,
        _ => 0,
    };
    let open_orders: HashSet<&str> = records(chunks, "order")
        .filter(|o| {
            ["new", "accepted", "partDispatched"]
                .contains(&o.cells[order.cell("status")].as_text().unwrap_or_default())
        })
        .map(|o| o.id())
        .collect();
    let mut open: HashMap<String, i64> = HashMap::new();
    for line in records(chunks, "orderItem") {
        let of = line.cells[item.cell("fk_order")]
            .as_text()
            .unwrap_or_default();
        if open_orders.contains(of) && line.cells[item.cell("status")].as_text() == Some("ACC") {
            let variant = line.cells[item.cell("fk_variant")]
                .as_text()
                .unwrap()
                .to_string();
            *open.entry(variant).or_default() +=
                int(line, &item, "orderQty") - int(line, &item, "shipQty");
        }
    }
    assert!(open.values().any(|q| *q > 0), "the demo has open orders");
    for s in records(chunks, "stock") {
        let variant = s.cells[stock.cell("fk_variant")].as_text().unwrap();
        let demand = int(s, &stock, "demand");
        assert_eq!(demand, open.get(variant).copied().unwrap_or(0), "{variant}");
        assert_eq!(
            int(s, &stock, "available"),
            (int(s, &stock, "inStock") - demand).max(0)
        );
    }
}

/// docs/API.md, "Offers": the brand stores' rules are within what a write of them may hold
/// (each field's domain and the bounds across fields, as the API judges a write), with every
/// kind of stock offered and small adjustments; prices name currencies, and some are dated
/// around the load moment, which moves them and nothing else.
#[test]
fn brand_store_rules_and_dated_prices_are_sensible() {
    let (chunks, _) = &*DEFAULT;
    let brand_store = catalog().resource("brandStore").unwrap();
    let l = layout("brandStore");
    let mut kinds = HashMap::new();
    let mut shares = HashSet::new();
    let (mut buffered, mut capped) = (0, 0);
    for record in records(chunks, "brandStore") {
        for (field, cell) in stored_fields(brand_store).iter().zip(&record.cells) {
            assert_eq!(field.value_problem(cell), None, "{} = {cell:?}", field.path);
        }
        for bound in &brand_store.writes.bounds {
            assert_eq!(bound.problem(brand_store, record), None);
        }
        let kind = text(record, &l, "detail.stockType");
        *kinds.entry(kind.to_string()).or_insert(0) += 1;
        let integer = |path: &str| match record.cells[l.cell(path)] {
            Cell::Integer(n) => Some(n),
            Cell::Null => None,
            ref other => panic!("{path} is {other:?}"),
        };
        match kind {
            "live" => {
                shares.insert(integer("detail.stockPercent"));
                buffered += usize::from(integer("detail.stockBuffer").is_some());
                capped += usize::from(integer("detail.stockMax").is_some());
                assert_eq!(integer("detail.fixedQuantity"), None);
            }
            "fixed" => assert!(integer("detail.fixedQuantity").is_some_and(|q| q > 0)),
            _ => assert_eq!(kind, "none"),
        }
        let value = record.cells[l.cell("detail.adjustValue")].clone();
        match (text(record, &l, "detail.adjustType"), value) {
            ("percent", Cell::Number(v)) => assert!((-10.0..=15.0).contains(&v) && v != 0.0),
            ("fixed", Cell::Number(v)) => assert!((1.0..=5.0).contains(&v.abs()), "{v}"),
            ("", Cell::Null) => {}
            other => panic!("{other:?}"),
        }
    }
    assert!(
        kinds["live"] > kinds["fixed"] && kinds["fixed"] >= 2 && kinds["none"] >= 2,
        "{kinds:?}"
    );
    assert!(
        shares.len() >= 2 && buffered > 0 && capped > 0,
        "{shares:?}"
    );

    let now = DemoOptions::default().now;
    let p = layout("price");
    let stamp = |secs: i64| {
        chrono::DateTime::from_timestamp(secs, 0)
            .unwrap()
            .format("%Y-%m-%dT%H:%M:%S")
            .to_string()
    };
    let (soon, in_half_an_hour) = (stamp(now), stamp(now + 30 * 60));
    let dates = |record: &Record| {
        [
            text(record, &p, "startDate").to_string(),
            record.cells[p.cell("endDate")]
                .as_text()
                .unwrap_or_default()
                .to_string(),
        ]
    };
    let prices: Vec<&Record> = records(chunks, "price").collect();
    let starting = prices
        .iter()
        .filter(|r| dates(r)[0] > soon && dates(r)[0] <= in_half_an_hour)
        .count();
    let ending = prices
        .iter()
        .filter(|r| dates(r)[1] > soon && dates(r)[1] <= in_half_an_hour)
        .count();
    assert!(starting > 0 && ending > 0, "{starting} {ending}");
    let any_currency = prices
        .iter()
        .filter(|r| text(r, &p, "currency").is_empty())
        .count();
    assert!(
        any_currency > 0 && any_currency < prices.len() / 3,
        "{any_currency}"
    );

    // Loaded an hour later: the prices around the load moment move by the hour, and nothing
    // else changes.
    let later = generate_all(&DemoOptions {
        now: now + 3_600,
        ..DemoOptions::default()
    });
    let moved: Vec<&Record> = records(&later.0, "price").collect();
    let mut shifted = 0;
    for (before, after) in prices.iter().zip(&moved) {
        let (a, b) = (dates(before), dates(after));
        if a == b {
            continue;
        }
        shifted += 1;
        assert!(a[0] > stamp(now - 11 * 86_400), "{a:?}");
        assert_eq!(stamp_of(&b[0]) - stamp_of(&a[0]), 3_600);
    }
    assert!(shifted > 0);
    for (a, b) in chunks.iter().zip(&later.0) {
        if a.resource.name != "price" {
            assert_eq!(a.records, b.records, "{}", a.resource.name);
        }
    }
}

/// Seconds since the epoch of a record timestamp.
fn stamp_of(text: &str) -> i64 {
    chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S")
        .unwrap()
        .and_utc()
        .timestamp()
}
