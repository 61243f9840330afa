//! The steps that take lines: an acknowledgement accepts or rejects them, a dispatch ships
//! them and a return takes them back. Each changes the order as it would be and adds its
//! stock moves and the problems of the lines it was given, for [`super::decide`] to judge.

use super::{Moves, OPEN, Order, problem};
use brandhub_catalog::lifecycle::{REJECT_REASONS, Transition};
use brandhub_problem::{FieldError, words};
use brandhub_query::lifecycle::Ask;

pub(super) fn acknowledge(
    row: &Transition,
    ask: &Ask,
    asked: &[Option<usize>],
    next: &mut Order,
    moves: &mut Moves,
    problems: &mut Vec<FieldError>,
) {
    let reject_all = ask.status == "rejected";
    for (i, line) in ask.lines.iter().enumerate() {
        let Some(at) = asked[i] else { continue };
        let status = line
            .status
            .as_deref()
            .unwrap_or(if reject_all { "REJ" } else { "ACC" });
        match status {
            "ACC" => {
                if line.reason.as_deref().is_some_and(|r| !r.is_empty()) {
                    problems.push(problem(
                        "order_orderItem.detail.reason",
                        words!(
                            "is given only for a rejected line",
                            "wird nur für eine abgelehnte Position angegeben"
                        ),
                        Some(i),
                    ));
                }
            }
            "REJ" => {
                let reason = line.reason.clone().unwrap_or_else(|| "OTHER".into());
                if !REJECT_REASONS.contains(&reason.as_str()) {
                    problems.push(problem(
                        "order_orderItem.detail.reason",
                        words!(
                            "must be one of {}",
                            "muss einer der Werte {} sein",
                            REJECT_REASONS.join(", ")
                        ),
                        Some(i),
                    ));
                }
                next.lines[at].status = "REJ".into();
                next.lines[at].reason = reason;
            }
            other => problems.push(problem(
                "order_orderItem.status",
                words!(
                    "'{other}' is not an acknowledgement: ACC or REJ",
                    "'{other}' ist keine Bestätigung: ACC oder REJ"
                ),
                Some(i),
            )),
        }
        if line.ship_qty.is_some() || line.return_qty.is_some() {
            problems.push(problem(
                "order_orderItem",
                words!(
                    "an acknowledgement ships and returns nothing",
                    "eine Bestätigung versendet und retourniert nichts"
                ),
                Some(i),
            ));
        }
    }
    if reject_all {
        for (at, line) in next.lines.iter_mut().enumerate() {
            if !asked.contains(&Some(at)) {
                line.status = "REJ".into();
                line.reason = "OTHER".into();
            }
        }
    }
    for line in &next.lines {
        if line.status == "REJ" {
            moves.add(&line.variant, Some(0), line.order_qty.checked_neg());
        }
    }
    let all_rejected = next.lines.iter().all(|l| l.status == "REJ");
    let became = if all_rejected { "rejected" } else { "accepted" };
    if became != ask.status {
        problems.push(problem(
            "status",
            words!(
                "the lines make the order '{became}', not '{}' ({})",
                "die Positionen machen die Bestellung zu '{became}', nicht '{}' ({})",
                ask.status,
                row.effect
            ),
            None,
        ));
    }
    next.status = became.into();
}

pub(super) fn dispatch(
    ask: &Ask,
    asked: &[Option<usize>],
    next: &mut Order,
    moves: &mut Moves,
    problems: &mut Vec<FieldError>,
    now: &str,
) {
    let mut shipped_now = 0;
    for (i, line) in ask.lines.iter().enumerate() {
        let Some(at) = asked[i] else { continue };
        let current = &next.lines[at];
        let Some(qty) = line.ship_qty else {
            problems.push(problem(
                "order_orderItem.shipQty",
                brandhub_problem::required_message(),
                Some(i),
            ));
            continue;
        };
        if current.status != OPEN && !(current.status == "DSP" && qty == current.ship_qty) {
            problems.push(problem(
                "order_orderItem.status",
                words!(
                    "the line is {}, not accepted (ACC): it cannot be shipped",
                    "die Position ist {}, nicht angenommen (ACC): sie kann nicht versendet werden",
                    current.status
                ),
                Some(i),
            ));
            continue;
        }
        if qty > current.order_qty {
            problems.push(problem(
                "order_orderItem.shipQty",
                words!(
                    "{qty} is more than the {} ordered",
                    "{qty} ist mehr als die bestellten {}",
                    current.order_qty
                ),
                Some(i),
            ));
            continue;
        }
        if qty < current.ship_qty {
            problems.push(problem(
                "order_orderItem.shipQty",
                words!(
                    "{qty} is less than the {} shipped already (shipQty is the total shipped)", "{qty} ist weniger als die schon versendeten {} (shipQty ist die versendete Gesamtmenge)",
                    current.ship_qty
                ),
                Some(i),
            ));
            continue;
        }
        if line.status.is_some() || line.reason.is_some() || line.return_qty.is_some() {
            problems.push(problem(
                "order_orderItem",
                words!(
                    "a dispatch sets shipQty only",
                    "ein Versand setzt nur shipQty"
                ),
                Some(i),
            ));
            continue;
        }
        shipped_now += qty - current.ship_qty;
        ship(next, at, qty, moves);
    }
    if ask.status == "dispatched" {
        // Asking for `dispatched` ships every accepted line not named in full.
        for at in 0..next.lines.len() {
            if next.lines[at].status == OPEN && !asked.contains(&Some(at)) {
                let qty = next.lines[at].order_qty;
                shipped_now =
                    shipped_now.saturating_add(qty.saturating_sub(next.lines[at].ship_qty));
                ship(next, at, qty, moves);
            }
        }
    }
    let shippable = || {
        next.lines
            .iter()
            .filter(|l| l.status == OPEN || l.status == "DSP")
    };
    let complete = shippable().all(|l| l.ship_qty >= l.order_qty);
    let any = shippable().any(|l| l.ship_qty > 0);
    if ask.status == "dispatched" && !complete && problems.is_empty() {
        problems.push(problem(
            "status",
            words!(
                "not every accepted line is shipped in full",
                "nicht jede angenommene Position ist vollständig versendet"
            ),
            None,
        ));
    }
    if !any && problems.is_empty() {
        problems.push(problem(
            "order_orderItem",
            words!("the dispatch ships nothing", "der Versand versendet nichts"),
            None,
        ));
    }
    if let Some(carrier) = &ask.carrier {
        next.carrier = carrier.clone();
    }
    if let Some(tracking) = &ask.tracking_ref {
        next.tracking_ref = tracking.clone();
    }
    match &ask.ship_date {
        Some(date) => next.ship_date = Some(date.clone()),
        None if shipped_now > 0 && next.ship_date.is_none() => next.ship_date = Some(now.into()),
        None => {}
    }
    next.status = if complete {
        "dispatched"
    } else {
        "partDispatched"
    }
    .into();
}

/// Sets line `at`'s total shipped to `qty`, moving the difference out of stock and demand.
fn ship(next: &mut Order, at: usize, qty: i64, moves: &mut Moves) {
    let line = &mut next.lines[at];
    let out = line.ship_qty.checked_sub(qty);
    moves.add(&line.variant, out, out);
    line.ship_qty = qty;
    if qty >= line.order_qty {
        line.status = "DSP".into();
    }
}

pub(super) fn give_back(
    ask: &Ask,
    asked: &[Option<usize>],
    next: &mut Order,
    moves: &mut Moves,
    problems: &mut Vec<FieldError>,
    now: &str,
) {
    let date = ask.return_date.clone().unwrap_or_else(|| now.into());
    let mut targets: Vec<(usize, i64, Option<usize>)> = Vec::new();
    if ask.lines.is_empty() {
        // Everything shipped comes back.
        for (at, line) in next.lines.iter().enumerate() {
            if line.ship_qty > line.return_qty {
                targets.push((at, line.ship_qty, None));
            }
        }
    }
    for (i, line) in ask.lines.iter().enumerate() {
        let Some(at) = asked[i] else { continue };
        let current = &next.lines[at];
        let Some(qty) = line.return_qty else {
            problems.push(problem(
                "order_orderItem.returnQty",
                brandhub_problem::required_message(),
                Some(i),
            ));
            continue;
        };
        if qty > current.ship_qty {
            problems.push(problem(
                "order_orderItem.returnQty",
                words!(
                    "{qty} is more than the {} shipped",
                    "{qty} ist mehr als die versendeten {}",
                    current.ship_qty
                ),
                Some(i),
            ));
        } else if qty < current.return_qty {
            problems.push(problem(
                "order_orderItem.returnQty",
                words!(
                    "{qty} is less than the {} returned already (returnQty is the total returned)", "{qty} ist weniger als die schon retournierten {} (returnQty ist die retournierte Gesamtmenge)",
                    current.return_qty
                ),
                Some(i),
            ));
        } else if line.status.is_some() || line.ship_qty.is_some() || line.reason.is_some() {
            problems.push(problem(
                "order_orderItem",
                words!(
                    "a return sets returnQty only",
                    "eine Retoure setzt nur returnQty"
                ),
                Some(i),
            ));
        } else {
            targets.push((at, qty, Some(i)));
        }
    }
    let mut returned = 0;
    for (at, qty, _) in targets {
        let line = &mut next.lines[at];
        let delta = qty.checked_sub(line.return_qty);
        if delta == Some(0) {
            continue;
        }
        returned += 1;
        moves.add(&line.variant, delta, Some(0));
        line.return_qty = qty;
        line.status = "RET".into();
        line.return_date = Some(date.clone());
    }
    if returned == 0 && problems.is_empty() {
        problems.push(problem(
            "order_orderItem",
            words!(
                "the return gives nothing back",
                "die Retoure gibt nichts zurück"
            ),
            None,
        ));
    }
    next.status = "returned".into();
}
