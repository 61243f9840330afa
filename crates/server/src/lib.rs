//! The HTTPS API: routes, TLS, authentication, problem+json errors and per-request timing.
//! Handlers are thin: they call the pure stages of `brandhub-query` and the store.

pub mod auth;
pub mod docs;
pub mod handlers;
pub mod lenient;
pub mod observe;
pub mod problem;
pub mod ratelimit;
pub mod tls;

use auth::Authenticator;
use axum::Router;
use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum_server::accept::NoDelayAcceptor;
use axum_server::tls_rustls::{RustlsAcceptor, RustlsConfig};
use brandhub_problem::{ApiError, Code};
use brandhub_store::Store;
use lenient::NormalisingAcceptor;
use problem::Problem;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use tls::TlsSource;
use tower_http::catch_panic::CatchPanicLayer;

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
}

impl Settings {
    /// Default limits: generous for clients (1,000 requests a second per key, bursts of
    /// 2,000), strict for guessing (5 failed authentications a second per address, bursts of
    /// 20).
    pub fn new(listen: SocketAddr, tls: Option<TlsSource>) -> Settings {
        Settings {
            listen,
            tls,
            key_limit: ratelimit::Limit::new(1000.0, 2000.0),
            failure_limit: ratelimit::Limit::new(5.0, 20.0),
        }
    }
}

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub auth: Arc<Authenticator>,
    /// Behind a proxy the client's address is the first `X-Forwarded-For` hop.
    pub behind_proxy: bool,
}

/// The routes of the API with their middleware.
pub fn router(state: AppState, behind_proxy: bool) -> Router {
    use handlers::{fallback, openapi, read, write};
    let mut router = Router::new()
        .route("/api/openapi.json", get(openapi::openapi))
        .route("/api/{resource}", get(read::list).post(write::create))
        .route("/api/{resource}/count", get(read::count).post(read::count))
        .route("/api/{resource}/query", post(read::list))
        .route(
            "/api/{resource}/{id}",
            get(read::by_id).patch(write::update).delete(write::delete),
        )
        .fallback(fallback::not_found)
        .method_not_allowed_fallback(fallback::method_not_allowed)
        .layer(CatchPanicLayer::custom(|_panic| {
            tracing::error!("a handler panicked");
            Problem(ApiError::internal()).into_response()
        }));
    if behind_proxy {
        router = router.layer(middleware::from_fn(require_forwarded_https));
    }
    router
        .layer(middleware::from_fn(observe::observe))
        .with_state(state)
}

/// Behind a proxy, only requests the proxy received over HTTPS are served.
async fn require_forwarded_https(request: Request, next: Next) -> Response {
    let forwarded = request
        .headers()
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().eq_ignore_ascii_case("https"));
    if forwarded == Some(true) {
        return next.run(request).await;
    }
    Problem(ApiError::new(
        Code::HttpsRequired,
        "This API is served over HTTPS only; the proxy did not forward this request as https (X-Forwarded-Proto).",
    ))
    .into_response()
}

/// A started server.
pub struct Running {
    /// The address it listens on (the real port when asked for port 0).
    pub address: SocketAddr,
    /// The certificate it presents (PEM), for clients that must trust a self-signed one.
    pub certificate_pem: Option<String>,
    handle: axum_server::Handle<SocketAddr>,
    task: tokio::task::JoinHandle<io::Result<()>>,
}

impl Running {
    /// Stops accepting, lets requests in flight finish (up to `grace`), and waits.
    pub async fn shutdown(self, grace: std::time::Duration) -> io::Result<()> {
        self.handle.graceful_shutdown(Some(grace));
        self.task.await.map_err(io::Error::other)?
    }

    /// Waits until the server stops on its own (it only stops when told to).
    pub async fn wait(self) -> io::Result<()> {
        self.task.await.map_err(io::Error::other)?
    }

    /// A handle to stop the server from elsewhere (a signal handler).
    pub fn handle(&self) -> axum_server::Handle<SocketAddr> {
        self.handle.clone()
    }
}

/// Binds and starts serving; returns once the socket listens.
pub async fn start(settings: Settings, store: Store) -> io::Result<Running> {
    let state = AppState {
        auth: Arc::new(Authenticator::new(
            store.clone(),
            settings.key_limit,
            settings.failure_limit,
        )),
        store,
        behind_proxy: settings.tls.is_none(),
    };
    let app =
        router(state, settings.tls.is_none()).into_make_service_with_connect_info::<SocketAddr>();
    let handle = axum_server::Handle::new();
    // TCP_NODELAY: answers go out at once instead of waiting on the client's delayed ACK.
    let (task, certificate_pem) = match &settings.tls {
        Some(source) => {
            let (cert, key) = tls::load_pem(source)?;
            let config = RustlsConfig::from_config(tls::server_config(&cert, &key)?);
            let acceptor = NormalisingAcceptor::new(
                RustlsAcceptor::new(config).acceptor(NoDelayAcceptor::new()),
            );
            let server = axum_server::bind(settings.listen)
                .acceptor(acceptor)
                .handle(handle.clone());
            (
                tokio::spawn(async move { server.serve(app).await }),
                Some(cert),
            )
        }
        None => {
            let server = axum_server::bind(settings.listen)
                .acceptor(NormalisingAcceptor::new(NoDelayAcceptor::new()))
                .handle(handle.clone());
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
    Ok(Running {
        address,
        certificate_pem,
        handle,
        task,
    })
}
