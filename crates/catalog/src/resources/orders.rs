//! Orders and their lines, with the fields a host's intake sets and the postal addresses an
//! order carries.

use super::events::{ORDER_CREATED, ORDER_UPDATED};
use super::{COMPANY, DISPATCH, HOST, OWNERS, WAREHOUSE, WAREHOUSE_CANNOT_SEE_MONEY};
use crate::handle::Res;
use crate::lifecycle::{ITEM_STATUSES, ORDER_STATUSES, REJECT_REASONS};
use crate::model::{
    Anchor::{Companies, Host, Warehouse},
    Domain, Resource, fk, integer, lengths, number, object, text, timestamp,
};

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

pub(super) fn order() -> Resource {
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
    .field(
        text("status")
            .indexed()
            .short()
            .domain(Domain::OneOf(&ORDER_STATUSES)),
    )
    .field(text("carrier").short())
    .field(text("trackingRef").indexed().short())
    .relation_fk(
        fk("fk_warehouse", "order_warehouse").optional(),
        "warehouse",
    )
    .field(object(
        "detail",
        vec![
            text("hostCarrier").short(),
            text("hostStatus").doc("Free text from the host system."),
            text("customerMessage").long(),
            number("net")
                .domain(Domain::SIGNED_MONEY)
                .priced_in("order_orderItem.currency")
                .hidden_from(WAREHOUSE_CANNOT_SEE_MONEY),
            number("gross")
                .domain(Domain::SIGNED_MONEY)
                .priced_in("order_orderItem.currency")
                .hidden_from(WAREHOUSE_CANNOT_SEE_MONEY),
            number("vat")
                .domain(Domain::SIGNED_MONEY)
                .priced_in("order_orderItem.currency")
                .hidden_from(WAREHOUSE_CANNOT_SEE_MONEY),
            number("shippingGross")
                .domain(Domain::SIGNED_MONEY)
                .priced_in("order_orderItem.currency")
                .hidden_from(WAREHOUSE_CANNOT_SEE_MONEY),
            number("shippingTax")
                .domain(Domain::SIGNED_MONEY)
                .priced_in("order_orderItem.currency")
                .hidden_from(WAREHOUSE_CANNOT_SEE_MONEY),
        ],
    ))
    .field(object("shipAddress", address_fields(true)))
    .field(object("billAddress", address_fields(false)))
    .has_many("order_orderItem", "orderItem", "fk_order")
    .scope(
        COMPANY,
        &[&[("order_brandStore.brandStore_brand.fk_company", Companies)]],
    )
    .scope(
        HOST,
        &[&[("order_brandStore.brandStore_store.fk_host", Host)]],
    )
    .scope(WAREHOUSE, &[&[("fk_warehouse", Warehouse)]])
    .writable_by(
        DISPATCH,
        OWNERS,
        &[&[("order_brandStore.brandStore_brand.fk_company", Companies)]],
    )
    .writable_by(DISPATCH, WAREHOUSE, &[&[("fk_warehouse", Warehouse)]])
    // One order per (brand store, hostOrderRef), however many pushes race (docs/API.md, "Orders: intake, lifecycle and stock").
    .index(&["fk_brandStore", "hostOrderRef"], true)
    // What a host's intake may set (docs/API.md, "Orders: intake, lifecycle and stock"); every later change is a lifecycle step.
    .writable(
        &ORDER_INTAKE,
        &["fk_brandStore", "hostOrderRef"],
        &[],
        false,
    )
    .moves_through(&crate::lifecycle::ORDER_LIFECYCLE)
    .template(&[
        "order_brandStore",
        "order_orderItem",
        "order_orderItem.orderItem_variant.barcode",
        "order_orderItem.orderItem_variant.colour",
        "order_orderItem.orderItem_variant.size",
        "order_orderItem.orderItem_variant.vatable",
        "order_orderItem.orderItem_variant.variant_product.title",
    ])
}

pub(super) fn order_item() -> Resource {
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
        .writable_by(DISPATCH, WAREHOUSE, &[&[("orderItem_order.fk_warehouse", Warehouse)]])
}
