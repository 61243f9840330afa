//! Where a delivery may connect (docs/API.md, "Events and webhooks"): only to public addresses, checked when it
//! connects, whatever the URL passed when it was written. A literal address in the URL is
//! checked before sending ([`brandhub_catalog::webhook_url_problem`]: reqwest never resolves a
//! literal); a name goes through [`PublicResolver`], which drops every address that is not
//! public and fails when none remains, so the connection is made only to the addresses
//! checked (a name that resolved to a public address once and to a private one later, or to
//! both at once, never reaches the private one).

use brandhub_catalog::address::non_public;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;

/// A name resolved to addresses only some of which are public, or none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotPublic {
    /// The name resolved.
    pub name: String,
    /// The addresses it resolved to that are not public, each with why.
    pub refused: Vec<(IpAddr, &'static str)>,
}

impl std::fmt::Display for NotPublic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let refused: Vec<String> = self
            .refused
            .iter()
            .map(|(ip, why)| format!("{ip}, {why}"))
            .collect();
        write!(
            f,
            "not sent: {} resolves to no public address ({}); webhooks are delivered to public addresses only",
            self.name,
            refused.join("; ")
        )
    }
}

impl std::error::Error for NotPublic {}

/// How a name becomes addresses: the system's resolver in production, another in tests.
pub type Lookup = Arc<
    dyn Fn(String) -> Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send>> + Send + Sync,
>;

/// The webhook client's resolver: a lookup whose addresses that are not public are dropped.
#[derive(Clone)]
pub struct PublicResolver {
    lookup: Lookup,
}

impl PublicResolver {
    /// Over the system's resolver (`getaddrinfo`, on a blocking thread).
    pub fn system() -> PublicResolver {
        PublicResolver::over(Arc::new(|name: String| {
            Box::pin(async move {
                let found = tokio::net::lookup_host((name.as_str(), 0)).await?;
                Ok(found.map(|address| address.ip()).collect())
            })
        }))
    }

    /// Over another lookup (tests: names resolved without a network).
    pub fn over(lookup: Lookup) -> PublicResolver {
        PublicResolver { lookup }
    }
}

/// The public ones of `addresses` (deduplicated, in order), or [`NotPublic`] when none is.
pub fn public_only(name: &str, addresses: Vec<IpAddr>) -> Result<Vec<IpAddr>, NotPublic> {
    let mut public = Vec::new();
    let mut refused = Vec::new();
    for ip in addresses {
        match non_public(ip) {
            None if !public.contains(&ip) => public.push(ip),
            None => {}
            Some(why) => refused.push((ip, why)),
        }
    }
    if public.is_empty() {
        return Err(NotPublic {
            name: name.to_string(),
            refused,
        });
    }
    Ok(public)
}

impl Resolve for PublicResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let name = name.as_str().to_string();
        let lookup = self.lookup.clone();
        Box::pin(async move {
            let found = lookup(name.clone()).await?;
            let public = public_only(&name, found)?;
            let addresses: Addrs = Box::new(public.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addresses)
        })
    }
}

/// The [`NotPublic`] somewhere in an error's chain of sources, if a delivery failed for it.
pub fn not_public_in<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a NotPublic> {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(found) = error.downcast_ref::<NotPublic>() {
            return Some(found);
        }
        current = error.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn ips(texts: &[&str]) -> Vec<IpAddr> {
        texts.iter().map(|t| t.parse().unwrap()).collect()
    }

    #[test]
    fn only_public_addresses_are_kept_and_none_is_an_error_that_says_why() {
        assert_eq!(
            public_only(
                "hooks.example.com",
                ips(&["10.0.0.7", "93.184.216.34", "::1"])
            ),
            Ok(ips(&["93.184.216.34"]))
        );
        let refused = public_only(
            "rebound.example.com",
            ips(&["127.0.0.1", "169.254.169.254"]),
        )
        .unwrap_err();
        assert_eq!(
            refused.to_string(),
            "not sent: rebound.example.com resolves to no public address (127.0.0.1, a loopback address; 169.254.169.254, a link-local address); webhooks are delivered to public addresses only"
        );
        assert!(public_only("nothing.example.com", Vec::new()).is_err());
    }

    /// A client with the resolver, over a lookup that answers 127.0.0.1 for every name, never
    /// connects to the listener there, and its error names the reason.
    #[tokio::test]
    async fn a_name_resolving_to_loopback_never_reaches_a_local_listener() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counting = accepted.clone();
        tokio::spawn(async move {
            while listener.accept().await.is_ok() {
                counting.fetch_add(1, Ordering::SeqCst);
            }
        });
        let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = asked.clone();
        let resolver = PublicResolver::over(Arc::new(move |name: String| {
            seen.lock().unwrap().push(name);
            Box::pin(async { Ok(ips(&["127.0.0.1"])) })
        }));
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let client = reqwest::Client::builder()
            .dns_resolver(resolver)
            .no_proxy()
            .build()
            .unwrap();
        let error = client
            .post(format!("http://rebound.example.com:{port}/hook"))
            .body("{}")
            .send()
            .await
            .unwrap_err();
        let reason = not_public_in(&error).expect("the reason is in the error's chain");
        assert_eq!(reason.name, "rebound.example.com");
        assert_eq!(*asked.lock().unwrap(), ["rebound.example.com"]);
        // A connection of our own, accepted after any the client made.
        let _ours = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        while accepted.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            1,
            "the client made no connection"
        );
    }
}
