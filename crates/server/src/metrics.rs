//! Prometheus metrics (docs/API.md, "Operations: health, metrics, logs"), served at `/metrics` on the `--metrics-listen` address.
//!
//! Built on the `prometheus` crate with a registry per server rather than a process-global
//! recorder: a test process runs several servers and each must report exactly its own figures.
//! Requests are counted by the middleware as they are answered; everything else is read when
//! scraped, from where it is kept anyway (the store's cache tallies and pool, the job queue in
//! the database, the workers' and webhook senders' tallies, the process's memory). Labels have
//! bounded values: the route TEMPLATE (`/api/{resource}`), never the raw path; the method from
//! a fixed list.

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use brandhub_ingest::{Outcome, Signals};
use brandhub_store::Store;
use brandhub_webhooks::{AttemptOutcome, AttemptTally};
use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};
use std::sync::Arc;
use std::time::Instant;

/// The route label of requests that no route took (404s of unknown paths).
pub const UNMATCHED: &str = "unmatched";

/// Latency buckets in seconds: from a cached page (under a millisecond) to a slow export.
const LATENCY_BUCKETS: [f64; 15] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Every series of one server.
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    latency: HistogramVec,
    cache_hits: IntCounterVec,
    cache_misses: IntCounterVec,
    pool_connections: IntGaugeVec,
    pool_max: IntGauge,
    queue_depth: IntGaugeVec,
    files: IntCounterVec,
    webhook_attempts: IntCounterVec,
    webhook_backlog: IntGaugeVec,
    resident_memory: IntGauge,
    peak_resident_memory: IntGauge,
    page_cache_bytes: IntGauge,
    store: Store,
    signals: Arc<Signals>,
    attempts: Arc<AttemptTally>,
    /// Scrapes refresh the read-when-scraped series one at a time.
    refreshing: tokio::sync::Mutex<()>,
}

/// Registers a series; the names are constants of this module, so it cannot fail twice.
fn register<T: prometheus::core::Collector + Clone + 'static>(registry: &Registry, series: T) -> T {
    registry
        .register(Box::new(series.clone()))
        .expect("each series is registered once, with a valid name");
    series
}

fn counters(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    register(
        registry,
        IntCounterVec::new(Opts::new(name, help), labels).expect("a valid series"),
    )
}

fn gauges(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    register(
        registry,
        IntGaugeVec::new(Opts::new(name, help), labels).expect("a valid series"),
    )
}

fn gauge(registry: &Registry, name: &str, help: &str) -> IntGauge {
    register(
        registry,
        IntGauge::with_opts(Opts::new(name, help)).expect("a valid series"),
    )
}

/// Raises a counter to `total`, a count kept elsewhere since the process started.
fn catch_up(counter: &IntCounter, total: u64) {
    let now = counter.get();
    if total > now {
        counter.inc_by(total - now);
    }
}

/// The method as a label: the standard ones by name, anything else as `other`, so a client
/// inventing methods cannot add series.
pub fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

impl Metrics {
    /// The series of a server over `store`, whose workers report to `signals` and webhook
    /// senders to `attempts`.
    pub fn new(store: Store, signals: Arc<Signals>, attempts: Arc<AttemptTally>) -> Metrics {
        let registry = Registry::new();
        let r = &registry;
        let latency = register(
            r,
            HistogramVec::new(
                HistogramOpts::new(
                    "brandhub_http_request_duration_seconds",
                    "Time from receiving a request to its answer's head, by route template, method and status.",
                )
                .buckets(LATENCY_BUCKETS.to_vec()),
                &["route", "method", "status"],
            )
            .expect("a valid series"),
        );
        Metrics {
            requests: counters(
                r,
                "brandhub_http_requests_total",
                "Requests answered, by route template, method and status.",
                &["route", "method", "status"],
            ),
            latency,
            cache_hits: counters(
                r,
                "brandhub_cache_hits_total",
                "Lookups answered from a cache: page (rendered pages), page_listing (the ids and counts of pages whose records changed), page_recheck (stale pages and listings checked against the rows written since: a hit is one kept, a kept page counting as a page hit too), related (the rows of expanded relations, read with a page whose own records were read), count (counts in memory), count_shared (the counts table shared by every process).",
                &["cache"],
            ),
            cache_misses: counters(
                r,
                "brandhub_cache_misses_total",
                "Lookups a cache could not answer (see brandhub_cache_hits_total).",
                &["cache"],
            ),
            pool_connections: gauges(
                r,
                "brandhub_db_pool_connections",
                "Database connections of this process's pool, by state (in_use, idle).",
                &["state"],
            ),
            pool_max: gauge(
                r,
                "brandhub_db_pool_max_connections",
                "The most database connections this process opens (--max-connections).",
            ),
            queue_depth: gauges(
                r,
                "brandhub_job_queue_depth",
                "Uploaded files not yet processed, over every process on the database, by state (pending, running).",
                &["state"],
            ),
            files: counters(
                r,
                "brandhub_files_total",
                "Files this process's workers finished, by outcome (processed, failed, retried).",
                &["outcome"],
            ),
            webhook_attempts: counters(
                r,
                "brandhub_webhook_attempts_total",
                "Webhook attempts this process's senders made, by outcome (delivered, retried, failed).",
                &["outcome"],
            ),
            webhook_backlog: gauges(
                r,
                "brandhub_webhook_backlog",
                "Events not yet fanned out (events) and deliveries pending or retrying (deliveries), over every process.",
                &["state"],
            ),
            resident_memory: gauge(
                r,
                "process_resident_memory_bytes",
                "Resident memory of the process.",
            ),
            peak_resident_memory: gauge(
                r,
                "brandhub_process_peak_resident_memory_bytes",
                "The most resident memory the process has had.",
            ),
            page_cache_bytes: gauge(
                r,
                "brandhub_page_cache_bytes",
                "Bytes of rendered pages this process's page cache holds (at most --page-cache-mb).",
            ),
            registry,
            store,
            signals,
            attempts,
            refreshing: tokio::sync::Mutex::new(()),
        }
    }

    /// Counts one answered request.
    pub fn observe_request(&self, route: &str, method: &Method, status: u16, seconds: f64) {
        let status = status.to_string();
        let labels = [route, method_label(method), status.as_str()];
        self.requests.with_label_values(&labels).inc();
        self.latency.with_label_values(&labels).observe(seconds);
    }

    /// Reads the series kept elsewhere into the registry.
    async fn refresh(&self) {
        let _one_at_a_time = self.refreshing.lock().await;
        for (cache, tally) in self.store.cache_stats().caches {
            catch_up(&self.cache_hits.with_label_values(&[cache]), tally.hits);
            catch_up(&self.cache_misses.with_label_values(&[cache]), tally.misses);
        }
        let pool = self.store.pool_stats();
        let idle = i64::from(pool.idle.min(pool.open));
        self.pool_connections
            .with_label_values(&["in_use"])
            .set(i64::from(pool.open) - idle);
        self.pool_connections.with_label_values(&["idle"]).set(idle);
        self.pool_max.set(i64::from(pool.max));
        match self.store.queue_depth().await {
            Ok(depth) => {
                let set = |state: &str, n: u64| {
                    self.queue_depth
                        .with_label_values(&[state])
                        .set(i64::try_from(n).unwrap_or(i64::MAX))
                };
                set("pending", depth.pending);
                set("running", depth.running);
            }
            // No figure rather than a stale one; readiness says why.
            Err(_) => self.queue_depth.reset(),
        }
        let tally = self.signals.tally();
        for (outcome, name) in Outcome::ALL {
            catch_up(&self.files.with_label_values(&[name]), tally.get(outcome));
        }
        for (outcome, name) in AttemptOutcome::ALL {
            catch_up(
                &self.webhook_attempts.with_label_values(&[name]),
                self.attempts.get(outcome),
            );
        }
        match self.store.webhook_backlog().await {
            Ok((events, deliveries)) => {
                self.webhook_backlog
                    .with_label_values(&["events"])
                    .set(events);
                self.webhook_backlog
                    .with_label_values(&["deliveries"])
                    .set(deliveries);
            }
            Err(_) => self.webhook_backlog.reset(),
        }
        self.page_cache_bytes
            .set(i64::try_from(self.store.page_cache_bytes()).unwrap_or(i64::MAX));
        if let Some(memory) = ProcessMemory::read() {
            self.resident_memory.set(memory.resident as i64);
            self.peak_resident_memory.set(memory.peak_resident as i64);
        }
    }

    /// Every series in Prometheus's text format.
    pub async fn render(&self) -> String {
        self.refresh().await;
        let mut text = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut text)
            .expect("text encoding of gathered series cannot fail");
        String::from_utf8(text).expect("the text format is UTF-8")
    }
}

/// Counts each request by its route template once it is answered. Runs after routing (it is
/// a layer of the router), so the template is known.
pub async fn track(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|path| path.as_str().to_string());
    let response = next.run(request).await;
    metrics.observe_request(
        route.as_deref().unwrap_or(UNMATCHED),
        &method,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}

/// `GET /metrics`.
pub async fn serve_metrics(State(metrics): State<Arc<Metrics>>) -> Response {
    let mut response = metrics.render().await.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

/// The process's memory, from `/proc/self/status` (Linux; elsewhere there is no figure).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessMemory {
    /// Bytes resident now (`VmRSS`).
    pub resident: u64,
    /// The most bytes ever resident (`VmHWM`).
    pub peak_resident: u64,
}

impl ProcessMemory {
    /// This process's memory now, if the system tells.
    pub fn read() -> Option<ProcessMemory> {
        ProcessMemory::parse(&std::fs::read_to_string("/proc/self/status").ok()?)
    }

    /// The figures of a `/proc/<pid>/status` text (sizes there are in kB).
    pub fn parse(status: &str) -> Option<ProcessMemory> {
        let field = |name: &str| {
            status.lines().find_map(|line| {
                let rest = line.strip_prefix(name)?.strip_prefix(':')?;
                let kb: u64 = rest.trim().strip_suffix("kB")?.trim().parse().ok()?;
                Some(kb * 1024)
            })
        };
        Some(ProcessMemory {
            resident: field("VmRSS")?,
            peak_resident: field("VmHWM")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{Method, ProcessMemory, method_label};

    #[test]
    fn invented_methods_share_one_label() {
        assert_eq!(method_label(&Method::PATCH), "PATCH");
        let invented = Method::from_bytes(b"BREW").unwrap();
        assert_eq!(method_label(&invented), "other");
    }

    #[test]
    fn memory_is_read_from_proc_status() {
        let status = "Name:\tbrandhub\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t9\n";
        assert_eq!(
            ProcessMemory::parse(status),
            Some(ProcessMemory {
                resident: 100 << 20,
                peak_resident: 200 << 20
            })
        );
        assert_eq!(ProcessMemory::parse("Name:\tx\n"), None);
    }
}
