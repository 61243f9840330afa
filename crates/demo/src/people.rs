//! Customers and their addresses, shaped by the country of the store they buy from.

use crate::DemoRng;
use crate::names::{self, Country, PostcodeStyle, slug};
use crate::random::{between, digits, letters, percent, pick};

/// A delivery or billing address (the order's `shipAddress` / `billAddress` fields).
#[derive(Debug, Clone)]
pub(crate) struct Address {
    pub title: &'static str,
    pub forename: &'static str,
    pub surname: &'static str,
    pub company: &'static str,
    pub line1: String,
    pub line2: &'static str,
    pub town: &'static str,
    pub county: &'static str,
    pub postcode: String,
    pub country: &'static Country,
    pub phone: String,
    pub email: String,
}

/// A postcode in the country's style, starting with the town's prefix.
fn postcode(rng: &mut DemoRng, style: PostcodeStyle, prefix: &str) -> String {
    match style {
        PostcodeStyle::Uk => format!(
            "{prefix}{} {}{}",
            between(rng, 1, 20),
            between(rng, 1, 9),
            letters(rng, 2)
        ),
        PostcodeStyle::FiveDigits => format!("{prefix}{}", digits(rng, 5 - prefix.len())),
        PostcodeStyle::Swedish => format!("{prefix}{} {}", digits(rng, 1), digits(rng, 2)),
        PostcodeStyle::Eircode => format!("{prefix} {}{}", letters(rng, 1), digits(rng, 3)),
        PostcodeStyle::Dutch => format!("{prefix}{} {}", digits(rng, 2), letters(rng, 2)),
    }
}

/// A street address in the country (the person's details left to the caller).
fn place(
    rng: &mut DemoRng,
    country: &'static Country,
) -> (String, &'static str, &'static str, &'static str, String) {
    let (town, county, prefix) = *pick(rng, country.towns);
    let street = *pick(rng, country.streets);
    let number = between(rng, 1, 180);
    let line1 = if country.number_first {
        format!("{number} {street}")
    } else {
        format!("{street} {number}")
    };
    let line2 = if percent(rng, 15) {
        *pick(rng, names::LINE2)
    } else {
        ""
    };
    (
        line1,
        line2,
        town,
        county,
        postcode(rng, country.postcode, prefix),
    )
}

/// A customer living in the country.
pub(crate) fn customer(rng: &mut DemoRng, country: &'static Country) -> Address {
    let (forename, woman) = *pick(rng, names::FORENAMES);
    let titles = match (percent(rng, 15), woman) {
        (true, _) => names::TITLES_ANY,
        (false, true) => names::TITLES_WOMEN,
        (false, false) => names::TITLES_MEN,
    };
    let title = *pick(rng, titles);
    let surname = *pick(rng, names::SURNAMES);
    let company = if percent(rng, 5) {
        *pick(rng, names::CUSTOMER_COMPANIES)
    } else {
        ""
    };
    let (line1, line2, town, county, postcode) = place(rng, country);
    let email = format!(
        "{}.{}{}@{}",
        slug(forename, "."),
        slug(surname, "."),
        if percent(rng, 40) {
            between(rng, 1, 99).to_string()
        } else {
            String::new()
        },
        pick(rng, names::MAIL_DOMAINS)
    );
    Address {
        title,
        forename,
        surname,
        company,
        line1,
        line2,
        town,
        county,
        postcode,
        country,
        phone: format!("{}{}", country.phone, digits(rng, country.phone_digits)),
        email,
    }
}

/// The same person at another address in the same country (a billing address that differs).
pub(crate) fn moved(rng: &mut DemoRng, person: &Address) -> Address {
    let (line1, line2, town, county, postcode) = place(rng, person.country);
    Address {
        line1,
        line2,
        town,
        county,
        postcode,
        ..person.clone()
    }
}
