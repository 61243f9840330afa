//! The merchandise: products, their variants, the stock of each variant in a warehouse, the
//! prices of variants at hosts and the images of products.

use super::events::{PRICE_UPDATED, PRODUCT_UPDATED, STOCK_UPDATED};
use super::{COMPANY, HOST, HOST_CANNOT_SEE_IMPORTS, OWNERS, WAREHOUSE, WRITE};
use crate::handle::Res;
use crate::model::{
    Anchor::{Companies, Host, Warehouse},
    Domain, FieldDefault, Generated, Resource, boolean, fk, id_field, integer, lengths, limits,
    number, object, text, timestamp,
};

/// How far from zero orders may move a stock count (docs/API.md, "Quantities and amounts").
const MOVED_UNITS: (i64, i64) = (-limits::MOST_UNITS, limits::MOST_UNITS);

pub(super) fn product() -> Resource {
    Resource::new(
        Res::Product.name(),
        "product",
        "A product of a brand; its variants carry barcodes.",
    )
    .labelled("{title|code}")
    .announces(PRODUCT_UPDATED, PRODUCT_UPDATED)
    .relation_fk(fk("fk_brand", "product_brand"), "brand")
    .field(
        text("code")
            .indexed()
            .short()
            .doc("The brand's product code."),
    )
    .field(text("title").indexed())
    .field(text("category").indexed())
    .field(text("description").long())
    .field(text("productBrand"))
    .field(text("season").indexed().short())
    .field(text("origin"))
    .field(text("composition").long())
    .field(text("careInstructions").long())
    .field(timestamp("createdDate").indexed().required())
    .field(text("status").indexed().short())
    .field(
        object(
            "detail",
            vec![
                id_field("importFile")
                    .refers_to("file")
                    .doc("The file that last wrote the product."),
            ],
        )
        .hidden_from(HOST_CANNOT_SEE_IMPORTS),
    )
    .field(text("commodityCode").short())
    .has_many("product_variant", "variant", "fk_product")
    .has_many("product_image", "image", "fk_product")
    .index(&["fk_brand", "code"], true)
    .writable(
        &[
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
            "status",
            "commodityCode",
        ],
        &["fk_brand", "code", "title"],
        &[
            "code",
            "title",
            "category",
            "description",
            "productBrand",
            "season",
            "origin",
            "composition",
            "careInstructions",
            "status",
            "commodityCode",
        ],
        true,
    )
    .natural_key(&["fk_brand", "code"])
    .scope(COMPANY, &[&[("product_brand.fk_company", Companies)]])
    .writable_by(WRITE, OWNERS, &[&[("product_brand.fk_company", Companies)]])
    .scope(
        HOST,
        &[&[(
            "product_brand.brand_brandStore.brandStore_store.fk_host",
            Host,
        )]],
    )
    .scope(
        WAREHOUSE,
        &[&[("product_variant.variant_stock.fk_warehouse", Warehouse)]],
    )
}

pub(super) fn variant() -> Resource {
    Resource::new(
        Res::Variant.name(),
        "variant",
        "A sellable variant of a product (a size, a colour).",
    )
    .labelled("{variant_product} · {colour} · {size} · {barcode}")
    .relation_fk(fk("fk_product", "variant_product"), "product")
    .field(text("code").indexed().short())
    .field(
        text("barcode")
            .indexed()
            .short()
            .doc("EAN/UPC barcode, as text."),
    )
    .field(text("colour").indexed())
    .field(integer("sequence"))
    .field(text("size").indexed().short())
    .field(object(
        "detail",
        vec![
            number("rrp").domain(Domain::MONEY),
            number("price").domain(Domain::MONEY),
            id_field("importFile")
                .refers_to("file")
                .doc("The file that last wrote the variant.")
                .hidden_from(HOST_CANNOT_SEE_IMPORTS),
        ],
    ))
    .field(boolean("vatable"))
    .field(
        number("rrp")
            .domain(Domain::MONEY)
            .doc("Recommended retail price."),
    )
    .relation_fk(
        fk("fk_scopeBrand", "variant_scopeBrand").derived("variant_product.fk_brand"),
        "brand",
    )
    .has_many("variant_stock", "stock", "fk_variant")
    .has_many("variant_price", "price", "fk_variant")
    .writable(
        &[
            "fk_product",
            "code",
            "barcode",
            "colour",
            "sequence",
            "size",
            "detail.rrp",
            "detail.price",
            "vatable",
            "rrp",
        ],
        &["fk_product", "barcode"],
        &[
            "code",
            "barcode",
            "colour",
            "sequence",
            "size",
            "detail.rrp",
            "detail.price",
            "vatable",
            "rrp",
        ],
        true,
    )
    // (brand, barcode): the brand through the shortcut every variant carries.
    .natural_key(&["fk_scopeBrand", "barcode"])
    .scope(COMPANY, &[&[("variant_scopeBrand.fk_company", Companies)]])
    .writable_by(
        WRITE,
        OWNERS,
        &[&[("variant_product.product_brand.fk_company", Companies)]],
    )
    .scope(
        HOST,
        &[&[(
            "variant_scopeBrand.brand_brandStore.brandStore_store.fk_host",
            Host,
        )]],
    )
    .scope(WAREHOUSE, &[&[("variant_stock.fk_warehouse", Warehouse)]])
}

pub(super) fn stock() -> Resource {
    Resource::new(
        Res::Stock.name(),
        "stock",
        "Stock of one variant in one warehouse.",
    )
    .labelled("{stock_variant} @ {stock_warehouse}")
    .announces(STOCK_UPDATED, STOCK_UPDATED)
    .relation_fk(fk("fk_warehouse", "stock_warehouse"), "warehouse")
    .relation_fk(fk("fk_variant", "stock_variant"), "variant")
    .field(
        integer("inStock")
            .domain(Domain::UNITS)
            .held_within(MOVED_UNITS.0, MOVED_UNITS.1)
            .doc("Units on hand."),
    )
    .field(
        integer("demand")
            .domain(Domain::UNITS)
            .held_within(MOVED_UNITS.0, MOVED_UNITS.1)
            .doc("Units ordered but not yet shipped."),
    )
    .field(
        integer("supply")
            .domain(Domain::UNITS)
            .doc("Units expected in."),
    )
    .field(
        integer("available")
            .indexed()
            .generated(Generated::ClampedDifference {
                minuend: "inStock",
                subtrahend: "demand",
            })
            .doc(
                "Units that can still be ordered: max(0, inStock - demand), kept by the database.",
            ),
    )
    .field(timestamp("lastUpdate").indexed().required().stamped())
    .template(&[
        "stock_warehouse",
        "stock_variant",
        "stock_variant.variant_product",
        "stock_variant.variant_product.product_brand",
    ])
    .relation_fk(
        fk("fk_scopeBrand", "stock_scopeBrand").derived("stock_variant.variant_product.fk_brand"),
        "brand",
    )
    .index(&["fk_warehouse", "fk_variant"], true)
    .writable(
        &["fk_warehouse", "fk_variant", "inStock", "demand", "supply"],
        &["fk_warehouse", "fk_variant", "inStock"],
        &["inStock", "demand", "supply"],
        true,
    )
    .natural_key(&["fk_warehouse", "fk_variant"])
    .scope(COMPANY, &[&[("stock_scopeBrand.fk_company", Companies)]])
    .writable_by(
        WRITE,
        OWNERS,
        &[&[("stock_warehouse.fk_company", Companies)]],
    )
    .writable_by(WRITE, WAREHOUSE, &[&[("fk_warehouse", Warehouse)]])
    .scope(
        HOST,
        &[&[
            (
                "stock_scopeBrand.brand_brandStore.brandStore_store.fk_host",
                Host,
            ),
            (
                "stock_warehouse.warehouse_brandStore.brandStore_store.fk_host",
                Host,
            ),
        ]],
    )
    .scope(WAREHOUSE, &[&[("fk_warehouse", Warehouse)]])
}

pub(super) fn price() -> Resource {
    Resource::new(
        Res::Price.name(),
        "price",
        "The price of a variant at a host between two dates.",
    )
    .labelled("{price_variant} · {price_host} · {startDate}")
    .announces(PRICE_UPDATED, PRICE_UPDATED)
    .relation_fk(fk("fk_variant", "price_variant"), "variant")
    .relation_fk(fk("fk_host", "price_host"), "host")
    .relation_fk(
        fk("fk_file", "price_file")
            .optional()
            .hidden_from(HOST_CANNOT_SEE_IMPORTS),
        "file",
    )
    .field(number("price").domain(Domain::MONEY).priced_in("currency"))
    .field(number("rrp").domain(Domain::MONEY).priced_in("currency"))
    .field(
        text("currency")
            .short()
            .or_else(FieldDefault::Text(""))
            .doc("ISO 4217 code of the price's currency; empty: any currency (the store's)."),
    )
    .field(timestamp("startDate").indexed().required())
    .field(
        timestamp("endDate")
            .indexed()
            .doc("Empty for a permanent markdown."),
    )
    .writable(
        &[
            "fk_variant",
            "fk_host",
            "price",
            "rrp",
            "currency",
            "startDate",
            "endDate",
        ],
        &["fk_variant", "fk_host", "price", "startDate"],
        &["price", "rrp", "endDate"],
        true,
    )
    .natural_key(&["fk_variant", "fk_host", "currency", "startDate"])
    .scope(
        COMPANY,
        &[&[(
            "price_variant.variant_product.product_brand.fk_company",
            Companies,
        )]],
    )
    .writable_by(
        WRITE,
        OWNERS,
        &[&[(
            "price_variant.variant_product.product_brand.fk_company",
            Companies,
        )]],
    )
    .scope(HOST, &[&[("fk_host", Host)]])
}

pub(super) fn image() -> Resource {
    Resource::new(
        Res::Image.name(),
        "image",
        "An image of a product or of one of its variants.",
    )
    .labelled("{image_variant|image_product} · {position}")
    .relation_fk(fk("fk_product", "image_product"), "product")
    .relation_fk(fk("fk_variant", "image_variant").optional(), "variant")
    .relation_fk(
        fk("fk_file", "image_file")
            .optional()
            .hidden_from(HOST_CANNOT_SEE_IMPORTS),
        "file",
    )
    .field(text("url").max_chars(lengths::URL).domain(Domain::WebUrl))
    .field(integer("position").domain(Domain::UNITS))
    .writable(
        &["fk_product", "fk_variant", "url", "position"],
        &["fk_product", "url"],
        &["fk_variant", "url", "position"],
        true,
    )
    .natural_key(&[])
    .agreeing("image_variant.fk_product", "fk_product")
    .scope(
        COMPANY,
        &[&[("image_product.product_brand.fk_company", Companies)]],
    )
    .writable_by(
        WRITE,
        OWNERS,
        &[&[("image_product.product_brand.fk_company", Companies)]],
    )
    .scope(
        HOST,
        &[&[(
            "image_product.product_brand.brand_brandStore.brandStore_store.fk_host",
            Host,
        )]],
    )
}
