//! An offer's rules as plain functions (docs/API.md, "Offers"): what the database's
//! derivation ([`super::derive`]) computes, written out so that tests and the property test's
//! model compute the same from the same inputs.

/// A brand store's rules, as stored (words in any case; unset numbers `None`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rules {
    pub stock_type: String,
    pub stock_percent: Option<i64>,
    pub stock_buffer: Option<i64>,
    pub stock_max: Option<i64>,
    pub fixed_quantity: Option<i64>,
    pub adjust_type: String,
    pub adjust_value: Option<f64>,
}

/// What a store may sell, from the warehouse's available units `on_hand` (0 without a stock
/// record): `none` offers nothing, `fixed` its quantity, `live` (the default) the share
/// (rounded down), less the buffer (never below 0), capped.
pub fn available(rules: &Rules, on_hand: i64) -> i64 {
    match rules.stock_type.to_ascii_lowercase().as_str() {
        "none" => 0,
        "fixed" => rules.fixed_quantity.unwrap_or(0),
        _ => {
            let shared = on_hand.max(0) * rules.stock_percent.unwrap_or(100) / 100;
            let buffered = (shared - rules.stock_buffer.unwrap_or(0)).max(0);
            rules.stock_max.map_or(buffered, |max| buffered.min(max))
        }
    }
}

/// The price a store sells at, from the price in effect (`base`: the price record's, else the
/// variant's): adjusted by a percentage or an amount, rounded half away from zero to two
/// decimals, never below 0; `None` without a base. Computed in whole cents (amounts are kept
/// to two decimals), so that 12.50 + 1% is exactly 12.625, which rounds to 12.63.
pub fn price(rules: &Rules, base: Option<f64>) -> Option<f64> {
    let cents = |x: f64| (x * 100.0).round() as i64;
    let base = cents(base?);
    let value = cents(rules.adjust_value.unwrap_or(0.0));
    let adjusted = match rules.adjust_type.to_ascii_lowercase().as_str() {
        "percent" => {
            // A percentage counts from -100% to +100,000%.
            let scaled = base * (10_000 + value.clamp(-10_000, 10_000_000));
            if scaled <= 0 {
                0
            } else {
                (2 * scaled + 10_000) / 20_000
            }
        }
        "fixed" => (base + value).max(0),
        _ => base,
    };
    Some(adjusted as f64 / 100.0)
}

/// An offer's status: `inactive` when its product is not active, it has no price or the
/// store is offered no stock; else `outOfStock` when nothing is available; else `active`.
pub fn status(
    rules: &Rules,
    product_active: bool,
    price: Option<f64>,
    available: i64,
) -> &'static str {
    if !product_active || price.is_none() || rules.stock_type.eq_ignore_ascii_case("none") {
        "inactive"
    } else if available == 0 {
        "outOfStock"
    } else {
        "active"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(percent: Option<i64>, buffer: Option<i64>, max: Option<i64>) -> Rules {
        Rules {
            stock_type: "LIVE".into(),
            stock_percent: percent,
            stock_buffer: buffer,
            stock_max: max,
            ..Rules::default()
        }
    }

    #[test]
    fn live_stock_takes_the_share_then_the_buffer_then_the_cap() {
        assert_eq!(available(&Rules::default(), 17), 17);
        // 50% of 17 is 8 (rounded down), less 3 is 5, capped at 4.
        assert_eq!(available(&live(Some(50), Some(3), Some(4)), 17), 4);
        assert_eq!(available(&live(Some(50), Some(3), None), 17), 5);
        assert_eq!(available(&live(Some(50), Some(10), None), 17), 0);
        assert_eq!(available(&live(None, None, Some(0)), 17), 0);
        assert_eq!(available(&live(Some(0), None, None), 17), 0);
    }

    #[test]
    fn fixed_and_none_ignore_the_stock() {
        let fixed = Rules {
            stock_type: "Fixed".into(),
            fixed_quantity: Some(25),
            ..Rules::default()
        };
        assert_eq!(available(&fixed, 0), 25);
        let none = Rules {
            stock_type: "none".into(),
            ..Rules::default()
        };
        assert_eq!(available(&none, 100), 0);
        assert_eq!(status(&none, true, Some(1.0), 0), "inactive");
    }

    #[test]
    fn prices_are_adjusted_and_rounded_half_away_from_zero() {
        let percent = Rules {
            adjust_type: "percent".into(),
            adjust_value: Some(-10.0),
            ..Rules::default()
        };
        assert_eq!(price(&percent, Some(19.99)), Some(17.99));
        let fixed = Rules {
            adjust_type: "FIXED".into(),
            adjust_value: Some(-30.0),
            ..Rules::default()
        };
        assert_eq!(price(&fixed, Some(19.99)), Some(0.0));
        assert_eq!(price(&fixed, None), None);
        assert_eq!(price(&Rules::default(), Some(12.5)), Some(12.5));
        let one_percent = Rules {
            adjust_type: "percent".into(),
            adjust_value: Some(1.0),
            ..Rules::default()
        };
        // 12.625, exactly half a cent: away from zero.
        assert_eq!(price(&one_percent, Some(12.5)), Some(12.63));
    }

    #[test]
    fn status_follows_product_price_and_availability() {
        let rules = Rules::default();
        assert_eq!(status(&rules, false, Some(1.0), 5), "inactive");
        assert_eq!(status(&rules, true, None, 5), "inactive");
        assert_eq!(status(&rules, true, Some(1.0), 0), "outOfStock");
        assert_eq!(status(&rules, true, Some(1.0), 5), "active");
    }
}
