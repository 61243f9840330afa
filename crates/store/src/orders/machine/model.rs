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
