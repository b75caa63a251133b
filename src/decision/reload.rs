//! Reloading the rules in force: recompile the configured rules and swap
//! them in whole; on any error the running rules stay. The SQL side-store
//! is kept (its windows survive) and given the new SQL rules.

use super::rules_in_force::RulesInForce;
use super::DecisionService;
use crate::backend;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// Where reloads read the rules from.
#[derive(Debug, Clone)]
pub struct ReloadSource {
    pub config: Option<PathBuf>,
    pub baked_only: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    #[error("--baked-only: the rules are fixed at build time and cannot be reloaded")]
    BakedOnly,
    #[error("no config file to reload from (running on the baked config)")]
    NoConfig,
    #[error("reload is not enabled for this server")]
    Disabled,
    #[error("the new rules do not compile; the running rules are kept: {0}")]
    Compile(String),
    #[error("the side-store refused the new SQL rules; the running rules are kept: {0}")]
    Store(String),
}

/// How the last reload went, as `/health` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LastReload {
    /// `ok` or `failed`.
    pub status: &'static str,
    /// When it finished (RFC 3339, UTC).
    pub at: String,
    /// The rules in force after it (the new ones, or the kept ones).
    pub rules_fingerprint: String,
    /// Why it failed: the compiler's errors, each naming file and line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a successful reload swapped in.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Reloaded {
    pub previous_fingerprint: String,
    pub rules_fingerprint: String,
    pub backend: &'static str,
    pub evaluators: usize,
    pub rules: usize,
}

impl DecisionService {
    /// Recompiles the configured rules and swaps them in; on any error the
    /// running rules stay. Blocking (compiling takes a while): call it from
    /// a blocking thread.
    pub fn reload(&self) -> Result<Reloaded, ReloadError> {
        let result = self.try_reload();
        self.last_reload.store(Some(Arc::new(LastReload {
            status: if result.is_ok() { "ok" } else { "failed" },
            at: crate::approvals::rfc3339(crate::approvals::now()),
            rules_fingerprint: self.engine().program().fingerprint.clone(),
            error: result.as_ref().err().map(|e| e.to_string()),
        })));
        match &result {
            Ok(r) => {
                self.metrics.reloads_ok.fetch_add(1, Relaxed);
                tracing::info!(
                    fingerprint = %r.rules_fingerprint,
                    previous = %r.previous_fingerprint,
                    backend = r.backend,
                    rules = r.rules,
                    "rules reloaded"
                );
            }
            Err(e) => {
                self.metrics.reloads_failed.fetch_add(1, Relaxed);
                tracing::error!(error = %e, "reload failed; keeping the running rules");
            }
        }
        result
    }

    /// How the last reload went; `None` before the first.
    pub fn last_reload(&self) -> Option<Arc<LastReload>> {
        self.last_reload.load_full()
    }

    /// The config and every rule file and folder the rules in force were
    /// read from (what `reload.watch` watches); empty on the baked config
    /// or with `--baked-only`.
    pub fn reload_inputs(&self) -> Vec<PathBuf> {
        let Some(source) = self.reload.as_ref().filter(|s| !s.baked_only) else {
            return Vec::new();
        };
        let Some(config) = source.config.as_deref() else {
            return Vec::new();
        };
        // Read, not lowered: a rule file that does not compile is still an
        // input, and fixing it must reload.
        match parallax_compiler::config::load(config) {
            Ok(sources) => sources.inputs,
            // The config itself is unreadable: watch it, so fixing it reloads.
            Err(_) => vec![config.to_path_buf()],
        }
    }

    fn try_reload(&self) -> Result<Reloaded, ReloadError> {
        let source = self.reload.as_ref().ok_or(ReloadError::Disabled)?;
        if source.baked_only {
            return Err(ReloadError::BakedOnly);
        }
        let path = source.config.as_deref().ok_or(ReloadError::NoConfig)?;
        let loaded =
            backend::load(Some(path), false).map_err(|e| ReloadError::Compile(e.to_string()))?;
        if loaded.settings != self.settings {
            tracing::warn!(
                "settings in {} changed; only rules are reloaded, settings need a restart",
                path.display()
            );
        }
        let via = crate::settings::checks::via_problems(&self.settings, loaded.engine.program());
        if !via.is_empty() {
            return Err(ReloadError::Compile(via.join("; ")));
        }
        let previous = self.engine().program().fingerprint.clone();
        self.reload_store(loaded.engine.program())?;
        let next = RulesInForce::new(loaded.engine);
        // Readiness stays as it was: the running rules answered at full
        // speed, and these are built before they are swapped in (dynamic)
        // or on their own thread (baked).
        let verifiers = self.settings.server.prebuild == crate::settings::Prebuild::All;
        super::rules_in_force::warm_up(next.engine.clone(), verifiers, || {});
        let p = next.engine.program();
        let out = Reloaded {
            previous_fingerprint: previous,
            rules_fingerprint: p.fingerprint.clone(),
            backend: next.engine.backend().as_str(),
            evaluators: p.evaluators.len(),
            rules: p.rules.len(),
        };
        self.current.store(Arc::new(next));
        Ok(out)
    }

    /// Gives the side-store the new program's SQL rules (keeping its
    /// windows), or opens one if the rules now have SQL rules and there was
    /// none.
    fn reload_store(&self, program: &parallax_runtime::Program) -> Result<(), ReloadError> {
        match self.store.load_full() {
            Some(store) => store
                .load_rules_blocking(program)
                .map_err(|e| ReloadError::Store(e.to_string())),
            None => {
                let opened =
                    parallax_store::open_for(program, &self.settings.state, self.clock.clone())
                        .map_err(|e| ReloadError::Store(e.to_string()))?;
                self.store.store(opened.map(Arc::new));
                Ok(())
            }
        }
    }
}
