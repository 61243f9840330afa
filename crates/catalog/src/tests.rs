//! Tests of the catalog as declared: its resources, their fields, words, scopes and write
//! rules, and what the fields' domains admit.

use super::*;

#[test]
fn event_types_are_what_resources_and_files_announce() {
    let mut announced: Vec<&str> = catalog()
        .resources()
        .iter()
        .filter_map(|r| r.events)
        .flat_map(|e| [Some(e.created), Some(e.updated), e.deleted])
        .flatten()
        .chain(FileStatus::ALL.into_iter().filter_map(FileStatus::event))
        .collect();
    announced.sort();
    announced.dedup();
    let mut declared = EVENT_TYPES.to_vec();
    declared.sort();
    assert_eq!(announced, declared);
    for event in EVENT_TYPES {
        let about = catalog().event_resource(event).map(|r| r.name);
        assert_eq!(about, event.split('.').next(), "{event}");
    }
    assert!(catalog().event_resource("order.eaten").is_none());
}

#[test]
fn webhook_urls_are_https_to_public_hosts_or_loopback_literals() {
    assert_eq!(secure_url_problem("https://example.com/hook"), None);
    assert_eq!(secure_url_problem("https://93.184.216.34/hook"), None);
    assert_eq!(secure_url_problem("https://[2606:4700::1111]/hook"), None);
    // Loopback literals pass the domain; the store refuses them unless allowed.
    for url in [
        "http://127.0.0.1:8080/hook",
        "http://[::1]/hook",
        "https://127.0.0.1/",
    ] {
        assert_eq!(secure_url_problem(url), None, "{url}");
        assert!(is_insecure_loopback_url(url), "{url}");
    }
    assert_eq!(
        secure_url_problem("http://example.com/hook").as_deref(),
        Some("is not an https URL")
    );
    assert_eq!(
        secure_url_problem("http://127.0.0.1.example.com/").as_deref(),
        Some("is not an https URL")
    );
    assert!(!is_insecure_loopback_url("http://localhost:9/x"));
    assert!(!is_insecure_loopback_url("https://example.com/"));
}

#[test]
fn webhook_urls_naming_addresses_that_are_not_public_are_refused_however_spelled() {
    for (url, named) in [
        (
            "https://169.254.169.254/latest/meta-data/",
            "169.254.169.254, a link-local",
        ),
        ("https://10.1.2.3/", "10.1.2.3, a private"),
        ("https://0.0.0.0/", "0.0.0.0, the unspecified"),
        ("https://100.64.0.1/", "100.64.0.1, a shared"),
        ("https://192.0.2.1/", "192.0.2.1, a documentation"),
        ("https://[fd00::1]/", "fd00::1, a unique local"),
        ("https://[fe80::1]/", "fe80::1, a link-local"),
        ("https://[::ffff:10.0.0.1]/", "::ffff:10.0.0.1, a private"),
        (
            "https://[::ffff:127.0.0.1]/",
            "::ffff:127.0.0.1, a loopback",
        ),
        ("https://224.0.0.1/", "224.0.0.1, a multicast"),
        ("https://[::]/", "::, the unspecified"),
    ] {
        let problem = secure_url_problem(url).unwrap_or_default();
        assert!(
            problem.starts_with(&format!("names {named}")),
            "{url}: {problem}"
        );
        assert!(problem.contains("public"), "{url}: {problem}");
    }
    // Every spelling a client reads as 127.0.0.1 is the loopback address.
    for url in [
        "https://127.0.0.1/",
        "https://0x7f000001/",
        "https://2130706433/",
        "https://127.1/",
        "https://0177.0.0.1/",
        "https://0x7f.0.0.1/",
    ] {
        let problem = webhook_url_problem(url, false).unwrap_or_default();
        assert!(
            problem.starts_with("names 127.0.0.1, a loopback address"),
            "{url}: {problem}"
        );
        assert!(is_insecure_loopback_url(url), "{url}");
        assert_eq!(webhook_url_problem(url, true), None, "{url}");
    }
    assert!(
        webhook_url_problem("http://[::1]:9/", false)
            .unwrap()
            .contains("--webhook-allow-insecure-localhost")
    );
    for url in [
        "https://localhost/",
        "https://LocalHost./x",
        "https://api.localhost/",
        "http://localhost:9/",
    ] {
        let problem = secure_url_problem(url).unwrap_or_default();
        assert!(
            problem.contains("this machine, not a public address"),
            "{url}: {problem}"
        );
    }
    // A user name is not the host: refused, with or without the loopback allowance.
    for url in [
        "http://localhost:80@example.invalid/",
        "https://user:pw@example.com/",
        "http://x@127.0.0.1/",
    ] {
        for allowed in [false, true] {
            let problem = webhook_url_problem(url, allowed).unwrap_or_default();
            assert!(
                problem.contains("user name or password"),
                "{url}: {problem}"
            );
        }
        assert!(!is_insecure_loopback_url(url), "{url}");
    }
    // Names are left to the resolver when a delivery connects.
    assert_eq!(webhook_url_problem("https://localhost/", false), None);
    assert_eq!(
        webhook_url_problem("https://hooks.example.com/", false),
        None
    );
}

#[test]
fn quantities_are_whole_numbers_within_their_range() {
    let item = catalog().resource("orderItem").unwrap();
    let qty = item.field_at("orderQty").unwrap();
    for fine in [1, 2, 1_000_000] {
        assert_eq!(qty.admit(Cell::Integer(fine)), Ok(Cell::Integer(fine)));
    }
    for outside in [0, -1, 1_000_001, i64::MAX, i64::MIN] {
        let refused = qty.admit(Cell::Integer(outside)).unwrap_err();
        assert_eq!(refused, "must be a whole number from 1 to 1,000,000");
        assert_eq!(
            refused.in_lang(brandhub_problem::Lang::De),
            "muss eine ganze Zahl von 1 bis 1.000.000 sein"
        );
    }
    let shipped = item.field_at("shipQty").unwrap();
    assert!(shipped.value_problem(&Cell::Integer(0)).is_none());
    assert!(
        shipped
            .value_problem(&Cell::Integer(1_000_000_000))
            .is_none()
    );
    let problem = shipped
        .value_problem(&Cell::Integer(1_000_000_001))
        .unwrap();
    assert_eq!(problem, "must be a whole number from 0 to 1,000,000,000");
    // A number that is not whole, or not finite, is no quantity.
    for not_whole in [1.5, f64::NAN, f64::INFINITY, 1e300] {
        assert!(shipped.value_problem(&Cell::Number(not_whole)).is_some());
    }
}

#[test]
fn amounts_are_finite_bounded_and_kept_to_two_decimals() {
    let item = catalog().resource("orderItem").unwrap();
    let price = item.field_at("itemPrice").unwrap();
    assert_eq!(price.admit(Cell::Number(19.999)), Ok(Cell::Number(20.0)));
    assert_eq!(price.admit(Cell::Number(0.125)), Ok(Cell::Number(0.13)));
    assert_eq!(price.admit(Cell::Number(-0.0)), Ok(Cell::Number(0.0)));
    assert_eq!(
        price.admit(Cell::Number(1e9)),
        Ok(Cell::Number(1_000_000_000.0))
    );
    for outside in [-0.01, 1_000_000_000.01, 1e308, f64::INFINITY, f64::NAN] {
        assert_eq!(
            price.value_problem(&Cell::Number(outside)).as_deref(),
            Some("must be an amount from 0 to 1,000,000,000, kept to 2 decimals"),
            "{outside}"
        );
    }
    let tax = item.field_at("lineTax").unwrap();
    assert_eq!(tax.admit(Cell::Number(-12.345)), Ok(Cell::Number(-12.35)));
    assert_eq!(
        format!("{:?}", tax.admit(Cell::Number(-0.001)).unwrap()),
        "Number(0.0)",
        "no negative zero is kept"
    );
    assert!(tax.value_problem(&Cell::Number(-1e9)).is_none());
    assert!(tax.value_problem(&Cell::Number(-1e9 - 1.0)).is_some());
    assert_eq!(
        tax.expected(),
        "an amount from -1,000,000,000 to 1,000,000,000, kept to 2 decimals"
    );
}

#[test]
fn moved_counts_are_held_within_the_move_range() {
    let stock = catalog().resource("stock").unwrap();
    for path in ["inStock", "demand"] {
        let field = stock.field_at(path).unwrap();
        assert_eq!(
            field.held,
            Some((-limits::MOST_UNITS, limits::MOST_UNITS)),
            "{path}"
        );
    }
    assert_eq!(grouped(-1_000_000_000), "-1,000,000,000");
    assert_eq!(grouped(999), "999");
    assert_eq!(grouped(1000), "1,000");
    assert_eq!(grouped(i64::MIN), "-9,223,372,036,854,775,808");
}

#[test]
fn every_record_has_a_display_label_and_every_field_its_words() {
    let cat = catalog();
    let stock = cat.resource("stock").unwrap();
    assert_eq!(
        cat.label_fields(stock),
        [
            "stock_variant.variant_product.title",
            "stock_variant.variant_product.code",
            "stock_variant.colour",
            "stock_variant.size",
            "stock_variant.barcode",
            "stock_warehouse.name",
        ]
    );
    let order = cat.resource("order").unwrap();
    assert_eq!(order.label_parts(), [vec!["brandOrderRef", "hostOrderRef"]]);
    assert_eq!(
        words::field_title("order", "sentToWH").map(|w| w.de),
        Some("An das Lager gegeben")
    );
    assert_eq!(
        words::field_title("order", "shipAddress.title").map(|w| w.en),
        Some("Title")
    );
    assert_eq!(words::code_word("DSP").map(|w| w.de), Some("Versandt"));
    let lines = order.relation("order_orderItem").unwrap();
    assert_eq!(
        cat.relation_title(order, lines).map(|w| w.en),
        Some("Order lines")
    );
    let net = order.field_at("detail.net").unwrap();
    assert!(net.is_money() && net.currency == Some("order_orderItem.currency"));
}

#[test]
fn the_catalog_is_consistent_and_has_every_contract_resource() {
    let names: Vec<_> = catalog().resource_names().collect();
    for expected in [
        "file",
        "stock",
        "order",
        "orderItem",
        "brand",
        "brandStore",
        "warehouse",
        "host",
        "store",
        "product",
        "variant",
        "user",
        "company",
        "price",
        "image",
        "apiKey",
    ] {
        assert!(names.contains(&expected), "missing {expected}");
    }
}

#[test]
fn object_subfields_get_dotted_paths_and_flat_columns() {
    let order = catalog().resource("order").unwrap();
    let net = order.field_at("detail.net").unwrap();
    assert_eq!(net.path, "detail.net");
    assert_eq!(net.column, "detail_net");
    assert_eq!(net.ty, FieldType::Number);
    assert!(!net.visible_to(UserType::Warehouse));
    assert!(net.visible_to(UserType::Host));
    let line1 = order.field_at("billAddress.line1").unwrap();
    assert_eq!(line1.folded_column().unwrap(), "bill_address_line1_ci");
}

#[test]
fn relations_resolve_to_their_targets() {
    let stock = catalog().resource("stock").unwrap();
    let variant = stock.relation("stock_variant").unwrap();
    assert_eq!(catalog().target(variant).name, "variant");
    assert_eq!(stock.fk_field(variant).unwrap().name, "fk_variant");
    let order = catalog().resource("order").unwrap();
    assert!(!order.relation("order_orderItem").unwrap().is_to_one());
}

/// The paths of a rule's only group, or `None` for everything / nothing.
fn rule_paths(scope: &Scope) -> Option<Vec<(&'static str, Anchor)>> {
    match scope {
        Scope::AnyOf(groups) => Some(
            groups
                .iter()
                .flatten()
                .map(|term| (term.path, term.anchor))
                .collect(),
        ),
        _ => None,
    }
}

#[test]
fn who_writes_what_follows_the_contract_table() {
    let rule = |resource: &str, action: WriteAction, user_type: UserType| {
        catalog()
            .resource(resource)
            .unwrap()
            .authority_of(action, user_type)
    };
    use UserType::*;
    use WriteAction::*;
    // Admins write everything, whatever the declarations say.
    for resource in catalog().resources() {
        for action in WriteAction::ALL {
            assert_eq!(resource.authority_of(action, Admin), Scope::Everything);
        }
    }
    // A brand's catalogue: its company's users (and sponsors over their companies).
    for resource in ["product", "variant", "image", "price"] {
        for user_type in [Company, Sponsor] {
            let paths = rule_paths(&rule(resource, Write, user_type)).unwrap();
            assert_eq!(paths.len(), 1, "{resource}");
            assert!(
                paths[0].0.ends_with("_brand.fk_company"),
                "{resource}: {paths:?}"
            );
            assert_eq!(paths[0].1, Anchor::Companies);
        }
        for user_type in [Host, Warehouse] {
            assert_eq!(
                rule(resource, Write, user_type),
                Scope::Nothing,
                "{resource}"
            );
        }
    }
    // Stock: the owners of its warehouse, and the warehouse's own users.
    assert_eq!(
        rule_paths(&rule("stock", Write, Company)).unwrap(),
        vec![("stock_warehouse.fk_company", Anchor::Companies)]
    );
    assert_eq!(
        rule_paths(&rule("stock", Write, Warehouse)).unwrap(),
        vec![("fk_warehouse", Anchor::Warehouse)]
    );
    assert_eq!(rule("stock", Write, Host), Scope::Nothing);
    // Orders move through their lifecycle: dispatch by the warehouse or the brand's owner.
    assert_eq!(
        rule_paths(&rule("order", Dispatch, Warehouse)).unwrap(),
        vec![("fk_warehouse", Anchor::Warehouse)]
    );
    assert!(rule_paths(&rule("order", Dispatch, Sponsor)).is_some());
    assert_eq!(rule("order", Dispatch, Host), Scope::Nothing);
    assert_eq!(rule("order", Write, Company), Scope::Nothing);
    // Hosts write their own stores; sponsors the companies they sponsor.
    assert_eq!(
        rule_paths(&rule("store", Write, Host)).unwrap(),
        vec![("fk_host", Anchor::Host)]
    );
    assert_eq!(rule("host", Write, Host), Scope::Nothing);
    assert_eq!(
        rule_paths(&rule("company", Write, Sponsor)).unwrap(),
        vec![("fk_sponsor", Anchor::Sponsor)]
    );
    assert_eq!(rule("company", Write, Company), Scope::Nothing);
    // Keys: one's own, and for company and sponsor users those of the users of their
    // companies; users: of one's companies, never of a wider type.
    for user_type in [Host, Warehouse] {
        assert_eq!(
            rule_paths(&rule("apiKey", Write, user_type)).unwrap(),
            vec![("fk_user", Anchor::Own)]
        );
    }
    for user_type in [Sponsor, Company] {
        assert_eq!(
            rule_paths(&rule("apiKey", Write, user_type)).unwrap(),
            vec![
                ("fk_user", Anchor::Own),
                ("apiKey_user.fk_company", Anchor::Companies),
                ("apiKey_user.type", Anchor::WritableTypes)
            ]
        );
    }
    assert_eq!(rule("user", Write, Host), Scope::Nothing);
    assert_eq!(Company.writable_types(), &[Company]);
    assert!(!Sponsor.writable_types().contains(&Admin));
    assert!(Warehouse.writable_types().is_empty());
    assert_eq!(Admin.writable_types().len(), UserType::ALL.len());
}

#[test]
fn every_resource_has_a_stamped_updated_date_rendered_last() {
    for resource in catalog().resources() {
        let updated = resource.field_named(UPDATED_DATE).unwrap();
        assert!(updated.stamped, "{}", resource.name);
        assert_eq!(resource.fields.last().unwrap().path, UPDATED_DATE);
        for stamped in resource.stamped_fields() {
            assert_eq!(stamped.ty, FieldType::Timestamp, "{}", resource.name);
            assert!(!resource.writes.create.contains(&stamped.path.as_str()));
            assert!(!resource.writes.update.contains(&stamped.path.as_str()));
        }
    }
}

#[test]
fn internal_fields_are_invisible_to_everyone() {
    let key = catalog().resource("apiKey").unwrap();
    let hash = key.field_named("secretHash").unwrap();
    assert!(UserType::ALL.iter().all(|t| !hash.visible_to(*t)));
    assert!(hash.folded_column().is_none());
}

#[test]
fn the_file_paths_code_uses_are_fields_of_file() {
    let file = catalog().resource("file").unwrap();
    for path in file_paths::ALL {
        let field = file.field_at(path);
        assert!(field.is_some_and(|f| f.has_column()), "{path}");
    }
    let status = file.field_at(file_paths::STATUS).unwrap();
    assert_eq!(
        status.domain.and_then(|d| d.words()),
        Some(&FILE_STATUSES[..])
    );
    for status in FileStatus::ALL {
        assert_eq!(FileStatus::named(status.as_str()), Some(status));
    }
}

#[test]
fn an_object_in_a_write_declaration_stands_for_its_parts() {
    let order = catalog().resource("order").unwrap();
    for object in ["shipAddress", "billAddress"] {
        for part in ADDRESS_PARTS {
            let path = format!("{object}.{part}");
            assert!(order.writes.create.contains(&path.as_str()), "{path}");
        }
        assert!(!order.writes.create.contains(&object));
    }
    assert!(order.writes.create.contains(&"shipAddress.id"));
}
