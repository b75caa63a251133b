//! Broken configs and rules are compile errors that name the file, the rule
//! and the problem; nothing is skipped silently.

mod common;

use common::{assert_mentions, errors, tree, CONFIG};
use parallax_compiler::load;
use std::path::Path;

#[test]
fn invalid_regex_names_file_rule_and_reason() {
    let m = errors(&[
        CONFIG,
        ("rules/regex/bad.yaml", "- id: broken\n  pattern: 'a(b'\n"),
    ]);
    assert_mentions(
        &m,
        &[
            "rules/regex/bad.yaml",
            "rule `broken`",
            "invalid regex",
            "a(b",
        ],
    );
}

#[test]
fn look_around_is_an_error_not_a_skipped_rule() {
    let m = errors(&[
        CONFIG,
        (
            "rules/regex/x.yaml",
            "- id: lookahead\n  pattern: 'foo(?=bar)'\n",
        ),
    ]);
    assert_mentions(&m, &["rule `lookahead`", "look-around"]);
}

#[test]
fn unknown_keys_are_errors_with_their_path() {
    let m = errors(&[
        CONFIG,
        (
            "rules/regex/x.yaml",
            "- id: typo\n  pattern: x\n  feilds: [command]\n",
        ),
    ]);
    assert_mentions(&m, &["rule `typo`", "feilds"]);
    // The front doors' sections (`server:` ...) are the binary's to check:
    // tests/decision.rs, a_bad_front_door_setting_names_its_key.
}

#[test]
fn unknown_field_and_stage_and_action_are_named() {
    let m = errors(&[
        CONFIG,
        (
            "rules/regex/x.yaml",
            "- id: f\n  pattern: x\n  fields: [tool_arg.command]\n",
        ),
    ]);
    assert_mentions(&m, &["rule `f`", "unknown field `tool_arg.command`"]);
    let m = errors(&[
        CONFIG,
        (
            "rules/regex/x.yaml",
            "- id: s\n  pattern: x\n  stages: [tool.during]\n",
        ),
    ]);
    assert_mentions(&m, &["rule `s`", "tool.during"]);
    let m = errors(&[
        CONFIG,
        (
            "rules/pattern/x.yaml",
            "- id: a\n  keywords: [x]\n  action: nuke\n",
        ),
    ]);
    assert_mentions(&m, &["rule `a`", "nuke"]);
}

#[test]
fn duplicate_ids_are_errors_naming_both_files() {
    let m = errors(&[
        CONFIG,
        ("rules/regex/a.yaml", "- id: same\n  pattern: x\n"),
        ("rules/pattern/b.yaml", "- id: same\n  keywords: [y]\n"),
    ]);
    assert_mentions(
        &m,
        &[
            "rules/pattern/b.yaml",
            "rule `same`",
            "duplicate",
            "rules/regex/a.yaml",
        ],
    );
}

#[test]
fn rule_shape_errors() {
    let cases = [
        ("- id: none\n", "needs `pattern` or `patterns`"),
        ("- id: both\n  pattern: a\n  patterns: [b]\n", "not both"),
        (
            "- id: neg\n  patterns: [{pattern: a, negate: true}]\n",
            "every pattern is negated",
        ),
        (
            "- id: nofields\n  pattern: a\n  fields: []\n",
            "`fields` must not be empty",
        ),
        ("- just a string\n", "must be a mapping"),
    ];
    for (rule, expect) in cases {
        let m = errors(&[CONFIG, ("rules/regex/x.yaml", rule)]);
        assert_mentions(&m, &[expect]);
    }
    let m = errors(&[
        CONFIG,
        ("rules/pattern/x.yaml", "- id: e\n  keywords: ['']\n"),
    ]);
    assert_mentions(&m, &["rule `e`", "must not be empty"]);
}

#[test]
fn unknown_engine_directory_and_disabled_name_are_errors() {
    let m = errors(&[CONFIG, ("rules/regexp/x.yaml", "- id: a\n  pattern: x\n")]);
    assert_mentions(&m, &["regexp", "unknown engine directory"]);
    let m = errors(&[("parallax.yaml", "disabled: [nothing-here]\n")]);
    assert_mentions(&m, &["nothing-here", "names no evaluator or rule"]);
}

#[test]
fn every_error_is_reported_in_one_run() {
    let m = errors(&[
        CONFIG,
        (
            "rules/regex/a.yaml",
            "- id: one\n  pattern: '('\n- id: two\n  pattern: ')'\n",
        ),
        ("rules/regex/b.yaml", "not: [valid"),
    ]);
    assert_mentions(&m, &["rule `one`", "rule `two`", "rules/regex/b.yaml"]);
}

#[test]
fn inline_evaluators_need_rules_and_disabled_ones_still_validate() {
    let m = errors(&[(
        "parallax.yaml",
        "evaluators:\n  - name: e\n    type: regex\n",
    )]);
    assert_mentions(&m, &["`e`", "needs `rules` or `rules_file`"]);
    let m = errors(&[(
        "parallax.yaml",
        "evaluators:\n  - name: off\n    type: regex\n    enabled: false\n    rules:\n      - id: bad\n        pattern: '['\n",
    )]);
    assert_mentions(&m, &["rule `bad`", "invalid regex"]);
}

#[test]
fn valid_tree_loads_with_defaults_and_disabling() {
    let dir = tree(&[
        ("parallax.yaml", "disabled: [off-rule]\n"),
        (
            "rules/regex/r.yaml",
            "- id: on-rule\n  pattern: a\n- id: off-rule\n  pattern: b\n",
        ),
        (
            "rules/pattern/p.yaml",
            "evaluator:\n  name: named\n  enabled: false\nrules:\n  - id: k\n    keywords: [x]\n",
        ),
        ("rules/regex/README.md", "not a rule file"),
    ]);
    let rules = load(&dir.join("parallax.yaml")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(rules.evaluators.len(), 1);
    let ev = &rules.evaluators[0];
    assert_eq!(ev.name, "r");
    assert_eq!(ev.rules.len(), 1);
    assert_eq!(ev.rules[0].id, "on-rule");
    assert_eq!(ev.rules[0].title, "on-rule", "title defaults to the id");
    assert_eq!(ev.stages.to_string(), "[tool.before, tool.after]");
    assert_eq!(rules.disabled.len(), 1);
    assert_eq!(rules.disabled[0].name, "named");
}

#[test]
fn shipped_config_loads() {
    let shipped = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../parallax.yaml"));
    let rules = load(shipped).unwrap();
    assert!(rules.rule_count() >= 3);
}
