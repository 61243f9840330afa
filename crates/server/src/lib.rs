//! The HTTPS API: routes, TLS, authentication, problem+json errors and per-request timing.
//! Handlers are thin: they call the pure stages of `brandhub-query` and the store.

pub mod auth;
pub mod bodies;
pub mod connections;
pub mod docs;
pub mod handlers;
pub mod health;
pub mod lenient;
pub mod metrics;
pub mod observe;
pub mod portal;
mod price_clock;
pub mod problem;
pub mod proxies;
pub mod ratelimit;
pub mod timeouts;
pub mod tls;

use auth::Authenticator;
use axum::Router;
use axum::extract::{FromRef, Request};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum_server::accept::NoDelayAcceptor;
use axum_server::tls_rustls::{RustlsAcceptor, RustlsConfig};
use brandhub_filestore::FileStore;
use brandhub_ingest::{Signals, WorkerSettings, Workers};
use brandhub_problem::{ApiError, Code};
use brandhub_store::Store;
use brandhub_webhooks::{AttemptTally, Deliveries, WebhookSettings};
use connections::{CappedAcceptor, ConnectionLimits};
use lenient::NormalisingAcceptor;
use problem::Problem;
use proxies::TrustedProxies;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use timeouts::{IdleAcceptor, Timeouts};
use tls::TlsSource;
use tower_http::catch_panic::CatchPanicLayer;

/// The default upload limit, `--max-upload` (docs/API.md, "Files: uploads and processing").
pub const DEFAULT_MAX_UPLOAD: u64 = 50 * 1024 * 1024;

/// Where uploaded files go and how they are processed.
#[derive(Debug, Clone)]
pub struct Uploads {
    /// Keeps the uploaded bytes (local directory or S3).
    pub files: FileStore,
    /// The largest file accepted, in bytes; larger uploads get 413.
    pub max_upload: u64,
    /// The workers this process runs (0: none; other processes on the same database may).
    pub workers: WorkerSettings,
}

/// How the server listens.
#[derive(Debug, Clone)]
pub struct Settings {
    pub listen: SocketAddr,
    /// `None`: plain HTTP behind a TLS-terminating proxy (`--behind-proxy`).
    pub tls: Option<TlsSource>,
    /// Requests per API key.
    pub key_limit: ratelimit::Limit,
    /// Failed authentications per client address.
    pub failure_limit: ratelimit::Limit,
    /// The proxies whose `X-Forwarded-For` names the client address (none by default: the
    /// peer is the client).
    pub trusted_proxies: TrustedProxies,
    /// How long connections may take over the TLS handshake, a request's head, without
    /// progress, and a request's body.
    pub timeouts: Timeouts,
    /// How many connections one address may hold open.
    pub connections: ConnectionLimits,
    /// File uploads and their processing.
    pub uploads: Uploads,
    /// Where Prometheus metrics (and health) are served over plain HTTP, if anywhere
    /// (`--metrics-listen`).
    pub metrics_listen: Option<SocketAddr>,
    /// Records an export reads at a time ([`brandhub_store::EXPORT_CHUNK`]; tests lower it so
    /// that small exports cross chunk boundaries).
    pub export_chunk: u64,
    /// Webhook delivery by this process.
    pub webhooks: WebhookSettings,
}

impl Settings {
    /// Default limits: generous for clients (1,000 requests a second per key, bursts of
    /// 2,000), strict for guessing (5 failed authentications a second per address, bursts of
    /// 20).
    pub fn new(listen: SocketAddr, tls: Option<TlsSource>, uploads: Uploads) -> Settings {
        Settings {
            listen,
            tls,
            key_limit: ratelimit::Limit::new(1000.0, 2000.0),
            failure_limit: ratelimit::Limit::new(5.0, 20.0),
            trusted_proxies: TrustedProxies::default(),
            timeouts: Timeouts::default(),
            connections: ConnectionLimits::default(),
            uploads,
            metrics_listen: None,
            export_chunk: brandhub_store::EXPORT_CHUNK,
            webhooks: WebhookSettings::default(),
        }
    }
}

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub auth: Arc<Authenticator>,
    /// Served as plain HTTP behind a TLS-terminating proxy (`--behind-proxy`).
    pub behind_proxy: bool,
    /// The proxies whose `X-Forwarded-For` tells the client's address.
    pub trusted_proxies: Arc<TrustedProxies>,
    /// Where uploaded bytes go.
    pub files: FileStore,
    /// The largest upload accepted, in bytes.
    pub max_upload: u64,
    /// Wakes this process's workers on an upload, and waiting uploads when a file finishes.
    pub signals: Arc<Signals>,
    /// The server's metrics, counted by [`metrics::track`].
    pub metrics: Arc<metrics::Metrics>,
    /// Records an export reads at a time.
    pub export_chunk: u64,
}

impl FromRef<AppState> for Store {
    fn from_ref(state: &AppState) -> Store {
        state.store.clone()
    }
}

/// What the metrics listener's routes share.
#[derive(Clone)]
struct OpsState {
    store: Store,
    metrics: Arc<metrics::Metrics>,
}

impl FromRef<OpsState> for Store {
    fn from_ref(state: &OpsState) -> Store {
        state.store.clone()
    }
}

impl FromRef<OpsState> for Arc<metrics::Metrics> {
    fn from_ref(state: &OpsState) -> Arc<metrics::Metrics> {
        state.metrics.clone()
    }
}

/// The routes of the metrics listener (`--metrics-listen`): metrics, and health for probes
/// that reach the process there.
fn ops_router(state: OpsState) -> Router {
    Router::new()
        .route("/metrics", get(metrics::serve_metrics))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .with_state(state)
}

/// The routes of the API with their middleware; `body_bounds` bound how long request bodies
/// take.
pub fn router(state: AppState, behind_proxy: bool, body_bounds: bodies::BodyBounds) -> Router {
    use handlers::{fallback, files, openapi, read, session, write};
    let mut router = Router::new()
        .route("/api/openapi.json", get(openapi::openapi))
        .route(
            "/api/session",
            get(session::current)
                .post(session::sign_in)
                .delete(session::sign_out),
        )
        .route("/api/invitation", post(session::invite))
        .route("/api/invitation/{token}", post(session::accept))
        .route("/", get(portal::index))
        .route("/assets/{hash}/{*path}", get(portal::asset))
        .route("/api/{resource}", get(read::list).post(write::create))
        .route("/api/{resource}/count", get(read::count).post(read::count))
        .route("/api/{resource}/query", post(read::list))
        .route(
            "/api/{resource}/{id}",
            get(read::by_id)
                .patch(write::update)
                .delete(write::delete)
                .post(handlers::post_named),
        )
        .route("/api/{resource}/{id}/{sub}", get(files::nested))
        .route(lenient::TOO_LONG_TARGET, any(fallback::uri_too_long))
        .fallback(fallback::not_found)
        .method_not_allowed_fallback(fallback::method_not_allowed)
        .layer(CatchPanicLayer::custom(|_panic| {
            tracing::error!("a handler panicked");
            Problem(ApiError::internal()).into_response()
        }));
    if behind_proxy {
        router = router.layer(middleware::from_fn(require_forwarded_https));
    }
    // Health is merged after the https check: probes reach a process directly, not through
    // the TLS-terminating proxy, and the answers carry nothing.
    let health = Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz));
    let metrics = state.metrics.clone();
    router
        .merge(health)
        .layer(middleware::from_fn_with_state(
            body_bounds,
            bodies::bound_bodies,
        ))
        .layer(middleware::from_fn(portal::quiet_challenge))
        .layer(middleware::from_fn_with_state(metrics, metrics::track))
        .layer(middleware::from_fn(observe::observe))
        .layer(middleware::from_fn_with_state(
            behind_proxy,
            strict_transport_security,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            problem::in_the_clients_language,
        ))
        .with_state(state)
}

/// What `Strict-Transport-Security` asks of browsers: HTTPS only for this host, for a year.
/// Subdomains are not named: the server cannot know that they all serve HTTPS.
pub const HSTS: &str = "max-age=31536000";

/// `Strict-Transport-Security` on every answer the client receives over HTTPS: all of them
/// when this process speaks TLS, and behind a TLS-terminating proxy those the proxy received
/// over HTTPS (`X-Forwarded-Proto: https`); browsers ignore it over plain HTTP anyway.
async fn strict_transport_security(
    axum::extract::State(behind_proxy): axum::extract::State<bool>,
    request: Request,
    next: Next,
) -> Response {
    let https = !behind_proxy || forwarded_as_https(&request);
    let mut response = next.run(request).await;
    if https {
        response.headers_mut().insert(
            axum::http::header::STRICT_TRANSPORT_SECURITY,
            axum::http::HeaderValue::from_static(HSTS),
        );
    }
    response
}

/// Whether the proxy says it received the request over HTTPS (`X-Forwarded-Proto`).
fn forwarded_as_https(request: &Request) -> bool {
    request
        .headers()
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
}

/// Behind a proxy, only requests the proxy received over HTTPS are served.
async fn require_forwarded_https(request: Request, next: Next) -> Response {
    if forwarded_as_https(&request) {
        return next.run(request).await;
    }
    Problem(ApiError::new(
        Code::HttpsRequired,
        "This API is served over HTTPS only; the proxy did not forward this request as https (X-Forwarded-Proto).",
    ))
    .into_response()
}

/// HTTP/1.1 only (what TLS offers, and where `lenient` works), with the header-read bound:
/// a request's head must arrive within it, and an idle keep-alive connection is closed after
/// it.
fn http1_with_timeouts<A: axum_server::Address, Acc>(
    server: axum_server::Server<A, Acc>,
    timeouts: &Timeouts,
) -> axum_server::Server<A, Acc> {
    let mut server = server.http1_only();
    server
        .http_builder()
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(timeouts.header_read);
    server
}

/// A started server.
pub struct Running {
    /// The address it listens on (the real port when asked for port 0).
    pub address: SocketAddr,
    /// The certificate it presents (PEM), for clients that must trust a self-signed one.
    pub certificate_pem: Option<String>,
    /// Where metrics are served (the real port when asked for port 0), if anywhere.
    pub metrics_address: Option<SocketAddr>,
    handle: axum_server::Handle<SocketAddr>,
    task: tokio::task::JoinHandle<io::Result<()>>,
    workers: Workers,
    deliveries: Deliveries,
    price_clock: price_clock::PriceClock,
    metrics_server: Option<OpsServer>,
}

/// The metrics listener, stopped with the API.
struct OpsServer {
    handle: axum_server::Handle<SocketAddr>,
    task: tokio::task::JoinHandle<io::Result<()>>,
}

impl OpsServer {
    async fn stop(self, grace: std::time::Duration) {
        self.handle.graceful_shutdown(Some(grace));
        if let Ok(Err(error)) = self.task.await {
            tracing::warn!(%error, "the metrics listener stopped with an error");
        }
    }
}

/// How long workers may take to finish their files when the server stops.
const WORKER_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

impl Running {
    /// Stops accepting, lets requests in flight finish (up to `grace`), stops the workers
    /// (each finishes its file within `grace`), and waits.
    pub async fn shutdown(self, grace: std::time::Duration) -> io::Result<()> {
        self.handle.graceful_shutdown(Some(grace));
        // All within the one grace, not one after the other.
        let metrics = async {
            if let Some(server) = self.metrics_server {
                server.stop(grace).await;
            }
        };
        let (served, (), (), (), ()) = tokio::join!(
            self.task,
            self.workers.stop(grace),
            self.deliveries.stop(grace),
            self.price_clock.stop(),
            metrics
        );
        served.map_err(io::Error::other)?
    }

    /// Waits until the server stops (it only stops when told to, through [`Running::handle`]),
    /// then stops the workers.
    pub async fn wait(self) -> io::Result<()> {
        let served = self.task.await.map_err(io::Error::other)?;
        let metrics = async {
            if let Some(server) = self.metrics_server {
                server.stop(WORKER_GRACE).await;
            }
        };
        tokio::join!(
            self.workers.stop(WORKER_GRACE),
            self.deliveries.stop(WORKER_GRACE),
            self.price_clock.stop(),
            metrics
        );
        served
    }

    /// A handle to stop the server from elsewhere (a signal handler).
    pub fn handle(&self) -> axum_server::Handle<SocketAddr> {
        self.handle.clone()
    }
}

/// Binds and starts serving, with the file workers; returns once the socket listens.
pub async fn start(settings: Settings, store: Store) -> io::Result<Running> {
    let store = if settings.webhooks.allow_insecure_localhost {
        store.allowing_insecure_loopback_urls()
    } else {
        store
    };
    let signals = Arc::new(Signals::default());
    let uploads = &settings.uploads;
    let attempts = Arc::new(AttemptTally::default());
    let metrics = Arc::new(metrics::Metrics::new(
        store.clone(),
        signals.clone(),
        attempts.clone(),
    ));
    let state = AppState {
        auth: Arc::new(Authenticator::new(
            store.clone(),
            settings.key_limit,
            settings.failure_limit,
        )),
        store: store.clone(),
        behind_proxy: settings.tls.is_none(),
        trusted_proxies: Arc::new(settings.trusted_proxies.clone()),
        files: uploads.files.clone(),
        max_upload: uploads.max_upload,
        signals: signals.clone(),
        metrics: metrics.clone(),
        export_chunk: settings.export_chunk.max(1),
    };
    let behind_proxy = settings.tls.is_none();
    let body_bounds = bodies::BodyBounds::of(&settings.timeouts);
    let app = router(state, behind_proxy, body_bounds)
        .into_make_service_with_connect_info::<SocketAddr>();
    let handle = axum_server::Handle::new();
    let timeouts = settings.timeouts;
    // Every connection is first counted against its address's cap (see `connections`).
    let capped = CappedAcceptor::new(
        NoDelayAcceptor::new(),
        settings.connections,
        Arc::new(settings.trusted_proxies.clone()),
        behind_proxy,
    );
    // TCP_NODELAY: answers go out at once instead of waiting on the client's delayed ACK.
    // Every connection: its address's cap, TLS within its handshake bound, then raw `<`/`>`
    // made acceptable, then the idle bound (see `timeouts`).
    let (task, certificate_pem) = match &settings.tls {
        Some(source) => {
            let (cert, key) = tls::load_pem(source)?;
            let config = RustlsConfig::from_config(tls::server_config(&cert, &key)?);
            let tls = RustlsAcceptor::new(config)
                .handshake_timeout(timeouts.tls_handshake)
                .acceptor(capped);
            let acceptor = IdleAcceptor::new(NormalisingAcceptor::new(tls), timeouts.idle);
            let server = http1_with_timeouts(
                axum_server::bind(settings.listen)
                    .acceptor(acceptor)
                    .handle(handle.clone()),
                &timeouts,
            );
            (
                tokio::spawn(async move { server.serve(app).await }),
                Some(cert),
            )
        }
        None => {
            let acceptor = IdleAcceptor::new(NormalisingAcceptor::new(capped), timeouts.idle);
            let server = http1_with_timeouts(
                axum_server::bind(settings.listen)
                    .acceptor(acceptor)
                    .handle(handle.clone()),
                &timeouts,
            );
            (tokio::spawn(async move { server.serve(app).await }), None)
        }
    };
    let address = match handle.listening().await {
        Some(address) => address,
        None => {
            return Err(match task.await {
                Ok(Err(error)) => error,
                _ => io::Error::other(format!("cannot listen on {}", settings.listen)),
            });
        }
    };
    let handle_of_api = handle.clone();
    let (metrics_server, metrics_address) = match settings.metrics_listen {
        Some(listen) => {
            let handle = axum_server::Handle::new();
            let app = ops_router(OpsState {
                store: store.clone(),
                metrics,
            });
            let server = axum_server::bind(listen)
                .acceptor(NoDelayAcceptor::new())
                .handle(handle.clone());
            let ops_task = tokio::spawn(async move { server.serve(app.into_make_service()).await });
            let Some(metrics_address) = handle.listening().await else {
                // The API listens already: stop it, and say why the metrics could not.
                let api = handle_of_api.clone();
                api.graceful_shutdown(None);
                return Err(match ops_task.await {
                    Ok(Err(error)) => error,
                    _ => io::Error::other(format!("cannot serve metrics on {listen}")),
                });
            };
            (
                Some(OpsServer {
                    handle,
                    task: ops_task,
                }),
                Some(metrics_address),
            )
        }
        None => (None, None),
    };
    let deliveries = Deliveries::start(store.clone(), settings.webhooks, attempts);
    let price_clock = price_clock::PriceClock::start(store.clone());
    let workers = Workers::start(
        store,
        settings.uploads.files.clone(),
        settings.uploads.workers,
        signals,
    );
    Ok(Running {
        address,
        certificate_pem,
        metrics_address,
        handle,
        task,
        workers,
        deliveries,
        price_clock,
        metrics_server,
    })
}
