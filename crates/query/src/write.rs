//! Writes (docs/API.md, "Writes: master data and catalogue"), parsed and checked against the catalog before anything touches the
//! database: a JSON object of fields (objects nested as in records) becomes typed values for
//! the fields the resource accepts. A name that does not exist is 400 `unknown_field`; every
//! other problem (a read-only field, a wrong type, a missing required field) is collected, so
//! that one 422 `validation_failed` lists them all.

use crate::plan::Viewer;
use brandhub_catalog::{Cell, Field, FieldType, Resource};
use brandhub_problem::{ApiError, ApiResult, Code, FieldError, Lang, Words, words};
use chrono::NaiveDateTime;
use serde_json::Value;

/// Whether a write creates a record or changes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    Create,
    Update,
}

/// The checked values of a write.
#[derive(Debug, Clone, Default)]
pub struct WriteValues {
    /// Stored fields and their new values.
    pub cells: Vec<(&'static Field, Cell)>,
    /// List fields and their new elements.
    pub lists: Vec<(&'static Field, Vec<String>)>,
    /// What is wrong with the write so far (read-only fields, wrong types, missing required
    /// fields). Later checks add theirs, so that one 422 lists every problem.
    pub problems: Vec<FieldError>,
}

impl WriteValues {
    /// The values, or one 422 listing the problems found so far.
    pub fn checked(self) -> ApiResult<WriteValues> {
        if self.problems.is_empty() {
            Ok(self)
        } else {
            Err(validation_failed(self.problems))
        }
    }

    /// Whether a field already has a problem (later checks skip it).
    pub fn has_problem(&self, path: &str) -> bool {
        self.problems.iter().any(|p| p.field == path)
    }

    /// The value given for a path, if any.
    pub fn cell(&self, path: &str) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|(f, _)| f.path == path)
            .map(|(_, c)| c)
    }

    /// The elements given for a list path, if any.
    pub fn list(&self, path: &str) -> Option<&Vec<String>> {
        self.lists
            .iter()
            .find(|(f, _)| f.path == path)
            .map(|(_, l)| l)
    }

    /// The text given for a path (`None` when absent or null).
    pub fn text(&self, path: &str) -> Option<String> {
        self.cell(path).and_then(Cell::as_text).map(str::to_string)
    }
}

/// The all-zero id that user records show for "none", accepted as input for the same.
const ZERO_ID: &str = "00000000000000000000000000000000";

fn flatten<'a>(
    prefix: &str,
    object: &'a serde_json::Map<String, Value>,
    out: &mut Vec<(String, &'a Value)>,
) {
    for (name, value) in object {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        out.push((path, value));
    }
}

fn kind_error(field: &Field, expected: &Words, value: &Value) -> FieldError {
    FieldError {
        field: field.path.clone(),
        message: expected_got(expected, value),
        index: None,
    }
}

/// The kinds of value that messages refusing another kind name in more than one reader of
/// JSON (writes, order intake, lifecycle steps).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Expected {
    Text,
    Object,
    Timestamp,
    /// A timestamp written in the wrong form.
    TimestampForm,
}

impl Expected {
    /// The kind as `expected …, got …` names it.
    pub(crate) fn words(self) -> Words {
        match self {
            Expected::Text => words!("text", "ein Text"),
            Expected::Object => words!("an object", "ein Objekt"),
            Expected::Timestamp => words!("a timestamp", "ein Zeitpunkt"),
            Expected::TimestampForm => words!(
                "a timestamp YYYY-MM-DDTHH:MM:SS",
                "ein Zeitpunkt JJJJ-MM-TTTHH:MM:SS"
            ),
        }
    }
}

/// A value of the wrong kind: `expected a text, got 5`.
pub(crate) fn expected_got(expected: &Words, value: &Value) -> Words {
    Words::new(
        format!("expected {expected}, got {value}"),
        format!("erwartet {}, erhalten {value}", expected.in_lang(Lang::De)),
    )
}

/// A number outside what a field takes: `must be a whole number from 1 to 10, not 0.5`.
pub(crate) fn must_be_not(expected: &Words, value: impl std::fmt::Display) -> Words {
    Words::new(
        format!("must be {expected}, not {value}"),
        format!("muss {} sein, nicht {value}", expected.in_lang(Lang::De)),
    )
}

fn id_value(field: &Field, value: &Value) -> Result<Option<String>, FieldError> {
    match value {
        Value::Null => Ok(None),
        Value::String(text) if text.is_empty() || text == ZERO_ID => Ok(None),
        Value::String(text) if text.len() == 32 && text.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Ok(Some(text.to_ascii_uppercase()))
        }
        other => Err(kind_error(
            field,
            &words!(
                "an id (32 hexadecimal characters) or null",
                "eine Kennung (32 Hexadezimalzeichen) oder null"
            ),
            other,
        )),
    }
}

/// Text with a NUL character, which no field can hold (PostgreSQL's text cannot).
fn nul_error(field: &Field) -> FieldError {
    FieldError {
        field: field.path.clone(),
        message: words!(
            "contains the NUL character (U+0000), which no field can hold",
            "enthält das Zeichen NUL (U+0000), das kein Feld halten kann"
        ),
        index: None,
    }
}

/// A JSON value as a cell of the field's type, within the field's rules and as the field
/// keeps it (`Field::admit`, which spreadsheet rows are checked by too).
fn typed(field: &'static Field, value: &Value) -> Result<Cell, FieldError> {
    field
        .admit(of_type(field, value)?)
        .map_err(|message| FieldError {
            field: field.path.clone(),
            message,
            index: None,
        })
}

/// A JSON number as a whole number: an integer, or a decimal without a fraction (`2.0`,
/// `1e3`, `-0`) within what a whole number holds. `None` for anything else.
pub fn whole_number(n: &serde_json::Number) -> Option<i64> {
    n.as_i64().or_else(|| {
        let f = n.as_f64()?;
        // i64::MAX as f64 rounds up to 2^63, which is out of range: compare strictly.
        (f.is_finite() && f.fract() == 0.0 && f >= i64::MIN as f64 && f < i64::MAX as f64)
            .then_some(f as i64)
    })
}

/// A JSON number for a whole-number field: the whole number, or the problem naming what the
/// field takes (its domain's range, docs/API.md, "Quantities and amounts").
fn whole_number_of(field: &Field, value: &Value) -> Result<i64, FieldError> {
    match value {
        Value::Number(n) => whole_number(n).ok_or_else(|| FieldError {
            field: field.path.clone(),
            message: must_be_not(&field.expected(), n),
            index: None,
        }),
        other => Err(kind_error(field, &field.expected(), other)),
    }
}

fn of_type(field: &'static Field, value: &Value) -> Result<Cell, FieldError> {
    Ok(match field.ty {
        FieldType::Text => match value {
            Value::Null => Cell::Text(String::new()),
            Value::String(text) if text.contains('\0') => return Err(nul_error(field)),
            Value::String(text) => Cell::Text(text.clone()),
            other => return Err(kind_error(field, &Expected::Text.words(), other)),
        },
        FieldType::Id => id_value(field, value)?.map_or(Cell::Null, Cell::Text),
        FieldType::Integer => match value {
            Value::Null => Cell::Null,
            other => Cell::Integer(whole_number_of(field, other)?),
        },
        FieldType::Number => match value {
            Value::Null => Cell::Null,
            Value::Number(n) => Cell::Number(
                n.as_f64()
                    .filter(|n| n.is_finite())
                    .ok_or_else(|| kind_error(field, &field.expected(), value))?,
            ),
            other => return Err(kind_error(field, &field.expected(), other)),
        },
        FieldType::Boolean => match value {
            Value::Null => Cell::Null,
            Value::Bool(b) => Cell::Boolean(*b),
            other => {
                return Err(kind_error(
                    field,
                    &words!("true or false", "true oder false"),
                    other,
                ));
            }
        },
        FieldType::Timestamp | FieldType::PreciseTimestamp => match value {
            Value::Null => Cell::Null,
            Value::String(text) if text.is_empty() => Cell::Null,
            Value::String(text) => {
                let instant = NaiveDateTime::parse_from_str(
                    text.trim_end_matches('Z'),
                    "%Y-%m-%dT%H:%M:%S%.f",
                )
                .map_err(|_| kind_error(field, &Expected::TimestampForm.words(), value))?;
                Cell::Text(crate::plan::value::format_stamp(
                    instant,
                    field.ty == FieldType::PreciseTimestamp,
                ))
            }
            other => return Err(kind_error(field, &Expected::Timestamp.words(), other)),
        },
        FieldType::Object | FieldType::List => unreachable!("handled by the caller"),
    })
}

fn list_values(field: &'static Field, value: &Value) -> Result<Vec<String>, FieldError> {
    let element = field.list.as_ref().map_or(FieldType::Text, |l| l.element);
    let Value::Array(items) = value else {
        return Err(kind_error(field, &words!("an array", "eine Liste"), value));
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        match (element, item) {
            (FieldType::Id, _) => match id_value(field, item)? {
                Some(id) => out.push(id),
                None => {
                    return Err(kind_error(
                        field,
                        &words!("an array of ids", "eine Liste von Kennungen"),
                        value,
                    ));
                }
            },
            (_, Value::String(text)) if text.contains('\0') => return Err(nul_error(field)),
            (_, Value::String(text)) => {
                let problem = field
                    .length_problem(text)
                    .or_else(|| field.domain.and_then(|d| d.problem(text)));
                if let Some(problem) = problem {
                    return Err(FieldError {
                        field: field.path.clone(),
                        message: words!("element {} ", "Element {} ", out.len()).then(&problem),
                        index: None,
                    });
                }
                out.push(text.clone())
            }
            _ => {
                return Err(kind_error(
                    field,
                    &words!("an array of texts", "eine Liste von Texten"),
                    value,
                ));
            }
        }
    }
    Ok(out)
}

/// Parses and checks the body of a create or update of `resource`. Unknown names and
/// unparsable bodies are errors (400); every other problem is left in
/// [`WriteValues::problems`] for the caller to report with its own.
pub fn parse_write(
    resource: &'static Resource,
    mode: WriteMode,
    body: &[u8],
    viewer: &Viewer,
) -> ApiResult<WriteValues> {
    let value: Value = serde_json::from_slice(body).map_err(|error| {
        ApiError::new(
            Code::InvalidValue,
            words!(
                "The body must be a JSON object of {} fields: {error}.",
                "Der Inhalt muss ein JSON-Objekt mit Feldern von {} sein: {error}.",
                resource.name
            ),
        )
    })?;
    let Value::Object(object) = &value else {
        return Err(ApiError::new(
            Code::InvalidValue,
            words!(
                "The body must be a JSON object of {} fields, not {value}.",
                "Der Inhalt muss ein JSON-Objekt mit Feldern von {} sein, nicht {value}.",
                resource.name
            ),
        ));
    };
    parse_object(resource, mode, object, viewer)
}

/// The most records one array write creates (docs/API.md, "Writes: master data and catalogue").
pub const MAX_WRITE_RECORDS: usize = 1_000;

/// Parses the body of a create that may hold one object or an array of up to
/// [`MAX_WRITE_RECORDS`] of them; each record's problems carry its array `index` (none for a
/// single object). The flag says whether the body was an array.
pub fn parse_writes(
    resource: &'static Resource,
    body: &[u8],
    viewer: &Viewer,
) -> ApiResult<(Vec<WriteValues>, bool)> {
    let value: Value = serde_json::from_slice(body).map_err(|error| {
        ApiError::new(
            Code::InvalidValue,
            words!(
                "The body must be a JSON object of {} fields or an array of them: {error}.",
                "Der Inhalt muss ein JSON-Objekt mit Feldern von {} oder eine Liste davon sein: {error}.",
                resource.name
            ),
        )
    })?;
    match &value {
        Value::Object(object) => Ok((
            vec![parse_object(resource, WriteMode::Create, object, viewer)?],
            false,
        )),
        Value::Array(items) if !items.is_empty() && items.len() <= MAX_WRITE_RECORDS => {
            let mut out = Vec::with_capacity(items.len());
            for (index, item) in items.iter().enumerate() {
                let Value::Object(object) = item else {
                    return Err(ApiError::new(
                        Code::InvalidValue,
                        words!(
                            "Element {index} of the array must be a JSON object of {} fields, not {item}.",
                            "Element {index} der Liste muss ein JSON-Objekt mit Feldern von {} sein, nicht {item}.",
                            resource.name
                        ),
                    ));
                };
                let mut values = parse_object(resource, WriteMode::Create, object, viewer)
                    .map_err(|mut error| {
                        error.detail = error
                            .detail
                            .led_by(words!("Element {index}: ", "Element {index}: "));
                        error
                    })?;
                for problem in &mut values.problems {
                    problem.index = Some(index);
                }
                out.push(values);
            }
            Ok((out, true))
        }
        _ => Err(ApiError::new(
            Code::InvalidValue,
            words!(
                "The body must be a JSON object of {} fields or an array of 1 to {MAX_WRITE_RECORDS} of them.",
                "Der Inhalt muss ein JSON-Objekt mit Feldern von {} oder eine Liste von 1 bis {MAX_WRITE_RECORDS} davon sein.",
                resource.name
            ),
        )),
    }
}

/// Checks one JSON object of a write against the catalog (see [`parse_write`]).
pub fn parse_object(
    resource: &'static Resource,
    mode: WriteMode,
    object: &serde_json::Map<String, Value>,
    viewer: &Viewer,
) -> ApiResult<WriteValues> {
    let (writable, required): (&[&str], &[&str]) = match mode {
        WriteMode::Create => (&resource.writes.create, &resource.writes.create_required),
        WriteMode::Update => (&resource.writes.update, &[]),
    };
    let mut values = parse_fields(resource, mode, writable, required, object, viewer)?;
    if mode == WriteMode::Update {
        // What a create must give, an update may change but not empty (a company's code, a
        // user's type).
        for path in &resource.writes.create_required {
            let emptied = values.cell(path).is_some_and(|c| c.is_unset());
            if emptied && !values.problems.iter().any(|e| e.field == *path) {
                values.problems.push(FieldError {
                    field: path.to_string(),
                    message: words!(
                        "is required: it can be changed but not emptied",
                        "ist Pflicht: es kann geändert, aber nicht geleert werden"
                    ),
                    index: None,
                });
            }
        }
        values.problems.sort_by(|a, b| a.field.cmp(&b.field));
    }
    Ok(values)
}

/// [`parse_object`] with the writable and required fields given by the caller: an order's
/// lines are written only within an order intake, with the fields its lifecycle names.
pub fn parse_fields(
    resource: &'static Resource,
    mode: WriteMode,
    writable: &[&str],
    required: &[&str],
    object: &serde_json::Map<String, Value>,
    viewer: &Viewer,
) -> ApiResult<WriteValues> {
    let mut pending = Vec::new();
    flatten("", object, &mut pending);
    let mut values = WriteValues::default();
    let mut errors = Vec::new();
    while let Some((path, value)) = pending.pop() {
        let Some(field) = resource
            .field_at(&path)
            .filter(|f| viewer.sees_field(f) && !f.internal)
        else {
            let mut error = ApiError::unknown_field(
                &format!("{} has no field '{path}': the name", resource.name),
                &path,
                writable.iter().copied(),
            );
            error.field = Some(path);
            return Err(error);
        };
        if field.ty == FieldType::Object {
            match value {
                Value::Object(inner) => flatten(&path, inner, &mut pending),
                other => errors.push(kind_error(field, &Expected::Object.words(), other)),
            }
            continue;
        }
        if !writable.contains(&field.path.as_str()) {
            let message = match mode {
                WriteMode::Create => words!(
                    "is set by the server and cannot be given",
                    "wird vom Server gesetzt und kann nicht angegeben werden"
                ),
                WriteMode::Update => words!("cannot be changed", "kann nicht geändert werden"),
            };
            errors.push(FieldError {
                field: field.path.clone(),
                message,
                index: None,
            });
            continue;
        }
        if field.ty == FieldType::List {
            match list_values(field, value) {
                Ok(list) => values.lists.push((field, list)),
                Err(error) => errors.push(error),
            }
            continue;
        }
        match typed(field, value) {
            // A field declared always set has no null to take (text's null is "", a value).
            Ok(Cell::Null) if field.required && field.ty != FieldType::Text => {
                errors.push(FieldError {
                    field: field.path.clone(),
                    message: words!("must not be null", "darf nicht null sein"),
                    index: None,
                })
            }
            Ok(cell) => values.cells.push((field, cell)),
            Err(error) => errors.push(error),
        }
    }
    if mode == WriteMode::Create {
        for path in required {
            let given =
                values.cell(path).is_some_and(|c| !c.is_unset()) || values.list(path).is_some();
            if !given && !errors.iter().any(|e| e.field == *path) {
                errors.push(FieldError {
                    field: path.to_string(),
                    message: brandhub_problem::required_message(),
                    index: None,
                });
            }
        }
    }
    errors.sort_by(|a, b| a.field.cmp(&b.field));
    values.problems = errors;
    values.cells.sort_by_key(|(f, _)| f.path.clone());
    values.lists.sort_by_key(|(f, _)| f.path.clone());
    Ok(values)
}

/// A 422 listing every problem of a write.
pub fn validation_failed(mut errors: Vec<FieldError>) -> ApiError {
    // By record, then field: the same body always lists its problems in the same order,
    // whatever order its keys came in.
    errors.sort_by(|a, b| (a.index, &a.field).cmp(&(b.index, &b.field)));
    let mut error = ApiError::new(Code::ValidationFailed, ApiError::refusal(&errors));
    error.errors = errors;
    error
}

#[cfg(test)]
mod tests {
    use super::*;
    use brandhub_catalog::catalog;

    fn user() -> &'static Resource {
        catalog().get(brandhub_catalog::Res::User)
    }

    #[test]
    fn a_create_takes_nested_objects_and_types_values() {
        let body = r#"{"name": "Zoë", "email": "z@x.test", "type": "company", "fk_company": "0123456789abcdef0123456789abcdef",
                        "fk_host": "00000000000000000000000000000000", "detail": {"lang": "de", "companies": []}}"#;
        let values =
            parse_write(user(), WriteMode::Create, body.as_bytes(), &Viewer::admin()).unwrap();
        assert_eq!(values.text("name").as_deref(), Some("Zoë"));
        assert_eq!(
            values.text("fk_company").as_deref(),
            Some("0123456789ABCDEF0123456789ABCDEF")
        );
        assert_eq!(values.cell("fk_host"), Some(&Cell::Null), "zeros mean none");
        assert_eq!(values.text("detail.lang").as_deref(), Some("de"));
        assert_eq!(values.list("detail.companies"), Some(&Vec::new()));
    }

    #[test]
    fn every_problem_is_listed_at_once() {
        let body =
            br#"{"id": "X", "createdDate": "2026-01-01T00:00:00", "type": 7, "fk_host": "nope"}"#;
        let error = parse_write(user(), WriteMode::Create, body, &Viewer::admin())
            .unwrap()
            .checked()
            .unwrap_err();
        assert_eq!(error.code, Code::ValidationFailed);
        let fields: Vec<&str> = error.errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            vec!["createdDate", "email", "fk_host", "id", "name", "type"]
        );
    }

    #[test]
    fn unknown_names_and_bad_bodies_are_400() {
        let error = parse_write(
            user(),
            WriteMode::Update,
            br#"{"nickname": "x"}"#,
            &Viewer::admin(),
        )
        .unwrap_err();
        assert_eq!(error.code, Code::UnknownField);
        assert!(error.detail.contains("status"), "{}", error.detail);
        for body in [&b"[1]"[..], b"{", b"\"text\""] {
            assert_eq!(
                parse_write(user(), WriteMode::Update, body, &Viewer::admin())
                    .unwrap_err()
                    .code,
                Code::InvalidValue
            );
        }
    }

    #[test]
    fn text_with_a_nul_character_is_refused_by_name() {
        let body = br#"{"name": "a\u0000b", "email": "n@x.test", "type": "host", "detail": {"lang": "d\u0000e"}}"#;
        let error = parse_write(user(), WriteMode::Create, body, &Viewer::admin())
            .unwrap()
            .checked()
            .unwrap_err();
        let fields: Vec<&str> = error.errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, vec!["detail.lang", "name"]);
    }

    #[test]
    fn texts_longer_than_their_field_are_refused_by_name() {
        let long_name = "x".repeat(900 * 1024);
        let body = serde_json::json!({
            "name": long_name,
            "email": format!("{}@x.test", "é".repeat(300)),
            "type": "company",
            "detail": {"lang": "de"},
        });
        let error = parse_write(
            user(),
            WriteMode::Create,
            body.to_string().as_bytes(),
            &Viewer::admin(),
        )
        .unwrap()
        .checked()
        .unwrap_err();
        assert_eq!(error.code, Code::ValidationFailed);
        let problems: Vec<(&str, &str)> = error
            .errors
            .iter()
            .map(|e| (e.field.as_str(), e.message.as_str()))
            .collect();
        assert_eq!(
            problems,
            vec![
                ("email", "has 307 characters; at most 254 are allowed"),
                ("name", "has 921600 characters; at most 500 are allowed"),
            ]
        );
        // At the limit, counted in characters (not bytes), a text is fine.
        let body =
            serde_json::json!({"name": "ü".repeat(500), "email": "a@b.test", "type": "host"});
        assert!(
            parse_write(
                user(),
                WriteMode::Create,
                body.to_string().as_bytes(),
                &Viewer::admin()
            )
            .unwrap()
            .checked()
            .is_ok()
        );
        let key = catalog().get(brandhub_catalog::Res::ApiKey);
        let body = serde_json::json!({"grants": ["brand:GET", "x".repeat(101)]});
        let error = parse_write(
            key,
            WriteMode::Create,
            body.to_string().as_bytes(),
            &Viewer::admin(),
        )
        .unwrap()
        .checked()
        .unwrap_err();
        assert_eq!(error.errors[0].field, "grants");
        assert_eq!(
            error.errors[0].message,
            "element 1 has 101 characters; at most 100 are allowed"
        );
    }

    #[test]
    fn an_array_write_indexes_each_problem_and_has_bounds() {
        let brand = catalog().get(brandhub_catalog::Res::Brand);
        let body = br#"[{"name": "A", "code": "A", "fk_company": "0123456789abcdef0123456789abcdef"}, {"name": 5}]"#;
        let (values, array) = parse_writes(brand, body, &Viewer::admin()).unwrap();
        assert!(array);
        assert!(values[0].problems.is_empty(), "{:?}", values[0].problems);
        let problems: Vec<(Option<usize>, &str)> = values[1]
            .problems
            .iter()
            .map(|p| (p.index, p.field.as_str()))
            .collect();
        assert_eq!(
            problems,
            vec![
                (Some(1), "code"),
                (Some(1), "fk_company"),
                (Some(1), "name")
            ]
        );
        let (single, array) = parse_writes(brand, br#"{"name": 5}"#, &Viewer::admin()).unwrap();
        assert!(!array && single[0].problems.iter().all(|p| p.index.is_none()));
        let too_many = format!("[{}]", vec!["{}"; MAX_WRITE_RECORDS + 1].join(","));
        for body in [&b"[]"[..], too_many.as_bytes(), b"[1]", b"7"] {
            let error = parse_writes(brand, body, &Viewer::admin()).unwrap_err();
            assert_eq!(error.code, Code::InvalidValue);
        }
        let error = parse_writes(brand, br#"[{}, {"colour": 1}]"#, &Viewer::admin()).unwrap_err();
        assert_eq!(error.code, Code::UnknownField);
        assert!(error.detail.starts_with("Element 1:"), "{}", error.detail);
    }

    #[test]
    fn numbers_are_held_to_their_domains_and_kept_as_the_field_keeps_them() {
        let stock = catalog().get(brandhub_catalog::Res::Stock);
        let parsed = |body: &str| {
            parse_write(stock, WriteMode::Update, body.as_bytes(), &Viewer::admin()).unwrap()
        };
        // Whole numbers however JSON writes them.
        let values = parsed(r#"{"inStock": 2.0, "demand": -0, "supply": 1e3}"#);
        assert!(values.problems.is_empty(), "{:?}", values.problems);
        assert_eq!(values.cell("inStock"), Some(&Cell::Integer(2)));
        assert_eq!(values.cell("demand"), Some(&Cell::Integer(0)));
        assert_eq!(values.cell("supply"), Some(&Cell::Integer(1000)));
        // Outside the domain, or not whole: the field and the range are named.
        for body in [
            r#"{"inStock": -1}"#,
            r#"{"inStock": 1000000001}"#,
            r#"{"inStock": 9223372036854775807}"#,
            r#"{"inStock": 18446744073709551616}"#,
            r#"{"inStock": 1.5}"#,
            r#"{"inStock": 1e308}"#,
            r#"{"inStock": "7"}"#,
        ] {
            let problems = parsed(body).problems;
            assert_eq!(problems.len(), 1, "{body}");
            assert_eq!(problems[0].field, "inStock");
            assert!(
                problems[0]
                    .message
                    .contains("a whole number from 0 to 1,000,000,000"),
                "{body}: {}",
                problems[0].message
            );
        }
        // A number no double holds is no JSON this server reads.
        let error = parse_write(
            stock,
            WriteMode::Update,
            br#"{"inStock": 1e400}"#,
            &Viewer::admin(),
        )
        .unwrap_err();
        assert_eq!(error.code, Code::InvalidValue);
        // Amounts are finite, bounded and kept to two decimals.
        let price = catalog().get(brandhub_catalog::Res::Price);
        let values = parse_write(
            price,
            WriteMode::Update,
            br#"{"price": 19.999, "rrp": 0.005}"#,
            &Viewer::admin(),
        )
        .unwrap();
        assert!(values.problems.is_empty(), "{:?}", values.problems);
        assert_eq!(values.cell("price"), Some(&Cell::Number(20.0)));
        assert_eq!(values.cell("rrp"), Some(&Cell::Number(0.01)));
        let values = parse_write(
            price,
            WriteMode::Update,
            br#"{"price": 1e308, "rrp": -1}"#,
            &Viewer::admin(),
        )
        .unwrap();
        let fields: Vec<&str> = values.problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, vec!["price", "rrp"]);
    }

    #[test]
    fn an_update_refuses_what_cannot_change() {
        let error = parse_write(
            user(),
            WriteMode::Update,
            br#"{"email": "new@x.test"}"#,
            &Viewer::admin(),
        )
        .unwrap()
        .checked()
        .unwrap_err();
        assert_eq!(error.code, Code::ValidationFailed);
        assert_eq!(error.errors[0].message, "cannot be changed");
    }
}
