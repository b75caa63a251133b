//! Lowering rule sources to the IR.
//!
//! Each engine's rules are parsed from their YAML value here (so errors name
//! the rule id), checked, and turned into a [`Predicate`] over interned
//! atoms. All errors are collected; nothing is skipped.

use crate::atr;
use crate::config::{ConfigSources, EvaluatorSource};
use crate::error::{CompileError, CompileErrors};
use crate::ir::{AtomKind, AtomTable, IrEvaluator, IrRule, IrSql, RuleNote, RuleSet};
use crate::regex_check::check_regex;
use crate::sigma::{self, mapping::SigmaContext};
use crate::source::{
    CelRule, ClassifierRule, Common, MatchMode, PatternRule, PatternSpec, PolicyRule, RegexRule,
    RuleMode, SchemaRule, SqlRule,
};
use crate::stages::default_stages;
use crate::yaml;
use parallax_runtime::{Action, EngineKind, FieldRef, Predicate, StageSet};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Fields scanned when a rule names none.
const DEFAULT_FIELDS: [&str; 1] = ["text"];

/// Lowers every evaluator of a loaded config.
pub fn lower(sources: ConfigSources) -> Result<RuleSet, CompileErrors> {
    let mut errors = sources.errors;
    let mut warnings = Vec::new();
    // Each evaluator with its tenant (`None`: the operator's).
    let mut evaluators: Vec<(Option<String>, EvaluatorSource)> =
        sources.evaluators.into_iter().map(|e| (None, e)).collect();
    for t in &sources.tenants {
        evaluators.extend(
            t.evaluators
                .iter()
                .map(|e| (Some(t.name.clone()), e.clone())),
        );
    }
    // Chain order: engine order (regex, pattern, …); within an engine the
    // operator's evaluators before the tenants', inline evaluators before
    // the tree's; file order within those.
    evaluators.sort_by_key(|(t, e)| (e.engine, t.clone(), !e.inline));

    // Tree rules replace inline rules of the same id (so a starter rule in
    // parallax.yaml can be overridden by the curated library's version).
    let tree_ids: HashSet<String> = evaluators
        .iter()
        .filter(|(t, e)| t.is_none() && !e.inline)
        .flat_map(|(_, e)| e.rules.iter().filter_map(rule_id))
        .collect();

    let mut table = AtomTable::default();
    let mut scratch_table = AtomTable::default();
    // Ids are unique within the operator's rules and within each tenant's.
    let mut seen: HashMap<(Option<String>, String), PathBuf> = HashMap::new();
    let mut enabled = Vec::new();
    let mut owners: Vec<Option<String>> = Vec::new();
    let mut disabled = Vec::new();
    let mut excluded = Vec::new();
    let mut unsupported = Vec::new();
    for (owner, ev) in &evaluators {
        let operators = owner.is_none();
        let is_disabled = !ev.enabled || (operators && sources.disabled.contains(&ev.name));
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
        for (ri, value) in ev.rules.iter().enumerate() {
            let path = ev.rule_paths.get(ri).unwrap_or(&ev.path);
            let id = rule_id(value);
            if ev.inline && id.as_ref().is_some_and(|id| tree_ids.contains(id)) {
                continue;
            }
            if let Some(id) = &id {
                let key = (owner.clone(), id.clone());
                if let Some(first) = seen.get(&key) {
                    errors.push(CompileError::rule(
                        path,
                        id,
                        format!("duplicate rule id (first defined in {})", first.display()),
                    ));
                    continue;
                }
                seen.insert(key, path.clone());
            }
            if ev.engine == EngineKind::Atr {
                if let Some(x) = id
                    .as_ref()
                    .and_then(|id| sources.atr.exclude.iter().find(|x| &x.id == id))
                {
                    excluded.push(RuleNote {
                        path: path.clone(),
                        rule: x.id.clone(),
                        reason: x.reason.clone(),
                    });
                    continue;
                }
            }
            let rule_disabled =
                operators && id.as_ref().is_some_and(|id| sources.disabled.contains(id));
            let t = if is_disabled || rule_disabled {
                &mut scratch_table
            } else {
                &mut table
            };
            let ctx = RuleContext {
                sigma: &sources.sigma,
                policy: &sources.policy,
                atr: &sources.atr,
                warnings: &mut warnings,
            };
            let defaults = Defaults {
                stages: base_stages,
                category: ev.category.as_deref(),
                mode: ev.mode,
            };
            match lower_rule(ev.engine, defaults, path, value.clone(), t, ctx) {
                Ok(Some(rule)) if !rule_disabled => out.rules.push(rule),
                Ok(_) => {}
                Err(Unlowered::Error(e)) => errors.push(e),
                Err(Unlowered::Unsupported(reason)) => unsupported.push(RuleNote {
                    path: path.clone(),
                    rule: id.clone().unwrap_or_default(),
                    reason,
                }),
            }
        }
        out.stages = out.rules.iter().fold(base_stages, |s, r| s.union(r.stages));
        if is_disabled {
            disabled.push(out);
        } else {
            enabled.push(out);
            owners.push(owner.clone());
        }
    }
    crate::tenants::apply(
        &mut enabled,
        &owners,
        &sources.tenants,
        &mut table,
        &sources.path,
        &mut errors,
    );
    for name in &sources.disabled {
        if !seen.contains_key(&(None, name.clone()))
            && !evaluators.iter().any(|(_, e)| &e.name == name)
        {
            errors.push(CompileError::file(
                &sources.path,
                format!("disabled: `{name}` names no evaluator or rule"),
            ));
        }
    }
    for x in &sources.atr.exclude {
        if !excluded.iter().any(|n: &RuleNote| n.rule == x.id) {
            errors.push(CompileError::file(
                &sources.path,
                format!("atr.exclude: `{}` names no loaded ATR rule", x.id),
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
        cel: table.cel,
        checks: table.checks,
        inputs: sources.inputs,
        warnings,
        excluded,
        unsupported,
    })
}

/// Why a rule produced no IR rule.
enum Unlowered {
    Error(CompileError),
    /// Valid, but beyond what Parallax evaluates (reported by `lint`).
    Unsupported(String),
}

impl From<CompileError> for Unlowered {
    fn from(e: CompileError) -> Self {
        Unlowered::Error(e)
    }
}

fn rule_id(v: &serde_yaml::Value) -> Option<String> {
    v.get("id").and_then(|i| i.as_str()).map(str::to_string)
}

/// What lowering a rule may need beyond the rule itself.
struct RuleContext<'a> {
    sigma: &'a SigmaContext,
    policy: &'a crate::cel::PolicyConfig,
    atr: &'a atr::AtrConfig,
    warnings: &'a mut Vec<String>,
}

/// What a rule inherits from its evaluator unless it says otherwise.
#[derive(Debug, Clone, Copy)]
struct Defaults<'a> {
    stages: StageSet,
    category: Option<&'a str>,
    mode: RuleMode,
}

fn lower_rule(
    engine: EngineKind,
    defaults: Defaults<'_>,
    path: &Path,
    value: serde_yaml::Value,
    table: &mut AtomTable,
    ctx: RuleContext<'_>,
) -> Result<Option<IrRule>, Unlowered> {
    // Sigma's `id` is optional: name such a rule by its title.
    let label = rule_id(&value)
        .or_else(|| {
            (engine == EngineKind::Sigma)
                .then(|| value.get("title")?.as_str().map(str::to_string))
                .flatten()
        })
        .unwrap_or_else(|| "<no id>".to_string());
    let err = |m: String| CompileError::rule(path, &label, m);
    if !value.is_mapping() {
        return Err(err("a rule must be a mapping of keys to values".into()).into());
    }
    let mut sql = None;
    let (common, predicate) = match engine {
        EngineKind::Atr => {
            let r: atr::AtrRule = yaml::from_value(value).map_err(err)?;
            return match atr::lower_rule(&r, ctx.atr, table).map_err(err)? {
                atr::Lowered::Rule(mut rule) => {
                    rule.monitor = defaults.mode == RuleMode::Monitor;
                    Ok(Some(*rule))
                }
                atr::Lowered::Unsupported(why) => Err(Unlowered::Unsupported(why)),
            };
        }
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
        EngineKind::Policy => {
            let r: PolicyRule = yaml::from_value(value).map_err(err)?;
            let mut parts = vec![crate::cel::lower_expr(&r.expr, table, ctx.policy).map_err(err)?];
            for earlier in &r.unless {
                let p = crate::cel::lower_expr(earlier, table, ctx.policy).map_err(err)?;
                parts.push(Predicate::Not(Box::new(p)));
            }
            let p = if parts.len() == 1 {
                parts.remove(0)
            } else {
                Predicate::And(parts)
            };
            (r.common(), p)
        }
        EngineKind::Classifier => {
            let r: ClassifierRule = yaml::from_value(value).map_err(err)?;
            let expr = crate::classifier::expression(&r).map_err(err)?;
            let p = crate::cel::lower_expr(&expr, table, ctx.policy).map_err(err)?;
            (r.common(), p)
        }
        EngineKind::Cel => {
            let r: CelRule = yaml::from_value(value).map_err(err)?;
            let p = crate::cel::lower_cel(&r, table, ctx.policy).map_err(err)?;
            (r.common(), p)
        }
        EngineKind::Sigma => {
            let l = sigma::lower(value, ctx.sigma, table).map_err(err)?;
            for w in l.warnings {
                ctx.warnings
                    .push(format!("{}: rule `{}`: {w}", path.display(), l.common.id));
            }
            let mut rule = finish(l.common, defaults, l.predicate).map_err(err)?;
            rule.author = l.author;
            if rule.category.is_none() {
                rule.category = l.tag_category.map(str::to_string);
            }
            return Ok(Some(rule));
        }
        EngineKind::Schema => {
            let r: SchemaRule = yaml::from_value(value).map_err(err)?;
            let p = crate::schema::lower(&r, table).map_err(err)?;
            (r.common(), p)
        }
        EngineKind::Sql => {
            let r: SqlRule = yaml::from_value(value).map_err(err)?;
            sql = Some(lower_sql(&r).map_err(err)?);
            (r.common(), Predicate::Const(false))
        }
    };
    let fields = transform_fields(engine, &predicate, table);
    let transforms =
        crate::transforms::lower(&common.transforms, common.action, &fields).map_err(err)?;
    let mut rule = finish(common, defaults, predicate).map_err(err)?;
    rule.sql = sql;
    rule.transforms = transforms;
    Ok(Some(rule))
}

/// The fields a rule's transforms rewrite unless they name some: a
/// policy's message (`tool_args.body`, `tool_args.subject`), else the
/// fields the rule's conditions search, else `text`.
fn transform_fields(engine: EngineKind, predicate: &Predicate, table: &AtomTable) -> Vec<FieldRef> {
    if engine == EngineKind::Policy {
        return ["tool_args.body", "tool_args.subject"]
            .iter()
            .filter_map(|f| FieldRef::parse(f).ok())
            .collect();
    }
    let mut atoms = Vec::new();
    predicate.positive_atoms(&mut atoms);
    let mut fields: Vec<FieldRef> = Vec::new();
    for a in atoms {
        if let Some(f) = table
            .atoms
            .get(a as usize)
            .and_then(|spec| table.fields.get(spec.field as usize))
        {
            if !fields.contains(f) {
                fields.push(f.clone());
            }
        }
    }
    if fields.is_empty() {
        fields = DEFAULT_FIELDS
            .iter()
            .filter_map(|f| FieldRef::parse(f).ok())
            .collect();
    }
    fields
}

/// Checks a SQL rule against the real schema in an in-memory SQLite: the
/// query prepares, uses only known parameters, and the condition and reason
/// name only its result columns.
fn lower_sql(r: &SqlRule) -> Result<IrSql, String> {
    if !matches!(r.action, Action::Block | Action::Detect) {
        return Err(format!(
            "action `{}`: a SQL rule can `block` or `detect` (it judges a session, \
             there is no matched text to redact)",
            r.action
        ));
    }
    parallax_store::check_rule(&r.query, &r.condition, r.reason.as_deref())?;
    Ok(IrSql {
        query: r.query.clone(),
        condition: r.condition.clone(),
    })
}

fn finish(c: Common, defaults: Defaults<'_>, predicate: Predicate) -> Result<IrRule, String> {
    if c.id.trim().is_empty() {
        return Err("`id` must not be empty".into());
    }
    if c.approval.is_some() && c.action != parallax_runtime::Action::Approve {
        return Err(format!(
            "`approval` is only for rules with `action: approve` (this one is `{}`)",
            c.action
        ));
    }
    if let Some(bad) = c
        .approval
        .iter()
        .flat_map(|a| a.via.iter())
        .find(|v| !crate::policy::VIA_NAMES.contains(&v.as_str()))
    {
        return Err(format!(
            "approval.via `{bad}`: an approval is asked via {}",
            crate::policy::VIA_NAMES.join(", ")
        ));
    }
    let stages = match c.stages {
        Some(s) if s.is_empty() => return Err("`stages` must not be empty".into()),
        Some(s) => StageSet::of(&s),
        None => defaults.stages,
    };
    Ok(IrRule {
        title: c.title.unwrap_or_else(|| c.id.clone()),
        id: c.id,
        description: c.description,
        action: c.action,
        priority: c.priority,
        stages,
        reason: c.reason,
        category: c.category.or_else(|| defaults.category.map(str::to_string)),
        false_positives: c.false_positives,
        predicate,
        tests: c.tests,
        author: None,
        sql: None,
        monitor: c.mode.unwrap_or(defaults.mode) == RuleMode::Monitor,
        approval: c.approval,
        transforms: Vec::new(),
        locked: c.locked,
        tenant: None,
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
        let (pattern, negate, field, validate) = match spec {
            PatternSpec::Bare(p) => (p, false, None, None),
            PatternSpec::Full(o) => (o.pattern, o.negate, o.field, o.validate),
        };
        if negate && validate.is_some() {
            return Err("a negated pattern cannot have `validate`".into());
        }
        let validate = validate.or(r.validate);
        let pattern = crate::any_char::respell(&pattern);
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
                        // Negated patterns are plain presence tests.
                        validator: if negate { None } else { validate },
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
        // The literal automaton folds ASCII case only, and matches spaces
        // exactly: a case-insensitive keyword with non-ASCII letters, or a
        // keyword of several words (which must survive `ignore   previous`
        // or a line break between the words), becomes a regex atom.
        let words: Vec<String> = kw.split_whitespace().map(regex_syntax::escape).collect();
        let kind = if words.len() > 1 || (!r.case_sensitive && !kw.is_ascii()) {
            let flags = if r.case_sensitive { "" } else { "(?i)" };
            AtomKind::Regex {
                pattern: format!("{flags}{}", words.join(r"\s+")),
                validator: None,
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
