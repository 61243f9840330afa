//! What can go wrong in the store, in the store's own terms. The store says what happened (a
//! record not found, a key taken, a version that moved on); the server decides how each is
//! answered (`server::problem`), so no HTTP status is chosen down here.

use brandhub_problem::{ApiError, FieldError, Words, words};
use std::fmt;

/// A store operation that did not happen, and why.
#[derive(Debug, Clone, PartialEq)]
pub enum StoreError {
    /// The request was refused by the stage that reads it (a body or a header parsed on the
    /// store's behalf): passed through as that stage decided it.
    Request(ApiError),
    /// Values a write may not have: every problem at once, by record and field; `about`
    /// names what was written when the caller wrote several kinds at once (an import).
    Invalid {
        problems: Vec<FieldError>,
        about: Option<String>,
    },
    /// No such record, or none the caller sees: the same to the caller.
    NotFound(Words),
    /// The caller sees the record but may not do this to it.
    Refused(Words),
    /// The write conflicts with what is stored: a key taken, a record still referred to, a
    /// limit reached, a race lost.
    Conflict {
        detail: Words,
        field: Option<String>,
    },
    /// The record changed since the version the caller named (`If-Match`).
    Stale(Words),
    /// A lifecycle step the transition table does not allow from the record's status.
    Transition(Words),
    /// The store cannot be opened as configured (a database URL of an unknown kind).
    Config(String),
    /// The database cannot be reached now (a connection refused, reset or ended by its
    /// server, no pooled connection or SQLite lock within the wait): the same operation may
    /// succeed unchanged once it answers again. The cause is in the log.
    Unavailable,
    /// The database failed; the cause is in the log.
    Internal,
    /// A stored row did not decode as the catalog says it should (a value its field's type
    /// cannot hold): the fault of that row, not of the database, which answered. Told to
    /// clients as [`StoreError::Internal`]; the text says what failed, for the log and for
    /// admins (a webhook event set aside because its record did not read).
    Unreadable(String),
}

/// [`StoreError::raced`]'s detail.
const RACED: &str = "The record changed while this write was being checked; send it again.";

/// [`RACED`] in German.
const RACED_DE: &str = "Der Datensatz hat sich geändert, während dieser Schreibvorgang geprüft wurde; bitte erneut senden.";

/// Shorthand for store results.
pub type StoreResult<T> = Result<T, StoreError>;

impl StoreError {
    /// A conflict, with the field (or fields) it is about.
    pub fn conflict(detail: impl Into<Words>, field: impl Into<String>) -> StoreError {
        StoreError::Conflict {
            detail: detail.into(),
            field: Some(field.into()),
        }
    }

    /// A write that checked a record without locking it ([`crate::write::Begin::Optimistic`])
    /// found, when it wrote, that the record had changed meanwhile: nothing was written, and
    /// the write is done again. Told as a conflict should it ever reach a caller.
    pub fn raced() -> StoreError {
        StoreError::Conflict {
            detail: Words::new(RACED, RACED_DE),
            field: None,
        }
    }

    /// Whether this is [`StoreError::raced`].
    pub fn is_raced(&self) -> bool {
        matches!(self, StoreError::Conflict { detail, field: None } if *detail == RACED)
    }

    /// Every problem of a write, listed by record then field.
    pub fn invalid(mut problems: Vec<FieldError>) -> StoreError {
        problems.sort_by(|a, b| (a.index, &a.field).cmp(&(b.index, &b.field)));
        StoreError::Invalid {
            problems,
            about: None,
        }
    }

    /// The same error, about element `index` of an array write: its message says so and its
    /// problems carry the index.
    pub fn at_element(self, index: usize) -> StoreError {
        let prefix =
            |detail: Words| detail.led_by(words!("Element {index}: ", "Element {index}: "));
        match self {
            StoreError::Invalid { problems, about } => StoreError::Invalid {
                problems: problems
                    .into_iter()
                    .map(|p| FieldError {
                        index: Some(index),
                        ..p
                    })
                    .collect(),
                about,
            },
            StoreError::NotFound(detail) => StoreError::NotFound(prefix(detail)),
            StoreError::Refused(detail) => StoreError::Refused(prefix(detail)),
            StoreError::Conflict { detail, field } => StoreError::Conflict {
                detail: prefix(detail),
                field,
            },
            StoreError::Stale(detail) => StoreError::Stale(prefix(detail)),
            StoreError::Transition(detail) => StoreError::Transition(prefix(detail)),
            other => other,
        }
    }

    /// The same error, its message led by `what` (`company: …` in an import).
    pub fn about(self, what: &str) -> StoreError {
        let lead = |detail: Words| detail.led_by(Words::english(format!("{what}: ")));
        match self {
            StoreError::Request(mut error) => {
                error.detail = lead(error.detail);
                StoreError::Request(error)
            }
            StoreError::NotFound(detail) => StoreError::NotFound(lead(detail)),
            StoreError::Refused(detail) => StoreError::Refused(lead(detail)),
            StoreError::Conflict { detail, field } => StoreError::Conflict {
                detail: lead(detail),
                field,
            },
            StoreError::Stale(detail) => StoreError::Stale(lead(detail)),
            StoreError::Transition(detail) => StoreError::Transition(lead(detail)),
            StoreError::Invalid { problems, .. } => StoreError::Invalid {
                problems,
                about: Some(what.to_string()),
            },
            other => other,
        }
    }
}

impl From<ApiError> for StoreError {
    fn from(error: ApiError) -> StoreError {
        StoreError::Request(error)
    }
}

impl StoreError {
    /// What the error says, in each language the API speaks.
    pub fn words(&self) -> Words {
        match self {
            StoreError::Request(error) => error.detail.clone(),
            StoreError::Invalid { problems, about } => {
                let refusal = ApiError::refusal(problems);
                match about {
                    Some(about) => refusal.led_by(Words::english(format!("{about}: "))),
                    None => refusal,
                }
            }
            StoreError::NotFound(detail)
            | StoreError::Refused(detail)
            | StoreError::Stale(detail)
            | StoreError::Transition(detail)
            | StoreError::Conflict { detail, .. } => detail.clone(),
            StoreError::Config(detail) | StoreError::Unreadable(detail) => {
                Words::english(detail.as_str())
            }
            StoreError::Unavailable => {
                Words::english("the database cannot be reached now; the log has the cause")
            }
            StoreError::Internal => Words::english("the store failed; the log has the cause"),
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.words())
    }
}

impl std::error::Error for StoreError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_are_listed_by_record_then_field_and_carry_their_element() {
        let error = StoreError::invalid(vec![
            FieldError::new("name", "must not be empty"),
            FieldError::new("code", "is required"),
        ]);
        let StoreError::Invalid { problems, .. } = error.clone().at_element(3) else {
            panic!("still invalid")
        };
        assert_eq!(problems[0].field, "code");
        assert!(problems.iter().all(|p| p.index == Some(3)));
        assert_eq!(
            error.to_string(),
            "The write was refused: code is required; name must not be empty."
        );
        let conflict = StoreError::conflict("taken", "code").at_element(2);
        assert_eq!(conflict.to_string(), "Element 2: taken");
    }
}
