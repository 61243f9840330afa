//! What an upload request says besides its bytes (docs/API.md, "Files: uploads and processing"): the part name
//! (`<fileType>,<arguments>`) and the `?wait=` parameter. Pure parsing, next to the file types
//! it names, so that it is tested and fuzzed without a server; the server turns an
//! [`ArgumentError`] into its problem answer.

use crate::FileType;
use chrono::NaiveDate;
use std::time::Duration;

/// The longest `?wait=` accepted; a longer one, or anything but a number of seconds from 0 to
/// it, is refused.
pub const MAX_WAIT: Duration = Duration::from_secs(60);

/// A refused part name or `wait`: the argument it is about and a sentence saying what to send.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ArgumentError {
    /// The argument at fault (`fileType`, `brand`, `warehouse`, `host`, `startDate`,
    /// `endDate`, `wait`, or the unknown parameter's name).
    pub field: String,
    /// What is wrong and what is expected, for the person who sent it.
    pub message: String,
}

impl ArgumentError {
    fn new(field: &str, message: String) -> ArgumentError {
        ArgumentError {
            field: field.to_string(),
            message,
        }
    }
}

/// What an upload's part name says: the file type and its arguments, ids in upper case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartName {
    /// The kind of spreadsheet.
    pub file_type: FileType,
    /// The brand whose records the file writes.
    pub brand: String,
    /// The warehouse of a stock file.
    pub warehouse: Option<String>,
    /// The host of a price file.
    pub host: Option<String>,
    /// The first day of a price file's prices.
    pub start: Option<NaiveDate>,
    /// The last day of a price file's prices; none for a permanent price.
    pub end: Option<NaiveDate>,
}

/// A `DD/MM/YYYY` date of a price part name.
fn parse_day(text: &str, field: &str) -> Result<NaiveDate, ArgumentError> {
    let parts: Vec<&str> = text.split('/').collect();
    let digits = |s: &str, lengths: std::ops::RangeInclusive<usize>| {
        lengths.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())
    };
    let date = match parts.as_slice() {
        [d, m, y] if digits(d, 1..=2) && digits(m, 1..=2) && digits(y, 4..=4) => {
            match (y.parse(), m.parse(), d.parse()) {
                (Ok(y), Ok(m), Ok(d)) => NaiveDate::from_ymd_opt(y, m, d),
                _ => None,
            }
        }
        _ => None,
    };
    date.ok_or_else(|| {
        ArgumentError::new(
            field,
            format!("The {field} '{text}' of the part name is not a valid date DD/MM/YYYY."),
        )
    })
}

/// Parses a part name (`<fileType>,<arg>,...`); every failure names the argument.
pub fn parse_part_name(name: &str) -> Result<PartName, ArgumentError> {
    let parts: Vec<&str> = name.split(',').map(str::trim).collect();
    let kind = parts[0];
    let file_type = FileType::named(kind).ok_or_else(|| {
        let forms: Vec<&str> = FileType::ALL
            .into_iter()
            .map(FileType::part_usage)
            .collect();
        ArgumentError::new(
            "fileType",
            format!(
                "The part name '{name}' does not start with a file type; name the part {}.",
                forms.join(" or ")
            ),
        )
    })?;
    let args = &parts[1..];
    let wrong = |field: &str| {
        ArgumentError::new(
            field,
            format!(
                "The part name '{name}' does not fit a {} file: name the part {}.",
                file_type.as_str(),
                file_type.part_usage()
            ),
        )
    };
    let brand = match args.first() {
        Some(brand) if !brand.is_empty() => brand.to_ascii_uppercase(),
        _ => return Err(wrong("brand")),
    };
    let mut part = PartName {
        file_type,
        brand,
        warehouse: None,
        host: None,
        start: None,
        end: None,
    };
    match file_type {
        FileType::Product | FileType::Image | FileType::OrderDispatch => {
            if args.len() != 1 {
                return Err(wrong("fileType"));
            }
        }
        FileType::Stock => match args {
            [_, warehouse] if !warehouse.is_empty() => {
                part.warehouse = Some(warehouse.to_ascii_uppercase());
            }
            _ => return Err(wrong("warehouse")),
        },
        FileType::Price => {
            let (host, start, end) = match args {
                [_, host, start] => (host, start, ""),
                [_, host, start, end] => (host, start, *end),
                [_] | [_, _] => {
                    return Err(wrong(if args.len() == 1 { "host" } else { "startDate" }));
                }
                _ => return Err(wrong("endDate")),
            };
            if host.is_empty() {
                return Err(wrong("host"));
            }
            part.host = Some(host.to_ascii_uppercase());
            let start = parse_day(start, "startDate")?;
            part.start = Some(start);
            // A trailing comma without an end date is a permanent markdown.
            if !end.is_empty() {
                let end_day = parse_day(end, "endDate")?;
                if end_day < start {
                    return Err(ArgumentError::new(
                        "endDate",
                        format!("The endDate '{end}' is before the startDate of the part name."),
                    ));
                }
                part.end = Some(end_day);
            }
        }
    }
    Ok(part)
}

/// Parses an upload's query string: `wait=<seconds>`, how long to wait for processing (none or
/// 0: answer at once); any other parameter is refused.
pub fn parse_wait(query: Option<&str>) -> Result<Duration, ArgumentError> {
    let mut wait = Duration::ZERO;
    for pair in query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        if name != "wait" {
            return Err(ArgumentError::new(
                name,
                format!(
                    "An upload takes one parameter, wait (seconds to wait for processing), not '{name}'."
                ),
            ));
        }
        // Checked before it becomes a Duration, which cannot hold NaN, infinities or 1e308.
        wait = value
            .parse::<f64>()
            .ok()
            .filter(|s| (0.0..=MAX_WAIT.as_secs_f64()).contains(s))
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .ok_or_else(|| {
                ArgumentError::new(
                    "wait",
                    format!("wait is a number of seconds from 0 to 60, not '{value}'."),
                )
            })?;
    }
    Ok(wait)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const BRAND: &str = "0190aaaaaaaaaaaaaaaaaaaaaaaaaaaa";

    fn field_of(name: &str) -> String {
        parse_part_name(name).unwrap_err().field
    }

    #[test]
    fn part_names_carry_their_arguments() {
        let part = parse_part_name(&format!("product,{BRAND}")).unwrap();
        assert_eq!(part.file_type, FileType::Product);
        assert_eq!(part.brand, BRAND.to_ascii_uppercase());
        let part = parse_part_name(&format!("stock,{BRAND},w1")).unwrap();
        assert_eq!(part.warehouse.as_deref(), Some("W1"));
        let part = parse_part_name(&format!("price,{BRAND},h1,01/02/2024,29/02/2024")).unwrap();
        assert_eq!(part.start, NaiveDate::from_ymd_opt(2024, 2, 1));
        assert_eq!(part.end, NaiveDate::from_ymd_opt(2024, 2, 29));
        let part = parse_part_name(&format!("price,{BRAND},h1,01/02/2024,")).unwrap();
        assert_eq!(part.end, None, "a trailing comma is a permanent markdown");
        let part = parse_part_name(&format!("orderdispatch,{BRAND}")).unwrap();
        assert_eq!(part.file_type, FileType::OrderDispatch);
    }

    #[test]
    fn bad_part_names_name_the_argument() {
        for (name, field) in [
            ("images,x".to_string(), "fileType"),
            (format!("product,{BRAND},extra"), "fileType"),
            ("product,".to_string(), "brand"),
            (format!("stock,{BRAND}"), "warehouse"),
            (format!("price,{BRAND}"), "host"),
            (format!("price,{BRAND},h"), "startDate"),
            (format!("price,{BRAND},h,31/02/2024"), "startDate"),
            (format!("price,{BRAND},h,2024-02-01"), "startDate"),
            (format!("price,{BRAND},h,01/02/2024,1/1/24"), "endDate"),
            (format!("price,{BRAND},h,01/02/2024,31/01/2024"), "endDate"),
            (
                format!("price,{BRAND},h,01/02/2024,02/02/2024,x"),
                "endDate",
            ),
        ] {
            assert_eq!(field_of(&name), field, "{name}");
        }
    }

    #[test]
    fn waits_are_bounded_numbers() {
        assert_eq!(parse_wait(None).unwrap(), Duration::ZERO);
        assert_eq!(
            parse_wait(Some("wait=2.5")).unwrap(),
            Duration::from_millis(2500)
        );
        assert_eq!(parse_wait(Some("wait=60")).unwrap(), MAX_WAIT);
        assert_eq!(parse_wait(Some("wait=0")).unwrap(), Duration::ZERO);
        assert_eq!(parse_wait(Some("wait=-0")).unwrap(), Duration::ZERO);
        for bad in [
            "wait=-1",
            "wait=soon",
            "wait=NaN",
            "wait=nan",
            "wait=inf",
            "wait=-inf",
            "wait=infinity",
            "wait=1e308",
            "wait=1e400",
            "wait=60.001",
            "wait=600",
            "wait=-0.0001",
            "wait=",
        ] {
            assert_eq!(parse_wait(Some(bad)).unwrap_err().field, "wait", "{bad}");
        }
        assert_eq!(parse_wait(Some("other=1")).unwrap_err().field, "other");
    }

    proptest! {
        /// Any text is a part name or a refusal naming an argument, never a panic; what is
        /// accepted keeps its brand and arguments in upper case.
        #[test]
        fn any_part_name_is_parsed_or_refused(name in "\\PC{0,60}") {
            match parse_part_name(&name) {
                Ok(part) => {
                    prop_assert_eq!(part.brand.to_ascii_uppercase(), part.brand.clone());
                    prop_assert!(!part.brand.is_empty());
                    if let (Some(start), Some(end)) = (part.start, part.end) {
                        prop_assert!(start <= end);
                    }
                }
                Err(error) => prop_assert!(!error.field.is_empty()),
            }
        }

        /// Any query is a wait within the bound or a refusal, never a panic.
        #[test]
        fn any_wait_is_bounded_or_refused(query in "\\PC{0,30}") {
            if let Ok(wait) = parse_wait(Some(&query)) {
                prop_assert!(wait <= MAX_WAIT);
            }
        }
    }
}
