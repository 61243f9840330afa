//! Which address a request comes from, for the failed-authentication limiter. The peer of the
//! connection, unless that peer is a proxy the operator named (`--trusted-proxies`): then the
//! `X-Forwarded-For` chain is read from the right, each trusted proxy vouching for the hop
//! before it, and the first address that is not a trusted proxy is the client. A client can
//! write anything to the left of what the proxies append, so nothing left of that address is
//! believed, and without trusted proxies the header is ignored.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// One trusted address or network (`10.0.0.0/8`, `192.0.2.7`, `2001:db8::/32`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    address: IpAddr,
    prefix: u8,
}

impl Network {
    /// Whether `address` lies in this network.
    pub fn contains(&self, address: IpAddr) -> bool {
        match (self.address, canonical(address)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl FromStr for Network {
    type Err = String;

    fn from_str(text: &str) -> Result<Network, String> {
        let text = text.trim();
        let invalid = || format!("'{text}' is not an IP address or network such as 10.0.0.0/8");
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let address = canonical(address.parse::<IpAddr>().map_err(|_| invalid())?);
        let bits = if address.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => bits,
            Some(prefix) => prefix
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= bits)
                .ok_or_else(invalid)?,
        };
        Ok(Network { address, prefix })
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix)
    }
}

/// The proxies whose `X-Forwarded-For` is believed; none by default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies {
    networks: Vec<Network>,
}

impl TrustedProxies {
    /// Proxies in these networks.
    pub fn new(networks: Vec<Network>) -> TrustedProxies {
        TrustedProxies { networks }
    }

    /// Whether `address` is a trusted proxy.
    pub fn trusts(&self, address: IpAddr) -> bool {
        self.networks.iter().any(|n| n.contains(address))
    }

    /// The client of a request from `peer` carrying these `X-Forwarded-For` values (in header
    /// order): walking from the right while the current hop is a trusted proxy. An unreadable
    /// hop stops the walk at the proxy that passed it on.
    pub fn client<'a>(&self, peer: IpAddr, forwarded_for: impl Iterator<Item = &'a str>) -> IpAddr {
        let mut client = canonical(peer);
        if !self.trusts(client) {
            return client;
        }
        let hops: Vec<&str> = forwarded_for.flat_map(|value| value.split(',')).collect();
        for hop in hops.iter().rev() {
            let Some(address) = parse_hop(hop) else {
                break;
            };
            client = address;
            if !self.trusts(client) {
                break;
            }
        }
        client
    }
}

/// An address as `X-Forwarded-For` may write it: `192.0.2.7`, `2001:db8::1`, with a port
/// (`192.0.2.7:4711`, `[2001:db8::1]:4711`) or in brackets.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim();
    if let Ok(address) = hop.parse::<IpAddr>() {
        return Some(canonical(address));
    }
    if let Ok(socket) = hop.parse::<std::net::SocketAddr>() {
        return Some(canonical(socket.ip()));
    }
    hop.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .and_then(|h| h.parse::<IpAddr>().ok())
        .map(canonical)
}

/// IPv4 addresses that a dual-stack socket reports as IPv6 (`::ffff:192.0.2.7`) as IPv4.
fn canonical(address: IpAddr) -> IpAddr {
    address.to_canonical()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxies(list: &[&str]) -> TrustedProxies {
        TrustedProxies::new(list.iter().map(|n| n.parse().unwrap()).collect())
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn networks_parse_and_match() {
        let net: Network = "10.0.0.0/8".parse().unwrap();
        assert!(net.contains(ip("10.200.3.4")));
        assert!(!net.contains(ip("11.0.0.1")));
        assert!(net.contains(ip("::ffff:10.1.2.3")), "mapped IPv4 is IPv4");
        let one: Network = "192.0.2.7".parse().unwrap();
        assert!(one.contains(ip("192.0.2.7")) && !one.contains(ip("192.0.2.8")));
        let v6: Network = "2001:db8::/32".parse().unwrap();
        assert!(v6.contains(ip("2001:db8:1::5")) && !v6.contains(ip("2001:db9::1")));
        let all: Network = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains(ip("203.0.113.9")) && !all.contains(ip("::1")));
        for bad in [
            "",
            "10.0.0.0/33",
            "::/129",
            "10.0.0/8",
            "example.org",
            "10.0.0.0/x",
        ] {
            assert!(bad.parse::<Network>().is_err(), "{bad}");
        }
    }

    #[test]
    fn without_trusted_proxies_the_header_is_ignored() {
        let none = TrustedProxies::default();
        assert_eq!(
            none.client(ip("198.51.100.1"), ["203.0.113.5"].into_iter()),
            ip("198.51.100.1")
        );
        // A peer that is not a trusted proxy is the client whatever it sends.
        let some = proxies(&["10.0.0.0/8"]);
        assert_eq!(
            some.client(ip("198.51.100.1"), ["203.0.113.5"].into_iter()),
            ip("198.51.100.1")
        );
    }

    #[test]
    fn the_chain_is_read_from_the_right() {
        let trusted = proxies(&["10.0.0.0/8", "192.0.2.1"]);
        let peer = ip("10.0.0.2");
        // The client wrote 1.2.3.4 itself; the proxy appended the address it saw.
        assert_eq!(
            trusted.client(peer, ["1.2.3.4, 203.0.113.5"].into_iter()),
            ip("203.0.113.5")
        );
        // Two proxies, the header split over two lines, a port and brackets.
        assert_eq!(
            trusted.client(
                peer,
                ["6.6.6.6, [2001:db8::7]:443", "192.0.2.1, 10.9.9.9"].into_iter()
            ),
            ip("2001:db8::7")
        );
        // Every hop trusted: the left-most is as far as anyone vouches.
        assert_eq!(
            trusted.client(peer, ["10.1.1.1, 192.0.2.1"].into_iter()),
            ip("10.1.1.1")
        );
        // No header: the proxy itself.
        assert_eq!(trusted.client(peer, std::iter::empty()), peer);
        // Garbage passed on by a trusted proxy stops the walk there.
        assert_eq!(
            trusted.client(peer, ["203.0.113.5, unknown, 192.0.2.1"].into_iter()),
            ip("192.0.2.1")
        );
    }
}
