//! What tenants cost (issue 41): the shipped rules with one tenant and
//! with fifty, each tenant overriding five operator rules (two disabled,
//! three with another action) and every tenth in monitor mode; the same
//! tool call and the same message evaluated for one tenant, baked rules
//! compiled at start-up (the dynamic backend, both sides alike).
//!
//! The overlays are compiled into the one program: a tenant adds rule
//! copies guarded by a tenant check, never a scan, so the ratio of the
//! medians (`tenants-50-vs-1-ratio` in benches/budgets.toml) must stay
//! near 1.
//!
//! Run: `cargo bench --bench tenants`.

#[path = "support/budgets.rs"]
mod budgets;
#[path = "support/timing.rs"]
mod timing;

use parallax_runtime::{Engine, Event, PreparedEvent};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;
use timing::{fmt_ns, sample};

/// Operator rules each tenant overrides (ids of the shipped library).
const DISABLED: [&str; 2] = ["privesc-sudo", "recon-system-info"];
const LOWERED: [&str; 3] = [
    "cel-git-force-push-protected-branch",
    "pii-email",
    "exfil-curl-upload",
];

/// The shipped config with `n` tenants, written beside a link to the rules.
fn config(n: usize) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir =
        std::env::temp_dir().join(format!("parallax-bench-tenants-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut text = std::fs::read_to_string(root.join("parallax.yaml")).expect("shipped config");
    text = text.replace(
        "rules_dir: rules",
        &format!("rules_dir: {}", root.join("rules").display()),
    );
    text.push_str("\ntenants:\n");
    let program_ids = known_ids(root);
    for t in 0..n {
        let hash = format!("{:x}", Sha256::digest(format!("token-{t}").as_bytes()));
        text.push_str(&format!("  t{t}:\n    token_sha256: [\"{hash}\"]\n"));
        let disabled: Vec<&str> = DISABLED
            .iter()
            .copied()
            .filter(|i| program_ids.contains(*i))
            .collect();
        text.push_str(&format!("    disabled: [{}]\n", disabled.join(", ")));
        text.push_str("    actions: {");
        let lowered: Vec<String> = LOWERED
            .iter()
            .filter(|i| program_ids.contains(**i))
            .map(|i| format!("{i}: detect"))
            .collect();
        text.push_str(&lowered.join(", "));
        text.push_str("}\n");
        if t % 10 == 9 {
            text.push_str("    mode: monitor\n");
        }
    }
    let path = dir.join("parallax.yaml");
    std::fs::write(&path, text).expect("config");
    path
}

fn known_ids(root: &Path) -> std::collections::HashSet<String> {
    let engine = parallax::backend::dynamic_engine(&root.join("parallax.yaml")).expect("shipped");
    engine
        .program()
        .rules
        .iter()
        .map(|r| r.id.clone())
        .collect()
}

fn time(engine: &Engine, event: &Event) -> f64 {
    let mut scratch = engine.new_scratch();
    sample(Duration::from_millis(1500), || {
        let prepared = PreparedEvent::new(event.clone());
        black_box(engine.evaluate(&prepared, &mut scratch).action);
    })
    .p50
}

fn main() {
    let budgets = budgets::Budgets::load();
    let one = parallax::backend::dynamic_engine(&config(1)).expect("1 tenant");
    let fifty = parallax::backend::dynamic_engine(&config(50)).expect("50 tenants");
    println!(
        "rules: {} with 1 tenant, {} with 50",
        one.program().rules.len(),
        fifty.program().rules.len()
    );
    let events = [
        (
            "tool call",
            json!({"stage": "tool.before", "tool_name": "Bash",
                             "tool_args": {"command": "git push --force origin main && sudo ls /root"}}),
        ),
        (
            "1 KB message",
            json!({"stage": "message.before",
                                "message_text": "Please summarise the attached design notes. ".repeat(24)}),
        ),
    ];
    let mut worst: f64 = 0.0;
    for (name, v) in events {
        let mut event = Event::from_value(v).expect("event");
        event.tenant = Some("t0".into());
        let a = time(&one, &event);
        let b = time(&fifty, &event);
        println!(
            "{name:<14} 1 tenant p50 {:>9}  50 tenants p50 {:>9}  ratio {:.3}",
            fmt_ns(a),
            fmt_ns(b),
            b / a
        );
        worst = worst.max(b / a);
    }
    budgets.check("tenants-50-vs-1-ratio", worst);
}
