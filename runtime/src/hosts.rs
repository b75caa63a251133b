//! Canonical forms of the hosts a tool call names.
//!
//! An address can be written many ways that all reach the same machine:
//! `169.254.169.254`, `2852039166`, `0xa9fea9fe`, `0251.0376.0251.0376`,
//! `169.254.43518`, `[::ffff:169.254.169.254]`, `[::ffff:a9fe:a9fe]`, or a
//! name the cloud's resolver maps to it (`metadata.google.internal`). A rule
//! that lists spellings misses the next one, so the event's `url` field also
//! carries `http://<canonical>/` for every host whose canonical form differs
//! from what was written: IPv4 in dotted decimal (parsed the way
//! `inet_aton(3)` does, which is what curl, wget and most HTTP stacks
//! accept), IPv6 in RFC 5952 form with IPv4-mapped addresses written as
//! IPv4, and the metadata services' well-known names as their address.
//!
//! Hosts are taken from every `scheme://authority` in the URL fields and
//! commands, and from scheme-less words of commands (`curl 2852039166/x`),
//! the latter only when followed by a path or bracketed and when they
//! resolve to a link-local or metadata address (a bare `5` is a number).

use std::net::{Ipv4Addr, Ipv6Addr};

/// Names the cloud providers' resolvers map to their metadata service.
const METADATA_NAMES: [(&str, &str); 5] = [
    ("metadata", "169.254.169.254"),
    ("metadata.google.internal", "169.254.169.254"),
    ("metadata.goog", "169.254.169.254"),
    ("instance-data", "169.254.169.254"),
    ("instance-data.ec2.internal", "169.254.169.254"),
];

/// One `inet_aton` part: `0x…` hexadecimal, `0…` octal, else decimal.
fn part(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 34 {
        return None;
    }
    let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (h, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    if digits.is_empty() {
        return (radix == 16).then_some(0);
    }
    // Leading zeros beyond what fits are still one value.
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return Some(0);
    }
    if digits.len() > 12 {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// An IPv4 address written in any form `inet_aton` accepts: one to four
/// parts, each decimal, octal or hexadecimal, the last filling the bytes
/// left (`169.254.43518`, `2852039166`).
pub fn ipv4(host: &str) -> Option<Ipv4Addr> {
    let host = host.strip_suffix('.').unwrap_or(host);
    let parts: Vec<u64> = host.split('.').map(part).collect::<Option<_>>()?;
    let n = parts.len();
    if n == 0 || n > 4 {
        return None;
    }
    let mut value: u64 = 0;
    for p in &parts[..n - 1] {
        if *p > 255 {
            return None;
        }
        value = (value << 8) | p;
    }
    let rest_bits = 8 * (5 - n as u32);
    let last = parts[n - 1];
    if rest_bits < 64 && last >= (1u64 << rest_bits) {
        return None;
    }
    value = (value << rest_bits) | last;
    u32::try_from(value).ok().map(Ipv4Addr::from)
}

/// The canonical form of a host: dotted-decimal IPv4, RFC 5952 IPv6 (an
/// IPv4-mapped or IPv4-compatible address as IPv4), a metadata alias as its
/// address, any other name lower-cased without a trailing dot.
pub fn canonical(host: &str) -> Option<String> {
    let host = host.trim();
    if host.is_empty() {
        return None;
    }
    if let Some(inner) = host.strip_prefix('[') {
        let inner = inner.strip_suffix(']').unwrap_or(inner);
        // Zone ids (`%eth0`, `%25eth0`) do not change the address.
        let inner = inner.split('%').next().unwrap_or(inner);
        let v6: Ipv6Addr = inner.parse().ok()?;
        if let Some(v4) = v6.to_ipv4_mapped() {
            return Some(v4.to_string());
        }
        let seg = v6.segments();
        if seg[..6].iter().all(|s| *s == 0) && (seg[6] != 0 || seg[7] > 1) {
            return Some(
                Ipv4Addr::new(
                    (seg[6] >> 8) as u8,
                    seg[6] as u8,
                    (seg[7] >> 8) as u8,
                    seg[7] as u8,
                )
                .to_string(),
            );
        }
        return Some(v6.to_string());
    }
    if let Some(v4) = ipv4(host) {
        return Some(v4.to_string());
    }
    let name = host.trim_end_matches('.').to_ascii_lowercase();
    if let Some((_, addr)) = METADATA_NAMES.iter().find(|(n, _)| *n == name) {
        return Some((*addr).to_string());
    }
    Some(name)
}

/// Whether a canonical host is a link-local or metadata address.
fn is_metadata(canon: &str) -> bool {
    if let Ok(v4) = canon.parse::<Ipv4Addr>() {
        return v4.is_link_local() || v4 == Ipv4Addr::new(100, 100, 100, 200);
    }
    if let Ok(v6) = canon.parse::<Ipv6Addr>() {
        return v6.segments()[..3] == [0xfd00, 0x0ec2, 0];
    }
    false
}

/// The host of an authority (`user:pw@host:port`), brackets kept for IPv6.
fn authority_host(auth: &str) -> &str {
    let auth = auth.rsplit('@').next().unwrap_or(auth);
    if auth.starts_with('[') {
        return match auth.find(']') {
            Some(i) => &auth[..=i],
            None => auth,
        };
    }
    auth.split(':').next().unwrap_or(auth)
}

fn ends_authority(c: char) -> bool {
    matches!(
        c,
        '/' | '?' | '#' | '\\' | '"' | '\'' | '`' | '<' | '>' | ')' | ';' | '|' | '&' | ','
    ) || c.is_whitespace()
}

/// `http://<canonical>/` for every host in `text` whose canonical form
/// differs from how it was written.
pub fn canonical_urls(text: &str, out: &mut Vec<String>) {
    let mut push = |written: &str, canon: String| {
        let shown = if canon.contains(':') {
            format!("[{canon}]")
        } else {
            canon
        };
        if shown != written && !shown.is_empty() {
            let url = format!("http://{shown}/");
            if !out.contains(&url) {
                out.push(url);
            }
        }
    };
    // scheme://authority
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let after = &rest[i + 3..];
        let end = after.find(ends_authority).unwrap_or(after.len());
        let host = authority_host(&after[..end]);
        if let Some(c) = canonical(host) {
            push(host, c);
        }
        rest = &after[end..];
    }
    // Scheme-less words: `curl 0xa9fea9fe/latest`, `wget [::ffff:a9fe:a9fe]/`.
    for word in text.split(|c: char| {
        c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '=' | ';' | '|' | '&' | '(' | ')')
    }) {
        if word.is_empty() || word.contains("://") || word.starts_with('-') {
            continue;
        }
        // A host needs a path after it (`2852039166/x`) or IPv6 brackets;
        // a bare number is a number.
        if !word.contains('/') && !word.starts_with('[') {
            continue;
        }
        let auth = word.split('/').next().unwrap_or(word);
        let host = authority_host(auth);
        if let Some(c) = canonical(host) {
            if is_metadata(&c) {
                push(host, c);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(h: &str) -> String {
        canonical(h).unwrap()
    }

    #[test]
    fn every_ipv4_spelling_of_the_metadata_address_is_one() {
        for h in [
            "169.254.169.254",
            "2852039166",
            "0xa9fea9fe",
            "0xA9FEA9FE",
            "0251.0376.0251.0376",
            "00000251.0376.0251.0376",
            "0xa9.0xfe.0xa9.0xfe",
            "0xa9.254.0251.0376",
            "169.254.43518",
            "169.16689662",
            "0251.0xfe.43518",
            "169.254.169.254.",
            "[::ffff:169.254.169.254]",
            "[::ffff:a9fe:a9fe]",
            "[0:0:0:0:0:ffff:a9fe:a9fe]",
            "[::169.254.169.254]",
            "metadata",
            "METADATA.google.internal.",
            "instance-data",
        ] {
            assert_eq!(canon(h), "169.254.169.254", "{h}");
        }
    }

    #[test]
    fn other_addresses_keep_their_identity() {
        assert_eq!(canon("169.254.170.2"), "169.254.170.2");
        assert_eq!(canon("2852039170"), "169.254.170.2");
        assert_eq!(canon("[fd00:ec2:0:0:0:0:0:254]"), "fd00:ec2::254");
        assert_eq!(canon("[FD00:EC2::254]"), "fd00:ec2::254");
        assert_eq!(canon("127.1"), "127.0.0.1");
        assert_eq!(canon("Example.COM"), "example.com");
        assert_eq!(canon("[::1]"), "::1");
    }

    #[test]
    fn out_of_range_parts_are_not_addresses() {
        assert_eq!(ipv4("256.1.1.1"), None);
        assert_eq!(ipv4("1.2.3.4.5"), None);
        assert_eq!(ipv4("1.2.65536"), None);
        assert_eq!(ipv4("4294967296"), None);
        assert_eq!(ipv4("08.1.1.1"), None, "8 is not an octal digit");
        assert_eq!(ipv4("a.b.c.d"), None);
        assert_eq!(ipv4("1..2"), None);
    }

    fn urls(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        canonical_urls(text, &mut out);
        out
    }

    #[test]
    fn urls_in_commands_gain_their_canonical_form() {
        assert_eq!(
            urls("curl http://2852039166/latest/meta-data/"),
            ["http://169.254.169.254/"]
        );
        assert_eq!(
            urls("curl -s 'http://user:pw@0xa9fea9fe:80/x'"),
            ["http://169.254.169.254/"]
        );
        assert_eq!(
            urls("curl -g http://[::ffff:a9fe:a9fe]/latest"),
            ["http://169.254.169.254/"]
        );
        assert_eq!(
            urls("curl http://[fd00:ec2:0::254]/latest"),
            ["http://[fd00:ec2::254]/"]
        );
        assert_eq!(
            urls("curl 0251.0376.0251.0376/latest/meta-data"),
            ["http://169.254.169.254/"]
        );
        assert_eq!(
            urls("curl http://metadata/computeMetadata/v1/"),
            ["http://169.254.169.254/"]
        );
    }

    #[test]
    fn canonical_and_ordinary_hosts_add_nothing() {
        assert!(urls("curl http://169.254.169.254/latest").is_empty());
        assert!(urls("curl https://example.com/a http://10.0.0.5:8080/").is_empty());
        assert!(urls("sleep 5 && echo 2852039166 > n.txt").is_empty());
        assert!(urls("git clone https://github.com/acme/app").is_empty());
    }
}
