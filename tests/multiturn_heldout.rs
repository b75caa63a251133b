//! Multi-turn escalation ships turned on (its three rule files); this
//! suite checks that they are in force in the shipped config, runs the
//! escalation rules' own cases with `parallax test`, then the held-out
//! corpus.
//!
//! The held-out multi-turn corpus (tests/fixtures/multiturn_heldout/):
//! each conversation's user turns replayed in order as `message.before`
//! events of one session through the decision service (shipped rules, the
//! side-store the escalation rules read), and the conversation counted as
//! flagged when any turn's answer is not `allow`. Printed per label and,
//! for attacks, per technique; `before` is what the rules other than the
//! escalation rules flag (the figure without them). The floors are set
//! well below what the rules reach, so that a regression fails and noise
//! does not. `HELD_OUT_SHOW=1` lists the misses.

mod support;

use parallax::decision::{DecisionService, Door, Origin};
use parallax_runtime::{Action, Event};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Instant;
use support::CONFIG;

/// The three files multi-turn escalation is made of.
const ESCALATION_FILES: [&str; 3] = [
    "sql/escalation.yaml",
    "regex/escalation_signals.yaml",
    "classifier/escalation_signals.yaml",
];

/// The shipped config, after checking that none of the escalation files
/// is switched off.
fn escalation_config() -> std::path::PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for f in ESCALATION_FILES {
        let text = std::fs::read_to_string(root.join("rules").join(f)).expect("an escalation file");
        assert!(
            !text.contains("\n  enabled: false\n"),
            "{f} ships disabled: multi-turn escalation is on by default (docs/ESCALATION.md)"
        );
    }
    std::path::PathBuf::from(CONFIG)
}

#[test]
fn the_escalation_rules_pass_their_own_cases() {
    let config = escalation_config();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_parallax"))
        .args(["test", "-c"])
        .arg(&config)
        .output()
        .expect("run parallax test");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lint = std::process::Command::new(env!("CARGO_BIN_EXE_parallax"))
        .args(["lint", "-c"])
        .arg(&config)
        .output()
        .expect("run parallax lint");
    let listed = String::from_utf8_lossy(&lint.stdout);
    for name in [
        "escalation ",
        "escalation-signals",
        "escalation-classifier-signal",
    ] {
        assert!(listed.contains(name), "{name} is not in force:\n{listed}");
    }
}

/// At least this share of attack conversations flagged (measured 0.150 on
/// 2026-12-05, when the escalation rules first landed).
const ATTACKS_FLAGGED_AT_LEAST: f64 = 0.10;
/// At most this share of benign conversations flagged (measured 0.016).
const BENIGN_FLAGGED_AT_MOST: f64 = 0.05;

struct Outcome {
    /// Any turn not `allow`.
    flagged: bool,
    /// Any turn flagged by an escalation rule.
    escalation: bool,
    /// Any turn flagged by another rule (the figure before the escalation
    /// rules).
    other: bool,
    blocked: bool,
}

fn replay(service: &DecisionService, conv: &Value) -> Outcome {
    let id = conv["id"].as_str().expect("an id");
    let mut out = Outcome {
        flagged: false,
        escalation: false,
        other: false,
        blocked: false,
    };
    let turns = conv["turns"].as_array().expect("turns");
    for t in turns.iter().filter(|t| t["role"] == "user") {
        let event = Event::from_value(json!({
            "stage": "message.before",
            "session_id": format!("heldout-{id}"),
            "message_text": t["text"],
        }))
        .expect("a valid event");
        let r = service.decide(event, &Origin::door(Door::Library), Instant::now());
        if r.action != Action::Allow {
            out.flagged = true;
            out.blocked |= r.action == Action::Block;
        }
        for res in r.results.iter().filter(|x| x.action != Action::Allow) {
            if res.rule_id.starts_with("sql-escalation") {
                out.escalation = true;
            } else {
                out.other = true;
            }
        }
    }
    out
}

#[test]
fn held_out_conversations_are_judged_over_their_turns() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/multiturn_heldout/conversations.jsonl");
    let text = std::fs::read_to_string(&path).expect("the corpus");
    let convs: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("one conversation a line"))
        .collect();
    let config = escalation_config();
    let loaded = parallax::backend::load(Some(&config), false).expect("the config");
    let service = DecisionService::new(loaded.engine, loaded.settings).expect("the service");
    let show = std::env::var_os("HELD_OUT_SHOW").is_some();
    let mut rates = Vec::new();
    for label in ["attack", "benign"] {
        let of_label: Vec<&Value> = convs.iter().filter(|c| c["label"] == label).collect();
        let n = of_label.len();
        assert!(n >= 30, "{n} {label} conversations");
        let (mut flagged, mut escalation, mut other, mut blocked) = (0, 0, 0, 0);
        for c in &of_label {
            let o = replay(&service, c);
            flagged += usize::from(o.flagged);
            escalation += usize::from(o.escalation);
            other += usize::from(o.other);
            blocked += usize::from(o.blocked);
            if show && (o.flagged != (label == "attack")) {
                println!(
                    "    {label} {} {}: flagged {}",
                    c["id"], c["technique"], o.flagged
                );
            }
        }
        let r = |k: usize| k as f64 / n as f64;
        println!(
            "{label:<7} n={n:<3} flagged {:.3} (before, rules other than escalation: {:.3}; \
             by escalation rules {:.3}) blocked {:.3}",
            r(flagged),
            r(other),
            r(escalation),
            r(blocked)
        );
        rates.push(r(flagged));
    }
    assert!(
        rates[0] >= ATTACKS_FLAGGED_AT_LEAST,
        "attack conversations flagged {:.3} < {ATTACKS_FLAGGED_AT_LEAST}",
        rates[0]
    );
    assert!(
        rates[1] <= BENIGN_FLAGGED_AT_MOST,
        "benign conversations flagged {:.3} > {BENIGN_FLAGGED_AT_MOST}",
        rates[1]
    );
}
