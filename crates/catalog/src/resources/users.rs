//! The users who call the API and their API keys.

use super::{COMPANY, EVERYONE, OWNERS, SELF_SERVICE, WRITE};
use crate::handle::Res;
use crate::model::{
    Anchor::{Companies, Own, WritableTypes},
    Domain, FieldDefault, FieldType, Policy, Resource, Secret, SecretKept, UserType, boolean, fk,
    lengths, list, object, text, timestamp,
};

/// The statuses of a user; a disabled user's keys all fail.
pub const USER_STATUSES: [&str; 2] = ["active", "disabled"];

pub(super) fn user() -> Resource {
    Resource::new(
        Res::User.name(),
        "users",
        "A person or system that calls the API with its keys.",
    )
    .labelled("{name|email}")
    .field(text("name").indexed())
    .field(text("email").indexed().max_chars(lengths::EMAIL))
    .field(
        text("type")
            .short()
            .domain(Domain::OneOf(&UserType::NAMES))
            .doc("admin, sponsor, company, host or warehouse."),
    )
    .field(
        text("status")
            .short()
            .domain(Domain::OneOf(&USER_STATUSES))
            .or_else(FieldDefault::Text("active"))
            .doc("active or disabled; a disabled user's keys and sessions all fail."),
    )
    .field(timestamp("createdDate").indexed().required())
    .field(object(
        "detail",
        vec![
            text("lang").short().or_else(FieldDefault::Text("en")),
            list(
                "companies",
                FieldType::Id,
                "user_company",
                "user_id",
                "company_id",
            )
            .refers_to("company")
            .doc("Further companies the user works for."),
        ],
    ))
    .relation_fk(
        fk("fk_sponsor", "user_sponsor").optional().zero_when_none(),
        "company",
    )
    .relation_fk(
        fk("fk_host", "user_host").optional().zero_when_none(),
        "host",
    )
    .relation_fk(
        fk("fk_company", "user_company").optional().zero_when_none(),
        "company",
    )
    .relation_fk(
        fk("fk_warehouse", "user_warehouse")
            .optional()
            .zero_when_none(),
        "warehouse",
    )
    .index(&["email"], true)
    .writable(
        &[
            "name",
            "email",
            "type",
            "status",
            "detail.lang",
            "detail.companies",
            "fk_sponsor",
            "fk_host",
            "fk_company",
            "fk_warehouse",
        ],
        &["name", "email", "type"],
        &[
            "name",
            "type",
            "status",
            "detail.lang",
            "detail.companies",
            "fk_sponsor",
            "fk_host",
            "fk_company",
            "fk_warehouse",
        ],
        false,
    )
    .natural_key(&["email"])
    .policy(Policy::UserProfile)
    .scope(EVERYONE, &[&[("id", Own)]])
    .scope(
        COMPANY,
        &[
            &[("id", Own)],
            &[("fk_company", Companies)],
            &[("detail.companies", Companies)],
        ],
    )
    // Besides: never of a wider type (`UserType::writable_types`), and every company of
    // `detail.companies` one of the caller's (users.rs: lists are not rule paths).
    .writable_by(
        WRITE,
        OWNERS,
        &[&[("id", Own)], &[("fk_company", Companies)]],
    )
}

pub(super) fn api_key() -> Resource {
    Resource::new(
        Res::ApiKey.name(),
        "api_key",
        "An API key of a user, with its grants.",
    )
    .labelled("{name} · {prefix}")
    .relation_fk(
        fk("fk_user", "apiKey_user").or_else(FieldDefault::Writer(Own)),
        "user",
    )
    .field(
        text("name")
            .indexed()
            .or_else(FieldDefault::Text("API key")),
    )
    .field(
        text("prefix")
            .indexed()
            .short()
            .doc("The first 8 characters of the secret."),
    )
    .field(
        list(
            "grants",
            FieldType::Text,
            "api_key_grant",
            "api_key_id",
            "grant_text",
        )
        .doc("resource:METHODS entries, such as file:GET,POST or *:GET."),
    )
    .field(timestamp("createdDate").indexed().required())
    .field(
        timestamp("lastUsed")
            .indexed()
            .doc("When the key last authenticated (to the minute)."),
    )
    .field(
        boolean("revoked")
            .required()
            .or_else(FieldDefault::Boolean(false)),
    )
    .field(text("secretHash").internal())
    .writable(&["name", "grants", "fk_user"], &[], &[], true)
    .revoked_by("revoked")
    .with_secret(Secret {
        prefix: "bhk_",
        shown_as: "secret",
        kept: SecretKept::HashIn("secretHash"),
        start_in: Some("prefix"),
        used_in: Some("lastUsed"),
    })
    .policy(Policy::KeyGrants)
    .scope(EVERYONE, &[&[("fk_user", Own)]])
    .writable_by(WRITE, SELF_SERVICE, &[&[("fk_user", Own)]])
    // Company and sponsor users also make and revoke the keys of the users they may
    // write (docs/API.md, "Writes: users and keys": users of their companies, of a type no wider than they may
    // give), so they see those keys too; the `KeyGrants` policy checks the rest of
    // what writing that user asks and keeps every key within the writing key.
    .scope(
        COMPANY,
        &[
            &[("fk_user", Own)],
            &[
                ("apiKey_user.fk_company", Companies),
                ("apiKey_user.type", WritableTypes),
            ],
        ],
    )
    .writable_by(
        WRITE,
        OWNERS,
        &[
            &[("fk_user", Own)],
            &[
                ("apiKey_user.fk_company", Companies),
                ("apiKey_user.type", WritableTypes),
            ],
        ],
    )
}
