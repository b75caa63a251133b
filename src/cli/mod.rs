//! The command line: `serve`, `eval`, `lint`, `compile`, `hook`, `setup`,
//! `revert`, one module per command; this module holds the clap
//! definitions and the dispatch.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

mod compile;
mod docs;
mod eval;
mod hook;
mod init;
mod lint;
mod mcp;
mod revert;
mod serve;
mod setup;
mod test;
pub mod test_calls;

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
    /// Write a starter parallax.yaml and an example policy file
    /// (policies/tools.yaml) into DIR (default: the current folder).
    Init { dir: Option<PathBuf> },
    /// Serve the HTTP API (POST /evaluate, GET /health, GET /metrics,
    /// POST /admin/reload); SIGHUP reloads the rules.
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
        /// Monitor mode for every rule: verdicts are computed and logged
        /// (`would_block`) but the returned action is at most `detect`.
        #[arg(long)]
        monitor: bool,
        /// `proxy` also serves the model-API proxy (`/anthropic/...`,
        /// `/openai/...`) on the same listener, as `proxy.enabled: true`
        /// does; `api` (the default) serves what the config says.
        #[arg(long, value_enum, default_value = "api")]
        mode: serve::Mode,
    },
    /// Evaluate JSON events, one per line, printing one verdict per line.
    /// Audit log lines are accepted too: their `event` is evaluated and the
    /// verdict compared with the recorded one (`replay`).
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
        /// The config (or a bare parlok policy file) to check, as `-c`
        /// does: `parallax lint firewall.yaml`.
        #[arg(value_name = "FILE", conflicts_with = "config")]
        file: Option<PathBuf>,
        /// Compile every Sigma rule under DIR instead (field mappings from
        /// the config's `sigma:` section, if there is a config).
        #[arg(long, value_name = "DIR")]
        sigma: Option<PathBuf>,
    },
    /// Run every rule's own test cases, and any fixture files given
    /// (JSON lines: {"event", "action"?, "rules"?, "not_rules"?}); with
    /// --atr, an ATR corpus's own cases instead.
    Test {
        /// Config to test (with --atr: whose `atr:` section applies).
        #[arg(short, long)]
        config: Option<PathBuf>,
        /// Fixture files to run against the whole chain. Without `-c`, a
        /// first `.yaml`/`.yml` file is the config instead (a bare parlok
        /// policy file: `parallax test firewall.yaml --call '{...}'`).
        fixtures: Vec<PathBuf>,
        /// A parlok tool call to decide (JSON: `adapter`, `action`,
        /// `recipient`, `body`, `subject`, `metadata`) or a whole event
        /// (with `stage`); repeatable. Prints each decision.
        #[arg(long, value_name = "JSON")]
        call: Vec<String>,
        /// An ATR corpus (or its rules/ folder): run every rule's
        /// true_positives, true_negatives and evasion_tests.
        #[arg(long, value_name = "DIR")]
        atr: Option<PathBuf>,
        /// With --atr: list every failing case.
        #[arg(long)]
        failures: bool,
        /// With --atr: run the cases on the rules baked into this binary
        /// (built with PARALLAX_CONFIG pointing at a config that loads the
        /// corpus) instead of compiling DIR now.
        #[arg(long)]
        baked: bool,
    },
    /// Generate documentation from the rules and the code.
    Docs {
        #[command(subcommand)]
        what: DocsCommand,
    },
    /// Run as an agent's hook: the hook payload on stdin, the framework's
    /// answer on stdout (nothing when Parallax has no opinion). Asks the
    /// server; if it does not answer, decides with the built-in rules.
    Hook {
        #[arg(value_enum)]
        framework: HookFramework,
        /// The Parallax server (`POST /evaluate`); a bearer token is taken
        /// from PARALLAX_AUTH_TOKEN.
        #[arg(long, default_value = crate::hooks::client::DEFAULT_URL)]
        url: String,
        /// How long to wait for the server, in milliseconds, before
        /// deciding without it.
        #[arg(long, default_value_t = crate::hooks::client::DEFAULT_TIMEOUT_MS)]
        timeout_ms: u64,
        /// How long the server may hold the answer while a human approval
        /// is pending (`POST /evaluate?wait=`); 0: do not wait. Keep it
        /// below the hook's `timeout` (setup writes the default plus 30 s;
        /// the agents' own default is 600 s).
        #[arg(long, default_value_t = crate::hooks::client::DEFAULT_APPROVAL_WAIT_SECS)]
        approval_wait_secs: u64,
        /// When the server does not answer, deny instead of deciding with
        /// the built-in rules.
        #[arg(long)]
        fail_closed: bool,
    },
    /// Add Parallax's hooks to an agent's settings.
    Setup {
        #[command(subcommand)]
        agent: SetupAgent,
    },
    /// Remove exactly what `setup` added.
    Revert {
        #[command(subcommand)]
        agent: RevertAgent,
    },
    /// Show what the compiler makes of the rules.
    Compile {
        #[arg(short, long)]
        config: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "stats")]
        emit: Emit,
    },
    /// The MCP gateway: guard an agent's MCP servers (stdio or HTTP).
    Mcp {
        #[command(subcommand)]
        how: mcp::McpCommand,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum HookFramework {
    Claudecode,
    Codex,
}

#[derive(Debug, Subcommand)]
pub enum SetupAgent {
    /// Claude Code: hooks in a settings file of the chosen scope.
    Claudecode {
        #[arg(long, value_enum, default_value = "user")]
        scope: crate::setup::claudecode::Scope,
        #[arg(long, default_value = crate::hooks::client::DEFAULT_URL)]
        url: String,
        /// The hook denies when the server does not answer.
        #[arg(long)]
        fail_closed: bool,
        /// `command` runs `parallax hook claudecode`; `http` has Claude Code
        /// POST to the server itself (fails open when it is down).
        #[arg(long, value_enum, default_value = "command")]
        transport: crate::setup::claudecode::Transport,
        /// Instead of the hooks: start the scope's stdio MCP servers
        /// (`.mcp.json`, `~/.claude.json`) through `parallax mcp wrap`.
        #[arg(long)]
        mcp: bool,
    },
    /// Codex: hooks in $CODEX_HOME/hooks.json (~/.codex by default), or
    /// (`--mode proxy`) a model provider in $CODEX_HOME/config.toml that
    /// sends its model traffic through the proxy.
    Codex {
        #[arg(long, default_value = crate::hooks::client::DEFAULT_URL)]
        url: String,
        #[arg(long)]
        fail_closed: bool,
        #[arg(long, value_enum, default_value = "hooks")]
        mode: crate::setup::Mode,
        /// Instead of hooks or provider: start the stdio servers under
        /// `[mcp_servers]` in config.toml through `parallax mcp wrap`.
        #[arg(long, conflicts_with = "mode")]
        mcp: bool,
    },
    /// OpenClaw: the Parallax plugin in <state>/extensions/parallax,
    /// registered in $OPENCLAW_CONFIG_PATH (~/.openclaw/openclaw.json), or
    /// (`--mode proxy`) a models.providers entry through the proxy.
    Openclaw {
        #[arg(long, default_value = crate::hooks::client::DEFAULT_URL)]
        url: String,
        /// The plugin lets tool calls run (with a warning) when the server
        /// does not answer; by default it blocks them.
        #[arg(long)]
        fail_open: bool,
        /// The default (kept for scripts that pass it).
        #[arg(long, hide = true, conflicts_with = "fail_open")]
        fail_closed: bool,
        #[arg(long, value_enum, default_value = "plugin")]
        mode: crate::setup::openclaw_proxy::OpenclawMode,
        /// `--mode proxy`: the API OpenClaw speaks to the proxy.
        #[arg(long, value_enum, default_value = "anthropic-messages")]
        api: crate::setup::openclaw_proxy::Api,
        /// `--mode proxy`: the model id (selected as `parallax/<model>`).
        #[arg(long, required_if_eq("mode", "proxy"))]
        model: Option<String>,
        /// `--mode proxy`: the environment variable holding the API key
        /// (default ANTHROPIC_API_KEY or OPENAI_API_KEY, by --api).
        #[arg(long)]
        key_env: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum RevertAgent {
    Claudecode {
        #[arg(long, value_enum, default_value = "user")]
        scope: crate::setup::claudecode::Scope,
    },
    Codex,
    Openclaw,
}

#[derive(Debug, Subcommand)]
pub enum DocsCommand {
    /// The rules catalogue (docs/RULES.md): one table per category.
    Rules {
        #[arg(short, long)]
        config: Option<PathBuf>,
    },
    /// The HTTP API's contract (docs/openapi.json): an OpenAPI 3.1 document.
    Api,
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
            monitor,
            mode,
        } => serve::run(serve::Options {
            config,
            host,
            port,
            log_level,
            baked_only,
            monitor,
            mode,
        }),
        Command::Eval {
            config,
            file,
            baked_only,
        } => eval::run(config, file, baked_only),
        Command::Lint {
            config,
            file,
            sigma,
        } => match sigma {
            Some(dir) => lint::run_sigma(config.or(file), &dir),
            None => lint::run(config.or(file)),
        },
        Command::Compile { config, emit } => compile::run(config, emit),
        Command::Init { dir } => init::run(dir),
        Command::Hook {
            framework,
            url,
            timeout_ms,
            approval_wait_secs,
            fail_closed,
        } => {
            let framework = match framework {
                HookFramework::Claudecode => crate::hooks::Framework::ClaudeCode,
                HookFramework::Codex => crate::hooks::Framework::Codex,
            };
            hook::run(framework, url, timeout_ms, approval_wait_secs, fail_closed)
        }
        Command::Setup {
            agent:
                SetupAgent::Claudecode {
                    scope,
                    url,
                    fail_closed,
                    transport,
                    mcp,
                },
        } => setup::claudecode(scope, url, fail_closed, transport, mcp),
        Command::Setup {
            agent:
                SetupAgent::Codex {
                    url,
                    fail_closed,
                    mode,
                    mcp,
                },
        } => setup::codex(url, fail_closed, mode, mcp),
        Command::Setup {
            agent:
                SetupAgent::Openclaw {
                    url,
                    fail_open,
                    fail_closed: _,
                    mode,
                    api,
                    model,
                    key_env,
                },
        } => setup::openclaw(url, fail_open, mode, api, model, key_env),
        Command::Revert {
            agent: RevertAgent::Claudecode { scope },
        } => revert::claudecode(scope),
        Command::Revert {
            agent: RevertAgent::Codex,
        } => revert::codex(),
        Command::Revert {
            agent: RevertAgent::Openclaw,
        } => revert::openclaw(),
        Command::Mcp { how } => mcp::run(how),
        Command::Test {
            config,
            fixtures,
            atr: Some(dir),
            failures,
            baked,
            call,
        } => {
            if !fixtures.is_empty() {
                return fail("fixture files and --atr are separate runs; give one or the other");
            }
            if !call.is_empty() {
                return fail("--call and --atr are separate runs; give one or the other");
            }
            test::run_atr(dir, config, failures, baked)
        }
        Command::Test {
            config,
            mut fixtures,
            call,
            ..
        } => {
            let config = config.or_else(|| {
                let first = fixtures.first()?;
                let yaml = first.extension().is_some_and(|e| e == "yaml" || e == "yml");
                yaml.then(|| fixtures.remove(0))
            });
            if call.is_empty() {
                test::run(config, fixtures)
            } else {
                test_calls::run(config, fixtures, call)
            }
        }
        Command::Docs {
            what: DocsCommand::Rules { config },
        } => docs::run(config),
        Command::Docs {
            what: DocsCommand::Api,
        } => docs::run_api(),
    }
}

/// The config a command that needs one works on: `-c PATH`, else
/// `./parallax.yaml`; `verb` names the command in the error.
pub(crate) fn required_config(
    config: Option<&std::path::Path>,
    verb: &str,
) -> Result<std::path::PathBuf, String> {
    match crate::backend::config_path(config) {
        Ok(Some(p)) => Ok(p),
        Ok(None) => Err(format!(
            "no config to {verb}: pass -c PATH or run where {} is",
            crate::backend::DEFAULT_CONFIG
        )),
        Err(e) => Err(e.to_string()),
    }
}

pub(crate) fn fail(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("parallax: {e}");
    ExitCode::FAILURE
}

pub(crate) fn init_logging(filter: &str) -> Result<(), String> {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .map_err(|e| format!("invalid --log-level `{filter}`: {e}"))?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init()
        .map_err(|e| e.to_string())
}
