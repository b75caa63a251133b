//! `parallax lint --sigma DIR`: compile every Sigma rule under a folder (a
//! SigmaHQ checkout, an organisation's rule repository) without a config
//! that runs them, and say which fail and why.

use super::mapping::SigmaContext;
use crate::error::CompileError;
use crate::ir::{AtomTable, IrEvaluator, IrRule, RuleSet};
use crate::stages::default_stages;
use parallax_runtime::{EngineKind, ProgramSettings, StageSet};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The outcome of compiling a folder of Sigma rules.
pub struct DirReport {
    pub files: usize,
    pub compiled: usize,
    pub failures: Vec<CompileError>,
    /// Unmapped field name → number of rules using it.
    pub unmapped: BTreeMap<String, usize>,
    /// Rules that compile but hold for every event.
    pub always_true: Vec<String>,
    /// Every rule that compiled, as one rule set (for planning).
    pub rules: RuleSet,
    pub elapsed_ms: f64,
}

/// Every `*.yml`/`*.yaml` file under `dir`, sorted, recursively.
pub fn rule_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)? {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else if matches!(p.extension().and_then(|e| e.to_str()), Some("yml" | "yaml")) {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Compiles every rule under `dir`; a failure is reported, never fatal.
pub fn lint_dir(dir: &Path, ctx: &SigmaContext) -> Result<DirReport, CompileError> {
    let started = Instant::now();
    let files = rule_files(dir).map_err(|source| CompileError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut table = AtomTable::default();
    let mut failures = Vec::new();
    let mut unmapped: BTreeMap<String, usize> = BTreeMap::new();
    let mut always_true = Vec::new();
    let mut rules = Vec::new();
    let stages = StageSet::of(&default_stages(EngineKind::Sigma));
    for file in &files {
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(source) => {
                failures.push(CompileError::Io {
                    path: file.clone(),
                    source,
                });
                continue;
            }
        };
        let docs = match super::documents(&text) {
            Ok(d) => d,
            Err(m) => {
                failures.push(CompileError::file(file, m));
                continue;
            }
        };
        for doc in docs {
            let label = doc
                .get("id")
                .or_else(|| doc.get("title"))
                .and_then(|v| v.as_str())
                .unwrap_or("<no id>")
                .to_string();
            match super::lower(doc, ctx, &mut table) {
                Ok(l) => {
                    for f in &l.unmapped {
                        *unmapped.entry(f.clone()).or_default() += 1;
                    }
                    if l.predicate == parallax_runtime::Predicate::Const(true) {
                        always_true.push(format!("{}: rule `{}`", file.display(), l.common.id));
                    }
                    let c = l.common;
                    rules.push(IrRule {
                        title: c.title.unwrap_or_else(|| c.id.clone()),
                        id: c.id,
                        description: c.description,
                        action: c.action,
                        priority: c.priority,
                        stages: c.stages.map_or(stages, |s| StageSet::of(&s)),
                        reason: None,
                        category: c.category.or_else(|| l.tag_category.map(str::to_string)),
                        false_positives: c.false_positives,
                        tests: c.tests,
                        predicate: l.predicate,
                        author: l.author,
                        sql: None,
                        monitor: c.mode == Some(crate::source::RuleMode::Monitor),
                        approval: c.approval,
                        transforms: Vec::new(),
                        locked: false,
                        tenant: None,
                    });
                }
                Err(m) => failures.push(CompileError::rule(file, label, m)),
            }
        }
    }
    let compiled = rules.len();
    let rules = RuleSet {
        config_path: dir.to_path_buf(),
        settings: ProgramSettings::default(),
        evaluators: vec![IrEvaluator {
            name: "sigma".into(),
            engine: EngineKind::Sigma,
            stages,
            source: dir.to_path_buf(),
            inline: false,
            rules,
        }],
        disabled: Vec::new(),
        fields: table.fields,
        atoms: table.atoms,
        cel: table.cel,
        checks: table.checks,
        inputs: vec![dir.to_path_buf()],
        warnings: Vec::new(),
        excluded: Vec::new(),
        unsupported: Vec::new(),
    };
    Ok(DirReport {
        files: files.len(),
        compiled,
        failures,
        unmapped,
        always_true,
        rules,
        elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
    })
}
