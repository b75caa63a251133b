//! Bearer-token access control.
//!
//! The token is compared in constant time (`subtle`), so response timing
//! says nothing about how much of a guess was right.

use hyper::header::{HeaderMap, AUTHORIZATION};
use subtle::ConstantTimeEq;

/// The environment variable that overrides `server.auth_token`.
pub const TOKEN_ENV: &str = "PARALLAX_AUTH_TOKEN";

/// The header that carries the token on proxy paths, where `Authorization`
/// belongs to the agent's model API key. It is never forwarded upstream.
pub const PROXY_TOKEN_HEADER: &str = "x-parallax-token";

/// Whether a proxied request carries `X-Parallax-Token: <token>`.
pub fn proxy_authorized(headers: &HeaderMap, token: &str) -> bool {
    headers
        .get(PROXY_TOKEN_HEADER)
        .is_some_and(|v| v.as_bytes().trim_ascii().ct_eq(token.as_bytes()).into())
}

/// Whether `headers` carry `X-Api-Key: <token>`: how LiteLLM's generic
/// guardrail sends its configured `api_key`.
pub fn api_key_authorized(headers: &HeaderMap, token: &str) -> bool {
    headers
        .get("x-api-key")
        .is_some_and(|v| v.as_bytes().trim_ascii().ct_eq(token.as_bytes()).into())
}

/// Whether `headers` carry `Authorization: Bearer <token>`.
pub fn authorized(headers: &HeaderMap, token: &str) -> bool {
    let Some(value) = headers.get(AUTHORIZATION) else {
        return false;
    };
    let value = value.as_bytes();
    let Some(scheme_end) = value.iter().position(|b| *b == b' ') else {
        return false;
    };
    let (scheme, rest) = value.split_at(scheme_end);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return false;
    }
    let given = rest.trim_ascii();
    // Length is not secret (tokens have a fixed format); content is.
    given.ct_eq(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    #[test]
    fn accepts_only_the_exact_bearer_token() {
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(AUTHORIZATION, HeaderValue::from_str(v).unwrap());
            authorized(&h, "s3cret")
        };
        assert!(with("Bearer s3cret"));
        assert!(with("bearer  s3cret "));
        assert!(!with("Bearer s3cre"));
        assert!(!with("Bearer s3cret2"));
        assert!(!with("Basic s3cret"));
        assert!(!with("s3cret"));
        assert!(!authorized(&HeaderMap::new(), "s3cret"));
    }
}
