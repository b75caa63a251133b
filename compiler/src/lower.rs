//! Lowering rule sources to the IR.
//!
//! Each engine's rules are parsed from their YAML value here (so errors name
//! the rule id), checked, and turned into a [`Predicate`] over interned
//! atoms. All errors are collected; nothing is skipped.

use crate::config::{default_stages, ConfigSources, EvaluatorSource};
use crate::error::{CompileError, CompileErrors};
use crate::ir::{AtomKind, AtomTable, IrEvaluator, IrRule, RuleSet};
use crate::source::{Common, MatchMode, PatternRule, PatternSpec, RegexRule, RuleMode};
use crate::yaml;
use parallax_runtime::{EngineKind, FieldRef, Predicate, StageSet};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Fields scanned when a rule names none.
const DEFAULT_FIELDS: [&str; 1] = ["text"];

/// Lowers every evaluator of a loaded config.
pub fn lower(sources: ConfigSources) -> Result<RuleSet, CompileErrors> {
    let mut errors = sources.errors;
    let mut evaluators: Vec<EvaluatorSource> = sources.evaluators;
    // Chain order: cheapest engine first; inline evaluators before the tree's
    // within an engine; file order within those.
    evaluators.sort_by_key(|e| (e.engine, !e.inline));

    // Tree rules replace inline rules of the same id (so a starter rule in
    // parallax.yaml can be overridden by the curated library's version).
    let tree_ids: HashSet<String> = evaluators
        .iter()
        .filter(|e| !e.inline)
        .flat_map(|e| e.rules.iter().filter_map(rule_id))
        .collect();

    let mut table = AtomTable::default();
    let mut scratch_table = AtomTable::default();
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    let mut enabled = Vec::new();
    let mut disabled = Vec::new();
    for ev in &evaluators {
        let is_disabled = !ev.enabled || sources.disabled.contains(&ev.name);
        let base_stages = StageSet::of(
            &ev.stages
                .clone()
                .unwrap_or_else(|| default_stages(ev.engine)),
        );
        let mut out = IrEvaluator {
            name: ev.name.clone(),
            engine: ev.engine,
            stages: base_stages,
            source: ev.path.clone(),
            inline: ev.inline,
            rules: Vec::new(),
        };
        for value in &ev.rules {
            let id = rule_id(value);
            if ev.inline && id.as_ref().is_some_and(|id| tree_ids.contains(id)) {
                continue;
            }
            if let Some(id) = &id {
                if let Some(first) = seen.get(id) {
                    errors.push(CompileError::rule(
                        &ev.path,
                        id,
                        format!("duplicate rule id (first defined in {})", first.display()),
                    ));
                    continue;
                }
                seen.insert(id.clone(), ev.path.clone());
            }
            let rule_disabled = id.as_ref().is_some_and(|id| sources.disabled.contains(id));
            let t = if is_disabled || rule_disabled {
                &mut scratch_table
            } else {
                &mut table
            };
            match lower_rule(ev.engine, base_stages, ev.mode, &ev.path, value.clone(), t) {
                Ok(rule) if !rule_disabled => out.rules.push(rule),
                Ok(_) => {}
                Err(e) => errors.push(e),
            }
        }
        out.stages = out.rules.iter().fold(base_stages, |s, r| s.union(r.stages));
        if is_disabled {
            disabled.push(out);
        } else {
            enabled.push(out);
        }
    }
    for name in &sources.disabled {
        if !seen.contains_key(name) && !evaluators.iter().any(|e| &e.name == name) {
            errors.push(CompileError::file(
                &sources.path,
                format!("disabled: `{name}` names no evaluator or rule"),
            ));
        }
    }
    if !errors.is_empty() {
        return Err(CompileErrors(errors));
    }
    Ok(RuleSet {
        config_path: sources.path,
        settings: sources.settings,
        evaluators: enabled,
        disabled,
        fields: table.fields,
        atoms: table.atoms,
        inputs: sources.inputs,
    })
}

fn rule_id(v: &serde_yaml::Value) -> Option<String> {
    v.get("id").and_then(|i| i.as_str()).map(str::to_string)
}

fn lower_rule(
    engine: EngineKind,
    stages: StageSet,
    mode: RuleMode,
    path: &Path,
    value: serde_yaml::Value,
    table: &mut AtomTable,
) -> Result<IrRule, CompileError> {
    let label = rule_id(&value).unwrap_or_else(|| "<no id>".to_string());
    let err = |m: String| CompileError::rule(path, &label, m);
    if !value.is_mapping() {
        return Err(err("a rule must be a mapping of keys to values".into()));
    }
    let (common, predicate) = match engine {
        EngineKind::Regex => {
            let r: RegexRule = yaml::from_value(value).map_err(err)?;
            let p = lower_regex(&r, table).map_err(err)?;
            (r.common(), p)
        }
        EngineKind::Pattern => {
            let r: PatternRule = yaml::from_value(value).map_err(err)?;
            let p = lower_pattern(&r, table).map_err(err)?;
            (r.common(), p)
        }
    };
    finish(common, stages, mode, predicate).map_err(err)
}

fn finish(
    c: Common,
    stages: StageSet,
    mode: RuleMode,
    predicate: Predicate,
) -> Result<IrRule, String> {
    if c.id.trim().is_empty() {
        return Err("`id` must not be empty".into());
    }
    let stages = match c.stages {
        Some(s) if s.is_empty() => return Err("`stages` must not be empty".into()),
        Some(s) => StageSet::of(&s),
        None => stages,
    };
    Ok(IrRule {
        title: c.title.unwrap_or_else(|| c.id.clone()),
        id: c.id,
        description: c.description,
        action: c.action,
        priority: c.priority,
        stages,
        reason: c.reason,
        predicate,
        monitor: c.mode.unwrap_or(mode) == RuleMode::Monitor,
    })
}

fn parse_fields(fields: &Option<Vec<String>>) -> Result<Vec<FieldRef>, String> {
    let names: Vec<&str> = match fields {
        Some(f) if f.is_empty() => return Err("`fields` must not be empty".into()),
        Some(f) => f.iter().map(String::as_str).collect(),
        None => DEFAULT_FIELDS.to_vec(),
    };
    names
        .into_iter()
        .map(|n| FieldRef::parse(n).map_err(|e| e.to_string()))
        .collect()
}

/// Checks that a regex compiles, with the engine's own message if not.
pub fn check_regex(pattern: &str) -> Result<(), String> {
    regex_automata::meta::Regex::new(pattern)
        .map(|_| ())
        .map_err(|e| match e.syntax_error() {
            Some(s) => format!("invalid regex `{pattern}`: {s}"),
            None => format!("regex `{pattern}` cannot be compiled: {e}"),
        })
}

fn any_or_all(mode: MatchMode, mut parts: Vec<Predicate>) -> Predicate {
    if parts.len() == 1 {
        return parts.remove(0);
    }
    match mode {
        MatchMode::Any => Predicate::Or(parts),
        MatchMode::All => Predicate::And(parts),
    }
}

fn found_in_any(atoms: Vec<u32>) -> Predicate {
    any_or_all(
        MatchMode::Any,
        atoms.into_iter().map(Predicate::Atom).collect(),
    )
}

fn lower_regex(r: &RegexRule, table: &mut AtomTable) -> Result<Predicate, String> {
    let specs: Vec<PatternSpec> = match (&r.pattern, &r.patterns) {
        (Some(p), None) => vec![PatternSpec::Bare(p.clone())],
        (None, Some(ps)) if !ps.is_empty() => ps.clone(),
        (None, Some(_)) => return Err("`patterns` must not be empty".into()),
        (Some(_), Some(_)) => return Err("give `pattern` or `patterns`, not both".into()),
        (None, None) => return Err("needs `pattern` or `patterns`".into()),
    };
    let fields = parse_fields(&r.fields)?;
    let mut parts = Vec::new();
    let mut positive = false;
    for spec in specs {
        let (pattern, negate, field) = match spec {
            PatternSpec::Bare(p) => (p, false, None),
            PatternSpec::Full(o) => (o.pattern, o.negate, o.field),
        };
        check_regex(&pattern)?;
        let targets = match field {
            Some(f) => vec![FieldRef::parse(&f).map_err(|e| e.to_string())?],
            None => fields.clone(),
        };
        let atoms = targets
            .into_iter()
            .map(|f| {
                table.atom(
                    f,
                    AtomKind::Regex {
                        pattern: pattern.clone(),
                    },
                )
            })
            .collect();
        let found = found_in_any(atoms);
        positive |= !negate;
        parts.push(if negate {
            Predicate::Not(Box::new(found))
        } else {
            found
        });
    }
    if !positive {
        return Err(
            "every pattern is negated, so the rule would fire on any event without them; \
                    add at least one pattern that must be found"
                .into(),
        );
    }
    Ok(any_or_all(r.match_mode, parts))
}

fn lower_pattern(r: &PatternRule, table: &mut AtomTable) -> Result<Predicate, String> {
    if r.keywords.is_empty() {
        return Err("`keywords` must not be empty".into());
    }
    let fields = parse_fields(&r.fields)?;
    let mut parts = Vec::new();
    for kw in &r.keywords {
        if kw.is_empty() {
            return Err("a keyword must not be empty (it would match everything)".into());
        }
        // The literal automaton folds ASCII case only; a case-insensitive
        // keyword with non-ASCII letters becomes a Unicode-aware regex atom.
        let kind = if !r.case_sensitive && !kw.is_ascii() {
            AtomKind::Regex {
                pattern: format!("(?i){}", regex_syntax::escape(kw)),
            }
        } else {
            AtomKind::Literal {
                text: kw.clone(),
                case_insensitive: !r.case_sensitive,
            }
        };
        let atoms = fields
            .iter()
            .map(|f| table.atom(f.clone(), kind.clone()))
            .collect();
        parts.push(found_in_any(atoms));
    }
    Ok(any_or_all(r.match_mode, parts))
}
