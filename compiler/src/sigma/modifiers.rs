//! Sigma value modifiers (`Field|contains|all`): parsed and checked once
//! per field key.
//!
//! The spec applies modifiers left to right. Here they fall into three
//! groups: at most one *match kind* (`contains`, `re`, `cidr`, `gt`, …),
//! *transformations* of the value applied in the order written (`base64`,
//! `wide`, `windash`, …), and *flags* (`all`, `cased`, `expand`, `re`'s
//! `i`/`m`/`s`). Any combination whose meaning the spec does not define is
//! an error naming the modifier, rather than a guess.

use parallax_runtime::{NumCmp, TextMode};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The whole value (the default).
    Equals,
    Contains,
    StartsWith,
    EndsWith,
    Re {
        i: bool,
        m: bool,
        s: bool,
    },
    Cidr,
    Exists,
    Cmp(NumCmp),
    FieldRef(TextMode),
}

/// A transformation of the value, applied in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transform {
    Base64,
    Base64Offset,
    Utf16Le,
    Utf16Be,
    /// UTF-16 little-endian with a byte-order mark.
    Utf16,
    /// Dashes and slashes that start a command-line option match every
    /// Windows dash variant.
    Windash,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mods {
    pub kind: Kind,
    pub transforms: Vec<Transform>,
    pub all: bool,
    pub cased: bool,
    pub expand: bool,
}

impl Mods {
    /// True for kinds that look at text found in the field (so through
    /// atoms), rather than a check.
    pub fn is_text(&self) -> bool {
        matches!(
            self.kind,
            Kind::Equals | Kind::Contains | Kind::StartsWith | Kind::EndsWith | Kind::Re { .. }
        )
    }
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Equals => "equals",
        Kind::Contains => "contains",
        Kind::StartsWith => "startswith",
        Kind::EndsWith => "endswith",
        Kind::Re { .. } => "re",
        Kind::Cidr => "cidr",
        Kind::Exists => "exists",
        Kind::Cmp(NumCmp::Gt) => "gt",
        Kind::Cmp(NumCmp::Gte) => "gte",
        Kind::Cmp(NumCmp::Lt) => "lt",
        Kind::Cmp(NumCmp::Lte) => "lte",
        Kind::Cmp(NumCmp::Eq) => "eq",
        Kind::FieldRef(_) => "fieldref",
    }
}

/// Parses the modifiers after a field name (`["contains", "all"]`).
pub fn parse(names: &[&str]) -> Result<Mods, String> {
    let mut m = Mods {
        kind: Kind::Equals,
        transforms: Vec::new(),
        all: false,
        cased: false,
        expand: false,
    };
    let mut seen: Vec<&str> = Vec::new();
    for &name in names {
        if seen.contains(&name) {
            return Err(format!("modifier `{name}` is given twice"));
        }
        seen.push(name);
        let conflict = |k: Kind| {
            Err(format!(
                "modifier `{name}` cannot be combined with `{}`",
                kind_name(k)
            ))
        };
        match name {
            "contains" | "startswith" | "endswith" => {
                let mode = match name {
                    "contains" => TextMode::Contains,
                    "startswith" => TextMode::StartsWith,
                    _ => TextMode::EndsWith,
                };
                m.kind = match m.kind {
                    Kind::Equals => match mode {
                        TextMode::Contains => Kind::Contains,
                        TextMode::StartsWith => Kind::StartsWith,
                        _ => Kind::EndsWith,
                    },
                    Kind::FieldRef(TextMode::Equals) => Kind::FieldRef(mode),
                    k => return conflict(k),
                }
            }
            "re" | "cidr" | "exists" | "gt" | "gte" | "lt" | "lte" => {
                if m.kind != Kind::Equals {
                    return conflict(m.kind);
                }
                m.kind = match name {
                    "re" => Kind::Re {
                        i: false,
                        m: false,
                        s: false,
                    },
                    "cidr" => Kind::Cidr,
                    "exists" => Kind::Exists,
                    "gt" => Kind::Cmp(NumCmp::Gt),
                    "gte" => Kind::Cmp(NumCmp::Gte),
                    "lt" => Kind::Cmp(NumCmp::Lt),
                    _ => Kind::Cmp(NumCmp::Lte),
                };
            }
            "fieldref" => {
                m.kind = match m.kind {
                    Kind::Equals => Kind::FieldRef(TextMode::Equals),
                    Kind::Contains => Kind::FieldRef(TextMode::Contains),
                    Kind::StartsWith => Kind::FieldRef(TextMode::StartsWith),
                    Kind::EndsWith => Kind::FieldRef(TextMode::EndsWith),
                    k => return conflict(k),
                }
            }
            "i" | "m" | "s" => match &mut m.kind {
                Kind::Re { i, m: ml, s } => match name {
                    "i" => *i = true,
                    "m" => *ml = true,
                    _ => *s = true,
                },
                _ => {
                    return Err(format!(
                        "modifier `{name}` is a sub-modifier of `re` and must follow it"
                    ))
                }
            },
            "all" => m.all = true,
            "cased" => m.cased = true,
            "expand" => m.expand = true,
            "base64" => m.transforms.push(Transform::Base64),
            "base64offset" => m.transforms.push(Transform::Base64Offset),
            "utf16le" | "wide" => {
                if seen.contains(&"utf16le") && seen.contains(&"wide") {
                    return Err(format!("modifier `{name}` repeats `wide`/`utf16le`"));
                }
                m.transforms.push(Transform::Utf16Le)
            }
            "utf16be" => m.transforms.push(Transform::Utf16Be),
            "utf16" => m.transforms.push(Transform::Utf16),
            "windash" => m.transforms.push(Transform::Windash),
            "minute" | "hour" | "day" | "week" | "month" | "year" => {
                return Err(format!(
                    "modifier `{name}` (a time-part modifier) is not supported: events carry no \
                     typed timestamps to take it from"
                ))
            }
            "" => return Err("empty modifier (`||` in the field key)".into()),
            other => {
                return Err(format!(
                "unknown modifier `{other}` (known: contains, startswith, endswith, all, re, i, \
                     m, s, base64, base64offset, utf16le, utf16be, utf16, wide, windash, cased, \
                     exists, gt, gte, lt, lte, cidr, fieldref, expand)"
            ))
            }
        }
    }
    validate(&m)?;
    Ok(m)
}

fn validate(m: &Mods) -> Result<(), String> {
    let kind = kind_name(m.kind);
    let plain_value = matches!(
        m.kind,
        Kind::Re { .. } | Kind::Cidr | Kind::Exists | Kind::Cmp(_) | Kind::FieldRef(_)
    );
    if plain_value && !m.transforms.is_empty() {
        let t = transform_name(m.transforms[0]);
        return Err(format!("modifier `{t}` cannot be combined with `{kind}`"));
    }
    if m.cased
        && !matches!(
            m.kind,
            Kind::Equals | Kind::Contains | Kind::StartsWith | Kind::EndsWith | Kind::FieldRef(_)
        )
    {
        return Err(format!(
            "modifier `cased` cannot be combined with `{kind}`{}",
            if matches!(m.kind, Kind::Re { .. }) {
                " (a regex is case-sensitive already; `re|i` makes it insensitive)"
            } else {
                ""
            }
        ));
    }
    if m.expand && matches!(m.kind, Kind::Exists | Kind::Cmp(_)) {
        return Err(format!(
            "modifier `expand` cannot be combined with `{kind}`"
        ));
    }
    if m.all && m.kind == Kind::Exists {
        return Err("modifier `all` cannot be combined with `exists`".into());
    }
    if let Some(p) = m.transforms.iter().position(|t| *t == Transform::Windash) {
        if let Some(t) = m.transforms[p + 1..].first() {
            return Err(format!(
                "modifier `{}` cannot follow `windash` (windash makes a set of variants, which \
                 cannot be encoded as one value)",
                transform_name(*t)
            ));
        }
    }
    Ok(())
}

pub fn transform_name(t: Transform) -> &'static str {
    match t {
        Transform::Base64 => "base64",
        Transform::Base64Offset => "base64offset",
        Transform::Utf16Le => "utf16le",
        Transform::Utf16Be => "utf16be",
        Transform::Utf16 => "utf16",
        Transform::Windash => "windash",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Mods, String> {
        let v: Vec<&str> = if s.is_empty() {
            Vec::new()
        } else {
            s.split('|').collect()
        };
        parse(&v)
    }

    #[test]
    fn kinds_and_flags() {
        assert_eq!(p("").unwrap().kind, Kind::Equals);
        assert_eq!(p("contains|all").unwrap().kind, Kind::Contains);
        assert!(p("contains|all").unwrap().all);
        assert_eq!(
            p("re|i|s").unwrap().kind,
            Kind::Re {
                i: true,
                m: false,
                s: true
            }
        );
        assert_eq!(
            p("fieldref|endswith").unwrap().kind,
            Kind::FieldRef(TextMode::EndsWith)
        );
        assert_eq!(p("gte").unwrap().kind, Kind::Cmp(NumCmp::Gte));
        assert_eq!(
            p("wide|base64offset|contains").unwrap().transforms,
            vec![Transform::Utf16Le, Transform::Base64Offset]
        );
        assert!(p("startswith|cased").unwrap().cased);
    }

    #[test]
    fn invalid_combinations_name_the_modifier() {
        for (chain, bad) in [
            ("contains|startswith", "startswith"),
            ("re|contains", "contains"),
            ("i", "`i`"),
            ("re|cased", "cased"),
            ("cidr|base64", "base64"),
            ("exists|all", "all"),
            ("gt|lt", "lt"),
            ("windash|base64", "base64"),
            ("contains|contains", "twice"),
            ("foo", "unknown modifier `foo`"),
            ("hour", "hour"),
        ] {
            let e = p(chain).unwrap_err();
            assert!(e.contains(bad), "{chain}: {e}");
        }
    }
}
