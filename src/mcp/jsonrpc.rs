//! JSON-RPC 2.0 framing for the MCP gateway: what one message from either
//! side is (request, notification, response, a batch of them), the error
//! answers for what is not one, and reading newline-delimited messages
//! with a size bound.
//!
//! A message is parsed whole before anything is decided or forwarded, so
//! the other side never sees half of one. Parsing is serde_json's (linear
//! in the input, recursion bounded), classification looks at the top-level
//! keys only, and reading a line scans each byte once.

use serde_json::{json, Map, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// JSON-RPC's "Parse error".
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's "Invalid Request".
pub const INVALID_REQUEST: i64 = -32600;

/// What kind of message an object is.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A call that expects an answer with the same `id`.
    Request { id: Value, method: String },
    /// A call without an `id`: nobody answers it.
    Notification { method: String },
    /// An answer (`result` or `error`) to the request with this `id`.
    Response { id: Value },
}

/// One well-formed JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub kind: Kind,
    /// The whole object, as sent.
    pub body: Map<String, Value>,
}

impl Message {
    pub fn method(&self) -> Option<&str> {
        match &self.kind {
            Kind::Request { method, .. } | Kind::Notification { method } => Some(method),
            Kind::Response { .. } => None,
        }
    }

    /// The message as JSON again.
    pub fn into_value(self) -> Value {
        Value::Object(self.body)
    }
}

/// One element of what a peer sent: a message, or the error answer owed
/// for an element that is not one.
#[derive(Debug, Clone, PartialEq)]
pub enum Element {
    Ok(Message),
    Bad(Value),
}

/// Everything one line (or one HTTP body, one SSE event) held.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Single(Message),
    Batch(Vec<Element>),
}

/// Parses and classifies `bytes`; `Err` is the error answer for the
/// sender (parse error, invalid request), and nothing is to be forwarded.
pub fn parse(bytes: &[u8]) -> Result<Incoming, Value> {
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => {
            return Err(error(
                Value::Null,
                PARSE_ERROR,
                &format!("Parse error: {e}"),
            ))
        }
    };
    match value {
        Value::Array(items) if items.is_empty() => Err(error(
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request: empty batch",
        )),
        Value::Array(items) => Ok(Incoming::Batch(
            items
                .into_iter()
                .map(|v| match classify(v) {
                    Ok(m) => Element::Ok(m),
                    Err(e) => Element::Bad(e),
                })
                .collect(),
        )),
        v => classify(v).map(Incoming::Single),
    }
}

fn valid_id(id: &Value) -> bool {
    matches!(id, Value::String(_) | Value::Number(_))
}

/// One value as a message, or the invalid-request answer naming why not.
pub fn classify(value: Value) -> Result<Message, Value> {
    let Value::Object(body) = value else {
        return Err(error(
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request: a message must be a JSON object",
        ));
    };
    let id = body.get("id").cloned();
    let answer_id = id.clone().filter(valid_id).unwrap_or(Value::Null);
    let bad = |why: &str| {
        error(
            answer_id.clone(),
            INVALID_REQUEST,
            &format!("Invalid Request: {why}"),
        )
    };
    if body.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(bad("`jsonrpc` must be \"2.0\""));
    }
    if let Some(method) = body.get("method") {
        let Some(method) = method.as_str() else {
            return Err(bad("`method` must be a string"));
        };
        if body
            .get("params")
            .is_some_and(|p| !matches!(p, Value::Object(_) | Value::Array(_)))
        {
            return Err(bad("`params` must be an object or an array"));
        }
        if body.contains_key("result") || body.contains_key("error") {
            return Err(bad("a request carries no `result` or `error`"));
        }
        let method = method.to_string();
        let kind = match id {
            None => Kind::Notification { method },
            Some(id) if valid_id(&id) => Kind::Request { id, method },
            Some(_) => return Err(bad("`id` must be a string or a number")),
        };
        return Ok(Message { kind, body });
    }
    let has_result = body.contains_key("result");
    let has_error = body.contains_key("error");
    if has_result == has_error {
        return Err(bad(
            "a message needs a `method` (a request) or exactly one of `result` and `error` (a response)",
        ));
    }
    match id {
        // An error about a request that could not be read has a null id.
        Some(id) if valid_id(&id) || (id.is_null() && has_error) => Ok(Message {
            kind: Kind::Response { id },
            body,
        }),
        _ => Err(bad("a response needs the `id` of its request")),
    }
}

/// An error response.
pub fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// A key for an id in a map: `1` and `"1"` are different ids.
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

/// One line read by [`read_line`].
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// The line's bytes are in the buffer (newline and a trailing `\r`
    /// removed).
    Complete,
    /// The line was longer than the limit; it was read to its end and
    /// dropped.
    TooLarge,
    /// The input ended (a last line without a newline is returned first).
    End,
}

/// Reads one newline-delimited message into `buf` (cleared first), never
/// holding more than `limit` bytes of it. Each byte is looked at once.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    limit: usize,
) -> std::io::Result<Line> {
    buf.clear();
    let mut too_large = false;
    let mut any = false;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(if too_large {
                Line::TooLarge
            } else if any {
                trim_cr(buf);
                Line::Complete
            } else {
                Line::End
            });
        }
        any = true;
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if !too_large {
            if buf.len() + take > limit {
                too_large = true;
                buf.clear();
            } else {
                buf.extend_from_slice(&chunk[..take]);
            }
        }
        reader.consume(if done { take + 1 } else { take });
        if done {
            if too_large {
                return Ok(Line::TooLarge);
            }
            trim_cr(buf);
            return Ok(Line::Complete);
        }
    }
}

fn trim_cr(buf: &mut Vec<u8>) {
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
}

/// Whether a line holds nothing but whitespace (skipped, not an error).
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| b.is_ascii_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(v: &Value) -> i64 {
        v["error"]["code"].as_i64().unwrap_or(0)
    }

    #[test]
    fn classifies_the_three_kinds() {
        let Ok(Incoming::Single(m)) =
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#)
        else {
            panic!("a request")
        };
        assert_eq!(
            m.kind,
            Kind::Request {
                id: json!(1),
                method: "tools/call".into()
            }
        );
        let Ok(Incoming::Single(m)) =
            parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        else {
            panic!("a notification")
        };
        assert_eq!(m.method(), Some("notifications/initialized"));
        assert!(matches!(m.kind, Kind::Notification { .. }));
        let Ok(Incoming::Single(m)) = parse(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#) else {
            panic!("a response")
        };
        assert_eq!(m.kind, Kind::Response { id: json!("a") });
        let Ok(Incoming::Single(m)) =
            parse(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#)
        else {
            panic!("an error about an unreadable request")
        };
        assert_eq!(m.kind, Kind::Response { id: Value::Null });
    }

    #[test]
    fn malformed_input_gets_the_error_json_rpc_names() {
        for bad in [
            &b"{not json"[..],
            b"",
            b"{\"jsonrpc\":\"2.0\",",
            b"\xff\xfe",
        ] {
            let e = parse(bad).expect_err("not JSON");
            assert_eq!(code(&e), PARSE_ERROR, "{bad:?}");
            assert_eq!(e["id"], Value::Null);
        }
        let cases: [(&[u8], Value); 9] = [
            (b"[]", Value::Null),
            (b"42", Value::Null),
            (br#""tools/call""#, Value::Null),
            (br#"{"id":3,"method":"x"}"#, json!(3)),
            (br#"{"jsonrpc":"1.0","id":3,"method":"x"}"#, json!(3)),
            (br#"{"jsonrpc":"2.0","id":"q","method":7}"#, json!("q")),
            (
                br#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#,
                Value::Null,
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"method":"x","params":"s"}"#,
                json!(1),
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#,
                json!(1),
            ),
        ];
        for (bad, id) in cases {
            let e = parse(bad).expect_err("not JSON-RPC");
            assert_eq!(
                code(&e),
                INVALID_REQUEST,
                "{}",
                String::from_utf8_lossy(bad)
            );
            assert_eq!(e["id"], id, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn a_batch_keeps_its_order_and_answers_its_bad_elements() {
        let Ok(Incoming::Batch(items)) =
            parse(br#"[{"jsonrpc":"2.0","id":1,"method":"a"},5,{"jsonrpc":"2.0","method":"b"}]"#)
        else {
            panic!("a batch")
        };
        assert_eq!(items.len(), 3);
        assert!(matches!(&items[0], Element::Ok(m) if m.method() == Some("a")));
        assert!(matches!(&items[1], Element::Bad(e) if code(e) == INVALID_REQUEST));
        assert!(matches!(&items[2], Element::Ok(m) if m.method() == Some("b")));
    }

    #[test]
    fn deep_nesting_is_a_parse_error_not_a_stack_overflow() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let e = parse(deep.as_bytes()).expect_err("too deep");
        assert_eq!(code(&e), PARSE_ERROR);
    }

    async fn lines(input: &[u8], limit: usize) -> Vec<(Line, Vec<u8>)> {
        // A tiny buffer, so lines cross chunk boundaries.
        let mut reader = tokio::io::BufReader::with_capacity(3, input);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            let line = read_line(&mut reader, &mut buf, limit).await.expect("read");
            if line == Line::End {
                return out;
            }
            out.push((line, buf.clone()));
        }
    }

    #[tokio::test]
    async fn reads_lines_across_chunks_and_drops_an_oversized_one_whole() {
        let got = lines(b"{\"a\":1}\r\n0123456789abcdef\nok\nlast", 10).await;
        assert_eq!(
            got,
            vec![
                (Line::Complete, b"{\"a\":1}".to_vec()),
                (Line::TooLarge, Vec::new()),
                (Line::Complete, b"ok".to_vec()),
                (Line::Complete, b"last".to_vec()),
            ]
        );
        let got = lines(b"0123456789abcdef", 10).await;
        assert_eq!(got, vec![(Line::TooLarge, Vec::new())]);
    }

    #[tokio::test]
    async fn a_message_of_several_megabytes_is_one_line() {
        let text = "x".repeat(8 * 1024 * 1024);
        let msg = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}});
        let mut input = serde_json::to_vec(&msg).expect("json");
        input.push(b'\n');
        let mut reader = tokio::io::BufReader::new(&input[..]);
        let mut buf = Vec::new();
        let line = read_line(&mut reader, &mut buf, 64 << 20)
            .await
            .expect("read");
        assert_eq!(line, Line::Complete);
        let Ok(Incoming::Single(m)) = parse(&buf) else {
            panic!("one response")
        };
        assert_eq!(m.into_value(), msg);
    }
}
