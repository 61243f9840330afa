//! Where log lines go and how they look (docs/API.md, "Operations: health, metrics, logs"): stderr, as text or one JSON object a
//! line (`--log-format`). Text is coloured only when stderr is a terminal and `NO_COLOR` is
//! not set, so redirected logs carry no escape codes. Lines logged while a request is handled
//! carry its id (the `request` span of `brandhub_server::observe`); a worker's lines carry the
//! file's id (the `file` span of `brandhub_ingest`): in text as `request{id=…}:`, in JSON as
//! `span` and `spans`.

use crate::cli::LogFormat;
use std::io::IsTerminal;

/// Whether text logs are coloured: only for a person at a terminal who did not ask for none
/// (<https://no-color.org>: `NO_COLOR` set to anything but empty).
pub fn colour(stderr_is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|value| value.is_empty())
}

/// The filter of `--log`: rustls warns once per connection when a client sends an IP address
/// as SNI (as load tools do), which is harmless, so it is silenced unless the filter names
/// rustls itself.
fn filter(log: &str) -> tracing_subscriber::EnvFilter {
    let directives = if log.contains("rustls") {
        log.to_string()
    } else {
        format!("{log},rustls=error")
    };
    tracing_subscriber::EnvFilter::try_new(&directives)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rustls=error"))
}

/// Installs the process's logger.
pub fn init(log: &str, format: LogFormat) {
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter(log))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder
            .with_ansi(colour(
                std::io::stderr().is_terminal(),
                std::env::var_os("NO_COLOR").as_deref(),
            ))
            .init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(true)
            .init(),
    }
}

#[cfg(test)]
mod tests {
    use super::colour;
    use std::ffi::OsStr;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some(OsStr::new(""))));
        assert!(!colour(true, Some(OsStr::new("1"))));
        assert!(
            !colour(false, None),
            "a file or a pipe gets no escape codes"
        );
    }
}
