//! Key grants: `resource:METHODS` entries (`file:GET,POST`, `*:GET`, `*:*`) that say which
//! calls a key may make (CONTRACT §2).

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

/// The grants a key gets when none are given (CONTRACT §2).
pub fn default_grants(user_type: UserType) -> Vec<Grant> {
    let texts: &[&str] = match user_type {
        UserType::Admin => &["*:*"],
        UserType::Sponsor | UserType::Company => &["*:GET", "file:POST"],
        UserType::Host => &["*:GET", "order:POST,PATCH"],
        UserType::Warehouse => &["*:GET", "file:POST", "order:PATCH"],
    };
    texts
        .iter()
        .map(|t| Grant::parse(t).expect("default grants parse"))
        .collect()
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

    #[test]
    fn narrower_grants_are_within_wider_ones() {
        let company = default_grants(UserType::Company);
        assert!(Grant::parse("stock:GET").unwrap().is_within(&company));
        assert!(Grant::parse("*:GET").unwrap().is_within(&company));
        assert!(!Grant::parse("stock:POST").unwrap().is_within(&company));
        assert!(!Grant::parse("*:*").unwrap().is_within(&company));
        assert!(
            Grant::parse("*:*")
                .unwrap()
                .is_within(&default_grants(UserType::Admin))
        );
    }
}
