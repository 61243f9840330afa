//! The subcommands. Each returns a [`CommandError`] whose text is what the user reads.

use crate::cli::{Cli, Command, DemoArgs, KeyCommand, ServeArgs, UserCommand};
use crate::demo_load::{is_empty, load_demo};
use brandhub_catalog::UserType;
use brandhub_demo::{DemoOptions, DemoSummary};
use brandhub_filestore::FileStore;
use brandhub_ingest::WorkerSettings;
use brandhub_problem::ApiError;
use brandhub_server::connections::ConnectionLimits;
use brandhub_server::proxies::TrustedProxies;
use brandhub_server::ratelimit::Limit;
use brandhub_server::timeouts::Timeouts;
use brandhub_server::tls::TlsSource;
use brandhub_server::{Settings, Uploads, start};
use brandhub_sheet::Limits;
use brandhub_store::{Backend, NewUser, Store, StoreError, StoreOptions};
use brandhub_webhooks::WebhookSettings;
use brandhub_webhooks::schedule::RetrySchedule;
use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

/// A failed command, with the message to print.
#[derive(Debug)]
pub struct CommandError(pub String);

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<ApiError> for CommandError {
    fn from(error: ApiError) -> CommandError {
        let mut text = error.detail.to_string();
        for problem in &error.errors {
            let at = problem.index.map(|i| format!("[{i}] ")).unwrap_or_default();
            text.push_str(&format!("\n  {at}{}: {}", problem.field, problem.message));
        }
        CommandError(text)
    }
}

impl From<StoreError> for CommandError {
    fn from(error: StoreError) -> CommandError {
        let mut text = error.to_string();
        match error {
            StoreError::Invalid { problems, .. } => {
                // The summary first, then one problem a line.
                if let Some(at) = text.find("The write was refused:") {
                    text.truncate(at + "The write was refused".len());
                    text.push(':');
                }
                for problem in &problems {
                    let at = problem.index.map(|i| format!("[{i}] ")).unwrap_or_default();
                    text.push_str(&format!("\n  {at}{}: {}", problem.field, problem.message));
                }
                CommandError(text)
            }
            StoreError::Request(error) => CommandError::from(error),
            StoreError::Internal => {
                CommandError("the database failed; the log above has the cause".to_string())
            }
            _ => CommandError(text),
        }
    }
}

impl From<std::io::Error> for CommandError {
    fn from(error: std::io::Error) -> CommandError {
        CommandError(error.to_string())
    }
}

/// The database URL: the given one, or SQLite in the data dir.
pub fn database_url(cli: &Cli) -> String {
    cli.database_url
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", cli.data_dir.join("brandhub.db").display()))
}

/// Opens (and migrates) the store the command line names.
pub async fn open_store(cli: &Cli) -> Result<Store, CommandError> {
    std::fs::create_dir_all(&cli.data_dir).map_err(|e| {
        CommandError(format!(
            "cannot create the data dir {}: {e}",
            cli.data_dir.display()
        ))
    })?;
    let url = database_url(cli);
    let pg_settings = cli
        .pg_settings
        .iter()
        .filter(|s| !s.trim().is_empty())
        .map(|setting| {
            setting
                .split_once('=')
                .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
                .filter(|(n, _)| {
                    !n.is_empty()
                        && n.chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
                })
                .ok_or_else(|| CommandError(format!("--pg-setting '{setting}' is not NAME=VALUE")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let default_connections = if url.starts_with("sqlite:") { 8 } else { 16 };
    let store = Store::connect(&StoreOptions {
        url,
        max_connections: cli.max_connections.unwrap_or(default_connections),
        page_cache_bytes: cli.page_cache_mb * 1024 * 1024,
        matches_first_limit: brandhub_query::sql::MATCHES_FIRST_LIMIT,
        pg_settings,
        database_wait: cli.database_wait,
    })
    .await?;
    store.migrate().await?;
    Ok(store)
}

/// Runs a parsed command line.
pub async fn run(cli: Cli) -> Result<(), CommandError> {
    match &cli.command {
        Command::Serve(args) => serve(&cli, args).await,
        Command::Migrate => {
            let store = open_store(&cli).await?;
            store.migrate_fully().await?;
            println!("the database is at the current schema");
            store.close().await;
            Ok(())
        }
        Command::User(UserCommand::Create {
            email,
            name,
            user_type,
            company,
            host,
            warehouse,
            sponsor,
        }) => {
            let store = open_store(&cli).await?;
            let user_type = UserType::parse(user_type).ok_or_else(|| {
                CommandError(format!(
                    "--type '{user_type}' is not one of admin, sponsor, company, host, warehouse"
                ))
            })?;
            let id = store
                .create_user(&NewUser {
                    email: email.clone(),
                    name: name.clone(),
                    user_type,
                    companies: company.clone(),
                    host: host.clone(),
                    warehouse: warehouse.clone(),
                    sponsor: sponsor.clone(),
                })
                .await?;
            println!("created {} user {email}", user_type.as_str());
            println!("{id}");
            Ok(())
        }
        Command::User(UserCommand::Password { user }) => {
            let mut password = String::new();
            std::io::stdin()
                .read_line(&mut password)
                .map_err(|e| CommandError(format!("cannot read the password: {e}")))?;
            let password = password.trim_end_matches(['\r', '\n']);
            let store = open_store(&cli).await?;
            let id = store.set_password(user, password).await?;
            println!("set the password of {user} ({id}); its sessions have ended");
            Ok(())
        }
        Command::Key(KeyCommand::Create { user, name, grant }) => {
            let store = open_store(&cli).await?;
            let grants = (!grant.is_empty()).then_some(grant.as_slice());
            let key = store.create_key(user, name.as_deref(), grants).await?;
            println!(
                "created key {} for {user}; the secret below is shown only now",
                key.id
            );
            println!("{}", key.secret);
            Ok(())
        }
        Command::Key(KeyCommand::Revoke { id }) => {
            let store = open_store(&cli).await?;
            store.revoke_key(id).await?;
            println!("revoked key {id}");
            Ok(())
        }
        Command::Demo(args) => demo(&cli, args).await,
        Command::Backup { file } => crate::backup::backup(&cli, file).await,
        Command::Restore { file } => crate::backup::restore(&cli, file).await,
        Command::Import { file } => {
            let text = std::fs::read(file)
                .map_err(|e| CommandError(format!("cannot read {}: {e}", file.display())))?;
            let store = open_store(&cli).await?;
            let result = store.import(&text).await;
            store.close().await;
            for imported in result? {
                println!(
                    "{}: {} created, {} updated",
                    imported.resource, imported.created, imported.updated
                );
            }
            Ok(())
        }
    }
}

fn print_credentials(summary: &DemoSummary) {
    println!("demo users (user name : API key : portal password):");
    for credential in &summary.credentials {
        println!(
            "  {:<9} {} : {} : {}",
            credential.user_type.as_str(),
            credential.email,
            credential.secret,
            crate::demo_load::demo_password(credential.user_type)
        );
    }
}

async fn demo(cli: &Cli, args: &DemoArgs) -> Result<(), CommandError> {
    let store = open_store(cli).await?;
    if args.replace {
        store.drop_everything().await?;
        store.migrate().await?;
    }
    let started = Instant::now();
    let summary = load_demo(
        &store,
        DemoOptions {
            scale: args.scale,
            now: crate::demo_load::now(),
            ..DemoOptions::default()
        },
    )
    .await?;
    let total: u64 = summary.counts.iter().map(|(_, n)| n).sum();
    println!(
        "loaded {total} demo records ({} variants) in {:.1} s:",
        args.scale,
        started.elapsed().as_secs_f64()
    );
    for (resource, count) in &summary.counts {
        println!("  {resource:<11} {count}");
    }
    print_credentials(&summary);
    store.close().await;
    Ok(())
}

fn tls_source(data_dir: &Path, args: &ServeArgs) -> Option<TlsSource> {
    if args.behind_proxy {
        return None;
    }
    Some(match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => TlsSource::Files {
            cert: cert.clone(),
            key: key.clone(),
        },
        _ => TlsSource::SelfSigned {
            dir: data_dir.join("tls"),
        },
    })
}

async fn serve(cli: &Cli, args: &ServeArgs) -> Result<(), CommandError> {
    let store = open_store(cli).await?;
    if args.webhook_allow_insecure_localhost {
        tracing::warn!(
            "webhook URLs naming the loopback address are accepted, over plain http too (--webhook-allow-insecure-localhost)"
        );
    }
    if args.demo {
        let options = DemoOptions {
            scale: args.demo_scale,
            now: crate::demo_load::now(),
            ..DemoOptions::default()
        };
        if is_empty(&store).await? {
            tracing::info!(scale = args.demo_scale, "loading the demo data set");
            let summary = load_demo(&store, options).await?;
            print_credentials(&summary);
        } else {
            // The demo keys are deterministic, so they can be shown again without storing them.
            let (_, summary) = brandhub_demo::generate_all(&DemoOptions {
                scale: 0,
                ..options
            });
            println!(
                "the database has data already; if it holds the demo data set, these keys work:"
            );
            print_credentials(&summary);
        }
    }
    let files = FileStore::open(cli.file_store.as_deref(), &cli.data_dir)
        .map_err(|e| CommandError(e.to_string()))?;
    tracing::info!(files = files.describe(), workers = args.workers, "uploads");
    let uploads = Uploads {
        files,
        max_upload: args.max_upload,
        workers: WorkerSettings {
            workers: args.workers,
            job_timeout: Duration::from_secs(args.job_timeout),
            limits: Limits {
                max_rows: usize::try_from(args.max_rows).unwrap_or(usize::MAX),
                max_decompressed_bytes: args.max_sheet_size,
                max_cell_chars: usize::try_from(args.max_cell_chars).unwrap_or(usize::MAX),
            },
            ..WorkerSettings::default()
        },
    };
    let mut settings = Settings::new(args.listen, tls_source(&cli.data_dir, args), uploads);
    settings.key_limit = Limit::new(
        args.rate_limit,
        args.rate_burst.unwrap_or(2.0 * args.rate_limit),
    );
    settings.failure_limit = Limit::new(
        args.auth_failure_limit,
        (4.0 * args.auth_failure_limit).max(20.0),
    );
    settings.metrics_listen = args.metrics_listen;
    settings.webhooks = WebhookSettings {
        senders: args.webhook_senders,
        timeout: args.webhook_timeout,
        poll_interval: args.webhook_poll,
        retry: RetrySchedule {
            first: args.webhook_retry_first,
            longest: args.webhook_retry_longest,
            period: args.webhook_retry_for,
        },
        batch_wait: args.webhook_batch_wait,
        allow_insecure_localhost: args.webhook_allow_insecure_localhost,
    };
    settings.trusted_proxies = TrustedProxies::new(args.trusted_proxies.clone());
    settings.timeouts = Timeouts {
        tls_handshake: Duration::from_secs(args.tls_handshake_timeout),
        header_read: Duration::from_secs(args.header_read_timeout),
        idle: Duration::from_secs(args.idle_timeout),
        body_before_caller: Duration::from_secs(args.unauthenticated_body_timeout),
        body_min_rate: args.min_body_rate,
        body_rate_window: Duration::from_secs(args.body_rate_window),
    };
    settings.connections = ConnectionLimits {
        per_address: args.max_connections_per_address,
        per_proxy: args.max_connections_per_proxy,
    };
    let running = start(settings, store.clone()).await?;
    let scheme = if args.behind_proxy { "http" } else { "https" };
    let backend = match store.backend() {
        Backend::Sqlite => "SQLite",
        Backend::Postgres => "PostgreSQL",
    };
    println!(
        "brandhub serves {scheme}://{}/api on {backend}",
        running.address
    );
    println!("the portal is at {scheme}://{}/", running.address);
    if let Some(address) = running.metrics_address {
        println!("metrics at http://{address}/metrics");
    }
    let handle = running.handle();
    tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!("shutting down");
        handle.graceful_shutdown(Some(Duration::from_secs(10)));
    });
    running.wait().await?;
    store.close().await;
    Ok(())
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(_) => {
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}
