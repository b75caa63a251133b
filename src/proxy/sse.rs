//! Server-Sent Events, parsed and written for the proxy's streaming path.
//!
//! The proxy sits between an agent and a model API that streams its answer
//! as `text/event-stream`. To hold a tool call until it is complete, rewrite
//! it, and pass everything else through as it arrives, the proxy has to see
//! the stream as the client will: as events. So the parser follows the
//! WHATWG HTML rules for interpreting an event stream ("Server-sent events",
//! the event stream interpretation section), not a looser reading of them.
//! Otherwise a stream that the upstream splits differently, or writes with CR
//! line ends, could look different to Parallax than to the agent, and a rule
//! could miss what the agent then acts on.
//!
//! - [`SseParser`] is incremental. Bytes arrive in whatever pieces TCP and
//!   HTTP framing produce, so a chunk may end anywhere: inside a line, inside
//!   a multi-byte UTF-8 character, or between the CR and the LF of a CRLF.
//!   The items it gives do not depend on where the chunks were split.
//! - It is linear and bounded. Each byte is examined a constant number of
//!   times (the unfinished line is kept, never rescanned), and a line or an
//!   event's data bigger than the limit is an [`SseError`] rather than memory
//!   growth an upstream (or anyone able to inject into it) controls.
//! - [`encode_event`] and [`encode_comment`] write events back, so the
//!   proxy can emit what it parsed, or its replacement; what they write parses
//!   back to the same item.

use std::io::Write as _;

/// The limit [`SseParser::new`] uses: 16 MiB for a single line and for one
/// event's data. Large enough for any real model response (a whole tool
/// call's arguments in one event is well under it), small enough that a
/// runaway stream is stopped long before it hurts the host.
pub const DEFAULT_LIMIT: usize = 16 * 1024 * 1024;

/// The UTF-8 encoding of U+FEFF, stripped once at the start of a stream.
const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// One dispatched event.
///
/// The fields hold what the stream said, so that encoding the event again
/// (see [`encode_event`]) gives the client the same event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The event type from the `event` field. `None` means no `event` field
    /// came with this event, which the spec treats as type `message`;
    /// `Some("")` (an `event` field with an empty value) means the same to a
    /// client. Use [`SseEvent::event_type`] for the type with that default
    /// applied. OpenAI streams have no `event` lines; Anthropic streams name
    /// every event (`message_start`, `content_block_delta`, ...).
    pub event: Option<String>,
    /// The data buffer as dispatched: the values of the event's `data` lines
    /// joined with `\n`, without a trailing newline. It never contains CR:
    /// in the stream a CR always ends a line.
    pub data: String,
    /// The value of the `id` field, if one was received since the previous
    /// dispatched event (an `id` field in a block that dispatched nothing,
    /// because it had no data, is carried to the next event, so re-encoding
    /// does not lose it). `None` means no new id: the client keeps the last
    /// one it saw; [`SseParser::last_event_id`] is that persistent value.
    /// An `id` whose value contains NUL is ignored, per spec.
    pub id: Option<String>,
    /// The value of the `retry` field (the client's reconnection time in
    /// milliseconds), if a valid one was received since the previous
    /// dispatched event; carried like `id`. Per spec only a value of ASCII
    /// digits counts; a value too big for `u64` is ignored too.
    pub retry: Option<u64>,
}

impl SseEvent {
    /// An event of the default type carrying `data`.
    pub fn message(data: impl Into<String>) -> Self {
        Self {
            data: data.into(),
            ..Self::default()
        }
    }

    /// An event of type `event` carrying `data`.
    pub fn named(event: impl Into<String>, data: impl Into<String>) -> Self {
        Self {
            event: Some(event.into()),
            data: data.into(),
            ..Self::default()
        }
    }

    /// The event type as a client sees it: `message` when the stream gave
    /// none (or an empty one), else the `event` field's value.
    pub fn event_type(&self) -> &str {
        match self.event.as_deref() {
            None | Some("") => "message",
            Some(t) => t,
        }
    }
}

/// What the parser reports, in stream order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// A dispatched event (a block of fields ended by a blank line, with at
    /// least one `data` field).
    Event(SseEvent),
    /// A comment line (one starting with `:`): the text after the colon, with
    /// one leading space removed as for a field value. Clients ignore
    /// comments, but servers send them as keep-alives, and a proxy that
    /// swallowed them could let an idle connection time out; so they are
    /// reported, and [`encode_comment`] writes them back.
    Comment(String),
}

/// Why the parser stopped.
///
/// After an error the parser refuses further input (every later
/// [`SseParser::feed`] returns the same error) until [`SseParser::finish`]
/// resets it: the stream is not trustworthy past that point. Items completed
/// before the offending line are still pushed to `out`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// A single line (without its line end) exceeded the limit.
    #[error("server-sent events line longer than the limit of {limit} bytes")]
    LineTooLong {
        /// The limit in bytes.
        limit: usize,
    },
    /// One event's data buffer exceeded the limit.
    #[error("server-sent event data larger than the limit of {limit} bytes")]
    DataTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
}

/// An incremental `text/event-stream` parser.
///
/// Feed it the body's bytes as they arrive with [`feed`](Self::feed); it
/// pushes each event and comment as soon as its last line is complete, so a
/// text delta can be passed on without waiting for more input. Call
/// [`finish`](Self::finish) at the end of the body.
///
/// Line ends are CRLF, LF or CR, mixed freely; a CR at the end of one chunk
/// and an LF at the start of the next are one line end. A leading UTF-8 byte
/// order mark is skipped. Each line is decoded as UTF-8 when it is complete,
/// invalid sequences becoming U+FFFD, as the spec's decoding of the whole
/// stream would make them (a line end byte is never part of a multi-byte
/// character, so decoding per line gives the same text).
#[derive(Debug)]
pub struct SseParser {
    limit: usize,
    /// Still at the start of the stream: how many bytes of a possible BOM
    /// have been seen so far.
    bom_seen: Option<usize>,
    /// The unfinished line: bytes with no CR or LF among them.
    line: Vec<u8>,
    /// The previous byte was a CR that ended a line; an LF right after it
    /// belongs to the same line end.
    after_cr: bool,
    /// The spec's data buffer: each `data` value followed by `\n`.
    data: String,
    /// The spec's event type buffer; `Some` once an `event` field is seen.
    event_type: Option<String>,
    /// `id` and `retry` received since the last dispatched event.
    pending_id: Option<String>,
    pending_retry: Option<u64>,
    /// The spec's last event ID buffer, which persists across events.
    last_event_id: Option<String>,
    failed: Option<SseError>,
    /// Bytes examined while looking for line ends, for the linearity test.
    #[cfg(test)]
    scanned: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl SseParser {
    /// A parser with the [`DEFAULT_LIMIT`].
    pub fn new() -> Self {
        Self::with_limit(DEFAULT_LIMIT)
    }

    /// A parser refusing any line, and any event's data buffer, longer than
    /// `limit` bytes (see [`SseError`]). The line limit counts the raw bytes
    /// of the line without its line end; the data limit counts the decoded
    /// data buffer including the `\n` after each `data` line.
    pub fn with_limit(limit: usize) -> Self {
        Self {
            limit,
            bom_seen: Some(0),
            line: Vec::new(),
            after_cr: false,
            data: String::new(),
            event_type: None,
            pending_id: None,
            pending_retry: None,
            last_event_id: None,
            failed: None,
            #[cfg(test)]
            scanned: 0,
        }
    }

    /// The limit this parser enforces, in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The spec's last event ID: the value of the most recent valid `id`
    /// field, kept across events (and across [`finish`](Self::finish), as a
    /// client keeps it across reconnections). `None` if no `id` was seen.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// Whether input has been received that no item has accounted for yet:
    /// an unfinished line, or fields of an event not yet ended by a blank
    /// line. [`finish`](Self::finish) would discard it; a proxy can check this
    /// at the end of the upstream body to tell a truncated stream from a
    /// complete one.
    pub fn has_pending(&self) -> bool {
        !self.line.is_empty()
            || self.bom_seen.is_some_and(|n| n > 0)
            || !self.data.is_empty()
            || self.event_type.is_some()
            || self.pending_id.is_some()
            || self.pending_retry.is_some()
    }

    /// Parses the next piece of the stream, pushing every event and comment
    /// completed by it onto `out`, in order. `chunk` may end anywhere; the
    /// rest of a line is kept for the next call.
    ///
    /// # Errors
    ///
    /// [`SseError`] if a line or an event's data exceeds the limit; from then
    /// on every call fails the same way (see [`SseError`]).
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseItem>) -> Result<(), SseError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let result = self.feed_inner(chunk, out);
        if let Err(e) = &result {
            self.failed = Some(e.clone());
        }
        result
    }

    /// Ends the stream. Per spec, whatever is pending is discarded: an event
    /// not yet ended by a blank line is not dispatched, and neither is an
    /// unfinished last line (even a comment). So this never pushes anything
    /// onto `out`; it takes `out` so that callers treat the end of a stream
    /// like any other input, and so that stays true if it ever has to emit.
    /// Use [`has_pending`](Self::has_pending) first to know whether something
    /// was dropped.
    ///
    /// The parser is then ready for a new stream (a leading BOM is skipped
    /// again, an earlier error is forgotten); the limit and
    /// [`last_event_id`](Self::last_event_id) are kept.
    pub fn finish(&mut self, _out: &mut Vec<SseItem>) {
        self.bom_seen = Some(0);
        self.line.clear();
        self.after_cr = false;
        self.data.clear();
        self.event_type = None;
        self.pending_id = None;
        self.pending_retry = None;
        self.failed = None;
    }

    fn feed_inner(&mut self, chunk: &[u8], out: &mut Vec<SseItem>) -> Result<(), SseError> {
        let mut rest = self.skip_bom(chunk)?;
        if self.after_cr {
            if let Some((&first, tail)) = rest.split_first() {
                self.after_cr = false;
                if first == b'\n' {
                    rest = tail;
                }
            }
        }
        while !rest.is_empty() {
            let end = rest.iter().position(|&b| b == b'\n' || b == b'\r');
            #[cfg(test)]
            {
                self.scanned += end.map_or(rest.len(), |i| i + 1);
            }
            let Some(i) = end else {
                self.append_to_line(rest)?;
                break;
            };
            let body = &rest[..i];
            if self.line.is_empty() {
                // The whole line is in this chunk: parse it in place.
                if body.len() > self.limit {
                    return Err(SseError::LineTooLong { limit: self.limit });
                }
                self.process_line(body, out)?;
            } else {
                self.append_to_line(body)?;
                let line = std::mem::take(&mut self.line);
                let result = self.process_line(&line, out);
                self.line = line;
                self.line.clear();
                result?;
            }
            let was_cr = rest[i] == b'\r';
            rest = &rest[i + 1..];
            if was_cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        Ok(())
    }

    /// At the start of the stream, consumes a BOM (possibly split across
    /// chunks) and returns the rest of `chunk`. Bytes that began like a BOM
    /// but were not one go to the line buffer, as ordinary input.
    fn skip_bom<'a>(&mut self, chunk: &'a [u8]) -> Result<&'a [u8], SseError> {
        let Some(mut seen) = self.bom_seen else {
            return Ok(chunk);
        };
        for (i, &b) in chunk.iter().enumerate() {
            if b == BOM[seen] {
                seen += 1;
                if seen == BOM.len() {
                    self.bom_seen = None;
                    return Ok(&chunk[i + 1..]);
                }
            } else {
                self.bom_seen = None;
                self.append_to_line(&BOM[..seen])?;
                return Ok(&chunk[i..]);
            }
        }
        self.bom_seen = Some(seen);
        Ok(&[])
    }

    fn append_to_line(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        if self.line.len() + bytes.len() > self.limit {
            return Err(SseError::LineTooLong { limit: self.limit });
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    /// Interprets one complete line (without its line end).
    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseItem>) -> Result<(), SseError> {
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if let Some(text) = line.strip_prefix(b":") {
            out.push(SseItem::Comment(decode(strip_one_space(text))));
            return Ok(());
        }
        // Splitting at an ASCII colon never cuts a UTF-8 character, and a
        // field name that is not valid UTF-8 cannot equal a known one, so
        // the bytes can be compared before decoding.
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => (&line[..i], strip_one_space(&line[i + 1..])),
            None => (line, &[][..]),
        };
        match name {
            b"event" => self.event_type = Some(decode(value)),
            b"data" => {
                let value = String::from_utf8_lossy(value);
                if self.data.len() + value.len() + 1 > self.limit {
                    return Err(SseError::DataTooLarge { limit: self.limit });
                }
                self.data.push_str(&value);
                self.data.push('\n');
            }
            b"id" if !value.contains(&0) => {
                let id = decode(value);
                self.last_event_id = Some(id.clone());
                self.pending_id = Some(id);
            }
            // Digits only, so the value is ASCII; too many digits for u64 is
            // ignored like any other invalid value.
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                if let Some(ms) = std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.parse::<u64>().ok())
                {
                    self.pending_retry = Some(ms);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The blank-line step: dispatch the event if its data buffer is not
    /// empty, and reset the data and event type buffers either way.
    fn dispatch(&mut self, out: &mut Vec<SseItem>) {
        if self.data.is_empty() {
            // Per spec nothing is dispatched; `id` and `retry` received in
            // this block stay pending for the next event.
            self.event_type = None;
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        if data.ends_with('\n') {
            data.pop();
        }
        out.push(SseItem::Event(SseEvent {
            event: self.event_type.take(),
            data,
            id: self.pending_id.take(),
            retry: self.pending_retry.take(),
        }));
    }
}

fn strip_one_space(value: &[u8]) -> &[u8] {
    value.strip_prefix(b" ").unwrap_or(value)
}

fn decode(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Writes `e` as one event-stream block: `event:` if set, `id:` and `retry:`
/// if set, one `data:` line per line of `e.data`, then the blank line that
/// dispatches it.
///
/// Parsing the output gives `e` back for every event the parser can produce.
/// Values it cannot produce are written so that they still cannot break the
/// stream (this is where a proxy writes text derived from untrusted input,
/// so a stray line end must never become a forged field or event):
/// - in `data`, CRLF and a lone CR are line ends like LF, so they come back
///   as `\n`;
/// - in `event` and `id`, CR and LF are dropped (these fields are one line);
/// - an `id` containing NUL is not written, as a client would ignore it.
pub fn encode_event(e: &SseEvent, out: &mut Vec<u8>) {
    if let Some(event) = &e.event {
        write_one_line_field(out, b"event", event);
    }
    if let Some(id) = &e.id {
        if !id.contains('\0') {
            write_one_line_field(out, b"id", id);
        }
    }
    if let Some(ms) = e.retry {
        // Writing to a Vec cannot fail.
        let _ = writeln!(out, "retry: {ms}");
    }
    for line in lines(&e.data) {
        write_field(out, b"data", line);
    }
    out.push(b'\n');
}

/// Writes a comment: one `: text` line per line of `text` (split like
/// `data`, at CRLF, CR or LF), which parse back as [`SseItem::Comment`]s.
/// An empty `text` gives a bare `:` line: the cheapest keep-alive there is.
pub fn encode_comment(text: &str, out: &mut Vec<u8>) {
    for line in lines(text) {
        out.push(b':');
        if !line.is_empty() {
            out.push(b' ');
            out.extend_from_slice(line.as_bytes());
        }
        out.push(b'\n');
    }
}

/// `name: value` (or `name:` for an empty value). The space is always
/// written before a non-empty value, so a value that itself starts with a
/// space keeps it when the parser strips one.
fn write_field(out: &mut Vec<u8>, name: &[u8], value: &str) {
    out.extend_from_slice(name);
    out.push(b':');
    if !value.is_empty() {
        out.push(b' ');
        out.extend_from_slice(value.as_bytes());
    }
    out.push(b'\n');
}

fn write_one_line_field(out: &mut Vec<u8>, name: &[u8], value: &str) {
    out.extend_from_slice(name);
    out.push(b':');
    if !value.is_empty() {
        out.push(b' ');
        for piece in value.split(['\r', '\n']) {
            out.extend_from_slice(piece.as_bytes());
        }
    }
    out.push(b'\n');
}

/// The lines of `s`, split at CRLF, CR or LF; `""` is one empty line and a
/// trailing line end gives a trailing empty line, so the number of lines is
/// always one more than the number of line ends.
fn lines(s: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(s);
    std::iter::from_fn(move || {
        let r = rest?;
        match r.find(['\r', '\n']) {
            None => {
                rest = None;
                Some(r)
            }
            Some(i) => {
                let next = if r[i..].starts_with("\r\n") {
                    i + 2
                } else {
                    i + 1
                };
                rest = Some(&r[next..]);
                Some(&r[..i])
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANTHROPIC: &[u8] = include_bytes!("../../tests/fixtures/sse/anthropic_messages.sse");
    const OPENAI: &[u8] = include_bytes!("../../tests/fixtures/sse/openai_chat.sse");

    /// Parses `chunks` in order, then finishes.
    fn parse_chunks<'a>(
        p: &mut SseParser,
        chunks: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<Vec<SseItem>, SseError> {
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, &mut out)?;
        }
        p.finish(&mut out);
        Ok(out)
    }

    fn parse(bytes: &[u8]) -> Vec<SseItem> {
        parse_chunks(&mut SseParser::new(), [bytes]).expect("parse")
    }

    fn events(items: &[SseItem]) -> Vec<&SseEvent> {
        items
            .iter()
            .filter_map(|i| match i {
                SseItem::Event(e) => Some(e),
                SseItem::Comment(_) => None,
            })
            .collect()
    }

    fn ev(event: Option<&str>, data: &str) -> SseItem {
        SseItem::Event(SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
            id: None,
            retry: None,
        })
    }

    fn comment(text: &str) -> SseItem {
        SseItem::Comment(text.to_owned())
    }

    fn with_line_ends(bytes: &[u8], end: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        for &b in bytes {
            if b == b'\n' {
                v.extend_from_slice(end);
            } else {
                v.push(b);
            }
        }
        v
    }

    /// Asserts that every two-chunk split, one byte at a time, and a few
    /// pseudo-random multi-chunk splits all give `expected`.
    fn assert_split_invariant(stream: &[u8], expected: &[SseItem]) {
        for cut in 0..=stream.len() {
            let (a, b) = stream.split_at(cut);
            let got = parse_chunks(&mut SseParser::new(), [a, b]).expect("parse");
            assert_eq!(got, expected, "split at byte {cut}");
        }
        let mut p = SseParser::new();
        let got = parse_chunks(&mut p, stream.chunks(1)).expect("parse");
        assert_eq!(got, expected, "one byte at a time");
        // Deterministic LCG: chunks of 1..=16 bytes, several seeds.
        for seed in 1u64..=20 {
            let mut state = seed;
            let mut chunks = Vec::new();
            let mut rest = stream;
            while !rest.is_empty() {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let n = ((state >> 33) % 16 + 1) as usize;
                let (c, r) = rest.split_at(n.min(rest.len()));
                chunks.push(c);
                rest = r;
            }
            let got = parse_chunks(&mut SseParser::new(), chunks).expect("parse");
            assert_eq!(got, expected, "random chunks, seed {seed}");
        }
    }

    #[test]
    fn anthropic_stream_parses_to_its_events() {
        let items = parse(ANTHROPIC);
        let evs = events(&items);
        assert_eq!(evs.len(), items.len(), "no comments in this stream");
        let types: Vec<&str> = evs.iter().map(|e| e.event_type()).collect();
        assert_eq!(
            types,
            [
                "message_start",
                "content_block_start",
                "ping",
                "content_block_delta",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "ping",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop",
            ]
        );
        let mut text = String::new();
        let mut partial_json = String::new();
        for e in &evs {
            assert_eq!(e.id, None);
            assert_eq!(e.retry, None);
            let v: serde_json::Value = serde_json::from_str(&e.data).expect("data is JSON");
            // Anthropic repeats the event name as the data's type.
            assert_eq!(v["type"], e.event_type());
            if e.event_type() == "content_block_delta" {
                match v["delta"]["type"].as_str() {
                    Some("text_delta") => {
                        assert_eq!(v["index"], 0);
                        text.push_str(v["delta"]["text"].as_str().expect("text"));
                    }
                    Some("input_json_delta") => {
                        assert_eq!(v["index"], 1);
                        partial_json
                            .push_str(v["delta"]["partial_json"].as_str().expect("partial"));
                    }
                    other => panic!("unexpected delta {other:?}"),
                }
            }
        }
        assert_eq!(
            text,
            "I'll list the files in café/ — naïve 日本語 check 🚀\n\nfirst."
        );
        let input: serde_json::Value = serde_json::from_str(&partial_json).expect("tool input");
        assert_eq!(
            input,
            serde_json::json!({"command": "ls -la ~/projects", "description": "List files — ✓"})
        );
        let stop: serde_json::Value = serde_json::from_str(&evs[14].data).expect("JSON");
        assert_eq!(stop["delta"]["stop_reason"], "tool_use");
    }

    #[test]
    fn anthropic_stream_is_split_invariant_with_every_line_end_and_a_bom() {
        let expected = parse(ANTHROPIC);
        assert_eq!(expected.len(), 16);
        assert_split_invariant(ANTHROPIC, &expected);
        // The same stream with CRLF and with CR line ends: every split point
        // includes the one between each CR and its LF.
        let crlf = with_line_ends(ANTHROPIC, b"\r\n");
        assert_eq!(parse(&crlf), expected);
        assert_split_invariant(&crlf, &expected);
        let cr = with_line_ends(ANTHROPIC, b"\r");
        assert_eq!(parse(&cr), expected);
        assert_split_invariant(&cr, &expected);
        // With a BOM, split inside it too.
        let mut bom = BOM.to_vec();
        bom.extend_from_slice(&crlf);
        assert_split_invariant(&bom, &expected);
    }

    #[test]
    fn openai_chat_stream_parses_and_is_split_invariant() {
        let items = parse(OPENAI);
        let evs = events(&items);
        assert_eq!(evs.len(), 9);
        assert!(evs
            .iter()
            .all(|e| e.event.is_none() && e.event_type() == "message"));
        assert_eq!(evs[8].data, "[DONE]");
        let mut content = String::new();
        let mut args = String::new();
        for e in &evs[..8] {
            let v: serde_json::Value = serde_json::from_str(&e.data).expect("chunk is JSON");
            assert_eq!(v["object"], "chat.completion.chunk");
            let Some(choice) = v["choices"].get(0) else {
                continue;
            };
            if let Some(c) = choice["delta"]["content"].as_str() {
                content.push_str(c);
            }
            if let Some(a) = choice["delta"]["tool_calls"][0]["function"]["arguments"].as_str() {
                args.push_str(a);
            }
        }
        assert_eq!(content, "Checking the disk — größe ✓");
        let args: serde_json::Value = serde_json::from_str(&args).expect("arguments");
        assert_eq!(args, serde_json::json!({"cmd": "df -h /"}));
        assert_split_invariant(OPENAI, &items);
        let crlf = with_line_ends(OPENAI, b"\r\n");
        assert_split_invariant(&crlf, &items);
    }

    #[test]
    fn line_ends_crlf_cr_lf_and_mixed_are_the_same() {
        let expected = vec![ev(Some("a"), "1\n2"), comment("c"), ev(None, "3")];
        for stream in [
            &b"event: a\ndata: 1\ndata: 2\n\n: c\ndata: 3\n\n"[..],
            b"event: a\r\ndata: 1\r\ndata: 2\r\n\r\n: c\r\ndata: 3\r\n\r\n",
            b"event: a\rdata: 1\rdata: 2\r\r: c\rdata: 3\r\r",
            b"event: a\r\ndata: 1\rdata: 2\n\r\n: c\rdata: 3\n\r",
        ] {
            assert_eq!(
                parse(stream),
                expected,
                "{:?}",
                String::from_utf8_lossy(stream)
            );
            assert_split_invariant(stream, &expected);
        }
        // LF CR is two line ends (a blank line), not one.
        assert_eq!(
            parse(b"data: a\n\rdata: b\n\n"),
            vec![ev(None, "a"), ev(None, "b")]
        );
    }

    #[test]
    fn crlf_split_across_chunks_is_one_line_end() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        p.feed(b"data: a\r", &mut out).expect("feed");
        assert!(out.is_empty());
        // An empty chunk between CR and LF changes nothing.
        p.feed(b"", &mut out).expect("feed");
        p.feed(b"\ndata: b\r", &mut out).expect("feed");
        assert!(out.is_empty(), "CR then LF must not make a blank line");
        p.feed(b"\n\r", &mut out).expect("feed");
        // CR CR: the second CR is a blank line, dispatched at once.
        assert_eq!(out, vec![ev(None, "a\nb")]);
        p.feed(b"\n", &mut out).expect("feed");
        assert_eq!(
            out.len(),
            1,
            "the LF after the blank line's CR is part of it"
        );
        // A lone CR at a chunk end followed by another line.
        p.feed(b"data: c\r", &mut out).expect("feed");
        p.feed(b"\r", &mut out).expect("feed");
        assert_eq!(out, vec![ev(None, "a\nb"), ev(None, "c")]);
    }

    #[test]
    fn comments_are_reported_in_order() {
        let items = parse(b": ping\n:no-space\n:\n:  two spaces\ndata: x\n: inside\n\n");
        assert_eq!(
            items,
            vec![
                comment("ping"),
                comment("no-space"),
                comment(""),
                comment(" two spaces"),
                comment("inside"),
                ev(None, "x"),
            ]
        );
    }

    #[test]
    fn bom_is_stripped_once_at_the_start_only() {
        assert_eq!(parse(b"\xEF\xBB\xBFdata: a\n\n"), vec![ev(None, "a")]);
        // A second BOM is part of the first field name, which is then
        // unknown: nothing is dispatched.
        assert_eq!(parse(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\n"), vec![]);
        // A BOM later in the stream is not stripped either.
        assert_eq!(
            parse(b"data: a\n\n\xEF\xBB\xBFdata: b\n\n"),
            vec![ev(None, "a")]
        );
        // Split inside the BOM.
        let mut p = SseParser::new();
        let got = parse_chunks(&mut p, [&b"\xEF"[..], b"\xBB", b"\xBFdata: a\n\n"]).expect("parse");
        assert_eq!(got, vec![ev(None, "a")]);
        // Something that starts like a BOM but is not one is kept (and,
        // being invalid UTF-8, decodes to U+FFFD).
        assert_eq!(
            parse(b"\xEF\xBB:x\n"),
            vec![],
            "the field name is \u{FFFD}, unknown"
        );
        assert_eq!(parse(b"\xEF\xBB\n:x\n"), vec![comment("x")]);
        assert_eq!(
            parse_chunks(&mut SseParser::new(), [&b"\xEF"[..], b"\xBB", b": k\n"]).expect("parse"),
            vec![]
        );
        // finish resets: the next stream's BOM is stripped again.
        let mut p = SseParser::new();
        assert_eq!(
            parse_chunks(&mut p, [&b"\xEF\xBB\xBF: a\n"[..]]).expect("p"),
            vec![comment("a")]
        );
        assert_eq!(
            parse_chunks(&mut p, [&b"\xEF\xBB\xBF: b\n"[..]]).expect("p"),
            vec![comment("b")]
        );
    }

    #[test]
    fn data_lines_and_field_syntax() {
        // Multi-line data, an empty data line in the middle, at the end, no
        // space after the colon, two spaces (only one is removed), a data
        // field with no colon at all (empty value).
        assert_eq!(
            parse(b"data: a\ndata:\ndata: b\n\n"),
            vec![ev(None, "a\n\nb")]
        );
        assert_eq!(parse(b"data: a\ndata\n\n"), vec![ev(None, "a\n")]);
        assert_eq!(parse(b"data:x\n\n"), vec![ev(None, "x")]);
        assert_eq!(parse(b"data:  x \n\n"), vec![ev(None, " x ")]);
        assert_eq!(parse(b"data\n\n"), vec![ev(None, "")]);
        assert_eq!(parse(b"data: a:b: c\n\n"), vec![ev(None, "a:b: c")]);
        // `event` with no colon: an empty type, which is still `message`.
        let items = parse(b"event\ndata: x\n\n");
        assert_eq!(items, vec![ev(Some(""), "x")]);
        assert_eq!(events(&items)[0].event_type(), "message");
        // The last `event` wins; the type is reset after each dispatch.
        assert_eq!(
            parse(b"event: a\nevent: b\ndata: 1\n\ndata: 2\n\n"),
            vec![ev(Some("b"), "1"), ev(None, "2")]
        );
        // Unknown fields and field names differing in case are ignored.
        assert_eq!(
            parse(b"foo: bar\nData: no\nDATA\ndata : no\ndata: yes\n\n"),
            vec![ev(None, "yes")]
        );
        // Field names are exact: a leading space makes a different one.
        assert_eq!(parse(b" data: x\n\n"), vec![]);
    }

    #[test]
    fn blank_line_without_data_dispatches_nothing_and_resets_the_type() {
        assert_eq!(parse(b"event: a\n\ndata: x\n\n"), vec![ev(None, "x")]);
        assert_eq!(parse(b"\n\n\n"), vec![]);
        assert_eq!(parse(b"event: only\n\n"), vec![]);
    }

    #[test]
    fn retry_only_with_ascii_digits() {
        let retry_of = |s: &[u8]| -> Option<u64> {
            let mut stream = s.to_vec();
            stream.extend_from_slice(b"\ndata: x\n\n");
            match parse(&stream).as_slice() {
                [SseItem::Event(e)] => e.retry,
                other => panic!("unexpected {other:?}"),
            }
        };
        assert_eq!(retry_of(b"retry: 3000"), Some(3000));
        assert_eq!(retry_of(b"retry:0"), Some(0));
        assert_eq!(retry_of(b"retry: 12a"), None);
        assert_eq!(retry_of(b"retry: -1"), None);
        assert_eq!(retry_of(b"retry: +5"), None);
        assert_eq!(retry_of(b"retry: 1.5"), None);
        assert_eq!(retry_of(b"retry: 10 "), None);
        assert_eq!(retry_of(b"retry:  10"), None, "only one space is removed");
        assert_eq!(retry_of(b"retry:"), None);
        assert_eq!(retry_of(b"retry"), None);
        assert_eq!(retry_of("retry: ١٢".as_bytes()), None, "non-ASCII digits");
        assert_eq!(retry_of(b"retry: 99999999999999999999999"), None);
        assert_eq!(
            retry_of(b"retry: 5\nretry: x"),
            Some(5),
            "invalid one ignored"
        );
        // A retry-only block dispatches nothing; the value goes with the next
        // event and only with that one.
        assert_eq!(
            parse(b"retry: 7\n\ndata: a\n\ndata: b\n\n"),
            vec![
                SseItem::Event(SseEvent {
                    retry: Some(7),
                    ..SseEvent::message("a")
                }),
                ev(None, "b"),
            ]
        );
    }

    #[test]
    fn id_with_nul_is_ignored_and_last_event_id_persists() {
        let mut p = SseParser::new();
        let items = parse_chunks(
            &mut p,
            [&b"id: 1\ndata: a\n\ndata: b\n\nid: x\0y\ndata: c\n\nid\ndata: d\n\nid: 9\n\n"[..]],
        )
        .expect("parse");
        let ids: Vec<Option<&str>> = events(&items).iter().map(|e| e.id.as_deref()).collect();
        assert_eq!(ids, [Some("1"), None, None, Some("")]);
        // The spec's buffer: the id-only block still set it.
        assert_eq!(p.last_event_id(), Some("9"));
        let mut p = SseParser::new();
        let _ = parse_chunks(&mut p, [&b"id: 5\ndata: a\n\nid: \0\ndata: b\n\n"[..]]).expect("p");
        assert_eq!(p.last_event_id(), Some("5"));
        // An id-only block's id goes with the next event.
        assert_eq!(
            parse(b"id: 3\n\ndata: a\n\n"),
            vec![SseItem::Event(SseEvent {
                id: Some("3".into()),
                ..SseEvent::message("a")
            })]
        );
    }

    #[test]
    fn unterminated_final_event_is_discarded_at_finish() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        p.feed(b"data: done\n\nevent: x\ndata: partial\n", &mut out)
            .expect("feed");
        assert_eq!(out, vec![ev(None, "done")]);
        assert!(p.has_pending());
        p.finish(&mut out);
        assert_eq!(out, vec![ev(None, "done")], "per spec, not dispatched");
        assert!(!p.has_pending());
        // An unfinished last line is discarded too, even a comment.
        let mut p = SseParser::new();
        p.feed(b": keep", &mut out).expect("feed");
        assert!(p.has_pending());
        p.finish(&mut out);
        assert_eq!(out.len(), 1);
        // A complete stream leaves nothing pending; the parser is reusable.
        p.feed(b"data: next\r\n\r\n", &mut out).expect("feed");
        assert!(!p.has_pending());
        assert_eq!(out, vec![ev(None, "done"), ev(None, "next")]);
    }

    #[test]
    fn invalid_and_split_utf8() {
        assert_eq!(parse(b"data: a\xFFb\n\n"), vec![ev(None, "a\u{FFFD}b")]);
        // A truncated character before the line end is one U+FFFD.
        assert_eq!(parse(b"data: \xE6\x97\n\n"), vec![ev(None, "\u{FFFD}")]);
        let rocket = "data: 🚀日\n\n".as_bytes();
        assert_split_invariant(rocket, &[ev(None, "🚀日")]);
    }

    #[test]
    fn line_limit_is_an_error_naming_it() {
        // Exactly at the limit is fine, in place and buffered.
        let at_limit = b"data: 0123456789\n\n"; // 16-byte line
        assert_eq!(
            parse_chunks(&mut SseParser::with_limit(16), [&at_limit[..]]).expect("ok"),
            vec![ev(None, "0123456789")]
        );
        assert_eq!(
            parse_chunks(&mut SseParser::with_limit(16), at_limit.chunks(1)).expect("ok"),
            vec![ev(None, "0123456789")]
        );
        // One more byte: in place (whole line in one chunk) ...
        let mut p = SseParser::with_limit(16);
        let mut out = Vec::new();
        let err = p
            .feed(b": ok\ndata: 0123456789A\n\n", &mut out)
            .expect_err("too long");
        assert_eq!(err, SseError::LineTooLong { limit: 16 });
        assert!(err.to_string().contains("16 bytes"), "{err}");
        assert_eq!(
            out,
            vec![comment("ok")],
            "items before the long line are kept"
        );
        // ... the parser then refuses more input ...
        assert_eq!(p.feed(b"data: x\n\n", &mut out), Err(err.clone()));
        assert_eq!(out.len(), 1);
        // ... and is usable again after finish.
        p.finish(&mut out);
        p.feed(b"data: x\n\n", &mut out).expect("after finish");
        assert_eq!(out.len(), 2);
        // Buffered across chunks, with no line end ever arriving: the error
        // comes as soon as the buffer would pass the limit.
        let mut p = SseParser::with_limit(1024);
        let mut out = Vec::new();
        let mut result = Ok(());
        let mut fed = 0;
        while result.is_ok() && fed < 1 << 20 {
            result = p.feed(&[b'a'; 100], &mut out);
            fed += 100;
        }
        assert_eq!(result, Err(SseError::LineTooLong { limit: 1024 }));
        assert_eq!(fed, 1100);
        assert!(p.line.len() <= 1024);
        // The default.
        assert_eq!(SseParser::new().limit(), 16 * 1024 * 1024);
    }

    #[test]
    fn data_limit_is_an_error_naming_it() {
        // Each line is under the limit, the data buffer is not.
        let mut p = SseParser::with_limit(20);
        let mut out = Vec::new();
        p.feed(b"data: 123456789\n", &mut out)
            .expect("10 bytes of data");
        p.feed(b"data: 12345678\n", &mut out)
            .expect("19 bytes of data");
        let err = p.feed(b"data: x\n", &mut out).expect_err("21 bytes");
        assert_eq!(err, SseError::DataTooLarge { limit: 20 });
        assert!(err.to_string().contains("20 bytes"), "{err}");
        // Exactly at the limit (including each line's `\n`) is accepted.
        let mut p = SseParser::with_limit(20);
        let got = parse_chunks(&mut p, [&b"data: 123456789\ndata: 123456789\n\n"[..]]).expect("ok");
        assert_eq!(got, vec![ev(None, "123456789\n123456789")]);
    }

    #[test]
    fn each_byte_is_scanned_once() {
        // A long line, fed in small chunks and one byte at a time: a parser
        // that rescanned its buffer on every feed would examine far more.
        let mut stream = b"data: ".to_vec();
        stream.extend(std::iter::repeat_n(b'x', 200_000));
        stream.extend_from_slice(b"\r\n\r\n");
        stream.extend_from_slice(&ANTHROPIC.repeat(4));
        for size in [1, 7, 4096] {
            let mut p = SseParser::new();
            let mut out = Vec::new();
            for c in stream.chunks(size) {
                p.feed(c, &mut out).expect("feed");
            }
            assert_eq!(out.len(), 1 + 4 * 16);
            // Every byte once, except the two LFs that follow a CR: those
            // are skipped without a scan.
            assert_eq!(p.scanned, stream.len() - 2, "chunk size {size}");
        }
    }

    fn encode(e: &SseEvent) -> Vec<u8> {
        let mut out = Vec::new();
        encode_event(e, &mut out);
        out
    }

    #[test]
    fn encoder_writes_the_usual_shape() {
        let e = SseEvent {
            event: Some("content_block_delta".into()),
            data: "{\"a\":1}\nsecond".into(),
            id: Some("42".into()),
            retry: Some(1500),
        };
        assert_eq!(
            String::from_utf8(encode(&e)).expect("utf8"),
            "event: content_block_delta\nid: 42\nretry: 1500\ndata: {\"a\":1}\ndata: second\n\n"
        );
        assert_eq!(encode(&SseEvent::message("[DONE]")), b"data: [DONE]\n\n");
        assert_eq!(encode(&SseEvent::message("")), b"data:\n\n");
        let mut out = Vec::new();
        encode_comment("", &mut out);
        encode_comment("keep-alive", &mut out);
        assert_eq!(out, b":\n: keep-alive\n");
    }

    #[test]
    fn encoder_round_trips_varied_events() {
        let pieces = [
            "",
            "a",
            "\n",
            " ",
            "  ",
            ":",
            "data: x",
            "é",
            "日本語",
            "🚀",
            "\u{FEFF}",
            "\0",
            "\t",
            "[DONE]",
            "{\"k\":\"v\\n\"}",
        ];
        let mut cases = Vec::new();
        for (i, a) in pieces.iter().enumerate() {
            for b in &pieces {
                let data = format!("{a}{b}{a}");
                let event = match i % 4 {
                    0 => None,
                    1 => Some(String::new()),
                    2 => Some(format!("type {a}").trim_end_matches('\n').replace('\n', "")),
                    _ => Some("message_start".to_owned()),
                };
                let id = match i % 3 {
                    0 => None,
                    1 => Some(String::new()),
                    _ => Some(format!(" id{b}").replace(['\n', '\0'], "")),
                };
                let retry = (i % 2 == 0).then_some(i as u64 * 1000);
                cases.push(SseEvent {
                    event,
                    data,
                    id,
                    retry,
                });
            }
        }
        cases.push(SseEvent::message("\n\n\n"));
        cases.push(SseEvent::message(" leading and trailing \n"));
        for e in &cases {
            let bytes = encode(e);
            assert_eq!(parse(&bytes), vec![SseItem::Event(e.clone())], "{e:?}");
            // Two events back to back, and split anywhere, too.
            let mut two = bytes.clone();
            two.extend_from_slice(&bytes);
            let expected = vec![SseItem::Event(e.clone()), SseItem::Event(e.clone())];
            for cut in 0..=two.len() {
                let got =
                    parse_chunks(&mut SseParser::new(), [&two[..cut], &two[cut..]]).expect("parse");
                assert_eq!(got, expected, "{e:?} split at {cut}");
            }
        }
        for text in ["", "ping", " x", "a\nb", "日本 🚀"] {
            let mut out = Vec::new();
            encode_comment(text, &mut out);
            let expected: Vec<SseItem> = text.split('\n').map(comment).collect();
            assert_eq!(parse(&out), expected, "{text:?}");
        }
    }

    #[test]
    fn encoder_normalises_cr_and_cannot_be_injected() {
        // CR in data is a line end, as it would be in the stream.
        let e = SseEvent::message("a\rb\r\nc\n\rd\r");
        assert_eq!(parse(&encode(&e)), vec![ev(None, "a\nb\nc\n\nd\n")]);
        // Line ends in event and id cannot forge fields or events.
        let e = SseEvent {
            event: Some("x\n\ndata: forged\n\nevent: y".into()),
            data: "real".into(),
            id: Some("1\r\nretry: 1\r".into()),
            retry: None,
        };
        assert_eq!(
            parse(&encode(&e)),
            vec![SseItem::Event(SseEvent {
                event: Some("xdata: forgedevent: y".into()),
                data: "real".into(),
                id: Some("1retry: 1".into()),
                retry: None,
            })]
        );
        // An id with NUL is left out, as a client would ignore it.
        let e = SseEvent {
            id: Some("a\0b".into()),
            ..SseEvent::message("x")
        };
        assert_eq!(encode(&e), b"data: x\n\n");
        // A comment with line ends stays comments.
        let mut out = Vec::new();
        encode_comment("a\r\ndata: forged\r\rb", &mut out);
        assert_eq!(
            parse(&out),
            vec![
                comment("a"),
                comment("data: forged"),
                comment(""),
                comment("b")
            ]
        );
    }

    #[test]
    fn recorded_streams_round_trip_through_the_encoder() {
        for stream in [ANTHROPIC, OPENAI] {
            let items = parse(stream);
            let mut out = Vec::new();
            for item in &items {
                match item {
                    SseItem::Event(e) => encode_event(e, &mut out),
                    SseItem::Comment(c) => encode_comment(c, &mut out),
                }
            }
            assert_eq!(parse(&out), items);
            // These fixtures are written the way the encoder writes.
            assert_eq!(out, stream);
        }
    }
}
