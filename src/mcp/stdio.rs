//! `parallax mcp wrap -- COMMAND ARGS...`: the MCP client starts this
//! instead of the server; the real server runs as a child, and every
//! newline-delimited JSON-RPC message between them goes through the gate.
//!
//! - stdin (the client) → gate → the child's stdin; answers for refused
//!   calls and malformed messages go back on stdout;
//! - the child's stdout → gate → stdout; answers for the child's malformed
//!   messages go back to its stdin;
//! - the child's stderr is the wrapper's stderr (inherited, untouched).
//!
//! The child runs in a process group of its own; SIGINT, SIGTERM, SIGHUP
//! and SIGQUIT are passed on to that group, the wrapper exits with the
//! child's status (128 + the signal when a signal ended it), and the group
//! is killed when the wrapper ends. On Linux the child also gets SIGKILL
//! if the wrapper dies without a chance to clean up (`PR_SET_PDEATHSIG`).

use super::gate::{Gate, Inflight};
use super::jsonrpc::{self, Line, INVALID_REQUEST};
use super::relay::{relay, Forward, Side};
use std::ffi::OsString;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

/// Messages waiting for a writer, per direction (back-pressure beyond).
const QUEUE: usize = 64;
/// How long the child's last output may take to drain after it exits.
const DRAIN: Duration = Duration::from_secs(2);

/// Starts `command` as the child.
pub fn spawn(command: &[OsString]) -> std::io::Result<Child> {
    let (program, args) = command.split_first().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "no server command given")
    })?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .kill_on_drop(true);
    #[cfg(target_os = "linux")]
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork
    // and exec here.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn()
}

/// Sends `signal` to the child's process group (ignored when it is gone).
fn signal_group(pgid: Option<u32>, signal: i32) {
    if let Some(pid) = pgid.and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: killpg only sends a signal.
        unsafe {
            libc::killpg(pid, signal);
        }
    }
}

/// The exit code the wrapper ends with for the child's `status`.
pub fn exit_code(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => u8::try_from(c & 0xff).unwrap_or(1),
        (None, Some(s)) => u8::try_from((128 + s) & 0xff).unwrap_or(1),
        _ => 1,
    }
}

/// The four tasks of a relay between a client's and a server's line
/// streams: one reader through the gate and one writer per direction.
pub struct Relay {
    pub from_client: tokio::task::JoinHandle<()>,
    pub from_server: tokio::task::JoinHandle<()>,
    pub client_writer: tokio::task::JoinHandle<()>,
    pub server_writer: tokio::task::JoinHandle<()>,
}

/// Starts relaying: lines from `client_in` through the gate to `server_in`,
/// lines from `server_out` through the gate to `client_out`, each side's
/// refused or malformed messages answered back to it. [`run`] uses it with
/// stdin/stdout and the child's pipes; the stdio bench with in-memory
/// pipes, so it measures exactly this code.
pub fn relay_streams<CI, CO, SI, SO>(
    gate: Arc<Gate>,
    client_in: CI,
    client_out: CO,
    server_in: SI,
    server_out: SO,
) -> Relay
where
    CI: tokio::io::AsyncRead + Unpin + Send + 'static,
    CO: AsyncWrite + Unpin + Send + 'static,
    SI: AsyncWrite + Unpin + Send + 'static,
    SO: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    let limit = gate.service().settings.mcp.max_message_bytes;
    let inflight = Arc::new(Inflight::default());
    let (to_client, client_rx) = mpsc::channel::<Vec<u8>>(QUEUE);
    let (to_server, server_rx) = mpsc::channel::<Vec<u8>>(QUEUE);

    let client_writer = tokio::spawn(write_lines(client_out, client_rx));
    let server_writer = tokio::spawn(write_lines(server_in, server_rx));
    let from_client = tokio::spawn(pump(
        gate.clone(),
        Side::Client,
        BufReader::new(client_in),
        inflight.clone(),
        limit,
        to_server.clone(),
        to_client.downgrade(),
    ));
    let from_server = tokio::spawn(pump(
        gate,
        Side::Server,
        BufReader::new(server_out),
        inflight,
        limit,
        to_client,
        to_server.downgrade(),
    ));
    // `to_server` ends here, so only the client's pump holds the server's
    // stdin open: when the client closes its end, the server's stdin
    // closes too (MCP's stdio shutdown).
    drop(to_server);
    Relay {
        from_client,
        from_server,
        client_writer,
        server_writer,
    }
}

/// Runs the relay until the child exits; returns its exit status.
pub async fn run(gate: Arc<Gate>, mut child: Child) -> std::io::Result<ExitStatus> {
    let pgid = child.id();
    let (Some(child_in), Some(child_out)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(std::io::Error::other("the child's pipes are missing"));
    };
    let Relay {
        from_client,
        from_server,
        client_writer,
        server_writer,
    } = relay_streams(
        gate,
        tokio::io::stdin(),
        tokio::io::stdout(),
        child_in,
        child_out,
    );

    let status = wait_forwarding_signals(&mut child, pgid).await;
    // The child is gone: its last lines drain, then the writers finish.
    let _ = tokio::time::timeout(DRAIN, from_server).await;
    from_client.abort();
    let _ = tokio::time::timeout(DRAIN, client_writer).await;
    server_writer.abort();
    // Nothing the child started outlives the wrapper.
    signal_group(pgid, libc::SIGKILL);
    status
}

async fn wait_forwarding_signals(
    child: &mut Child,
    pgid: Option<u32>,
) -> std::io::Result<ExitStatus> {
    use tokio::signal::unix::{signal, SignalKind};
    let kinds = [
        (SignalKind::interrupt(), libc::SIGINT),
        (SignalKind::terminate(), libc::SIGTERM),
        (SignalKind::hangup(), libc::SIGHUP),
        (SignalKind::quit(), libc::SIGQUIT),
    ];
    let mut streams = Vec::new();
    for (kind, number) in kinds {
        streams.push((signal(kind)?, number));
    }
    let (tx, mut rx) = mpsc::unbounded_channel::<i32>();
    let mut tasks = Vec::new();
    for (mut stream, number) in streams {
        let tx = tx.clone();
        tasks.push(tokio::spawn(async move {
            while stream.recv().await.is_some() {
                if tx.send(number).is_err() {
                    break;
                }
            }
        }));
    }
    drop(tx);
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            Some(number) = rx.recv() => signal_group(pgid, number),
        }
    };
    for t in tasks {
        t.abort();
    }
    status
}

/// Writes each queued message as one line, flushing when the queue is
/// momentarily empty. Ends (closing the output) when every sender is gone
/// or the output breaks.
async fn write_lines<W: AsyncWrite + Unpin>(mut out: W, mut rx: mpsc::Receiver<Vec<u8>>) {
    while let Some(mut line) = rx.recv().await {
        line.push(b'\n');
        if out.write_all(&line).await.is_err() {
            return;
        }
        if rx.is_empty() && out.flush().await.is_err() {
            return;
        }
    }
    let _ = out.flush().await;
    let _ = out.shutdown().await;
}

/// Reads `side`'s messages in order, judges each, and queues what goes on
/// (`onward`) and what goes back (`back`, weak: answering a peer never
/// keeps its input open).
async fn pump<R: AsyncBufRead + Unpin>(
    gate: Arc<Gate>,
    side: Side,
    mut input: R,
    inflight: Arc<Inflight>,
    limit: usize,
    onward: mpsc::Sender<Vec<u8>>,
    back: mpsc::WeakSender<Vec<u8>>,
) {
    let answer = |bytes: Vec<u8>| {
        let back = back.clone();
        async move {
            match back.upgrade() {
                Some(tx) => tx.send(bytes).await.is_ok(),
                None => false,
            }
        }
    };
    let mut buf = Vec::new();
    loop {
        let line = match jsonrpc::read_line(&mut input, &mut buf, limit).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, ?side, "cannot read; the relay stops in this direction");
                return;
            }
        };
        match line {
            Line::End => return,
            Line::TooLarge => {
                tracing::warn!(
                    ?side,
                    limit,
                    "message larger than mcp.max_message_bytes dropped"
                );
                let too_large = jsonrpc::error(
                    serde_json::Value::Null,
                    INVALID_REQUEST,
                    &format!(
                        "Invalid Request: message larger than {limit} bytes (mcp.max_message_bytes)"
                    ),
                );
                // The peer may be gone; reading goes on regardless.
                let _ = answer(answer_bytes(too_large)).await;
            }
            Line::Complete if jsonrpc::is_blank(&buf) => {}
            Line::Complete => {
                let relayed = relay(&gate, side, &buf, &inflight).await;
                let onward_bytes = match relayed.forward {
                    Forward::Nothing => None,
                    Forward::Verbatim => Some(std::mem::take(&mut buf)),
                    Forward::Bytes(b) => Some(b),
                };
                if let Some(b) = onward_bytes {
                    if onward.send(b).await.is_err() {
                        return;
                    }
                }
                if let Some(a) = relayed.answer {
                    let _ = answer(a).await;
                }
            }
        }
    }
}

fn answer_bytes(v: serde_json::Value) -> Vec<u8> {
    v.to_string().into_bytes()
}
