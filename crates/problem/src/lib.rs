//! The API's error vocabulary: one enum of codes, one table mapping each code to its HTTP status
//! and title, and [`ApiError`], the problem+json value (RFC 9457) that every stage of the
//! pipeline returns. Parsing, planning, storage and the HTTP layer all speak this type, so an
//! error keeps its code from wherever it was decided up to the response.

use serde::Serialize;
use std::fmt;

mod words;
pub use words::Words;

macro_rules! codes {
    ($($variant:ident => $status:literal, $code:literal, $title:literal;)*) => {
        /// A stable, machine-readable error code (docs/API.md, "Errors"). Clients branch on these.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code { $($variant),* }

        impl Code {
            /// Every code, in table order: the docs and the tests iterate over it.
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];

            /// The HTTP status this code is answered with.
            pub fn status(self) -> u16 {
                match self { $(Code::$variant => $status),* }
            }

            /// The snake_case name sent as `code`.
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $code),* }
            }

            /// The short human summary sent as `title`.
            pub fn title(self) -> &'static str {
                match self { $(Code::$variant => $title),* }
            }
        }
    };
}

codes! {
    InvalidParameter     => 400, "invalid_parameter",      "Invalid parameter";
    UnknownField         => 400, "unknown_field",          "Unknown field";
    InvalidValue         => 400, "invalid_value",          "Invalid value";
    InvalidQuery         => 400, "invalid_query",          "Invalid query";
    InvalidUpload        => 400, "invalid_upload",         "Invalid upload";
    Unauthenticated      => 401, "unauthenticated",        "Authentication required";
    Forbidden            => 403, "forbidden",              "Forbidden";
    HttpsRequired        => 403, "https_required",         "HTTPS required";
    NotFound             => 404, "not_found",              "Not found";
    MethodNotAllowed     => 405, "method_not_allowed",     "Method not allowed";
    RequestTimeout       => 408, "request_timeout",        "Request timeout";
    Conflict             => 409, "conflict",               "Conflict";
    InvalidTransition    => 409, "invalid_transition",     "Invalid transition";
    CursorReset          => 409, "cursor_reset",           "Cursor reset";
    CursorExpired        => 410, "cursor_expired",         "Cursor expired";
    PreconditionFailed   => 412, "precondition_failed",    "Precondition failed";
    PayloadTooLarge      => 413, "payload_too_large",      "Payload too large";
    UriTooLong           => 414, "uri_too_long",           "URI too long";
    UnsupportedMediaType => 415, "unsupported_media_type", "Unsupported media type";
    ValidationFailed     => 422, "validation_failed",      "Validation failed";
    RateLimited          => 429, "rate_limited",           "Too many requests";
    Internal             => 500, "internal",               "Internal error";
    Unavailable          => 503, "unavailable",            "Service unavailable";
}

/// A language the API tells problems in: English, or German for a client that asks for it
/// (`Accept-Language`). The `code` and the `detail` stay as they are; the `title` follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lang {
    #[default]
    En,
    De,
}

impl Lang {
    /// The language of an `Accept-Language` header: the first of its tags the API speaks, in
    /// the order the client gives them (weights are not weighed), else English.
    pub fn from_accept_language(header: &str) -> Lang {
        header
            .split(',')
            .filter_map(|tag| tag.split(';').next())
            .map(|tag| tag.trim().to_ascii_lowercase())
            .find_map(|tag| match tag.split('-').next() {
                Some("de") => Some(Lang::De),
                Some("en") => Some(Lang::En),
                _ => None,
            })
            .unwrap_or_default()
    }

    /// The language a `detail.lang` names, if the API speaks it.
    pub fn from_tag(tag: &str) -> Option<Lang> {
        match tag {
            "en" => Some(Lang::En),
            "de" => Some(Lang::De),
            _ => None,
        }
    }

    /// The language's tag (`en`, `de`), as `Content-Language` and `detail.lang` name it.
    pub fn tag(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::De => "de",
        }
    }
}

impl Code {
    /// The short human summary in `lang`.
    pub fn title_in(self, lang: Lang) -> &'static str {
        match lang {
            Lang::En => self.title(),
            Lang::De => self.german_title(),
        }
    }

    fn german_title(self) -> &'static str {
        match self {
            Code::InvalidParameter => "Ungültiger Parameter",
            Code::UnknownField => "Unbekanntes Feld",
            Code::InvalidValue => "Ungültiger Wert",
            Code::InvalidQuery => "Ungültige Abfrage",
            Code::InvalidUpload => "Ungültiger Upload",
            Code::Unauthenticated => "Anmeldung erforderlich",
            Code::Forbidden => "Nicht erlaubt",
            Code::HttpsRequired => "HTTPS erforderlich",
            Code::NotFound => "Nicht gefunden",
            Code::MethodNotAllowed => "Methode nicht erlaubt",
            Code::RequestTimeout => "Zeitüberschreitung der Anfrage",
            Code::Conflict => "Konflikt",
            Code::InvalidTransition => "Unzulässiger Statuswechsel",
            Code::CursorReset => "Cursor zurückgesetzt",
            Code::CursorExpired => "Cursor abgelaufen",
            Code::PreconditionFailed => "Vorbedingung nicht erfüllt",
            Code::PayloadTooLarge => "Anfrage zu groß",
            Code::UriTooLong => "Adresse zu lang",
            Code::UnsupportedMediaType => "Nicht unterstütztes Format",
            Code::ValidationFailed => "Prüfung fehlgeschlagen",
            Code::RateLimited => "Zu viele Anfragen",
            Code::Internal => "Interner Fehler",
            Code::Unavailable => "Dienst nicht verfügbar",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem with one field of a write, listed in `errors` of a 422 answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldError {
    pub field: String,
    pub message: Words,
    /// The position of the record at fault in an array write (docs/API.md, "Writes: master data and catalogue"), absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
}

/// The message of a field that a write must give and did not (`email is required`).
pub fn required_message() -> Words {
    words!("is required", "ist Pflicht")
}

impl FieldError {
    /// A problem with one field of a single-record write.
    pub fn new(field: impl Into<String>, message: impl Into<Words>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
            index: None,
        }
    }

    /// The problem as `errors` lists it, its message in `lang`.
    pub fn body_in(&self, lang: Lang) -> serde_json::Value {
        let mut body = serde_json::json!({
            "field": self.field,
            "message": self.message.in_lang(lang),
        });
        if let Some(index) = self.index {
            body["index"] = index.into();
        }
        body
    }

    /// The problem as a part of a sentence: `email is required`.
    pub fn said(&self) -> Words {
        Words::english(format!("{} ", self.field)).then(&self.message)
    }

    /// The same problem, of the record at `index` of an array write.
    pub fn at(mut self, index: usize) -> Self {
        self.index = Some(index);
        self
    }
}

/// An error as the client will see it: a code, a message naming the culprit, and the optional
/// extras (`field`, `errors`, `Retry-After`, `Allow`) that some codes carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub code: Code,
    pub detail: Words,
    pub field: Option<String>,
    pub errors: Vec<FieldError>,
    /// Seconds a client should wait before retrying (sent as `Retry-After`).
    pub retry_after: Option<u64>,
    /// The methods a path accepts (sent as `Allow` with 405).
    pub allow: Option<String>,
}

impl ApiError {
    /// An error with a message; the message must name what was wrong and, where it helps, what
    /// would be right.
    pub fn new(code: Code, detail: impl Into<Words>) -> Self {
        ApiError {
            code,
            detail: detail.into(),
            field: None,
            errors: Vec::new(),
            retry_after: None,
            allow: None,
        }
    }

    /// Names the one field (or parameter) at fault.
    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// A 400 `unknown_field` that lists the valid names and suggests the closest one.
    pub fn unknown_field<'a>(
        what: &str,
        name: &str,
        valid: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let valid: Vec<&str> = valid.into_iter().collect();
        let suggestion = valid
            .iter()
            .map(|candidate| (strsim::jaro_winkler(name, candidate), *candidate))
            .filter(|(score, _)| *score > 0.85)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, candidate)| format!(" Did you mean '{candidate}'?"))
            .unwrap_or_default();
        ApiError::new(
            Code::UnknownField,
            format!(
                "{what} '{name}' does not exist.{suggestion} Valid names: {}.",
                valid.join(", ")
            ),
        )
        .with_field(name)
    }

    /// A 500 whose message says nothing of the internals; the cause goes to the log instead.
    pub fn internal() -> Self {
        ApiError::new(
            Code::Internal,
            words!(
                "The server failed to answer this request. The request id identifies it in the log.",
                "Der Server konnte diese Anfrage nicht beantworten. Die Kennung der Anfrage findet sie im Protokoll."
            ),
        )
    }

    /// A 503 for a request that failed because the database cannot be reached now (docs/API.md,
    /// "Errors"): the same request may succeed unchanged once it answers again, after
    /// `retry_after` seconds (sent as `Retry-After`).
    pub fn unavailable(retry_after: u64) -> Self {
        let mut error = ApiError::new(
            Code::Unavailable,
            words!(
                "The database cannot be reached now; retry in {retry_after} s.",
                "Die Datenbank ist gerade nicht erreichbar; bitte in {retry_after} s erneut versuchen."
            ),
        );
        error.retry_after = Some(retry_after);
        error
    }

    /// The detail of a refused write: every problem, by field.
    pub fn refusal(problems: &[FieldError]) -> Words {
        let said: Vec<Words> = problems.iter().map(FieldError::said).collect();
        words!(
            "The write was refused: ",
            "Der Schreibvorgang wurde abgelehnt: "
        )
        .then(&Words::join(&said, "; "))
        .then(&Words::english("."))
    }

    /// The HTTP status of this error's code.
    pub fn status(&self) -> u16 {
        self.code.status()
    }

    /// The problem+json body.
    pub fn body(&self) -> serde_json::Value {
        self.body_in(Lang::En)
    }

    /// The problem+json body with its title, detail and field messages in `lang`.
    pub fn body_in(&self, lang: Lang) -> serde_json::Value {
        let mut body = serde_json::json!({
            "type": "about:blank",
            "title": self.code.title_in(lang),
            "status": self.code.status(),
            "detail": self.detail.in_lang(lang),
            "code": self.code.as_str(),
        });
        if let Some(field) = &self.field {
            body["field"] = serde_json::Value::String(field.clone());
        }
        if !self.errors.is_empty() {
            body["errors"] = self.errors.iter().map(|e| e.body_in(lang)).collect();
        }
        body
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.detail)
    }
}

impl std::error::Error for ApiError {}

/// Shorthand for results whose error is an [`ApiError`].
pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_follow_the_first_language_the_client_accepts_that_the_api_speaks() {
        assert_eq!(
            Lang::from_accept_language("de-DE,de;q=0.9,en;q=0.8"),
            Lang::De
        );
        assert_eq!(
            Lang::from_accept_language("fr-CH, fr;q=0.9, de;q=0.7"),
            Lang::De
        );
        assert_eq!(Lang::from_accept_language("en-GB,de;q=0.5"), Lang::En);
        assert_eq!(Lang::from_accept_language("fr, *"), Lang::En);
        assert_eq!(Lang::from_accept_language(""), Lang::En);
        for code in Code::ALL {
            assert_ne!(code.title_in(Lang::De), code.title(), "{code}");
        }
        let error = ApiError::new(Code::NotFound, "There is no such record.");
        assert_eq!(error.body_in(Lang::De)["title"], "Nicht gefunden");
        assert_eq!(error.body()["title"], "Not found");
    }

    #[test]
    fn every_code_is_snake_case_and_maps_to_an_error_status() {
        for code in Code::ALL {
            assert!(code.status() >= 400 && code.status() < 600, "{code}");
            assert!(
                code.as_str()
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_'),
                "{code}"
            );
        }
        assert_eq!(Code::ALL.len(), 23);
    }

    #[test]
    fn unknown_field_lists_valid_names_and_suggests_the_closest() {
        let error = ApiError::unknown_field("Field", "barcod", ["barcode", "colour", "size"]);
        assert_eq!(error.code, Code::UnknownField);
        assert_eq!(error.field.as_deref(), Some("barcod"));
        assert!(error.detail.contains("Did you mean 'barcode'?"));
        assert!(error.detail.contains("barcode, colour, size"));
    }

    #[test]
    fn body_is_problem_json() {
        let body = ApiError::new(Code::InvalidValue, "bad")
            .with_field("page")
            .body();
        assert_eq!(body["type"], "about:blank");
        assert_eq!(body["status"], 400);
        assert_eq!(body["code"], "invalid_value");
        assert_eq!(body["field"], "page");
        assert!(body.get("errors").is_none());
    }

    #[test]
    fn internal_errors_reveal_nothing() {
        let body = ApiError::internal().body();
        assert_eq!(body["status"], 500);
        assert!(!body["detail"].as_str().unwrap().contains("sql"));
    }
}
