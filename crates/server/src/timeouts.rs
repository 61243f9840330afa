//! How long a connection may take over each thing it owes the server, so that slow or silent
//! clients (slowloris) cannot hold connections open. Three bounds, all configurable:
//!
//! - the TLS handshake (the TLS acceptor);
//! - a request's head: from the moment the connection is ready for a request (when it opens,
//!   and after each answer) until its header section is complete; an idle keep-alive
//!   connection is closed by the same bound (the HTTP server's header-read timer);
//! - idle: no progress for this long while the client owes bytes of a request it began (its
//!   body), or while an answer waits for the client to read it ([`IdleStream`]).
//!
//! A body is bounded besides (`bodies`): before its caller is known it must arrive whole
//! within a bound, and every body must keep a minimum rate, so that a trickle of a byte now
//! and then (which keeps the idle bound from firing) cannot hold a connection either.
//!
//! A request being answered is never cut short: while the server works on an answer the client
//! owes nothing.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// The bounds of [`Timeouts`] as `serve` starts with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// The most a TLS handshake may take.
    pub tls_handshake: Duration,
    /// The most the head of a request may take to arrive, counted from when the connection is
    /// ready for it.
    pub header_read: Duration,
    /// The most a connection may make no progress while the client owes bytes or has an
    /// answer to read.
    pub idle: Duration,
    /// The most a request's body may take to arrive while its caller is not known (sign-in,
    /// an invitation's acceptance, any body read before authentication), counted from its
    /// head.
    pub body_before_caller: Duration,
    /// The fewest bytes a second a body must bring, over each [`Timeouts::body_rate_window`]
    /// spent waiting for it (0: no minimum).
    pub body_min_rate: u64,
    /// The time over which [`Timeouts::body_min_rate`] is measured: a body may pause or
    /// start slowly within it.
    pub body_rate_window: Duration,
}

impl Default for Timeouts {
    /// 10 s for TLS, 30 s for a request's head, 60 s without progress, 30 s for a body before
    /// its caller is known, and 1 KiB/s over each 30 s for every body: far above what a real
    /// client needs, far below what holding thousands of connections open would require.
    fn default() -> Self {
        Timeouts {
            tls_handshake: Duration::from_secs(10),
            header_read: Duration::from_secs(30),
            idle: Duration::from_secs(60),
            body_before_caller: Duration::from_secs(30),
            body_min_rate: 1024,
            body_rate_window: Duration::from_secs(30),
        }
    }
}

/// A connection that can tell whether its client owes the server bytes of a request.
pub trait Owed {
    /// Whether a request has begun and is not complete.
    fn mid_request(&self) -> bool;
}

/// A connection closed with `TimedOut` when it makes no progress for the idle bound while its
/// client owes bytes of a request, or while a write waits for the client to read.
pub struct IdleStream<S> {
    inner: S,
    idle: Duration,
    read_deadline: Option<Pin<Box<Sleep>>>,
    write_deadline: Option<Pin<Box<Sleep>>>,
}

impl<S> IdleStream<S> {
    /// Wraps a connection with this idle bound.
    pub fn new(inner: S, idle: Duration) -> Self {
        IdleStream {
            inner,
            idle,
            read_deadline: None,
            write_deadline: None,
        }
    }
}

fn timed_out(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, what.to_string())
}

/// Polls a deadline, starting it at `idle` from now when there is none; `true` once passed.
fn passed(deadline: &mut Option<Pin<Box<Sleep>>>, idle: Duration, cx: &mut Context<'_>) -> bool {
    let sleep =
        deadline.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(Instant::now() + idle)));
    sleep.as_mut().poll(cx).is_ready()
}

impl<S: AsyncRead + Owed + Unpin> AsyncRead for IdleStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Pending if this.inner.mid_request() => {
                if passed(&mut this.read_deadline, this.idle, cx) {
                    return Poll::Ready(Err(timed_out("the client stopped sending its request")));
                }
                Poll::Pending
            }
            Poll::Pending => {
                // Between requests the head's own bound applies (or an answer is being made).
                this.read_deadline = None;
                Poll::Pending
            }
            ready => {
                this.read_deadline = None;
                ready
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for IdleStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_write(cx, data) {
            Poll::Pending => {
                if passed(&mut this.write_deadline, this.idle, cx) {
                    return Poll::Ready(Err(timed_out("the client stopped reading the answer")));
                }
                Poll::Pending
            }
            ready => {
                this.write_deadline = None;
                ready
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_flush(cx) {
            Poll::Pending => {
                if passed(&mut this.write_deadline, this.idle, cx) {
                    return Poll::Ready(Err(timed_out("the client stopped reading the answer")));
                }
                Poll::Pending
            }
            ready => {
                this.write_deadline = None;
                ready
            }
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_write_vectored(cx, bufs) {
            Poll::Pending => {
                if passed(&mut this.write_deadline, this.idle, cx) {
                    return Poll::Ready(Err(timed_out("the client stopped reading the answer")));
                }
                Poll::Pending
            }
            ready => {
                this.write_deadline = None;
                ready
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// An acceptor that wraps each accepted connection in an [`IdleStream`].
#[derive(Debug, Clone)]
pub struct IdleAcceptor<A> {
    inner: A,
    idle: Duration,
}

impl<A> IdleAcceptor<A> {
    /// Wraps the connections `inner` accepts with this idle bound.
    pub fn new(inner: A, idle: Duration) -> Self {
        IdleAcceptor { inner, idle }
    }
}

impl<A, I, S> axum_server::accept::Accept<I, S> for IdleAcceptor<A>
where
    A: axum_server::accept::Accept<I, S>,
    A::Future: Send + 'static,
    A::Stream: AsyncRead + AsyncWrite + Owed + Unpin + Send + 'static,
    A::Service: Send + 'static,
{
    type Stream = IdleStream<A::Stream>;
    type Service = A::Service;
    type Future = Pin<Box<dyn Future<Output = io::Result<(Self::Stream, Self::Service)>> + Send>>;

    fn accept(&self, stream: I, service: S) -> Self::Future {
        let accepting = self.inner.accept(stream, service);
        let idle = self.idle;
        Box::pin(async move {
            let (stream, service) = accepting.await?;
            Ok((IdleStream::new(stream, idle), service))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    /// A pipe end that says it is owed bytes when told.
    struct Pipe {
        end: DuplexStream,
        owed: bool,
    }

    impl Owed for Pipe {
        fn mid_request(&self) -> bool {
            self.owed
        }
    }

    impl AsyncRead for Pipe {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            Pin::new(&mut self.get_mut().end).poll_read(cx, buf)
        }
    }

    impl AsyncWrite for Pipe {
        fn poll_write(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            data: &[u8],
        ) -> Poll<io::Result<usize>> {
            Pin::new(&mut self.get_mut().end).poll_write(cx, data)
        }
        fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.get_mut().end).poll_flush(cx)
        }
        fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.get_mut().end).poll_shutdown(cx)
        }
    }

    const IDLE: Duration = Duration::from_secs(5);

    // The clock is paused: time moves only when every task waits, so no test races a window.
    #[tokio::test(start_paused = true)]
    async fn a_client_owing_bytes_is_cut_off_after_the_idle_bound() {
        let (server, mut client) = tokio::io::duplex(64);
        let mut stream = IdleStream::new(
            Pipe {
                end: server,
                owed: true,
            },
            IDLE,
        );
        client.write_all(b"part").await.unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(stream.read(&mut buf).await.unwrap(), 4);
        let started = Instant::now();
        let error = stream.read(&mut buf).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), IDLE);
    }

    #[tokio::test(start_paused = true)]
    async fn between_requests_the_idle_bound_does_not_apply() {
        let (server, mut client) = tokio::io::duplex(64);
        let mut stream = IdleStream::new(
            Pipe {
                end: server,
                owed: false,
            },
            IDLE,
        );
        let reading = tokio::spawn(async move {
            let mut buf = [0u8; 16];
            stream.read(&mut buf).await
        });
        tokio::time::sleep(IDLE * 10).await;
        client.write_all(b"late").await.unwrap();
        assert_eq!(reading.await.unwrap().unwrap(), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_does_not_read_is_cut_off() {
        let (server, _client) = tokio::io::duplex(8);
        let mut stream = IdleStream::new(
            Pipe {
                end: server,
                owed: false,
            },
            IDLE,
        );
        let error = stream.write_all(&[0u8; 64]).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
    }
}
