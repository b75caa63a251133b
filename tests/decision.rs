//! One decision service behind every front door: the same events through
//! `POST /evaluate` on a real server, through the `parallax eval` binary,
//! and through an in-process caller of the library get the same decisions
//! — actions, results, reasons, rewritten events — and, where both keep
//! them, the same audit lines and metrics. The sequence includes a SQL rule
//! turning a redaction into a block, which must come back with no rewritten
//! content from every door.

mod support;

use parallax::audit::AuditLog;
use parallax::decision::{DecisionService, Door, Origin};
use parallax::metrics::Metrics;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;
use support::*;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/decision/parallax.yaml"
);

/// Allowed, redacted, then blocked by the SQL rule (second call of `s1`)
/// although the compiled rules would redact it, then a call of another
/// session, redacted again.
fn events() -> Vec<Value> {
    let call = |session: &str, command: &str| {
        json!({"stage": "tool.before", "session_id": session, "tool_name": "Bash",
               "tool_args": {"command": command}})
    };
    vec![
        json!({"stage": "message.before", "session_id": "s1", "message_text": "hello"}),
        call("s1", "echo tok-123456"),
        call("s1", "echo tok-654321 again"),
        call("s2", "cat tok-000001"),
    ]
}

/// A report without what legitimately differs between runs.
fn decision(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.remove("elapsed_ms");
    }
    v
}

/// An audit line without its time, duration and door.
fn audit_decision(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        for k in ["ts", "elapsed_ms", "door"] {
            o.remove(k);
        }
    }
    v
}

/// Metric lines about decisions and rule matches, the door label dropped.
fn decision_metrics(text: &str, door: &str) -> Vec<String> {
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| {
            l.starts_with("parallax_decisions_total")
                || l.starts_with("parallax_rule_matches_total")
                || l.starts_with("parallax_would_block_total")
                || l.starts_with("parallax_evaluation_failures_total")
        })
        .map(|l| l.replace(&format!("door=\"{door}\","), ""))
        .collect();
    lines.sort();
    lines
}

fn audited_server(log: &Path) -> TestServer {
    let path = log.to_path_buf();
    TestServer::start(
        Path::new(FIXTURE),
        {
            let path = path.clone();
            move |s| s.reporting.log_file = Some(path.display().to_string())
        },
        move |service, metrics| {
            let r = service.settings.reporting.clone();
            service.with_audit(AuditLog::start(&path, &r, metrics).expect("open the audit log"))
        },
    )
}

fn audited_library(log: &Path) -> DecisionService {
    let loaded = parallax::backend::load(Some(Path::new(FIXTURE)), false).expect("fixture loads");
    let mut settings = loaded.settings;
    settings.reporting.log_file = Some(log.display().to_string());
    let metrics = Metrics::new();
    let audit = AuditLog::start(log, &settings.reporting, metrics.clone()).expect("audit log");
    DecisionService::new(loaded.engine, settings)
        .expect("side-store")
        .with_metrics(metrics)
        .with_audit(audit)
}

fn eval_binary(events: &[Value]) -> Vec<Value> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_parallax"))
        .args(["eval", "-c", FIXTURE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start parallax eval");
    {
        let mut stdin = child.stdin.take().expect("stdin");
        for e in events {
            writeln!(stdin, "{e}").expect("write an event");
        }
    }
    eval_verdicts(child.wait_with_output().expect("parallax eval finishes"))
}

#[test]
fn http_eval_and_the_library_decide_alike() {
    let dir = temp_dir("decision-doors");
    let http_log = dir.join("http.log");
    let lib_log = dir.join("library.log");

    let server = audited_server(&http_log);
    let over_http: Vec<Value> = events()
        .iter()
        .map(|e| decision(evaluate(server.addr, e)))
        .collect();
    let http_metrics = server.metrics.render();
    server.stop();

    let library = audited_library(&lib_log);
    let origin = Origin::door(Door::Library);
    let in_process: Vec<Value> = events()
        .into_iter()
        .map(|e| {
            let event = parallax_runtime::Event::from_value(e).expect("valid event");
            let r = library.decide(event, &origin, Instant::now());
            decision(serde_json::to_value(&r).expect("serialises"))
        })
        .collect();
    let lib_metrics = library.metrics.render();
    let library = Arc::new(library);
    // Flush the audit writer: closing joins it after the last line.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(library.close());

    let from_eval: Vec<Value> = eval_binary(&events()).into_iter().map(decision).collect();

    // The decisions themselves, pinned once, then compared across doors.
    let actions: Vec<&str> = over_http
        .iter()
        .map(|d| d["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["allow", "redact", "block", "redact"],
        "{over_http:?}"
    );
    let blocked = &over_http[2];
    assert!(blocked.get("redacted_event").is_none(), "{blocked}");
    assert!(blocked.get("redacted").is_none(), "{blocked}");
    assert_eq!(
        over_http[1]["redacted_event"]["tool_args"]["command"],
        "echo [REDACTED]"
    );
    assert_eq!(over_http, in_process, "HTTP and the library disagree");
    assert_eq!(over_http, from_eval, "HTTP and parallax eval disagree");

    // Audit lines: the same but for the door that wrote them.
    let http_lines = audit_lines(&http_log);
    let lib_lines = audit_lines(&lib_log);
    assert_eq!(http_lines.len(), events().len());
    assert!(http_lines.iter().all(|l| l["door"] == "http"));
    assert!(lib_lines.iter().all(|l| l["door"] == "library"));
    let strip = |lines: Vec<Value>| lines.into_iter().map(audit_decision).collect::<Vec<_>>();
    assert_eq!(strip(http_lines), strip(lib_lines));

    // Metrics: the same counts, by stage and action, under each door.
    let http_counts = decision_metrics(&http_metrics, "http");
    assert!(
        http_counts
            .iter()
            .any(|l| l == "parallax_decisions_total{stage=\"tool.before\",action=\"redact\"} 2"),
        "{http_counts:?}"
    );
    assert_eq!(http_counts, decision_metrics(&lib_metrics, "library"));
}

/// `parallax <command> -c <config>` with `config` written first: whether
/// it succeeded, and what it wrote to stderr.
fn run_with_config(command: &str, config: &std::path::Path, yaml: &str) -> (bool, String) {
    std::fs::write(config, yaml).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_parallax"))
        .args([command, "-c"])
        .arg(config)
        .env_remove("PARALLAX_TEST_UNSET_KEY")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run parallax");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_bad_proxy_upstream_is_named_by_lint() {
    let dir = temp_dir("decision-proxy");
    let config = dir.join("parallax.yaml");
    let yaml = "proxy:\n  enabled: true\n  anthropic_upstream: ftp://example\n";
    let (ok, err) = run_with_config("lint", &config, yaml);
    assert!(!ok);
    assert!(err.contains("proxy.anthropic_upstream"), "{err}");
    let e = match parallax::backend::load(Some(&config), false) {
        Ok(_) => panic!("an ftp upstream was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("proxy.anthropic_upstream"), "{e}");
}

#[test]
fn a_bad_named_upstream_is_named_by_lint_and_a_missing_key_stops_serve() {
    let dir = temp_dir("decision-upstreams");
    let config = dir.join("parallax.yaml");
    let (ok, err) = run_with_config(
        "lint",
        &config,
        "proxy:\n  enabled: true\n  upstreams:\n    ollama:\n      base_url: http://127.0.0.1:1\n      api: gemini\n",
    );
    assert!(!ok, "{err}");
    // serde stops at the first bad variant, naming it.
    assert!(err.contains("proxy") && err.contains("gemini"), "{err}");
    let (ok, err) = run_with_config(
        "lint",
        &config,
        "proxy:\n  enabled: true\n  upstreams:\n    health:\n      base_url: ollama.local\n      api: openai\n",
    );
    assert!(!ok, "{err}");
    assert!(
        err.contains("proxy.upstreams.health: `/health` is one of Parallax's own routes"),
        "{err}"
    );
    assert!(err.contains("proxy.upstreams.health.base_url:"), "{err}");
    // A credential that is not in the environment stops the start, naming
    // the key and the variable.
    let (ok, err) = run_with_config(
        "serve",
        &config,
        "server:\n  port: 0\nproxy:\n  enabled: true\n  upstreams:\n    vllm:\n      base_url: http://127.0.0.1:1/v1\n      api: openai\n      auth: {header: authorization, env: PARALLAX_TEST_UNSET_KEY, scheme: Bearer}\n",
    );
    assert!(!ok, "{err}");
    assert!(
        err.contains("proxy.upstreams.vllm.auth.env: the environment variable `PARALLAX_TEST_UNSET_KEY` is not set"),
        "{err}"
    );
}

#[test]
fn a_bad_front_door_setting_names_its_key() {
    let dir = temp_dir("decision-settings");
    let config = dir.join("parallax.yaml");
    std::fs::write(
        &config,
        "server:\n  port: many\nreporting:\n  webhook_evnts: [block]\nproxy:\n  prot: 80\n",
    )
    .unwrap();
    let e = match parallax::backend::load(Some(&config), false) {
        Ok(_) => panic!("bad settings were accepted"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("server.port: invalid type"), "{e}");
    assert!(e.contains("unknown field `webhook_evnts`"), "{e}");
    assert!(
        e.contains("proxy") && e.contains("unknown field `prot`"),
        "{e}"
    );
    assert!(e.contains(&config.display().to_string()), "{e}");
}
