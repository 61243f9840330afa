//! Every resource of the API, declared once. Field order is render order; `indexed` marks the
//! fields whose equality and prefix (`@`) filters must be served by an index.

use crate::model::{
    Anchor::{Companies, Host, Own, Sponsor, Warehouse, WritableTypes},
    Domain, FieldDefault, FieldType, Generated, Policy, Resource, Secret, SecretKept, UserType,
    WriteAction, boolean, fk, id_field, integer, lengths, limits, list, number, object,
    precise_timestamp, text, timestamp,
};

/// How far from zero orders may move a stock count (docs/API.md, "Quantities and amounts").
const MOVED_UNITS: (i64, i64) = (-limits::MOST_UNITS, limits::MOST_UNITS);

use crate::handle::Res;
use crate::lifecycle::{ITEM_STATUSES, ORDER_STATUSES, REJECT_REASONS};

/// The kinds of spreadsheet an upload can be (docs/API.md, "Files: uploads and processing"), as `file.fileType` names them.
pub const FILE_TYPES: [&str; 5] = ["product", "stock", "price", "image", "orderDispatch"];

/// A file's way through processing: `pending` → `processing` → `processed` or `failed`. Code
/// that sets or tests a file's status names it by this type, never by a copy of the word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileStatus {
    Pending,
    Processing,
    Processed,
    Failed,
}

impl FileStatus {
    /// Every status, in the order a file goes through them.
    pub const ALL: [FileStatus; 4] = [
        FileStatus::Pending,
        FileStatus::Processing,
        FileStatus::Processed,
        FileStatus::Failed,
    ];

    /// The word `file.status` holds.
    pub const fn as_str(self) -> &'static str {
        match self {
            FileStatus::Pending => "pending",
            FileStatus::Processing => "processing",
            FileStatus::Processed => "processed",
            FileStatus::Failed => "failed",
        }
    }

    /// The status a stored word names.
    pub fn named(word: &str) -> Option<FileStatus> {
        FileStatus::ALL.into_iter().find(|s| s.as_str() == word)
    }

    /// Whether processing is over, so that nothing about the file changes any more (an
    /// upload waiting with `?wait=` answers then).
    pub const fn is_final(self) -> bool {
        matches!(self, FileStatus::Processed | FileStatus::Failed)
    }
}

/// The words of [`FileStatus`], as the `file.status` domain lists them.
pub const FILE_STATUSES: [&str; 4] = [
    FileStatus::Pending.as_str(),
    FileStatus::Processing.as_str(),
    FileStatus::Processed.as_str(),
    FileStatus::Failed.as_str(),
];

/// The paths of the file record that code reads and writes besides the API (the upload that
/// records a file, the worker that reports on it, the demo loader), named once; a catalog test
/// checks that each is a field of `file`.
pub mod file_paths {
    pub const STATUS: &str = "status";
    pub const FILE_TYPE: &str = "fileType";
    pub const FILE_NAME: &str = "fileName";
    pub const BRAND: &str = "fk_brand";
    pub const USER: &str = "fk_user";
    pub const CREATED: &str = "createdDate";
    pub const MIME: &str = "detail.fileMime";
    pub const HOST: &str = "detail.host";
    pub const WAREHOUSE: &str = "detail.warehouse";
    pub const START: &str = "detail.startDate";
    pub const END: &str = "detail.endDate";
    pub const ERROR: &str = "detail.error";
    pub const ROWS_READ: &str = "detail.rowsRead";
    pub const ROWS_APPLIED: &str = "detail.rowsApplied";
    pub const ROWS_SKIPPED: &str = "detail.rowsSkipped";
    /// Every path above, for the test that holds them to the declaration.
    pub const ALL: [&str; 15] = [
        STATUS,
        FILE_TYPE,
        FILE_NAME,
        BRAND,
        USER,
        CREATED,
        MIME,
        HOST,
        WAREHOUSE,
        START,
        END,
        ERROR,
        ROWS_READ,
        ROWS_APPLIED,
        ROWS_SKIPPED,
    ];
}

// The events a webhook may subscribe to (docs/API.md, "Events and webhooks"), each named once.
const ORDER_CREATED: &str = "order.created";
const ORDER_UPDATED: &str = "order.updated";
const STOCK_UPDATED: &str = "stock.updated";
const PRICE_UPDATED: &str = "price.updated";
const PRODUCT_UPDATED: &str = "product.updated";
const OFFER_UPDATED: &str = "offer.updated";
const OFFER_DELETED: &str = "offer.deleted";

impl FileStatus {
    /// The event a file reaching this status is announced as, if any.
    pub const fn event(self) -> Option<&'static str> {
        match self {
            FileStatus::Processed => Some("file.processed"),
            FileStatus::Failed => Some("file.failed"),
            FileStatus::Pending | FileStatus::Processing => None,
        }
    }
}

/// Every event type (docs/API.md, "Events and webhooks"): the `webhook.events` domain. A catalog test holds it to
/// what the resources announce and what files announce.
pub const EVENT_TYPES: [&str; 9] = [
    ORDER_CREATED,
    ORDER_UPDATED,
    "file.processed",
    "file.failed",
    STOCK_UPDATED,
    PRICE_UPDATED,
    PRODUCT_UPDATED,
    OFFER_UPDATED,
    OFFER_DELETED,
];

/// The type of a delivery that carries a batch of events (`webhook.batch`, docs/API.md,
/// "Events and webhooks"): its body's `type`, its `webhookDelivery.eventType`.
pub const BATCH_EVENT: &str = "batch";

/// The most events one batch delivery carries.
pub const MAX_BATCH_EVENTS: usize = 1_000;

/// What a `webhookDelivery` carries: one event of a type of [`EVENT_TYPES`], or a batch.
pub const DELIVERY_TYPES: [&str; 10] = [
    ORDER_CREATED,
    ORDER_UPDATED,
    "file.processed",
    "file.failed",
    STOCK_UPDATED,
    PRICE_UPDATED,
    PRODUCT_UPDATED,
    OFFER_UPDATED,
    OFFER_DELETED,
    BATCH_EVENT,
];

/// How a brand store offers stock to its store (docs/API.md, "Offers"): from the warehouse's
/// stock by the store's rules (`live`, also when empty), a fixed quantity, or nothing.
pub const STOCK_TYPES: [&str; 3] = ["live", "fixed", "none"];

/// How a brand store adjusts the price in effect (docs/API.md, "Offers"): by a percentage, or
/// by an amount added; empty leaves it.
pub const ADJUST_TYPES: [&str; 2] = ["percent", "fixed"];

/// An offer's status: `inactive` (the product is not active, there is no price, or the store
/// is offered no stock), else `outOfStock` (nothing available), else `active`.
pub const OFFER_STATUSES: [&str; 3] = ["active", "outOfStock", "inactive"];

/// How an element of `POST /api/offer/hostSku` names its offer besides its id: its brand
/// store and the variant's barcode, or its brand store and variant.
const OFFER_NAMED_BY: &[&[&str]] = &[
    &["fk_brandStore", "barcode"],
    &["fk_brandStore", "fk_variant"],
];

/// The resources offers are kept from: a write of any of them may change offers.
const OFFER_SOURCES: &[Res] = &[
    Res::Stock,
    Res::Price,
    Res::BrandStore,
    Res::Variant,
    Res::Product,
    Res::Store,
];

/// A webhook delivery's way: `pending` (not tried yet), `retrying` (an attempt failed, the
/// next is due at `nextTry`), `delivered` (a 2xx answer) or `failed` (no 2xx answer within the
/// retry period).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryStatus {
    Pending,
    Retrying,
    Delivered,
    Failed,
}

impl DeliveryStatus {
    /// The word `webhookDelivery.status` holds.
    pub const fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Retrying => "retrying",
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Failed => "failed",
        }
    }
}

/// The words of [`DeliveryStatus`], as the `webhookDelivery.status` domain lists them.
pub const DELIVERY_STATUSES: [&str; 4] = [
    DeliveryStatus::Pending.as_str(),
    DeliveryStatus::Retrying.as_str(),
    DeliveryStatus::Delivered.as_str(),
    DeliveryStatus::Failed.as_str(),
];

/// The statuses of a user; a disabled user's keys all fail.
pub const USER_STATUSES: [&str; 2] = ["active", "disabled"];

// Scope (docs/API.md, "Scope: who sees what"): who sees which records. A sponsor follows the company rules over the
// sponsor's companies; admins see everything; a user type without a rule sees nothing.
const COMPANY: &[UserType] = &[UserType::Company];
const HOST: &[UserType] = &[UserType::Host];
const WAREHOUSE: &[UserType] = &[UserType::Warehouse];
/// Every non-admin type (sponsors follow the company rules).
const EVERYONE: &[UserType] = &[UserType::Company, UserType::Host, UserType::Warehouse];

// Who writes what (docs/API.md, "Who writes what"): per action and user type, the paths whose value must be one
// of the caller's ids, like scope. Admins write everything; sponsors follow the company rules
// (over their own companies) unless a rule names them; a type without a rule writes nothing.
const WRITE: WriteAction = WriteAction::Write;
const DISPATCH: WriteAction = WriteAction::Dispatch;
const SPONSOR: &[UserType] = &[UserType::Sponsor];
/// Company and sponsor users: the owners of brands, warehouses and their catalogues.
const OWNERS: &[UserType] = &[UserType::Company];
/// Every non-admin type, for what each writes of its own (its API keys).
const SELF_SERVICE: &[UserType] = EVERYONE;

const WAREHOUSE_CANNOT_SEE_MONEY: &[UserType] = &[UserType::Warehouse];
const HOST_CANNOT_SEE_IMPORTS: &[UserType] = &[UserType::Host];
/// A brand store's stock rules and price adjustment: hosts see their effect, the offer.
const HOST_CANNOT_SEE_RULES: &[UserType] = &[UserType::Host];

/// The fields an order intake sets (docs/API.md, "Orders: intake, lifecycle and stock"); the lines are `order_orderItem`, whose
/// fields are [`crate::lifecycle::LINE_INTAKE`].
const ORDER_INTAKE: [&str; 11] = [
    "fk_brandStore",
    "hostOrderRef",
    "hostCustOrderRef",
    "orderDate",
    "detail.hostCarrier",
    "detail.hostStatus",
    "detail.customerMessage",
    "detail.shippingGross",
    "detail.shippingTax",
    "shipAddress",
    "billAddress",
];

/// The text parts of a postal address (an order's `shipAddress` and `billAddress`), in render
/// order; code that fills addresses (the demo loader) takes the paths from here.
pub const ADDRESS_PARTS: [&str; 13] = [
    "title",
    "forename",
    "surname",
    "company",
    "line1",
    "line2",
    "town",
    "county",
    "country",
    "postcode",
    "countryCode",
    "phone",
    "email",
];

fn address_fields(with_id: bool) -> Vec<crate::model::Field> {
    let mut fields = Vec::new();
    if with_id {
        fields.push(integer("id").doc("The host system's address id."));
    }
    for name in ADDRESS_PARTS {
        fields.push(match name {
            "postcode" | "countryCode" | "phone" => text(name).short(),
            "email" => text(name).max_chars(lengths::EMAIL),
            _ => text(name),
        });
    }
    fields
}

/// The declarations, in the order the docs list them, each with the fields every record has
/// (`updatedDate`, [`with_common_fields`]).
pub fn declare() -> Vec<Resource> {
    declared().into_iter().map(with_common_fields).collect()
}

/// What every record carries, declared once (docs/API.md, "Writes: concurrency and idempotency"): `updatedDate`, the time
/// of the last write of the record, set by every writer (JSON writes, files, the demo loader),
/// never by a client. It renders last.
fn with_common_fields(resource: Resource) -> Resource {
    resource.field(
        timestamp(UPDATED_DATE)
            .indexed()
            .stamped()
            .doc("When the record was last written (by the API or a file); read-only."),
    )
}

/// The path of the field every writer stamps with the time of the write.
pub const UPDATED_DATE: &str = "updatedDate";

fn declared() -> Vec<Resource> {
    vec![
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
        .natural_key(&["code"]),
        Resource::new(Res::Brand.name(), "brand", "A brand of a company: owns products and uploads files.")
            .labelled("{name}")
            .relation_fk(fk("fk_company", "brand_company"), "company")
            .field(text("name").indexed())
            .field(
                object(
                    "detail",
                    vec![text("website").max_chars(lengths::URL), text("description").long()],
                )
                .nullable(),
            )
            .field(text("code").indexed().short())
            .has_many("brand_product", "product", "fk_brand")
            .has_many("brand_brandStore", "brandStore", "fk_brand")
            .scope(COMPANY, &[&[("fk_company", Companies)]])
            .writable(
                &["fk_company", "name", "code", "detail.website", "detail.description"],
                &["fk_company", "name", "code"],
                &["name", "code", "detail.website", "detail.description"],
                true,
            )
            .natural_key(&["code"])
            .writable_by(WRITE, OWNERS, &[&[("fk_company", Companies)]])
            .scope(HOST, &[&[("brand_brandStore.brandStore_store.fk_host", Host)]])
            .scope(WAREHOUSE, &[&[("brand_product.product_variant.variant_stock.fk_warehouse", Warehouse)]]),
        Resource::new(Res::Warehouse.name(), "warehouse", "A warehouse of a company: holds stock.")
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
                &["fk_company", "code", "name", "detail.town", "detail.countryCode", "detail.contactEmail"],
                &["fk_company", "code", "name"],
                &["code", "name", "detail.town", "detail.countryCode", "detail.contactEmail"],
                true,
            )
            .natural_key(&["code"])
            .writable_by(WRITE, OWNERS, &[&[("fk_company", Companies)]])
            .scope(WAREHOUSE, &[&[("id", Warehouse)]]),
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
            vec![text("website").max_chars(lengths::URL), text("countryCode").short()],
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
        .scope(COMPANY, &[&[("host_store.store_brandStore.brandStore_brand.fk_company", Companies)]])
        .scope(HOST, &[&[("id", Host)]]),
        Resource::new(Res::Store.name(), "store", "A storefront of a host, selling in one currency.")
            .labelled("{name} · {store_host}")
            .relation_fk(fk("fk_host", "store_host"), "host")
            .field(text("name").indexed())
            .field(text("code").indexed().short())
            .field(text("currency").short())
            .field(object(
                "detail",
                vec![text("countryCode").short(), text("url").max_chars(lengths::URL)],
            ))
            .field(timestamp("createdDate").indexed().required())
            .has_many("store_brandStore", "brandStore", "fk_store")
            .writable(
                &["fk_host", "name", "code", "currency", "detail.countryCode", "detail.url"],
                &["fk_host", "name", "code", "currency"],
                &["name", "code", "currency", "detail.countryCode", "detail.url"],
                true,
            )
            .natural_key(&["fk_host", "code"])
            .scope(COMPANY, &[&[("store_brandStore.brandStore_brand.fk_company", Companies)]])
            .scope(HOST, &[&[("fk_host", Host)]])
            .writable_by(WRITE, HOST, &[&[("fk_host", Host)]]),
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
        .scope(WAREHOUSE, &[&[("fk_warehouse", Warehouse)]]),
        Resource::new(Res::Product.name(), "product", "A product of a brand; its variants carry barcodes.")
            .labelled("{title|code}")
            .announces(PRODUCT_UPDATED, PRODUCT_UPDATED)
            .relation_fk(fk("fk_brand", "product_brand"), "brand")
            .field(text("code").indexed().short().doc("The brand's product code."))
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
                    vec![id_field("importFile").refers_to("file").doc("The file that last wrote the product.")],
                )
                .hidden_from(HOST_CANNOT_SEE_IMPORTS),
            )
            .field(text("commodityCode").short())
            .has_many("product_variant", "variant", "fk_product")
            .has_many("product_image", "image", "fk_product")
            .index(&["fk_brand", "code"], true)
            .writable(
                &["fk_brand", "code", "title", "category", "description", "productBrand", "season", "origin", "composition", "careInstructions", "status", "commodityCode"],
                &["fk_brand", "code", "title"],
                &["code", "title", "category", "description", "productBrand", "season", "origin", "composition", "careInstructions", "status", "commodityCode"],
                true,
            )
            .natural_key(&["fk_brand", "code"])
            .scope(COMPANY, &[&[("product_brand.fk_company", Companies)]])
            .writable_by(WRITE, OWNERS, &[&[("product_brand.fk_company", Companies)]])
            .scope(HOST, &[&[("product_brand.brand_brandStore.brandStore_store.fk_host", Host)]])
            .scope(WAREHOUSE, &[&[("product_variant.variant_stock.fk_warehouse", Warehouse)]]),
        Resource::new(Res::Variant.name(), "variant", "A sellable variant of a product (a size, a colour).")
            .labelled("{variant_product} · {colour} · {size} · {barcode}")
            .relation_fk(fk("fk_product", "variant_product"), "product")
            .field(text("code").indexed().short())
            .field(text("barcode").indexed().short().doc("EAN/UPC barcode, as text."))
            .field(text("colour").indexed())
            .field(integer("sequence"))
            .field(text("size").indexed().short())
            .field(object(
                "detail",
                vec![
                    number("rrp").domain(Domain::MONEY),
                    number("price").domain(Domain::MONEY),
                    id_field("importFile").refers_to("file")
                        .doc("The file that last wrote the variant.")
                        .hidden_from(HOST_CANNOT_SEE_IMPORTS),
                ],
            ))
            .field(boolean("vatable"))
            .field(number("rrp").domain(Domain::MONEY).doc("Recommended retail price."))
            .relation_fk(
                fk("fk_scopeBrand", "variant_scopeBrand").derived("variant_product.fk_brand"),
                "brand",
            )
            .has_many("variant_stock", "stock", "fk_variant")
            .has_many("variant_price", "price", "fk_variant")
            .writable(
                &["fk_product", "code", "barcode", "colour", "sequence", "size", "detail.rrp", "detail.price", "vatable", "rrp"],
                &["fk_product", "barcode"],
                &["code", "barcode", "colour", "sequence", "size", "detail.rrp", "detail.price", "vatable", "rrp"],
                true,
            )
            // (brand, barcode): the brand through the shortcut every variant carries.
            .natural_key(&["fk_scopeBrand", "barcode"])
            .scope(COMPANY, &[&[("variant_scopeBrand.fk_company", Companies)]])
            .writable_by(WRITE, OWNERS, &[&[("variant_product.product_brand.fk_company", Companies)]])
            .scope(HOST, &[&[("variant_scopeBrand.brand_brandStore.brandStore_store.fk_host", Host)]])
            .scope(WAREHOUSE, &[&[("variant_stock.fk_warehouse", Warehouse)]]),
        Resource::new(Res::Stock.name(), "stock", "Stock of one variant in one warehouse.")
            .labelled("{stock_variant} @ {stock_warehouse}")
            .announces(STOCK_UPDATED, STOCK_UPDATED)
            .relation_fk(fk("fk_warehouse", "stock_warehouse"), "warehouse")
            .relation_fk(fk("fk_variant", "stock_variant"), "variant")
            .field(integer("inStock").domain(Domain::UNITS).held_within(MOVED_UNITS.0, MOVED_UNITS.1).doc("Units on hand."))
            .field(integer("demand").domain(Domain::UNITS).held_within(MOVED_UNITS.0, MOVED_UNITS.1).doc("Units ordered but not yet shipped."))
            .field(integer("supply").domain(Domain::UNITS).doc("Units expected in."))
            .field(
                integer("available")
                    .indexed()
                    .generated(Generated::ClampedDifference {
                        minuend: "inStock",
                        subtrahend: "demand",
                    })
                    .doc("Units that can still be ordered: max(0, inStock - demand), kept by the database."),
            )
            .field(timestamp("lastUpdate").indexed().required().stamped())
            .template(&[
                "stock_warehouse",
                "stock_variant",
                "stock_variant.variant_product",
                "stock_variant.variant_product.product_brand",
            ])
            .relation_fk(
                fk("fk_scopeBrand", "stock_scopeBrand")
                    .derived("stock_variant.variant_product.fk_brand"),
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
            .writable_by(WRITE, OWNERS, &[&[("stock_warehouse.fk_company", Companies)]])
            .writable_by(WRITE, WAREHOUSE, &[&[("fk_warehouse", Warehouse)]])
            .scope(
                HOST,
                &[&[
                    ("stock_scopeBrand.brand_brandStore.brandStore_store.fk_host", Host),
                    ("stock_warehouse.warehouse_brandStore.brandStore_store.fk_host", Host),
                ]],
            )
            .scope(WAREHOUSE, &[&[("fk_warehouse", Warehouse)]]),
        Resource::new(
            Res::Order.name(),
            "orders",
            "A customer order received by a host for one brand store.",
        )
        .labelled("{brandOrderRef|hostOrderRef}")
        .announces(ORDER_CREATED, ORDER_UPDATED)
        .relation_fk(fk("fk_brandStore", "order_brandStore"), "brandStore")
        .field(text("brandOrderRef").indexed().short())
        .field(text("hostOrderRef").indexed().short())
        .field(text("hostCustOrderRef").indexed().short())
        .field(timestamp("orderDate").indexed())
        .field(timestamp("shipDate"))
        .field(timestamp("sentToWH"))
        .field(timestamp("deliveryDate"))
        .field(text("status").indexed().short().domain(Domain::OneOf(&ORDER_STATUSES)))
        .field(text("carrier").short())
        .field(text("trackingRef").indexed().short())
        .relation_fk(fk("fk_warehouse", "order_warehouse").optional(), "warehouse")
        .field(object(
            "detail",
            vec![
                text("hostCarrier").short(),
                text("hostStatus").doc("Free text from the host system."),
                text("customerMessage").long(),
                number("net").domain(Domain::SIGNED_MONEY).priced_in("order_orderItem.currency").hidden_from(WAREHOUSE_CANNOT_SEE_MONEY),
                number("gross").domain(Domain::SIGNED_MONEY).priced_in("order_orderItem.currency").hidden_from(WAREHOUSE_CANNOT_SEE_MONEY),
                number("vat").domain(Domain::SIGNED_MONEY).priced_in("order_orderItem.currency").hidden_from(WAREHOUSE_CANNOT_SEE_MONEY),
                number("shippingGross").domain(Domain::SIGNED_MONEY).priced_in("order_orderItem.currency").hidden_from(WAREHOUSE_CANNOT_SEE_MONEY),
                number("shippingTax").domain(Domain::SIGNED_MONEY).priced_in("order_orderItem.currency").hidden_from(WAREHOUSE_CANNOT_SEE_MONEY),
            ],
        ))
        .field(object("shipAddress", address_fields(true)))
        .field(object("billAddress", address_fields(false)))
        .has_many("order_orderItem", "orderItem", "fk_order")
        .scope(COMPANY, &[&[("order_brandStore.brandStore_brand.fk_company", Companies)]])
        .scope(HOST, &[&[("order_brandStore.brandStore_store.fk_host", Host)]])
        .scope(WAREHOUSE, &[&[("fk_warehouse", Warehouse)]])
        .writable_by(DISPATCH, OWNERS, &[&[("order_brandStore.brandStore_brand.fk_company", Companies)]])
        .writable_by(DISPATCH, WAREHOUSE, &[&[("fk_warehouse", Warehouse)]])
        // One order per (brand store, hostOrderRef), however many pushes race (docs/API.md, "Orders: intake, lifecycle and stock").
        .index(&["fk_brandStore", "hostOrderRef"], true)
        // What a host's intake may set (docs/API.md, "Orders: intake, lifecycle and stock"); every later change is a lifecycle step.
        .writable(&ORDER_INTAKE, &["fk_brandStore", "hostOrderRef"], &[], false)
        .moves_through(&crate::lifecycle::ORDER_LIFECYCLE)
        .template(&[
            "order_brandStore",
            "order_orderItem",
            "order_orderItem.orderItem_variant.barcode",
            "order_orderItem.orderItem_variant.colour",
            "order_orderItem.orderItem_variant.size",
            "order_orderItem.orderItem_variant.vatable",
            "order_orderItem.orderItem_variant.variant_product.title",
        ]),
        Resource::new(Res::OrderItem.name(), "order_item", "One line of an order.")
            .labelled("{orderItem_order}: {orderItem_variant}")
            .relation_fk(fk("fk_order", "orderItem_order"), "order")
            .relation_fk(fk("fk_variant", "orderItem_variant"), "variant")
            .relation_fk(
                fk("fk_scopeBrandStore", "orderItem_scopeBrandStore")
                    .derived("orderItem_order.fk_brandStore"),
                "brandStore",
            )
            .field(integer("orderQty").domain(Domain::ORDERED))
            .field(text("hostSku").short().doc("The host's SKU (its store's) the line named its variant by at intake; empty when it named it by id or barcode."))
            .field(number("itemPrice").domain(Domain::MONEY).priced_in("currency").hidden_from(WAREHOUSE_CANNOT_SEE_MONEY))
            .field(number("lineNet").domain(Domain::SIGNED_MONEY).priced_in("currency").hidden_from(WAREHOUSE_CANNOT_SEE_MONEY))
            .field(number("lineTax").domain(Domain::SIGNED_MONEY).priced_in("currency").hidden_from(WAREHOUSE_CANNOT_SEE_MONEY))
            .field(number("lineGross").domain(Domain::SIGNED_MONEY).priced_in("currency").hidden_from(WAREHOUSE_CANNOT_SEE_MONEY))
            .field(text("currency").short())
            .field(integer("shipQty").domain(Domain::UNITS))
            .field(integer("returnQty").domain(Domain::UNITS))
            .field(object(
                "detail",
                vec![
                    text("gift").short().doc("Gift flag: Y or N."),
                    text("reason")
                        .short()
                        .domain(Domain::OneOf(&REJECT_REASONS))
                        .doc("Why the line was rejected: OUT_OF_STOCK, DISCONTINUED, PRICE_MISMATCH or OTHER."),
                ],
            ))
            .field(text("status").indexed().short().domain(Domain::OneOf(&ITEM_STATUSES)))
            .field(text("hostItemRef").indexed().short())
            .field(timestamp("returnDate"))
            .scope(COMPANY, &[&[("orderItem_scopeBrandStore.brandStore_brand.fk_company", Companies)]])
            .scope(HOST, &[&[("orderItem_scopeBrandStore.brandStore_store.fk_host", Host)]])
            .scope(WAREHOUSE, &[&[("orderItem_order.fk_warehouse", Warehouse)]])
            .writable_by(DISPATCH, OWNERS, &[&[("orderItem_order.order_brandStore.brandStore_brand.fk_company", Companies)]])
            .writable_by(DISPATCH, WAREHOUSE, &[&[("orderItem_order.fk_warehouse", Warehouse)]]),
        Resource::new(Res::User.name(), "users", "A person or system that calls the API with its keys.")
            .labelled("{name|email}")
            .field(text("name").indexed())
            .field(text("email").indexed().max_chars(lengths::EMAIL))
            .field(text("type").short().domain(Domain::OneOf(&UserType::NAMES)).doc("admin, sponsor, company, host or warehouse."))
            .field(
                text("status")
                    .short()
                    .domain(Domain::OneOf(&USER_STATUSES))
                    .or_else(FieldDefault::Text("active"))
                    .doc("active or disabled; a disabled user's keys and sessions all fail."),
            )
            .field(timestamp("createdDate").indexed().required())
            .field(object(
                "detail",
                vec![
                    text("lang").short().or_else(FieldDefault::Text("en")),
                    list(
                        "companies",
                        FieldType::Id,
                        "user_company",
                        "user_id",
                        "company_id",
                    )
                    .refers_to("company")
                    .doc("Further companies the user works for."),
                ],
            ))
            .relation_fk(
                fk("fk_sponsor", "user_sponsor").optional().zero_when_none(),
                "company",
            )
            .relation_fk(fk("fk_host", "user_host").optional().zero_when_none(), "host")
            .relation_fk(
                fk("fk_company", "user_company").optional().zero_when_none(),
                "company",
            )
            .relation_fk(
                fk("fk_warehouse", "user_warehouse").optional().zero_when_none(),
                "warehouse",
            )
            .index(&["email"], true)
            .writable(
                &["name", "email", "type", "status", "detail.lang", "detail.companies", "fk_sponsor", "fk_host", "fk_company", "fk_warehouse"],
                &["name", "email", "type"],
                &["name", "type", "status", "detail.lang", "detail.companies", "fk_sponsor", "fk_host", "fk_company", "fk_warehouse"],
                false,
            )
            .natural_key(&["email"])
            .policy(Policy::UserProfile)
            .scope(EVERYONE, &[&[("id", Own)]])
            .scope(COMPANY, &[&[("id", Own)], &[("fk_company", Companies)], &[("detail.companies", Companies)]])
            // Besides: never of a wider type (`UserType::writable_types`), and every company of
            // `detail.companies` one of the caller's (users.rs: lists are not rule paths).
            .writable_by(WRITE, OWNERS, &[&[("id", Own)], &[("fk_company", Companies)]]),
        Resource::new(Res::File.name(), "file", "An uploaded spreadsheet and the result of processing it.")
            .labelled("{fileName}")
            .relation_fk(fk("fk_brand", "file_brand"), "brand")
            .relation_fk(fk("fk_user", "file_user"), "user")
            .field(text("fileType").indexed().short().domain(Domain::OneOf(&FILE_TYPES)))
            .field(text("fileName").indexed())
            .field(timestamp("createdDate").indexed().required())
            .field(text("status").indexed().short().domain(Domain::OneOf(&FILE_STATUSES)))
            .field(object(
                "detail",
                vec![
                    text("fileMime"),
                    id_field("host").refers_to("host").doc("Host id, for price files."),
                    id_field("warehouse").refers_to("warehouse").doc("Warehouse id, for stock files."),
                    precise_timestamp("startDate"),
                    precise_timestamp("endDate"),
                    text("error")
                        .long()
                        .doc("Problems found while processing; empty when none."),
                    integer("rowsRead"),
                    integer("rowsApplied"),
                    integer("rowsSkipped"),
                ],
            ))
            .template(&["file_brand", "file_user"])
            .uploaded()
            .scope(COMPANY, &[&[("file_brand.fk_company", Companies)]])
            .scope(WAREHOUSE, &[&[("file_user.fk_warehouse", Warehouse)]]),
        Resource::new(Res::Price.name(), "price", "The price of a variant at a host between two dates.")
            .labelled("{price_variant} · {price_host} · {startDate}")
            .announces(PRICE_UPDATED, PRICE_UPDATED)
            .relation_fk(fk("fk_variant", "price_variant"), "variant")
            .relation_fk(fk("fk_host", "price_host"), "host")
            .relation_fk(
                fk("fk_file", "price_file").optional().hidden_from(HOST_CANNOT_SEE_IMPORTS),
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
            .field(timestamp("endDate").indexed().doc("Empty for a permanent markdown."))
            .writable(
                &["fk_variant", "fk_host", "price", "rrp", "currency", "startDate", "endDate"],
                &["fk_variant", "fk_host", "price", "startDate"],
                &["price", "rrp", "endDate"],
                true,
            )
            .natural_key(&["fk_variant", "fk_host", "currency", "startDate"])
            .scope(COMPANY, &[&[("price_variant.variant_product.product_brand.fk_company", Companies)]])
            .writable_by(WRITE, OWNERS, &[&[("price_variant.variant_product.product_brand.fk_company", Companies)]])
            .scope(HOST, &[&[("fk_host", Host)]]),
        Resource::new(Res::Image.name(), "image", "An image of a product or of one of its variants.")
            .labelled("{image_variant|image_product} · {position}")
            .relation_fk(fk("fk_product", "image_product"), "product")
            .relation_fk(fk("fk_variant", "image_variant").optional(), "variant")
            .relation_fk(
                fk("fk_file", "image_file").optional().hidden_from(HOST_CANNOT_SEE_IMPORTS),
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
            .scope(COMPANY, &[&[("image_product.product_brand.fk_company", Companies)]])
            .writable_by(WRITE, OWNERS, &[&[("image_product.product_brand.fk_company", Companies)]])
            .scope(HOST, &[&[("image_product.product_brand.brand_brandStore.brandStore_store.fk_host", Host)]]),
        Resource::new(Res::ApiKey.name(), "api_key", "An API key of a user, with its grants.")
            .labelled("{name} · {prefix}")
            .relation_fk(fk("fk_user", "apiKey_user").or_else(FieldDefault::Writer(Own)), "user")
            .field(text("name").indexed().or_else(FieldDefault::Text("API key")))
            .field(text("prefix").indexed().short().doc("The first 8 characters of the secret."))
            .field(
                list("grants", FieldType::Text, "api_key_grant", "api_key_id", "grant_text")
                    .doc("resource:METHODS entries, such as file:GET,POST or *:GET."),
            )
            .field(timestamp("createdDate").indexed().required())
            .field(timestamp("lastUsed").indexed().doc("When the key last authenticated (to the minute)."))
            .field(boolean("revoked").required().or_else(FieldDefault::Boolean(false)))
            .field(text("secretHash").internal())
            .writable(&["name", "grants", "fk_user"], &[], &[], true)
            .revoked_by("revoked")
            .with_secret(Secret {
                prefix: "bhk_",
                shown_as: "secret",
                kept: SecretKept::HashIn("secretHash"),
                start_in: Some("prefix"),
                used_in: Some("lastUsed"),
            })
            .policy(Policy::KeyGrants)
            .scope(EVERYONE, &[&[("fk_user", Own)]])
            .writable_by(WRITE, SELF_SERVICE, &[&[("fk_user", Own)]])
            // Company and sponsor users also make and revoke the keys of the users they may
            // write (docs/API.md, "Writes: users and keys": users of their companies, of a type no wider than they may
            // give), so they see those keys too; the `KeyGrants` policy checks the rest of
            // what writing that user asks and keeps every key within the writing key.
            .scope(COMPANY, &[&[("fk_user", Own)], &[("apiKey_user.fk_company", Companies), ("apiKey_user.type", WritableTypes)]])
            .writable_by(WRITE, OWNERS, &[&[("fk_user", Own)], &[("apiKey_user.fk_company", Companies), ("apiKey_user.type", WritableTypes)]]),
        Resource::new(
            Res::Webhook.name(),
            "webhook",
            "A subscription of a user to events, delivered as signed POSTs to its URL.",
        )
        .labelled("{url}")
        .relation_fk(fk("fk_user", "webhook_user").or_else(FieldDefault::Writer(Own)), "user")
        .field(
            text("url")
                .max_chars(lengths::URL)
                .domain(Domain::SecureUrl)
                .doc("The receiver: an https URL."),
        )
        .field(
            list("events", FieldType::Text, "webhook_event", "webhook_id", "event_text")
                .domain(Domain::OneOf(&EVENT_TYPES))
                .doc("The event types delivered."),
        )
        .field(
            boolean("active")
                .required()
                .or_else(FieldDefault::Boolean(true))
                .doc("Inactive webhooks receive nothing."),
        )
        .field(
            boolean("batch")
                .required()
                .or_else(FieldDefault::Boolean(false))
                .doc("Deliver events in batches: up to 1,000 per delivery, sent when 1,000 are due or 1 second after the first."),
        )
        .field(timestamp("createdDate").indexed().required())
        .field(text("secret").internal())
        .field(
            id_field("madeWithKey")
                .internal()
                .or_else(FieldDefault::WriterKey)
                .doc("The API key it was made with, whose grants bound its deliveries; unset when made in a session or from the command line."),
        )
        .writable(&["fk_user", "url", "events", "active", "batch"], &["url", "events"], &["url", "events", "active", "batch"], true)
        .policy(Policy::WebhookBounds)
        .with_secret(Secret {
            prefix: "whsec_",
            shown_as: "secret",
            kept: SecretKept::In("secret"),
            start_in: None,
            used_in: None,
        })
        .scope(EVERYONE, &[&[("fk_user", Own)]])
        .writable_by(WRITE, SELF_SERVICE, &[&[("fk_user", Own)]]),
        Resource::new(
            Res::WebhookDelivery.name(),
            "webhook_delivery",
            "One event, or a batch of events, on its way to one webhook: each attempt, its answer and the next try.",
        )
        .labelled("{eventType} · {eventId}")
        .relation_fk(fk("fk_webhook", "webhookDelivery_webhook"), "webhook")
        .field(text("eventId").indexed().short().doc("The event's id (a batch's: the batch's own id), the same in every attempt: the body's id."))
        .field(text("eventType").indexed().short().domain(Domain::OneOf(&DELIVERY_TYPES)).doc("The event's type, or batch."))
        .field(
            list("eventIds", FieldType::Id, "webhook_delivery_event", "delivery_id", "event_id")
                .doc("The ids of the events it carries, oldest first: one, or up to 1,000 in a batch."),
        )
        .field(integer("eventCount").internal().doc("How many events it carries, for the fan-out that fills a batch."))
        .field(text("status").indexed().short().domain(Domain::OneOf(&DELIVERY_STATUSES)))
        .field(integer("attempts").doc("Attempts made so far."))
        .field(integer("lastResponseCode").doc("The HTTP status of the last answer; empty when none came."))
        .field(text("lastError").doc("Why the last attempt failed, when it did."))
        .field(timestamp("nextTry").indexed().doc("When the next attempt is due; empty once delivered or failed."))
        .field(timestamp("createdDate").indexed().required())
        .field(timestamp("deliveredDate"))
        .field(text("body").internal().long().doc("The event as delivered, before signing."))
        .field(integer("dueAt").internal().indexed().doc("nextTry in milliseconds, for claims."))
        .field(integer("claimedUntil").internal().doc("A sender's claim lasts until then (ms)."))
        .scope(EVERYONE, &[&[("webhookDelivery_webhook.fk_user", Own)]]),
        // No scope rule: admins only. Written by the fan-out alone.
        Resource::new(
            Res::EventProblem.name(),
            "event_problem",
            "An event the webhook fan-out could not build, because its record did not read: set aside with the reason, so that the events after it still flow. Admins only; read-only.",
        )
        .labelled("{eventType} · {eventId}")
        .field(text("eventId").indexed().short().doc("The event's id."))
        .field(text("eventType").indexed().short().domain(Domain::OneOf(&EVENT_TYPES)))
        .field(text("resource").indexed().short().doc("The resource of the record the event is about."))
        .field(id_field("recordId").indexed().doc("The record the event is about."))
        .field(text("reason").long().doc("Why the event could not be built: what failed to read."))
        .field(timestamp("eventDate").doc("When the change the event announces committed."))
        .field(timestamp("createdDate").indexed().required().doc("When the event was set aside.")),
        Resource::new(
            Res::Offer.name(),
            "offer",
            "What one store can sell of one variant now: how many, at what price. brandhub keeps one per (brand store, variant of its brand) from the stock, the prices and the brand store's rules, in the transaction of every write that changes them; read-only but for the host's SKU.",
        )
        // What a person reads first: the article and the store; the links come last.
        .labelled("{title} · {colour} · {size} · {barcode} @ {offer_store}")
        .kept_from(OFFER_SOURCES)
        .announces(OFFER_UPDATED, OFFER_UPDATED)
        .announces_removal(OFFER_DELETED)
        .field(text("barcode").indexed().short().doc("The variant's barcode."))
        .field(text("title").indexed().doc("The product's title."))
        .field(text("colour").indexed().doc("The variant's colour."))
        .field(text("size").indexed().short().doc("The variant's size."))
        .field(text("hostSku").indexed().short().doc("The host's own code for the variant in this store; unique within the store; empty when none."))
        .field(integer("available").indexed().domain(Domain::UNITS).doc("What the store may sell now: the warehouse's available units shaped by the brand store's rules."))
        .field(number("price").indexed().domain(Domain::MONEY).priced_in("currency").doc("The price in effect now, after the brand store's adjustment; unset when there is none."))
        .field(number("rrp").domain(Domain::MONEY).priced_in("currency").doc("The recommended retail price: the price record's, else the variant's; never adjusted."))
        .field(text("currency").short().doc("The store's currency."))
        .field(timestamp("priceStart").doc("When the price record in effect started; empty for the base price."))
        .field(timestamp("priceEnd").doc("When the price record in effect ends; empty for none."))
        .field(text("status").indexed().short().domain(Domain::OneOf(&OFFER_STATUSES)))
        .relation_fk(fk("fk_brandStore", "offer_brandStore"), "brandStore")
        .relation_fk(fk("fk_store", "offer_store"), "store")
        .relation_fk(fk("fk_variant", "offer_variant"), "variant")
        .relation_fk(fk("fk_product", "offer_product"), "product")
        .relation_fk(fk("fk_brand", "offer_brand").doc("The brand store's brand."), "brand")
        .index(&["fk_brandStore", "fk_variant"], true)
        .unique_exactly(&["fk_store", "hostSku"])
        .writable(&[], &[], &["hostSku"], false)
        .set_in_bulk("hostSku", OFFER_NAMED_BY)
        .scope(COMPANY, &[&[("offer_brand.fk_company", Companies)]])
        .scope(HOST, &[&[("offer_store.fk_host", Host)]])
        .writable_by(WRITE, HOST, &[&[("offer_store.fk_host", Host)]]),
    ]
}
