//! Which request and response headers cross the proxy. Everything the agent
//! sends (API keys, `anthropic-version`, `anthropic-beta`, `openai-*`, its
//! own ids) is forwarded as it is; hop-by-hop headers (RFC 9110 §7.6.1, and
//! those the `Connection` header names) are not, nor `Host` (the upstream's
//! is set), `Content-Length` (the body may be rewritten) and Parallax's own
//! `X-Parallax-*` headers (the token, the session). Upstream is
//! asked for `accept-encoding: identity`, so what comes back can be read.
//! With `telemetry.otlp` set, `traceparent`/`tracestate` are Parallax's own
//! (the proxy call's span, in the agent's trace when it sent one).

use hyper::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT_ENCODING, CONNECTION};

const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

fn named_by_connection(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .filter(|t| !t.is_empty())
        .collect()
}

/// Whether `name` is a header that belongs to one connection only.
fn hop_by_hop(name: &HeaderName, named: &[String]) -> bool {
    let n = name.as_str();
    HOP_BY_HOP.contains(&n) || named.iter().any(|c| c == n)
}

/// The headers to send upstream for an agent's request.
pub fn upstream_request(incoming: &HeaderMap) -> HeaderMap {
    let named = named_by_connection(incoming);
    let mut out = HeaderMap::with_capacity(incoming.len());
    for (name, value) in incoming {
        let n = name.as_str();
        if hop_by_hop(name, &named)
            || n == "host"
            || n == "content-length"
            || n == "accept-encoding"
            || n.starts_with("x-parallax-")
        {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out.insert(ACCEPT_ENCODING, HeaderValue::from_static("identity"));
    // With telemetry on, the call runs within its proxy span: the upstream
    // joins the trace as that span's child.
    crate::telemetry::propagation::inject_current(&mut out);
    out
}

/// The upstream response's headers to pass back to the agent.
/// `rewritten`: the body is the proxy's (its length is set anew).
pub fn client_response(upstream: &HeaderMap, rewritten: bool) -> HeaderMap {
    let named = named_by_connection(upstream);
    let mut out = HeaderMap::with_capacity(upstream.len());
    for (name, value) in upstream {
        if hop_by_hop(name, &named) || (rewritten && name.as_str() == "content-length") {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwards_what_the_agent_sends_but_not_hop_by_hop_headers() {
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("x-api-key", "sk-1"),
            ("anthropic-version", "2023-06-01"),
            ("anthropic-beta", "a,b"),
            ("openai-organization", "org"),
            ("authorization", "Bearer t"),
            ("connection", "keep-alive, x-private"),
            ("x-private", "p"),
            ("keep-alive", "timeout=5"),
            ("host", "127.0.0.1:9920"),
            ("content-length", "12"),
            ("accept-encoding", "gzip, br"),
            ("te", "trailers"),
            ("x-parallax-token", "parallax-secret"),
            ("x-parallax-session", "s-1"),
        ] {
            h.append(HeaderName::from_static(k), HeaderValue::from_static(v));
        }
        let out = upstream_request(&h);
        for k in [
            "x-api-key",
            "anthropic-version",
            "anthropic-beta",
            "openai-organization",
            "authorization",
        ] {
            assert_eq!(out.get(k), h.get(k), "{k}");
        }
        for k in [
            "connection",
            "x-private",
            "keep-alive",
            "host",
            "content-length",
            "te",
        ] {
            assert!(out.get(k).is_none(), "{k} crossed");
        }
        assert_eq!(out.get("accept-encoding").unwrap(), "identity");
    }
}
