//! Sigma rules end to end through the dynamic backend: every modifier,
//! wildcard escape, check and condition form of `tests/fixtures/sigma/`,
//! each with events that must fire it and events that must not.

mod support;

use parallax::backend;
use parallax_runtime::{Engine, Report};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::OnceLock;

pub fn fixture() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sigma/parallax.yaml"
    ))
}

fn engine() -> &'static Engine {
    static E: OnceLock<Engine> = OnceLock::new();
    E.get_or_init(|| backend::dynamic_engine(fixture()).expect("fixture compiles"))
}

fn eval(event: &Value) -> Report {
    support::engine_report::report(engine(), event.clone())
}

fn fired(event: &Value) -> Vec<String> {
    eval(event)
        .results
        .iter()
        .map(|r| r.rule_id.clone())
        .collect()
}

fn cmd(c: &str) -> Value {
    json!({"stage": "tool.before", "tool_name": "Bash", "tool_args": {"command": c}})
}

fn args(a: Value) -> Value {
    json!({"stage": "tool.before", "tool_name": "Tool", "tool_args": a})
}

fn tool(name: &str, a: Value) -> Value {
    json!({"stage": "tool.before", "tool_name": name, "tool_args": a})
}

fn write(path: &str, content: &str) -> Value {
    json!({"stage": "tool.before", "tool_name": "Write",
           "tool_args": {"file_path": path, "content": content}})
}

fn params(p: Value) -> Value {
    json!({"stage": "params.before", "params": p})
}

fn msg(m: &str) -> Value {
    json!({"stage": "message.before", "message_text": m})
}

/// `rule` fires on every `yes` event and on none of the `no` events.
fn check(rule: &str, yes: &[Value], no: &[Value]) {
    for e in yes {
        let f = fired(e);
        assert!(
            f.iter().any(|r| r == rule),
            "`{rule}` should fire on {e}; fired {f:?}"
        );
    }
    for e in no {
        let f = fired(e);
        assert!(
            !f.iter().any(|r| r == rule),
            "`{rule}` must not fire on {e}; fired {f:?}"
        );
    }
}

#[test]
fn text_modifiers() {
    check(
        "m-contains",
        &[cmd("echo zq-contains"), cmd("ECHO ZQ-CONTAINS!")],
        &[cmd("echo zq-contain")],
    );
    check(
        "m-startswith",
        &[cmd("zq-start now"), cmd("ZQ-START")],
        &[cmd("echo zq-start")],
    );
    check(
        "m-endswith",
        &[write("/home/u/key.zqpem", "x"), write("/K.ZQPEM", "x")],
        &[write("/home/u/key.zqpem.bak", "x")],
    );
    check(
        "m-equals",
        &[tool("ZqTool", json!({})), tool("zqtool", json!({}))],
        &[tool("ZqTool2", json!({})), tool("a ZqTool", json!({}))],
    );
    check(
        "m-all",
        &[cmd("zq-secret then zq-tar")],
        &[cmd("zq-tar only"), cmd("zq-secret only")],
    );
}

#[test]
fn regex_modifiers() {
    check(
        "m-re",
        &[cmd("a zqxxx12 b")],
        &[cmd("a ZQXXX12 b"), cmd("zqxx1")],
    );
    check("m-re-i", &[cmd("ZQ-SHOUT now")], &[cmd("say zq-shout")]);
    check(
        "m-re-m",
        &[write("/f", "one\nZQLINE\nthree")],
        &[write("/f", "one ZQLINE three")],
    );
    check(
        "m-re-s",
        &[write("/f", "ZQSTART\nZQEND")],
        &[write("/f", "ZQSTART\n\nZQEND")],
    );
}

#[test]
fn encoding_modifiers() {
    check(
        "m-base64",
        &[cmd("echo enF3aG9hbWk= | base64 -d | sh")],
        &[cmd("echo zqwhoami")],
    );
    check(
        "m-base64offset",
        &[
            cmd("echo enEtZXhmaWwgdGFpbA== | base64 -d"),
            cmd("echo eHpxLWV4ZmlsIHRhaWw= | base64 -d"),
            cmd("echo eHl6cS1leGZpbCB0YWls | base64 -d"),
        ],
        &[cmd("echo zq-exfil")],
    );
    check(
        "m-wide-base64offset",
        &[
            cmd("powershell -enc aQBlAHgAIAB6AHEAcABpAG4AZwAgAG4AbwB3AA=="),
            cmd("powershell -enc YQBpAGUAeAAgAHoAcQBwAGkAbgBnACAAbgBvAHcA"),
            cmd("powershell -enc YQBiAGkAZQB4ACAAegBxAHAAaQBuAGcAIABuAG8AdwA="),
        ],
        &[cmd("powershell -c zqping")],
    );
    check(
        "m-utf16le",
        &[write("/f", "x z\u{0}q\u{0}l\u{0}e\u{0} y")],
        &[write("/f", "zqle")],
    );
    check(
        "m-utf16be",
        &[write("/f", "\u{0}z\u{0}q\u{0}b\u{0}e")],
        &[write("/f", "zqbe")],
    );
    check(
        "m-utf16-base64",
        &[write("/f", "blob //56AHEA")],
        &[write("/f", "zq")],
    );
    check(
        "m-windash",
        &[
            cmd("zqtool -zqflag"),
            cmd("zqtool /zqflag"),
            cmd("zqtool \u{2013}zqflag"),
            cmd("zqtool \u{2014}zqflag"),
            cmd("zqtool \u{2015}zqflag"),
        ],
        &[cmd("zqtool +zqflag"), cmd("zqtool zqflag")],
    );
}

#[test]
fn case_insensitive_by_default_unless_cased() {
    check(
        "m-cased",
        &[cmd("run ZqCased")],
        &[cmd("run zqcased"), cmd("run ZQCASED")],
    );
    // Every other text rule folds case.
    check("m-contains", &[cmd("Zq-CoNtAiNs")], &[]);
    check("m-keywords", &[msg("ZQ-KEYWORD-ALPHA")], &[]);
}

#[test]
fn wildcards_and_escapes() {
    check(
        "m-wildcards",
        &[cmd("zq-wild anything here end!"), cmd("ZQ-WILD  endX")],
        &[cmd("zq-wild anything end"), cmd("x zq-wild a end!")],
    );
    check(
        "m-escape-star",
        &[cmd("echo zq*star")],
        &[cmd("echo zqXstar"), cmd("echo zq**star")],
    );
    check(
        "m-escape-question",
        &[cmd("echo zq-what?")],
        &[cmd("echo zq-whatX")],
    );
    check(
        "m-escape-backslash",
        &[cmd(r"type zq\back")],
        &[cmd(r"type zq\\back"), cmd("type zqback")],
    );
}

#[test]
fn keywords_search_all_text() {
    check(
        "m-keywords",
        &[msg("say zq-keyword-beta please")],
        &[msg("zq-keyword-gamma"), cmd("zq-keyword-alpha")],
    );
    check(
        "m-keywords-all",
        &[msg("zq-kw-two and zq-kw-one")],
        &[msg("zq-kw-one only")],
    );
}

#[test]
fn field_mappings() {
    check(
        "m-two-fields",
        &[
            args(json!({"first": "zq-either"})),
            args(json!({"second": "ZQ-EITHER"})),
        ],
        &[args(json!({"third": "zq-either"}))],
    );
    check(
        "m-image",
        &[cmd("/opt/zqbin --x"), cmd("ls | zqbin"), cmd("A=1 zqbin")],
        &[cmd("echo /opt/zqbin")],
    );
    check(
        "m-expand",
        &[args(json!({"user": "root"})), args(json!({"user": "TOOR"}))],
        &[args(json!({"user": "alice"}))],
    );
    // Unmapped fields never match, whatever the event holds.
    check(
        "m-unmapped",
        &[],
        &[
            args(json!({"EventID": 4688, "ParentImage": "c:\\zq.exe"})),
            cmd("4688 zq.exe"),
        ],
    );
    let r = eval(&args(json!({"my_field": "zq-mapped-value"})));
    assert_eq!(r.action.as_str(), "block", "the rule's own `action`");
    assert_eq!(r.results[0].priority.as_str(), "critical", "from `level`");
}

#[test]
fn checks() {
    check(
        "c-exists",
        &[
            args(json!({"zq_force": false})),
            args(json!({"zq_force": ""})),
        ],
        &[args(json!({"zq_force": null})), args(json!({}))],
    );
    check(
        "c-not-exists",
        &[
            tool("zq-needs-reason", json!({})),
            tool("zq-needs-reason", json!({"reason": null})),
        ],
        &[tool("zq-needs-reason", json!({"reason": "because"}))],
    );
    check(
        "c-null",
        &[
            tool("zq-null", json!({})),
            tool("zq-null", json!({"note": null})),
            tool("zq-null", json!({"note": ""})),
        ],
        &[
            tool("zq-null", json!({"note": "x"})),
            tool("zq-null", json!({"note": 0})),
        ],
    );
    check(
        "c-empty",
        &[tool("zq-empty", json!({"note": ""}))],
        &[
            tool("zq-empty", json!({"note": " "})),
            tool("zq-empty", json!({})),
        ],
    );
    check(
        "c-gt",
        &[
            params(json!({"temperature": 1.5})),
            params(json!({"temperature": "2"})),
        ],
        &[
            params(json!({"temperature": 1.2})),
            params(json!({"temperature": "hot"})),
        ],
    );
    check(
        "c-gte",
        &[params(json!({"top_k": 100})), params(json!({"top_k": 101}))],
        &[params(json!({"top_k": 99}))],
    );
    check(
        "c-lt",
        &[params(json!({"top_p": 0.05}))],
        &[params(json!({"top_p": 0.1})), params(json!({}))],
    );
    check(
        "c-lte",
        &[
            params(json!({"max_tokens": 10})),
            params(json!({"max_tokens": 1})),
        ],
        &[params(json!({"max_tokens": 11}))],
    );
    check(
        "c-number",
        &[
            args(json!({"zq_port": 4444})),
            args(json!({"zq_port": "4444"})),
        ],
        &[
            args(json!({"zq_port": 4445})),
            args(json!({"zq_port": "x4444"})),
        ],
    );
    check(
        "c-bool",
        &[
            args(json!({"zq_flag": true})),
            args(json!({"zq_flag": "True"})),
        ],
        &[args(json!({"zq_flag": false})), args(json!({"zq_flag": 1}))],
    );
    check(
        "c-cidr",
        &[
            args(json!({"zq_ip": "10.20.30.40"})),
            args(json!({"zq_ip": ["1.1.1.1", "10.0.0.1"]})),
            args(json!({"zq_ip": "fd12::1"})),
        ],
        &[
            args(json!({"zq_ip": "11.0.0.1"})),
            args(json!({"zq_ip": "fe80::1"})),
            args(json!({"zq_ip": "not an ip"})),
        ],
    );
    check(
        "c-fieldref",
        &[
            args(json!({"zq_src": "/a/B", "zq_dst": "/a/b"})),
            args(json!({"zq_src": ["x", "y"], "zq_dst": "Y"})),
        ],
        &[
            args(json!({"zq_src": "/a/b", "zq_dst": "/a/c"})),
            args(json!({"zq_src": "/a"})),
        ],
    );
    check(
        "c-fieldref-startswith",
        &[args(
            json!({"zq_child": "/srv/app/x", "zq_parent": "/srv/app"}),
        )],
        &[args(
            json!({"zq_child": "/srv/other", "zq_parent": "/srv/app"}),
        )],
    );
}

#[test]
fn condition_forms() {
    check(
        "f-or3",
        &[
            args(json!({"f": "zq-a"})),
            args(json!({"f": "zq-b"})),
            args(json!({"f": "zq-c"})),
        ],
        &[args(json!({"f": "zq-d"}))],
    );
    check(
        "f-and-group",
        &[
            args(json!({"g": "zq-x zq-y"})),
            args(json!({"g": "zq-x zq-z"})),
            args(json!({"g": "zq-w zq-x"})),
        ],
        &[
            args(json!({"g": "zq-x"})),
            args(json!({"g": "zq-y zq-z zq-w"})),
        ],
    );
    check(
        "f-not",
        &[args(json!({"h": "zq-not"}))],
        &[
            args(json!({"h": "zq-not zq-benign"})),
            args(json!({"h": "zq-benign"})),
        ],
    );
    check(
        "f-one-of-them",
        &[args(json!({"i": "zq-one"})), args(json!({"i": "zq-two"}))],
        &[args(json!({"i": "zq-three"}))],
    );
    check(
        "f-all-of",
        &[args(json!({"j": "zq-pa zq-pb"}))],
        &[
            args(json!({"j": "zq-pa"})),
            args(json!({"j": "zq-pb zq-never-needed"})),
        ],
    );
    check(
        "f-all-of-them",
        &[args(json!({"k": "zq-k1 zq-k2"}))],
        &[args(json!({"k": "zq-k1"}))],
    );
    check(
        "f-list-of-maps",
        &[
            args(json!({"l": "zq-l1"})),
            args(json!({"l": "zq-l2", "m": "zq-m"})),
        ],
        &[args(json!({"l": "zq-l2"}))],
    );
    check(
        "f-condition-list",
        &[args(json!({"n": "zq-n1"})), args(json!({"n": "zq-n2"}))],
        &[args(json!({"n": "zq-n3"}))],
    );
    // a or (b and not c)
    check(
        "f-precedence",
        &[
            args(json!({"o": "zq-oa zq-oc"})),
            args(json!({"o": "zq-ob"})),
        ],
        &[args(json!({"o": "zq-ob zq-oc"}))],
    );
}

#[test]
fn logsource_agent_category_picks_the_stage() {
    // The keyword rule is `message.before` only.
    let at_tool = json!({"stage": "tool.before", "tool_name": "X",
                         "tool_args": {"q": "zq-keyword-alpha"}});
    check("m-keywords", &[msg("zq-keyword-alpha")], &[at_tool]);
    // Any other log source runs at the engine's default stages, which
    // include tool.after.
    let after = json!({"stage": "tool.after", "tool_name": "Bash",
                       "tool_args": {"command": "zq-contains"}});
    check("m-contains", &[after], &[]);
}

/// A Sigma rule written for a tool result must run: without an agent
/// logsource category a rule runs at tool.before and tool.after (the
/// documented default), and `category: tool.before` keeps it to that one.
#[test]
fn rules_without_an_agent_category_run_before_and_after_tool_calls() {
    let result = |r: Value| json!({"stage": "tool.after", "tool_name": "Read", "tool_result": r});
    let before = cmd("echo zq-stage-marker");
    let results = [
        result(json!("the file says zq-stage-marker")),
        result(json!({"stdout": "zq-stage-marker", "exit_code": 0})),
    ];
    check(
        "s-default-stages",
        &[before.clone(), results[0].clone(), results[1].clone()],
        &[result(json!("nothing to see"))],
    );
    // The same marker in the command and in the result at tool.after.
    let after_both = json!({"stage": "tool.after", "tool_name": "Bash",
                            "tool_args": {"command": "echo zq-stage-marker"},
                            "tool_result": "zq-stage-marker"});
    check(
        "s-tool-before",
        &[before],
        &[results[0].clone(), results[1].clone(), after_both],
    );
}

#[test]
fn matches_carry_the_rule_author() {
    let r = eval(&msg("zq-keyword-alpha"));
    let hit = r
        .results
        .iter()
        .find(|r| r.rule_id == "m-keywords")
        .unwrap();
    assert_eq!(hit.author.as_deref(), Some("Parallax tests"));
    assert_eq!(hit.matched.as_deref(), Some("zq-keyword-alpha"));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["results"][0]["author"], "Parallax tests");
    // Rules without an author leave the key out.
    let r = serde_json::to_value(eval(&cmd("zq-contains"))).unwrap();
    assert!(r["results"][0].get("author").is_none(), "{r}");
}
