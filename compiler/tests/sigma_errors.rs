//! Broken Sigma rules are compile errors naming the file, the rule and the
//! problem (the modifier, the selection, the key); nothing is skipped.

mod common;

use common::{assert_mentions, load_tree, CONFIG};

/// A rule file with one rule whose detection is `detection`.
fn rule(id: &str, detection: &str) -> String {
    format!(
        "title: t\nid: {id}\nlogsource: {{product: linux, category: process_creation}}\n\
         detection:\n{detection}"
    )
}

fn error_of(detection: &str) -> String {
    let r = rule("r1", detection);
    match load_tree(&[CONFIG, ("rules/sigma/x.yml", &r)]) {
        Ok(_) => panic!("expected an error for:\n{detection}"),
        Err(e) => e,
    }
}

#[test]
fn unknown_modifier_names_file_rule_and_modifier() {
    let m = error_of("  sel:\n    CommandLine|contians: x\n  condition: sel\n");
    assert_mentions(
        &m,
        &[
            "rules/sigma/x.yml",
            "rule `r1`",
            "CommandLine|contians",
            "unknown modifier `contians`",
        ],
    );
}

#[test]
fn invalid_combinations_name_the_modifier() {
    for (key, value, modifier) in [
        (
            "CommandLine|contains|startswith",
            "x",
            "`startswith` cannot be combined with `contains`",
        ),
        ("CommandLine|i", "x", "`i` is a sub-modifier of `re`"),
        (
            "CommandLine|re|cased",
            "x",
            "`cased` cannot be combined with `re`",
        ),
        (
            "CommandLine|cidr|base64",
            "x",
            "`base64` cannot be combined with `cidr`",
        ),
        (
            "CommandLine|base64",
            "'a*b'",
            "`base64` cannot encode a value with wildcards",
        ),
        ("CommandLine|gt", "abc", "`gt/gte/lt/lte` takes a number"),
        (
            "CommandLine|exists",
            "yes",
            "`exists` takes `true` or `false`",
        ),
        (
            "CommandLine|cidr",
            "'10.0.0.0/33'",
            "prefix longer than 32 bits",
        ),
        ("CommandLine|re", "'a(b'", "invalid regex"),
        ("CommandLine|contains", "null", "`null` takes no modifiers"),
        ("CommandLine|hour", "1", "`hour`"),
    ] {
        let m = error_of(&format!("  sel:\n    {key}: {value}\n  condition: sel\n"));
        assert_mentions(&m, &["rule `r1`", key, modifier]);
    }
}

#[test]
fn condition_errors_point_at_the_name() {
    let m = error_of("  sel:\n    CommandLine: x\n  condition: sel and filter\n");
    assert_mentions(
        &m,
        &[
            "rule `r1`",
            "unknown selection `filter`",
            "column 9",
            "defined: sel",
        ],
    );
    let m = error_of("  sel:\n    CommandLine: x\n  condition: 1 of filter_*\n");
    assert_mentions(&m, &["`filter_*` matches no selection"]);
    let m = error_of("  sel:\n    CommandLine: x\n  condition: (sel\n");
    assert_mentions(&m, &["expected `)`"]);
    let m = error_of("  sel:\n    CommandLine: x\n");
    assert_mentions(&m, &["needs a `condition`"]);
    let m = error_of("  sel:\n    CommandLine: x\n  timeframe: 5m\n  condition: sel\n");
    assert_mentions(&m, &["timeframe"]);
    let m = error_of("  sel: []\n  condition: sel\n");
    assert_mentions(&m, &["detection.sel", "empty list"]);
}

#[test]
fn rule_keys_are_checked() {
    let bad_key = "title: t\nid: k1\nlogsource: {product: linux}\ndetection:\n  s: {CommandLine: x}\n  condition: s\nseverity: high\n";
    let m = load_tree(&[CONFIG, ("rules/sigma/a.yml", bad_key)]).unwrap_err();
    assert_mentions(&m, &["rule `k1`", "unknown field `severity`"]);
    let no_title =
        "id: k2\nlogsource: {product: linux}\ndetection:\n  s: {CommandLine: x}\n  condition: s\n";
    let m = load_tree(&[CONFIG, ("rules/sigma/a.yml", no_title)]).unwrap_err();
    assert_mentions(&m, &["rule `k2`", "missing field `title`"]);
    let bad_level = "title: t\nid: k3\nlevel: severe\nlogsource: {product: linux}\ndetection:\n  s: {CommandLine: x}\n  condition: s\n";
    let m = load_tree(&[CONFIG, ("rules/sigma/a.yml", bad_level)]).unwrap_err();
    assert_mentions(&m, &["rule `k3`", "level", "severe"]);
    let bad_stage = "title: t\nid: k4\nlogsource: {product: agent, category: tool.during}\ndetection:\n  s: {command: x}\n  condition: s\n";
    let m = load_tree(&[CONFIG, ("rules/sigma/a.yml", bad_stage)]).unwrap_err();
    assert_mentions(&m, &["rule `k4`", "unknown stage `tool.during`"]);
    let v1 = "action: global\ntitle: t\n";
    let m = load_tree(&[CONFIG, ("rules/sigma/a.yml", v1)]).unwrap_err();
    assert_mentions(&m, &["Sigma v1 rule-collection"]);
}

#[test]
fn every_document_of_every_nested_file_is_loaded_and_checked() {
    let two = format!(
        "{}\n---\n{}",
        rule("ok-1", "  s:\n    CommandLine: x\n  condition: s\n"),
        rule("bad-2", "  s:\n    CommandLine|nope: x\n  condition: s\n")
    );
    let m = load_tree(&[CONFIG, ("rules/sigma/deep/er/two.yaml", &two)]).unwrap_err();
    assert_mentions(
        &m,
        &["rules/sigma/deep/er/two.yaml", "rule `bad-2`", "`nope`"],
    );
    assert!(!m.contains("ok-1"), "{m}");

    let fine = format!(
        "{}\n---\n{}",
        rule("ok-1", "  s:\n    CommandLine: x\n  condition: s\n"),
        rule("ok-2", "  s:\n    EventID: 1\n  condition: s\n")
    );
    let set = load_tree(&[CONFIG, ("rules/sigma/deep/er/two.yaml", &fine)]).unwrap();
    assert_eq!(set.evaluators.len(), 1);
    assert_eq!(set.evaluators[0].name, "deep/er/two");
    assert_eq!(set.rule_count(), 2);
    // The unmapped field compiles (to a condition that never holds) and is
    // reported as a warning, not an error.
    assert_eq!(set.warnings.len(), 1, "{:?}", set.warnings);
    assert_mentions(
        &set.warnings[0],
        &["rule `ok-2`", "field `EventID` is not mapped"],
    );
}

#[test]
fn mapping_targets_must_be_event_fields() {
    let config = (
        "parallax.yaml",
        "rules_dir: rules\nsigma:\n  field_mappings:\n    Image: tool_arg.x\n",
    );
    let m = load_tree(&[config]).unwrap_err();
    assert_mentions(
        &m,
        &[
            "parallax.yaml",
            "sigma.field_mappings `Image`",
            "unknown field `tool_arg.x`",
        ],
    );
    let config = (
        "parallax.yaml",
        "rules_dir: rules\nsigma:\n  field_mapping: {}\n",
    );
    let m = load_tree(&[config]).unwrap_err();
    assert_mentions(&m, &["unknown field `field_mapping`"]);
}

#[test]
fn a_header_document_or_the_config_sets_a_files_stages() {
    let with_header = format!(
        "evaluator:\n  name: shell\n  stages: [tool.after]\n---\n{}",
        rule("h-1", "  s:\n    CommandLine: x\n  condition: s\n")
    );
    let config = (
        "parallax.yaml",
        "rules_dir: rules\nevaluators:\n  - name: inline-sigma\n    type: sigma\n    \
         stages: [message.before]\n    rules_file: extra/more.yml\n",
    );
    let more = rule("i-1", "  s:\n    text|contains: x\n  condition: s\n");
    let set = load_tree(&[
        config,
        ("rules/sigma/h.yml", &with_header),
        ("extra/more.yml", &more),
    ])
    .unwrap();
    let names: Vec<(&str, String)> = set
        .evaluators
        .iter()
        .map(|e| (e.name.as_str(), e.stages.to_string()))
        .collect();
    assert_eq!(
        names,
        [
            ("inline-sigma", "[message.before]".to_string()),
            ("shell", "[tool.after]".to_string())
        ]
    );
    let bad = "evaluator:\n  stagez: [tool.after]\n";
    let m = load_tree(&[CONFIG, ("rules/sigma/h.yml", bad)]).unwrap_err();
    assert_mentions(&m, &["rules/sigma/h.yml", "evaluator header", "stagez"]);
}

#[test]
fn a_rule_without_id_is_named_by_its_title() {
    let r = "title: No Id Here\nlogsource: {product: linux}\ndetection:\n  s: {CommandLine|bad: x}\n  condition: s\n";
    let m = load_tree(&[CONFIG, ("rules/sigma/a.yml", r)]).unwrap_err();
    assert_mentions(&m, &["rule `No Id Here`", "`bad`"]);
}
