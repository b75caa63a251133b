//! Tenants: one compiled program serving several teams' policies.
//!
//! A tenant (`tenants:` in the config) is named by the front door from the
//! token a request carries; the event then has a `tenant` field that no
//! client can set. Its overlay is compiled into the same program as the
//! operator's rules, never looked up at decision time: every rule's tenant
//! set is part of its predicate, so one scan of an event serves every
//! tenant and adding a tenant adds no scan.
//!
//! Precedence, for a tenant T and a shipped (operator) rule R:
//! 1. **T's own rule** with R's id replaces R for T (T's rule runs only for
//!    T; R runs for everyone else);
//! 2. **T's override** of R — `disabled`, `actions`, `mode: monitor` —
//!    applies to T only: R runs unchanged for everyone else and a copy with
//!    T's action (or none, when disabled) runs for T;
//! 3. otherwise **R** applies to T as to everyone.
//!
//! A rule the operator marks `locked: true` cannot be weakened by any
//! tenant: disabling or replacing it, lowering its action or putting it in
//! monitor mode is a compile error naming the tenant and the rule (raising
//! its action is allowed). SQL rules judge sessions in the side-store, not
//! by a predicate, so they apply to every tenant and cannot be overridden
//! or added by one yet (an error says so).

use crate::config::EvaluatorSource;
use crate::error::CompileError;
use crate::ir::{AtomTable, IrEvaluator, IrRule};
use crate::source::RuleMode;
use parallax_runtime::{Action, Check, CheckOp, EngineKind, FieldRef, Predicate, TopField};
use serde::Deserialize;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

/// One tenant as the config writes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantConfig {
    /// SHA-256 of each of its bearer tokens, as 64 hex digits: tokens
    /// themselves are never written in the config (`sha256sum` of the
    /// token, without a newline).
    #[serde(default)]
    pub token_sha256: Vec<String>,
    /// Its own rule files, laid out as `rules/` is (`<engine>/*.yaml`).
    pub rules_dir: Option<String>,
    /// Operator rules that do not apply to it.
    #[serde(default)]
    pub disabled: Vec<String>,
    /// Operator rules whose action it changes.
    #[serde(default)]
    pub actions: BTreeMap<String, Action>,
    /// `monitor`: every rule that applies to it only reports (a pilot).
    pub mode: Option<RuleMode>,
}

/// A tenant after loading: its overlay and its own evaluators (named
/// `<tenant>/<file>`).
#[derive(Debug, Clone)]
pub struct TenantSource {
    pub name: String,
    pub disabled: Vec<String>,
    pub actions: BTreeMap<String, Action>,
    pub mode: Option<RuleMode>,
    pub evaluators: Vec<EvaluatorSource>,
}

/// Checks what can be checked of a tenant's config on its own.
pub fn check_config(name: &str, t: &TenantConfig) -> Result<(), String> {
    let valid_name = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && name.as_bytes()[0].is_ascii_alphanumeric();
    if !valid_name {
        return Err(format!(
            "tenants: `{name}` is not a tenant name (lower-case letters, digits, `-` and `_`, \
             starting with a letter or digit, at most 63)"
        ));
    }
    if t.token_sha256.is_empty() {
        return Err(format!(
            "tenants.{name}: `token_sha256` must list at least one token's SHA-256 (a tenant no \
             request can authenticate as is a mistake)"
        ));
    }
    for (i, h) in t.token_sha256.iter().enumerate() {
        if h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!(
                "tenants.{name}.token_sha256[{i}]: expected 64 hex digits (the SHA-256 of the \
                 token, never the token itself)"
            ));
        }
    }
    if let Some((id, a)) = t.actions.iter().find(|(_, a)| **a == Action::Redact) {
        return Err(format!(
            "tenants.{name}.actions.{id}: `{a}` cannot be given to another rule's matches \
             (a redaction rule says what it rewrites)"
        ));
    }
    Ok(())
}

/// The scope check of rules that apply to `tenants` only.
fn scope(table: &mut AtomTable, tenants: Vec<String>) -> Predicate {
    Predicate::Check(table.check(Check {
        field: FieldRef::Top(TopField::Tenant),
        op: CheckOp::OneOf(tenants),
    }))
}

fn only(rule: &mut IrRule, tenant: &str, table: &mut AtomTable) {
    let p = std::mem::replace(&mut rule.predicate, Predicate::Const(false));
    // The tenant test first: every other tenant's event leaves the copy at
    // once, so a rule's own conditions (a classifier's score, a CEL
    // expression) are evaluated once per event however many tenants have
    // a copy of it.
    rule.predicate = Predicate::And(vec![scope(table, vec![tenant.to_string()]), p]);
    rule.tenant = Some(tenant.to_string());
}

fn except(rule: &mut IrRule, tenants: Vec<String>, table: &mut AtomTable) {
    let p = std::mem::replace(&mut rule.predicate, Predicate::Const(false));
    rule.predicate = Predicate::And(vec![Predicate::Not(Box::new(scope(table, tenants))), p]);
}

/// Applies every tenant's overlay to the lowered evaluators: `enabled` in
/// chain order, `owner[i]` the tenant of `enabled[i]` (`None`: the
/// operator's). Copies for a tenant follow the rule they copy, so chain
/// order is kept.
pub fn apply(
    enabled: &mut [IrEvaluator],
    owner: &[Option<String>],
    tenants: &[TenantSource],
    table: &mut AtomTable,
    config: &Path,
    errors: &mut Vec<CompileError>,
) {
    if tenants.is_empty() {
        return;
    }
    let operator_ids: HashSet<String> = enabled
        .iter()
        .zip(owner)
        .filter(|(_, o)| o.is_none())
        .flat_map(|(e, _)| e.rules.iter().map(|r| r.id.clone()))
        .collect();
    let mut own_ids: BTreeMap<&str, HashSet<String>> = BTreeMap::new();
    for (ev, o) in enabled.iter().zip(owner) {
        if let Some(t) = o {
            own_ids
                .entry(t.as_str())
                .or_default()
                .extend(ev.rules.iter().map(|r| r.id.clone()));
        }
    }
    for t in tenants {
        for id in t.disabled.iter().chain(t.actions.keys()) {
            if !operator_ids.contains(id) {
                errors.push(CompileError::file(
                    config,
                    format!("tenants.{}: `{id}` names no rule of the operator's", t.name),
                ));
            }
        }
    }
    let err = |t: &str, id: &str, what: String| {
        CompileError::file(config, format!("tenants.{t}: rule `{id}` {what}"))
    };
    for (ev, o) in enabled.iter_mut().zip(owner) {
        if let Some(t) = o {
            if ev.engine == EngineKind::Sql {
                errors.push(CompileError::file(
                    &ev.source,
                    format!(
                        "tenant `{t}`: SQL rules judge sessions in the side-store and apply to \
                         every tenant; a tenant cannot add one yet"
                    ),
                ));
            }
            for rule in &mut ev.rules {
                only(rule, t, table);
            }
            continue;
        }
        let mut out = Vec::with_capacity(ev.rules.len());
        for mut rule in std::mem::take(&mut ev.rules) {
            let mut excepted = Vec::new();
            let mut copies = Vec::new();
            for t in tenants {
                let name = t.name.as_str();
                let replaced = own_ids.get(name).is_some_and(|ids| ids.contains(&rule.id));
                let disabled = t.disabled.contains(&rule.id);
                let action = t.actions.get(&rule.id).copied();
                let monitor = t.mode == Some(RuleMode::Monitor) && !rule.locked;
                if !(replaced || disabled || action.is_some() || monitor) {
                    continue;
                }
                if rule.sql.is_some() {
                    if replaced || disabled || action.is_some() {
                        errors.push(err(
                            name,
                            &rule.id,
                            "is a SQL rule: it applies to every tenant and cannot be \
                             overridden by one yet"
                                .into(),
                        ));
                    }
                    continue;
                }
                if rule.locked {
                    let why = if replaced {
                        Some("replaced by the tenant's own rule of the same id".to_string())
                    } else if disabled {
                        Some("disabled".to_string())
                    } else {
                        action
                            .filter(|a| *a < rule.action)
                            .map(|a| format!("lowered from `{}` to `{a}`", rule.action))
                    };
                    if let Some(why) = why {
                        errors.push(err(
                            name,
                            &rule.id,
                            format!("is locked by the operator and cannot be {why}"),
                        ));
                        continue;
                    }
                }
                excepted.push(name.to_string());
                if replaced || disabled {
                    continue;
                }
                let mut copy = rule.clone();
                if let Some(a) = action {
                    copy.action = a;
                    if a != Action::Approve {
                        copy.approval = None;
                    }
                }
                copy.monitor |= monitor;
                only(&mut copy, name, table);
                copies.push(copy);
            }
            if !excepted.is_empty() {
                except(&mut rule, excepted, table);
            }
            out.push(rule);
            out.extend(copies);
        }
        ev.rules = out;
    }
}
