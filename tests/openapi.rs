//! The API contract (`parallax docs api`, docs/openapi.json) against the
//! code: the committed file is what the binary prints; every path the
//! router matches is in it; every documented operation is answered by a
//! running server (not the router's "no such endpoint", not 405) and every
//! undocumented method on a documented path gets 405 with `Allow`. The
//! schemas built from runtime enums name exactly the runtime's values.

mod support;

use parallax_runtime::{Action, Event, Stage};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use support::*;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/api/parallax.yaml"
);
const AGENT: &str = "agent-token";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn doc() -> Value {
    parallax::http::openapi::document()
}

/// (method, path) of every documented operation.
fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut ops = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("a path item").keys() {
            ops.insert((method.to_uppercase(), path.clone()));
        }
    }
    ops
}

#[test]
fn committed_docs_openapi_json_is_current() {
    let out = Command::new(env!("CARGO_BIN_EXE_parallax"))
        .args(["docs", "api"])
        .output()
        .expect("run parallax docs api");
    assert!(out.status.success(), "parallax docs api failed: {out:?}");
    let printed = String::from_utf8(out.stdout).expect("UTF-8");
    assert_eq!(printed, parallax::http::openapi::document_json());
    let committed = std::fs::read_to_string(repo().join("docs/openapi.json")).unwrap_or_default();
    assert!(
        committed == printed,
        "docs/openapi.json is out of date: run `cargo run -- docs api > docs/openapi.json`"
    );
    let v: Value = serde_json::from_str(&printed).expect("the document is JSON");
    assert_eq!(v["openapi"], "3.1.0");
    assert_eq!(v["info"]["version"], env!("CARGO_PKG_VERSION"));
}

/// The string literals naming paths in the router (`"/evaluate"`, ...),
/// and the verbs the approvals module matches under `/approvals/{id}/`.
fn routed_paths() -> BTreeSet<String> {
    let router = std::fs::read_to_string(repo().join("src/http/router.rs")).expect("router.rs");
    let mut paths = BTreeSet::new();
    for piece in router.split('"').skip(1).step_by(2) {
        let piece = piece.trim_end_matches('/');
        if piece.starts_with('/') && !piece.contains(' ') {
            paths.insert(piece.to_string());
        }
    }
    let approvals =
        std::fs::read_to_string(repo().join("src/http/approvals.rs")).expect("approvals.rs");
    // The catch-all arm `(_, [_, "approve" | "deny" | ...])` lists every verb.
    let arm = approvals
        .lines()
        .find(|l| l.contains("(_, [_, "))
        .expect("the approvals module's method-not-allowed arm for verbs");
    let start = arm.find("[_, ").map(|i| i + 4).unwrap_or(0);
    let verbs = &arm[start..start + arm[start..].find(']').unwrap_or(0)];
    for verb in verbs.split('"').skip(1).step_by(2) {
        paths.insert(format!("/approvals/{{id}}/{verb}"));
    }
    paths.insert("/approvals/{id}".into());
    paths
}

#[test]
fn every_route_in_the_router_is_documented() {
    let doc = doc();
    let documented: BTreeSet<String> = doc["paths"]
        .as_object()
        .expect("paths")
        .keys()
        .cloned()
        .collect();
    let routed = routed_paths();
    assert!(routed.contains("/evaluate") && routed.contains("/approvals/{id}/approve"));
    for p in &routed {
        assert!(
            documented.contains(p),
            "the router serves `{p}` but docs/openapi.json does not describe it \
             (src/http/openapi.rs)"
        );
    }
    // The dashboard is served by prefix (`is_dashboard_path`): documented.
    assert!(
        documented.contains("/ui") && documented.contains("/ui/api/overview"),
        "the router serves the dashboard (/ui) but docs/openapi.json does not describe it"
    );
    for p in documented.iter().filter(|p| p.starts_with("/ui")) {
        assert!(parallax::dashboard::is_dashboard_path(p), "{p}");
    }
    // The proxy is served by prefix: its documented templates are proxy paths.
    for p in documented.iter().filter(|p| p.ends_with("/{path}")) {
        let concrete = p.replace("{path}", "v1/messages");
        assert!(
            parallax::proxy::is_proxy_path(&concrete),
            "`{p}` is documented as a proxy path but the proxy does not route it"
        );
    }
}

#[test]
fn schemas_built_from_runtime_enums_match_the_runtime() {
    let doc = doc();
    let s = &doc["components"]["schemas"];
    let stages: Vec<Value> = Stage::ALL.iter().map(|x| json!(x.as_str())).collect();
    assert_eq!(s["Stage"]["enum"], json!(stages));
    let actions: Vec<Value> = Action::ALL.iter().map(|x| json!(x.as_str())).collect();
    assert_eq!(s["Action"]["enum"], json!(actions));
    // Each documented event field is accepted by the parser, and one that
    // is not documented is rejected: the property list is the parser's.
    let props = s["Event"]["properties"]
        .as_object()
        .expect("Event properties");
    assert_eq!(s["Event"]["additionalProperties"], false);
    for field in props.keys() {
        let value = match field.as_str() {
            "stage" => json!("tool.before"),
            "timestamp" => json!(1_700_000_000.0),
            "tool_args" | "tool_result" | "params" | "metadata" => json!({}),
            "documents" => json!([{"text": "x", "source": "kb"}]),
            _ => json!("x"),
        };
        let mut event = json!({"stage": "tool.before"});
        event[field] = value;
        Event::from_value(event).unwrap_or_else(|e| panic!("documented field `{field}`: {e}"));
    }
    assert!(Event::from_value(json!({"stage": "tool.before", "tool_arg": {}})).is_err());
    assert_eq!(props.len(), parallax_runtime::event::FIELDS.len());
}

fn server(dir: &Path) -> TestServer {
    let db = dir.join("approvals.db").display().to_string();
    TestServer::start(
        Path::new(FIXTURE),
        move |s| {
            s.server.auth_token = Some(AGENT.into());
            s.approvals.path = db;
            s.approvals.approver_tokens = [("alice".to_string(), "alice-token".to_string())]
                .into_iter()
                .collect();
        },
        |service, _| {
            // Ready, as `serve` is once its warm-up is done: `/ready`
            // answers 503 before, which the probe below counts as an error.
            service.warm_up();
            service
        },
    )
}

/// A request as an authenticated agent, with a concrete path.
fn probe(addr: std::net::SocketAddr, method: &str, path: &str) -> Response {
    let path = path.replace("{id}", "apr_probe");
    let body: &[u8] = if method == "POST" || method == "PUT" || method == "PATCH" {
        br#"{"stage":"tool.before","tool_name":"ls"}"#
    } else {
        b""
    };
    request(
        addr,
        method,
        &path,
        &[
            ("Authorization", "Bearer agent-token"),
            ("Content-Type", "application/json"),
        ],
        body,
    )
}

#[test]
fn a_running_server_answers_exactly_the_documented_operations() {
    let dir = temp_dir("openapi-probe");
    let s = server(&dir);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !s.state.ready() {
        assert!(
            std::time::Instant::now() < deadline,
            "not ready within 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let doc = doc();
    let ops = operations(&doc);
    let paths: BTreeSet<&String> = ops.iter().map(|(_, p)| p).collect();
    for path in paths {
        if path.ends_with("/{path}") || path.ends_with("/stream") {
            continue; // the proxy forwards upstream; a stream never ends
        }
        for method in ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"] {
            let documented = ops.contains(&(method.to_string(), path.clone()));
            if method == "HEAD" && !documented {
                continue; // a HEAD answer carries no body to read the error from
            }
            let r = probe(s.addr, method, path);
            let text = String::from_utf8_lossy(&r.body).into_owned();
            if documented {
                assert_ne!(r.status, 405, "{method} {path} is documented: {text}");
                assert!(
                    !text.contains("no such endpoint"),
                    "{method} {path} is documented but not routed: {text}"
                );
                assert!(r.status < 500, "{method} {path}: {} {text}", r.status);
            } else {
                r.assert_error(405, "method_not_allowed");
                assert!(
                    r.header("allow").is_some(),
                    "{method} {path}: 405 without Allow"
                );
            }
        }
    }
}

/// Every `"METHOD", "/path"` the Python client (clients/python/) sends,
/// with a path built as `"/approvals/" + id` read as `/approvals/{id}`.
fn python_client_calls() -> Vec<(String, String)> {
    let mut calls = Vec::new();
    let mut stack = vec![repo().join("clients/python/parallax_client")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "py") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            for method in ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"] {
                let needle = format!("\"{method}\", \"/");
                for (at, _) in text.match_indices(&needle) {
                    let rest = &text[at + needle.len() - 1..];
                    let Some(end) = rest.find('"') else { continue };
                    let mut path = rest[..end].to_string();
                    if path.ends_with('/') && rest[end + 1..].trim_start().starts_with('+') {
                        path.push_str("{id}");
                    }
                    calls.push((method.to_string(), path));
                }
            }
        }
    }
    calls
}

#[test]
fn every_call_of_the_python_client_is_documented() {
    if !repo().join("clients/python/parallax_client").is_dir() {
        let _ = writeln!(
            std::io::stderr(),
            "skipped: Python client contract check — no clients/python/parallax_client"
        );
        return;
    }
    let ops = operations(&doc());
    let calls = python_client_calls();
    assert!(
        calls.iter().any(|(m, p)| m == "POST" && p == "/evaluate"),
        "found none of the Python client's requests (its call pattern changed?): {calls:?}"
    );
    for (method, path) in calls {
        assert!(
            ops.contains(&(method.clone(), path.clone())),
            "the Python client sends {method} {path}, which docs/openapi.json does not describe"
        );
    }
}
