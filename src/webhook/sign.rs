//! Webhook signatures.
//!
//! The signed message is `<timestamp>.<body>` (the decimal Unix time of the
//! `X-Parallax-Timestamp` header, a dot, then the exact body bytes), with
//! HMAC-SHA256 keyed by `reporting.webhook_secret`. A receiver recomputes it
//! over the raw body, compares in constant time, and rejects timestamps
//! older than its tolerance (say five minutes), so a captured request cannot
//! be replayed later.

use hmac::{Hmac, Mac};
use sha2::Sha256;

pub const SIGNATURE_HEADER: &str = "x-parallax-signature";
pub const TIMESTAMP_HEADER: &str = "x-parallax-timestamp";

/// `sha256=<lowercase hex>` over `<timestamp>.<body>`.
pub fn signature(secret: &[u8], timestamp: u64, body: &[u8]) -> String {
    // HMAC accepts keys of any length; `new_from_slice` cannot fail for it.
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret) {
        Ok(m) => m,
        Err(_) => unreachable_key(),
    };
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let tag = mac.finalize().into_bytes();
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256=");
    for b in tag {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

#[cold]
fn unreachable_key() -> ! {
    // InvalidLength is only returned by MACs with fixed key sizes.
    panic!("HMAC-SHA256 rejected a key, which its specification rules out")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_a_known_hmac_sha256_vector() {
        // RFC 4231 test case 2 pins the primitive ...
        let mut mac = Hmac::<Sha256>::new_from_slice(b"Jefe").unwrap();
        mac.update(b"what do ya want for nothing?");
        let hex: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // ... and the signed message is `<ts>.<body>`.
        let s = signature(b"Jefe", 12, b"body");
        let mut mac = Hmac::<Sha256>::new_from_slice(b"Jefe").unwrap();
        mac.update(b"12.body");
        let want: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(s, format!("sha256={want}"));
    }
}
