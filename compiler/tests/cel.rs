//! CEL rules in the compiler: compile errors with file, rule id and caret;
//! string calls on event fields lowered to shared atoms; generated Rust
//! specialised for the common subset.

use parallax_compiler::{codegen, load, plan, Limits};
use parallax_runtime::{AtomPath, FieldRef, Predicate};
use std::path::PathBuf;

mod common;

fn tree(rules: &str) -> PathBuf {
    common::tree(&[common::CONFIG, ("rules/cel/r.yaml", rules)])
}

fn errors(rules: &str) -> String {
    common::errors(&[common::CONFIG, ("rules/cel/r.yaml", rules)])
}

fn compiled(rules: &str) -> plan::Compiled {
    let dir = tree(rules);
    let result = load(&dir.join("parallax.yaml"));
    let _ = std::fs::remove_dir_all(&dir);
    let set = result.unwrap_or_else(|e| panic!("{e}"));
    plan::compile(&set, &Limits::default())
}

#[test]
fn type_error_names_file_rule_and_points_at_it() {
    let m = errors("- id: bad-compare\n  expr: tool_name == 'x' && tool_name < 3\n");
    for part in [
        "rules/cel/r.yaml",
        "bad-compare",
        "no matching overload for '_<_' applied to (string, int)",
        "tool_name == 'x' && tool_name < 3",
        "                    ^^^^^^^^^^^^^",
    ] {
        assert!(m.contains(part), "`{part}` missing from:\n{m}");
    }
}

#[test]
fn unknown_function_field_syntax_and_non_bool_are_errors() {
    for (expr, want) in [
        ("frob(command)", "undeclared reference to 'frob'"),
        ("tool_nmae == 'x'", "undeclared reference to 'tool_nmae'"),
        ("command.contains('a'", "syntax error"),
        ("size(command)", "must be bool, this one is int"),
        ("command.matches('a(')", "invalid regular expression"),
        (
            "timestamp.contains('x')",
            "no matching overload for 'contains'",
        ),
    ] {
        let m = errors(&format!("- id: r1\n  expr: \"{expr}\"\n"));
        assert!(m.contains("rule `r1`") && m.contains(want), "{expr}:\n{m}");
    }
    // Unknown keys are still rejected.
    let m = errors("- id: r2\n  expr: 'true'\n  fields: [command]\n");
    assert!(m.contains("unknown field `fields`"), "{m}");
}

#[test]
fn string_calls_on_fields_become_shared_atoms() {
    let c = compiled(
        r#"
- id: a
  expr: command.contains('curl') && command.startsWith('sudo ') && tool_args.url.endsWith('.sh')
- id: b
  expr: command.contains('curl') || tool_args_file_path.matches('^/etc/')
- id: c
  expr: "[1, 2].exists(x, x > 1) && !message_text.contains('ok')"
"#,
    );
    let p = &c.program;
    let described: Vec<(String, String, AtomPath)> = p
        .atoms
        .iter()
        .map(|a| {
            (
                p.fields[a.field as usize].field.name(),
                a.pattern.clone(),
                a.path,
            )
        })
        .collect();
    // `command.contains('curl')` is one atom shared by rules a and b.
    assert_eq!(
        described
            .iter()
            .filter(|(f, pat, _)| f == "command" && pat == "curl")
            .count(),
        1,
        "{described:?}"
    );
    assert!(described.contains(&("command".into(), r"\Asudo ".into(), AtomPath::Dfa)));
    assert!(described
        .iter()
        .any(|(f, pat, _)| f == "tool_args.url" && pat == r"\.sh\z"));
    // The alias resolved to tool_args.file_path.
    assert!(described
        .iter()
        .any(|(f, pat, _)| f == "tool_args.file_path" && pat == "^/etc/"));
    assert!(described.iter().any(|(f, _, _)| f == "message_text"));
    // Each rule is a CEL predicate whose expression holds atoms, not calls.
    for (rule, c) in p.rules.iter().zip(&p.cel) {
        let Predicate::Cel { atoms, .. } = &rule.predicate else {
            panic!("{} is not a CEL predicate", rule.id);
        };
        assert!(!atoms.is_empty());
        let json = serde_json::to_string(&c.expr).unwrap();
        assert!(
            !json.contains("\"contains\"") && !json.contains("\"matches\""),
            "{json}"
        );
    }
    // The negated atom is not a positive one (it is no match span).
    let Predicate::Cel {
        atoms, positive, ..
    } = &p.rules[2].predicate
    else {
        unreachable!()
    };
    assert_eq!(atoms.len(), 1);
    assert!(positive.is_empty());
    assert!(matches!(
        p.fields[p.atoms[atoms[0] as usize].field as usize].field,
        FieldRef::Top(_)
    ));
}

#[test]
fn generated_rust_is_native_for_the_common_subset() {
    let c = compiled(
        r#"
- id: native
  expr: |
    tool_name in ['Write', 'Edit'] && has(tool_args.file_path)
      && tool_args.file_path.endsWith('/.bashrc') && size(command) < 100
      && params.temperature >= 0.5 && !(model == 'x') && stage != 'tool.after'
      && command != 'ls' && 'a' < url && query in ['SELECT 1']
- id: mixed
  expr: "tool_args.items.exists(x, x == 1) || tool_name == 'Bash'"
"#,
    );
    let rust = codegen::generate_rust(&c);
    let native = rust
        .split("fn rule_0_native")
        .nth(1)
        .and_then(|s| s.split("fn rule_1").next())
        .unwrap();
    assert!(!native.contains("cel_node"), "{native}");
    // Compare without the formatter's line breaks.
    let flat: String = native.chars().filter(|c| !c.is_whitespace()).collect();
    for call in [
        "native::in_list",
        "native::has",
        "i.cel_atom(",
        "native::canonical_size",
        "native::compare",
        "native::not",
        "native::canonical_compare(i.event, Canonical::Command, Cmp::Ne",
        "native::canonical_compare(i.event, Canonical::Url, Cmp::Gt",
        "native::canonical_in(i.event, Canonical::Query",
    ] {
        let call: String = call.chars().filter(|c| !c.is_whitespace()).collect();
        assert!(flat.contains(&call), "`{call}` missing:\n{native}");
    }
    let mixed = rust.split("fn rule_1_mixed").nth(1).unwrap();
    assert!(mixed.contains("i.cel_node(1,"), "{mixed}");
    assert!(mixed.contains("native::compare"), "{mixed}");
    // Deterministic output.
    assert_eq!(rust, codegen::generate_rust(&c));
}
