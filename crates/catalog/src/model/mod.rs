//! The shapes the catalog is made of. Everything that describes a resource (its SQL, its
//! validation, its rendering, its OpenAPI schema and its documentation) is derived from these.

mod domain;
mod field;
mod resource;
mod rules;
mod urls;

pub use domain::*;
pub use field::*;
pub use resource::*;
pub use rules::*;
pub use urls::*;

/// The kinds of user a key can belong to; they decide scope and restricted properties.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UserType {
    Admin,
    Sponsor,
    Company,
    Host,
    Warehouse,
}

impl UserType {
    /// Every user type, in the order the docs list them.
    pub const ALL: [UserType; 5] = [
        UserType::Admin,
        UserType::Sponsor,
        UserType::Company,
        UserType::Host,
        UserType::Warehouse,
    ];

    /// The values of `user.type`, in the order of [`UserType::ALL`].
    pub const NAMES: [&'static str; 5] = ["admin", "sponsor", "company", "host", "warehouse"];

    /// The value stored in `user.type` and accepted on the command line.
    pub fn as_str(self) -> &'static str {
        let at = UserType::ALL
            .iter()
            .position(|t| *t == self)
            .expect("every type is in ALL");
        UserType::NAMES[at]
    }

    /// Parses the stored or typed form.
    pub fn parse(text: &str) -> Option<UserType> {
        UserType::ALL.into_iter().find(|t| t.as_str() == text)
    }

    /// The types a user of this type may give the users it writes (docs/API.md, "Writes: master data and catalogue": "never of a
    /// wider type"). An admin gives any type; a sponsor its own type or company; a company
    /// user company; host and warehouse users write no users.
    pub fn writable_types(self) -> &'static [UserType] {
        match self {
            UserType::Admin => &UserType::ALL,
            UserType::Sponsor => &[UserType::Sponsor, UserType::Company],
            UserType::Company => &[UserType::Company],
            UserType::Host | UserType::Warehouse => &[],
        }
    }
}
