//! Orders and their items. Orders are generated first with a compact plan of their items (so
//! the order's totals can be the sum of its lines), then the items from the plans.

use brandhub_catalog::{ADDRESS_PARTS, Cell};

use crate::emit::{Emitter, Table, money};
use crate::ids::Id;
use crate::names::{self, Country};
use crate::people::{self, Address};
use crate::random::{below, between, digits, letters, percent, pick, weighted};
use crate::time::{self, DAY, HOUR, START};
use crate::{DemoRng, Stream, World};

/// 2026-10-01T00:00:00Z: orders are placed before it, so every later date (dispatch,
/// delivery, return) stays inside the demo period.
const LAST_ORDER: i64 = 1_790_812_800;

/// The life of an order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    New,
    Accepted,
    PartDispatched,
    Dispatched,
    Cancelled,
    Returned,
}

impl Status {
    /// The stored `status`.
    fn as_str(self) -> &'static str {
        match self {
            Status::New => "new",
            Status::Accepted => "accepted",
            Status::PartDispatched => "partDispatched",
            Status::Dispatched => "dispatched",
            Status::Cancelled => "cancelled",
            Status::Returned => "returned",
        }
    }

    /// What the host system says about such an order, in its own words.
    fn host_texts(self) -> &'static [&'static str] {
        match self {
            Status::New => &["Awaiting acceptance", "Payment authorised", "Neu"],
            Status::Accepted => &["Sent to warehouse", "In fulfilment", "En préparation"],
            Status::PartDispatched => &["Partially shipped", "Teilweise versandt"],
            Status::Dispatched => &["Shipped", "Expédiée", "Skickad – spårning skickad"],
            Status::Cancelled => &["Cancelled by customer", "Payment failed", "Annulée"],
            Status::Returned => &["Returned", "Refund issued", "Retour reçu"],
        }
    }
}

/// One planned line of an order.
pub(crate) struct ItemPlan {
    variant: u32,
    qty: u8,
    shipped: u8,
    returned: u8,
    gift: bool,
    /// Unit price including VAT, in hundredths of the store's currency.
    unit: u32,
}

/// What the item phase needs of an order.
pub(crate) struct OrderPlan {
    id: Id,
    status: Status,
    /// Index into `World::brand_stores`.
    brand_store: u32,
    /// The number in the host order reference.
    host_number: u32,
    delivered: Option<i64>,
    items: Vec<ItemPlan>,
}

/// The plans of all orders, handed from the order phase to the item phase.
pub(crate) struct Plans {
    orders: Vec<OrderPlan>,
}

/// GBP pence converted to a store currency (rounded to tens of the minor unit, so `45.95`
/// pounds become `52.80` euros); pounds stay as they are.
fn convert(pence: i64, currency: &str) -> i64 {
    let rate = match currency {
        "EUR" => 115,
        "USD" => 125,
        "SEK" => 1_200,
        _ => return pence,
    };
    (pence * rate / 100 + 5) / 10 * 10
}

/// (net, tax, gross) of a gross amount at a VAT rate, in minor units.
fn split_vat(gross: i64, rate_percent: i64) -> (i64, i64, i64) {
    let net = (gross * 200 + (100 + rate_percent)) / (2 * (100 + rate_percent));
    (net, gross - net, gross)
}

/// The VAT rate of a line: the store country's rate for vatable variants, none otherwise.
fn line_rate(world: &World, country: &Country, variant: u32) -> i64 {
    let product = &world.products[world.variants[variant as usize].product as usize];
    if product.vatable {
        country.vat_percent
    } else {
        0
    }
}

/// A tracking number in the carrier's format.
fn tracking(rng: &mut DemoRng, carrier: &str) -> String {
    match carrier {
        "Royal Mail" => format!("RM{}GB", digits(rng, 9)),
        "DHL Express" => format!("JD{}", digits(rng, 18)),
        "DPD" => format!("15{}", digits(rng, 12)),
        "UPS" => format!("1Z{}{}", letters(rng, 6), digits(rng, 10)),
        "PostNord" => format!("PN{}SE", digits(rng, 9)),
        _ => format!("6A{}", digits(rng, 11)),
    }
}

/// The status of an order placed at the moment: recent orders are mostly still open.
fn status_for(rng: &mut DemoRng, ordered: i64) -> Status {
    use Status::*;
    if ordered > LAST_ORDER - 7 * DAY {
        weighted(
            rng,
            &[
                (New, 35),
                (Accepted, 30),
                (PartDispatched, 10),
                (Dispatched, 20),
                (Cancelled, 5),
            ],
        )
    } else {
        weighted(
            rng,
            &[
                (New, 2),
                (Accepted, 3),
                (PartDispatched, 5),
                (Dispatched, 65),
                (Cancelled, 10),
                (Returned, 15),
            ],
        )
    }
}

/// Plans the lines of an order: distinct variants of the brand, quantities shipped and
/// returned as the status says.
fn plan_items(
    world: &World,
    rng: &mut DemoRng,
    brand: usize,
    currency: &str,
    status: Status,
) -> Vec<ItemPlan> {
    let range = world.brands[brand].variants.clone();
    let wanted = weighted(rng, &[(1, 20), (2, 30), (3, 30), (4, 20)]).min(range.len());
    let mut items: Vec<ItemPlan> = Vec::with_capacity(wanted);
    while items.len() < wanted {
        let v = (range.start + below(rng, range.len())) as u32;
        if items.iter().any(|i| i.variant == v) {
            continue;
        }
        let qty = weighted(rng, &[(1, 70), (2, 22), (3, 8)]);
        let pence = i64::from(world.variants[v as usize].price);
        items.push(ItemPlan {
            variant: v,
            qty,
            shipped: 0,
            returned: 0,
            gift: percent(rng, 5),
            unit: convert(pence, currency) as u32,
        });
    }
    match status {
        Status::New | Status::Accepted | Status::Cancelled => {}
        Status::Dispatched => items.iter_mut().for_each(|i| i.shipped = i.qty),
        Status::Returned => {
            for item in &mut items {
                item.shipped = item.qty;
                item.returned = between(rng, 1, i64::from(item.qty)) as u8;
            }
        }
        Status::PartDispatched => {
            if items.len() == 1 {
                let item = &mut items[0];
                item.qty = item.qty.max(2);
                item.shipped = item.qty - 1;
            } else {
                let shipped = between(rng, 1, items.len() as i64 - 1) as usize;
                for item in &mut items[..shipped] {
                    item.shipped = item.qty;
                }
            }
        }
    }
    items
}

/// The item status of a line of an order in the given status.
fn item_status(status: Status, item: &ItemPlan) -> &'static str {
    match status {
        Status::New | Status::Accepted => "ACC",
        Status::PartDispatched if item.shipped < item.qty => "ACC",
        Status::PartDispatched | Status::Dispatched => "DSP",
        Status::Cancelled => "CAN",
        Status::Returned => "RET",
    }
}

/// Writes an address into the cells of `shipAddress` or `billAddress`, one per part of
/// [`ADDRESS_PARTS`] in its order.
fn set_address(r: &mut brandhub_catalog::Record, cells: &[usize; 13], a: &Address) {
    for (cell, part) in cells.iter().zip(ADDRESS_PARTS) {
        let value: &str = match part {
            "title" => a.title,
            "forename" => a.forename,
            "surname" => a.surname,
            "company" => a.company,
            "line1" => &a.line1,
            "line2" => a.line2,
            "town" => a.town,
            "county" => a.county,
            "country" => a.country.name,
            "postcode" => &a.postcode,
            "countryCode" => a.country.code,
            "phone" => &a.phone,
            "email" => &a.email,
            other => unreachable!("an address has no part {other}"),
        };
        r.cells[*cell] = value.into();
    }
}

/// One order per five variants, spread over the period in order (so order references and
/// dates rise together), each on a brand store whose brand has variants.
pub(crate) fn orders(world: &mut World, out: &mut Emitter) -> Plans {
    let mut rng = world.rng(Stream::Orders);
    let t = Table::new("order");
    let [
        fk_brand_store,
        brand_ref,
        host_ref,
        cust_ref,
        order_date,
        ship_date,
        sent_to_wh,
        delivery_date,
        status_cell,
        carrier_cell,
        tracking_ref,
        fk_warehouse,
        host_carrier,
        host_status,
        message,
        net,
        gross,
        vat,
        shipping_gross,
        shipping_tax,
        ship_id,
    ] = t.cells([
        "fk_brandStore",
        "brandOrderRef",
        "hostOrderRef",
        "hostCustOrderRef",
        "orderDate",
        "shipDate",
        "sentToWH",
        "deliveryDate",
        "status",
        "carrier",
        "trackingRef",
        "fk_warehouse",
        "detail.hostCarrier",
        "detail.hostStatus",
        "detail.customerMessage",
        "detail.net",
        "detail.gross",
        "detail.vat",
        "detail.shippingGross",
        "detail.shippingTax",
        "shipAddress.id",
    ]);
    let ship_cells = t.cells_under("shipAddress", ADDRESS_PARTS);
    let bill_cells = t.cells_under("billAddress", ADDRESS_PARTS);
    let eligible: Vec<usize> = (0..world.brand_stores.len())
        .filter(|bs| {
            !world.brands[world.brand_stores[*bs].brand]
                .variants
                .is_empty()
        })
        .collect();
    let count = if eligible.is_empty() {
        0
    } else {
        world.sizes.variants / 5
    };
    let mut host_numbers = vec![100_000u32; world.hosts.len()];
    let mut plans = Vec::with_capacity(count);
    let span = LAST_ORDER - START;
    for i in 0..count {
        let bs = eligible[below(&mut rng, eligible.len())];
        let brand_store = &world.brand_stores[bs];
        let store = &world.stores[brand_store.store];
        let host = store.host;
        host_numbers[host] += 1;
        let slot_start = START + (i as i64 * span) / count as i64;
        let slot_end = START + ((i as i64 + 1) * span) / count as i64;
        let ordered = between(&mut rng, slot_start, (slot_end - 1).max(slot_start));
        let status = status_for(&mut rng, ordered);
        let items = plan_items(world, &mut rng, brand_store.brand, store.currency, status);

        let id = world.ids.next();
        let mut r = t.record(id);
        r.cells[fk_brand_store] = brand_store.id.cell();
        r.cells[brand_ref] = format!("BO-{:07}", i + 1).into();
        r.cells[host_ref] = format!("{}-{}", world.hosts[host].code, host_numbers[host]).into();
        r.cells[cust_ref] = format!("C{}", digits(&mut rng, 8)).into();
        r.cells[order_date] = time::timestamp(ordered).into();
        r.cells[status_cell] = status.as_str().into();
        r.cells[fk_warehouse] = brand_store.warehouse.cell();

        let in_warehouse = !matches!(status, Status::New | Status::Cancelled);
        let shipped = matches!(
            status,
            Status::PartDispatched | Status::Dispatched | Status::Returned
        );
        let delivered = matches!(status, Status::Dispatched | Status::Returned);
        let sent = ordered + between(&mut rng, 600, 6 * HOUR);
        let ship = sent + between(&mut rng, 2 * HOUR, 3 * DAY);
        let arrival = ship + between(&mut rng, DAY, 5 * DAY);
        if in_warehouse {
            r.cells[sent_to_wh] = time::timestamp(sent).into();
        }
        if shipped {
            r.cells[ship_date] = time::timestamp(ship).into();
            let (carrier, _) = *pick(&mut rng, names::CARRIERS);
            r.cells[carrier_cell] = carrier.into();
            r.cells[tracking_ref] = tracking(&mut rng, carrier).into();
        }
        if delivered {
            r.cells[delivery_date] = time::timestamp(arrival).into();
        }
        r.cells[host_carrier] = (*pick(&mut rng, names::HOST_CARRIERS)).into();
        r.cells[host_status] = (*pick(&mut rng, status.host_texts())).into();
        if percent(&mut rng, 12) {
            r.cells[message] = (*pick(&mut rng, names::CUSTOMER_MESSAGES)).into();
        }

        let country = store.country;
        let (mut total_gross, mut total_tax) = (0, 0);
        for item in &items {
            let rate = line_rate(world, country, item.variant);
            let (_, tax, line_gross) = split_vat(i64::from(item.unit) * i64::from(item.qty), rate);
            total_gross += line_gross;
            total_tax += tax;
        }
        let shipping = if percent(&mut rng, 40) {
            0
        } else {
            convert(*pick(&mut rng, &[395, 495, 595]), store.currency)
        };
        let (_, shipping_vat, _) = split_vat(shipping, country.vat_percent);
        total_gross += shipping;
        total_tax += shipping_vat;
        r.cells[net] = money(total_gross - total_tax);
        r.cells[gross] = money(total_gross);
        r.cells[vat] = money(total_tax);
        r.cells[shipping_gross] = money(shipping);
        r.cells[shipping_tax] = money(shipping_vat);

        let person = people::customer(&mut rng, country);
        r.cells[ship_id] = Cell::Integer(between(&mut rng, 1_000_000, 9_999_999));
        set_address(&mut r, &ship_cells, &person);
        let billing = if percent(&mut rng, 20) {
            people::moved(&mut rng, &person)
        } else {
            person
        };
        set_address(&mut r, &bill_cells, &billing);
        out.push(&t, r);

        plans.push(OrderPlan {
            id,
            status,
            brand_store: bs as u32,
            host_number: host_numbers[host],
            delivered: delivered.then_some(arrival),
            items,
        });
    }
    Plans { orders: plans }
}

/// The quantity of each variant (by index) that open orders still have to ship: the
/// accepted lines' unshipped units of new, accepted and part-dispatched orders. Every order
/// ships from its brand's company warehouse, which holds the variant's one stock record.
pub(crate) fn open_demand(world: &World, plans: &Plans) -> Vec<i64> {
    let mut open = vec![0i64; world.variants.len()];
    for order in &plans.orders {
        if !matches!(
            order.status,
            Status::New | Status::Accepted | Status::PartDispatched
        ) {
            continue;
        }
        for item in &order.items {
            if item_status(order.status, item) == "ACC" {
                open[item.variant as usize] += i64::from(item.qty) - i64::from(item.shipped);
            }
        }
    }
    open
}

/// The lines of every order, as planned.
pub(crate) fn order_items(world: &mut World, plans: &Plans, out: &mut Emitter) {
    let mut rng = world.rng(Stream::OrderItems);
    let t = Table::new("orderItem");
    let [
        fk_order,
        fk_variant,
        order_qty,
        item_price,
        line_net,
        line_tax,
        line_gross,
        currency,
        ship_qty,
        return_qty,
        gift,
        status,
        host_item_ref,
        return_date,
    ] = t.cells([
        "fk_order",
        "fk_variant",
        "orderQty",
        "itemPrice",
        "lineNet",
        "lineTax",
        "lineGross",
        "currency",
        "shipQty",
        "returnQty",
        "detail.gift",
        "status",
        "hostItemRef",
        "returnDate",
    ]);
    for order in &plans.orders {
        let brand_store = &world.brand_stores[order.brand_store as usize];
        let store = &world.stores[brand_store.store];
        let host_code = &world.hosts[store.host].code;
        for (line, item) in order.items.iter().enumerate() {
            let rate = line_rate(world, store.country, item.variant);
            let (item_net, item_tax, item_gross) =
                split_vat(i64::from(item.unit) * i64::from(item.qty), rate);
            let id = world.ids.next();
            let mut r = t.record(id);
            r.cells[fk_order] = order.id.cell();
            r.cells[fk_variant] = world.variants[item.variant as usize].id.cell();
            r.cells[order_qty] = Cell::Integer(i64::from(item.qty));
            r.cells[item_price] = money(i64::from(item.unit));
            r.cells[line_net] = money(item_net);
            r.cells[line_tax] = money(item_tax);
            r.cells[line_gross] = money(item_gross);
            r.cells[currency] = store.currency.into();
            r.cells[ship_qty] = Cell::Integer(i64::from(item.shipped));
            r.cells[return_qty] = Cell::Integer(i64::from(item.returned));
            r.cells[gift] = if item.gift { "Y" } else { "N" }.into();
            r.cells[status] = item_status(order.status, item).into();
            r.cells[host_item_ref] =
                format!("{host_code}-{}-{}", order.host_number, line + 1).into();
            if item.returned > 0 {
                let delivered = order.delivered.expect("returned orders were delivered");
                r.cells[return_date] =
                    time::timestamp(delivered + between(&mut rng, 2 * DAY, 20 * DAY)).into();
            }
            out.push(&t, r);
        }
    }
}
