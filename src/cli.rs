//! The command line: `serve`, `eval`, `lint`, `compile`.

use crate::loader::{self, LoadError};
use crate::server::{self, AppState};
use clap::{Parser, Subcommand, ValueEnum};
use parallax_runtime::{Event, EventError};
use std::io::{BufRead, Write};
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

#[derive(Debug, Parser)]
#[command(
    name = "parallax",
    version,
    about = "Runtime security engine for AI agents"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the HTTP API (POST /evaluate, GET /health).
    Serve {
        /// Config file (default: ./parallax.yaml, else the baked config).
        #[arg(short, long)]
        config: Option<PathBuf>,
        /// Address to bind (overrides server.host).
        #[arg(long)]
        host: Option<String>,
        /// Port to bind (overrides server.port).
        #[arg(long)]
        port: Option<u16>,
        /// Log filter, e.g. `info` or `parallax=debug`.
        #[arg(long, default_value = "info")]
        log_level: String,
        /// Refuse to start unless the configured rules are the baked ones.
        #[arg(long)]
        baked_only: bool,
    },
    /// Evaluate JSON events, one per line, printing one verdict per line.
    Eval {
        #[arg(short, long)]
        config: Option<PathBuf>,
        /// Input file; `-` or nothing for standard input.
        file: Option<PathBuf>,
        #[arg(long)]
        baked_only: bool,
    },
    /// Check the configuration and rules; non-zero exit on any error.
    Lint {
        #[arg(short, long)]
        config: Option<PathBuf>,
    },
    /// Show what the compiler makes of the rules.
    Compile {
        #[arg(short, long)]
        config: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "stats")]
        emit: Emit,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Emit {
    /// The generated Rust module (predicates and embedded automata).
    Rust,
    /// Automata sizes, rules per engine and field, each rule's DFA cost.
    Stats,
    /// The compiled program as JSON.
    Program,
}

pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Serve {
            config,
            host,
            port,
            log_level,
            baked_only,
        } => serve(config, host, port, &log_level, baked_only),
        Command::Eval {
            config,
            file,
            baked_only,
        } => eval(config, file, baked_only),
        Command::Lint { config } => lint(config),
        Command::Compile { config, emit } => compile(config, emit),
    }
}

fn fail(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("parallax: {e}");
    ExitCode::FAILURE
}

fn init_logging(filter: &str) -> Result<(), String> {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .map_err(|e| format!("invalid --log-level `{filter}`: {e}"))?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init()
        .map_err(|e| e.to_string())
}

fn serve(
    config: Option<PathBuf>,
    host: Option<String>,
    port: Option<u16>,
    log_level: &str,
    baked_only: bool,
) -> ExitCode {
    if let Err(e) = init_logging(log_level) {
        return fail(e);
    }
    let loaded = match loader::load(config.as_deref(), baked_only) {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    let mut settings = loaded.settings;
    if let Some(h) = host {
        settings.server.host = h;
    }
    if let Some(p) = port {
        settings.server.port = p;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return fail(format!("cannot start the async runtime: {e}")),
    };
    runtime.block_on(async move {
        let addr = format!("{}:{}", settings.server.host, settings.server.port);
        let listener = match tokio::net::TcpListener::bind(&addr).await {
            Ok(l) => l,
            Err(e) => return fail(format!("cannot listen on {addr}: {e}")),
        };
        let local = listener.local_addr().map(|a| a.to_string()).unwrap_or(addr);
        if settings
            .server
            .host
            .parse::<IpAddr>()
            .map_or(true, |ip| !ip.is_loopback())
        {
            tracing::warn!(
                address = %local,
                "listening beyond loopback: any host that can reach this address can use the API"
            );
        }
        let p = loaded.engine.program();
        tracing::info!(
            address = %local,
            backend = loaded.engine.backend().as_str(),
            evaluators = p.evaluators.len(),
            rules = p.rules.len(),
            fingerprint = %p.fingerprint,
            config = %loaded.config.as_ref().map_or("<baked>".to_string(), |c| c.display().to_string()),
            load_ms = format!("{:.1}", loaded.load_ms),
            "parallax listening"
        );
        let state = Arc::new(AppState::new(loaded.engine, settings));
        server::serve(listener, state, shutdown_signal()).await;
        tracing::info!("shut down");
        ExitCode::SUCCESS
    })
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn eval(config: Option<PathBuf>, file: Option<PathBuf>, baked_only: bool) -> ExitCode {
    let loaded = match loader::load(config.as_deref(), baked_only) {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    let state = AppState::new(loaded.engine, loaded.settings);
    let input: Box<dyn BufRead> = match file.as_deref() {
        None => Box::new(std::io::stdin().lock()),
        Some(p) if p.as_os_str() == "-" => Box::new(std::io::stdin().lock()),
        Some(p) => match std::fs::File::open(p) {
            Ok(f) => Box::new(std::io::BufReader::new(f)),
            Err(e) => return fail(format!("cannot read {}: {e}", p.display())),
        },
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut bad = 0usize;
    for (n, line) in input.lines().enumerate() {
        let line_no = n + 1;
        let line = match line {
            Ok(l) => l,
            Err(e) => return fail(format!("line {line_no}: cannot read: {e}")),
        };
        if line.trim().is_empty() {
            continue;
        }
        let started = Instant::now();
        let written = match Event::from_slice(line.as_bytes()) {
            Ok(event) => {
                let report = state.evaluate(event, started);
                serde_json::to_string(&report).map_err(|e| e.to_string())
            }
            Err(e) => {
                bad += 1;
                let code = if matches!(e, EventError::Json(_)) {
                    "malformed_json"
                } else {
                    "invalid_event"
                };
                eprintln!("parallax: line {line_no}: {e}");
                Ok(serde_json::json!({
                    "error": {"code": code, "message": e.to_string(), "line": line_no}
                })
                .to_string())
            }
        };
        let text = match written {
            Ok(t) => t,
            Err(e) => return fail(format!("line {line_no}: {e}")),
        };
        if writeln!(out, "{text}").is_err() {
            // The reader went away (e.g. `| head`): stop quietly.
            return ExitCode::SUCCESS;
        }
    }
    if out.flush().is_err() {
        return ExitCode::SUCCESS;
    }
    if bad > 0 {
        eprintln!("parallax: {bad} malformed line(s)");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

fn lint(config: Option<PathBuf>) -> ExitCode {
    let path = match loader::config_path(config.as_deref()) {
        Ok(Some(p)) => p,
        Ok(None) => {
            return fail(format!(
                "no config to lint: pass -c PATH or run where {} is",
                loader::DEFAULT_CONFIG
            ))
        }
        Err(e) => return fail(e),
    };
    let rules = match parallax_compiler::load(&path) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            eprintln!("parallax: {} error(s) in {}", e.0.len(), path.display());
            return ExitCode::FAILURE;
        }
    };
    let compiled = parallax_compiler::plan::compile(&rules, &parallax_compiler::Limits::default());
    println!("{}", path.display());
    for ev in &rules.evaluators {
        println!(
            "  {:<28} {:<8} {:>4} rules  stages {}  ({})",
            ev.name,
            ev.engine.as_str(),
            ev.rules.len(),
            ev.stages,
            ev.source.display()
        );
    }
    for ev in &rules.disabled {
        println!(
            "  {:<28} {:<8} {:>4} rules  disabled  ({})",
            ev.name,
            ev.engine.as_str(),
            ev.rules.len(),
            ev.source.display()
        );
    }
    let baked = if compiled.program.fingerprint == crate::baked::FINGERPRINT {
        "identical to the baked rules"
    } else {
        "differs from the baked rules: serve would compile them at start-up"
    };
    println!(
        "ok: {} rules in {} evaluators compiled ({} DFA shards, {:.1} ms); fingerprint {} {}",
        rules.rule_count(),
        rules.evaluators.len(),
        compiled.dfas.iter().map(Vec::len).sum::<usize>(),
        compiled.stats.build_ms,
        compiled.program.fingerprint,
        baked
    );
    ExitCode::SUCCESS
}

fn compile(config: Option<PathBuf>, emit: Emit) -> ExitCode {
    let path = match loader::config_path(config.as_deref()) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let text = match path {
        None => match emit {
            Emit::Rust => crate::baked::RUST_SOURCE.to_string(),
            Emit::Stats => crate::baked::STATS.to_string(),
            Emit::Program => match crate::baked::program() {
                Ok(p) => serde_json::to_string_pretty(&p).unwrap_or_default(),
                Err(e) => return fail(e),
            },
        },
        Some(p) => {
            let compiled = match parallax_compiler::compile_file(&p) {
                Ok(c) => c,
                Err(e) => return fail(LoadError::from(e)),
            };
            match emit {
                Emit::Rust => parallax_compiler::codegen::generate_rust(&compiled),
                Emit::Stats => compiled.stats.to_string(),
                Emit::Program => {
                    serde_json::to_string_pretty(&compiled.program).unwrap_or_default()
                }
            }
        }
    };
    print!("{text}");
    ExitCode::SUCCESS
}
