//! `parallax eval`'s input, through the real binary: one output line per
//! input line in input order, blank lines skipped, `\r\n` read as `\n`, a
//! bad line reported with its own line number while the lines around it
//! are still judged, more lines than the decisions kept in flight, standard
//! input and a file alike, and a read error that stops the run after the
//! verdicts of what was read before it.

mod support;

use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn config() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("parallax.yaml")
}

fn eval(args: &[&std::ffi::OsStr], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_parallax"))
        .arg("eval")
        .arg("-c")
        .arg(config())
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start parallax eval");
    // Written from another thread: eval's output fills its pipe long
    // before a large input is all written.
    let writer = stdin.map(|input| {
        let mut pipe = child.stdin.take().expect("stdin");
        let input = input.to_vec();
        std::thread::spawn(move || pipe.write_all(&input).expect("write the input"))
    });
    let out = child.wait_with_output().expect("parallax eval finishes");
    if let Some(w) = writer {
        w.join().expect("the input is written");
    }
    out
}

fn lines_of(out: &Output) -> Vec<Value> {
    String::from_utf8(out.stdout.clone())
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON line"))
        .collect()
}

/// A verdict without its timing, which differs from run to run.
fn untimed(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.remove("elapsed_ms");
    }
    v
}

/// 3,000 input lines (more than the decisions in flight hold): benign and blocked events, with a malformed line, an
/// invalid event, blank lines and `\r\n` endings among them. Returns the
/// input and, per non-blank line, its line number and what it is.
fn input() -> (String, Vec<(usize, &'static str)>) {
    let mut text = String::new();
    let mut expect = Vec::new();
    let mut line_no = 0;
    for i in 0..3_000 {
        line_no += 1;
        let (line, kind) = match i % 10 {
            3 => ("{\"stage\": \"tool.before\"".to_string(), "malformed_json"),
            6 => (
                json!({"stage": "no.such.stage"}).to_string(),
                "invalid_event",
            ),
            8 => (
                json!({"stage": "tool.before", "session_id": format!("s{}", i % 7),
                       "tool_name": "Bash", "tool_args": {"command": "rm -rf / --no-preserve-root"}})
                .to_string(),
                "block",
            ),
            _ => (
                json!({"stage": "message.before", "session_id": format!("s{}", i % 7),
                       "message_text": format!("please summarise chapter {i} of the report")})
                .to_string(),
                "allow",
            ),
        };
        text.push_str(&line);
        text.push_str(if i % 4 == 0 { "\r\n" } else { "\n" });
        expect.push((line_no, kind));
        if i % 97 == 0 {
            text.push_str("\n   \n");
            line_no += 2;
        }
    }
    (text, expect)
}

fn check(out: &Output, expect: &[(usize, &str)]) {
    assert_eq!(
        out.status.code(),
        Some(1),
        "malformed lines make the exit status 1"
    );
    let got = lines_of(out);
    assert_eq!(got.len(), expect.len(), "one output line per input line");
    for (v, (line_no, kind)) in got.iter().zip(expect) {
        match *kind {
            "malformed_json" | "invalid_event" => {
                assert_eq!(v["error"]["code"], *kind, "{v}");
                assert_eq!(v["error"]["line"], *line_no, "{v}");
            }
            action => assert_eq!(v["action"], action, "line {line_no}: {v}"),
        }
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "parallax: {} malformed line(s)",
            expect.len() / 10 * 2
        )),
        "{stderr}"
    );
}

#[test]
fn every_line_is_judged_in_order_from_a_file_and_from_stdin() {
    let dir = support::temp_dir("eval-input");
    let (text, expect) = input();
    let file = dir.join("input.jsonl");
    std::fs::write(&file, &text).expect("write the input");

    let from_file = eval(&[file.as_os_str()], None);
    check(&from_file, &expect);
    let from_stdin = eval(&[], Some(text.as_bytes()));
    check(&from_stdin, &expect);
    let dash = eval(&["-".as_ref()], Some(text.as_bytes()));
    check(&dash, &expect);

    let untimed_lines = |o: &Output| lines_of(o).into_iter().map(untimed).collect::<Vec<_>>();
    assert_eq!(untimed_lines(&from_file), untimed_lines(&from_stdin));
    assert_eq!(untimed_lines(&from_file), untimed_lines(&dash));
}

#[test]
fn an_input_that_cannot_be_read_stops_the_run_with_its_reason() {
    let dir = support::temp_dir("eval-input-errors");
    // A directory opens but cannot be read.
    let out = eval(&[dir.as_os_str()], None);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 1: cannot read:"), "{stderr}");
    assert!(out.stdout.is_empty());

    let missing = dir.join("missing.jsonl");
    let out = eval(&[missing.as_os_str()], None);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot read") && stderr.contains("missing.jsonl"),
        "{stderr}"
    );

    // Not UTF-8 on line 1,001: the run stops there, and the 1,000 lines
    // before it are all judged and printed, including the decisions still
    // waiting for the side-store when the error came.
    let bad = dir.join("latin1.jsonl");
    let mut bytes = Vec::new();
    for i in 0..1_000 {
        let e = json!({"stage": "tool.before", "session_id": format!("s{}", i % 3),
                       "tool_name": "Bash", "tool_args": {"command": format!("ls /tmp/{i}")}});
        bytes.extend_from_slice(format!("{e}\n").as_bytes());
    }
    bytes.extend_from_slice(b"{\"stage\": \"message.before\", \"message_text\": \"caf\xe9\"}\n");
    std::fs::write(&bad, bytes).expect("write");
    let out = eval(&[bad.as_os_str()], None);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 1001: cannot read:"), "{stderr}");
    let printed = lines_of(&out);
    assert_eq!(printed.len(), 1_000);
    // (Some are blocked: 333 calls a session trip the shipped rate rule.)
    assert!(
        printed.iter().all(|v| v["action"].is_string()),
        "every line is a verdict"
    );
}

#[test]
fn an_empty_input_prints_nothing_and_succeeds() {
    let out = eval(&[], Some(b"\n\n  \r\n"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
}
