//! `parallax serve`: load the rules, start the audit writer and webhook
//! sender, bind, serve until SIGINT/SIGTERM (graceful: in-flight requests
//! finish and every queued audit line is written), reload on SIGHUP.

use super::{fail, init_logging};
use crate::audit::AuditLog;
use crate::backend;
use crate::decision::{DecisionService, ReloadSource};
use crate::http::router::Doors;
use crate::http::{self, auth};
use crate::metrics::Metrics;
use crate::proxy::Proxy;
use crate::webhook::Webhook;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// What `serve` serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// The API (and the proxy if `proxy.enabled` says so).
    Api,
    /// The API and the model-API proxy.
    Proxy,
}

pub struct Options {
    pub config: Option<PathBuf>,
    pub host: Option<String>,
    pub port: Option<u16>,
    pub log_level: String,
    pub baked_only: bool,
    pub monitor: bool,
    pub mode: Mode,
}

pub fn run(opts: Options) -> ExitCode {
    if let Err(e) = init_logging(&opts.log_level) {
        return fail(e);
    }
    let loaded = match backend::load(opts.config.as_deref(), opts.baked_only) {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    let mut settings = loaded.settings;
    if let Some(h) = opts.host {
        settings.server.host = h;
    }
    if let Some(p) = opts.port {
        settings.server.port = p;
    }
    if let Ok(token) = std::env::var(auth::TOKEN_ENV) {
        if !token.is_empty() {
            settings.server.auth_token = Some(token);
        }
    }
    if let Some(p) = crate::settings::checks::problems(&settings).first() {
        return fail(p);
    }
    let bare_policy = loaded
        .config
        .as_deref()
        .is_some_and(parallax_compiler::is_policy_file);
    for p in crate::settings::checks::via_problems(&settings, loaded.engine.program()) {
        if !bare_policy {
            return fail(p);
        }
        // A bare policy file names no notifier settings: its held calls
        // are decided over the approvals API and the dashboard.
        tracing::warn!("{p}; decided over the approvals API and the dashboard");
    }
    settings.server.monitor |= opts.monitor;
    settings.proxy.enabled |= opts.mode == Mode::Proxy;
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return fail(format!("cannot start the async runtime: {e}")),
    };
    let config = loaded.config;
    let engine = loaded.engine;
    let load_ms = loaded.load_ms;
    runtime.block_on(async move {
        let metrics = Metrics::new();
        let state = match DecisionService::new(engine, settings.clone()) {
            Ok(s) => s,
            Err(e) => return fail(e),
        };
        state.warm_up();
        let mut state = state
            .with_metrics(metrics.clone())
            .with_reload(ReloadSource {
                config: config.clone(),
                baked_only: opts.baked_only,
            });
        if let Some(path) = &settings.reporting.log_file {
            match AuditLog::start(Path::new(path), &settings.reporting, metrics.clone()) {
                Ok(a) => state = state.with_audit(a),
                Err(e) => return fail(e),
            }
        }
        match Webhook::start(&settings.reporting, metrics.clone()) {
            Ok(Some(w)) => state = state.with_webhook(w),
            Ok(None) => {}
            Err(e) => return fail(e),
        }
        match crate::pagerduty::PagerDuty::start(&settings.reporting, metrics.clone()) {
            Ok(Some(p)) => state = state.with_pagerduty(p),
            Ok(None) => {}
            Err(e) => return fail(e),
        }
        match crate::telemetry::Telemetry::start(&settings.telemetry, metrics.clone()) {
            Ok(Some(t)) => state = state.with_telemetry(t),
            Ok(None) => {}
            Err(e) => return fail(e),
        }
        let addr = format!("{}:{}", settings.server.host, settings.server.port);
        let listener = match tokio::net::TcpListener::bind(&addr).await {
            Ok(l) => l,
            Err(e) => return fail(format!("cannot listen on {addr}: {e}")),
        };
        let local = listener.local_addr().map(|a| a.to_string()).unwrap_or(addr);
        let exposed = settings
            .server
            .host
            .parse::<IpAddr>()
            .map_or(true, |ip| !ip.is_loopback());
        if exposed && settings.server.auth_token.is_none() {
            tracing::warn!(
                address = %local,
                "!!! LISTENING BEYOND LOOPBACK WITHOUT AN AUTH TOKEN: any host that can reach \
                 this address can use the API. Set server.auth_token or {} !!!",
                auth::TOKEN_ENV
            );
        } else if exposed {
            tracing::warn!(address = %local, "listening beyond loopback (bearer token required)");
        }
        let engine = state.engine();
        let p = engine.program();
        tracing::info!(
            address = %local,
            backend = engine.backend().as_str(),
            evaluators = p.evaluators.len(),
            rules = p.rules.len(),
            fingerprint = %p.fingerprint,
            monitor = settings.server.monitor,
            auth = settings.server.auth_token.is_some(),
            audit_log = settings.reporting.log_file.as_deref().unwrap_or("-"),
            config = %config.as_ref().map_or("<baked>".to_string(), |c| c.display().to_string()),
            load_ms = format!("{:.1}", load_ms),
            "parallax listening"
        );
        let mut doors = Doors::default();
        let budgets = if settings.budgets.limits.is_empty() {
            None
        } else {
            if !settings.proxy.enabled {
                tracing::warn!(
                    "budgets.limits are set but the proxy is off: budgets apply to the model \
                     calls the proxy forwards (serve --mode proxy or proxy.enabled: true)"
                );
            }
            match crate::budgets::Budgets::open(&settings.budgets) {
                Ok(b) => {
                    metrics.add_source(b.metrics());
                    let b = Arc::new(b);
                    state = state.with_budgets(b.clone());
                    Some(b)
                }
                Err(e) => return fail(e),
            }
        };
        if settings.proxy.enabled {
            match Proxy::new(&settings.proxy).map(|p| p.with_budgets(budgets)) {
                Ok(p) => {
                    tracing::info!(
                        upstreams = %p.describe().join(", "),
                        "model-API proxy"
                    );
                    doors.proxy = Some(Arc::new(p));
                }
                Err(e) => return fail(e),
            }
        }
        let state = Arc::new(state);
        tokio::spawn(reload_on_sighup(state.clone()));
        if settings.reload.watch {
            tokio::spawn(crate::decision::watch::watch_and_reload(state.clone()));
        }
        tokio::spawn(state.clone().run_approval_expiry());
        http::serve_doors(listener, state, doors, shutdown_signal()).await;
        tracing::info!("shut down");
        ExitCode::SUCCESS
    })
}

/// SIGHUP: recompile the configured rules and swap them in.
async fn reload_on_sighup(state: Arc<DecisionService>) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let Ok(mut hup) = signal(SignalKind::hangup()) else {
            tracing::warn!("cannot listen for SIGHUP; reload with POST /admin/reload");
            return;
        };
        while hup.recv().await.is_some() {
            let s = state.clone();
            // Errors are logged (and counted) by `reload` itself.
            let _ = tokio::task::spawn_blocking(move || s.reload()).await;
        }
    }
    #[cfg(not(unix))]
    let _ = state;
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
    tracing::info!("shutting down: finishing in-flight requests, flushing the audit log");
}
