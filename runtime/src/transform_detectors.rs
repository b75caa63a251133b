//! The detectors `redact_pii` and `redact_secrets` carry themselves.
//!
//! A transform must do what its name says with nothing else loaded: a
//! parlok policy file on its own (no rules tree beside it) still redacts a
//! social security number in a Slack message. So each of the two
//! transforms has a fixed set of patterns compiled into it, applied after
//! the program's own redaction rules of the transform's categories (which
//! an organisation may extend). The formats are public facts: the issuers'
//! documented token prefixes and lengths, the card networks' Luhn check
//! digit, the IBAN mod-97 checksum, the SSA's rules for which SSNs are
//! never issued.
//!
//! Patterns with a group named `secret…` rewrite only that group, so the
//! keyword that gives the context (`Bearer`, `password=`) stays readable.

use crate::redact::redact_text;
use crate::validator::Validator;
use regex_automata::meta;
use std::sync::OnceLock;

/// One built-in detector: its pattern and the check a match must pass.
struct Detector {
    /// What it finds, for the docs and test names.
    #[allow(dead_code)]
    name: &'static str,
    pattern: &'static str,
    validator: Option<Validator>,
    /// A byte every match holds, or stands for in a normalised view.
    needs: Needs,
}

/// What a text must hold for a detector to be worth running: a redaction
/// also reads normalised views of the text (full-width digits, confusables),
/// so any non-ASCII byte counts as possibly holding it.
#[derive(Clone, Copy)]
enum Needs {
    Anything,
    Digit,
    At,
}

impl Needs {
    fn met_by(self, text: &str) -> bool {
        let bytes = text.as_bytes();
        match self {
            Needs::Anything => true,
            Needs::Digit => bytes.iter().any(|b| b.is_ascii_digit() || !b.is_ascii()),
            Needs::At => bytes.iter().any(|&b| b == b'@' || !b.is_ascii()),
        }
    }
}

const PII: &[Detector] = &[
    Detector {
        name: "e-mail address",
        pattern: r"(?i)\b[a-z0-9][a-z0-9._%+-]*@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*\.[a-z]{2,24}\b",
        validator: None,
        needs: Needs::At,
    },
    // Area 000, 666 and 900-999, group 00 and serial 0000 are never issued.
    Detector {
        name: "US social security number",
        pattern: r"\b(?:00[1-9]|0[1-9][0-9]|[1-578][0-9]{2}|6[0-57-9][0-9]|66[0-57-9])[- ](?:0[1-9]|[1-9][0-9])[- ](?:000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})\b",
        validator: None,
        needs: Needs::Digit,
    },
    Detector {
        name: "payment card number",
        pattern: r"\b[0-9](?:[ -]?[0-9]){12,18}\b",
        validator: Some(Validator::Luhn),
        needs: Needs::Digit,
    },
    Detector {
        name: "IBAN",
        pattern: r"\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}\b",
        validator: Some(Validator::Iban),
        needs: Needs::Digit,
    },
    // A number written as a phone number: separators between the groups,
    // an optional country code; bare digit runs (ids, amounts) are left.
    Detector {
        name: "phone number",
        pattern: r"(?:\+[1-9][0-9]{0,2}[ .-]?)?(?:\([0-9]{2,4}\)[ .-]?|\b[0-9]{2,4}[ .-])[0-9]{3,4}[ .-][0-9]{3,4}\b",
        validator: None,
        needs: Needs::Digit,
    },
];

const SECRETS: &[Detector] = &[
    Detector {
        name: "AWS access key id",
        pattern: r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b",
        validator: None,
        needs: Needs::Anything,
    },
    Detector {
        name: "AWS secret access key (after its name)",
        pattern: r#"(?i)aws[a-z0-9_ .-]{0,20}(?:secret|key)[a-z0-9_ .-]{0,20}['"]?\s*[:=]\s*['"]?(?P<secret>[A-Za-z0-9/+]{40})\b"#,
        validator: None,
        needs: Needs::Anything,
    },
    Detector {
        name: "GitHub token",
        pattern: r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b",
        validator: None,
        needs: Needs::Anything,
    },
    Detector {
        name: "GitLab token",
        pattern: r"\bgl(?:pat|dt|rt|ptt|oas)-[A-Za-z0-9_-]{20,}",
        validator: None,
        needs: Needs::Anything,
    },
    Detector {
        name: "Slack token",
        pattern: r"\bxox[abposre]-[A-Za-z0-9-]{10,}",
        validator: None,
        needs: Needs::Anything,
    },
    Detector {
        name: "Slack webhook URL",
        pattern: r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+",
        validator: None,
        needs: Needs::Anything,
    },
    Detector {
        name: "Bearer token",
        pattern: r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)",
        validator: None,
        needs: Needs::Anything,
    },
    Detector {
        name: "JSON Web Token",
        pattern: r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}",
        validator: None,
        needs: Needs::Anything,
    },
    Detector {
        name: "private key block",
        pattern: r"-----BEGIN [A-Z ]{0,30}PRIVATE KEY-----(?:[\s\S]*?-----END [A-Z ]{0,30}PRIVATE KEY-----|[A-Za-z0-9+/=\r\n]*)",
        validator: None,
        needs: Needs::Anything,
    },
    Detector {
        name: "OpenAI or Anthropic API key",
        pattern: r"\bsk-(?:ant-|proj-|svcacct-)?[A-Za-z0-9_-]{20,}",
        validator: None,
        needs: Needs::Anything,
    },
    Detector {
        name: "Stripe secret or restricted key",
        pattern: r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
        validator: None,
        needs: Needs::Anything,
    },
    Detector {
        name: "Google API key",
        pattern: r"\bAIza[0-9A-Za-z_-]{35}",
        validator: None,
        needs: Needs::Anything,
    },
    Detector {
        name: "npm or PyPI token",
        pattern: r"\b(?:npm_[A-Za-z0-9]{36}|pypi-[A-Za-z0-9_-]{50,})",
        validator: None,
        needs: Needs::Anything,
    },
    // A value given to a credential's name: only the value is rewritten.
    Detector {
        name: "credential assignment",
        pattern: r#"(?i)\b(?:password|passwd|pwd|passphrase|secret|api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret)['"]?\s*[:=]\s*['"]?(?P<secret>[^\s'",;]{6,})"#,
        validator: None,
        needs: Needs::Anything,
    },
];

type Compiled = Vec<(meta::Regex, Option<Validator>, Needs)>;

fn compile(set: &[Detector]) -> Compiled {
    set.iter()
        .filter_map(|d| {
            meta::Regex::new(d.pattern)
                .ok()
                .map(|re| (re, d.validator, d.needs))
        })
        .collect()
}

fn pii() -> &'static Compiled {
    static PII_SET: OnceLock<Compiled> = OnceLock::new();
    PII_SET.get_or_init(|| compile(PII))
}

fn secrets() -> &'static Compiled {
    static SECRET_SET: OnceLock<Compiled> = OnceLock::new();
    SECRET_SET.get_or_init(|| compile(SECRETS))
}

/// Rewrites every PII span the built-in detectors find in `text`; true
/// when something changed.
pub fn redact_builtin_pii(text: &mut String) -> bool {
    run(pii(), text)
}

/// Rewrites every credential the built-in detectors find in `text`; true
/// when something changed.
pub fn redact_builtin_secrets(text: &mut String) -> bool {
    run(secrets(), text)
}

fn run(set: &Compiled, text: &mut String) -> bool {
    let mut changed = false;
    for (re, validator, needs) in set {
        if needs.met_by(text) {
            changed |= redact_text(re, *validator, text);
        }
    }
    changed
}

/// How many patterns each set holds and whether all compiled (a test
/// checks they all do: a pattern that does not compile would silently
/// detect nothing).
pub fn builtin_counts() -> [(usize, usize); 2] {
    [(PII.len(), pii().len()), (SECRETS.len(), secrets().len())]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pii_of(s: &str) -> String {
        let mut s = s.to_string();
        redact_builtin_pii(&mut s);
        s
    }

    fn secrets_of(s: &str) -> String {
        let mut s = s.to_string();
        redact_builtin_secrets(&mut s);
        s
    }

    #[test]
    fn every_pattern_compiles() {
        for (declared, compiled) in builtin_counts() {
            assert_eq!(declared, compiled);
        }
    }

    #[test]
    fn pii_is_found_and_checked() {
        let cases = [
            ("SSN 123-45-6789 on file", "SSN [REDACTED] on file"),
            ("card 4111 1111 1111 1111.", "card [REDACTED]."),
            ("mail ana.lee+x@corp.example.com now", "mail [REDACTED] now"),
            ("call +1 415-555-0134 today", "call [REDACTED] today"),
            ("call (415) 555-0134", "call [REDACTED]"),
            ("IBAN GB82 WEST 1234 5698 7654 32", "IBAN [REDACTED]"),
        ];
        for (input, want) in cases {
            assert_eq!(pii_of(input), want, "{input}");
        }
        // Look-alikes that are not PII stay.
        for benign in [
            "order 4111111111111112 shipped",   // Luhn fails
            "area 000-12-3456 is never issued", // SSN area 000
            "build 2024-12-04 at 10:15",
            "version 1.22.333 released",
            "ticket 123456789 closed",
        ] {
            assert_eq!(pii_of(benign), benign, "{benign}");
        }
    }

    #[test]
    fn secrets_are_found_and_only_the_value_rewritten() {
        let cases = [
            ("key AKIAIOSFODNN7EXAMPLE here", "key [REDACTED] here"),
            (
                "use ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 please",
                "use [REDACTED] please",
            ),
            ("slack xoxb-1234567890-abcdefghij", "slack [REDACTED]"),
            (
                "Authorization: Bearer abcdef0123456789abcdef",
                "Authorization: Bearer [REDACTED]",
            ),
            (
                "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.c2lnbmF0dXJlX2hlcmU ok",
                "jwt [REDACTED] ok",
            ),
            ("password = hunter2hunter", "password = [REDACTED]"),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY----- done",
                "[REDACTED] done",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(secrets_of(input), want, "{input}");
        }
        for benign in [
            "the password field is required",
            "set token: ${TOKEN}",
            "see the Bearer scheme in RFC 6750",
        ] {
            assert_eq!(secrets_of(benign), benign, "{benign}");
        }
    }
}
