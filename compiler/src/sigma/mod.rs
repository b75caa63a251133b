//! Sigma rules (`rules/sigma/**/*.yaml`) lowered into the shared IR.
//!
//! Text conditions (`equals`, `contains`, `startswith`, `endswith`, `re`,
//! wildcards, keywords) become atoms of the field's automata, shared with
//! every other rule; conditions that are not text (`exists`, `null`, `gt`…,
//! `cidr`, `fieldref`, numbers, booleans) become [`Check`]s. The condition
//! is parsed by [`condition`] and folded into one [`Predicate`].

pub mod condition;
pub mod lint;
pub mod mapping;
pub mod modifiers;
pub mod value;

use crate::ir::{AtomKind, AtomTable};
use crate::regex_check::check_regex;
use crate::source::{Common, RuleMode, RuleTests};
use crate::yaml;
use condition::Cond;
use mapping::SigmaContext;
use modifiers::{Kind, Mods};
use parallax_runtime::{
    Action, Canonical, Check, CheckOp, FieldRef, NumCmp, Predicate, Priority, Stage,
};
use serde::Deserialize;
use serde_yaml::Value;
use std::collections::BTreeMap;
use value::{Matcher, Position};

pub use mapping::SigmaConfig;

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Informational,
    Low,
    Medium,
    High,
    Critical,
}

impl Level {
    fn priority(self) -> Priority {
        match self {
            Level::Informational | Level::Low => Priority::Low,
            Level::Medium => Priority::Medium,
            Level::High => Priority::High,
            Level::Critical => Priority::Critical,
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Stable,
    Test,
    Experimental,
    Deprecated,
    Unsupported,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Logsource {
    pub category: Option<String>,
    pub product: Option<String>,
    pub service: Option<String>,
    pub definition: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RelationType {
    Derived,
    Obsolete,
    Merged,
    Renamed,
    Similar,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Related {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: RelationType,
}

/// A Sigma rule as the specification (v2) defines it, plus the keys
/// SigmaHQ adds (`regression_tests_path`, `simulation`) and Parallax's
/// `action`, `priority`, `category` and `tests`. Any other key is an error.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SigmaRule {
    pub title: String,
    pub id: Option<String>,
    pub name: Option<String>,
    pub status: Option<Status>,
    pub description: Option<String>,
    pub license: Option<String>,
    pub author: Option<String>,
    pub references: Option<Vec<String>>,
    pub date: Option<Value>,
    pub modified: Option<Value>,
    pub tags: Option<Vec<String>>,
    pub related: Option<Vec<Related>>,
    pub taxonomy: Option<String>,
    pub scope: Option<Vec<String>>,
    pub logsource: Logsource,
    pub detection: serde_yaml::Mapping,
    pub falsepositives: Option<Value>,
    pub level: Option<Level>,
    pub fields: Option<Vec<String>>,
    pub regression_tests_path: Option<String>,
    pub simulation: Option<Value>,
    /// Parallax: what a match does (default `detect`).
    pub action: Option<Action>,
    /// Parallax: triage priority (default from `level`).
    pub priority: Option<Priority>,
    /// Parallax: threat category (default: the file header's, else one
    /// read off the ATT&CK tactic tags).
    pub category: Option<String>,
    /// Parallax: the rule's own cases, as in every engine.
    #[serde(default)]
    pub tests: RuleTests,
    /// Parallax: `monitor` reports without enforcing (default: the
    /// evaluator's mode).
    pub mode: Option<RuleMode>,
    /// Parallax extension: approval terms of an `action: approve` rule.
    pub approval: Option<parallax_runtime::ApprovalSpec>,
    /// Parallax: no tenant may weaken it (`tenants:`).
    #[serde(default)]
    pub locked: bool,
}

/// A Parallax category for a rule's ATT&CK tactic tags (`attack.<tactic>`),
/// so SigmaHQ rules used unchanged still land in a category; the first tag
/// with a counterpart wins.
fn category_from_tags(tags: &[String]) -> Option<&'static str> {
    tags.iter().find_map(|t| {
        Some(match t.strip_prefix("attack.")? {
            "credential-access" | "credential_access" => "secret_leakage",
            "exfiltration" | "collection" | "command-and-control" | "command_and_control" => {
                "data_exfiltration"
            }
            "privilege-escalation" | "privilege_escalation" => "privilege_escalation",
            "discovery" | "reconnaissance" => "reconnaissance",
            "execution" | "persistence" | "defense-evasion" | "defense_evasion" | "impact"
            | "lateral-movement" | "lateral_movement" => "dangerous_commands",
            "resource-development"
            | "resource_development"
            | "initial-access"
            | "initial_access" => "supply_chain",
            _ => return None,
        })
    })
}

/// Sigma's `falsepositives`: a list of strings, or one string.
fn false_positives(v: &Option<Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Sequence(items)) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

/// A lowered Sigma rule: the common parts, its predicate, its author.
pub struct Lowered {
    pub common: Common,
    pub predicate: Predicate,
    pub author: Option<String>,
    /// The category its ATT&CK tags suggest, for when neither the rule nor
    /// its file names one.
    pub tag_category: Option<&'static str>,
    /// Compiles, but look at it (unmapped fields, a rule that always fires).
    pub warnings: Vec<String>,
    /// Field names no mapping covers (for `lint --sigma`'s summary).
    pub unmapped: Vec<String>,
}

/// The YAML documents of a Sigma file (`---`-separated); empty ones skipped.
pub fn documents(text: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for de in serde_yaml::Deserializer::from_str(text) {
        let v = Value::deserialize(de).map_err(|e| e.to_string())?;
        if !v.is_null() {
            out.push(v);
        }
    }
    Ok(out)
}

/// Lowers one Sigma rule document.
pub fn lower(value: Value, ctx: &SigmaContext, table: &mut AtomTable) -> Result<Lowered, String> {
    if let Some(a @ ("global" | "reset" | "repeat")) = value.get("action").and_then(Value::as_str) {
        return Err(format!(
            "`action: {a}` is a Sigma v1 rule-collection directive, which Sigma v2 dropped and              Parallax does not support; write each rule in full (`action` here is Parallax's:              detect, redact or block)"
        ));
    }
    for kind in ["correlation", "filter"] {
        if value.get(kind).is_some() {
            return Err(format!("Sigma {kind} rules are not supported"));
        }
    }
    let rule: SigmaRule = yaml::from_value(value)?;
    if rule.title.trim().is_empty() {
        return Err("`title` must not be empty".into());
    }
    let stages = match (&rule.logsource.product, &rule.logsource.category) {
        (Some(p), Some(c)) if p == "agent" => Some(vec![c.parse::<Stage>().map_err(|e| {
            format!("logsource: product `agent` takes a stage as its category: {e}")
        })?]),
        _ => None,
    };
    let mut l = Lower {
        ctx,
        table,
        warnings: Vec::new(),
        unmapped: Vec::new(),
    };
    let predicate = l.detection(&rule.detection)?;
    let mut unmapped = l.unmapped;
    unmapped.sort();
    unmapped.dedup();
    let mut warnings = l.warnings;
    warnings.sort();
    warnings.dedup();
    if predicate == Predicate::Const(true) {
        warnings.push(
            "the condition holds for every event (only negated selections remain after \
             unmapped fields are dropped)"
                .into(),
        );
    }
    Ok(Lowered {
        common: Common {
            id: rule.id.clone().unwrap_or_else(|| rule.title.clone()),
            title: Some(rule.title.clone()),
            description: rule.description.clone().unwrap_or_default(),
            action: rule.action.unwrap_or(Action::Detect),
            priority: rule
                .priority
                .or(rule.level.map(Level::priority))
                .unwrap_or(Priority::Medium),
            reason: None,
            stages,
            category: rule.category.clone(),
            false_positives: false_positives(&rule.falsepositives),
            tests: rule.tests.clone(),
            mode: rule.mode,
            approval: rule.approval.clone(),
            transforms: Vec::new(),
            locked: rule.locked,
        },
        predicate,
        author: rule.author.clone(),
        tag_category: category_from_tags(rule.tags.as_deref().unwrap_or_default()),
        warnings,
        unmapped,
    })
}

// Predicate constructors that fold constants, so unmapped fields (constant
// false) disappear from the IR instead of reaching the generated code.

fn and(parts: Vec<Predicate>) -> Predicate {
    let mut out = Vec::new();
    for p in parts {
        match p {
            Predicate::Const(true) => {}
            Predicate::Const(false) => return Predicate::Const(false),
            Predicate::And(inner) => out.extend(inner),
            p => out.push(p),
        }
    }
    match out.len() {
        0 => Predicate::Const(true),
        1 => out.remove(0),
        _ => Predicate::And(out),
    }
}

fn or(parts: Vec<Predicate>) -> Predicate {
    let mut out = Vec::new();
    for p in parts {
        match p {
            Predicate::Const(false) => {}
            Predicate::Const(true) => return Predicate::Const(true),
            Predicate::Or(inner) => out.extend(inner),
            p => out.push(p),
        }
    }
    match out.len() {
        0 => Predicate::Const(false),
        1 => out.remove(0),
        _ => Predicate::Or(out),
    }
}

fn not(p: Predicate) -> Predicate {
    match p {
        Predicate::Const(b) => Predicate::Const(!b),
        Predicate::Not(q) => *q,
        p => Predicate::Not(Box::new(p)),
    }
}

struct Lower<'a> {
    ctx: &'a SigmaContext,
    table: &'a mut AtomTable,
    warnings: Vec<String>,
    unmapped: Vec<String>,
}

fn describe(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

/// A scalar as Sigma text (numbers and booleans by their YAML spelling).
fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

impl Lower<'_> {
    fn detection(&mut self, det: &serde_yaml::Mapping) -> Result<Predicate, String> {
        let mut names = Vec::new();
        let mut selections = BTreeMap::new();
        let mut conditions: Option<Vec<String>> = None;
        for (k, v) in det {
            let Some(k) = k.as_str() else {
                return Err(format!("detection: key {k:?} is not a string"));
            };
            match k {
                "condition" => {
                    conditions = Some(match v {
                        Value::String(s) => vec![s.clone()],
                        Value::Sequence(items) if !items.is_empty() => items
                            .iter()
                            .map(|i| {
                                i.as_str().map(str::to_string).ok_or_else(|| {
                                    "detection.condition: a list of conditions holds strings"
                                        .to_string()
                                })
                            })
                            .collect::<Result<_, _>>()?,
                        other => {
                            return Err(format!(
                                "detection.condition: expected a string or a list of strings, \
                                 got {}",
                                describe(other)
                            ))
                        }
                    })
                }
                "timeframe" => {
                    return Err(
                        "detection.timeframe belongs to correlation rules (Sigma v2), \
                                which are not supported"
                            .into(),
                    )
                }
                name => {
                    let p = self
                        .selection(v)
                        .map_err(|e| format!("detection.{name}: {e}"))?;
                    names.push(name.to_string());
                    selections.insert(name.to_string(), p);
                }
            }
        }
        let Some(conditions) = conditions else {
            return Err("detection: needs a `condition`".into());
        };
        let mut parts = Vec::new();
        for text in &conditions {
            let cond = condition::parse(text, &names)
                .map_err(|e| format!("detection.condition `{text}`: {e}"))?;
            parts.push(fold(&cond, &selections));
        }
        Ok(or(parts))
    }

    fn selection(&mut self, v: &Value) -> Result<Predicate, String> {
        match v {
            Value::Mapping(m) if m.is_empty() => Err("an empty selection".into()),
            Value::Mapping(m) => {
                let mut parts = Vec::new();
                for (k, val) in m {
                    let key = match k {
                        Value::String(s) => s.clone(),
                        other => scalar_text(other)
                            .ok_or_else(|| format!("field key {other:?} is not a string"))?,
                    };
                    parts.push(self.field(&key, val).map_err(|e| format!("`{key}`: {e}"))?);
                }
                Ok(and(parts))
            }
            Value::Sequence(items) if items.is_empty() => Err("an empty list".into()),
            Value::Sequence(items) if items.iter().all(Value::is_mapping) => {
                let parts = items
                    .iter()
                    .enumerate()
                    .map(|(i, m)| self.selection(m).map_err(|e| format!("[{i}]: {e}")))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(or(parts))
            }
            Value::Sequence(items) => {
                if let Some(bad) = items.iter().find(|i| scalar_text(i).is_none()) {
                    return Err(format!(
                        "a list is either keywords (strings) or maps of fields, not a mix; \
                         found {}",
                        describe(bad)
                    ));
                }
                self.keywords(items, &Mods::keyword())
            }
            Value::String(_) | Value::Number(_) => {
                self.keywords(std::slice::from_ref(v), &Mods::keyword())
            }
            other => Err(format!(
                "a selection is a map of fields, a list of maps, or keywords; got {}",
                describe(other)
            )),
        }
    }

    fn text_field() -> FieldRef {
        FieldRef::Canonical(Canonical::Text)
    }

    /// Keywords: searched for (as `contains`, unless a modifier says
    /// otherwise) in all the event's text.
    fn keywords(&mut self, values: &[Value], mods: &Mods) -> Result<Predicate, String> {
        let fields = [Self::text_field()];
        let parts = values
            .iter()
            .map(|v| {
                if v.is_null() {
                    return Err("a keyword cannot be null".to_string());
                }
                self.value(v, mods, &fields, true)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(if mods.all { and(parts) } else { or(parts) })
    }

    fn field(&mut self, key: &str, v: &Value) -> Result<Predicate, String> {
        let mut parts = key.split('|');
        let name = parts.next().unwrap_or_default();
        let mod_names: Vec<&str> = parts.collect();
        let mods = modifiers::parse(&mod_names)?;
        let values: Vec<&Value> = match v {
            Value::Sequence(items) if items.is_empty() => {
                return Err("an empty list of values".into())
            }
            Value::Sequence(items) => items.iter().collect(),
            Value::Mapping(_) => return Err("a field's value cannot be a mapping".into()),
            v => vec![v],
        };
        if name.is_empty() {
            if !mods.is_text() {
                return Err(format!(
                    "keywords (a key with no field name) take only text modifiers, not `{}`",
                    mod_names.join("|")
                ));
            }
            let owned: Vec<Value> = values.into_iter().cloned().collect();
            let mut m = mods.clone();
            if m.kind == Kind::Equals {
                m.kind = Kind::Contains;
            }
            return self.keywords(&owned, &m);
        }
        let fields = self.ctx.resolve(name);
        if fields.is_empty() {
            self.unmapped.push(name.to_string());
            self.warnings.push(format!(
                "field `{name}` is not mapped to an event field (sigma.field_mappings); \
                 conditions on it never match"
            ));
            return Ok(Predicate::Const(false));
        }
        let parts = values
            .into_iter()
            .map(|v| self.value(v, &mods, &fields, false))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(if mods.all { and(parts) } else { or(parts) })
    }

    fn check_any(&mut self, fields: &[FieldRef], op: CheckOp) -> Predicate {
        or(fields
            .iter()
            .map(|f| {
                Predicate::Check(self.table.check(Check {
                    field: f.clone(),
                    op: op.clone(),
                }))
            })
            .collect())
    }

    /// One value of a field condition, over the field's event fields.
    fn value(
        &mut self,
        v: &Value,
        mods: &Mods,
        fields: &[FieldRef],
        keyword: bool,
    ) -> Result<Predicate, String> {
        let want = |what: &str, m: &str| format!("`{m}` takes {what}, got {}", describe(v));
        match mods.kind {
            Kind::Exists => {
                let Value::Bool(b) = v else {
                    return Err(want("`true` or `false`", "exists"));
                };
                let p = self.check_any(fields, CheckOp::Exists);
                return Ok(if *b { p } else { not(p) });
            }
            Kind::Cmp(cmp) => {
                let n = v
                    .as_f64()
                    .filter(|n| n.is_finite())
                    .ok_or_else(|| want("a number", "gt/gte/lt/lte"))?;
                return Ok(self.check_any(fields, CheckOp::Num { cmp, value: n }));
            }
            Kind::Cidr => {
                let s = v
                    .as_str()
                    .ok_or_else(|| want("a network (`10.0.0.0/8`)", "cidr"))?;
                let (v6, net, prefix) = parse_cidr(s)?;
                return Ok(self.check_any(fields, CheckOp::Cidr { v6, net, prefix }));
            }
            Kind::FieldRef(mode) => {
                let s = v.as_str().ok_or_else(|| want("a field name", "fieldref"))?;
                let others = self.ctx.resolve(s);
                if others.is_empty() {
                    self.unmapped.push(s.to_string());
                    self.warnings.push(format!(
                        "field `{s}` (named by fieldref) is not mapped to an event field; the \
                         comparison never matches"
                    ));
                    return Ok(Predicate::Const(false));
                }
                let mut parts = Vec::new();
                for f in fields {
                    for o in &others {
                        parts.push(Predicate::Check(self.table.check(Check {
                            field: f.clone(),
                            op: CheckOp::FieldRef {
                                other: o.clone(),
                                mode,
                                cased: mods.cased,
                            },
                        })));
                    }
                }
                return Ok(or(parts));
            }
            _ => {}
        }
        let plain = mods.kind == Kind::Equals
            && mods.transforms.is_empty()
            && !mods.cased
            && !mods.expand
            && !keyword;
        match v {
            Value::Null if plain => {
                // Missing or empty in every field it maps to.
                return Ok(and(fields
                    .iter()
                    .map(|f| {
                        Predicate::Check(self.table.check(Check {
                            field: f.clone(),
                            op: CheckOp::NullOrEmpty,
                        }))
                    })
                    .collect()));
            }
            Value::Null => return Err("`null` takes no modifiers".into()),
            Value::Number(_) if plain => {
                let n = v
                    .as_f64()
                    .filter(|n| n.is_finite())
                    .ok_or("a number out of range")?;
                return Ok(self.check_any(
                    fields,
                    CheckOp::Num {
                        cmp: NumCmp::Eq,
                        value: n,
                    },
                ));
            }
            Value::Bool(b) if plain => return Ok(self.check_any(fields, CheckOp::Bool(*b))),
            _ => {}
        }
        let text =
            scalar_text(v).ok_or_else(|| format!("expected a string, got {}", describe(v)))?;
        let texts = if mods.expand {
            self.expand(&text)
        } else {
            vec![text]
        };
        let mut alternatives = Vec::new();
        for t in texts {
            for m in self.matchers(&t, mods)? {
                alternatives.push(self.atoms(m, fields));
            }
        }
        Ok(or(alternatives))
    }

    /// `%name%` placeholders replaced by their configured values.
    fn expand(&mut self, text: &str) -> Vec<String> {
        let mut out = vec![String::new()];
        let mut rest = text;
        while let Some(start) = rest.find('%') {
            let Some(len) = rest[start + 1..].find('%') else {
                break;
            };
            let name = &rest[start + 1..start + 1 + len];
            let Some(values) = self.ctx.placeholders.get(name) else {
                self.warnings.push(format!(
                    "placeholder `%{name}%` has no values (sigma.placeholders); the value never \
                     matches"
                ));
                return Vec::new();
            };
            let prefix = &rest[..start];
            out = out
                .iter()
                .flat_map(|o| values.iter().map(move |v| format!("{o}{prefix}{v}")))
                .collect();
            rest = &rest[start + len + 2..];
        }
        out.iter().map(|o| format!("{o}{rest}")).collect()
    }

    fn matchers(&self, text: &str, mods: &Mods) -> Result<Vec<Matcher>, String> {
        if let Kind::Re { i, m, s } = mods.kind {
            let flags: String = [(i, 'i'), (m, 'm'), (s, 's')]
                .iter()
                .filter(|f| f.0)
                .map(|f| f.1)
                .collect();
            let pattern = crate::any_char::respell(&if flags.is_empty() {
                text.to_string()
            } else {
                format!("(?{flags}){text}")
            });
            check_regex(&pattern)?;
            return Ok(vec![Matcher::Regex(pattern)]);
        }
        let Some(pos) = Position::of(mods.kind) else {
            return Err("internal: not a text modifier".into());
        };
        let mut variants = vec![value::parse_plain(text)];
        for t in &mods.transforms {
            let mut next = Vec::new();
            for v in variants {
                next.extend(value::transform(v, *t)?);
            }
            variants = next;
        }
        let out: Vec<Matcher> = variants
            .into_iter()
            .map(|v| value::matcher(v, pos, mods.cased))
            .collect();
        for m in &out {
            if let Matcher::Regex(r) = m {
                check_regex(r)?;
            }
        }
        Ok(out)
    }

    fn atoms(&mut self, m: Matcher, fields: &[FieldRef]) -> Predicate {
        let kind = match m {
            Matcher::Never => return Predicate::Const(false),
            Matcher::Literal {
                text,
                case_insensitive,
            } => AtomKind::Literal {
                text,
                case_insensitive,
            },
            Matcher::Regex(pattern) => AtomKind::Regex {
                pattern,
                validator: None,
            },
        };
        or(fields
            .iter()
            .map(|f| Predicate::Atom(self.table.atom(f.clone(), kind.clone())))
            .collect())
    }
}

impl Mods {
    /// A keyword list's implicit modifiers: found anywhere.
    fn keyword() -> Mods {
        Mods {
            kind: Kind::Contains,
            transforms: Vec::new(),
            all: false,
            cased: false,
            expand: false,
        }
    }
}

fn fold(c: &Cond, selections: &BTreeMap<String, Predicate>) -> Predicate {
    match c {
        Cond::Sel(name) => selections
            .get(name)
            .cloned()
            .unwrap_or(Predicate::Const(false)),
        Cond::Not(q) => not(fold(q, selections)),
        Cond::And(ps) => and(ps.iter().map(|p| fold(p, selections)).collect()),
        Cond::Or(ps) => or(ps.iter().map(|p| fold(p, selections)).collect()),
    }
}

/// `10.0.0.0/8`, `fe80::/10`, or a bare address (its full length).
pub fn parse_cidr(s: &str) -> Result<(bool, u128, u8), String> {
    let bad = |why: &str| format!("`{s}` is not a network in CIDR notation: {why}");
    let (addr, prefix) = match s.trim().split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (s.trim(), None),
    };
    let ip: std::net::IpAddr = addr.parse().map_err(|_| bad("bad address"))?;
    let (v6, bits, width) = match ip {
        std::net::IpAddr::V4(a) => (false, u32::from(a) as u128, 32u8),
        std::net::IpAddr::V6(a) => (true, u128::from(a), 128u8),
    };
    let prefix = match prefix {
        Some(p) => p.parse::<u8>().map_err(|_| bad("bad prefix length"))?,
        None => width,
    };
    if prefix > width {
        return Err(bad(&format!("prefix longer than {width} bits")));
    }
    Ok((v6, bits, prefix))
}
