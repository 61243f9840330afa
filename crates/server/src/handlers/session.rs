//! Sign-in for people (docs/API.md, "Sessions and invitations"): `POST /api/session` (email and password → a session
//! key), `GET /api/session` (who the key belongs to and what it allows), `DELETE
//! /api/session` (sign out), `POST /api/invitation` (an admin or sponsor invites a user to
//! set a password) and `POST /api/invitation/<token>` (setting it). Wrong passwords and
//! unknown invitation tokens count as failed authentications of the client's address, like
//! wrong keys: each attempt is counted before its password is hashed (and given back when
//! it succeeds), and an address past its limit is answered 429 before anything is checked.

use super::{read_body, require_grant};
use crate::AppState;
use crate::auth::{Authenticated, client_address};
use crate::problem::{Answer, Problem};
use crate::ratelimit::{failed_from_this_address, too_many};
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use brandhub_catalog::Res;
use brandhub_catalog::UserType;
use brandhub_catalog::catalog;
use brandhub_problem::{ApiError, Code, FieldError, words};
use brandhub_query::write::validation_failed;
use brandhub_store::StoreError;
use brandhub_store::accounts::sessions::{SESSION_IDLE_MILLIS, session_of};
use serde_json::{Value, json};
use std::net::IpAddr;

/// The largest sign-in or invitation body (an email and a password).
const BODY_LIMIT: usize = 4096;

/// The JSON object of a small body, or 400/422 naming what is wrong.
async fn object(headers: &HeaderMap, body: Body) -> Answer<serde_json::Map<String, Value>> {
    let bytes = read_body(headers, body, BODY_LIMIT).await?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(Problem(ApiError::new(
            Code::InvalidQuery,
            words!(
                "The body must be a JSON object.",
                "Der Inhalt muss ein JSON-Objekt sein."
            ),
        ))),
    }
}

/// The text member `name` of a body, or a problem naming it.
fn member(
    body: &serde_json::Map<String, Value>,
    name: &str,
    problems: &mut Vec<FieldError>,
) -> String {
    match body.get(name) {
        Some(Value::String(text)) if !text.is_empty() => text.clone(),
        _ => {
            problems.push(FieldError {
                field: name.into(),
                message: words!("is required (a string)", "ist Pflicht (ein Text)"),
                index: None,
            });
            String::new()
        }
    }
}

/// 429 when the address failed too often to be listened to now.
fn not_blocked(state: &AppState, address: IpAddr) -> Answer<()> {
    match state.auth.failure_wait(address) {
        Some(wait) => Err(Problem(too_many(wait, failed_from_this_address()))),
        None => Ok(()),
    }
}

/// Counts a password attempt of the address as failed before it is checked (429 when its
/// budget is spent), so that attempts arriving together are not all checked; the guard
/// gives it back unless [`Attempt::failed`] says it failed.
fn attempt(state: &AppState, address: IpAddr) -> Answer<Attempt<'_>> {
    state
        .auth
        .begin_attempt(address)
        .map_err(|wait| Problem(too_many(wait, failed_from_this_address())))?;
    Ok(Attempt {
        state,
        address,
        failed: false,
    })
}

/// A password attempt counted as a failure until it is judged: dropped without
/// [`Attempt::failed`] (it succeeded, or was refused for another reason), it is given back.
struct Attempt<'a> {
    state: &'a AppState,
    address: IpAddr,
    failed: bool,
}

impl Attempt<'_> {
    /// The credentials did not match: the attempt stays counted.
    fn failed(mut self) {
        self.failed = true;
    }
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        if !self.failed {
            self.state.auth.forgive_attempt(self.address);
        }
    }
}

fn split(request: Request, state: &AppState) -> (Parts, Body, IpAddr) {
    let (parts, body) = request.into_parts();
    let address = client_address(&parts, &state.trusted_proxies);
    (parts, body, address)
}

/// `POST /api/session`: `{"email", "password"}` → 201 with a session key.
pub async fn sign_in(State(state): State<AppState>, request: Request) -> Answer<Response> {
    let (parts, body, address) = split(request, &state);
    not_blocked(&state, address)?;
    let body = object(&parts.headers, body).await?;
    let mut problems = Vec::new();
    let email = member(&body, "email", &mut problems);
    let password = member(&body, "password", &mut problems);
    if !problems.is_empty() {
        return Err(Problem(validation_failed(problems)));
    }
    let attempt = attempt(&state, address)?;
    let Some(session) = state.store.sign_in(&email, &password).await? else {
        attempt.failed();
        return Err(Problem(ApiError::new(
            Code::Unauthenticated,
            words!(
                "The email and password do not match an active user's.",
                "E-Mail-Adresse und Passwort passen zu keinem aktiven Benutzer."
            ),
        )));
    };
    let answer = json!({
        "user": session.user_id,
        "email": session.email,
        "type": session.user_type.as_str(),
        "key": session.secret,
        "idleSeconds": SESSION_IDLE_MILLIS / 1000,
    });
    Ok((StatusCode::CREATED, axum::Json(answer)).into_response())
}

/// `GET /api/session`: who the key (a session's or an API key) belongs to and what it allows,
/// so that a client shows only what it may use.
pub async fn current(Authenticated { caller, .. }: Authenticated) -> Answer<Response> {
    let grants: Vec<String> = caller.grants.iter().map(ToString::to_string).collect();
    let answer = json!({
        "user": caller.user_id,
        "email": caller.email,
        "type": caller.user_type.as_str(),
        "company": caller.company,
        "companies": caller.companies,
        "host": caller.host,
        "warehouse": caller.warehouse,
        "sponsor": caller.sponsor,
        "grants": grants,
        "session": session_of(&caller.key_id).is_some(),
    });
    Ok(axum::Json(answer).into_response())
}

/// `DELETE /api/session`: ends the session the request is authenticated with (204).
pub async fn sign_out(
    State(state): State<AppState>,
    Authenticated { caller, .. }: Authenticated,
) -> Answer<Response> {
    let Some(session) = session_of(&caller.key_id) else {
        return Err(Problem(ApiError::new(
            Code::NotFound,
            words!(
                "This request is authenticated with an API key, not a session; keys are revoked with DELETE /api/apiKey/<id>.",
                "Diese Anfrage ist mit einem API-Schlüssel angemeldet, nicht mit einer Sitzung; Schlüssel werden mit DELETE /api/apiKey/<id> widerrufen."
            ),
        )));
    };
    state.store.end_session(session).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST /api/invitation`: `{"user": <email or id>}` by an admin or sponsor who may change
/// that user → 201 with a one-time link (valid 7 days) that sets the user's password.
pub async fn invite(
    State(state): State<AppState>,
    Authenticated { caller, .. }: Authenticated,
    request: Request,
) -> Answer<Response> {
    let (parts, body) = request.into_parts();
    let users = catalog().get(Res::User);
    require_grant(&caller, users, "PATCH")?;
    if !matches!(caller.user_type, UserType::Admin | UserType::Sponsor) {
        return Err(Problem(ApiError::new(
            Code::Forbidden,
            words!(
                "Only admin and sponsor users invite users; this is a {} user.",
                "Nur Benutzer vom Typ admin und sponsor laden Benutzer ein; dies ist ein Benutzer vom Typ {}.",
                caller.user_type.as_str()
            ),
        )));
    }
    let body = object(&parts.headers, body).await?;
    let mut problems = Vec::new();
    let user = member(&body, "user", &mut problems);
    if !problems.is_empty() {
        return Err(Problem(validation_failed(problems)));
    }
    let not_found = || {
        Problem(ApiError::new(
            Code::NotFound,
            words!(
                "No user the caller may change has email or id '{user}'.",
                "Kein Benutzer, den der Aufrufer ändern darf, hat die E-Mail-Adresse oder Kennung '{user}'."
            ),
        ))
    };
    let user_id = state
        .store
        .find_user_id(&user)
        .await?
        .ok_or_else(not_found)?;
    // A user outside what the caller may write is as unknown as a missing one.
    if state
        .store
        .may_write_user(&user_id, &caller.viewer())
        .await?
        != Some(true)
    {
        return Err(not_found());
    }
    let invitation = state.store.invite(&user_id, &caller.user_id).await?;
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let expires = chrono::DateTime::from_timestamp_millis(invitation.expires_at)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%S").to_string());
    let answer = json!({
        "user": invitation.user_id,
        "token": invitation.token,
        "link": format!("https://{host}/#/invitation/{}", invitation.token),
        "expires": expires,
    });
    Ok((StatusCode::CREATED, axum::Json(answer)).into_response())
}

/// `POST /api/invitation/<token>`: `{"password"}` sets the invited user's password (no key:
/// the token is the credential) → 200 with the user's id and email.
pub async fn accept(
    State(state): State<AppState>,
    Path(token): Path<String>,
    request: Request,
) -> Answer<Response> {
    let (parts, body, address) = split(request, &state);
    not_blocked(&state, address)?;
    let body = object(&parts.headers, body).await?;
    let mut problems = Vec::new();
    let password = member(&body, "password", &mut problems);
    if !problems.is_empty() {
        return Err(Problem(validation_failed(problems)));
    }
    let attempt = attempt(&state, address)?;
    let user_id = match state.store.accept_invitation(&token, &password).await {
        Ok(user_id) => user_id,
        Err(error) => {
            if matches!(error, StoreError::NotFound(_)) {
                attempt.failed();
            }
            return Err(Problem::from(error));
        }
    };
    Ok(axum::Json(json!({ "user": user_id })).into_response())
}
