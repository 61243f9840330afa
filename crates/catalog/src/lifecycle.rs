//! The order lifecycle (docs/API.md, "Orders: intake, lifecycle and stock"), declared once: the statuses an order and its lines go
//! through, and the table of transitions with the user types that may take each. The order
//! engine (`store::orders`) decides every action from this table, whether it comes from an
//! order PATCH, a dispatch array or a row of an orderDispatch file; the docs print it.

use crate::model::UserType;

/// A kind of step in an order's life; each has one row in [`TRANSITIONS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    /// A host pushes a new order.
    Intake,
    /// The warehouse (or brand) accepts or rejects each line.
    Acknowledge,
    /// Some or all accepted quantities leave the warehouse.
    Dispatch,
    /// The parcel arrived.
    Deliver,
    /// Shipped items came back.
    Return,
    /// The order is called off before anything shipped.
    Cancel,
}

impl Step {
    /// The word the docs and messages use.
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Intake => "intake",
            Step::Acknowledge => "acknowledgement",
            Step::Dispatch => "dispatch",
            Step::Deliver => "delivery",
            Step::Return => "return",
            Step::Cancel => "cancellation",
        }
    }

    /// The step as German readers of a refusal read it, with its article.
    pub fn german(self) -> &'static str {
        match self {
            Step::Intake => "der Eingang",
            Step::Acknowledge => "die Annahme",
            Step::Dispatch => "der Versand",
            Step::Deliver => "die Zustellung",
            Step::Return => "die Rücksendung",
            Step::Cancel => "die Stornierung",
        }
    }
}

/// One row of the lifecycle: from which order statuses a step may be taken, the statuses it
/// may end in, and who may take it (admins always may; sponsors as company users).
#[derive(Debug, Clone, Copy)]
pub struct Transition {
    pub step: Step,
    pub from: &'static [&'static str],
    pub to: &'static [&'static str],
    pub who: &'static [UserType],
    /// Whether an orderDispatch file row takes this step.
    pub by_file: bool,
    /// What the step sets, for the docs.
    pub effect: &'static str,
    /// The record's fields an action taking the step may give (of [`Lifecycle::action`]).
    pub fields: &'static [&'static str],
    /// The fields a line named by the action may give besides its `id` (of
    /// [`Lifecycle::line_action`]); none: the step names no lines.
    pub line_fields: &'static [&'static str],
}

/// Order statuses, in the order the docs list them.
pub const ORDER_STATUSES: [&str; 8] = [
    "new",
    "accepted",
    "rejected",
    "partDispatched",
    "dispatched",
    "delivered",
    "returned",
    "cancelled",
];

/// Item statuses: accepted (to ship), rejected, shipped in full, cancelled, returned.
pub const ITEM_STATUSES: [&str; 5] = ["ACC", "REJ", "DSP", "CAN", "RET"];

/// The reasons a line may be rejected with (`detail.reason`).
pub const REJECT_REASONS: [&str; 4] = ["OUT_OF_STOCK", "DISCONTINUED", "PRICE_MISMATCH", "OTHER"];

/// The line field a rejection's reason is given in.
pub const REASON_FIELD: &str = "detail.reason";

/// The English word people read for an order status, a line status or a rejection reason
/// (the API's description carries them; the portal translates them and falls back to
/// them), or `None` for a code that is none of those.
pub fn word(code: &str) -> Option<&'static str> {
    crate::words::code_word(code).map(|words| words.en)
}

use UserType::{Company, Host, Warehouse};

/// The lifecycle table: the one place that says which change of status is allowed, and to whom.
pub const TRANSITIONS: &[Transition] = &[
    Transition {
        step: Step::Intake,
        from: &[],
        to: &["new"],
        who: &[Host],
        by_file: false,
        effect: "the order and its lines (`ACC`); demand of each line's variant in the order's warehouse grows by its quantity",
        fields: &[],
        line_fields: &[],
    },
    Transition {
        step: Step::Acknowledge,
        from: &["new"],
        to: &["accepted", "rejected"],
        who: &[Warehouse, Company],
        by_file: false,
        effect: "each line `ACC` or `REJ` with `detail.reason`; `sentToWH`; rejected lines give their demand back; `rejected` when every line is rejected",
        fields: &[],
        line_fields: &["status", "detail.reason"],
    },
    Transition {
        step: Step::Dispatch,
        from: &["accepted", "partDispatched"],
        to: &["partDispatched", "dispatched"],
        who: &[Warehouse, Company],
        by_file: true,
        effect: "lines' `shipQty` (the total shipped so far; `DSP` when it reaches `orderQty`), `carrier`, `trackingRef`, `shipDate`; the shipped quantity leaves `inStock` and `demand`; `dispatched` when every accepted line is shipped in full",
        fields: &["carrier", "trackingRef", "shipDate"],
        line_fields: &["shipQty"],
    },
    Transition {
        step: Step::Deliver,
        from: &["dispatched"],
        to: &["delivered"],
        who: &[Host, Warehouse],
        by_file: false,
        effect: "`deliveryDate`",
        fields: &["deliveryDate"],
        line_fields: &[],
    },
    Transition {
        step: Step::Return,
        from: &["dispatched", "delivered", "returned"],
        to: &["returned"],
        who: &[Host, Warehouse],
        by_file: false,
        effect: "lines' `returnQty` (the total returned so far, at most `shipQty`), `returnDate`, item status `RET`; the returned quantity goes back into `inStock`",
        fields: &["returnDate"],
        line_fields: &["returnQty"],
    },
    Transition {
        step: Step::Cancel,
        from: &["new", "accepted"],
        to: &["cancelled"],
        who: &[Host, Company],
        by_file: false,
        effect: "open lines `CAN`; their demand is given back",
        fields: &[],
        line_fields: &[],
    },
];

/// The step that ends in `status` (each status is reached by one step).
pub fn step_to(status: &str) -> Option<&'static Transition> {
    TRANSITIONS.iter().find(|t| t.to.contains(&status))
}

/// The row of a step.
pub fn transition(step: Step) -> &'static Transition {
    TRANSITIONS
        .iter()
        .find(|t| t.step == step)
        .expect("every step has a row")
}

impl Transition {
    /// Whether the step may be taken from an order in `status`.
    pub fn allowed_from(&self, status: &str) -> bool {
        self.from.contains(&status)
    }

    /// Whether a user of this type may take the step (admins always; sponsors as companies).
    pub fn allows(&self, user_type: UserType) -> bool {
        match user_type {
            UserType::Admin => true,
            UserType::Sponsor => self.who.contains(&Company),
            other => self.who.contains(&other),
        }
    }
}

/// How a resource moves through a lifecycle: where its status and lines are, and the actions
/// it takes at `POST /api/<resource>/<action>` (each one step, given as an array).
#[derive(Debug, Clone, Copy)]
pub struct Lifecycle {
    /// The status field of the resource.
    pub status: &'static str,
    /// The to-many relation to its lines.
    pub lines: &'static str,
    /// `(name, step)`: actions taken for many records at once.
    pub actions: &'static [(&'static str, Step)],
    /// The fields of a line an intake may set, and those it must.
    pub line_intake: &'static [&'static str],
    pub line_required: &'static [&'static str],
    /// The record's fields a lifecycle action may name (besides `id`, which names the record
    /// in a many-record action, and the lines).
    pub action: &'static [&'static str],
    /// The fields of a line an action may name.
    pub line_action: &'static [&'static str],
}

/// The fields of a line an intake may set (besides `barcode` and `hostSku`, which name the
/// variant instead of `fk_variant`: exactly one of the three does); `orderQty` and
/// `itemPrice` are required.
pub const LINE_INTAKE: [&str; 9] = [
    "fk_variant",
    "orderQty",
    "itemPrice",
    "currency",
    "hostItemRef",
    "detail.gift",
    "lineNet",
    "lineTax",
    "lineGross",
];

/// The line fields an intake must give.
pub const LINE_REQUIRED: [&str; 2] = ["orderQty", "itemPrice"];

/// The order fields an action may name: the status asked, and what the step sets.
pub const ACTION: [&str; 6] = [
    "status",
    "carrier",
    "trackingRef",
    "shipDate",
    "deliveryDate",
    "returnDate",
];

/// The line fields an action may name: which line, its status (acknowledgement), the
/// quantities shipped or returned so far, and a rejection's reason.
pub const LINE_ACTION: [&str; 5] = ["id", "status", "shipQty", "returnQty", "detail.reason"];

/// The order's lifecycle.
pub const ORDER_LIFECYCLE: Lifecycle = Lifecycle {
    status: "status",
    lines: "order_orderItem",
    actions: &[("dispatch", Step::Dispatch)],
    line_intake: &LINE_INTAKE,
    line_required: &LINE_REQUIRED,
    action: &ACTION,
    line_action: &LINE_ACTION,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_but_new_is_reached_by_one_step_and_every_from_is_a_status() {
        for status in ORDER_STATUSES {
            let reaching: Vec<_> = TRANSITIONS
                .iter()
                .filter(|t| t.to.contains(&status))
                .collect();
            assert_eq!(reaching.len(), 1, "{status}");
        }
        for t in TRANSITIONS {
            for s in t.from.iter().chain(t.to) {
                assert!(ORDER_STATUSES.contains(s), "{s}");
            }
        }
        assert_eq!(step_to("dispatched").unwrap().step, Step::Dispatch);
        assert!(step_to("nope").is_none());
    }

    #[test]
    fn every_code_has_a_word_and_every_step_names_what_an_action_may_give() {
        for code in ORDER_STATUSES
            .iter()
            .chain(&ITEM_STATUSES)
            .chain(&REJECT_REASONS)
        {
            assert!(word(code).is_some_and(|w| !w.is_empty()), "{code}");
        }
        assert_eq!(word("nope"), None);
        for t in TRANSITIONS {
            for field in t.fields {
                assert!(ORDER_LIFECYCLE.action.contains(field), "{field}");
            }
            for field in t.line_fields {
                assert!(ORDER_LIFECYCLE.line_action.contains(field), "{field}");
            }
        }
        assert!(LINE_ACTION.contains(&REASON_FIELD));
    }

    #[test]
    fn who_may_take_a_step_follows_the_table() {
        let cancel = transition(Step::Cancel);
        assert!(cancel.allows(UserType::Host) && cancel.allows(UserType::Sponsor));
        assert!(!cancel.allows(UserType::Warehouse));
        assert!(transition(Step::Dispatch).allows(UserType::Admin));
        assert!(!transition(Step::Dispatch).allows(UserType::Host));
        assert!(transition(Step::Dispatch).by_file);
    }
}
