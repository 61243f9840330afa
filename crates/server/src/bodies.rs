//! How long a request's body may take to arrive (slow bodies, "slow POST"). The connection's
//! idle bound (`timeouts`) starts again with every byte, so a client sending a byte now and
//! then would hold a connection for ever; two bounds on the body itself stop it:
//!
//! - before its caller is known (sign-in, an invitation's acceptance, any body read before
//!   authentication succeeded), the whole body must arrive within
//!   [`Timeouts::body_before_caller`] of the request's head: anyone can send such a request,
//!   so it may not hold a connection longer than that. Authentication lifts it
//!   ([`caller_known`]).
//! - every body, uploads included, must bring at least [`Timeouts::body_min_rate`] bytes a
//!   second over each [`Timeouts::body_rate_window`] of waiting for it. Only time spent
//!   waiting for the client counts: while a handler works on what arrived (storing an
//!   upload's bytes), the client is not to blame.
//!
//! A body past either bound ends with an error where the handler reads it, and the request is
//! answered 408 `request_timeout` with `Connection: close` ([`bound_bodies`]), whatever the
//! handler made of the error.

use crate::problem::Problem;
use crate::timeouts::Timeouts;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::{Extensions, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use brandhub_problem::{ApiError, Code};
use futures_util::Stream;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// Which bound a body passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// It was still arriving when the bound for a caller not yet known passed.
    BeforeCaller,
    /// It brought fewer bytes over a window than the minimum rate asks.
    TooSlow,
}

impl Cut {
    fn of(value: u8) -> Option<Cut> {
        match value {
            1 => Some(Cut::BeforeCaller),
            2 => Some(Cut::TooSlow),
            _ => None,
        }
    }

    fn value(self) -> u8 {
        match self {
            Cut::BeforeCaller => 1,
            Cut::TooSlow => 2,
        }
    }
}

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cut::BeforeCaller => f.write_str("the body did not arrive within its bound"),
            Cut::TooSlow => f.write_str("the body arrived slower than the minimum rate"),
        }
    }
}

impl std::error::Error for Cut {}

/// What a request's body and the rest of the request tell each other: whether its caller is
/// known yet, and whether the body was cut off.
#[derive(Debug, Clone, Default)]
pub struct BodyWatch(Arc<Watch>);

#[derive(Debug, Default)]
struct Watch {
    caller_known: AtomicBool,
    cut: AtomicU8,
}

impl BodyWatch {
    fn caller_known(&self) -> bool {
        self.0.caller_known.load(Ordering::Relaxed)
    }

    fn cut(&self) -> Option<Cut> {
        Cut::of(self.0.cut.load(Ordering::Relaxed))
    }

    fn note_cut(&self, cut: Cut) {
        let _ = self
            .0
            .cut
            .compare_exchange(0, cut.value(), Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// Lifts the bound for a body whose caller is not known: authentication calls it once the
/// request's caller is.
pub fn caller_known(extensions: &Extensions) {
    if let Some(watch) = extensions.get::<BodyWatch>() {
        watch.0.caller_known.store(true, Ordering::Relaxed);
    }
}

/// The bounds of a body, from [`Timeouts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyBounds {
    before_caller: Duration,
    min_rate: u64,
    window: Duration,
}

impl BodyBounds {
    /// The body bounds of these timeouts.
    pub fn of(timeouts: &Timeouts) -> BodyBounds {
        BodyBounds {
            before_caller: timeouts.body_before_caller,
            min_rate: timeouts.body_min_rate,
            window: timeouts.body_rate_window,
        }
    }

    /// The bytes a window must bring (0: no minimum).
    fn bytes_per_window(&self) -> u64 {
        (self.min_rate as f64 * self.window.as_secs_f64()).ceil() as u64
    }
}

/// The middleware: bounds the request's body, and answers 408 when it was cut off.
pub async fn bound_bodies(
    State(bounds): State<BodyBounds>,
    request: Request,
    next: Next,
) -> Response {
    // Most requests (a GET) have no body at all: nothing to bound.
    if request.body().is_end_stream() {
        return next.run(request).await;
    }
    let watch = BodyWatch::default();
    let (mut parts, body) = request.into_parts();
    parts.extensions.insert(watch.clone());
    let bounded = Body::from_stream(BoundedBody::new(body, bounds, watch.clone()));
    let response = next.run(Request::from_parts(parts, bounded)).await;
    match watch.cut() {
        None => response,
        Some(cut) => {
            let detail = match cut {
                Cut::BeforeCaller => format!(
                    "The request body did not arrive within {} s; send it whole at once.",
                    bounds.before_caller.as_secs_f64()
                ),
                Cut::TooSlow => format!(
                    "The request body arrived slower than {} bytes a second over {} s.",
                    bounds.min_rate,
                    bounds.window.as_secs_f64()
                ),
            };
            let mut response = Problem(ApiError::new(Code::RequestTimeout, detail)).into_response();
            // The rest of the body is not read: the connection cannot carry another request.
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            response
        }
    }
}

/// A body that ends with [`Cut`] once it passes a bound.
struct BoundedBody {
    inner: axum::body::BodyDataStream,
    bounds: BodyBounds,
    watch: BodyWatch,
    /// When the body must have arrived while its caller is not known, and its timer (made
    /// when the body first waits for the client).
    before_caller: Instant,
    before_caller_timer: Option<Pin<Box<Sleep>>>,
    /// Bytes arrived in the current window, and the time spent waiting for them.
    window_bytes: u64,
    window_waited: Duration,
    /// Since when the body waits for the client (a read found nothing), and when that wait
    /// fills the current window.
    waiting: Option<(Instant, Pin<Box<Sleep>>)>,
    /// Set once the body ended or was cut off: nothing more is read.
    done: bool,
}

impl BoundedBody {
    fn new(body: Body, bounds: BodyBounds, watch: BodyWatch) -> BoundedBody {
        BoundedBody {
            inner: body.into_data_stream(),
            bounds,
            watch,
            before_caller: Instant::now() + bounds.before_caller,
            before_caller_timer: None,
            window_bytes: 0,
            window_waited: Duration::ZERO,
            waiting: None,
            done: false,
        }
    }

    /// Ends the body with `cut`.
    fn cut(&mut self, cut: Cut) -> Poll<Option<Result<Bytes, axum::Error>>> {
        self.done = true;
        self.watch.note_cut(cut);
        tracing::info!(%cut, "a request body was cut off");
        Poll::Ready(Some(Err(axum::Error::new(cut))))
    }

    /// Whether the window that just filled brought too few bytes; if not, the next begins.
    fn window_too_slow(&mut self) -> bool {
        if self.window_bytes < self.bounds.bytes_per_window() {
            return true;
        }
        self.window_bytes = 0;
        self.window_waited = Duration::ZERO;
        false
    }

    /// Counts the wait that ended now (a read found data, or the window filled).
    fn stop_waiting(&mut self, now: Instant) {
        if let Some((since, _)) = self.waiting.take() {
            self.window_waited += now.saturating_duration_since(since);
        }
    }
}

impl Stream for BoundedBody {
    type Item = Result<Bytes, axum::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        let unknown_caller = !this.watch.caller_known();
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Ready(Some(Ok(data))) => {
                let now = Instant::now();
                this.stop_waiting(now);
                this.window_bytes += data.len() as u64;
                if unknown_caller && now >= this.before_caller {
                    return this.cut(Cut::BeforeCaller);
                }
                let rated = this.bounds.min_rate > 0;
                if rated && this.window_waited >= this.bounds.window && this.window_too_slow() {
                    return this.cut(Cut::TooSlow);
                }
                Poll::Ready(Some(Ok(data)))
            }
            Poll::Ready(other) => {
                this.done = true;
                Poll::Ready(other)
            }
            Poll::Pending => {
                if unknown_caller {
                    let at = this.before_caller;
                    let timer = this
                        .before_caller_timer
                        .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
                    if timer.as_mut().poll(cx).is_ready() {
                        return this.cut(Cut::BeforeCaller);
                    }
                }
                if this.bounds.min_rate == 0 {
                    return Poll::Pending;
                }
                loop {
                    let window = this.bounds.window;
                    let waited = this.window_waited;
                    let (_, filled) = this.waiting.get_or_insert_with(|| {
                        let now = Instant::now();
                        let left = window.saturating_sub(waited);
                        (now, Box::pin(tokio::time::sleep_until(now + left)))
                    });
                    if filled.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    // The window filled while waiting: judged now, then the next one waits.
                    this.stop_waiting(Instant::now());
                    if this.window_too_slow() {
                        return this.cut(Cut::TooSlow);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use tokio::sync::mpsc;

    /// A body whose chunks the test sends when it likes.
    fn body_fed_by_hand() -> (mpsc::Sender<Result<Bytes, std::io::Error>>, Body) {
        let (sender, receiver) = mpsc::channel(16);
        let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|chunk| (chunk, receiver))
        });
        (sender, Body::from_stream(stream))
    }

    fn bounds(before_caller: u64, min_rate: u64, window: u64) -> BodyBounds {
        BodyBounds {
            before_caller: Duration::from_secs(before_caller),
            min_rate,
            window: Duration::from_secs(window),
        }
    }

    fn chunk(n: usize) -> Result<Bytes, std::io::Error> {
        Ok(Bytes::from(vec![b' '; n]))
    }

    /// Reads the body to its end: the bytes read, or the cut that ended it.
    async fn read(body: &mut BoundedBody) -> Result<usize, Cut> {
        let mut read = 0;
        while let Some(next) = body.next().await {
            match next {
                Ok(data) => read += data.len(),
                Err(error) => {
                    let cut = error
                        .into_inner()
                        .downcast::<Cut>()
                        .expect("only the bounds end a body here");
                    return Err(*cut);
                }
            }
        }
        Ok(read)
    }

    // The clock is paused: time moves only when every task waits, so no test races a window.
    #[tokio::test(start_paused = true)]
    async fn a_body_before_its_caller_is_known_must_arrive_within_the_bound() {
        let (sender, body) = body_fed_by_hand();
        let watch = BodyWatch::default();
        let mut bounded = BoundedBody::new(body, bounds(30, 0, 30), watch.clone());
        tokio::spawn(async move {
            for _ in 0..100 {
                if sender.send(chunk(1)).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        let started = Instant::now();
        assert_eq!(read(&mut bounded).await, Err(Cut::BeforeCaller));
        assert_eq!(started.elapsed(), Duration::from_secs(30));
        assert_eq!(watch.cut(), Some(Cut::BeforeCaller));
    }

    #[tokio::test(start_paused = true)]
    async fn a_known_callers_body_may_take_longer_at_the_minimum_rate() {
        let (sender, body) = body_fed_by_hand();
        let watch = BodyWatch::default();
        let mut extensions = Extensions::new();
        extensions.insert(watch.clone());
        caller_known(&extensions);
        let mut bounded = BoundedBody::new(body, bounds(30, 1024, 30), watch.clone());
        tokio::spawn(async move {
            // 2 KiB a second for 100 s.
            for _ in 0..100 {
                sender.send(chunk(2048)).await.unwrap();
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        assert_eq!(read(&mut bounded).await, Ok(100 * 2048));
        assert_eq!(watch.cut(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_trickle_is_cut_off_after_one_window() {
        let (sender, body) = body_fed_by_hand();
        let watch = BodyWatch::default();
        caller_known(&{
            let mut extensions = Extensions::new();
            extensions.insert(watch.clone());
            extensions
        });
        let mut bounded = BoundedBody::new(body, bounds(30, 1024, 30), watch.clone());
        tokio::spawn(async move {
            // A byte every 20 s: the idle bound would start again each time.
            for _ in 0..100 {
                if sender.send(chunk(1)).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_secs(20)).await;
            }
        });
        let started = Instant::now();
        assert_eq!(read(&mut bounded).await, Err(Cut::TooSlow));
        assert!(
            started.elapsed() <= Duration::from_secs(31),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn time_the_reader_spends_elsewhere_is_not_the_clients() {
        let (sender, body) = body_fed_by_hand();
        let watch = BodyWatch::default();
        caller_known(&{
            let mut extensions = Extensions::new();
            extensions.insert(watch.clone());
            extensions
        });
        let mut bounded = BoundedBody::new(body, bounds(30, 1024, 30), watch.clone());
        // Every chunk is there at once; the reader takes a minute over each.
        for _ in 0..5 {
            sender.send(chunk(100)).await.unwrap();
        }
        drop(sender);
        let mut read = 0;
        while let Some(next) = bounded.next().await {
            read += next.expect("not cut off").len();
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
        assert_eq!(read, 500);
    }
}
