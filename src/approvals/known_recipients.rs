//! The known-recipients memory behind the `first_time_recipient` trigger:
//! who a user (else a session) has already sent to, per adapter.
//!
//! A call that goes ahead (allowed, detected or rewritten; approved, for a
//! held one) adds its recipients; the next call to one of them is no
//! longer a first time. The memory lives in the approvals database (a
//! file by default), so a restart does not make every recipient new
//! again. It holds SHA-256 keys of `scope, adapter, recipient`, never the
//! addresses themselves: reading the file does not list who was written
//! to (a guessed address can still be checked against it — a hash of a
//! low-entropy value hides it from a reader, not from a guesser).
//!
//! The scope is the event's `user_id`, else its `session_id`, else one
//! scope for every call without either.

use parallax_runtime::triggers;
use parallax_runtime::PreparedEvent;
use sha2::{Digest, Sha256};

/// The scope a call's recipients are remembered in.
fn scope(event: &PreparedEvent) -> String {
    match (&event.event.user_id, &event.event.session_id) {
        (Some(u), _) if !u.is_empty() => format!("user:{u}"),
        (_, Some(s)) if !s.is_empty() => format!("session:{s}"),
        _ => "anyone".to_string(),
    }
}

/// The key of one recipient of `event`.
pub fn key(event: &PreparedEvent, recipient: &str) -> String {
    let mut h = Sha256::new();
    for part in [
        "parallax known recipient v1",
        &scope(event),
        triggers::adapter(event).unwrap_or(""),
        &triggers::recipient_key(recipient),
    ] {
        h.update(part.as_bytes());
        h.update([0u8]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The call's recipients with their keys.
pub fn of(event: &PreparedEvent) -> Vec<(String, String)> {
    triggers::recipients(event)
        .into_iter()
        .map(|r| {
            let k = key(event, &r);
            (triggers::recipient_key(&r), k)
        })
        .collect()
}
