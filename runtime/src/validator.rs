//! Checks a regex cannot express, applied to each match of an atom: a
//! payment card number is only a card number if its Luhn digit is right,
//! an IBAN only if its mod-97 checksum is. Without them, PII rules would
//! fire on every long number (order ids, timestamps, hashes). The
//! typosquat checks read package names out of an install command or a
//! dependency-file entry and look them up among each ecosystem's most-used
//! names (`crate::typosquat`).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Validator {
    /// The Luhn (mod 10) check digit of payment card numbers; separators
    /// (space, dash) are ignored; 13 to 19 digits.
    Luhn,
    /// The ISO 13616 mod-97 checksum of an IBAN; spaces are ignored.
    Iban,
    /// An install command (the shell analysis's `argv`: `pip install …`,
    /// `npm i …`, `cargo add …`, `gem install …`) names a package that
    /// imitates a popular one of its ecosystem.
    #[serde(rename = "typosquat_command")]
    TyposquatCommand,
    /// A dependency-file entry (requirements.txt, pyproject.toml) whose
    /// first name imitates a popular PyPI project.
    #[serde(rename = "typosquat_pypi")]
    TyposquatPypi,
    /// A package.json dependency entry imitating a popular npm package.
    #[serde(rename = "typosquat_npm")]
    TyposquatNpm,
    /// A Cargo.toml dependency entry imitating a popular crate.
    #[serde(rename = "typosquat_crates")]
    TyposquatCrates,
}

impl Validator {
    pub fn check(self, text: &str) -> bool {
        match self {
            Validator::Luhn => luhn(text),
            Validator::Iban => iban(text),
            _ => self.typosquat(text).is_some(),
        }
    }

    /// For a typosquat check, the name found and the popular name it
    /// imitates.
    pub fn typosquat(self, text: &str) -> Option<(&str, &'static str)> {
        use crate::typosquat::{in_command, in_entry, Ecosystem};
        match self {
            Validator::Luhn | Validator::Iban => None,
            Validator::TyposquatCommand => in_command(text),
            Validator::TyposquatPypi => in_entry(Ecosystem::PyPi, text),
            Validator::TyposquatNpm => in_entry(Ecosystem::Npm, text),
            Validator::TyposquatCrates => in_entry(Ecosystem::Crates, text),
        }
    }

    /// What a finding should say about a match beyond its text: for a
    /// typosquat, the package it imitates.
    pub fn explain(self, text: &str) -> Option<String> {
        self.typosquat(text)
            .map(|(name, popular)| format!("`{name}` imitates the popular package `{popular}`"))
    }
}

fn luhn(text: &str) -> bool {
    let mut sum = 0u32;
    let mut count = 0usize;
    for c in text.chars().rev() {
        let Some(d) = c.to_digit(10) else {
            if c == ' ' || c == '-' {
                continue;
            }
            return false;
        };
        let d = if !count.is_multiple_of(2) {
            let x = d * 2;
            if x > 9 {
                x - 9
            } else {
                x
            }
        } else {
            d
        };
        sum += d;
        count += 1;
    }
    (13..=19).contains(&count) && sum.is_multiple_of(10)
}

fn iban(text: &str) -> bool {
    let compact: Vec<u8> = text.bytes().filter(|b| *b != b' ').collect();
    if compact.len() < 15 || compact.len() > 34 || !compact.iter().all(u8::is_ascii_alphanumeric) {
        return false;
    }
    // Move the country code and check digits to the end, letters to numbers
    // (A = 10 … Z = 35), and take the remainder mod 97 digit by digit.
    let (head, tail) = compact.split_at(4);
    let mut rem = 0u32;
    for b in tail.iter().chain(head) {
        let v = match b {
            b'0'..=b'9' => u32::from(b - b'0'),
            b'A'..=b'Z' => u32::from(b - b'A') + 10,
            b'a'..=b'z' => u32::from(b - b'a') + 10,
            _ => return false,
        };
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    rem == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn luhn_accepts_real_card_numbers_only() {
        assert!(Validator::Luhn.check("4111 1111 1111 1111"));
        assert!(Validator::Luhn.check("5500-0000-0000-0004"));
        assert!(Validator::Luhn.check("378282246310005"));
        assert!(!Validator::Luhn.check("4111 1111 1111 1112"));
        assert!(!Validator::Luhn.check("1234567812345678"));
        assert!(!Validator::Luhn.check("0000"), "too short");
    }

    #[test]
    fn iban_checksum() {
        assert!(Validator::Iban.check("GB82 WEST 1234 5698 7654 32"));
        assert!(Validator::Iban.check("DE89370400440532013000"));
        assert!(!Validator::Iban.check("DE89370400440532013001"));
        assert!(!Validator::Iban.check("GB82"));
    }
}
