//! Which network addresses are public: where a webhook may send (docs/API.md, "Events and webhooks"). A webhook URL
//! is the one place where a client names a machine the server then connects to, so every
//! address that reaches the server itself or the networks beside it (loopback, private,
//! link-local such as cloud metadata services, shared and reserved ranges) is refused, when
//! the URL is written and again when a delivery connects.
//!
//! IPv4 follows IANA's special-purpose registry; IPv6 allows only global unicast (`2000::/3`)
//! outside its special ranges, and judges an IPv4 address carried inside an IPv6 one (mapped,
//! NAT64, 6to4) as that IPv4 address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why `ip` is not a public address (`"a loopback address"`), or `None` when it is.
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

/// Whether `ip` is this machine's loopback address as written (`127.0.0.0/8`, `::1`): what a
/// server started with `--webhook-allow-insecure-localhost` accepts, for tests with a local
/// receiver, and nothing else that is not public.
pub fn is_loopback_literal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6 == Ipv6Addr::LOCALHOST,
    }
}

/// Whether `v4` lies in `network/prefix`.
fn within(v4: Ipv4Addr, network: [u8; 4], prefix: u32) -> bool {
    let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
    u32::from(v4) & mask == u32::from(Ipv4Addr::from(network)) & mask
}

fn non_public_v4(v4: Ipv4Addr) -> Option<&'static str> {
    const RANGES: [([u8; 4], u32, &str); 17] = [
        ([0, 0, 0, 0], 32, "the unspecified address"),
        ([0, 0, 0, 0], 8, "an address of this network (0.0.0.0/8)"),
        ([10, 0, 0, 0], 8, "a private address"),
        ([100, 64, 0, 0], 10, "a shared (carrier-grade NAT) address"),
        ([127, 0, 0, 0], 8, "a loopback address"),
        ([169, 254, 0, 0], 16, "a link-local address"),
        ([172, 16, 0, 0], 12, "a private address"),
        ([192, 0, 0, 0], 24, "an IETF protocol assignment"),
        ([192, 0, 2, 0], 24, "a documentation address"),
        ([192, 88, 99, 0], 24, "a 6to4 relay anycast address"),
        ([192, 168, 0, 0], 16, "a private address"),
        ([198, 18, 0, 0], 15, "a benchmarking address"),
        ([198, 51, 100, 0], 24, "a documentation address"),
        ([203, 0, 113, 0], 24, "a documentation address"),
        ([224, 0, 0, 0], 4, "a multicast address"),
        ([255, 255, 255, 255], 32, "the broadcast address"),
        ([240, 0, 0, 0], 4, "a reserved address"),
    ];
    RANGES
        .iter()
        .find(|(network, prefix, _)| within(v4, *network, *prefix))
        .map(|(_, _, why)| *why)
}

fn non_public_v6(v6: Ipv6Addr) -> Option<&'static str> {
    let segments = v6.segments();
    let embedded = |high: u16, low: u16| {
        let [a, b] = high.to_be_bytes();
        let [c, d] = low.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    if v6.is_unspecified() {
        return Some("the unspecified address");
    }
    if v6 == Ipv6Addr::LOCALHOST {
        return Some("a loopback address");
    }
    // An IPv4 address in IPv6 clothes reaches that IPv4 address.
    if let Some(v4) = v6.to_ipv4_mapped() {
        return non_public_v4(v4);
    }
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return non_public_v4(embedded(segments[6], segments[7]));
    }
    if segments[0] == 0x2002 {
        return non_public_v4(embedded(segments[1], segments[2]));
    }
    if segments[..6] == [0; 6] {
        return Some("an IPv4-compatible address (deprecated)");
    }
    match segments[0] {
        0xff00..=0xffff => return Some("a multicast address"),
        0xfe80..=0xfebf => return Some("a link-local address"),
        0xfec0..=0xfeff => return Some("a site-local address (deprecated)"),
        0xfc00..=0xfdff => return Some("a unique local (private) address"),
        _ => {}
    }
    if segments[0] & 0xe000 != 0x2000 {
        return Some("not a global unicast address");
    }
    match (segments[0], segments[1]) {
        (0x2001, 0x0db8) => Some("a documentation address"),
        (0x2001, 0x0000..=0x01ff) => Some("an IETF protocol assignment"),
        (0x3fff, 0x0000..=0x0fff) => Some("a documentation address"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why(text: &str) -> Option<&'static str> {
        non_public(text.parse().unwrap())
    }

    #[test]
    fn every_special_ipv4_range_is_refused_with_its_reason() {
        for (address, reason) in [
            ("0.0.0.0", "the unspecified address"),
            ("0.1.2.3", "an address of this network (0.0.0.0/8)"),
            ("10.20.30.40", "a private address"),
            ("172.16.0.1", "a private address"),
            ("172.31.255.255", "a private address"),
            ("192.168.1.1", "a private address"),
            ("100.64.0.1", "a shared (carrier-grade NAT) address"),
            ("100.127.255.254", "a shared (carrier-grade NAT) address"),
            ("127.0.0.1", "a loopback address"),
            ("127.255.0.9", "a loopback address"),
            ("169.254.169.254", "a link-local address"),
            ("192.0.0.8", "an IETF protocol assignment"),
            ("192.0.2.10", "a documentation address"),
            ("198.51.100.7", "a documentation address"),
            ("203.0.113.200", "a documentation address"),
            ("198.18.0.1", "a benchmarking address"),
            ("198.19.255.1", "a benchmarking address"),
            ("224.0.0.251", "a multicast address"),
            ("239.255.255.250", "a multicast address"),
            ("240.0.0.1", "a reserved address"),
            ("255.255.255.255", "the broadcast address"),
        ] {
            assert_eq!(why(address), Some(reason), "{address}");
        }
    }

    #[test]
    fn public_ipv4_addresses_pass_including_the_edges_of_special_ranges() {
        for address in [
            "93.184.216.34",
            "8.8.8.8",
            "1.1.1.1",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "169.253.255.255",
            "192.167.255.255",
            "192.169.0.0",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
        ] {
            assert_eq!(why(address), None, "{address}");
        }
    }

    #[test]
    fn ipv6_is_public_only_as_global_unicast_and_embedded_ipv4_is_judged_as_ipv4() {
        for (address, reason) in [
            ("::", "the unspecified address"),
            ("::1", "a loopback address"),
            ("::ffff:127.0.0.1", "a loopback address"),
            ("::ffff:169.254.169.254", "a link-local address"),
            ("::ffff:10.0.0.1", "a private address"),
            ("::127.0.0.1", "an IPv4-compatible address (deprecated)"),
            ("::8.8.8.8", "an IPv4-compatible address (deprecated)"),
            ("64:ff9b::7f00:1", "a loopback address"),
            ("2002:a00:1::", "a private address"),
            ("2002:7f00:1::1", "a loopback address"),
            ("fc00::1", "a unique local (private) address"),
            ("fd12:3456::1", "a unique local (private) address"),
            ("fe80::1", "a link-local address"),
            ("febf::1", "a link-local address"),
            ("fec0::1", "a site-local address (deprecated)"),
            ("ff02::1", "a multicast address"),
            ("2001:db8::1", "a documentation address"),
            ("3fff::1", "a documentation address"),
            ("2001::1", "an IETF protocol assignment"),
            ("2001:2::1", "an IETF protocol assignment"),
            ("100::1", "not a global unicast address"),
            ("4000::1", "not a global unicast address"),
        ] {
            assert_eq!(why(address), Some(reason), "{address}");
        }
        for address in [
            "2606:4700:4700::1111",
            "2a00:1450:4001:81b::200e",
            "2001:4860:4860::8888",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert_eq!(why(address), None, "{address}");
        }
    }

    #[test]
    fn only_the_loopback_address_itself_is_a_loopback_literal() {
        for address in ["127.0.0.1", "127.1.2.3", "::1"] {
            assert!(is_loopback_literal(address.parse().unwrap()), "{address}");
        }
        for address in ["::ffff:127.0.0.1", "10.0.0.1", "0.0.0.0", "::", "8.8.8.8"] {
            assert!(!is_loopback_literal(address.parse().unwrap()), "{address}");
        }
    }
}
