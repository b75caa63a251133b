//! The answer to a connection beyond `server.max_connections`: a 503 with
//! the JSON error body, then the connection is closed.
//!
//! Queueing excess connections (in the kernel's accept queue) made every
//! new client wait until an idle one timed out — seconds, with a thousand
//! idle keep-alive connections held. Refusing at once tells the client to
//! back off and keeps the server's memory and descriptors bounded.

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Longest a refusal may take: writing the answer, then reading what the
/// client sent so closing does not reset the connection before the client
/// reads the 503.
const REFUSAL_BUDGET: Duration = Duration::from_secs(1);

/// The whole response, for `cap` connections.
pub fn response(cap: usize) -> Vec<u8> {
    let body = serde_json::json!({
        "error": {
            "code": "too_many_connections",
            "message": format!(
                "the server already serves server.max_connections ({cap}) connections; \
                 retry shortly"
            ),
        }
    })
    .to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Answers `stream` with [`response`] and closes it, on a task of its own
/// (bounded by [`REFUSAL_BUDGET`]) so the accept loop never waits on a
/// refused client.
pub fn refuse(mut stream: TcpStream, cap: usize) {
    // Debug, not warn: a flood of refusals must not flood the log too.
    tracing::debug!(
        max_connections = cap,
        "connection refused: server.max_connections reached"
    );
    tokio::spawn(async move {
        let _ = tokio::time::timeout(REFUSAL_BUDGET, async {
            stream.write_all(&response(cap)).await?;
            stream.shutdown().await?;
            // Drain what the client sent until it closes: closing a socket
            // with unread data sends a reset, which can reach the client
            // before it has read the answer.
            let mut sink = [0u8; 4096];
            while stream.read(&mut sink).await? > 0 {}
            Ok::<(), std::io::Error>(())
        })
        .await;
    });
}
