//! Webhook delivery inside `brandhub serve` (docs/API.md, "Events and webhooks"). One task fans committed events out
//! to the webhooks subscribed to them (`Store::fan_out_events`); sender tasks claim due
//! deliveries (`Store::claim_delivery`: any process may, exactly one makes each attempt), POST
//! them signed ([`sign`]), and record the answer, retrying on the [`schedule`]. They share
//! nothing with API requests or file workers but the database, so a slow or dead receiver
//! only ever holds a sender for its time-out. They connect only to public addresses
//! ([`address`]), follow no redirects and use no proxy.

pub mod address;
pub mod schedule;
pub mod sign;

use brandhub_store::{AttemptResult, DeliveryClaim, Store};
use schedule::RetrySchedule;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

/// How webhooks are delivered.
#[derive(Debug, Clone, Copy)]
pub struct WebhookSettings {
    /// Sender tasks in this process (0: this process delivers nothing; others may).
    pub senders: usize,
    /// How long a receiver may take to answer.
    pub timeout: Duration,
    /// How often idle tasks look for other processes' events and retries that fell due.
    pub poll_interval: Duration,
    /// When failed attempts are tried again.
    pub retry: RetrySchedule,
    /// How long a batch (a webhook's with `batch`) gathers events after its first before it
    /// is sent, unless it fills up first.
    pub batch_wait: Duration,
    /// Whether webhook URLs may name this machine's loopback address as written (`127.0.0.1`,
    /// `[::1]`), over plain http too (`--webhook-allow-insecure-localhost`, for tests with a
    /// local receiver); applied to the store by the server.
    pub allow_insecure_localhost: bool,
}

impl Default for WebhookSettings {
    fn default() -> WebhookSettings {
        WebhookSettings {
            senders: 2,
            timeout: Duration::from_secs(10),
            poll_interval: Duration::from_secs(1),
            retry: RetrySchedule::default(),
            batch_wait: Duration::from_secs(1),
            allow_insecure_localhost: false,
        }
    }
}

/// How an attempt ended, as metrics count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// The receiver answered 2xx.
    Delivered,
    /// It failed; another attempt is due later.
    Retried,
    /// It failed and the retry period is over: the delivery is `failed`.
    Failed,
}

impl AttemptOutcome {
    /// Every outcome, with the name metrics label it by.
    pub const ALL: [(AttemptOutcome, &'static str); 3] = [
        (AttemptOutcome::Delivered, "delivered"),
        (AttemptOutcome::Retried, "retried"),
        (AttemptOutcome::Failed, "failed"),
    ];

    fn of(result: &AttemptResult) -> AttemptOutcome {
        match (result.delivered, result.next_due) {
            (true, _) => AttemptOutcome::Delivered,
            (false, Some(_)) => AttemptOutcome::Retried,
            (false, None) => AttemptOutcome::Failed,
        }
    }
}

/// The attempts this process's senders made since it started, by outcome (for metrics).
#[derive(Debug, Default)]
pub struct AttemptTally {
    counts: [AtomicU64; 3],
}

impl AttemptTally {
    fn record(&self, outcome: AttemptOutcome) {
        self.counts[outcome as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// The attempts that ended so.
    pub fn get(&self, outcome: AttemptOutcome) -> u64 {
        self.counts[outcome as usize].load(Ordering::Relaxed)
    }
}

/// Events fanned out per transaction.
const FAN_OUT_BATCH: u64 = 200;

/// The delivery tasks of one process.
pub struct Deliveries {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

/// What the tasks share.
struct Context {
    store: Store,
    settings: WebhookSettings,
    client: reqwest::Client,
    /// Wakes the senders when the fan-out made deliveries.
    fanned_out: Notify,
    tally: Arc<AttemptTally>,
}

impl Deliveries {
    /// Starts the fan-out task and `settings.senders` senders (none of either when
    /// `senders` is 0), counting their attempts in `tally`.
    pub fn start(store: Store, settings: WebhookSettings, tally: Arc<AttemptTally>) -> Deliveries {
        let (stop, stopped) = watch::channel(false);
        if settings.senders == 0 {
            return Deliveries {
                stop,
                tasks: Vec::new(),
            };
        }
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Another part of the process may have installed one meanwhile: either is fine.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let client = match client(&settings) {
            Ok(client) => client,
            Err(error) => {
                // No client without the address checks: this process sends nothing.
                tracing::error!(%error, "the webhook client could not be built; this process delivers no webhooks");
                return Deliveries {
                    stop,
                    tasks: Vec::new(),
                };
            }
        };
        let context = Arc::new(Context {
            store,
            settings,
            client,
            fanned_out: Notify::new(),
            tally,
        });
        let mut tasks = vec![tokio::spawn(fan_out(context.clone(), stopped.clone()))];
        for _ in 0..settings.senders {
            tasks.push(tokio::spawn(send(context.clone(), stopped.clone())));
        }
        Deliveries { stop, tasks }
    }

    /// Stops the tasks; an attempt still in flight after `grace` is abandoned (its claim
    /// expires and another sender makes it again).
    pub async fn stop(self, grace: Duration) {
        let _ = self.stop.send(true);
        let deadline = tokio::time::Instant::now() + grace;
        for mut task in self.tasks {
            if tokio::time::timeout_at(deadline, &mut task).await.is_err() {
                task.abort();
            }
        }
    }
}

/// The client deliveries are sent with: it resolves names to public addresses only
/// ([`address::PublicResolver`]), follows no redirect (a receiver cannot send it elsewhere)
/// and uses no proxy (which would resolve names itself).
fn client(settings: &WebhookSettings) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(settings.timeout)
        .connect_timeout(settings.timeout)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(address::PublicResolver::system())
        .user_agent(concat!("brandhub-webhooks/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// Waits for `wake`, the poll interval or the stop; `false` when stopping.
async fn idle(wake: &Notify, poll: Duration, stop: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        _ = wake.notified() => true,
        _ = tokio::time::sleep(poll) => true,
        changed = stop.changed() => changed.is_ok() && !*stop.borrow(),
    }
}

/// Fans out committed events whenever a write of this process announces some, and every
/// poll interval for other processes'; wakes the senders when a batch it left open falls due.
async fn fan_out(context: Arc<Context>, mut stop: watch::Receiver<bool>) {
    let written = context.store.events_written();
    // When the earliest batch this task left open falls due (the store's clock).
    let mut batch_due: Option<i64> = None;
    loop {
        if *stop.borrow() {
            return;
        }
        loop {
            match context
                .store
                .fan_out_events(FAN_OUT_BATCH, context.settings.batch_wait)
                .await
            {
                Ok(fanned) if fanned.events == 0 => break,
                Ok(fanned) => {
                    context.fanned_out.notify_waiters();
                    if let Some(due) = fanned.batch_due {
                        batch_due = Some(batch_due.map_or(due, |d| d.min(due)));
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "events could not be fanned out to webhooks");
                    break;
                }
            }
        }
        let now = context.store.clock().now_millis();
        if batch_due.is_some_and(|due| due <= now) {
            batch_due = None;
            context.fanned_out.notify_waiters();
        }
        let wait = batch_due.map_or(context.settings.poll_interval, |due| {
            let until = Duration::from_millis(u64::try_from(due - now).unwrap_or(0));
            until.min(context.settings.poll_interval)
        });
        if !idle(&written, wait, &mut stop).await {
            return;
        }
    }
}

/// One sender: claim a due delivery, make the attempt, record it; wait when none is due.
async fn send(context: Arc<Context>, mut stop: watch::Receiver<bool>) {
    // The claim outlives the longest attempt, so it never expires while the attempt runs.
    let lease = i64::try_from((context.settings.timeout * 2 + Duration::from_secs(5)).as_millis())
        .unwrap_or(i64::MAX);
    loop {
        if *stop.borrow() {
            return;
        }
        match context.store.claim_delivery(lease).await {
            Ok(Some(claim)) => {
                let result = attempt(&context, &claim).await;
                context.tally.record(AttemptOutcome::of(&result));
                match context.store.finish_delivery(&claim, &result).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(delivery = %claim.id, "a webhook delivery's claim expired before its attempt was recorded")
                    }
                    Err(error) => {
                        tracing::warn!(%error, delivery = %claim.id, "a webhook attempt could not be recorded; it will be made again")
                    }
                }
                continue;
            }
            Ok(None) => {}
            Err(error) => tracing::warn!(%error, "webhook deliveries could not be claimed"),
        }
        if !idle(
            &context.fanned_out,
            context.settings.poll_interval,
            &mut stop,
        )
        .await
        {
            return;
        }
    }
}

/// Makes one attempt: POSTs the body signed now, and says how it went and when to try again.
/// A delivery its webhook may no longer make is failed without sending; one to a URL that is
/// not a public https receiver (as the server allows, checked again now: the URL may predate
/// the rules) is a failed attempt that connected nowhere.
async fn attempt(context: &Context, claim: &DeliveryClaim) -> AttemptResult {
    let now = context.store.clock().now_millis();
    if let Some(withheld) = &claim.withheld {
        tracing::info!(delivery = %claim.id, %withheld, "a webhook delivery was withheld");
        return AttemptResult {
            delivered: false,
            response_code: None,
            error: Some(format!("not sent: {withheld}")),
            next_due: None,
        };
    }
    let allow_loopback = context.store.allows_insecure_loopback_urls();
    if let Some(problem) = brandhub_catalog::webhook_url_problem(&claim.url, allow_loopback) {
        return AttemptResult {
            delivered: false,
            response_code: None,
            error: Some(format!("not sent: the URL {problem}")),
            next_due: context
                .settings
                .retry
                .next_due(claim.attempts, claim.created_at, now),
        };
    }
    let signature = sign::signature(&claim.secret, now / 1000, claim.body.as_bytes());
    let sent = context
        .client
        .post(&claim.url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(sign::SIGNATURE_HEADER, signature)
        .header("BrandHub-Event", claim.event_type.as_str())
        .header("BrandHub-Delivery", claim.id.as_str())
        .header("BrandHub-Attempt", claim.attempts.to_string())
        .body(claim.body.clone())
        .send()
        .await;
    let (code, error) = match sent {
        Ok(answer) if answer.status().is_success() => {
            tracing::debug!(delivery = %claim.id, status = %answer.status(), "webhook delivered");
            return AttemptResult {
                delivered: true,
                response_code: Some(i64::from(answer.status().as_u16())),
                error: None,
                next_due: None,
            };
        }
        Ok(answer) => (
            Some(i64::from(answer.status().as_u16())),
            format!("the receiver answered {}", answer.status()),
        ),
        Err(error) if error.is_timeout() => (
            None,
            format!(
                "no answer within {} s",
                context.settings.timeout.as_secs_f64()
            ),
        ),
        Err(error) => match address::not_public_in(&error) {
            Some(not_public) => (None, not_public.to_string()),
            None => (None, format!("the receiver could not be reached: {error}")),
        },
    };
    let finished = context.store.clock().now_millis();
    let next_due = context
        .settings
        .retry
        .next_due(claim.attempts, claim.created_at, finished);
    tracing::info!(delivery = %claim.id, attempt = claim.attempts, %error, retry = next_due.is_some(), "a webhook attempt failed");
    AttemptResult {
        delivered: false,
        response_code: code,
        error: Some(error),
        next_due,
    }
}
