//! How many connections one client address may hold open at once, so that one address cannot
//! take all the server's connections (slow clients or not). The address is the connection's
//! TCP peer; a trusted proxy (`--trusted-proxies`), which carries the connections of many
//! clients, has a larger cap of its own, and so has every peer behind a TLS-terminating proxy
//! (`--behind-proxy`: the only peers are proxies).
//!
//! A connection past the cap is closed as soon as it is accepted, before its TLS handshake:
//! answering 429 would first cost the handshake and reading a request, the very work the cap
//! exists to bound. Clients see a closed connection and may try again once one of theirs
//! closes.

use crate::proxies::TrustedProxies;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The most connections open at once from one address (0: no cap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// From one client address.
    pub per_address: usize,
    /// From one trusted proxy (or any peer behind a proxy).
    pub per_proxy: usize,
}

impl Default for ConnectionLimits {
    /// 64 per address, far above the six or so a browser opens to one host; 1,024 per
    /// proxy, which carries many clients.
    fn default() -> Self {
        ConnectionLimits {
            per_address: 64,
            per_proxy: 1024,
        }
    }
}

/// Open connections by peer address.
#[derive(Debug, Default)]
struct Tally {
    open: Mutex<HashMap<IpAddr, usize>>,
}

impl Tally {
    /// A place for one more connection from `address`, if it has fewer than `cap` open.
    fn take(self: &Arc<Self>, address: IpAddr, cap: usize) -> Option<Place> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let count = open.entry(address).or_insert(0);
        if cap > 0 && *count >= cap {
            return None;
        }
        *count += 1;
        Some(Place {
            tally: self.clone(),
            address,
        })
    }
}

/// One open connection's place in its address's count, given back when dropped.
#[derive(Debug)]
pub struct Place {
    tally: Arc<Tally>,
    address: IpAddr,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut open = self.tally.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = open.get_mut(&self.address) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.address);
            }
        }
    }
}

/// An acceptor that closes a connection whose address has its cap of connections open, and
/// counts the others until they close.
#[derive(Debug, Clone)]
pub struct CappedAcceptor<A> {
    inner: A,
    limits: ConnectionLimits,
    proxies: Arc<TrustedProxies>,
    /// Every peer is a proxy (plain HTTP behind a TLS-terminating proxy).
    all_proxies: bool,
    tally: Arc<Tally>,
}

impl<A> CappedAcceptor<A> {
    /// Caps what `inner` accepts by these limits; peers among `proxies`, or every peer when
    /// `all_proxies`, have the proxies' cap.
    pub fn new(
        inner: A,
        limits: ConnectionLimits,
        proxies: Arc<TrustedProxies>,
        all_proxies: bool,
    ) -> Self {
        CappedAcceptor {
            inner,
            limits,
            proxies,
            all_proxies,
            tally: Arc::default(),
        }
    }

    /// The cap of connections from `peer`.
    fn cap_of(&self, peer: IpAddr) -> usize {
        if self.all_proxies || self.proxies.trusts(peer) {
            self.limits.per_proxy
        } else {
            self.limits.per_address
        }
    }
}

impl<A, S> axum_server::accept::Accept<TcpStream, S> for CappedAcceptor<A>
where
    A: axum_server::accept::Accept<TcpStream, S>,
    A::Future: Send + 'static,
    A::Stream: Send + 'static,
    A::Service: Send + 'static,
{
    type Stream = Counted<A::Stream>;
    type Service = A::Service;
    type Future = Pin<Box<dyn Future<Output = io::Result<(Self::Stream, Self::Service)>> + Send>>;

    fn accept(&self, stream: TcpStream, service: S) -> Self::Future {
        let peer = match stream.peer_addr() {
            Ok(peer) => peer.ip().to_canonical(),
            Err(error) => return Box::pin(std::future::ready(Err(error))),
        };
        let Some(place) = self.tally.take(peer, self.cap_of(peer)) else {
            tracing::debug!(%peer, "a connection past its address's cap was closed");
            // Dropping the stream closes it.
            return Box::pin(std::future::ready(Err(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                format!("{peer} has its cap of connections open"),
            ))));
        };
        let accepting = self.inner.accept(stream, service);
        Box::pin(async move {
            let (stream, service) = accepting.await?;
            Ok((
                Counted {
                    inner: stream,
                    _place: place,
                },
                service,
            ))
        })
    }
}

/// A connection that holds its place in its address's count while open.
pub struct Counted<S> {
    inner: S,
    _place: Place,
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, data)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn an_address_gets_its_cap_and_a_place_comes_back_when_a_connection_closes() {
        let tally = Arc::new(Tally::default());
        let a = ip("192.0.2.1");
        let held: Vec<Place> = (0..3).map(|_| tally.take(a, 3).expect("within")).collect();
        assert!(tally.take(a, 3).is_none(), "the fourth is refused");
        assert!(tally.take(ip("192.0.2.2"), 3).is_some(), "per address");
        drop(held.into_iter().next());
        assert!(
            tally.take(a, 3).is_some(),
            "a closed one's place is free again"
        );
        let many: Vec<Option<Place>> = (0..1000).map(|_| tally.take(a, 0)).collect();
        assert!(many.iter().all(Option::is_some), "0 caps nothing");
    }

    #[test]
    fn the_counts_of_closed_connections_are_forgotten() {
        let tally = Arc::new(Tally::default());
        drop(tally.take(ip("192.0.2.1"), 3));
        assert!(tally.open.lock().unwrap().is_empty());
    }

    #[test]
    fn proxies_have_their_own_cap() {
        let proxies = Arc::new(TrustedProxies::new(vec!["10.0.0.0/8".parse().unwrap()]));
        let limits = ConnectionLimits {
            per_address: 2,
            per_proxy: 50,
        };
        let acceptor = CappedAcceptor::new((), limits, proxies.clone(), false);
        assert_eq!(acceptor.cap_of(ip("10.1.2.3")), 50);
        assert_eq!(acceptor.cap_of(ip("192.0.2.1")), 2);
        let behind = CappedAcceptor::new((), limits, proxies, true);
        assert_eq!(behind.cap_of(ip("192.0.2.1")), 50);
    }
}
