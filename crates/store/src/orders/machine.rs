//! The order state machine: what one lifecycle step does to an order, its lines and the stock
//! they hold, decided from the catalog's transition table (`catalog::lifecycle`) without I/O.
//! Order PATCHes, dispatch arrays and orderDispatch file rows all come here, so one piece of
//! code decides what a dispatch (or any other step) does; the callers only load and write.

use crate::error::StoreError;
use brandhub_catalog::UserType;
use brandhub_catalog::lifecycle::{REJECT_REASONS, Step, Transition, step_to};
use brandhub_problem::{FieldError, Lang, Words, words};
pub use brandhub_query::lifecycle::{Ask, LineAsk};

/// One line of an order as the machine sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub id: String,
    pub variant: String,
    pub order_qty: i64,
    pub ship_qty: i64,
    pub return_qty: i64,
    pub status: String,
    pub reason: String,
    pub return_date: Option<String>,
}

/// An order as the machine sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    pub status: String,
    pub lines: Vec<Line>,
    pub carrier: String,
    pub tracking_ref: String,
    pub ship_date: Option<String>,
    pub sent_to_wh: Option<String>,
    pub delivery_date: Option<String>,
}

/// A change of stock of one variant in the order's warehouse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StockMove {
    pub in_stock: i64,
    pub demand: i64,
}

/// The result of a step: the order as it now is, and the stock moves, per variant.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub step: Step,
    pub order: Order,
    pub moves: Vec<(String, StockMove)>,
}

impl StockMove {
    /// The two moves one after the other, or `None` when a sum passes what a count holds
    /// (checked arithmetic: a move that cannot be added up is refused, never wrapped).
    pub fn plus(self, other: StockMove) -> Option<StockMove> {
        Some(StockMove {
            in_stock: self.in_stock.checked_add(other.in_stock)?,
            demand: self.demand.checked_add(other.demand)?,
        })
    }
}

/// The statuses of lines still to be shipped (their quantity is demand).
const OPEN: &str = "ACC";

/// The stock moves of a step, one per variant, added up with checked arithmetic.
#[derive(Debug, Default)]
struct Moves {
    list: Vec<(String, StockMove)>,
    /// A quantity or a sum passed what a count holds: the step is refused.
    overflowed: bool,
}

impl Moves {
    /// Adds a move of `variant`; `None` (a difference that did not fit) refuses the step.
    fn add(&mut self, variant: &str, in_stock: Option<i64>, demand: Option<i64>) {
        let (Some(in_stock), Some(demand)) = (in_stock, demand) else {
            self.overflowed = true;
            return;
        };
        if in_stock == 0 && demand == 0 {
            return;
        }
        let step = StockMove { in_stock, demand };
        match self.list.iter_mut().find(|(v, _)| v == variant) {
            Some((_, m)) => match m.plus(step) {
                Some(sum) => *m = sum,
                None => self.overflowed = true,
            },
            None => self.list.push((variant.to_string(), step)),
        }
    }
}

/// The problem of a step whose stock moves do not add up within what a count holds.
fn overflow_problem() -> FieldError {
    problem(
        "order_orderItem",
        words!(
            "the step moves more stock than a count can hold",
            "der Schritt bewegt mehr Bestand, als eine Zählung halten kann"
        ),
        None,
    )
}

/// The stock moves of an intake: each line's quantity becomes demand. Refused (422) when
/// they do not add up within what a count holds.
pub fn intake_moves(lines: &[(String, i64)]) -> Result<Vec<(String, StockMove)>, StoreError> {
    let mut moves = Moves::default();
    for (variant, qty) in lines {
        moves.add(variant, Some(0), Some(*qty));
    }
    if moves.overflowed {
        return Err(StoreError::invalid(vec![overflow_problem()]));
    }
    Ok(moves.list)
}

/// 409 `invalid_transition` naming the current and the asked status: by their codes in
/// English, as the API names them, and by the words the portal shows in German.
pub fn invalid_transition(current: &str, asked: &str, why: Words) -> StoreError {
    let why_de = why.in_lang(Lang::De).to_string();
    StoreError::Transition(Words::new(
        format!("An order in status '{current}' cannot become '{asked}'{why}."),
        format!(
            "Eine Bestellung im Status {} kann nicht in den Status {} wechseln{why_de}.",
            status_de(current),
            status_de(asked)
        ),
    ))
}

/// A status as a German reader knows it („Storniert“), from the catalog's words; the code
/// itself, quoted, when it has none (a status the caller made up).
fn status_de(code: &str) -> String {
    brandhub_catalog::words::code_word(code)
        .map_or_else(|| format!("'{code}'"), |word| format!("„{}“", word.de))
}

fn problem(field: &str, message: impl Into<Words>, index: Option<usize>) -> FieldError {
    FieldError {
        field: field.to_string(),
        message: message.into(),
        index,
    }
}

/// Decides the step `ask` on `order` for a user of `who` at time `now` (a record
/// timestamp): the order as it would be and the stock it moves, or the refusal (409
/// `invalid_transition`, 403 for a step the user type may not take, 422 listing every
/// problem of the lines with their position in `ask.lines`).
pub fn decide(order: &Order, ask: &Ask, who: UserType, now: &str) -> Result<Outcome, StoreError> {
    let Some(row) = step_to(&ask.status).filter(|t| t.step != Step::Intake) else {
        return Err(invalid_transition(
            &order.status,
            &ask.status,
            words!(
                " (the lifecycle has no step to that status)",
                " (der Ablauf hat keinen Schritt zu diesem Status)"
            ),
        ));
    };
    if !row.allowed_from(&order.status) {
        return Err(invalid_transition(
            &order.status,
            &ask.status,
            Words::new(
                format!(
                    " ({} is taken from {} only)",
                    row.step.as_str(),
                    row.from.join(", ")
                ),
                format!(
                    " ({} ist nur aus {} möglich)",
                    row.step.german(),
                    row.from
                        .iter()
                        .map(|code| status_de(code))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
        ));
    }
    if !row.allows(who) {
        return Err(StoreError::Refused(words!(
            "A {} user may not take the {} step of an order (see the order lifecycle in the API reference).",
            "Ein Benutzer vom Typ {} darf den Schritt {} einer Bestellung nicht ausführen (siehe den Bestellablauf in der API-Referenz).",
            who.as_str(),
            row.step.as_str()
        )));
    }
    let mut next = order.clone();
    let mut moves = Moves::default();
    let mut problems = Vec::new();
    // Each asked line is one of the order's, named once.
    let mut asked: Vec<Option<usize>> = Vec::with_capacity(ask.lines.len());
    for (i, line) in ask.lines.iter().enumerate() {
        let at = order
            .lines
            .iter()
            .position(|l| l.id.eq_ignore_ascii_case(&line.id));
        if at.is_none() {
            problems.push(problem(
                "order_orderItem.id",
                words!(
                    "'{}' is not a line of this order",
                    "'{}' ist keine Position dieser Bestellung",
                    line.id
                ),
                Some(i),
            ));
        } else if asked.contains(&at) {
            problems.push(problem(
                "order_orderItem.id",
                words!(
                    "names a line already named",
                    "nennt eine schon genannte Position"
                ),
                Some(i),
            ));
        }
        asked.push(at);
    }
    match row.step {
        Step::Acknowledge => {
            acknowledge(row, ask, &asked, &mut next, &mut moves, &mut problems);
            next.sent_to_wh = Some(now.into());
        }
        Step::Dispatch => dispatch(ask, &asked, &mut next, &mut moves, &mut problems, now),
        Step::Deliver => {
            refuse_lines(ask, &mut problems);
            next.delivery_date = Some(ask.delivery_date.clone().unwrap_or_else(|| now.into()));
            next.status = "delivered".into();
        }
        Step::Return => give_back(ask, &asked, &mut next, &mut moves, &mut problems, now),
        Step::Cancel => {
            refuse_lines(ask, &mut problems);
            for line in &mut next.lines {
                if line.status == OPEN {
                    let open = line.ship_qty.checked_sub(line.order_qty);
                    moves.add(&line.variant, Some(0), open);
                    line.status = "CAN".into();
                }
            }
            next.status = "cancelled".into();
        }
        Step::Intake => unreachable!("refused above"),
    }
    if moves.overflowed {
        problems.push(overflow_problem());
    }
    if !problems.is_empty() {
        problems.sort_by(|a, b| (a.index, &a.field).cmp(&(b.index, &b.field)));
        return Err(StoreError::invalid(problems));
    }
    Ok(Outcome {
        step: row.step,
        order: next,
        moves: moves.list,
    })
}

fn refuse_lines(ask: &Ask, problems: &mut Vec<FieldError>) {
    if !ask.lines.is_empty() {
        problems.push(problem(
            "order_orderItem",
            words!(
                "the step to '{}' takes no lines",
                "der Schritt zu '{}' nimmt keine Positionen",
                ask.status
            ),
            None,
        ));
    }
}

fn acknowledge(
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

fn dispatch(
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

fn give_back(
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

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: &str, qty: i64) -> Line {
        Line {
            id: id.into(),
            variant: format!("V{id}"),
            order_qty: qty,
            ship_qty: 0,
            return_qty: 0,
            status: "ACC".into(),
            reason: String::new(),
            return_date: None,
        }
    }

    fn order(status: &str) -> Order {
        Order {
            status: status.into(),
            lines: vec![line("A", 2), line("B", 3)],
            carrier: String::new(),
            tracking_ref: String::new(),
            ship_date: None,
            sent_to_wh: None,
            delivery_date: None,
        }
    }

    const NOW: &str = "2031-01-01T00:00:00";

    #[test]
    fn stock_moves_are_added_with_checked_arithmetic() {
        // Two lines of one variant whose quantities do not add up within a count.
        let huge = |id: &str| Line {
            variant: "V".into(),
            ..line(id, i64::MAX)
        };
        let order = Order {
            lines: vec![huge("A"), huge("B")],
            ..order("new")
        };
        let ask = Ask {
            status: "cancelled".into(),
            ..Ask::default()
        };
        match decide(&order, &ask, UserType::Host, NOW) {
            Err(StoreError::Invalid { problems, .. }) => {
                assert_eq!(problems[0].field, "order_orderItem");
                assert!(
                    problems[0]
                        .message
                        .contains("more stock than a count can hold")
                );
            }
            other => panic!("the step is refused, not {other:?}"),
        }
        assert!(intake_moves(&[("V".into(), i64::MAX), ("V".into(), 1)]).is_err());
        assert_eq!(
            intake_moves(&[("V".into(), 2), ("V".into(), 3)]).unwrap(),
            vec![(
                "V".into(),
                StockMove {
                    in_stock: 0,
                    demand: 5
                }
            )]
        );
        let most = StockMove {
            in_stock: i64::MAX,
            demand: 0,
        };
        assert_eq!(most.plus(StockMove::default()), Some(most));
        assert_eq!(
            most.plus(StockMove {
                in_stock: 1,
                demand: 0
            }),
            None
        );
    }

    #[test]
    fn a_partial_rejection_accepts_the_order_and_gives_the_demand_back() {
        let ask = Ask {
            status: "accepted".into(),
            lines: vec![LineAsk {
                id: "b".into(),
                status: Some("REJ".into()),
                reason: Some("OUT_OF_STOCK".into()),
                ..LineAsk::default()
            }],
            ..Ask::default()
        };
        let out = decide(&order("new"), &ask, UserType::Warehouse, NOW).unwrap();
        assert_eq!(out.order.status, "accepted");
        assert_eq!(out.order.lines[1].status, "REJ");
        assert_eq!(
            out.moves,
            vec![(
                "VB".into(),
                StockMove {
                    in_stock: 0,
                    demand: -3
                }
            )]
        );
    }

    #[test]
    fn refusals_name_what_is_wrong() {
        let ask = Ask {
            status: "dispatched".into(),
            ..Ask::default()
        };
        let error = decide(&order("new"), &ask, UserType::Warehouse, NOW).unwrap_err();
        let StoreError::Transition(detail) = error else {
            panic!("{error:?}")
        };
        assert!(detail.contains("'new'") && detail.contains("'dispatched'"));
        // German readers read the statuses and the step as the portal names them.
        assert_eq!(
            detail.in_lang(Lang::De),
            "Eine Bestellung im Status „Neu“ kann nicht in den Status „Versandt“ wechseln \
             (der Versand ist nur aus „Angenommen“, „Teilweise versandt“ möglich)."
        );
        let error = decide(&order("accepted"), &ask, UserType::Host, NOW).unwrap_err();
        assert!(matches!(error, StoreError::Refused(_)), "{error:?}");
        let too_many = Ask {
            status: "partDispatched".into(),
            lines: vec![
                LineAsk {
                    id: "A".into(),
                    ship_qty: Some(5),
                    ..LineAsk::default()
                },
                LineAsk {
                    id: "Z".into(),
                    ship_qty: Some(1),
                    ..LineAsk::default()
                },
            ],
            ..Ask::default()
        };
        let error = decide(&order("accepted"), &too_many, UserType::Company, NOW).unwrap_err();
        let StoreError::Invalid { problems, .. } = error else {
            panic!("{error:?}")
        };
        let at: Vec<_> = problems.iter().map(|e| e.index).collect();
        assert_eq!(at, vec![Some(0), Some(1)]);
    }

    #[test]
    fn dispatch_in_parts_then_in_full_moves_stock_out() {
        let part = Ask {
            status: "partDispatched".into(),
            lines: vec![LineAsk {
                id: "A".into(),
                ship_qty: Some(2),
                ..LineAsk::default()
            }],
            carrier: Some("DHL".into()),
            ..Ask::default()
        };
        let out = decide(&order("accepted"), &part, UserType::Warehouse, NOW).unwrap();
        assert_eq!(out.order.status, "partDispatched");
        assert_eq!(out.order.lines[0].status, "DSP");
        assert_eq!(out.order.ship_date.as_deref(), Some(NOW));
        assert_eq!(
            out.moves,
            vec![(
                "VA".into(),
                StockMove {
                    in_stock: -2,
                    demand: -2
                }
            )]
        );
        let full = Ask {
            status: "dispatched".into(),
            ..Ask::default()
        };
        let out = decide(&out.order, &full, UserType::Admin, NOW).unwrap();
        assert_eq!(out.order.status, "dispatched");
        assert_eq!(
            out.moves,
            vec![(
                "VB".into(),
                StockMove {
                    in_stock: -3,
                    demand: -3
                }
            )]
        );
        let back = Ask {
            status: "returned".into(),
            ..Ask::default()
        };
        let out = decide(&out.order, &back, UserType::Host, NOW).unwrap();
        assert_eq!(out.order.lines.iter().map(|l| l.return_qty).sum::<i64>(), 5);
        assert_eq!(out.moves.iter().map(|(_, m)| m.in_stock).sum::<i64>(), 5);
    }
}

#[cfg(test)]
mod model {
    //! Random sequences of actions by random user types against the machine, checked
    //! against an in-memory model of the stock: `demand` is always the unshipped quantity of
    //! accepted lines, `inStock` the start less what shipped plus what came back, and every
    //! step taken is one the lifecycle table allows to that user type.
    use super::*;
    use brandhub_catalog::lifecycle::TRANSITIONS;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[derive(Debug, Clone)]
    enum Act {
        Acknowledge {
            reject: Vec<bool>,
            all: bool,
        },
        Dispatch {
            line: usize,
            qty: i64,
            complete: bool,
        },
        Deliver,
        Return {
            line: usize,
            qty: i64,
        },
        Cancel,
        Ask(&'static str),
    }

    fn act() -> impl Strategy<Value = Act> {
        prop_oneof![
            (proptest::collection::vec(any::<bool>(), 3), any::<bool>())
                .prop_map(|(reject, all)| Act::Acknowledge { reject, all }),
            (0usize..4, 0i64..5, any::<bool>()).prop_map(|(line, qty, complete)| Act::Dispatch {
                line,
                qty,
                complete
            }),
            Just(Act::Deliver),
            (0usize..4, 0i64..5).prop_map(|(line, qty)| Act::Return { line, qty }),
            Just(Act::Cancel),
            prop::sample::select(vec!["new", "accepted", "dispatched", "bogus", "returned"])
                .prop_map(Act::Ask),
        ]
    }

    fn who() -> impl Strategy<Value = UserType> {
        prop::sample::select(UserType::ALL.to_vec())
    }

    fn ask_of(act: &Act, order: &Order) -> Ask {
        let id = |i: usize| order.lines.get(i).map_or("X".to_string(), |l| l.id.clone());
        match act {
            Act::Acknowledge { reject, all } => Ask {
                status: if *all { "rejected" } else { "accepted" }.into(),
                lines: reject
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| **r)
                    .map(|(i, _)| LineAsk {
                        id: id(i),
                        status: Some("REJ".into()),
                        reason: Some("OTHER".into()),
                        ..LineAsk::default()
                    })
                    .collect(),
                ..Ask::default()
            },
            Act::Dispatch {
                line,
                qty,
                complete,
            } => Ask {
                status: if *complete {
                    "dispatched"
                } else {
                    "partDispatched"
                }
                .into(),
                lines: vec![LineAsk {
                    id: id(*line),
                    ship_qty: Some(*qty),
                    ..LineAsk::default()
                }],
                ..Ask::default()
            },
            Act::Deliver => Ask {
                status: "delivered".into(),
                ..Ask::default()
            },
            Act::Return { line, qty } => Ask {
                status: "returned".into(),
                lines: vec![LineAsk {
                    id: id(*line),
                    return_qty: Some(*qty),
                    ..LineAsk::default()
                }],
                ..Ask::default()
            },
            Act::Cancel => Ask {
                status: "cancelled".into(),
                ..Ask::default()
            },
            Act::Ask(status) => Ask {
                status: (*status).into(),
                ..Ask::default()
            },
        }
    }

    proptest! {
        #[test]
        fn stock_always_equals_the_model(
            qtys in proptest::collection::vec(1i64..4, 1..4),
            acts in proptest::collection::vec((act(), who()), 0..25),
        ) {
            let mut order = Order {
                status: "new".into(),
                lines: qtys.iter().enumerate().map(|(i, q)| Line {
                    id: format!("L{i}"),
                    variant: format!("V{}", i % 2),
                    order_qty: *q,
                    ship_qty: 0,
                    return_qty: 0,
                    status: "ACC".into(),
                    reason: String::new(),
                    return_date: None,
                }).collect(),
                carrier: String::new(),
                tracking_ref: String::new(),
                ship_date: None,
                sent_to_wh: None,
                delivery_date: None,
            };
            let start = 100;
            let mut stock: HashMap<String, StockMove> = HashMap::new();
            let intake: Vec<(String, i64)> = order.lines.iter().map(|l| (l.variant.clone(), l.order_qty)).collect();
            for (variant, m) in intake_moves(&intake).unwrap() {
                let s = stock.entry(variant).or_default();
                s.demand += m.demand;
            }
            for (act, who) in acts {
                let ask = ask_of(&act, &order);
                match decide(&order, &ask, who, "2031-01-01T00:00:00") {
                    Ok(outcome) => {
                        let allowed = TRANSITIONS.iter().any(|t| t.step == outcome.step
                            && t.from.contains(&order.status.as_str())
                            && t.to.contains(&outcome.order.status.as_str())
                            && t.allows(who));
                        prop_assert!(allowed, "{} -> {} by {:?}", order.status, outcome.order.status, who);
                        for (variant, m) in &outcome.moves {
                            let s = stock.entry(variant.clone()).or_default();
                            s.in_stock += m.in_stock;
                            s.demand += m.demand;
                        }
                        order = outcome.order;
                    }
                    Err(error) => { let expected = matches!(error, StoreError::Transition(_) | StoreError::Refused(_) | StoreError::Invalid { .. }); prop_assert!(expected, "{:?}", error) }
                }
                for variant in ["V0", "V1"] {
                    let lines = order.lines.iter().filter(|l| l.variant == variant);
                    let open: i64 = lines.clone().filter(|l| l.status == "ACC").map(|l| l.order_qty - l.ship_qty).sum();
                    let moved: i64 = lines.clone().map(|l| l.return_qty - l.ship_qty).sum();
                    let s = stock.get(variant).copied().unwrap_or_default();
                    prop_assert_eq!(s.demand, open, "demand of {}", variant);
                    prop_assert_eq!(start + s.in_stock, start + moved, "inStock of {}", variant);
                    for l in order.lines.iter() {
                        prop_assert!(l.ship_qty <= l.order_qty && l.return_qty <= l.ship_qty);
                    }
                }
            }
        }
    }
}
