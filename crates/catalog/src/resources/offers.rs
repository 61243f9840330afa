//! Offers: the words of a brand store's stock rules and price adjustment and of an offer's
//! status, with the declaration of `offer`, kept from the resources it is made of.

use super::events::{OFFER_DELETED, OFFER_UPDATED};
use super::{COMPANY, HOST, WRITE};
use crate::handle::Res;
use crate::model::{
    Anchor::{Companies, Host},
    Domain, Resource, fk, integer, number, text, timestamp,
};

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

pub(super) fn offer() -> Resource {
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
    .writable_by(WRITE, HOST, &[&[("offer_store.fk_host", Host)]])
}
