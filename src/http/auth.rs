//! Bearer-token access control.
//!
//! The token is compared in constant time (`subtle`), so response timing
//! says nothing about how much of a guess was right.

use crate::settings::TenantAuth;
use hyper::header::{HeaderMap, AUTHORIZATION};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use subtle::ConstantTimeEq;

/// Who a request authenticated as, kept in its extensions by the router
/// for the front doors that build its origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// `server.auth_token` (or no authentication configured).
    Operator,
    /// A tenant's token (`tenants:`).
    Tenant(String),
}

impl Caller {
    /// The tenant an origin carries.
    pub fn tenant(&self) -> Option<String> {
        match self {
            Caller::Operator => None,
            Caller::Tenant(t) => Some(t.clone()),
        }
    }
}

/// The tenant of a request, as the router recorded it (`None`: the
/// operator, or a request the router never saw, as in tests).
pub fn tenant_of<B>(req: &hyper::Request<B>) -> Option<String> {
    req.extensions().get::<Caller>().and_then(Caller::tenant)
}

/// The bearer token of `Authorization: Bearer <token>`.
pub fn bearer(headers: &HeaderMap) -> Option<&[u8]> {
    let value = headers.get(AUTHORIZATION)?.as_bytes();
    let scheme_end = value.iter().position(|b| *b == b' ')?;
    let (scheme, rest) = value.split_at(scheme_end);
    scheme
        .eq_ignore_ascii_case(b"bearer")
        .then(|| rest.trim_ascii())
}

/// The token in header `name` (`X-Parallax-Token`, `X-Api-Key`).
pub fn header_token<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h [u8]> {
    headers.get(name).map(|v| v.as_bytes().trim_ascii())
}

/// The tenant whose `token_sha256` lists the SHA-256 of `token`. Every
/// tenant's every hash is compared, in constant time, so timing says
/// neither which tenant nor how close a guess was.
pub fn tenant_for(token: &[u8], tenants: &BTreeMap<String, TenantAuth>) -> Option<String> {
    if tenants.is_empty() || token.is_empty() {
        return None;
    }
    let digest = Sha256::digest(token);
    let mut hex = [0u8; 64];
    for (i, b) in digest.iter().enumerate() {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        hex[2 * i] = DIGITS[usize::from(b >> 4)];
        hex[2 * i + 1] = DIGITS[usize::from(b & 0xf)];
    }
    let mut found = None;
    for (name, t) in tenants {
        for h in &t.token_sha256 {
            let lower = h.to_ascii_lowercase();
            if bool::from(lower.as_bytes().ct_eq(&hex)) && found.is_none() {
                found = Some(name.clone());
            }
        }
    }
    found
}

/// The environment variable that overrides `server.auth_token`.
pub const TOKEN_ENV: &str = "PARALLAX_AUTH_TOKEN";

/// The header that carries the token on proxy paths, where `Authorization`
/// belongs to the agent's model API key. It is never forwarded upstream.
pub const PROXY_TOKEN_HEADER: &str = "x-parallax-token";

/// Whether a proxied request carries `X-Parallax-Token: <token>`.
pub fn proxy_authorized(headers: &HeaderMap, token: &str) -> bool {
    header_token(headers, PROXY_TOKEN_HEADER).is_some_and(|t| t.ct_eq(token.as_bytes()).into())
}

/// Whether `headers` carry `Authorization: Bearer <token>`.
pub fn authorized(headers: &HeaderMap, token: &str) -> bool {
    // Length is not secret (tokens have a fixed format); content is.
    bearer(headers).is_some_and(|given| given.ct_eq(token.as_bytes()).into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    #[test]
    fn a_tenant_is_named_by_the_hash_of_its_token() {
        let mut tenants = BTreeMap::new();
        tenants.insert(
            "payments".to_string(),
            TenantAuth {
                // sha256("pay-token")
                token_sha256: vec![
                    "1C5F5D2F0D4A9FBB4B0A2F1D8E5C33D7E23C0F7A9F2A7B7A4A3B1D9C8E7F6A5B".into(),
                    format!("{:x}", Sha256::digest(b"pay-token")),
                ],
            },
        );
        assert_eq!(
            tenant_for(b"pay-token", &tenants).as_deref(),
            Some("payments")
        );
        assert_eq!(tenant_for(b"pay-token2", &tenants), None);
        assert_eq!(tenant_for(b"", &tenants), None);
        assert_eq!(tenant_for(b"pay-token", &BTreeMap::new()), None);
    }

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
