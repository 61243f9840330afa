//! The command line (README, "Command line"). Every flag also reads an environment variable.

use brandhub_ingest::WorkerSettings;
use brandhub_server::connections::ConnectionLimits;
use brandhub_server::proxies::Network;
use brandhub_server::timeouts::Timeouts;
use brandhub_sheet::Limits;
use brandhub_webhooks::WebhookSettings;
use clap::{Args, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// brandhub: the commerce-data platform API.
#[derive(Debug, Parser)]
#[command(name = "brandhub", version, about)]
pub struct Cli {
    /// Holds the SQLite database, uploaded files and the generated TLS certificate.
    #[arg(
        long,
        env = "BRANDHUB_DATA_DIR",
        default_value = "./data",
        global = true
    )]
    pub data_dir: PathBuf,
    /// sqlite://… or postgres://… (default: sqlite in the data dir).
    #[arg(long, env = "BRANDHUB_DATABASE_URL", global = true)]
    pub database_url: Option<String>,
    /// Most connections of the database pool (on SQLite the one connection writes run on and
    /// the two kept for exports come on top).
    #[arg(long, env = "BRANDHUB_MAX_CONNECTIONS", global = true)]
    pub max_connections: Option<u32>,
    /// A PostgreSQL setting for brandhub's sessions, NAME=VALUE (repeat for several). The
    /// default tells the planner that random reads are cheap (SSD storage), which makes it
    /// probe indexes rather than scan tables for brandhub's selective reads.
    #[arg(
        long = "pg-setting",
        env = "BRANDHUB_PG_SETTINGS",
        value_delimiter = ',',
        default_value = "random_page_cost=1.1",
        global = true
    )]
    pub pg_settings: Vec<String>,
    /// How long a request waits for the database (a connection from the pool, SQLite's lock
    /// held by another process) before it is answered 503 `unavailable` (a duration such as
    /// 30s or 500ms).
    #[arg(
        long,
        env = "BRANDHUB_DATABASE_WAIT",
        default_value = "30s",
        value_parser = parse_duration,
        global = true
    )]
    pub database_wait: Duration,
    /// Megabytes of rendered pages each server process keeps in memory (0 keeps none).
    #[arg(
        long,
        env = "BRANDHUB_PAGE_CACHE_MB",
        default_value_t = 32,
        global = true
    )]
    pub page_cache_mb: u64,
    /// Where uploaded files' bytes go: s3://bucket[/prefix] (settings from the AWS_*
    /// environment variables), or by default the directory `files` in the data dir.
    #[arg(long, env = "BRANDHUB_FILE_STORE", global = true)]
    pub file_store: Option<String>,
    /// Log filter (tracing syntax: info, warn, brandhub_store=debug, …).
    #[arg(long, env = "BRANDHUB_LOG", default_value = "info", global = true)]
    pub log: String,
    /// How log lines are written to stderr: text for people (coloured only on a terminal,
    /// and not when NO_COLOR is set), json for machines (one JSON object a line).
    #[arg(
        long,
        env = "BRANDHUB_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Text,
        global = true
    )]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

/// The format of log lines (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// `2031-01-01T00:00:00Z  INFO request{id=…}: brandhub_server::observe: answered …`
    Text,
    /// `{"timestamp": …, "level": "INFO", "message": "answered", …, "span": {"id": …}}`
    Json,
}

/// What to do.
#[derive(Debug, Subcommand)]
// Parsed once per process: the size of `serve`'s many flags costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Run migrations and serve the HTTPS API.
    Serve(ServeArgs),
    /// Apply schema migrations and exit; makes every index and trigger again, also where a
    /// start-up finds the schema current (after a change of the schema by hand).
    Migrate,
    /// Manage users.
    #[command(subcommand)]
    User(UserCommand),
    /// Manage API keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Load the deterministic demo data set.
    Demo(DemoArgs),
    /// Apply a set-up document (`{"company": [...], "brand": [...], …}`) in one transaction,
    /// upserting by natural key; links may name their target by id or by code.
    Import {
        /// The JSON document.
        file: PathBuf,
    },
    /// Copy the SQLite database and the local uploaded files into one new file, while servers
    /// run and write (PostgreSQL: pg_dump; an S3 bucket: the bucket's own tools).
    Backup {
        /// The backup to write (a zip archive); it must not exist yet.
        file: PathBuf,
    },
    /// Put a backup's database and uploaded files into an empty data dir.
    Restore {
        /// The backup `brandhub backup` wrote.
        file: PathBuf,
    },
}

/// `brandhub serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address and port to listen on.
    #[arg(long, env = "BRANDHUB_LISTEN", default_value = "127.0.0.1:8443")]
    pub listen: SocketAddr,
    /// Load the demo data when the database is empty, and print the demo credentials.
    #[arg(long, env = "BRANDHUB_DEMO")]
    pub demo: bool,
    /// Variants in the demo data set loaded by --demo.
    #[arg(long, env = "BRANDHUB_DEMO_SCALE", default_value_t = 2000)]
    pub demo_scale: u64,
    /// PEM certificate (chain) to present; without it a self-signed one is generated.
    #[arg(long, env = "BRANDHUB_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, env = "BRANDHUB_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Requests a second each API key may make (0: no limit); past it, 429 with Retry-After.
    #[arg(long, env = "BRANDHUB_RATE_LIMIT", default_value_t = 1000.0)]
    pub rate_limit: f64,
    /// Requests a key may make at once above its rate (default: twice the rate).
    #[arg(long, env = "BRANDHUB_RATE_BURST")]
    pub rate_burst: Option<f64>,
    /// Failed authentications a second allowed per client address (bursts of four times
    /// that, at least 20); past it, wrong credentials get 429, while a valid key still passes.
    #[arg(long, env = "BRANDHUB_AUTH_FAILURE_LIMIT", default_value_t = 5.0)]
    pub auth_failure_limit: f64,
    /// Proxies (addresses or networks such as 10.0.0.0/8, comma separated) whose
    /// X-Forwarded-For names the client's address; without them the peer is the client.
    #[arg(long, env = "BRANDHUB_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<Network>,
    /// Seconds a TLS handshake may take.
    #[arg(long, env = "BRANDHUB_TLS_HANDSHAKE_TIMEOUT", default_value_t = Timeouts::default().tls_handshake.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub tls_handshake_timeout: u64,
    /// Seconds a request's head may take to arrive, counted from when the connection is ready
    /// for it (so also how long an idle keep-alive connection stays open).
    #[arg(long, env = "BRANDHUB_HEADER_READ_TIMEOUT", default_value_t = Timeouts::default().header_read.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub header_read_timeout: u64,
    /// Seconds a connection may make no progress while its client owes bytes of a request
    /// (a body) or has an answer to read.
    #[arg(long, env = "BRANDHUB_IDLE_TIMEOUT", default_value_t = Timeouts::default().idle.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub idle_timeout: u64,
    /// Seconds a request's body may take to arrive while its caller is not known (sign-in,
    /// an invitation's acceptance); past it, 408 and the connection is closed.
    #[arg(long, env = "BRANDHUB_UNAUTHENTICATED_BODY_TIMEOUT", default_value_t = Timeouts::default().body_before_caller.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub unauthenticated_body_timeout: u64,
    /// The fewest bytes a second every request body (uploads included) must bring over each
    /// --body-rate-window of waiting for it (0: no minimum); slower, 408 and the connection
    /// is closed.
    #[arg(long, env = "BRANDHUB_MIN_BODY_RATE", default_value_t = Timeouts::default().body_min_rate)]
    pub min_body_rate: u64,
    /// Seconds over which --min-body-rate is measured.
    #[arg(long, env = "BRANDHUB_BODY_RATE_WINDOW", default_value_t = Timeouts::default().body_rate_window.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub body_rate_window: u64,
    /// Connections one client address may hold open at once (0: no cap); past it, a new
    /// connection is closed at once.
    #[arg(long, env = "BRANDHUB_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = ConnectionLimits::default().per_address)]
    pub max_connections_per_address: usize,
    /// Connections one trusted proxy (--trusted-proxies), or any peer with --behind-proxy,
    /// may hold open at once (0: no cap).
    #[arg(long, env = "BRANDHUB_MAX_CONNECTIONS_PER_PROXY", default_value_t = ConnectionLimits::default().per_proxy)]
    pub max_connections_per_proxy: usize,
    /// Serve plain HTTP for a TLS-terminating proxy; requests not forwarded as https get 403.
    #[arg(long, env = "BRANDHUB_BEHIND_PROXY", conflicts_with_all = ["tls_cert", "tls_key"])]
    pub behind_proxy: bool,
    /// File-processing workers in this process (0: none; other processes on the same
    /// database then process the uploads).
    #[arg(long, env = "BRANDHUB_WORKERS", default_value_t = WorkerSettings::default().workers)]
    pub workers: usize,
    /// Seconds after which a file whose worker stopped sending heartbeats is processed again.
    #[arg(long, env = "BRANDHUB_JOB_TIMEOUT", default_value_t = WorkerSettings::default().job_timeout.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub job_timeout: u64,
    /// The largest upload accepted: bytes, or with a unit (KiB, MiB, GiB; K, M, G the same).
    #[arg(long, env = "BRANDHUB_MAX_UPLOAD", default_value = "50MiB", value_parser = parse_size)]
    pub max_upload: u64,
    /// The most data rows a spreadsheet may have; a longer one fails with the reason. A file
    /// is processed in memory, about 2.5 KB a row at the peak.
    #[arg(long, env = "BRANDHUB_MAX_ROWS", default_value_t = Limits::default().max_rows as u64, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_rows: u64,
    /// The most a spreadsheet may expand to once decompressed and decoded (a zip bomb fails
    /// with the reason): bytes, or with a unit as for --max-upload.
    #[arg(long, env = "BRANDHUB_MAX_SHEET_SIZE", default_value = "512MiB", value_parser = parse_size)]
    pub max_sheet_size: u64,
    /// Serve Prometheus metrics at /metrics (and /healthz, /readyz) over plain HTTP on this
    /// address, e.g. 127.0.0.1:9464; off unless given. Keep it off public networks.
    #[arg(long, env = "BRANDHUB_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,
    /// The most characters a spreadsheet cell may hold (Excel's own maximum by default); a row
    /// with a longer cell is skipped with the reason, the cell never read whole.
    #[arg(long, env = "BRANDHUB_MAX_CELL_CHARS", default_value_t = Limits::default().max_cell_chars as u64, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_cell_chars: u64,
    /// Webhook sender tasks in this process (0: none; other processes on the same database
    /// then deliver).
    #[arg(long, env = "BRANDHUB_WEBHOOK_SENDERS", default_value_t = WebhookSettings::default().senders)]
    pub webhook_senders: usize,
    /// How long a webhook receiver may take to answer (a duration such as 10s or 500ms).
    #[arg(long, env = "BRANDHUB_WEBHOOK_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub webhook_timeout: Duration,
    /// The wait after a webhook's first failed attempt; each further failure doubles it, up to
    /// --webhook-retry-longest.
    #[arg(long, env = "BRANDHUB_WEBHOOK_RETRY_FIRST", default_value = "30s", value_parser = parse_duration)]
    pub webhook_retry_first: Duration,
    /// The longest wait between two attempts of a webhook delivery.
    #[arg(long, env = "BRANDHUB_WEBHOOK_RETRY_LONGEST", default_value = "1h", value_parser = parse_duration)]
    pub webhook_retry_longest: Duration,
    /// How long a webhook delivery is retried before it is given up as failed.
    #[arg(long, env = "BRANDHUB_WEBHOOK_RETRY_FOR", default_value = "24h", value_parser = parse_duration)]
    pub webhook_retry_for: Duration,
    /// How long a batch delivery (a webhook with "batch": true) gathers events after its
    /// first before it is sent, unless 1,000 came first.
    #[arg(long, env = "BRANDHUB_WEBHOOK_BATCH_WAIT", default_value = "1s", value_parser = parse_duration)]
    pub webhook_batch_wait: Duration,
    /// How often idle webhook senders look for other processes' events and retries due.
    #[arg(long, env = "BRANDHUB_WEBHOOK_POLL", default_value = "1s", value_parser = parse_duration)]
    pub webhook_poll: Duration,
    /// Accept webhook URLs naming this machine's loopback address as written (127.0.0.1,
    /// [::1]; not localhost), over plain http too, for tests with a local receiver. Never on a
    /// server others use.
    #[arg(long, env = "BRANDHUB_WEBHOOK_ALLOW_INSECURE_LOCALHOST")]
    pub webhook_allow_insecure_localhost: bool,
}

/// A duration such as `500ms`, `30s`, `5m`, `24h` (a bare number is seconds).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let number: u64 = digits
        .parse()
        .map_err(|_| format!("'{text}' is not a duration such as 500ms, 30s, 5m or 24h"))?;
    let millis: u64 = match unit.trim() {
        "ms" => 1,
        "" | "s" => 1_000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        other => return Err(format!("'{other}' is not a unit: use ms, s, m or h")),
    };
    number
        .checked_mul(millis)
        .filter(|n| *n > 0)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("'{text}' is not a duration above 0"))
}

/// A size such as `50MiB`, `512K` or `1048576` (units are powers of 1024).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let number: u64 = digits
        .parse()
        .map_err(|_| format!("'{text}' is not a size such as 50MiB or 1048576"))?;
    let factor: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        other => return Err(format!("'{other}' is not a unit: use KiB, MiB or GiB")),
    };
    number
        .checked_mul(factor)
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("'{text}' is not a size above 0 that fits in 64 bits"))
}

#[cfg(test)]
mod tests {
    use super::{Cli, Command, Limits, ServeArgs, parse_duration, parse_size};
    use std::time::Duration;

    #[test]
    fn durations_have_units() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("24h"), Ok(Duration::from_secs(86_400)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("5 days").is_err());
        assert!(parse_duration("-1s").is_err());
    }
    use clap::Parser;

    fn serve_args(args: &[&str]) -> Result<ServeArgs, clap::Error> {
        let cli = Cli::try_parse_from(["brandhub", "serve"].iter().chain(args))?;
        match cli.command {
            Command::Serve(args) => Ok(args),
            _ => panic!("serve parses as serve"),
        }
    }

    #[test]
    fn upload_and_sheet_sizes_default_to_the_libraries_defaults() {
        // The sizes are written as text (`50MiB`) so that --help reads well; these tie them.
        let args = serve_args(&[]).unwrap();
        let limits = Limits::default();
        assert_eq!(args.max_rows, limits.max_rows as u64);
        assert_eq!(args.max_sheet_size, limits.max_decompressed_bytes);
        assert_eq!(args.max_cell_chars, limits.max_cell_chars as u64);
        assert_eq!(args.max_upload, brandhub_server::DEFAULT_MAX_UPLOAD);
        let timeouts = brandhub_server::timeouts::Timeouts::default();
        assert_eq!(args.tls_handshake_timeout, timeouts.tls_handshake.as_secs());
        assert_eq!(args.header_read_timeout, timeouts.header_read.as_secs());
        assert_eq!(args.idle_timeout, timeouts.idle.as_secs());
        assert_eq!(
            args.unauthenticated_body_timeout,
            timeouts.body_before_caller.as_secs()
        );
        assert_eq!(args.min_body_rate, timeouts.body_min_rate);
        assert_eq!(args.body_rate_window, timeouts.body_rate_window.as_secs());
        let connections = brandhub_server::connections::ConnectionLimits::default();
        assert_eq!(args.max_connections_per_address, connections.per_address);
        assert_eq!(args.max_connections_per_proxy, connections.per_proxy);
        assert!(args.trusted_proxies.is_empty());
    }

    #[test]
    fn trusted_proxies_are_addresses_or_networks() {
        let args = serve_args(&[
            "--trusted-proxies",
            "10.0.0.0/8,192.0.2.7",
            "--trusted-proxies",
            "::1",
        ])
        .unwrap();
        assert_eq!(args.trusted_proxies.len(), 3);
        let error = serve_args(&["--trusted-proxies", "proxy.example"]).unwrap_err();
        assert!(error.to_string().contains("not an IP address"), "{error}");
        assert!(serve_args(&["--idle-timeout", "0"]).is_err());
    }

    #[test]
    fn bad_limits_are_refused_with_the_reason() {
        assert!(serve_args(&["--max-rows", "0"]).is_err());
        let error = serve_args(&["--max-sheet-size", "lots"]).unwrap_err();
        assert!(error.to_string().contains("not a size"), "{error}");
    }

    #[test]
    fn sizes_take_binary_units() {
        assert_eq!(parse_size("50MiB"), Ok(50 << 20));
        assert_eq!(parse_size("512k"), Ok(512 << 10));
        assert_eq!(parse_size("1 G"), Ok(1 << 30));
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        for bad in ["", "MiB", "5 parsecs", "0", "-1", "99999999999999999999G"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }
}

/// `brandhub user …`.
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create a user; prints its id on the last line.
    Create {
        #[arg(long)]
        email: String,
        #[arg(long)]
        name: String,
        /// admin, sponsor, company, host or warehouse.
        #[arg(long = "type")]
        user_type: String,
        /// A company the user works for (repeat for several; the first is fk_company).
        #[arg(long)]
        company: Vec<String>,
        #[arg(long)]
        host: Option<String>,
        #[arg(long)]
        warehouse: Option<String>,
        /// The sponsor company of a sponsor user.
        #[arg(long)]
        sponsor: Option<String>,
    },
    /// Set a user's portal password, read from standard input (one line); ends its sessions.
    Password {
        /// The user's email or id.
        user: String,
    },
}

/// `brandhub key …`.
#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Create an API key; prints the secret on the last line (it is never shown again).
    Create {
        /// The user's email or id.
        #[arg(long)]
        user: String,
        #[arg(long)]
        name: Option<String>,
        /// resource:METHODS, e.g. file:GET,POST or *:GET (repeat; default: the user type's).
        #[arg(long)]
        grant: Vec<String>,
    },
    /// Revoke a key by id.
    Revoke { id: String },
}

/// `brandhub demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Number of variants (products, stock and orders scale with it).
    #[arg(long, env = "BRANDHUB_DEMO_SCALE", default_value_t = 2000)]
    pub scale: u64,
    /// Drop all existing data first (otherwise a non-empty database is refused).
    #[arg(long)]
    pub replace: bool,
}
