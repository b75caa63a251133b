//! The model-API proxy end to end in Rust: the real server with the proxy
//! door, the shipped rules, and a scripted upstream on 127.0.0.1. What each
//! API's traffic becomes, what reaches the upstream, and what the agent gets
//! back, streamed and not. (The official SDKs and the real agents are driven
//! by tests/python_sdks.rs and tests/agents.rs.)

mod support;

#[path = "support/fake_upstream.rs"]
mod fake_upstream;

use fake_upstream::{Canned, FakeUpstream};
use parallax::proxy::sse::{SseItem, SseParser};
use serde_json::{json, Value};
use std::path::Path;
use support::*;

const PROXY_CONFIG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/proxy/parallax.yaml"
);

fn proxy_for(upstream: &FakeUpstream) -> TestServer {
    let url = upstream.url();
    TestServer::start_doors(
        Path::new(PROXY_CONFIG),
        move |s| {
            s.proxy.enabled = true;
            s.proxy.anthropic_upstream = url.clone();
            s.proxy.openai_upstream = url;
            s.proxy.keepalive_ms = 50;
        },
        |service, _| service,
    )
}

fn post_json(server: &TestServer, path: &str, headers: &[(&str, &str)], body: &Value) -> Response {
    let mut h = vec![("Content-Type", "application/json")];
    h.extend_from_slice(headers);
    request(server.addr, "POST", path, &h, body.to_string().as_bytes())
}

/// The events of an SSE body, as (type, data JSON).
fn sse_events(body: &[u8]) -> Vec<(String, Value)> {
    let mut p = SseParser::new();
    let mut items = Vec::new();
    p.feed(body, &mut items).expect("a valid stream");
    p.finish(&mut items);
    items
        .into_iter()
        .filter_map(|i| match i {
            SseItem::Event(e) => {
                let data = serde_json::from_str(&e.data).unwrap_or(Value::String(e.data.clone()));
                Some((e.event_type().to_string(), data))
            }
            SseItem::Comment(_) => None,
        })
        .collect()
}

const DANGEROUS: &str = "rm -rf /";
const BENIGN: &str = "ls -la";

fn messages_request(stream: bool) -> Value {
    json!({
        "model": "claude-test",
        "max_tokens": 100,
        "stream": stream,
        "metadata": {"user_id": "user_1_session_abc"},
        "messages": [{"role": "user", "content": "tidy up the repo"}],
    })
}

fn messages_response_with_two_calls() -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [
            {"type": "text", "text": "Running two commands."},
            {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": DANGEROUS}},
            {"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"command": BENIGN}},
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 5, "output_tokens": 7},
    })
}

/// The same response as an Anthropic stream, tool input in pieces.
fn messages_stream_with_two_calls() -> String {
    let mut s = String::new();
    let mut ev = |kind: &str, data: Value| {
        let mut data = data;
        data["type"] = json!(kind);
        s.push_str(&format!("event: {kind}\ndata: {data}\n\n"));
    };
    ev(
        "message_start",
        json!({"message": {"id": "msg_1", "type": "message", "role": "assistant",
                            "model": "claude-test", "content": [], "stop_reason": null,
                            "usage": {"input_tokens": 5, "output_tokens": 1}}}),
    );
    ev(
        "content_block_start",
        json!({"index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    for piece in ["Running ", "two commands."] {
        ev(
            "content_block_delta",
            json!({"index": 0, "delta": {"type": "text_delta", "text": piece}}),
        );
    }
    ev("content_block_stop", json!({"index": 0}));
    ev("ping", json!({}));
    for (i, (id, cmd)) in [(1, "toolu_1"), (2, "toolu_2")]
        .iter()
        .map(|(i, id)| (*i, *id))
        .zip([DANGEROUS, BENIGN])
        .map(|((i, id), c)| (i, (id, c)))
    {
        ev(
            "content_block_start",
            json!({"index": i, "content_block": {"type": "tool_use", "id": id, "name": "Bash",
                                                  "input": {}}}),
        );
        let args = json!({"command": cmd}).to_string();
        let (a, b) = args.split_at(args.len() / 2);
        for piece in [a, b] {
            ev(
                "content_block_delta",
                json!({"index": i, "delta": {"type": "input_json_delta", "partial_json": piece}}),
            );
        }
        ev("content_block_stop", json!({"index": i}));
    }
    ev(
        "message_delta",
        json!({"delta": {"stop_reason": "tool_use", "stop_sequence": null},
               "usage": {"output_tokens": 20}}),
    );
    ev("message_stop", json!({}));
    s
}

#[test]
fn messages_a_blocked_tool_call_becomes_text_and_a_benign_one_stays() {
    let upstream = FakeUpstream::start(vec![Canned::json(&messages_response_with_two_calls())]);
    let server = proxy_for(&upstream);
    let r = post_json(
        &server,
        "/anthropic/v1/messages?beta=true",
        &[
            ("x-api-key", "sk-test"),
            ("anthropic-version", "2023-06-01"),
        ],
        &messages_request(false),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    let content = v["content"].as_array().unwrap();
    assert_eq!(content.len(), 3, "{v}");
    assert_eq!(content[1]["type"], "text", "{v}");
    let text = content[1]["text"].as_str().unwrap();
    assert!(text.contains("dangerous-rm-rf-root"), "{text}");
    assert_eq!(content[2]["type"], "tool_use");
    assert_eq!(content[2]["input"]["command"], BENIGN);
    assert_eq!(v["stop_reason"], "tool_use", "a call is left");
    // What the upstream saw: the query string and the agent's headers.
    let got = &upstream.requests()[0];
    assert_eq!(got.path_and_query, "/v1/messages?beta=true");
    assert_eq!(got.header("x-api-key"), Some("sk-test"));
    assert_eq!(got.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(got.header("accept-encoding"), Some("identity"));
    // The decisions went through the decision service, door `proxy`.
    let metrics = request(server.addr, "GET", "/metrics", &[], b"");
    let text = String::from_utf8(metrics.body).unwrap();
    assert!(
        text.contains("door=\"proxy\",stage=\"tool.before\",action=\"block\"} 1"),
        "{text}"
    );
}

#[test]
fn messages_stream_holds_tool_calls_and_replaces_the_blocked_one() {
    // Chunks of 7 bytes: events split across reads everywhere.
    let upstream = FakeUpstream::start(vec![Canned::sse(&messages_stream_with_two_calls(), 7)]);
    let server = proxy_for(&upstream);
    let r = post_json(
        &server,
        "/anthropic/v1/messages",
        &[],
        &messages_request(true),
    );
    assert_eq!(r.status, 200);
    let events = sse_events(&r.body);
    for (kind, data) in &events {
        assert_eq!(data["type"], kind.as_str(), "event line and type differ");
    }
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds.first(), Some(&"message_start"));
    assert_eq!(kinds.last(), Some(&"message_stop"));
    // Block 1 was the dangerous call: now a text block at the same index.
    let starts: Vec<&Value> = events
        .iter()
        .filter(|(k, _)| k == "content_block_start")
        .map(|(_, d)| d)
        .collect();
    assert_eq!(starts.len(), 3);
    assert_eq!(starts[1]["index"], 1);
    assert_eq!(starts[1]["content_block"]["type"], "text");
    assert_eq!(starts[2]["index"], 2);
    assert_eq!(starts[2]["content_block"]["type"], "tool_use");
    let text: String = events
        .iter()
        .filter(|(k, d)| k == "content_block_delta" && d["index"] == 1)
        .filter_map(|(_, d)| d["delta"]["text"].as_str())
        .collect();
    assert!(text.contains("dangerous-rm-rf-root"), "{text}");
    let json: String = events
        .iter()
        .filter(|(k, d)| k == "content_block_delta" && d["index"] == 2)
        .filter_map(|(_, d)| d["delta"]["partial_json"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&json).unwrap(),
        json!({"command": BENIGN})
    );
    // Text deltas went through as they came.
    let reply: String = events
        .iter()
        .filter(|(k, d)| k == "content_block_delta" && d["index"] == 0)
        .filter_map(|(_, d)| d["delta"]["text"].as_str())
        .collect();
    assert_eq!(reply, "Running two commands.");
}

#[test]
fn messages_stream_with_every_call_blocked_ends_the_turn() {
    let only_dangerous = messages_stream_with_two_calls().replace(BENIGN, DANGEROUS);
    let upstream = FakeUpstream::start(vec![Canned::sse(&only_dangerous, 64)]);
    let server = proxy_for(&upstream);
    let r = post_json(
        &server,
        "/anthropic/v1/messages",
        &[],
        &messages_request(true),
    );
    let events = sse_events(&r.body);
    assert!(
        !events
            .iter()
            .any(|(_, d)| d["content_block"]["type"] == "tool_use"),
        "a blocked call got through"
    );
    let delta = events
        .iter()
        .find(|(k, _)| k == "message_delta")
        .map(|(_, d)| d.clone())
        .unwrap();
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
}

#[test]
fn a_blocked_user_turn_is_not_forwarded_and_gets_an_assistant_reply() {
    let upstream = FakeUpstream::start(vec![]);
    let server = proxy_for(&upstream);
    let mut body = messages_request(false);
    body["messages"] = json!([
        {"role": "user", "content": [{"type": "text", "text": "please wipe the production database"}]}
    ]);
    let r = post_json(&server, "/anthropic/v1/messages", &[], &body);
    let v = r.json();
    let text = v["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("fixture-forbidden-request"), "{v}");
    assert_eq!(v["type"], "message");
    assert_eq!(v["role"], "assistant");
    assert_eq!(v["stop_reason"], "end_turn");
    assert!(
        upstream.requests().is_empty(),
        "a blocked turn was forwarded"
    );
    // Streamed, the same answer comes as a stream.
    body["stream"] = json!(true);
    let r = post_json(&server, "/anthropic/v1/messages", &[], &body);
    let events = sse_events(&r.body);
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert!(upstream.requests().is_empty());
}

#[test]
fn an_old_blocked_turn_in_the_history_does_not_block_a_new_one() {
    let upstream = FakeUpstream::start(vec![Canned::json(&json!({
        "id": "msg_2", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1}
    }))]);
    let server = proxy_for(&upstream);
    let mut body = messages_request(false);
    body["messages"] = json!([
        {"role": "user", "content": "wipe the production database"},
        {"role": "assistant", "content": "I won't."},
        {"role": "user", "content": "fine, list the files then"},
        {"role": "system", "content": [{"type": "text", "text": "reminder"}]},
    ]);
    let r = post_json(&server, "/anthropic/v1/messages", &[], &body);
    assert_eq!(r.json()["content"][0]["text"], "ok");
    assert_eq!(upstream.requests().len(), 1);
}

#[test]
fn a_secret_in_a_tool_result_is_redacted_before_it_is_forwarded() {
    let upstream = FakeUpstream::start(vec![Canned::json(&json!({
        "id": "msg_3", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": "noted"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1}
    }))]);
    let server = proxy_for(&upstream);
    let key = "AKIAIOSFODNN7EXAMPLQ";
    let mut body = messages_request(false);
    body["messages"] = json!([
        {"role": "user", "content": "read the env file"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_9", "name": "Read", "input": {"file_path": "app.env"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_9", "content": format!("AWS_KEY={key}")}]},
    ]);
    let r = post_json(&server, "/anthropic/v1/messages", &[], &body);
    assert_eq!(r.status, 200);
    let sent = upstream.requests()[0].json();
    let result = sent["messages"][2]["content"][0]["content"]
        .as_str()
        .unwrap();
    assert!(
        !result.contains(key),
        "the secret reached the upstream: {result}"
    );
    assert!(result.contains("[REDACTED]"), "{result}");
}

#[test]
fn chat_completions_blocked_call_removed_and_finish_reason_fixed() {
    let upstream = FakeUpstream::start(vec![Canned::json(&json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-test",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function",
                            "function": {"name": "exec", "arguments": json!({"command": DANGEROUS}).to_string()}}]}}]
    }))]);
    let server = proxy_for(&upstream);
    let r = post_json(
        &server,
        "/openai/v1/chat/completions",
        &[("authorization", "Bearer sk-test")],
        &json!({"model": "gpt-test", "messages": [{"role": "user", "content": "clean up"}]}),
    );
    let v = r.json();
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "stop", "{v}");
    assert!(choice["message"].get("tool_calls").is_none(), "{v}");
    assert!(choice["message"]["content"]
        .as_str()
        .unwrap()
        .contains("dangerous-rm-rf-root"));
    assert_eq!(
        upstream.requests()[0].header("authorization"),
        Some("Bearer sk-test")
    );
}

#[test]
fn chat_stream_holds_calls_until_finish_and_keeps_the_benign_one() {
    let mut s = String::new();
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut push = |v: Value| s.push_str(&format!("data: {v}\n\n"));
    push(chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    ));
    for (k, (id, cmd)) in [("call_a", DANGEROUS), ("call_b", BENIGN)]
        .iter()
        .enumerate()
    {
        let args = json!({"command": cmd}).to_string();
        let (a, b) = args.split_at(5);
        push(chunk(
            json!({"tool_calls": [{"index": k, "id": id, "type": "function",
                                    "function": {"name": "exec", "arguments": a}}]}),
            Value::Null,
        ));
        push(chunk(
            json!({"tool_calls": [{"index": k, "function": {"arguments": b}}]}),
            Value::Null,
        ));
    }
    push(chunk(json!({}), json!("tool_calls")));
    s.push_str("data: [DONE]\n\n");
    let upstream = FakeUpstream::start(vec![Canned::sse(&s, 11)]);
    let server = proxy_for(&upstream);
    let r = post_json(
        &server,
        "/openai/v1/chat/completions",
        &[],
        &json!({"model": "gpt-test", "stream": true,
                "messages": [{"role": "user", "content": "clean up"}]}),
    );
    let events = sse_events(&r.body);
    assert_eq!(events.last().unwrap().1, json!("[DONE]"));
    let calls: Vec<&Value> = events
        .iter()
        .filter_map(|(_, d)| d["choices"][0]["delta"]["tool_calls"].as_array())
        .flatten()
        .collect();
    assert_eq!(calls.len(), 1, "{events:?}");
    assert_eq!(calls[0]["index"], 0);
    assert_eq!(calls[0]["id"], "call_b");
    assert_eq!(
        serde_json::from_str::<Value>(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap(),
        json!({"command": BENIGN})
    );
    let content: String = events
        .iter()
        .filter_map(|(_, d)| d["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert!(content.contains("dangerous-rm-rf-root"), "{content}");
    let finish = events
        .iter()
        .find_map(|(_, d)| d["choices"][0]["finish_reason"].as_str().map(String::from));
    assert_eq!(finish.as_deref(), Some("tool_calls"));
}

#[test]
fn responses_stream_replaces_a_blocked_exec_command_at_its_index() {
    let mut seq = 0;
    let mut s = String::new();
    let mut ev = |kind: &str, mut d: Value| {
        d["type"] = json!(kind);
        d["sequence_number"] = json!(seq);
        seq += 1;
        s.push_str(&format!("event: {kind}\ndata: {d}\n\n"));
    };
    let call = json!({"type": "function_call", "id": "fc_1", "call_id": "call_1",
                      "name": "exec_command", "arguments": "", "status": "in_progress"});
    ev(
        "response.created",
        json!({"response": {"id": "resp_1", "status": "in_progress", "output": []}}),
    );
    ev(
        "response.output_item.added",
        json!({"output_index": 0, "item": call}),
    );
    let args = json!({"cmd": DANGEROUS}).to_string();
    ev(
        "response.function_call_arguments.delta",
        json!({"output_index": 0, "item_id": "fc_1", "delta": args}),
    );
    ev(
        "response.function_call_arguments.done",
        json!({"output_index": 0, "item_id": "fc_1", "arguments": args}),
    );
    let mut done = call.clone();
    done["arguments"] = json!(args);
    done["status"] = json!("completed");
    ev(
        "response.output_item.done",
        json!({"output_index": 0, "item": done.clone()}),
    );
    ev(
        "response.completed",
        json!({"response": {"id": "resp_1", "status": "completed", "output": [done]}}),
    );
    let upstream = FakeUpstream::start(vec![Canned::sse(&s, 13)]);
    let server = proxy_for(&upstream);
    let r = post_json(
        &server,
        "/openai/v1/responses",
        &[("session-id", "codex-thread-1")],
        &json!({"model": "gpt-test", "stream": true,
                "input": [{"type": "message", "role": "user", "content": "clean up"}]}),
    );
    let events = sse_events(&r.body);
    let seqs: Vec<u64> = events
        .iter()
        .filter_map(|(_, d)| d["sequence_number"].as_u64())
        .collect();
    assert_eq!(
        seqs,
        (0..seqs.len() as u64).collect::<Vec<_>>(),
        "renumbered"
    );
    assert!(
        !events
            .iter()
            .any(|(_, d)| d["item"]["type"] == "function_call"),
        "the blocked call got through: {events:?}"
    );
    let completed = &events.last().unwrap().1;
    assert_eq!(completed["type"], "response.completed");
    let item = &completed["response"]["output"][0];
    assert_eq!(item["type"], "message");
    assert!(item["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("dangerous-rm-rf-root"));
}

#[test]
fn other_paths_pass_through_and_a_dead_upstream_is_an_api_error() {
    let upstream = FakeUpstream::start(vec![Canned::json(&json!({"data": [{"id": "m1"}]}))]);
    let server = proxy_for(&upstream);
    let r = request(
        server.addr,
        "GET",
        "/openai/v1/models?limit=2",
        &[("authorization", "Bearer k")],
        b"",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["data"][0]["id"], "m1");
    assert_eq!(upstream.requests()[0].path_and_query, "/v1/models?limit=2");
    drop(server);
    // An upstream nobody listens on.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let server = TestServer::start_doors(
        Path::new(PROXY_CONFIG),
        move |s| {
            s.proxy.enabled = true;
            s.proxy.anthropic_upstream = url.clone();
            s.proxy.openai_upstream = url;
        },
        |service, _| service,
    );
    let r = post_json(
        &server,
        "/anthropic/v1/messages",
        &[],
        &messages_request(false),
    );
    assert_eq!(r.status, 502);
    let v = r.json();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "api_error");
    let r = post_json(
        &server,
        "/openai/v1/chat/completions",
        &[],
        &json!({"model": "m", "messages": []}),
    );
    assert_eq!(r.status, 502);
    assert_eq!(r.json()["error"]["code"], "upstream_unavailable");
}

#[test]
fn with_an_auth_token_proxy_paths_take_it_in_their_own_header_and_never_forward_it() {
    let upstream = FakeUpstream::start(vec![Canned::json(&json!({"data": []}))]);
    let url = upstream.url();
    let server = TestServer::start_doors(
        Path::new(PROXY_CONFIG),
        move |s| {
            s.server.auth_token = Some("parallax-secret".into());
            s.proxy.enabled = true;
            s.proxy.anthropic_upstream = url.clone();
            s.proxy.openai_upstream = url;
        },
        |service, _| service,
    );
    // The agent's own API key in Authorization is not Parallax's token.
    let r = request(
        server.addr,
        "GET",
        "/openai/v1/models",
        &[("authorization", "Bearer sk-agent")],
        b"",
    );
    let message = r.assert_error(401, "unauthorized");
    assert!(message.contains("X-Parallax-Token"), "{message}");
    assert!(upstream.requests().is_empty());
    let r = request(
        server.addr,
        "GET",
        "/openai/v1/models",
        &[
            ("authorization", "Bearer sk-agent"),
            ("x-parallax-token", "parallax-secret"),
        ],
        b"",
    );
    assert_eq!(r.status, 200);
    let got = &upstream.requests()[0];
    assert_eq!(got.header("authorization"), Some("Bearer sk-agent"));
    assert_eq!(
        got.header("x-parallax-token"),
        None,
        "the token leaked upstream"
    );
}

#[test]
fn responses_a_command_written_in_code_is_blocked_like_a_command() {
    // Codex's default model calls a JavaScript `exec` tool whose code
    // calls the other tools: the command inside is what counts.
    let upstream = FakeUpstream::start(vec![Canned::json(&json!({
        "id": "resp_2", "object": "response", "status": "completed", "model": "gpt-test",
        "output": [
            {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_7", "name": "exec",
             "input": format!("const r = await tools.exec_command({{cmd: \"{DANGEROUS}\"}});")},
            {"type": "function_call", "id": "fc_2", "call_id": "call_8", "name": "exec_command",
             "arguments": json!({"cmd": BENIGN}).to_string()},
        ],
    }))]);
    let server = proxy_for(&upstream);
    let r = post_json(
        &server,
        "/openai/v1/responses",
        &[],
        &json!({"model": "gpt-test", "input": "clean up"}),
    );
    let v = r.json();
    assert_eq!(v["output"][0]["type"], "message", "{v}");
    assert!(v["output"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("dangerous-rm-rf-root"));
    assert_eq!(v["output"][1]["type"], "function_call");
    assert_eq!(v["output"][1]["name"], "exec_command");
}
