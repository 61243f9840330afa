//! Examples of single steps: what each does to the lines and the stock, and how a refusal
//! names what is wrong.

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
