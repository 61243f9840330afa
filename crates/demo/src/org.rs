//! The organisations and people: companies, brands, warehouses, hosts, stores, the brand–store
//! links and the demo users with their credentials.

use brandhub_catalog::{Cell, UserType};

use crate::emit::{Emitter, Table, id_or_null, money};
use crate::names::{self, Country, slug};
use crate::random::{alphanumerics, between, digits, distinct, letters, percent, pick, weighted};
use crate::time::{self, DAY, START};
use crate::{
    Brand, BrandStore, Company, DemoCredential, DemoRng, Host, Store, Stream, Uploaders, World,
};

/// Distinct "first second" name pairs in a seeded order; past the supply, a number is added.
fn name_pairs(rng: &mut DemoRng, first: &[&str], second: &[&str], count: usize) -> Vec<String> {
    let combos = first.len() * second.len();
    let order = distinct(rng, combos, combos);
    (0..count)
        .map(|i| {
            let k = order[i % combos];
            let base = format!("{} {}", first[k / second.len()], second[k % second.len()]);
            if i < combos {
                base
            } else {
                format!("{base} {}", i / combos + 1)
            }
        })
        .collect()
}

/// A VAT number in the shape the country uses.
fn vat_number(rng: &mut DemoRng, country: &Country) -> String {
    let code = country.code;
    match code {
        "FR" => format!("FR{}{}", digits(rng, 2), digits(rng, 9)),
        "SE" => format!("SE{}01", digits(rng, 10)),
        "NL" => format!("NL{}B01", digits(rng, 9)),
        "IT" => format!("IT{}", digits(rng, 11)),
        "IE" => format!("IE{}{}", digits(rng, 7), letters(rng, 1)),
        _ => format!("{code}{}", digits(rng, 9)),
    }
}

/// The two sponsors (a chunk of their own, since companies refer to them), then the
/// brand-owning companies.
pub(crate) fn companies(world: &mut World, out: &mut Emitter) {
    let mut rng = world.rng(Stream::Companies);
    let t = Table::new("company");
    let [name, code, fk_sponsor, country, vat, email, created] = t.cells([
        "name",
        "code",
        "fk_sponsor",
        "detail.country",
        "detail.vatNumber",
        "detail.contactEmail",
        "createdDate",
    ]);
    let mut number = 0;
    for (sponsor_name, country_code) in names::SPONSORS {
        number += 1;
        let id = world.id();
        let home = names::country(country_code);
        let mut r = t.record(id);
        r.cells[name] = (*sponsor_name).into();
        r.cells[code] = format!("CMP{number:04}").into();
        r.cells[country] = home.name.into();
        r.cells[vat] = vat_number(&mut rng, home).into();
        r.cells[email] = format!("partners@{}.example", slug(sponsor_name, "-")).into();
        r.cells[created] = time::timestamp(time::moment(&mut rng, START, START + 10 * DAY)).into();
        out.push(&t, r);
        world.sponsors.push(id);
    }
    out.flush();

    let count = world.sizes.companies;
    let generated = name_pairs(
        &mut rng,
        names::COMPANY_STEMS,
        names::COMPANY_KINDS,
        count.saturating_sub(names::FIXED_COMPANIES.len()),
    );
    for i in 0..count {
        number += 1;
        let (short_name, home) = match names::FIXED_COMPANIES.get(i) {
            Some((fixed, country_code)) => {
                let home = names::country(country_code);
                let short = fixed.trim_end_matches(home.company_suffix).trim_end();
                (short.to_string(), home)
            }
            None => {
                let code: &&str = pick(&mut rng, names::COMPANY_COUNTRIES);
                let home = names::country(code);
                (generated[i - names::FIXED_COMPANIES.len()].clone(), home)
            }
        };
        let sponsor = if i == 0 {
            Some(world.sponsors[0])
        } else if percent(&mut rng, 20) {
            None
        } else {
            Some(*pick(&mut rng, &world.sponsors))
        };
        let id = world.id();
        let mut r = t.record(id);
        r.cells[name] = format!("{short_name} {}", home.company_suffix).into();
        r.cells[code] = format!("CMP{number:04}").into();
        r.cells[fk_sponsor] = id_or_null(sponsor);
        r.cells[country] = home.name.into();
        r.cells[vat] = vat_number(&mut rng, home).into();
        r.cells[email] = format!("hello@{}.example", slug(&short_name, "-")).into();
        r.cells[created] = time::timestamp(time::moment(&mut rng, START, START + 120 * DAY)).into();
        out.push(&t, r);
        world.companies.push(Company {
            id,
            short_name,
            country: home,
            warehouse: None,
        });
    }
}

/// Two brands per company; most describe themselves, some leave `detail` unset.
pub(crate) fn brands(world: &mut World, out: &mut Emitter) {
    let mut rng = world.rng(Stream::Brands);
    let t = Table::new("brand");
    let [fk_company, name, website, description, code] = t.cells([
        "fk_company",
        "name",
        "detail.website",
        "detail.description",
        "code",
    ]);
    let sizes = world.sizes;
    let brand_names = name_pairs(
        &mut rng,
        names::BRAND_FIRST,
        names::BRAND_SECOND,
        sizes.brands,
    );
    for (b, brand_name) in brand_names.into_iter().enumerate() {
        let company = (b / 2).min(sizes.companies - 1);
        let id = world.id();
        let brand_code = format!("BR{:04}", b + 1);
        let mut r = t.record(id);
        r.cells[fk_company] = world.companies[company].id.cell();
        r.cells[name] = brand_name.as_str().into();
        if percent(&mut rng, 85) {
            r.cells[website] = format!("https://www.{}.example", slug(&brand_name, "-")).into();
            r.cells[description] = (*pick(&mut rng, names::BRAND_DESCRIPTIONS)).into();
        }
        r.cells[code] = brand_code.as_str().into();
        out.push(&t, r);
        let products = b * sizes.products / sizes.brands..(b + 1) * sizes.products / sizes.brands;
        let variants =
            (products.start * 5).min(sizes.variants)..(products.end * 5).min(sizes.variants);
        world.brands.push(Brand {
            id,
            company,
            code: brand_code,
            name: brand_name,
            hosts: Vec::new(),
            product_file: None,
            image_file: None,
            price_files: Vec::new(),
            products,
            variants,
        });
    }
}

/// One warehouse per brand-owning company, in the company's country.
pub(crate) fn warehouses(world: &mut World, out: &mut Emitter) {
    let mut rng = world.rng(Stream::Warehouses);
    let t = Table::new("warehouse");
    let [fk_company, code, name, town, country_code, email] = t.cells([
        "fk_company",
        "code",
        "name",
        "detail.town",
        "detail.countryCode",
        "detail.contactEmail",
    ]);
    for c in 0..world.companies.len() {
        let id = world.id();
        let company = &mut world.companies[c];
        let (town_name, ..) = *pick(&mut rng, company.country.towns);
        let mut r = t.record(id);
        r.cells[fk_company] = company.id.cell();
        r.cells[code] = format!("WH{:03}", c + 1).into();
        r.cells[name] = if percent(&mut rng, 50) {
            format!("{town_name} Distribution Centre")
        } else {
            format!("{} Warehouse", company.short_name)
        }
        .into();
        r.cells[town] = town_name.into();
        r.cells[country_code] = company.country.code.into();
        r.cells[email] = format!("warehouse@{}.example", slug(&company.short_name, "-")).into();
        out.push(&t, r);
        company.warehouse = Some(id);
    }
}

/// The six selling channels.
pub(crate) fn hosts(world: &mut World, out: &mut Emitter) {
    let mut rng = world.rng(Stream::Hosts);
    let t = Table::new("host");
    let [name, code, website, country_code, created] = t.cells([
        "name",
        "code",
        "detail.website",
        "detail.countryCode",
        "createdDate",
    ]);
    for (h, (host_name, country, domain)) in names::HOSTS.iter().enumerate() {
        let id = world.id();
        let host_code = format!("HOST{:02}", h + 1);
        let mut r = t.record(id);
        r.cells[name] = (*host_name).into();
        r.cells[code] = host_code.as_str().into();
        r.cells[website] = format!("https://www.{domain}").into();
        r.cells[country_code] = (*country).into();
        r.cells[created] = time::timestamp(time::moment(&mut rng, START, START + 30 * DAY)).into();
        out.push(&t, r);
        world.hosts.push(Host {
            id,
            code: host_code,
        });
    }
}

/// Two to four stores per host: its home market first, then others.
pub(crate) fn stores(world: &mut World, out: &mut Emitter) {
    let mut rng = world.rng(Stream::Stores);
    let t = Table::new("store");
    let [fk_host, name, code, currency, country_code, url, created] = t.cells([
        "fk_host",
        "name",
        "code",
        "currency",
        "detail.countryCode",
        "detail.url",
        "createdDate",
    ]);
    let mut number = 0;
    for (h, (host_name, home, domain)) in names::HOSTS.iter().enumerate() {
        let home_market = names::MARKETS
            .iter()
            .position(|(_, country, _)| country == home)
            .expect("every host's home is a market");
        let others: Vec<usize> = (0..names::MARKETS.len())
            .filter(|m| *m != home_market)
            .collect();
        let extra = between(&mut rng, 1, 3) as usize;
        let mut markets = vec![home_market];
        markets.extend(
            distinct(&mut rng, others.len(), extra)
                .into_iter()
                .map(|i| others[i]),
        );
        for m in markets {
            number += 1;
            let (market_name, market_country, market_currency) = names::MARKETS[m];
            let id = world.id();
            let mut r = t.record(id);
            r.cells[fk_host] = world.hosts[h].id.cell();
            r.cells[name] = format!("{host_name} {market_name}").into();
            r.cells[code] = format!("ST{number:03}").into();
            r.cells[currency] = market_currency.into();
            r.cells[country_code] = market_country.into();
            r.cells[url] = format!(
                "https://www.{domain}/{}/",
                market_country.to_ascii_lowercase()
            )
            .into();
            r.cells[created] =
                time::timestamp(time::moment(&mut rng, START + 30 * DAY, START + 90 * DAY)).into();
            out.push(&t, r);
            world.stores.push(Store {
                id,
                host: h,
                country: names::country(market_country),
                currency: market_currency,
            });
        }
    }
}

/// Each brand in five distinct stores, shipped from its company's warehouse, with the store's
/// rules (docs/API.md, "Offers"): most offer live stock, many of those a share of it (80 or
/// 90%), less a buffer of 1 to 3 units, some capped; some a fixed quantity (made to order), a
/// few none (the fifth store of every other brand); prices adjusted by a few percent (−10 to +15) or a few units (±1 to 5), or not.
pub(crate) fn brand_stores(world: &mut World, out: &mut Emitter) {
    let mut rng = world.rng(Stream::BrandStores);
    let mut rules = world.rng(Stream::Rules);
    let t = Table::new("brandStore");
    let [
        fk_brand,
        fk_store,
        fk_warehouse,
        stock_type,
        stock_percent,
        stock_buffer,
        stock_max,
        fixed_quantity,
        adjust_type,
        adjust_value,
    ] = t.cells([
        "fk_brand",
        "fk_store",
        "fk_warehouse",
        "detail.stockType",
        "detail.stockPercent",
        "detail.stockBuffer",
        "detail.stockMax",
        "detail.fixedQuantity",
        "detail.adjustType",
        "detail.adjustValue",
    ]);
    for b in 0..world.brands.len() {
        for (k, s) in distinct(&mut rng, world.stores.len(), 5)
            .into_iter()
            .enumerate()
        {
            let id = world.id();
            let brand = &mut world.brands[b];
            let store = &world.stores[s];
            let warehouse = world.companies[brand.company]
                .warehouse
                .expect("warehouses come before brand stores");
            let mut r = t.record(id);
            r.cells[fk_brand] = brand.id.cell();
            r.cells[fk_store] = store.id.cell();
            r.cells[fk_warehouse] = warehouse.cell();
            // The kind of stock, the kind of adjustment and its size come from the draws of
            // this stream they always came from, so that the stores chosen after them, and so
            // the demo's orders, stay as they were; the rest from the rules' own stream.
            let drawn = weighted(&mut rng, &[("live", 80), ("fixed", 20)]);
            // Every brand's fifth store offers a fixed quantity or (every other brand) none,
            // so that every kind is in the smallest demo; the others mostly live stock.
            let offered = match (k, b % 2) {
                (4, 0) => "fixed",
                (4, _) => "none",
                _ => drawn,
            };
            r.cells[stock_type] = offered.into();
            match offered {
                "live" => {
                    r.cells[stock_percent] =
                        weighted(&mut rules, &[(None, 40), (Some(80i64), 30), (Some(90), 30)])
                            .into();
                    if percent(&mut rules, 60) {
                        r.cells[stock_buffer] = Cell::Integer(between(&mut rules, 1, 3));
                    }
                    if percent(&mut rules, 25) {
                        r.cells[stock_max] = Cell::Integer(*pick(&mut rules, &[5i64, 10, 20, 50]));
                    }
                }
                "fixed" => r.cells[fixed_quantity] = Cell::Integer(between(&mut rules, 1, 10) * 5),
                _ => {}
            }
            let kind = weighted(&mut rng, &[("percent", 40), ("fixed", 20), ("", 40)]);
            r.cells[adjust_type] = kind.into();
            r.cells[adjust_value] = match kind {
                "percent" => {
                    // 5 to 25 drawn: −10 to +15 in steps of 1.25, never 0.
                    let value = (between(&mut rng, 5, 25) - 5) as f64 * 1.25 - 10.0;
                    Cell::Number(if value == 0.0 { 5.0 } else { value })
                }
                "fixed" => {
                    // 2 to 20 drawn: 1 to 5 units, up or down.
                    let units = (between(&mut rng, 2, 20) - 2) % 9 * 50 + 100;
                    money(if percent(&mut rules, 50) {
                        -units
                    } else {
                        units
                    })
                }
                _ => Cell::Null,
            };
            out.push(&t, r);
            if !brand.hosts.contains(&store.host) {
                brand.hosts.push(store.host);
            }
            world.brand_stores.push(BrandStore {
                id,
                brand: b,
                store: s,
                warehouse,
            });
        }
    }
}

/// One user of every type (two company users), each with a credential for the loader.
pub(crate) fn users(world: &mut World, out: &mut Emitter) -> Vec<DemoCredential> {
    let mut rng = world.rng(Stream::Users);
    let mut secrets = world.rng(Stream::Secrets);
    let t = Table::new("user");
    let [
        name,
        email,
        user_type,
        status,
        created,
        lang,
        fk_sponsor,
        fk_host,
        fk_company,
        fk_warehouse,
    ] = t.cells([
        "name",
        "email",
        "type",
        "status",
        "createdDate",
        "detail.lang",
        "fk_sponsor",
        "fk_host",
        "fk_company",
        "fk_warehouse",
    ]);
    let companies_list = t.list("detail.companies");
    let company_count = world.companies.len();
    let second_extra = 2 % company_count;
    let people: [(UserType, &str, &str, &str); 6] = [
        (UserType::Admin, "admin", "Demo Admin", "en"),
        (UserType::Sponsor, "sponsor", "Oliver Bennett", "en"),
        (UserType::Company, "company", "Zoë Müller", "de"),
        (UserType::Company, "company2", "François Lefèvre", "fr"),
        (UserType::Host, "host", "Camille Dubois", "fr"),
        (UserType::Warehouse, "warehouse", "Jürgen Weiß", "de"),
    ];
    let mut credentials = Vec::new();
    let mut admin = None;
    let mut company_users = Vec::new();
    for (ty, local, person, language) in people {
        let id = world.id();
        let mut r = t.record(id);
        let address = format!("{local}@demo.brandhub.test");
        r.cells[name] = person.into();
        r.cells[email] = address.as_str().into();
        r.cells[user_type] = ty.as_str().into();
        r.cells[status] = "active".into();
        r.cells[created] =
            time::timestamp(time::moment(&mut rng, START + DAY, START + 30 * DAY)).into();
        r.cells[lang] = language.into();
        match (ty, local) {
            (UserType::Admin, _) => admin = Some(id),
            (UserType::Sponsor, _) => r.cells[fk_sponsor] = world.sponsors[0].cell(),
            (UserType::Company, "company") => {
                r.cells[fk_company] = world.companies[0].id.cell();
                company_users.push((id, vec![0]));
            }
            (UserType::Company, _) => {
                r.cells[fk_company] = world.companies[1].id.cell();
                r.lists[companies_list] = vec![world.companies[second_extra].id.text()];
                company_users.push((id, vec![1, second_extra]));
            }
            (UserType::Host, _) => r.cells[fk_host] = world.hosts[0].id.cell(),
            (UserType::Warehouse, _) => {
                let warehouse = world.companies[0]
                    .warehouse
                    .expect("warehouses come before users");
                r.cells[fk_warehouse] = warehouse.cell();
            }
        }
        out.push(&t, r);
        let key_id = world.id();
        credentials.push(DemoCredential {
            user_id: id.text(),
            email: address,
            name: person.to_string(),
            user_type: ty,
            key_id: key_id.text(),
            key_name: "demo key".to_string(),
            secret: format!("bhk_{}", alphanumerics(&mut secrets, 30)),
        });
    }
    world.uploaders = Some(Uploaders {
        admin: admin.expect("the admin is the first user"),
        company_users,
    });
    credentials
}
