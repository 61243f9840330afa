//! EAN-13 barcodes: a 6-digit prefix per brand group, a running number within the group and
//! the check digit, so barcodes are valid, unique and cluster by prefix like real GS1 ranges.

/// The first prefix; brand `b` uses `FIRST_PREFIX + b % PREFIX_GROUPS`.
const FIRST_PREFIX: u32 = 501_000;
/// How many 6-digit prefixes the brands share ("501000" to "501099").
const PREFIX_GROUPS: usize = 100;
/// The largest running number that fits the six digits after the prefix.
const MAX_RUNNING: u32 = 999_999;

/// The EAN-13 check digit of twelve digits: weights 1 and 3 alternating from the left.
pub(crate) fn check_digit(first_twelve: &[u8; 12]) -> u8 {
    let sum: u32 = first_twelve
        .iter()
        .enumerate()
        .map(|(i, d)| u32::from(*d) * if i % 2 == 0 { 1 } else { 3 })
        .sum();
    ((10 - sum % 10) % 10) as u8
}

/// Whether the text is 13 digits with a correct check digit.
pub fn is_valid_ean13(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() != 13 || !bytes.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let mut digits = [0u8; 12];
    for (d, b) in digits.iter_mut().zip(bytes) {
        *d = b - b'0';
    }
    check_digit(&digits) == bytes[12] - b'0'
}

/// The EAN-13 text of a 6-digit prefix and a 6-digit number.
pub(crate) fn ean13(prefix: u32, number: u32) -> String {
    let body = format!("{prefix:06}{number:06}");
    let mut digits = [0u8; 12];
    for (d, b) in digits.iter_mut().zip(body.bytes()) {
        *d = b - b'0';
    }
    format!("{body}{}", check_digit(&digits))
}

/// Allocates barcodes brand by brand: each prefix group keeps its own running number.
pub(crate) struct Barcodes {
    next: [u32; PREFIX_GROUPS],
}

impl Barcodes {
    /// Every group starts at running number 1.
    pub(crate) fn new() -> Barcodes {
        Barcodes {
            next: [1; PREFIX_GROUPS],
        }
    }

    /// The next barcode for a variant of brand `brand_index`.
    pub(crate) fn next(&mut self, brand_index: usize) -> String {
        let group = brand_index % PREFIX_GROUPS;
        let number = self.next[group];
        assert!(
            number <= MAX_RUNNING,
            "barcode prefix group {group} is full: the scale is too large for 6-digit numbers"
        );
        self.next[group] += 1;
        ean13(FIRST_PREFIX + group as u32, number)
    }
}

/// A valid barcode outside every demo prefix group, for "barcode not found" warnings.
pub(crate) fn unknown(number: u32) -> String {
    ean13(FIRST_PREFIX + 900, number % (MAX_RUNNING + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_barcodes_validate() {
        assert!(is_valid_ean13("4006381333931"));
        assert!(is_valid_ean13("5012345678900"));
        assert!(!is_valid_ean13("4006381333932"));
        assert!(!is_valid_ean13("400638133393"));
        assert!(!is_valid_ean13("400638133393A"));
    }

    #[test]
    fn groups_number_independently() {
        let mut codes = Barcodes::new();
        assert_eq!(&codes.next(0)[..12], "501000000001");
        assert_eq!(&codes.next(100)[..12], "501000000002");
        assert_eq!(&codes.next(7)[..12], "501007000001");
        assert!(!unknown(5).starts_with("5010"));
    }

    proptest! {
        #[test]
        fn every_generated_code_is_valid_and_one_changed_digit_is_not(
            prefix in 0u32..1_000_000, number in 0u32..1_000_000, position in 0usize..12, delta in 1u8..10,
        ) {
            let code = ean13(prefix, number);
            prop_assert!(is_valid_ean13(&code));
            let mut bytes = code.into_bytes();
            bytes[position] = b'0' + (bytes[position] - b'0' + delta) % 10;
            // A single changed digit is always detected by EAN-13 (weights 1 and 3 are coprime to 10).
            prop_assert!(!is_valid_ean13(std::str::from_utf8(&bytes).unwrap()));
        }
    }
}
