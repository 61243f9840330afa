//! Physical names derive from API names by one rule, so the catalog never spells a column twice.

/// `fk_brandStore` → `fk_brand_store`, `sentToWH` → `sent_to_wh`, `line1` → `line1`.
pub fn snake_case(api_name: &str) -> String {
    let mut out = String::with_capacity(api_name.len() + 4);
    let mut previous_was_lower = false;
    for c in api_name.chars() {
        if c == '.' {
            out.push('_');
            previous_was_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() {
            if previous_was_lower {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
            previous_was_lower = false;
        } else {
            out.push(c);
            previous_was_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        }
    }
    out
}

/// The column that holds the case-folded copy of a text column (see `brandhub_query::text`).
pub fn folded_column(column: &str) -> String {
    format!("{column}_ci")
}

#[cfg(test)]
mod tests {
    use super::snake_case;

    #[test]
    fn api_names_become_snake_case_columns() {
        assert_eq!(snake_case("fk_brandStore"), "fk_brand_store");
        assert_eq!(snake_case("sentToWH"), "sent_to_wh");
        assert_eq!(snake_case("line1"), "line1");
        assert_eq!(snake_case("detail.fileMime"), "detail_file_mime");
        assert_eq!(
            snake_case("shipAddress.countryCode"),
            "ship_address_country_code"
        );
        assert_eq!(snake_case("id"), "id");
    }
}
