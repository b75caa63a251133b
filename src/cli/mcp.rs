//! `parallax mcp wrap` and `parallax mcp proxy`: the MCP gateway's two
//! transports (docs/MCP.md).

use super::{fail, init_logging};
use crate::audit::AuditLog;
use crate::backend;
use crate::decision::DecisionService;
use crate::mcp::gate::Gate;
use crate::mcp::http::McpProxy;
use crate::mcp::stdio;
use clap::Subcommand;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Run a stdio MCP server behind Parallax: the agent starts this
    /// command instead of the server, and Parallax starts the server.
    Wrap {
        /// The server's name in tool names (`mcp__NAME__tool`); by default
        /// the name the server gives itself.
        #[arg(long)]
        name: Option<String>,
        /// Config file (default: ./parallax.yaml, else the baked config).
        #[arg(short, long)]
        config: Option<PathBuf>,
        /// Log filter for Parallax's own lines on stderr.
        #[arg(long, default_value = "warn")]
        log_level: String,
        /// The server's command and its arguments (after `--`).
        #[arg(last = true, required = true, value_name = "COMMAND")]
        command: Vec<OsString>,
    },
    /// Serve a Streamable HTTP MCP endpoint in front of URL.
    Proxy {
        /// The MCP server's endpoint, e.g. http://127.0.0.1:8000/mcp.
        #[arg(long)]
        upstream: String,
        /// Port to listen on (loopback).
        #[arg(long, default_value_t = 9930)]
        port: u16,
        /// The server's name in tool names (`mcp__NAME__tool`).
        #[arg(long)]
        name: Option<String>,
        #[arg(short, long)]
        config: Option<PathBuf>,
        #[arg(long, default_value = "info")]
        log_level: String,
    },
}

pub fn run(how: McpCommand) -> ExitCode {
    match how {
        McpCommand::Wrap {
            name,
            config,
            log_level,
            command,
        } => wrap(name, config, &log_level, command),
        McpCommand::Proxy {
            upstream,
            port,
            name,
            config,
            log_level,
        } => proxy(upstream, port, name, config, &log_level),
    }
}

fn service(config: Option<PathBuf>) -> Result<Arc<DecisionService>, String> {
    let loaded = backend::load(config.as_deref(), false).map_err(|e| e.to_string())?;
    let mut settings = loaded.settings;
    // As for `serve`: the environment overrides server.auth_token (the
    // HTTP proxy requires it; `wrap` has no listener to guard).
    if let Ok(token) = std::env::var(crate::http::auth::TOKEN_ENV) {
        if !token.is_empty() {
            settings.server.auth_token = Some(token);
        }
    }
    let mut service =
        DecisionService::new(loaded.engine, settings.clone()).map_err(|e| e.to_string())?;
    // The gateway's decisions (door `mcp`) and its own refusals go to the
    // audit log as `serve`'s do; several wrapped servers may share one file
    // (each line is one append).
    if let Some(path) = &settings.reporting.log_file {
        let audit = AuditLog::start(
            std::path::Path::new(path),
            &settings.reporting,
            crate::metrics::Metrics::new(),
        )
        .map_err(|e| e.to_string())?;
        service = service.with_audit(audit);
    }
    Ok(Arc::new(service))
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}

fn wrap(
    name: Option<String>,
    config: Option<PathBuf>,
    log_level: &str,
    command: Vec<OsString>,
) -> ExitCode {
    if let Err(e) = init_logging(log_level) {
        return fail(e);
    }
    let service = match service(config) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail(e),
    };
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let session = format!("mcp-{}-{nanos:x}", std::process::id());
    let result = rt.block_on(async {
        let child = stdio::spawn(&command).map_err(|e| {
            format!(
                "cannot start the MCP server `{}`: {e}",
                command
                    .first()
                    .map(|c| c.to_string_lossy().into_owned())
                    .unwrap_or_default()
            )
        })?;
        let gate = Arc::new(Gate::new(service.clone(), session, name.as_deref()));
        let status = stdio::run(gate, child)
            .await
            .map_err(|e| format!("the MCP relay failed: {e}"));
        // What was decided reaches the audit log before the process ends.
        service.close().await;
        status
    });
    // Reading stdin happens on a blocking thread that cannot be cancelled:
    // do not wait for it.
    rt.shutdown_background();
    match result {
        Ok(status) => ExitCode::from(stdio::exit_code(status)),
        Err(e) => fail(e),
    }
}

fn proxy(
    upstream: String,
    port: u16,
    name: Option<String>,
    config: Option<PathBuf>,
    log_level: &str,
) -> ExitCode {
    if let Err(e) = init_logging(log_level) {
        return fail(e);
    }
    let endpoint: hyper::Uri = match upstream.parse() {
        Ok(u) => u,
        Err(e) => return fail(format!("--upstream `{upstream}` is not a URL: {e}")),
    };
    if let Err(e) = crate::proxy::upstream::parse_base(&format!(
        "{}://{}",
        endpoint.scheme_str().unwrap_or(""),
        endpoint.authority().map(|a| a.as_str()).unwrap_or("")
    )) {
        return fail(format!("--upstream: {e}"));
    }
    let service = match service(config) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail(e),
    };
    let result: Result<(), String> = rt.block_on(async {
        let proxy = McpProxy::new(service.clone(), endpoint, name)?;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        tracing::info!(%addr, upstream = %upstream, "MCP proxy listening");
        eprintln!(
            "parallax mcp proxy: listening on http://{addr}, upstream {upstream}{}",
            if proxy.requires_token() {
                " (X-Parallax-Token required)"
            } else {
                ""
            }
        );
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .map_err(|e| format!("cannot listen for SIGTERM: {e}"))?;
        tokio::select! {
            _ = crate::mcp::http::serve(listener, Arc::new(proxy)) => {}
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
        // What was decided reaches the audit log before the process ends.
        service.close().await;
        Ok(())
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(e),
    }
}
