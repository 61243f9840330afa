//! Which addresses a URL field admits: web pages, and webhooks' public receivers.

use crate::address::{is_loopback_literal, non_public};
use brandhub_problem::{Words, words};
use std::net::IpAddr;

/// Why a URL is not one a client can fetch, if it is not: only absolute http and https URLs
/// with a host and without spaces (image URLs, from JSON or from files).
pub fn web_url_problem(url: &str) -> Option<Words> {
    let lower = url.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"));
    let Some(rest) = rest else {
        return Some(words!(
            "is not an http or https URL",
            "ist keine http- oder https-Adresse"
        ));
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() || host.starts_with(':') || host.starts_with('@') {
        return Some(words!("has no host", "nennt keinen Server"));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some(words!("contains spaces", "enthält Leerzeichen"));
    }
    None
}

/// Why `url` may not receive webhooks, if it may not (docs/API.md, "Events and webhooks"), whatever the server
/// allows: [`webhook_url_problem`], and a host named `localhost` or `*.localhost` (this
/// machine by definition, refused without asking DNS). A literal loopback address passes here:
/// only a server started to allow it accepts one ([`is_insecure_loopback_url`]). The addresses
/// a name resolves to are checked when a delivery connects.
pub fn secure_url_problem(url: &str) -> Option<String> {
    let parsed = match receiver(url) {
        Ok(parsed) => parsed,
        Err(problem) => return Some(problem),
    };
    if let Some(url::Host::Domain(name)) = parsed.host() {
        let name = name.trim_end_matches('.');
        if name == "localhost" || name.ends_with(".localhost") {
            return Some(format!(
                "names {name}, which is this machine, not a public address: {PUBLIC_ONLY}"
            ));
        }
    }
    receiver_problem(&parsed, true)
}

/// Why deliveries are only sent to public addresses, as problems say it.
const PUBLIC_ONLY: &str = "webhooks are delivered to public addresses only";

/// `url` parsed as a client parses it (WHATWG: `0x7f000001`, `2130706433` and `127.1` are
/// 127.0.0.1; what precedes an `@` is a user name, not the host), if it is an absolute http or
/// https URL with a host and neither a user name nor a password.
pub(super) fn receiver(url: &str) -> Result<url::Url, String> {
    if let Some(problem) = web_url_problem(url) {
        return Err(problem.to_string());
    }
    let parsed = url::Url::parse(url).map_err(|error| format!("is not a valid URL ({error})"))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(
            "must not hold a user name or password (what precedes an @ is not the host)".into(),
        );
    }
    if parsed.host().is_none() {
        return Err("has no host".into());
    }
    Ok(parsed)
}

/// The address a parsed URL names, when its host is one rather than a name.
fn literal_address(parsed: &url::Url) -> Option<IpAddr> {
    match parsed.host()? {
        url::Host::Ipv4(v4) => Some(IpAddr::V4(v4)),
        url::Host::Ipv6(v6) => Some(IpAddr::V6(v6)),
        url::Host::Domain(_) => None,
    }
}

/// Why a delivery may not be sent to `url`, if it may not, before any name is resolved: not
/// http or https, a user name or password in it, an address that is not public
/// ([`crate::address::non_public`]), or plain http; `allow_loopback` (a server started with
/// `--webhook-allow-insecure-localhost`, for tests) accepts a literal loopback address over
/// http or https, and nothing else. A name's addresses are the resolver's to check.
pub fn webhook_url_problem(url: &str, allow_loopback: bool) -> Option<String> {
    match receiver(url) {
        Ok(parsed) => receiver_problem(&parsed, allow_loopback),
        Err(problem) => Some(problem),
    }
}

/// [`webhook_url_problem`] of a URL [`receiver`] accepted.
fn receiver_problem(parsed: &url::Url, allow_loopback: bool) -> Option<String> {
    if let Some(ip) = literal_address(parsed) {
        if is_loopback_literal(ip) {
            return (!allow_loopback).then(|| {
                format!(
                    "names {ip}, a loopback address, not a public one: {PUBLIC_ONLY} (only a server started with --webhook-allow-insecure-localhost accepts a loopback address, for tests)"
                )
            });
        }
        if let Some(why) = non_public(ip) {
            return Some(format!(
                "names {ip}, {why}, not a public address: {PUBLIC_ONLY}"
            ));
        }
    }
    (parsed.scheme() != "https").then(|| "is not an https URL".to_string())
}

/// Whether `url` names this machine's loopback address as written (`127.0.0.0/8`, `[::1]`,
/// however a client spells them), over http or https: accepted for webhooks only by a server
/// started with `--webhook-allow-insecure-localhost`, for tests with a local receiver.
pub fn is_insecure_loopback_url(url: &str) -> bool {
    receiver(url)
        .ok()
        .and_then(|parsed| literal_address(&parsed))
        .is_some_and(is_loopback_literal)
}
