//! `parallax serve`: load the rules, bind, serve until SIGINT/SIGTERM.

use super::{fail, init_logging};
use crate::loader;
use crate::server::{self, AppState};
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

pub fn run(
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
        let state = match AppState::new(loaded.engine, settings) {
            Ok(s) => Arc::new(s),
            Err(e) => return fail(e),
        };
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
