//! `parallax docs rules`: the rules catalogue, generated from the rules so
//! it cannot drift from them (a test compares it with docs/RULES.md).

use parallax_compiler::ir::RuleSet;
use parallax_runtime::Action;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The hand-written part: rule formats and how to write rules.
const GUIDE: &str = include_str!("../docs/rules-guide.md");

/// Known categories, in catalogue order, with their headings.
pub const CATEGORIES: [(&str, &str); 16] = [
    ("prompt_injection", "Prompt injection and jailbreak"),
    ("secret_leakage", "Secret leakage"),
    ("pii", "Personal data (PII)"),
    ("data_exfiltration", "Data exfiltration"),
    ("dangerous_commands", "Dangerous commands"),
    ("privilege_escalation", "Privilege escalation"),
    ("reconnaissance", "Reconnaissance"),
    ("shadow_it", "Shadow IT"),
    ("supply_chain", "Supply chain"),
    ("sql_injection", "SQL injection and destructive SQL"),
    ("model_manipulation", "Model manipulation"),
    ("resource_abuse", "Resource abuse"),
    ("sensitive_file_writes", "Sensitive file writes"),
    ("memory_poisoning", "Memory poisoning"),
    ("escalation", "Multi-turn escalation"),
    ("tool_arguments", "Tool arguments outside their schema"),
];

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ").trim().to_string()
}

/// The whole docs/RULES.md.
pub fn rules_markdown(rules: &RuleSet) -> String {
    let mut by_cat: BTreeMap<(usize, String), Vec<(String, &parallax_compiler::ir::IrRule)>> =
        BTreeMap::new();
    for ev in &rules.evaluators {
        for r in &ev.rules {
            let cat = r.category.clone().unwrap_or_else(|| "uncategorised".into());
            let order = CATEGORIES
                .iter()
                .position(|(id, _)| *id == cat)
                .unwrap_or(CATEGORIES.len());
            by_cat
                .entry((order, cat))
                .or_default()
                .push((ev.engine.as_str().to_string(), r));
        }
    }
    let mut out = String::from(GUIDE);
    out.push_str("\n## Catalogue\n\n");
    out.push_str(
        "Generated from the shipped rules by `parallax docs rules > docs/RULES.md`; \
         do not edit by hand (`cargo test` fails when it is out of date).\n\n",
    );
    let _ = writeln!(
        out,
        "{} rules in {} categories.\n",
        rules.rule_count(),
        by_cat.len()
    );
    out.push_str("| category | rules | block | redact | detect |\n|---|---:|---:|---:|---:|\n");
    for ((_, cat), list) in &by_cat {
        let n = |a: Action| list.iter().filter(|(_, r)| r.action == a).count();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            heading(cat),
            list.len(),
            n(Action::Block),
            n(Action::Redact),
            n(Action::Detect)
        );
    }
    for ((_, cat), list) in &by_cat {
        let _ = write!(
            out,
            "\n### {}\n\n| id | title | engine | stages | action | what it catches | known false positives |\n|---|---|---|---|---|---|---|\n",
            heading(cat)
        );
        for (engine, r) in list {
            let stages: Vec<&str> = r.stages.iter().map(|s| s.as_str()).collect();
            let fps = if r.false_positives.is_empty() {
                "—".to_string()
            } else {
                r.false_positives.join("; ")
            };
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | {} | {} | {} |",
                r.id,
                cell(&r.title),
                engine,
                stages.join(", "),
                r.action,
                cell(if r.description.is_empty() {
                    &r.title
                } else {
                    &r.description
                }),
                cell(&fps)
            );
        }
    }
    out
}

fn heading(cat: &str) -> String {
    CATEGORIES
        .iter()
        .find(|(id, _)| *id == cat)
        .map(|(_, h)| h.to_string())
        .unwrap_or_else(|| cat.to_string())
}
