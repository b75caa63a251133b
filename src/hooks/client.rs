//! `parallax hook`'s way to a decision: `POST /evaluate` on the server
//! (bounded by a strict timeout, which covers connecting, sending and
//! reading the answer, so a hung server cannot hold the agent); when the
//! server cannot answer, the rules baked into this binary in-process
//! (stateless: the temporal SQL rules have no session history there), or,
//! with `--fail-closed`, a denial.
//!
//! An `approve` verdict is waited for: the request is `POST
//! /evaluate?wait=N` (N = `--approval-wait-secs`), which the server holds
//! only while a human approval is pending and then answers with the
//! outcome (approved: what the other rules say; denied or expired: block).
//! The exchange is then bounded by the timeout plus N, so the hook still
//! answers within the hook timeout `parallax setup` writes
//! ([`HOOK_TIMEOUT_S`]).

use super::payload::Mapped;
use super::verdict::Verdict;
use super::Framework;
use crate::decision::{DecisionService, Door, Origin};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::time::{Duration, Instant};

/// Where `parallax hook` asks by default (`parallax serve`'s default).
pub const DEFAULT_URL: &str = "http://127.0.0.1:9920";
/// How long `parallax hook` waits for the server by default.
pub const DEFAULT_TIMEOUT_MS: u64 = 2000;
/// How long `parallax hook` waits for a pending approval by default. Claude
/// Code and Codex both give a command hook 600 s unless its `timeout` says
/// otherwise; `parallax setup` writes [`HOOK_TIMEOUT_S`].
pub const DEFAULT_APPROVAL_WAIT_SECS: u64 = 120;
/// The `timeout` `parallax setup` writes on its hooks: the approval wait,
/// the server's timeout and the in-process fallback fit inside it.
pub const HOOK_TIMEOUT_S: u64 = DEFAULT_APPROVAL_WAIT_SECS + 30;

/// The header naming the front door on `POST /evaluate` (only `hook` is
/// recognised; anything else is the HTTP door).
pub const DOOR_HEADER: &str = "x-parallax-door";
/// The header naming the agent framework on `POST /evaluate`.
pub const FRAMEWORK_HEADER: &str = "x-parallax-framework";

pub struct Options {
    /// The server, e.g. `http://127.0.0.1:9920` (a path prefix is kept).
    pub url: String,
    pub token: Option<String>,
    /// For the whole exchange with the server (connecting alone, when
    /// an approval may be waited for).
    pub timeout: Duration,
    /// How long the server may hold the answer while an approval is
    /// pending (`?wait=`); zero: not at all (Claude Code then asks).
    pub approval_wait: Duration,
    pub fail_closed: bool,
}

/// How the decision was reached, for the hook's stderr line.
#[derive(Debug, PartialEq, Eq)]
pub enum Source {
    Server,
    InProcess { why: String },
    FailClosed { why: String },
}

/// The verdict on `mapped`, and where it came from.
pub fn decide(framework: Framework, mapped: &Mapped, opts: &Options) -> (Verdict, Source) {
    let asked = ask_server(framework, mapped, opts);
    let why = match asked {
        Ok(report) => return (Verdict::from_report(&report), Source::Server),
        Err(why) => why,
    };
    if opts.fail_closed {
        let verdict = Verdict::denied(format!(
            "the Parallax server at {} did not answer ({why}) and the hook is set to fail closed",
            opts.url
        ));
        return (verdict, Source::FailClosed { why });
    }
    match in_process(framework, mapped) {
        Ok(report) => {
            let mut verdict = Verdict::from_report(&report);
            let note = format!(
                "decided in-process by the rules built into parallax: the server at {} did not \
                 answer ({why}); temporal rules skipped",
                opts.url
            );
            verdict.note = Some(match verdict.note.take() {
                Some(n) => format!("{n}; {note}"),
                None => note,
            });
            (verdict, Source::InProcess { why })
        }
        // The baked rules not loading is a broken binary: deny rather
        // than let the call through unjudged.
        Err(e) => (
            Verdict::denied(format!(
                "the server at {} did not answer ({why}) and the built-in rules failed: {e}",
                opts.url
            )),
            Source::FailClosed { why: e },
        ),
    }
}

/// The server's report, or why there is none.
fn ask_server(framework: Framework, mapped: &Mapped, opts: &Options) -> Result<Value, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("no async runtime: {e}"))?;
    let body = serde_json::to_vec(&mapped.body).map_err(|e| e.to_string())?;
    let bound = opts.timeout + opts.approval_wait;
    rt.block_on(async {
        match tokio::time::timeout(bound, post(framework, opts, body)).await {
            Ok(r) => r,
            Err(_) => Err(format!("no answer within {} ms", bound.as_millis())),
        }
    })
}

async fn post(framework: Framework, opts: &Options, body: Vec<u8>) -> Result<Value, String> {
    let base = opts.url.trim_end_matches('/');
    let wait = opts.approval_wait.as_secs();
    let query = if wait > 0 {
        format!("?wait={wait}")
    } else {
        String::new()
    };
    let uri: Uri = format!("{base}/evaluate{query}")
        .parse()
        .map_err(|e| format!("invalid --url `{}`: {e}", opts.url))?;
    if uri.scheme_str() != Some("http") {
        return Err(format!("--url `{}` is not an http:// URL", opts.url));
    }
    let host = uri
        .host()
        .ok_or_else(|| format!("--url `{}` has no host", opts.url))?;
    let port = uri.port_u16().unwrap_or(80);
    let authority = uri
        .authority()
        .map(|a| a.to_string())
        .unwrap_or_else(|| host.to_owned());
    let path = uri
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_else(|| "/evaluate".into());
    let host = host.trim_start_matches('[').trim_end_matches(']');
    // Connecting is bounded by the timeout alone: a server that is not
    // there must not cost the approval wait too.
    let stream = tokio::time::timeout(opts.timeout, tokio::net::TcpStream::connect((host, port)))
        .await
        .map_err(|_| {
            format!(
                "cannot connect to {authority} within {} ms",
                opts.timeout.as_millis()
            )
        })?
        .map_err(|e| format!("cannot connect to {authority}: {e}"))?;
    let _ = stream.set_nodelay(true);
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP handshake with {authority}: {e}"))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut req = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header(HOST, authority.as_str())
        .header(CONTENT_TYPE, "application/json")
        .header(DOOR_HEADER, "hook")
        .header(FRAMEWORK_HEADER, framework.as_str())
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    if let Some(token) = &opts.token {
        let v = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| "PARALLAX_AUTH_TOKEN is not a valid header value".to_owned())?;
        req.headers_mut().insert(AUTHORIZATION, v);
    }
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| format!("request to {authority}: {e}"))?;
    let status = resp.status();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("reading the answer from {authority}: {e}"))?
        .to_bytes();
    if status != StatusCode::OK {
        let text = String::from_utf8_lossy(&bytes);
        let text: String = text.chars().take(300).collect();
        return Err(format!("{authority} answered {status}: {text}"));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("{authority} answered non-JSON: {e}"))
}

/// The report of the baked rules on `mapped`, as JSON.
fn in_process(framework: Framework, mapped: &Mapped) -> Result<Value, String> {
    let started = Instant::now();
    let engine = crate::backend::baked::engine().map_err(|e| e.to_string())?;
    let settings = crate::settings::read(&engine.program().settings)
        .map_err(|problems| format!("the built-in settings: {}", problems.join("; ")))?;
    let service = DecisionService::new(engine, settings).map_err(|e| e.to_string())?;
    let origin = origin(framework, mapped);
    let report = service.decide(mapped.event.clone(), &origin, started);
    serde_json::to_value(&report).map_err(|e| e.to_string())
}

/// The origin of a hook's event.
pub fn origin(framework: Framework, mapped: &Mapped) -> Origin {
    Origin {
        door: Door::Hook,
        framework: Some(framework.as_str().to_owned()),
        session_id: mapped.session_id.clone(),
        tenant: None,
    }
}

/// The origin `POST /evaluate` records: the HTTP door, unless the request
/// says it is a hook (`X-Parallax-Door: hook`, `X-Parallax-Framework:
/// NAME`, as `parallax hook` sends them). Only recorded (audit, metrics);
/// it never changes what the rules decide.
pub fn origin_from_headers(headers: &hyper::HeaderMap) -> Origin {
    let is_hook = headers
        .get(DOOR_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("hook"));
    if !is_hook {
        return Origin::door(Door::Http);
    }
    let framework = headers
        .get(FRAMEWORK_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|f| {
            !f.is_empty()
                && f.len() <= 32
                && f.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
        .map(str::to_ascii_lowercase);
    Origin {
        door: Door::Hook,
        framework,
        session_id: None,
        tenant: None,
    }
}
