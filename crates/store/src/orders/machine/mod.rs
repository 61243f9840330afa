//! The order state machine: what one lifecycle step does to an order, its lines and the stock
//! they hold, decided from the catalog's transition table (`catalog::lifecycle`) without I/O.
//! Order PATCHes, dispatch arrays and orderDispatch file rows all come here, so one piece of
//! code decides what a dispatch (or any other step) does; the callers only load and write.

#[cfg(test)]
mod model;
mod steps;
#[cfg(test)]
mod tests;

use crate::error::StoreError;
use brandhub_catalog::UserType;
use brandhub_catalog::lifecycle::{Step, step_to};
use brandhub_problem::{FieldError, Lang, Words, words};
pub use brandhub_query::lifecycle::{Ask, LineAsk};
use steps::{acknowledge, dispatch, give_back};

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
