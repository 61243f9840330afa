//! Key grants: `resource:METHODS` entries (`file:GET,POST`, `*:GET`, `*:*`) that say which
//! calls a key may make (docs/API.md, "Transport and authentication"). What a key may do is always the intersection of its
//! stored grants and what its user's type allows now ([`effective`]): a user whose type
//! changes keeps its keys, and each key shrinks (or grows back, never past its stored grants)
//! to the new type on its next request.

use brandhub_catalog::{UserType, catalog};

/// The methods a grant can name.
pub const METHODS: [&str; 4] = ["GET", "POST", "PATCH", "DELETE"];

/// One parsed grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// A resource name, or `*` for any.
    pub resource: String,
    /// Upper-case methods, or `["*"]` for any.
    pub methods: Vec<String>,
}

impl Grant {
    /// Parses `resource:METHODS`; the error says what is wrong.
    pub fn parse(text: &str) -> Result<Grant, String> {
        let (resource, methods) = text.split_once(':').ok_or_else(|| {
            format!("grant '{text}' is not resource:METHODS (for example file:GET,POST or *:GET)")
        })?;
        let resource = resource.trim();
        if resource != "*" && catalog().resource(resource).is_none() {
            let names: Vec<&str> = catalog().resource_names().collect();
            return Err(format!(
                "grant '{text}' names unknown resource '{resource}'; valid: *, {}",
                names.join(", ")
            ));
        }
        let methods: Vec<String> = methods
            .split(',')
            .map(|m| m.trim().to_ascii_uppercase())
            .collect();
        for method in &methods {
            if method != "*" && !METHODS.contains(&method.as_str()) {
                return Err(format!(
                    "grant '{text}' names unknown method '{method}'; valid: *, {}",
                    METHODS.join(", ")
                ));
            }
        }
        Ok(Grant {
            resource: resource.to_string(),
            methods,
        })
    }

    /// Whether the grant allows `method` on `resource` (HEAD counts as GET).
    pub fn allows(&self, resource: &str, method: &str) -> bool {
        let method = if method == "HEAD" { "GET" } else { method };
        (self.resource == "*" || self.resource == resource)
            && self.methods.iter().any(|m| m == "*" || m == method)
    }

    /// The calls both grants allow, as one grant (`None` when they share none).
    pub fn intersect(&self, other: &Grant) -> Option<Grant> {
        let resource = if self.resource == "*" {
            other.resource.clone()
        } else if other.resource == "*" || other.resource == self.resource {
            self.resource.clone()
        } else {
            return None;
        };
        let any = |methods: &[String]| methods.iter().any(|m| m == "*");
        let methods: Vec<String> = if any(&self.methods) {
            other.methods.clone()
        } else if any(&other.methods) {
            self.methods.clone()
        } else {
            self.methods
                .iter()
                .filter(|m| other.methods.contains(m))
                .cloned()
                .collect()
        };
        (!methods.is_empty()).then_some(Grant { resource, methods })
    }

    /// Whether every call this grant allows is also allowed by `within`.
    pub fn is_within(&self, within: &[Grant]) -> bool {
        let resources: Vec<&str> = if self.resource == "*" {
            let mut all: Vec<&str> = catalog().resource_names().collect();
            all.push("*");
            all
        } else {
            vec![self.resource.as_str()]
        };
        let methods: Vec<&str> = if self.methods.iter().any(|m| m == "*") {
            METHODS.to_vec()
        } else {
            self.methods.iter().map(String::as_str).collect()
        };
        resources.iter().all(|r| {
            methods.iter().all(|m| {
                within.iter().any(|g| {
                    if *r == "*" {
                        g.resource == "*" && g.allows("*", m)
                    } else {
                        g.allows(r, m)
                    }
                })
            })
        })
    }
}

impl std::fmt::Display for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.resource, self.methods.join(","))
    }
}

/// The grants a key gets when none are given, which are also the most a key of a user of
/// this type may use (docs/API.md, "Transport and authentication"). Admins, sponsors and companies may call everything (what
/// they may write is bounded by the catalog's write rules, docs/API.md, "Writes: users and keys"); hosts and warehouse
/// users read, and write what is theirs (their stores, their offers' SKUs or their stock,
/// their keys and webhooks).
pub fn default_grants(user_type: UserType) -> Vec<Grant> {
    let texts: &[&str] = match user_type {
        UserType::Admin | UserType::Sponsor | UserType::Company => &["*:*"],
        UserType::Host => &[
            "*:GET",
            "order:POST,PATCH",
            "offer:PATCH",
            "store:*",
            "webhook:*",
            "apiKey:*",
        ],
        UserType::Warehouse => &[
            "*:GET",
            "file:POST",
            "order:PATCH",
            "stock:*",
            "webhook:*",
            "apiKey:*",
        ],
    };
    texts
        .iter()
        .map(|t| Grant::parse(t).expect("default grants parse"))
        .collect()
}

/// What a key with these stored grants may do for a user of this type now: every call both
/// the key and the type allow.
pub fn effective(stored: &[Grant], user_type: UserType) -> Vec<Grant> {
    let ceiling = default_grants(user_type);
    let mut effective: Vec<Grant> = Vec::new();
    for grant in stored {
        for allowed in &ceiling {
            if let Some(both) = grant.intersect(allowed)
                && !both.is_within(&effective)
            {
                effective.push(both);
            }
        }
    }
    effective
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_parse_and_allow() {
        let grant = Grant::parse("file:GET,post").unwrap();
        assert!(grant.allows("file", "POST"));
        assert!(grant.allows("file", "HEAD"));
        assert!(!grant.allows("stock", "GET"));
        assert!(Grant::parse("*:*").unwrap().allows("stock", "DELETE"));
        assert!(
            Grant::parse("nope:GET")
                .unwrap_err()
                .contains("unknown resource")
        );
        assert!(
            Grant::parse("file:FETCH")
                .unwrap_err()
                .contains("unknown method")
        );
        assert!(Grant::parse("file").is_err());
    }

    fn parsed(texts: &[&str]) -> Vec<Grant> {
        texts.iter().map(|t| Grant::parse(t).unwrap()).collect()
    }

    fn shown(grants: &[Grant]) -> Vec<String> {
        grants.iter().map(Grant::to_string).collect()
    }

    #[test]
    fn narrower_grants_are_within_wider_ones() {
        let host = default_grants(UserType::Host);
        assert!(Grant::parse("stock:GET").unwrap().is_within(&host));
        assert!(Grant::parse("*:GET").unwrap().is_within(&host));
        assert!(Grant::parse("store:DELETE").unwrap().is_within(&host));
        assert!(!Grant::parse("stock:POST").unwrap().is_within(&host));
        assert!(!Grant::parse("*:*").unwrap().is_within(&host));
        for user_type in [UserType::Admin, UserType::Sponsor, UserType::Company] {
            assert!(
                Grant::parse("*:*")
                    .unwrap()
                    .is_within(&default_grants(user_type))
            );
        }
    }

    #[test]
    fn grants_intersect_call_by_call() {
        let both = |a: &str, b: &str| {
            Grant::parse(a)
                .unwrap()
                .intersect(&Grant::parse(b).unwrap())
                .map(|g| g.to_string())
        };
        assert_eq!(
            both("*:*", "order:POST,PATCH").as_deref(),
            Some("order:POST,PATCH")
        );
        assert_eq!(
            both("order:GET,PATCH", "*:GET").as_deref(),
            Some("order:GET")
        );
        assert_eq!(both("file:*", "*:GET").as_deref(), Some("file:GET"));
        assert_eq!(both("file:POST", "*:GET"), None);
        assert_eq!(both("file:*", "stock:*"), None);
    }

    #[test]
    fn a_key_never_does_more_than_its_user_type_allows_now() {
        // An admin's `*:*` key of a user who is now a host: the host's calls, no more.
        let wide = parsed(&["*:*"]);
        assert_eq!(
            shown(&effective(&wide, UserType::Host)),
            shown(&default_grants(UserType::Host))
        );
        let host = effective(&wide, UserType::Host);
        let may = |resource: &str, method: &str| host.iter().any(|g| g.allows(resource, method));
        assert!(may("brand", "GET") && may("order", "POST") && may("apiKey", "DELETE"));
        assert!(!may("user", "POST") && !may("user", "PATCH") && !may("file", "POST"));
        // A narrow key stays narrow under any type.
        let narrow = parsed(&["brand:GET", "file:POST"]);
        assert_eq!(
            shown(&effective(&narrow, UserType::Admin)),
            vec!["brand:GET", "file:POST"]
        );
        assert_eq!(
            shown(&effective(&narrow, UserType::Host)),
            vec!["brand:GET"]
        );
        assert!(effective(&parsed(&["user:POST"]), UserType::Warehouse).is_empty());
    }
}
