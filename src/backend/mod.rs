//! Choosing the backend (and reading the settings that come with it): the baked rules when the configured rules are the
//! ones baked in, the dynamic backend (same compiler, at start-up) when they
//! differ.
//!
//! First the source files are digested (read and hashed, nothing lowered)
//! and compared with the digest baked at build time: equal, the baked
//! program is used as is. Otherwise the rules are lowered and the
//! fingerprints of the canonical rule IR decide — lowering compiles every
//! pattern and SQL rule once to check it, which is what made a baked
//! binary's start slow when it was the only test.

pub mod baked;
use crate::settings::Settings;
use parallax_compiler::{CompileErrors, Limits, RuleSet};
use parallax_runtime::{Engine, ProgramSettings};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The config file looked for in the working directory when none is given.
pub const DEFAULT_CONFIG: &str = "parallax.yaml";

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{0}")]
    Compile(#[from] CompileErrors),
    #[error(transparent)]
    Baked(#[from] baked::BakedError),
    #[error(transparent)]
    Engine(#[from] parallax_runtime::EngineError),
    #[error(
        "the rules in {path} (fingerprint {config}) differ from the rules baked into this binary \
         ({baked}); --baked-only refuses to compile them at start-up. Rebuild with \
         PARALLAX_CONFIG={path} or drop --baked-only"
    )]
    NotBaked {
        path: String,
        config: String,
        baked: String,
    },
    #[error("config file {0} does not exist")]
    Missing(PathBuf),
    #[error("invalid settings in {path}:\n  {}", problems.join("\n  "))]
    Settings { path: String, problems: Vec<String> },
}

/// The settings `program` carries, parsed and checked: every problem
/// listed, naming the key.
fn settings_of(program: &ProgramSettings, path: Option<&Path>) -> Result<Settings, LoadError> {
    crate::settings::read(program).map_err(|problems| LoadError::Settings {
        path: path.map_or("<baked config>".into(), |p| p.display().to_string()),
        problems,
    })
}

/// A ready engine and where it came from.
pub struct Loaded {
    pub engine: Engine,
    pub settings: Settings,
    /// The config read, if any (none: the binary's baked config).
    pub config: Option<PathBuf>,
    pub load_ms: f64,
}

/// Resolves the config path: the one given, else `./parallax.yaml` if it
/// exists, else none (run on the baked rules and settings).
pub fn config_path(given: Option<&Path>) -> Result<Option<PathBuf>, LoadError> {
    match given {
        Some(p) if p.is_file() => Ok(Some(p.to_path_buf())),
        Some(p) => Err(LoadError::Missing(p.to_path_buf())),
        None => {
            let p = PathBuf::from(DEFAULT_CONFIG);
            Ok(p.is_file().then_some(p))
        }
    }
}

/// Loads the engine for `config` (see [`config_path`]).
pub fn load(config: Option<&Path>, baked_only: bool) -> Result<Loaded, LoadError> {
    let started = Instant::now();
    let Some(path) = config_path(config)? else {
        let engine = baked::engine()?;
        let settings = settings_of(&engine.program().settings, None)?;
        return Ok(Loaded {
            engine,
            settings,
            config: None,
            load_ms: started.elapsed().as_secs_f64() * 1000.0,
        });
    };
    if parallax_compiler::source_digest::of_config(&path)
        .is_ok_and(|d| !baked::SOURCE_DIGEST.is_empty() && d == baked::SOURCE_DIGEST)
    {
        let engine = baked::engine()?;
        let settings = settings_of(&engine.program().settings, Some(&path))?;
        return Ok(Loaded {
            engine,
            settings,
            config: Some(path),
            load_ms: started.elapsed().as_secs_f64() * 1000.0,
        });
    }
    let rules = parallax_compiler::load(&path)?;
    let settings = settings_of(&rules.settings, Some(&path))?;
    let engine = engine_for(&rules, baked_only, &path)?;
    Ok(Loaded {
        engine,
        settings,
        config: Some(path),
        load_ms: started.elapsed().as_secs_f64() * 1000.0,
    })
}

/// The baked engine if `rules` are the baked rules, else a dynamic one.
pub fn engine_for(rules: &RuleSet, baked_only: bool, path: &Path) -> Result<Engine, LoadError> {
    let fingerprint = rules.fingerprint();
    if fingerprint == baked::FINGERPRINT {
        return Ok(baked::engine()?);
    }
    if baked_only {
        return Err(LoadError::NotBaked {
            path: path.display().to_string(),
            config: fingerprint,
            baked: baked::FINGERPRINT.to_string(),
        });
    }
    tracing::info!(
        config = %path.display(),
        "rules differ from the baked ones; compiling them at start-up (dynamic backend)"
    );
    let engine = parallax_compiler::plan::compile(rules, &Limits::default()).into_engine()?;
    // Scanners are otherwise built on first use; rules compiled here (at
    // start-up or on reload) are built whole now, so a part that cannot be
    // built refuses the load — the running rules stay on reload — instead
    // of failing closed later on the request that needs it.
    engine.build_all()?;
    Ok(engine)
}

/// Always the dynamic backend, whatever the fingerprint (for differential
/// tests and benchmarks).
pub fn dynamic_engine(path: &Path) -> Result<Engine, LoadError> {
    Ok(parallax_compiler::compile_file(path)?.into_engine()?)
}
