//! Properties of the conversions every processor relies on.

use brandhub_sheet::{Cell, normalize_header, number_to_text};
use proptest::prelude::*;

proptest! {
    #[test]
    fn number_text_reads_back_exactly(n in any::<f64>().prop_filter("finite", |n| n.is_finite())) {
        let text = number_to_text(n);
        prop_assert!(!text.contains('e') && !text.contains('E'), "{text}");
        let back: f64 = text.parse().unwrap();
        prop_assert_eq!(back, if n == 0.0 { 0.0 } else { n });
        prop_assert_eq!(Cell::text(&text).as_number(), Some(back));
    }

    #[test]
    fn integral_numbers_are_their_digits(n in -(1i64 << 53)..(1i64 << 53)) {
        prop_assert_eq!(number_to_text(n as f64), n.to_string());
        prop_assert_eq!(Cell::Number(n as f64).as_integer(), Some(n));
    }

    #[test]
    fn header_spelling_does_not_matter(
        words in prop::collection::vec("[A-Za-z]{1,8}", 1..4),
        separator in prop::sample::select(vec![" ", "_", "-", "", "  ", " - "]),
        upper in any::<bool>(),
    ) {
        let plain = words.join(" ");
        let respelled = words.join(separator);
        let respelled = if upper { respelled.to_uppercase() } else { respelled.to_lowercase() };
        let normal = normalize_header(&plain);
        prop_assert_eq!(normalize_header(&respelled), normal.clone());
        prop_assert_eq!(normalize_header(&format!("  {respelled}\t")), normal.clone());
        prop_assert_eq!(normalize_header(&normal), normal);
    }
}
