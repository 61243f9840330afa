//! The organisations of the marketplace and the links between them: companies, their brands
//! and warehouses, hosts with their stores, and the brand stores that link a brand to a store.

use super::offers::{ADJUST_TYPES, STOCK_TYPES};
use super::{COMPANY, HOST, HOST_CANNOT_SEE_RULES, OWNERS, SPONSOR, WAREHOUSE, WRITE};
use crate::handle::Res;
use crate::model::{
    Anchor::{Companies, Host, Sponsor, Warehouse},
    Domain, Resource, fk, integer, lengths, number, object, text, timestamp,
};

pub(super) fn company() -> Resource {
    Resource::new(
        Res::Company.name(),
        "company",
        "A business on the platform: owns brands and warehouses; a sponsor company sponsors others.",
    )
    .labelled("{name}")
    .field(text("name").indexed())
    .field(text("code").indexed().short())
    .relation_fk(
        fk("fk_sponsor", "company_sponsor").optional().doc("The sponsoring company, or null."),
        "company",
    )
    .field(object(
        "detail",
        vec![
            text("country"),
            text("vatNumber").short(),
            text("contactEmail").max_chars(lengths::EMAIL),
        ],
    ))
    .field(timestamp("createdDate").indexed().required())
    .scope(COMPANY, &[&[("id", Companies)]])
    .writable_by(WRITE, SPONSOR, &[&[("fk_sponsor", Sponsor)]])
    .writable(
        &["name", "code", "fk_sponsor", "detail.country", "detail.vatNumber", "detail.contactEmail"],
        &["name", "code"],
        &["name", "code", "fk_sponsor", "detail.country", "detail.vatNumber", "detail.contactEmail"],
        true,
    )
    .natural_key(&["code"])
}

pub(super) fn brand() -> Resource {
    Resource::new(
        Res::Brand.name(),
        "brand",
        "A brand of a company: owns products and uploads files.",
    )
    .labelled("{name}")
    .relation_fk(fk("fk_company", "brand_company"), "company")
    .field(text("name").indexed())
    .field(
        object(
            "detail",
            vec![
                text("website").max_chars(lengths::URL),
                text("description").long(),
            ],
        )
        .nullable(),
    )
    .field(text("code").indexed().short())
    .has_many("brand_product", "product", "fk_brand")
    .has_many("brand_brandStore", "brandStore", "fk_brand")
    .scope(COMPANY, &[&[("fk_company", Companies)]])
    .writable(
        &[
            "fk_company",
            "name",
            "code",
            "detail.website",
            "detail.description",
        ],
        &["fk_company", "name", "code"],
        &["name", "code", "detail.website", "detail.description"],
        true,
    )
    .natural_key(&["code"])
    .writable_by(WRITE, OWNERS, &[&[("fk_company", Companies)]])
    .scope(
        HOST,
        &[&[("brand_brandStore.brandStore_store.fk_host", Host)]],
    )
    .scope(
        WAREHOUSE,
        &[&[(
            "brand_product.product_variant.variant_stock.fk_warehouse",
            Warehouse,
        )]],
    )
}

pub(super) fn warehouse() -> Resource {
    Resource::new(
        Res::Warehouse.name(),
        "warehouse",
        "A warehouse of a company: holds stock.",
    )
    .labelled("{name}")
    .relation_fk(fk("fk_company", "warehouse_company"), "company")
    .field(text("code").indexed().short())
    .field(text("name").indexed())
    .field(object(
        "detail",
        vec![
            text("town"),
            text("countryCode").short(),
            text("contactEmail").max_chars(lengths::EMAIL),
        ],
    ))
    .has_many("warehouse_brandStore", "brandStore", "fk_warehouse")
    .scope(COMPANY, &[&[("fk_company", Companies)]])
    .writable(
        &[
            "fk_company",
            "code",
            "name",
            "detail.town",
            "detail.countryCode",
            "detail.contactEmail",
        ],
        &["fk_company", "code", "name"],
        &[
            "code",
            "name",
            "detail.town",
            "detail.countryCode",
            "detail.contactEmail",
        ],
        true,
    )
    .natural_key(&["code"])
    .writable_by(WRITE, OWNERS, &[&[("fk_company", Companies)]])
    .scope(WAREHOUSE, &[&[("id", Warehouse)]])
}

pub(super) fn host() -> Resource {
    Resource::new(
        Res::Host.name(),
        "host",
        "A selling channel: a retailer or marketplace with stores.",
    )
    .labelled("{name}")
    .field(text("name").indexed())
    .field(text("code").indexed().short())
    .field(object(
        "detail",
        vec![
            text("website").max_chars(lengths::URL),
            text("countryCode").short(),
        ],
    ))
    .field(timestamp("createdDate").indexed().required())
    .has_many("host_store", "store", "fk_host")
    .writable(
        &["name", "code", "detail.website", "detail.countryCode"],
        &["name", "code"],
        &["name", "code", "detail.website", "detail.countryCode"],
        true,
    )
    .natural_key(&["code"])
    .scope(
        COMPANY,
        &[&[(
            "host_store.store_brandStore.brandStore_brand.fk_company",
            Companies,
        )]],
    )
    .scope(HOST, &[&[("id", Host)]])
}

pub(super) fn store() -> Resource {
    Resource::new(
        Res::Store.name(),
        "store",
        "A storefront of a host, selling in one currency.",
    )
    .labelled("{name} · {store_host}")
    .relation_fk(fk("fk_host", "store_host"), "host")
    .field(text("name").indexed())
    .field(text("code").indexed().short())
    .field(text("currency").short())
    .field(object(
        "detail",
        vec![
            text("countryCode").short(),
            text("url").max_chars(lengths::URL),
        ],
    ))
    .field(timestamp("createdDate").indexed().required())
    .has_many("store_brandStore", "brandStore", "fk_store")
    .writable(
        &[
            "fk_host",
            "name",
            "code",
            "currency",
            "detail.countryCode",
            "detail.url",
        ],
        &["fk_host", "name", "code", "currency"],
        &[
            "name",
            "code",
            "currency",
            "detail.countryCode",
            "detail.url",
        ],
        true,
    )
    .natural_key(&["fk_host", "code"])
    .scope(
        COMPANY,
        &[&[("store_brandStore.brandStore_brand.fk_company", Companies)]],
    )
    .scope(HOST, &[&[("fk_host", Host)]])
    .writable_by(WRITE, HOST, &[&[("fk_host", Host)]])
}

pub(super) fn brand_store() -> Resource {
    Resource::new(
        Res::BrandStore.name(),
        "brand_store",
        "The link of a brand to a store of a host, shipped from one warehouse.",
    )
    .labelled("{brandStore_brand} → {brandStore_store}")
    .relation_fk(fk("fk_brand", "brandStore_brand"), "brand")
    .relation_fk(fk("fk_store", "brandStore_store"), "store")
    .relation_fk(fk("fk_warehouse", "brandStore_warehouse"), "warehouse")
    .field(object(
        "detail",
        vec![
            text("stockType")
                .short()
                .domain(Domain::AnyCase(&STOCK_TYPES))
                .repaired_to("live")
                .doc("How stock is offered to the store: live (the default), fixed or none."),
            integer("stockPercent")
                .domain(Domain::Units { least: 0, most: 100 })
                .doc("Live stock: the share of the warehouse's available units offered, in percent (default 100), rounded down.")
                .hidden_from(HOST_CANNOT_SEE_RULES),
            integer("stockBuffer")
                .domain(Domain::UNITS)
                .doc("Live stock: units held back from what the share leaves (default 0).")
                .hidden_from(HOST_CANNOT_SEE_RULES),
            integer("stockMax")
                .domain(Domain::UNITS)
                .doc("Live stock: the most units offered (default: no cap).")
                .hidden_from(HOST_CANNOT_SEE_RULES),
            integer("fixedQuantity")
                .domain(Domain::UNITS)
                .doc("Fixed stock: the units offered whatever the stock (default 0).")
                .hidden_from(HOST_CANNOT_SEE_RULES),
            text("adjustType")
                .short()
                .domain(Domain::AnyCase(&ADJUST_TYPES))
                .repaired_to("")
                .doc("How prices are adjusted for the store: percent, fixed, or empty for none.")
                .hidden_from(HOST_CANNOT_SEE_RULES),
            number("adjustValue")
                .domain(Domain::SIGNED_MONEY)
                .doc("The adjustment: a percentage (percent) or an amount added (fixed).")
                .hidden_from(HOST_CANNOT_SEE_RULES),
        ],
    ))
    .index(&["fk_brand", "fk_store"], true)
    .writable(
        &["fk_brand", "fk_store", "fk_warehouse", "detail"],
        &["fk_brand", "fk_store", "fk_warehouse"],
        &["fk_warehouse", "detail"],
        true,
    )
    .natural_key(&["fk_brand", "fk_store"])
    .bounded("detail.adjustValue", -100.0, "detail.adjustType", "percent")
    .scope(COMPANY, &[&[("brandStore_brand.fk_company", Companies)]])
    .writable_by(WRITE, OWNERS, &[&[("brandStore_brand.fk_company", Companies)]])
    .scope(HOST, &[&[("brandStore_store.fk_host", Host)]])
    .scope(WAREHOUSE, &[&[("fk_warehouse", Warehouse)]])
}
