//! Word lists of the demo world. Everything here is fictional; a share of the words carries
//! accents and umlauts on purpose, so clients meet non-ASCII text in every kind of field.

/// How a country writes its postcodes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PostcodeStyle {
    /// `M4 7QX`: the town's area, a district number, a space, a digit and two letters.
    Uk,
    /// The town's prefix padded with random digits to five digits (FR, DE, IT, US).
    FiveDigits,
    /// `411 05`: five digits with a space after the third.
    Swedish,
    /// `D02 X285`: the routing key, a space, a letter and three digits.
    Eircode,
    /// `1012 AB`: four digits, a space, two letters.
    Dutch,
}

/// A country addresses, companies and stores can be in.
#[derive(Debug)]
pub(crate) struct Country {
    pub code: &'static str,
    pub name: &'static str,
    pub company_suffix: &'static str,
    /// Town, county or region, and the postcode prefix used there.
    pub towns: &'static [(&'static str, &'static str, &'static str)],
    pub streets: &'static [&'static str],
    /// `12 High Street` rather than `Hauptstraße 12`.
    pub number_first: bool,
    pub postcode: PostcodeStyle,
    /// The phone prefix; `phone_digits` fictional subscriber digits follow.
    pub phone: &'static str,
    pub phone_digits: usize,
    /// The VAT rate included in consumer prices, in percent.
    pub vat_percent: i64,
}

/// Every country of the demo world.
pub(crate) const COUNTRIES: &[Country] = &[
    Country {
        code: "GB",
        name: "United Kingdom",
        company_suffix: "Ltd",
        towns: &[
            ("Manchester", "Greater Manchester", "M"),
            ("Leeds", "West Yorkshire", "LS"),
            ("Bristol", "Bristol", "BS"),
            ("Norwich", "Norfolk", "NR"),
            ("Edinburgh", "Midlothian", "EH"),
            ("Cardiff", "South Glamorgan", "CF"),
            ("York", "North Yorkshire", "YO"),
            ("Brighton", "East Sussex", "BN"),
        ],
        streets: &[
            "High Street",
            "Station Road",
            "Church Lane",
            "Victoria Road",
            "Mill Lane",
            "Queen's Road",
            "Park Avenue",
        ],
        number_first: true,
        postcode: PostcodeStyle::Uk,
        phone: "+44 7700 900",
        phone_digits: 3,
        vat_percent: 20,
    },
    Country {
        code: "DE",
        name: "Germany",
        company_suffix: "GmbH",
        towns: &[
            ("München", "Bayern", "80"),
            ("Köln", "Nordrhein-Westfalen", "50"),
            ("Düsseldorf", "Nordrhein-Westfalen", "40"),
            ("Lübeck", "Schleswig-Holstein", "23"),
            ("Berlin", "Berlin", "10"),
            ("Nürnberg", "Bayern", "90"),
        ],
        streets: &[
            "Hauptstraße",
            "Bahnhofstraße",
            "Schillerstraße",
            "Gartenweg",
            "Königsallee",
            "Lindenstraße",
        ],
        number_first: false,
        postcode: PostcodeStyle::FiveDigits,
        phone: "+49 151 ",
        phone_digits: 8,
        vat_percent: 19,
    },
    Country {
        code: "FR",
        name: "France",
        company_suffix: "SAS",
        towns: &[
            ("Lyon", "Rhône", "69"),
            ("Orléans", "Loiret", "45"),
            ("Besançon", "Doubs", "25"),
            ("Nîmes", "Gard", "30"),
            ("Paris", "Paris", "75"),
            ("Nantes", "Loire-Atlantique", "44"),
        ],
        streets: &[
            "rue de la République",
            "avenue Jean Jaurès",
            "rue Victor Hugo",
            "boulevard Saint-Michel",
            "rue des Écoles",
            "place du Marché",
        ],
        number_first: true,
        postcode: PostcodeStyle::FiveDigits,
        phone: "+33 6 ",
        phone_digits: 8,
        vat_percent: 20,
    },
    Country {
        code: "SE",
        name: "Sweden",
        company_suffix: "AB",
        towns: &[
            ("Göteborg", "Västra Götaland", "41"),
            ("Malmö", "Skåne", "21"),
            ("Västerås", "Västmanland", "72"),
            ("Stockholm", "Stockholm", "11"),
            ("Umeå", "Västerbotten", "90"),
        ],
        streets: &[
            "Storgatan",
            "Drottninggatan",
            "Kungsgatan",
            "Vasagatan",
            "Skolgatan",
            "Järnvägsgatan",
        ],
        number_first: false,
        postcode: PostcodeStyle::Swedish,
        phone: "+46 70 ",
        phone_digits: 7,
        vat_percent: 25,
    },
    Country {
        code: "NL",
        name: "Netherlands",
        company_suffix: "B.V.",
        towns: &[
            ("Amsterdam", "Noord-Holland", "10"),
            ("Utrecht", "Utrecht", "35"),
            ("Den Haag", "Zuid-Holland", "25"),
            ("Rotterdam", "Zuid-Holland", "30"),
        ],
        streets: &[
            "Kerkstraat",
            "Dorpsstraat",
            "Prinsengracht",
            "Molenweg",
            "Stationsplein",
        ],
        number_first: false,
        postcode: PostcodeStyle::Dutch,
        phone: "+31 6 ",
        phone_digits: 8,
        vat_percent: 21,
    },
    Country {
        code: "IT",
        name: "Italy",
        company_suffix: "S.r.l.",
        towns: &[
            ("Milano", "Lombardia", "201"),
            ("Torino", "Piemonte", "101"),
            ("Forlì", "Emilia-Romagna", "471"),
            ("Firenze", "Toscana", "501"),
        ],
        streets: &[
            "Via Roma",
            "Via Garibaldi",
            "Corso Vittorio Emanuele",
            "Via Dante",
        ],
        number_first: false,
        postcode: PostcodeStyle::FiveDigits,
        phone: "+39 347 ",
        phone_digits: 7,
        vat_percent: 22,
    },
    Country {
        code: "IE",
        name: "Ireland",
        company_suffix: "Ltd",
        towns: &[
            ("Dublin", "Co. Dublin", "D02"),
            ("Cork", "Co. Cork", "T12"),
            ("Galway", "Co. Galway", "H91"),
            ("Limerick", "Co. Limerick", "V94"),
        ],
        streets: &[
            "Main Street",
            "Patrick Street",
            "Church Road",
            "Harbour View",
        ],
        number_first: true,
        postcode: PostcodeStyle::Eircode,
        phone: "+353 85 ",
        phone_digits: 7,
        vat_percent: 23,
    },
    Country {
        code: "US",
        name: "United States",
        company_suffix: "Inc.",
        towns: &[
            ("Portland", "OR", "972"),
            ("Austin", "TX", "787"),
            ("Brooklyn", "NY", "112"),
            ("Denver", "CO", "802"),
            ("San José", "CA", "951"),
        ],
        streets: &[
            "Main Street",
            "Oak Avenue",
            "Maple Drive",
            "Pine Street",
            "Elm Street",
        ],
        number_first: true,
        postcode: PostcodeStyle::FiveDigits,
        phone: "+1 503 555 ",
        phone_digits: 4,
        vat_percent: 0,
    },
];

/// The country with this ISO code.
pub(crate) fn country(code: &str) -> &'static Country {
    COUNTRIES
        .iter()
        .find(|c| c.code == code)
        .unwrap_or_else(|| panic!("no demo country {code}"))
}

/// Countries brand-owning companies are registered in.
pub(crate) const COMPANY_COUNTRIES: &[&str] = &["GB", "DE", "FR", "SE", "NL", "IT", "IE"];

/// The two sponsor companies: name and country.
pub(crate) const SPONSORS: &[(&str, &str)] = &[
    ("Northwind Retail Partners Ltd", "GB"),
    ("Sonnenberg Handelsgruppe AG", "DE"),
];

/// The first brand-owning companies, fixed so the docs can name them.
pub(crate) const FIXED_COMPANIES: &[(&str, &str)] =
    &[("Crème Collective Ltd", "GB"), ("Ärmel & Söhne GmbH", "DE")];

/// First words of generated company names.
pub(crate) const COMPANY_STEMS: &[&str] = &[
    "Bramble",
    "Côte",
    "Fjäll",
    "Linden",
    "Harbour",
    "Willow",
    "Marlowe",
    "Søndergaard",
    "Hollow Oak",
    "Brücke",
    "Saltmarsh",
    "Aurélie",
    "Kestrel",
    "Nordvik",
    "Ravensworth",
    "Bellefleur",
    "Grünwald",
    "Tamsin",
    "Larkspur",
    "Östra",
    "Pemberton",
    "Castellane",
    "Elmstead",
    "Mirabelle",
];

/// Second words of generated company names.
pub(crate) const COMPANY_KINDS: &[&str] = &[
    "Textiles",
    "Apparel",
    "Goods",
    "Trading",
    "Studio",
    "Clothing",
    "Atelier",
    "Supply",
    "Outfitters",
    "House",
    "Brands",
    "Mode",
    "Knitting Mills",
    "Garments",
    "Label",
    "& Daughters",
];

/// First words of brand names.
pub(crate) const BRAND_FIRST: &[&str] = &[
    "Maison", "Wild", "Blue", "Nordlys", "Côte", "Bramble", "Linden", "Søren", "Atelier", "Ärmel",
    "Fjord", "Hazel", "Copper", "Juniper", "Marée", "Storm", "Little", "Velvet", "Oak", "Crème",
];

/// Second words of brand names.
pub(crate) const BRAND_SECOND: &[&str] = &[
    "Heather", "Sauvage", "& Fox", "Row", "Stitch", "Loom", "Thread", "Werk", "Fjäll", "Moss",
    "Harbour", "Lane", "Tide", "Brume", "Wren", "Hollow", "Coast", "Mill", "Étoile", "Kind",
];

/// Sentences brands describe themselves with.
pub(crate) const BRAND_DESCRIPTIONS: &[&str] = &[
    "Relaxed everyday clothing made from natural fibres.",
    "Tailoring and knitwear designed in small batches.",
    "Coastal-inspired basics built to last.",
    "Playful prints and easy shapes for the whole family.",
    "Scandinavian outerwear for wet and windy days.",
    "Pièces intemporelles, fabriquées en Europe.",
    "Nachhaltige Mode aus zertifizierten Stoffen.",
    "Heritage knits from a family mill, since 1952.",
];

/// The selling channels: name, country, website host.
pub(crate) const HOSTS: &[(&str, &str, &str)] = &[
    ("Maison Étoile", "FR", "maison-etoile.example"),
    ("Nordic Threads", "SE", "nordic-threads.example"),
    ("Harbour & Co", "GB", "harbour-and-co.example"),
    ("Kaufhaus Lindenhöhe", "DE", "kaufhaus-lindenhoehe.example"),
    (
        "Atlantic Avenue Outfitters",
        "US",
        "atlantic-avenue.example",
    ),
    ("Piazza Moda", "IT", "piazza-moda.example"),
];

/// Store markets: name suffix, country, currency.
pub(crate) const MARKETS: &[(&str, &str, &str)] = &[
    ("UK", "GB", "GBP"),
    ("France", "FR", "EUR"),
    ("Deutschland", "DE", "EUR"),
    ("Sverige", "SE", "SEK"),
    ("USA", "US", "USD"),
    ("Ireland", "IE", "EUR"),
    ("Nederland", "NL", "EUR"),
    ("Italia", "IT", "EUR"),
];

/// Product title openers (the first three make the docs' examples).
pub(crate) const TITLE_FIRST: &[&str] = &[
    "Crème",
    "Ärmel",
    "Éclair",
    "Fjäll",
    "Søren",
    "Côte",
    "Classic",
    "Relaxed",
    "Heritage",
    "Cropped",
    "Oversized",
    "Tailored",
    "Breton",
    "Nordic",
    "Alpine",
    "Coastal",
    "Brügge",
    "Riviera",
    "Highland",
    "Sommar",
];

/// Materials: the word in titles, the composition label, a phrase for descriptions.
pub(crate) const MATERIALS: &[(&str, &str, &str)] = &[
    ("Linen", "100% Linen", "washed linen"),
    ("Knit", "70% Wool, 30% Polyamide", "a soft wool blend"),
    ("Print", "100% Viscose", "fluid printed viscose"),
    ("Cotton", "100% Organic Cotton", "organic cotton"),
    ("Merino", "100% Merino Wool", "fine merino wool"),
    (
        "Denim",
        "98% Cotton, 2% Elastane",
        "rigid denim with a little stretch",
    ),
    ("Cord", "100% Cotton", "needlecord"),
    ("Jersey", "95% Cotton, 5% Elastane", "heavyweight jersey"),
    ("Silk", "100% Silk", "sand-washed silk"),
    ("Tweed", "80% Wool, 20% Nylon", "Donegal-style tweed"),
];

/// Garments: the word in titles, its category, its commodity code, and its price range in
/// pence (low, high).
pub(crate) const GARMENTS: &[(&str, &str, &str, i64, i64)] = &[
    ("Shirt", "Shirts", "62052000", 3_500, 12_000),
    ("Cardigan", "Knitwear", "61103099", 5_500, 16_000),
    ("Dress", "Dresses", "62044400", 6_000, 19_000),
    ("Jumper", "Knitwear", "61101130", 4_500, 15_000),
    ("Trousers", "Trousers", "62046231", 4_500, 13_000),
    ("Jacket", "Outerwear", "62023300", 9_000, 28_000),
    ("Coat", "Outerwear", "62021200", 12_000, 35_000),
    ("Skirt", "Skirts", "62045200", 3_500, 11_000),
    ("T-Shirt", "Tops", "61091000", 1_500, 4_500),
    ("Blouse", "Tops", "62063000", 3_000, 9_500),
    ("Shorts", "Shorts", "62034235", 2_500, 7_000),
    ("Hoodie", "Sweatshirts", "61102099", 4_000, 9_000),
];

/// How descriptions start.
pub(crate) const DESCRIPTION_STYLES: &[&str] = &[
    "A relaxed",
    "A tailored",
    "An easy",
    "A timeless",
    "A lightweight",
    "A boxy",
    "A cosy",
    "A fitted",
];

/// How descriptions end.
pub(crate) const DESCRIPTION_ENDINGS: &[&str] = &[
    "cut for easy layering.",
    "finished with horn-effect buttons.",
    "made to be worn all year round.",
    "with a softly dropped shoulder.",
    "garment-dyed for a lived-in feel.",
    "with contrast stitching and a curved hem.",
    "designed in our studio and made in small runs.",
];

/// Seasons, oldest first.
pub(crate) const SEASONS: &[&str] = &["SS25", "AW25", "SS26", "AW26"];

/// Countries of manufacture.
pub(crate) const ORIGINS: &[&str] = &[
    "Portugal",
    "Italy",
    "Türkiye",
    "India",
    "Bangladesh",
    "China",
    "Romania",
    "Lithuania",
    "United Kingdom",
    "Vietnam",
];

/// Care labels.
pub(crate) const CARE: &[&str] = &[
    "Machine wash 30°C",
    "Machine wash 40°C, do not tumble dry",
    "Hand wash cold, dry flat",
    "Dry clean only",
    "Wash inside out at 30°C, cool iron",
];

/// Colours (one per product).
pub(crate) const COLOURS: &[&str] = &[
    "Crème",
    "Grün",
    "Navy",
    "Black",
    "Ecru",
    "Olive",
    "Rosé",
    "Sand",
    "Charcoal",
    "Bordeaux",
    "Forest Green",
    "Ivory",
    "Ochre",
    "Sky Blue",
    "Heather Grey",
    "Bleu Nuit",
    "Terracotta",
    "Mustard",
    "Blå",
    "Weiß",
];

/// Sizes, in sequence order.
pub(crate) const SIZES: &[&str] = &["XS", "S", "M", "L", "XL"];

/// Forenames of customers, and whether the name is usually a woman's (for the honorific).
pub(crate) const FORENAMES: &[(&str, bool)] = &[
    ("Zoë", true),
    ("Jürgen", false),
    ("François", false),
    ("Amélie", true),
    ("Søren", false),
    ("Björn", false),
    ("Oliver", false),
    ("Amelia", true),
    ("Hannah", true),
    ("Lucas", false),
    ("Léa", true),
    ("Chloé", true),
    ("Mateo", false),
    ("Isla", true),
    ("Noah", false),
    ("Åsa", true),
    ("Maja", true),
    ("Emil", false),
    ("Giulia", true),
    ("Lorenzo", false),
    ("Siobhán", true),
    ("Seán", false),
    ("Niamh", true),
    ("Henrik", false),
    ("Élodie", true),
    ("Jack", false),
    ("Grace", true),
    ("Ava", true),
    ("Ethan", false),
    ("Sophie", true),
    ("Priya", true),
    ("Tomás", false),
];

/// Surnames of customers and users.
pub(crate) const SURNAMES: &[&str] = &[
    "Ångström",
    "Müller",
    "Lefèvre",
    "Smith",
    "Jones",
    "Taylor",
    "Brown",
    "Schmidt",
    "Weiß",
    "Dubois",
    "Moreau",
    "Johansson",
    "Lindqvist",
    "Öberg",
    "Rossi",
    "Bianchi",
    "de Vries",
    "van den Berg",
    "O'Brien",
    "Murphy",
    "García",
    "Núñez",
    "Novák",
    "Dvořák",
    "Wilson",
    "Evans",
    "Hughes",
    "Fischer",
    "Bäcker",
    "Patel",
    "Nieminen",
    "Ødegaard",
];

/// Honorifics for women.
pub(crate) const TITLES_WOMEN: &[&str] = &["Ms", "Mrs", "Miss"];
/// Honorifics for men.
pub(crate) const TITLES_MEN: &[&str] = &["Mr"];
/// Honorifics for anyone (empty: none given).
pub(crate) const TITLES_ANY: &[&str] = &["Mx", "Dr", ""];

/// Company names some customers give.
pub(crate) const CUSTOMER_COMPANIES: &[&str] = &[
    "Blackbird Design Studio",
    "Café Lumière",
    "Grünfeld Architekten",
    "Harbourside Dental",
];

/// Second address lines some customers give.
pub(crate) const LINE2: &[&str] = &["Flat 3", "Apartment 12", "2. OG", "Bâtiment B", "Unit 7"];

/// Mail domains of customers (reserved example domains).
pub(crate) const MAIL_DOMAINS: &[&str] = &["example.com", "example.org", "example.net"];

/// Carriers and how long their tracking numbers are.
pub(crate) const CARRIERS: &[(&str, &str)] = &[
    ("Royal Mail", "RM"),
    ("DHL Express", "JD"),
    ("DPD", "15"),
    ("UPS", "1Z"),
    ("PostNord", "PN"),
    ("Colissimo", "6A"),
];

/// Delivery services named by hosts.
pub(crate) const HOST_CARRIERS: &[&str] = &[
    "Standard Delivery",
    "Express Delivery",
    "Next Day",
    "Click & Collect",
    "Livraison en point relais",
    "Paketshop",
];

/// Messages customers leave (most leave none).
pub(crate) const CUSTOMER_MESSAGES: &[&str] = &[
    "Please leave with a neighbour if I'm out.",
    "Bitte beim Nachbarn abgeben.",
    "Merci de sonner deux fois, l'interphone est cassé.",
    "It's a gift – please don't include the receipt.",
    "Leverans efter 17:00, tack!",
    "Por favor, entregar en la portería.",
    "Zoë's birthday present, please wrap if possible.",
];

/// Why uploads fail.
pub(crate) const FILE_FAILURES: &[&str] = &[
    "Column 'barcode' is missing from the header row.",
    "The file is not a valid spreadsheet.",
    "Row 1: unknown column 'Prix TTC'.",
    "The file has no data rows.",
    "Encoding error: the file is not UTF-8.",
];

/// The MIME type of `.xlsx` uploads.
pub(crate) const XLSX_MIME: &str =
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";

/// Lower-case ASCII letters and digits of a name, for e-mail addresses and host names:
/// accents are dropped (`Crème` → `creme`), German and Nordic letters spelled out (`Ä` → `ae`,
/// `Å` → `aa`), and runs of anything else become one `sep`.
pub(crate) fn slug(name: &str, sep: &str) -> String {
    let mut out = String::new();
    let mut pending = false;
    for ch in name.chars() {
        let lower = ch.to_ascii_lowercase();
        let mut buf = [0u8; 4];
        let mapped: &str = match lower {
            'a'..='z' | '0'..='9' => lower.encode_utf8(&mut buf),
            'à' | 'á' | 'â' | 'ã' | 'À' | 'Á' | 'Â' => "a",
            'ä' | 'Ä' | 'æ' | 'Æ' => "ae",
            'å' | 'Å' => "aa",
            'ç' | 'Ç' => "c",
            'è' | 'é' | 'ê' | 'ë' | 'È' | 'É' | 'Ê' | 'Ë' => "e",
            'ì' | 'í' | 'î' | 'ï' | 'Î' => "i",
            'ñ' | 'Ñ' => "n",
            'ò' | 'ó' | 'ô' | 'Ô' => "o",
            'ö' | 'Ö' | 'ø' | 'Ø' | 'œ' => "oe",
            'ù' | 'ú' | 'û' | 'Û' => "u",
            'ü' | 'Ü' => "ue",
            'ß' => "ss",
            'ř' => "r",
            '\'' | '’' => "",
            _ => {
                pending = !out.is_empty();
                continue;
            }
        };
        push(&mut out, &mut pending, sep, mapped);
    }
    out
}

/// Appends a mapped piece, with one separator first if something was skipped before it.
fn push(out: &mut String, pending: &mut bool, sep: &str, text: &str) {
    if text.is_empty() {
        return;
    }
    if *pending {
        out.push_str(sep);
        *pending = false;
    }
    out.push_str(text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_ascii() {
        assert_eq!(slug("Crème Collective Ltd", "-"), "creme-collective-ltd");
        assert_eq!(slug("Ärmel & Söhne GmbH", "-"), "aermel-soehne-gmbh");
        assert_eq!(slug("O'Brien", "."), "obrien");
        assert_eq!(slug("Zoë", "."), "zoe");
        assert_eq!(slug("Ångström", ""), "aangstroem");
        assert_eq!(slug("van den Berg", "."), "van.den.berg");
        for name in SURNAMES
            .iter()
            .chain(FORENAMES.iter().map(|(name, _)| name))
            .chain(COMPANY_STEMS)
        {
            let s = slug(name, "-");
            assert!(!s.is_empty() && s.is_ascii(), "{name} -> {s}");
        }
    }
}
