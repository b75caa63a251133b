//! Loading `parallax.yaml` and the rules tree into evaluator sources.
//!
//! Layout: the config's inline `evaluators:` plus every
//! `<rules_dir>/<engine>/*.yaml` file, each file one evaluator named after
//! it. A file is a bare list of rules, or `evaluator: {name, stages,
//! enabled}` with `rules:`. Rules stay as YAML values here; the lowering
//! step parses them per engine so its errors can name the rule.

use crate::atr::{self, AtrConfig, AtrFile};
use crate::cel::PolicyConfig;
use crate::error::{CompileError, CompileErrors};
use crate::sigma::mapping::{SigmaConfig, SigmaContext};
use crate::source::RuleMode;
use crate::yaml;
use parallax_runtime::{EngineKind, FrontDoorSections, ProgramSettings, Stage, StateSettings};
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    /// The front doors' sections: carried as written, checked by the
    /// binary that owns their types (see `parallax_runtime::settings`).
    server: Option<serde_yaml::Value>,
    reporting: Option<serde_yaml::Value>,
    proxy: Option<serde_yaml::Value>,
    mcp: Option<serde_yaml::Value>,
    approvals: Option<serde_yaml::Value>,
    reload: Option<serde_yaml::Value>,
    telemetry: Option<serde_yaml::Value>,
    budgets: Option<serde_yaml::Value>,
    /// Where state a fleet shares lives (`store.postgres`).
    store: Option<serde_yaml::Value>,
    #[serde(default)]
    state: StateSettings,
    #[serde(default)]
    evaluators: Vec<InlineEvaluator>,
    rules_dir: Option<String>,
    #[serde(default)]
    disabled: Vec<String>,
    /// Sigma field mappings and placeholders.
    #[serde(default)]
    sigma: SigmaConfig,
    /// Folders of Agent Threat Rules files, searched recursively (besides
    /// `<rules_dir>/atr/`).
    #[serde(default)]
    atr_dirs: Vec<String>,
    /// How ATR rules become Parallax rules (actions, exclusions).
    #[serde(default)]
    atr: AtrConfig,
    /// parlok policy files (besides `<rules_dir>/policy/`).
    #[serde(default)]
    policy_files: Vec<String>,
    /// What the policy triggers compare with (internal domains, VIPs).
    #[serde(default)]
    policy: PolicyConfig,
    /// Tenants and their overlays (`crate::tenants`).
    #[serde(default)]
    tenants: std::collections::BTreeMap<String, crate::tenants::TenantConfig>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InlineEvaluator {
    name: String,
    #[serde(rename = "type")]
    engine: EngineKind,
    stages: Option<Vec<Stage>>,
    #[serde(default = "yes")]
    enabled: bool,
    rules: Option<Vec<serde_yaml::Value>>,
    rules_file: Option<String>,
    category: Option<String>,
    #[serde(default)]
    mode: RuleMode,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileHeader {
    name: Option<String>,
    /// Default category of the file's rules.
    category: Option<String>,
    stages: Option<Vec<Stage>>,
    #[serde(default = "yes")]
    enabled: bool,
    #[serde(default)]
    mode: RuleMode,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFileWithHeader {
    evaluator: FileHeader,
    rules: Vec<serde_yaml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RuleFile {
    List(Vec<serde_yaml::Value>),
    WithHeader(RuleFileWithHeader),
}

/// An evaluator as found in the sources, rules not yet parsed.
#[derive(Debug, Clone)]
pub struct EvaluatorSource {
    pub name: String,
    pub engine: EngineKind,
    /// `None`: the engine's default stages.
    pub stages: Option<Vec<Stage>>,
    pub enabled: bool,
    /// Default category of its rules.
    pub category: Option<String>,
    /// The default mode of its rules.
    pub mode: RuleMode,
    /// Defined inline in the config (rather than in the rules tree).
    pub inline: bool,
    /// The file its rules come from.
    pub path: PathBuf,
    pub rules: Vec<serde_yaml::Value>,
    /// The file of each rule, when they come from several (ATR: one file
    /// per rule); empty means all come from `path`.
    pub rule_paths: Vec<PathBuf>,
}

/// A loaded configuration: settings plus every evaluator source.
#[derive(Debug)]
pub struct ConfigSources {
    pub path: PathBuf,
    pub settings: ProgramSettings,
    pub evaluators: Vec<EvaluatorSource>,
    pub disabled: Vec<String>,
    /// How Sigma rules' field names map onto event fields.
    pub sigma: SigmaContext,
    /// Every file and folder the result depends on (for `rerun-if-changed`).
    pub inputs: Vec<PathBuf>,
    /// Errors in individual rule files: the rest is still lowered, so that
    /// one run reports every problem.
    pub errors: Vec<CompileError>,
    /// The `atr:` section.
    pub atr: AtrConfig,
    /// The `policy:` section.
    pub policy: PolicyConfig,
    /// The tenants, in name order, each with its own rules loaded.
    pub tenants: Vec<crate::tenants::TenantSource>,
}

fn read(path: &Path) -> Result<String, CompileError> {
    std::fs::read_to_string(path).map_err(|source| CompileError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads the config at `path` and the rules tree it points to. Only an
/// unreadable config is fatal; broken rule files are listed in
/// [`ConfigSources::errors`].
pub fn load(path: &Path) -> Result<ConfigSources, CompileErrors> {
    let text = read(path)?;
    if let Some(state_db) = bare_policy_file(&text) {
        return Ok(load_bare_policy(path, state_db));
    }
    let file: ConfigFile = yaml::from_str(&text).map_err(|m| CompileError::file(path, m))?;
    let front_doors = front_door_sections(&file).map_err(|m| CompileError::file(path, m))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut errors = Vec::new();
    let mut evaluators = Vec::new();
    let mut inputs = vec![path.to_path_buf()];
    let sigma = SigmaContext::new(&file.sigma).unwrap_or_else(|m| {
        errors.push(CompileError::file(path, m));
        SigmaContext::default()
    });
    for (i, ev) in file.evaluators.into_iter().enumerate() {
        let rules = match (ev.rules, ev.rules_file) {
            (Some(rules), None) => Ok((path.to_path_buf(), rules)),
            (None, Some(f)) if ev.engine == EngineKind::Sigma => {
                let p = base.join(f);
                inputs.push(p.clone());
                load_sigma_file(&p).and_then(|(header, rules)| match header {
                    Some(_) => Err(CompileError::file(
                        &p,
                        "a `rules_file` of an inline evaluator holds only rules; its \
                         `evaluator:` header belongs in the config",
                    )),
                    None => Ok((p, rules)),
                })
            }
            (None, Some(f)) => {
                let p = base.join(f);
                inputs.push(p.clone());
                load_rules_file(&p).map(|(header, rules)| {
                    if header.is_some() {
                        errors.push(CompileError::file(
                            &p,
                            "a `rules_file` of an inline evaluator is a plain list of rules; \
                             its `evaluator:` header belongs in the config",
                        ));
                    }
                    (p, rules)
                })
            }
            (Some(_), Some(_)) => Err(CompileError::file(
                path,
                format!(
                    "evaluators[{i}] (`{}`): give `rules` or `rules_file`, not both",
                    ev.name
                ),
            )),
            (None, None) => Err(CompileError::file(
                path,
                format!(
                    "evaluators[{i}] (`{}`): needs `rules` or `rules_file`",
                    ev.name
                ),
            )),
        };
        match rules {
            Ok((src, rules)) => evaluators.push(EvaluatorSource {
                name: ev.name,
                engine: ev.engine,
                stages: ev.stages,
                enabled: ev.enabled,
                category: ev.category,
                mode: ev.mode,
                inline: true,
                path: src,
                rules,
                rule_paths: Vec::new(),
            }),
            Err(e) => errors.push(e),
        }
    }
    let rules_dir = base.join(file.rules_dir.as_deref().unwrap_or("rules"));
    let mut atr_files = Vec::new();
    if rules_dir.is_dir() {
        inputs.push(rules_dir.clone());
        load_tree(
            &rules_dir,
            &mut inputs,
            &mut evaluators,
            &mut atr_files,
            &mut errors,
        );
    } else if file.rules_dir.is_some() {
        errors.push(CompileError::file(
            path,
            format!("rules_dir `{}` is not a directory", rules_dir.display()),
        ));
    }
    for d in &file.atr_dirs {
        let dir = base.join(d);
        if dir.is_dir() {
            inputs.push(dir.clone());
            atr_files.extend(atr::load_dir(&dir, &mut errors));
        } else {
            errors.push(CompileError::file(
                path,
                format!("atr_dirs: `{}` is not a directory", dir.display()),
            ));
        }
    }
    evaluators.extend(atr_evaluators(atr_files, &mut inputs));
    for f in &file.policy_files {
        let p = base.join(f);
        inputs.push(p.clone());
        match policy_evaluator(&p) {
            Ok(ev) => evaluators.push(ev),
            Err(e) => errors.push(e),
        }
    }
    let mut tenants = Vec::with_capacity(file.tenants.len());
    for (name, t) in file.tenants {
        if let Err(m) = crate::tenants::check_config(&name, &t) {
            errors.push(CompileError::file(path, m));
            continue;
        }
        let mut own = Vec::new();
        if let Some(dir) = &t.rules_dir {
            let dir = base.join(dir);
            if dir.is_dir() {
                inputs.push(dir.clone());
                let mut tenant_atr = Vec::new();
                load_tree(&dir, &mut inputs, &mut own, &mut tenant_atr, &mut errors);
                if !tenant_atr.is_empty() {
                    errors.push(CompileError::file(
                        &dir,
                        format!("tenant `{name}`: ATR rules are the operator's; a tenant's rules_dir holds its own rule files"),
                    ));
                }
            } else {
                errors.push(CompileError::file(
                    path,
                    format!(
                        "tenants.{name}.rules_dir `{}` is not a directory",
                        dir.display()
                    ),
                ));
            }
        }
        for ev in &mut own {
            ev.name = format!("{name}/{}", ev.name);
        }
        tenants.push(crate::tenants::TenantSource {
            name,
            disabled: t.disabled,
            actions: t.actions,
            mode: t.mode,
            evaluators: own,
        });
    }
    Ok(ConfigSources {
        path: path.to_path_buf(),
        settings: ProgramSettings {
            state: file.state,
            front_doors,
        },
        evaluators,
        disabled: file.disabled,
        sigma,
        inputs,
        errors,
        atr: file.atr,
        policy: file.policy,
        tenants,
    })
}

/// Whether `text` is a parlok policy file rather than a Parallax config (a
/// mapping with `policies:`, which no config has): then `Some` of its
/// `state_db`, if it names one.
pub(crate) fn bare_policy_file(text: &str) -> Option<Option<String>> {
    let value: serde_yaml::Value = serde_yaml::from_str(text).ok()?;
    let map = value.as_mapping()?;
    map.get("policies")?;
    Some(
        map.get("state_db")
            .and_then(|v| v.as_str())
            .map(str::to_string),
    )
}

/// A parlok policy file given where a config is expected (`parallax lint
/// firewall.yaml`, `Firewall.from_file`): its policies are the whole
/// program, with no rules tree beside them and default settings, except
/// that parlok's `state_db` is where approvals and the known-recipients
/// memory are kept (relative to the file's folder; without one, in
/// memory, as parlok without a state store).
fn load_bare_policy(path: &Path, state_db: Option<String>) -> ConfigSources {
    let base = path.parent().unwrap_or(Path::new("."));
    let mut errors = Vec::new();
    let mut evaluators = Vec::new();
    match policy_evaluator(path) {
        Ok(ev) => evaluators.push(ev),
        Err(e) => errors.push(e),
    }
    let state_path = match state_db.as_deref().map(str::trim) {
        Some(db) if !db.is_empty() && db != ":memory:" => base.join(db).display().to_string(),
        _ => ":memory:".to_string(),
    };
    let mut front_doors = FrontDoorSections::new();
    front_doors.insert(
        "approvals".to_string(),
        serde_json::json!({ "path": state_path }),
    );
    ConfigSources {
        path: path.to_path_buf(),
        settings: ProgramSettings {
            state: StateSettings::default(),
            front_doors,
        },
        evaluators,
        disabled: Vec::new(),
        sigma: SigmaContext::default(),
        inputs: vec![path.to_path_buf()],
        errors,
        atr: AtrConfig::default(),
        policy: PolicyConfig::default(),
        tenants: Vec::new(),
    }
}

/// The evaluator of one parlok policy file, named after it.
fn policy_evaluator(path: &Path) -> Result<EvaluatorSource, CompileError> {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_string();
    let rules = crate::policy::load_file(path, &stem)?;
    Ok(tree_evaluator(
        EngineKind::Policy,
        stem,
        None,
        path.to_path_buf(),
        rules,
    ))
}

/// The front-door sections present in `file`, as JSON (a YAML mapping with
/// a key JSON cannot hold, such as a number, is an error naming the section;
/// `server: ~` counts as absent).
fn front_door_sections(file: &ConfigFile) -> Result<FrontDoorSections, String> {
    let mut out = FrontDoorSections::new();
    for (key, value) in [
        ("server", &file.server),
        ("reporting", &file.reporting),
        ("proxy", &file.proxy),
        ("mcp", &file.mcp),
        ("approvals", &file.approvals),
        ("reload", &file.reload),
        ("telemetry", &file.telemetry),
        ("budgets", &file.budgets),
        ("store", &file.store),
    ] {
        let Some(value) = value.as_ref().filter(|v| !v.is_null()) else {
            continue;
        };
        let json = serde_json::to_value(value)
            .map_err(|e| format!("`{key}`: cannot be read as settings: {e}"))?;
        out.insert(key.to_string(), json);
    }
    // What the front doors need of the tenants: which token hashes name
    // which tenant (their overlays are compiled into the rules).
    if !file.tenants.is_empty() {
        let tokens: serde_json::Map<String, serde_json::Value> = file
            .tenants
            .iter()
            .map(|(name, t)| {
                (
                    name.clone(),
                    serde_json::json!({ "token_sha256": t.token_sha256 }),
                )
            })
            .collect();
        out.insert("tenants".to_string(), serde_json::Value::Object(tokens));
    }
    Ok(out)
}

/// One evaluator per ATR category, in category order, rules in path order.
fn atr_evaluators(mut files: Vec<AtrFile>, inputs: &mut Vec<PathBuf>) -> Vec<EvaluatorSource> {
    files.sort_by(|a, b| (&a.category, &a.path).cmp(&(&b.category, &b.path)));
    let mut out: Vec<EvaluatorSource> = Vec::new();
    for f in files {
        inputs.push(f.path.clone());
        let name = format!("atr-{}", f.category);
        if out.last().is_none_or(|e| e.name != name) {
            out.push(EvaluatorSource {
                name,
                engine: EngineKind::Atr,
                stages: None,
                enabled: true,
                // Each rule's own category (mapped from ATR's) applies.
                category: None,
                mode: RuleMode::Enforce,
                inline: false,
                path: f.path.parent().unwrap_or(&f.path).to_path_buf(),
                rules: Vec::new(),
                rule_paths: Vec::new(),
            });
        }
        if let Some(e) = out.last_mut() {
            e.rules.push(f.value);
            e.rule_paths.push(f.path);
        }
    }
    out
}

fn load_rules_file(
    path: &Path,
) -> Result<(Option<FileHeader>, Vec<serde_yaml::Value>), CompileError> {
    let text = read(path)?;
    // An empty file is an evaluator with no rules, not an error.
    if text.trim().is_empty() {
        return Ok((None, Vec::new()));
    }
    let value: serde_yaml::Value =
        serde_yaml::from_str(&text).map_err(|e| CompileError::file(path, e.to_string()))?;
    if let serde_yaml::Value::Mapping(m) = &value {
        if !m.contains_key("evaluator") || !m.contains_key("rules") {
            return Err(CompileError::file(
                path,
                "a rule file is a list of rules, or a mapping with `evaluator:` and `rules:`",
            ));
        }
    }
    match yaml::from_value::<RuleFile>(value) {
        Ok(RuleFile::List(rules)) => Ok((None, rules)),
        Ok(RuleFile::WithHeader(f)) => Ok((Some(f.evaluator), f.rules)),
        Err(_) => {
            // Untagged enums lose the real error; re-parse as the header form
            // (the list form cannot fail once the value is a sequence).
            let m = yaml::from_str::<RuleFileWithHeader>(&text)
                .err()
                .unwrap_or_default();
            Err(CompileError::file(path, m))
        }
    }
}

/// Adds one evaluator per rule file under `dir` to `out`, and every broken
/// file to `errors`.
fn load_tree(
    dir: &Path,
    inputs: &mut Vec<PathBuf>,
    out: &mut Vec<EvaluatorSource>,
    atr_files: &mut Vec<AtrFile>,
    errors: &mut Vec<CompileError>,
) {
    let entries = match sorted_entries(dir) {
        Ok(e) => e,
        Err(source) => {
            errors.push(CompileError::Io {
                path: dir.to_path_buf(),
                source,
            });
            return;
        }
    };
    for sub in entries {
        if !sub.is_dir() {
            continue;
        }
        let name = sub.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        // `catalogues/`: data the runtime bakes in itself (the package
        // lists of the typosquat check), not rules of an engine.
        if name == "catalogues" {
            continue;
        }
        let Some(engine) = EngineKind::ALL.into_iter().find(|e| e.as_str() == name) else {
            let known: Vec<&str> = EngineKind::ALL.iter().map(|e| e.as_str()).collect();
            errors.push(CompileError::file(
                &sub,
                format!(
                    "unknown engine directory `{name}` (this build supports: {})",
                    known.join(", ")
                ),
            ));
            continue;
        };
        inputs.push(sub.clone());
        if engine == EngineKind::Sigma {
            load_sigma_tree(&sub, inputs, out, errors);
            continue;
        }
        if engine == EngineKind::Atr {
            // ATR keeps its own layout: one rule per file, in category folders.
            atr_files.extend(atr::load_dir(&sub, errors));
            continue;
        }
        let files = match sorted_entries(&sub) {
            Ok(f) => f,
            Err(source) => {
                errors.push(CompileError::Io {
                    path: sub.clone(),
                    source,
                });
                continue;
            }
        };
        for file in files {
            let is_yaml = matches!(
                file.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml")
            );
            if !is_yaml || !file.is_file() {
                continue;
            }
            inputs.push(file.clone());
            if engine == EngineKind::Policy {
                match policy_evaluator(&file) {
                    Ok(ev) => out.push(ev),
                    Err(e) => errors.push(e),
                }
                continue;
            }
            match load_rules_file(&file) {
                Ok((header, rules)) => {
                    let stem = file
                        .file_stem()
                        .and_then(|s| s.to_str())
                        .unwrap_or_default()
                        .to_string();
                    out.push(tree_evaluator(engine, stem, header, file, rules));
                }
                Err(e) => errors.push(e),
            }
        }
    }
}

/// `rules/sigma/`: walked recursively; each file (one or more `---`
/// separated Sigma documents) is an evaluator named by its path below
/// `rules/sigma/`, without the extension.
fn load_sigma_tree(
    dir: &Path,
    inputs: &mut Vec<PathBuf>,
    out: &mut Vec<EvaluatorSource>,
    errors: &mut Vec<CompileError>,
) {
    let files = match crate::sigma::lint::rule_files(dir) {
        Ok(f) => f,
        Err(source) => {
            errors.push(CompileError::Io {
                path: dir.to_path_buf(),
                source,
            });
            return;
        }
    };
    for file in files {
        inputs.push(file.clone());
        if let Some(parent) = file.parent() {
            if !inputs.iter().any(|i| i == parent) {
                inputs.push(parent.to_path_buf());
            }
        }
        match load_sigma_file(&file) {
            Ok((header, rules)) => {
                let stem = file
                    .strip_prefix(dir)
                    .unwrap_or(&file)
                    .with_extension("")
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                out.push(tree_evaluator(EngineKind::Sigma, stem, header, file, rules));
            }
            Err(e) => errors.push(e),
        }
    }
}

/// The evaluator of one rules-tree file: its header's settings, else the
/// defaults (named `stem`, enabled, enforcing).
fn tree_evaluator(
    engine: EngineKind,
    stem: String,
    header: Option<FileHeader>,
    path: PathBuf,
    rules: Vec<serde_yaml::Value>,
) -> EvaluatorSource {
    let (name, stages, enabled, category, mode) = match header {
        Some(h) => (
            h.name.unwrap_or(stem),
            h.stages,
            h.enabled,
            h.category,
            h.mode,
        ),
        None => (stem, None, true, None, RuleMode::Enforce),
    };
    EvaluatorSource {
        name,
        engine,
        stages,
        enabled,
        category,
        mode,
        inline: false,
        path,
        rules,
        rule_paths: Vec::new(),
    }
}

/// The documents of a Sigma file. A first document holding only
/// `evaluator: {name, stages, category, enabled}` sets the file's evaluator, as the
/// header of other engines' files does; every other document is a rule.
fn load_sigma_file(
    path: &Path,
) -> Result<(Option<FileHeader>, Vec<serde_yaml::Value>), CompileError> {
    let text = read(path)?;
    let mut docs = crate::sigma::documents(&text).map_err(|m| CompileError::file(path, m))?;
    let is_header = docs
        .first()
        .and_then(|d| d.as_mapping())
        .is_some_and(|m| m.len() == 1 && m.contains_key("evaluator"));
    if !is_header {
        return Ok((None, docs));
    }
    let first = docs.remove(0);
    let header = first
        .get("evaluator")
        .cloned()
        .unwrap_or(serde_yaml::Value::Null);
    let header: FileHeader = yaml::from_value(header)
        .map_err(|m| CompileError::file(path, format!("evaluator header: {m}")))?;
    Ok((Some(header), docs))
}

/// Directory entries sorted by name, so the chain order never depends on
/// the file system.
fn sorted_entries(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut v = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<Vec<_>>>()?;
    v.sort();
    Ok(v)
}
