//! The HTTP API (hyper 1, HTTP/1.1): `POST /evaluate`, `GET /health`,
//! `GET /metrics` and `POST /admin/reload`.
//!
//! A front door, nothing more: it reads and checks requests and hands
//! events to the [`DecisionService`]. Every failure is a JSON
//! `{"error": {"code", "message"}}` with the status that says whose fault it
//! is; no input reaches a panic. The connection loop bounds connections
//! (`server.max_connections`, the excess answered 503 at once) and the time
//! a connection may sit idle or take to send its head
//! (`server.idle_timeout_ms`).

pub mod admin;
pub mod approval_callback;
pub mod approvals;
pub mod auth;
pub mod body;
pub mod connection_cap;
pub mod evaluate;
pub mod json_limits;
pub mod litellm;
pub mod openapi;
pub mod response;
pub mod router;
pub mod slack;

use crate::decision::DecisionService;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// How long shutdown waits for in-flight requests.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// Accepts connections on `listener` until `shutdown` resolves, then stops
/// accepting, lets in-flight requests finish (bounded by a drain timeout),
/// and flushes the audit log and webhook queue.
pub async fn serve(
    listener: TcpListener,
    service: Arc<DecisionService>,
    shutdown: impl Future<Output = ()>,
) {
    serve_doors(listener, service, router::Doors::default(), shutdown).await
}

/// [`serve`] with more front doors on the same listener (the proxy).
pub async fn serve_doors(
    listener: TcpListener,
    service: Arc<DecisionService>,
    doors: router::Doors,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    doors.dashboard.start_fleet(&service);
    if let (Some(a), Ok(addr)) = (service.approvals(), listener.local_addr()) {
        // The approvals webhook's callback URLs point here by default.
        a.set_local_addr(addr);
    }
    let server = &service.settings.server;
    let permits = Arc::new(tokio::sync::Semaphore::new(server.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        // hyper starts this clock when it waits for a request head: on
        // accept and again after each response, so it is the keep-alive
        // idle timeout as well as the bound on sending a head (the
        // shorter of the two settings).
        .header_read_timeout(Duration::from_millis(
            server.idle_timeout_ms.min(server.request_timeout_ms).max(1),
        ))
        // hyper answers 431 itself past this (it requires at least 8 KiB);
        // below it, `handle` answers with a JSON 431.
        .max_buf_size((server.max_header_bytes * 2).max(8192));
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok((stream, peer)) => {
                        // Responses go out in several writes (a streamed
                        // proxy answer event by event): without this,
                        // Nagle's algorithm holds each small write for the
                        // peer's delayed ACK, 40 ms at a time.
                        if let Err(e) = stream.set_nodelay(true) {
                            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
                        }
                        (stream, peer)
                    }
                    Err(e) => {
                        // Out of file descriptors and the like: back off
                        // instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                // At most max_connections served at once. One more is
                // told so at once (503) and closed: queueing it would make
                // every new client wait for an idle one to time out.
                let Ok(permit) = permits.clone().try_acquire_owned() else {
                    connection_cap::refuse(stream, server.max_connections);
                    continue;
                };
                let service = service.clone();
                let doors = doors.clone();
                let svc = service_fn(move |req| {
                    router::handle(req, service.clone(), doors.clone(), Some(peer))
                });
                let conn = graceful.watch(builder.serve_connection(TokioIo::new(stream), svc));
                tokio::spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                    drop(permit);
                });
            }
            _ = &mut shutdown => break,
        }
    }
    drop(listener);
    if tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("in-flight requests did not finish within {DRAIN_TIMEOUT:?}");
    }
    if let Some(a) = service.approvals() {
        a.close().await;
    }
    service.close().await;
}
