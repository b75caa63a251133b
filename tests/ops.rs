//! Access control, limits, metrics, monitor mode, reload, webhook and
//! fail_mode against the real server on 127.0.0.1.

mod support;

use hmac::{Hmac, Mac};
use parallax::decision::ReloadSource;
use parallax::webhook::Webhook;
use serde_json::{json, Value};
use sha2::Sha256;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::*;

const SEED: &str =
    r#"{"stage":"tool.before","tool_name":"exec","tool_args":{"command":"rm -rf /"}}"#;

fn plain(tweak: impl FnOnce(&mut parallax::settings::Settings)) -> TestServer {
    TestServer::start(Path::new(CONFIG), tweak, |s, _| s)
}

fn post(addr: SocketAddr, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
    let mut h = vec![("Content-Type", "application/json")];
    h.extend_from_slice(headers);
    request(addr, "POST", path, &h, body)
}

// ---------------------------------------------------------------------------
// Auth
// ---------------------------------------------------------------------------

#[test]
fn bearer_token_guards_everything_but_health() {
    let server = plain(|s| s.server.auth_token = Some("tok-123".into()));
    let a = server.addr;
    let good = [("Authorization", "Bearer tok-123")];
    for (method, path) in [
        ("POST", "/evaluate"),
        ("GET", "/metrics"),
        ("POST", "/admin/reload"),
        ("GET", "/nowhere"),
    ] {
        let r = request(a, method, path, &[], b"");
        let m = r.assert_error(401, "unauthorized");
        assert!(m.contains("Bearer"), "{m}");
        assert_eq!(r.header("www-authenticate").as_deref(), Some("Bearer"));
        let r = request(a, method, path, &[("Authorization", "Bearer tok-12")], b"");
        r.assert_error(401, "unauthorized");
        let r = request(a, method, path, &[("Authorization", "Basic tok-123")], b"");
        r.assert_error(401, "unauthorized");
    }
    assert_eq!(request(a, "GET", "/health", &[], b"").status, 200);
    let r = post(a, "/evaluate", &good, SEED.as_bytes());
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["action"], "block");
    let r = request(a, "GET", "/metrics", &good, b"");
    assert_eq!(r.status, 200);
    assert!(String::from_utf8_lossy(&r.body).contains("parallax_unauthorized_total 12"));
}

// ---------------------------------------------------------------------------
// Limits and bad input
// ---------------------------------------------------------------------------

fn nested(depth: usize) -> String {
    format!(
        r#"{{"stage":"tool.before","tool_args":{}1{}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    )
}

#[test]
fn battery_of_bad_inputs_gets_exact_errors_and_the_server_still_answers() {
    let server = plain(|s| {
        s.server.auth_token = Some("t".into());
        s.server.max_json_depth = 8;
        s.server.max_string_bytes = 1000;
        s.server.max_body_bytes = 64 * 1024;
        s.server.max_header_bytes = 4096;
    });
    let a = server.addr;
    let auth = [("Authorization", "Bearer t")];
    let cases: Vec<(Vec<u8>, u16, &str, &str)> = vec![
        (
            br#"{"stage":"tool.bef"#.to_vec(),
            400,
            "malformed_json",
            "EOF",
        ),
        (br#"{"stage": 7}"#.to_vec(), 400, "invalid_event", "stage"),
        (
            br#"{"stage":"tool.before","tool_name":[1]}"#.to_vec(),
            400,
            "invalid_event",
            "tool_name",
        ),
        (br#"[]"#.to_vec(), 400, "invalid_event", "object"),
        (b"".to_vec(), 400, "malformed_json", "EOF"),
        (
            nested(9).into_bytes(),
            400,
            "limit_exceeded",
            "max_json_depth (8",
        ),
        (
            nested(500).into_bytes(),
            400,
            "malformed_json",
            "recursion limit",
        ),
        (
            format!(
                r#"{{"stage":"tool.before","message_text":"{}"}}"#,
                "x".repeat(1001)
            )
            .into_bytes(),
            400,
            "limit_exceeded",
            "$.message_text is 1001 bytes",
        ),
        (
            b"{\"stage\":\"tool.before\",\"message_text\":\"\xff\xfe\"}".to_vec(),
            400,
            "malformed_json",
            "UTF-8",
        ),
        (vec![b' '; 70 * 1024], 413, "body_too_large", "65536"),
    ];
    for (body, status, code, needle) in &cases {
        let r = post(a, "/evaluate", &auth, body);
        let m = r.assert_error(*status, code);
        assert!(
            m.contains(needle),
            "`{m}` lacks `{needle}` for {:?}",
            String::from_utf8_lossy(&body[..body.len().min(60)])
        );
    }
    let r = request(
        a,
        "POST",
        "/evaluate",
        &[("Content-Type", "text/plain"), auth[0]],
        SEED.as_bytes(),
    );
    r.assert_error(415, "unsupported_media_type");
    let r = request(a, "GET", "/evaluate", &auth, b"");
    r.assert_error(405, "method_not_allowed");
    assert_eq!(r.header("allow").as_deref(), Some("POST"));
    request(a, "DELETE", "/metrics", &auth, b"").assert_error(405, "method_not_allowed");
    request(a, "GET", "/admin/reload", &auth, b"").assert_error(405, "method_not_allowed");
    request(a, "GET", "/evaluat", &auth, b"").assert_error(404, "not_found");
    post(a, "/evaluate", &[], SEED.as_bytes()).assert_error(401, "unauthorized");
    let big = "x".repeat(5000);
    let r = request(a, "GET", "/health", &[("X-Big", &big)], b"");
    let m = r.assert_error(431, "headers_too_large");
    assert!(m.contains("max_header_bytes (4096)"), "{m}");

    // Still answering, correctly.
    let r = post(a, "/evaluate", &auth, SEED.as_bytes());
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["action"], "block");
    let metrics =
        String::from_utf8_lossy(&request(a, "GET", "/metrics", &auth, b"").body).to_string();
    assert!(
        metrics.contains("parallax_rejected_requests_total 4\n"),
        "{metrics}"
    );
}

#[test]
fn a_slow_body_times_out_with_408() {
    let server = plain(|s| s.server.request_timeout_ms = 300);
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    s.write_all(
        b"POST /evaluate HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
          Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"stage\"",
    )
    .unwrap();
    let started = Instant::now();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let r = parse(&buf);
    let m = r.assert_error(408, "request_timeout");
    assert!(m.contains("300 ms"), "{m}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_connection_beyond_the_limit_gets_503_at_once_and_the_slot_frees() {
    let server = plain(|s| s.server.max_connections = 1);
    let a = server.addr;
    // One idle keep-alive connection holds the only slot.
    let mut first = TcpStream::connect(a).unwrap();
    first
        .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut b = [0u8; 1024];
    first.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    assert!(first.read(&mut b).unwrap() > 0);
    // A second client is told at once, not queued behind the idle one.
    let mut second = TcpStream::connect(a).unwrap();
    second
        .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    second.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    let mut buf = Vec::new();
    second.read_to_end(&mut buf).unwrap();
    let r = parse(&buf);
    assert_eq!(r.status, 503, "{}", String::from_utf8_lossy(&buf));
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(body["error"]["code"], "too_many_connections");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("server.max_connections (1)"));
    // Once the first one goes away, a new client is served.
    drop(first);
    let deadline = std::time::Instant::now() + IO_TIMEOUT;
    loop {
        let mut third = TcpStream::connect(a).unwrap();
        third
            .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        third.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        let mut buf = Vec::new();
        third.read_to_end(&mut buf).unwrap();
        match parse(&buf).status {
            200 => break,
            // The server may not have seen the first close yet.
            503 if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            s => panic!("status {s} after the slot was freed"),
        }
    }
}

// ---------------------------------------------------------------------------
// Metrics
// ---------------------------------------------------------------------------

#[test]
fn metrics_count_decisions_rules_and_latency() {
    let server = plain(|_| {});
    let a = server.addr;
    for _ in 0..3 {
        post(a, "/evaluate", &[], SEED.as_bytes());
    }
    post(
        a,
        "/evaluate",
        &[],
        br#"{"stage":"tool.before","tool_args":{"command":"ls"}}"#,
    );
    let r = request(a, "GET", "/metrics", &[], b"");
    assert_eq!(r.status, 200);
    assert!(r
        .header("content-type")
        .is_some_and(|c| c.starts_with("text/plain; version=0.0.4")));
    let text = String::from_utf8(r.body).unwrap();
    for want in [
        "parallax_decisions_total{door=\"http\",stage=\"tool.before\",action=\"block\"} 3\n",
        "parallax_decisions_total{door=\"http\",stage=\"tool.before\",action=\"allow\"} 1\n",
        "parallax_rule_matches_total{rule=\"dangerous-rm-rf-root\",stage=\"tool.before\"} 3\n",
        "parallax_evaluation_seconds_bucket{le=\"+Inf\"} 4\n",
        "parallax_evaluation_seconds_count 4\n",
        "# TYPE parallax_evaluation_seconds histogram\n",
        "parallax_audit_queue_depth 0\n",
        "parallax_webhook_queue_depth 0\n",
        "parallax_audit_dropped_total 0\n",
        "parallax_webhook_retries_total 0\n",
    ] {
        assert!(text.contains(want), "missing `{want}` in:\n{text}");
    }
    // Every sample line is `name{labels} value` with a numeric value.
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let v = line.rsplit(' ').next().unwrap();
        assert!(v.parse::<f64>().is_ok(), "bad sample `{line}`");
    }
}

// ---------------------------------------------------------------------------
// Monitor mode
// ---------------------------------------------------------------------------

#[test]
fn server_monitor_mode_reports_would_block_and_returns_detect() {
    let server = plain(|s| s.server.monitor = true);
    let v = post(server.addr, "/evaluate", &[], SEED.as_bytes()).json();
    assert_eq!(v["action"], "detect");
    assert_eq!(v["blocked"], false);
    assert_eq!(v["would_block"], true);
    assert_eq!(v["results"][0]["rule_id"], "dangerous-rm-rf-root");
    let h = request(server.addr, "GET", "/health", &[], b"").json();
    assert_eq!(h["mode"], "monitor");
    // A redaction is not applied either.
    let v = post(
        server.addr,
        "/evaluate",
        &[],
        br#"{"stage":"tool.after","tool_result":"-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----"}"#,
    )
    .json();
    assert_eq!(v["action"], "detect");
    assert!(v.get("redacted_event").is_none());
    assert!(v.get("would_block").is_none());
}

/// A config with a monitored evaluator and a monitored rule beside an
/// enforced one.
fn monitor_config(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir.join("rules/regex")).unwrap();
    std::fs::write(
        dir.join("rules/regex/trial.yaml"),
        r#"evaluator:
  name: trial
  mode: monitor
  stages: [tool.before]
rules:
  - id: trial-curl
    action: block
    fields: [command]
    pattern: '\bcurl\b'
"#,
    )
    .unwrap();
    let config = dir.join("parallax.yaml");
    std::fs::write(
        &config,
        r#"evaluators:
  - name: mixed
    type: regex
    stages: [tool.before]
    rules:
      - id: new-wget
        action: block
        mode: monitor
        fields: [command]
        pattern: '\bwget\b'
      - id: old-scp
        action: block
        fields: [command]
        pattern: '\bscp\b'
"#,
    )
    .unwrap();
    config
}

#[test]
fn rule_and_evaluator_monitor_mode() {
    let dir = temp_dir("monitor");
    let config = monitor_config(&dir);
    let server = TestServer::start(&config, |_| {}, |s, _| s);
    let eval = |cmd: &str| {
        post(
            server.addr,
            "/evaluate",
            &[],
            json!({"stage": "tool.before", "tool_args": {"command": cmd}})
                .to_string()
                .as_bytes(),
        )
        .json()
    };
    let v = eval("wget x");
    assert_eq!(v["action"], "detect");
    assert_eq!(v["would_block"], true);
    assert_eq!(v["results"][0]["monitor"], true);
    let v = eval("curl x");
    assert_eq!(v["action"], "detect");
    assert_eq!(v["would_block"], true);
    // A monitored block does not stop the chain: the enforced rule still
    // blocks.
    let v = eval("wget x; scp y z:");
    assert_eq!(v["action"], "block");
    assert!(v.get("would_block").is_none());
    let v = eval("ls");
    assert_eq!(v["action"], "allow");
    // The baked and the dynamic backend agree (the baked one cannot run
    // this config; the engine decides monitor mode in one place for both).
    let fp = server.state.engine().program().fingerprint.clone();
    let enforcing = std::fs::read_to_string(&config)
        .unwrap()
        .replace("        mode: monitor\n", "");
    std::fs::write(&config, enforcing).unwrap();
    let rules = parallax_compiler::load(&config).unwrap();
    assert_ne!(rules.fingerprint(), fp, "mode must change the fingerprint");
}

// ---------------------------------------------------------------------------
// Reload
// ---------------------------------------------------------------------------

fn reload_config(dir: &Path, pattern: &str) -> PathBuf {
    let config = dir.join("parallax.yaml");
    std::fs::write(
        &config,
        format!(
            "evaluators:\n  - name: r\n    type: regex\n    stages: [tool.before]\n    rules:\n      \
             - id: r1\n        action: block\n        fields: [command]\n        pattern: '{pattern}'\n"
        ),
    )
    .unwrap();
    config
}

/// A server on `config` that reloads from it.
fn reloading_server(config: &Path) -> TestServer {
    let c = config.to_path_buf();
    TestServer::start(
        config,
        |_| {},
        move |s, _| {
            s.with_reload(ReloadSource {
                config: Some(c),
                baked_only: false,
            })
        },
    )
}

#[test]
fn reload_swaps_rules_and_keeps_them_on_a_bad_compile() {
    let dir = temp_dir("reload");
    let config = reload_config(&dir, r"\bfoo\b");
    let server = reloading_server(&config);
    let a = server.addr;
    let action = |cmd: &str| {
        post(
            a,
            "/evaluate",
            &[],
            json!({"stage": "tool.before", "tool_args": {"command": cmd}})
                .to_string()
                .as_bytes(),
        )
        .json()["action"]
            .clone()
    };
    assert_eq!(action("foo"), "block");
    assert_eq!(action("bar"), "allow");

    reload_config(&dir, r"\bbar\b");
    let r = post(a, "/admin/reload", &[], b"");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    assert_eq!(v["status"], "reloaded");
    assert_ne!(
        v["reload"]["rules_fingerprint"],
        v["reload"]["previous_fingerprint"]
    );
    assert_eq!(action("foo"), "allow");
    assert_eq!(action("bar"), "block");

    // A broken config: the error is reported, the running rules stay.
    reload_config(&dir, r"(unclosed");
    let m = post(a, "/admin/reload", &[], b"").assert_error(422, "reload_failed");
    assert!(m.contains("r1") && m.contains("unclosed"), "{m}");
    assert_eq!(action("bar"), "block");
    assert_eq!(server.metrics.reloads_ok.load(Relaxed), 1);
    assert_eq!(server.metrics.reloads_failed.load(Relaxed), 1);
}

#[test]
fn baked_only_and_plain_servers_refuse_reload() {
    let server = TestServer::start(
        Path::new(CONFIG),
        |_| {},
        |s, _| {
            s.with_reload(ReloadSource {
                config: Some(CONFIG.into()),
                baked_only: true,
            })
        },
    );
    let m = post(server.addr, "/admin/reload", &[], b"").assert_error(409, "reload_refused");
    assert!(m.contains("--baked-only"), "{m}");
    let plain = plain(|_| {});
    post(plain.addr, "/admin/reload", &[], b"").assert_error(409, "reload_refused");
}

// ---------------------------------------------------------------------------
// Webhook
// ---------------------------------------------------------------------------

struct Received {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// A webhook receiver on 127.0.0.1 answering with `statuses` in turn (the
/// last one repeated).
fn receiver(statuses: Vec<u16>) -> (String, Arc<Mutex<Vec<Received>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = got.clone();
    std::thread::spawn(move || {
        for (i, conn) in listener.incoming().enumerate() {
            let Ok(mut conn) = conn else { return };
            conn.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            let (head_end, len) = loop {
                let n = conn.read(&mut chunk).unwrap_or(0);
                if n == 0 {
                    break (0, 0);
                }
                buf.extend_from_slice(&chunk[..n]);
                if let Some(e) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..e]).to_ascii_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while buf.len() < e + 4 + len {
                        let n = conn.read(&mut chunk).unwrap_or(0);
                        if n == 0 {
                            break;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                    }
                    break (e, len);
                }
            };
            if head_end == 0 {
                continue;
            }
            let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
            let headers = head
                .lines()
                .skip(1)
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                .collect();
            g.lock().unwrap().push(Received {
                headers,
                body: buf[head_end + 4..head_end + 4 + len].to_vec(),
            });
            let status = statuses[i.min(statuses.len() - 1)];
            let _ = conn.write_all(
                format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
            );
        }
    });
    (url, got)
}

fn webhook_server(
    url: &str,
    tweak: impl FnOnce(&mut parallax::settings::ReportingSettings),
) -> TestServer {
    let mut r = parallax::settings::ReportingSettings {
        webhook_url: Some(url.to_string()),
        webhook_secret: Some("hook-secret".into()),
        ..Default::default()
    };
    tweak(&mut r);
    let r2 = r.clone();
    TestServer::start(
        Path::new(CONFIG),
        move |s| s.reporting = r,
        move |s, m| match Webhook::start(&r2, m).expect("start the webhook") {
            Some(w) => s.with_webhook(w),
            None => s,
        },
    )
}

fn wait_for(got: &Arc<Mutex<Vec<Received>>>, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.lock().unwrap().len() < n {
        assert!(Instant::now() < deadline, "the webhook did not arrive");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn webhook_is_signed_and_retried_on_5xx() {
    let (url, got) = receiver(vec![503, 500, 200]);
    let server = webhook_server(&url, |_| {});
    let started = Instant::now();
    let v = post(server.addr, "/evaluate", &[], SEED.as_bytes()).json();
    assert_eq!(v["action"], "block");
    // The verdict did not wait for the (failing) receiver.
    assert!(started.elapsed() < Duration::from_millis(2000));
    // An allow is not in webhook_events ([block]).
    post(
        server.addr,
        "/evaluate",
        &[],
        br#"{"stage":"tool.before","tool_args":{"command":"ls"}}"#,
    );
    wait_for(&got, 3);
    server.stop();
    let got = got.lock().unwrap();
    assert_eq!(
        got.len(),
        3,
        "one event, three attempts, nothing for the allow"
    );
    let last = &got[2];
    let h = |k: &str| {
        last.headers
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no {k} header"))
    };
    let ts = h("x-parallax-timestamp");
    let mut mac = Hmac::<Sha256>::new_from_slice(b"hook-secret").unwrap();
    mac.update(ts.as_bytes());
    mac.update(b".");
    mac.update(&last.body);
    let want: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(h("x-parallax-signature"), format!("sha256={want}"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(now.abs_diff(ts.parse::<u64>().unwrap()) < 60);
    let body: Value = serde_json::from_slice(&last.body).unwrap();
    assert_eq!(body["kind"], "decision");
    assert_eq!(body["action"], "block");
    assert_eq!(body["matches"][0]["rule_id"], "dangerous-rm-rf-root");
}

#[test]
fn webhook_retry_metrics_and_give_up_on_4xx() {
    let (url, got) = receiver(vec![503, 200, 404]);
    let server = webhook_server(&url, |_| {});
    post(server.addr, "/evaluate", &[], SEED.as_bytes());
    wait_for(&got, 2);
    post(server.addr, "/evaluate", &[], SEED.as_bytes());
    wait_for(&got, 3);
    let m = server.metrics.clone();
    server.stop();
    assert_eq!(m.webhook_retries.load(Relaxed), 1);
    assert_eq!(m.webhook_sent.load(Relaxed), 1);
    // 404 is the receiver refusing: no retry.
    assert_eq!(m.webhook_failed.load(Relaxed), 1);
    assert_eq!(got.lock().unwrap().len(), 3);
}

#[test]
fn webhook_retries_transport_errors_then_gives_up() {
    // A port with nothing listening.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = webhook_server(&format!("http://127.0.0.1:{port}/x"), |r| {
        r.webhook_retries = 2;
    });
    post(server.addr, "/evaluate", &[], SEED.as_bytes());
    let m = server.metrics.clone();
    let deadline = Instant::now() + Duration::from_secs(20);
    while m.webhook_failed.load(Relaxed) == 0 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(m.webhook_retries.load(Relaxed), 2);
}

#[test]
fn slack_format_posts_a_text_message() {
    let (url, got) = receiver(vec![200]);
    let server = webhook_server(&url, |r| {
        r.webhook_format = parallax::settings::WebhookFormat::Slack;
    });
    post(server.addr, "/evaluate", &[], SEED.as_bytes());
    wait_for(&got, 1);
    server.stop();
    let body: Value = serde_json::from_slice(&got.lock().unwrap()[0].body).unwrap();
    let text = body["text"].as_str().unwrap();
    assert!(
        text.starts_with("*Parallax block* at `tool.before`"),
        "{text}"
    );
    assert!(text.contains("`dangerous-rm-rf-root`"), "{text}");
}

#[test]
fn webhook_urls_are_checked_up_front() {
    // https goes through the proxy's rustls connector.
    assert!(parallax::webhook::parse_url("https://hooks.example/x").is_ok());
    let e = parallax::webhook::parse_url("ftp://x/y").unwrap_err();
    assert!(e.to_string().contains("not a valid URL"), "{e}");
    assert!(parallax::webhook::parse_url("http://127.0.0.1:1/x").is_ok());
}

// ---------------------------------------------------------------------------
// fail_mode
// ---------------------------------------------------------------------------

// The fail_mode answers to an engine panic and to a failed side-store are
// pinned in the decision service's own tests (src/decision/tests.rs), which
// can make those failures happen.

/// The binary: SIGHUP recompiles the config it was started with.
#[cfg(unix)]
#[test]
fn sighup_reloads_the_running_binary() {
    use std::process::{Command, Stdio};
    let dir = temp_dir("sighup");
    let config = reload_config(&dir, r"\bfoo\b");
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(env!("CARGO_BIN_EXE_parallax"))
        .args(["serve", "--port", &port.to_string(), "-c"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let pid = child.id().to_string();
    let _guard = Kill(child);
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < deadline, "the server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let action = |cmd: &str| {
        evaluate(
            addr,
            &json!({"stage": "tool.before", "tool_args": {"command": cmd}}),
        )["action"]
            .clone()
    };
    assert_eq!(action("bar"), "allow");
    reload_config(&dir, r"\bbar\b");
    assert!(Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .unwrap()
        .success());
    let deadline = Instant::now() + Duration::from_secs(20);
    while action("bar") != "block" {
        assert!(Instant::now() < deadline, "SIGHUP did not reload the rules");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(action("foo"), "allow");
}

/// A config with one SQL rule: block the third call in a session within
/// ten minutes (`limit` calls allowed), in `mode`.
fn sql_reload_config(dir: &Path, limit: u32, mode: &str) -> PathBuf {
    let config = dir.join("parallax.yaml");
    std::fs::write(
        &config,
        format!(
            "evaluators:\n  - name: t\n    type: sql\n    mode: {mode}\n    rules:\n      \
             - id: too-many\n        action: block\n        query: |\n          \
             SELECT count(*) AS n FROM events WHERE session_id = :session_id AND ts > :now - 600\n        \
             condition: n > {limit}\n"
        ),
    )
    .unwrap();
    config
}

#[test]
fn reload_keeps_the_sql_window_and_monitor_mode_reaches_sql_rules() {
    let dir = temp_dir("reload-sql");
    let config = sql_reload_config(&dir, 5, "enforce");
    let server = reloading_server(&config);
    let a = server.addr;
    let call = || {
        post(
            a,
            "/evaluate",
            &[],
            json!({"stage": "tool.before", "session_id": "s1", "tool_name": "Bash",
                   "tool_args": {"command": "ls"}})
            .to_string()
            .as_bytes(),
        )
        .json()
    };
    for _ in 0..3 {
        assert_eq!(call()["action"], "allow");
    }
    // Lower the limit: the three calls already recorded still count, so the
    // fourth call is over it.
    sql_reload_config(&dir, 3, "enforce");
    let r = post(a, "/admin/reload", &[], b"");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = call();
    assert_eq!(v["action"], "block", "{v}");
    assert_eq!(v["results"][0]["rule_id"], "too-many", "{v}");

    // The same rule in monitor mode reports what it would do.
    sql_reload_config(&dir, 3, "monitor");
    let r = post(a, "/admin/reload", &[], b"");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = call();
    assert_eq!(v["action"], "detect", "{v}");
    assert_eq!(v["would_block"], true, "{v}");
    assert_eq!(v["results"][0]["monitor"], true, "{v}");
    // Five calls recorded, across two reloads: one window.
    let m = request(a, "GET", "/metrics", &[], b"");
    let text = String::from_utf8_lossy(&m.body);
    assert!(text.contains("parallax_sql_store_rows 5\n"), "{text}");
}
