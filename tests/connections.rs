//! Connection handling of the real server on 127.0.0.1: idle keep-alive
//! connections are closed after `server.idle_timeout_ms`, and holding
//! 2,000 of them open neither delays `/health` nor `/evaluate` (before,
//! about 1,100 idle connections made every new request wait seconds in the
//! accept queue). Bounded: a fixed count of connections, each step under a
//! generous timeout; the only timing assertion is that generous bound. The
//! measured latency is printed for the record.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};
use support::*;

const IDLE: usize = 2_000;
const IO: Duration = Duration::from_secs(10);

/// Raises this process's open-file soft limit towards `want` (the hard
/// limit caps it); returns the limit in force.
fn raise_fd_limit(want: u64) -> u64 {
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    unsafe {
        let mut l = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) != 0 {
            return 0;
        }
        if l.rlim_cur < want {
            let target = want.min(l.rlim_max);
            let raised = libc::rlimit {
                rlim_cur: target,
                rlim_max: l.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                l.rlim_cur = target;
            }
        }
        l.rlim_cur
    }
}

fn get_health(stream: &mut TcpStream, close: bool) -> Vec<u8> {
    let conn = if close { "close" } else { "keep-alive" };
    write!(
        stream,
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: {conn}\r\n\r\n"
    )
    .expect("send");
    let mut buf = vec![0u8; 4096];
    let mut got = Vec::new();
    // The health answer is small: read until the blank line and its body.
    while !got.windows(4).any(|w| w == b"\r\n\r\n") || !got.ends_with(b"}") {
        let n = stream.read(&mut buf).expect("read");
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    got
}

#[test]
fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let server = TestServer::start(
        Path::new(CONFIG),
        |s| s.server.idle_timeout_ms = 300,
        |s, _| s,
    );
    let mut c = TcpStream::connect(server.addr).expect("connect");
    c.set_read_timeout(Some(IO)).unwrap();
    let r = get_health(&mut c, false);
    assert!(
        r.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&r)
    );
    let started = Instant::now();
    let mut b = [0u8; 16];
    // The server closes it: EOF (or a reset), well before our own timeout.
    let n = c.read(&mut b).unwrap_or(0);
    assert_eq!(n, 0, "the idle connection got data instead of being closed");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "closed after {:?}",
        started.elapsed()
    );
}

#[test]
fn health_and_evaluate_answer_while_2000_idle_connections_are_held() {
    let limit = raise_fd_limit(2 * IDLE as u64 + 512);
    if limit < 2 * IDLE as u64 + 256 {
        // Client and server ends both live in this process.
        let why = format!("open-file limit {limit} is below {}", 2 * IDLE + 256);
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{why}; CI must allow it");
        }
        println!("skipped: {why}");
        return;
    }
    let server = TestServer::start(
        Path::new(CONFIG),
        // Held for the whole test, and the cap (4,096 by default) above it.
        |s| s.server.idle_timeout_ms = 120_000,
        |s, _| s,
    );
    let mut idle = Vec::with_capacity(IDLE);
    for i in 0..IDLE {
        let mut c = TcpStream::connect(server.addr).unwrap_or_else(|e| panic!("connect {i}: {e}"));
        c.set_read_timeout(Some(IO)).unwrap();
        // Every other one served once, then left idle; the rest never send.
        if i % 2 == 0 {
            let r = get_health(&mut c, false);
            assert!(r.starts_with(b"HTTP/1.1 200"), "connection {i}");
        }
        idle.push(c);
    }
    let mut worst = Duration::ZERO;
    for _ in 0..20 {
        let started = Instant::now();
        let mut c = TcpStream::connect(server.addr).expect("connect");
        c.set_read_timeout(Some(IO)).unwrap();
        let r = get_health(&mut c, true);
        let took = started.elapsed();
        assert!(
            r.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&r)
        );
        worst = worst.max(took);
    }
    let started = Instant::now();
    let r = request(
        server.addr,
        "POST",
        "/evaluate",
        &[("Content-Type", "application/json")],
        br#"{"stage":"tool.before","tool_name":"Bash","tool_args":{"command":"rm -rf /"}}"#,
    );
    let evaluate = started.elapsed();
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["action"], "block");
    println!(
        "with {IDLE} idle connections: /health slowest of 20 {worst:?}, /evaluate {evaluate:?}"
    );
    // Generous (debug build, shared CI machine); before the fix the wait
    // was seconds.
    assert!(worst < Duration::from_secs(1), "/health took {worst:?}");
    drop(idle);
}
