//! Compile-time errors: what the checker rejects, and how it points at it.

use parallax_cel::{CelType, Declarations, Program};

fn decls() -> Declarations {
    let mut d = Declarations::default();
    d.declare("tool_name", CelType::String)
        .declare(
            "params",
            CelType::Map(Box::new(CelType::String), Box::new(CelType::Dyn)),
        )
        .declare("n", CelType::Int);
    d
}

fn check_err(src: &str) -> String {
    let p = Program::parse(src).expect("parses");
    p.check(&decls())
        .expect_err("should not type-check")
        .to_string()
}

#[test]
fn string_less_than_number_is_a_type_error_with_caret() {
    let msg = check_err("tool_name == 'x' && tool_name < 3");
    assert_eq!(
        msg,
        "type error: no matching overload for '_<_' applied to (string, int)\n \
         1 | tool_name == 'x' && tool_name < 3\n   \
         |                     ^^^^^^^^^^^^^"
    );
}

#[test]
fn unknown_function_and_variable_are_errors() {
    assert!(check_err("frobnicate(tool_name)").contains("undeclared reference to 'frobnicate'"));
    assert!(check_err("nope == 1").contains("undeclared reference to 'nope'"));
    assert!(check_err("n.field").contains("does not support field selection"));
    assert!(check_err("tool_name.matches('(')").contains("invalid regular expression"));
    assert!(check_err("size(n)").contains("no matching overload for 'size'"));
    assert!(check_err("n + 'a'").contains("'_+_' applied to (int, string)"));
    assert!(check_err("tool_name ? 1 : 2").contains("condition of '?:' must be bool"));
}

#[test]
fn well_typed_expressions_check() {
    for src in [
        "tool_name.startsWith('sh') && params.temperature > 0.5",
        "has(params.x) || size(tool_name) > 3",
        "tool_name in ['a', 'b'] && [1, 2].all(x, x > 0)",
        "int(params.n) + 1 == n",
        "params['k'].contains('v')",
    ] {
        let p = Program::parse(src).expect("parses");
        p.check(&decls()).unwrap_or_else(|e| panic!("{src}: {e}"));
    }
}

#[test]
fn syntax_errors_point_at_the_problem() {
    let e = Program::parse("a &&").expect_err("incomplete");
    assert!(e
        .to_string()
        .starts_with("syntax error: expected an expression"));
    let e = Program::parse("'unterminated").expect_err("string");
    assert!(e.to_string().contains("unterminated string literal"));
    let e = Program::parse("if == 1").expect_err("reserved");
    assert!(e.to_string().contains("reserved word 'if'"));
    let deep = format!("{}1{}", "(".repeat(5000), ")".repeat(5000));
    assert!(Program::parse(&deep).is_err());
    for deep in [
        vec!["a"; 5000].join(" + "),
        format!("{}1", "-".repeat(5000)),
        format!("a{}", ".b".repeat(5000)),
        vec!["true"; 5000].join(" && "),
    ] {
        let e = Program::parse(&deep).expect_err("too deep");
        assert!(e.to_string().contains("nests too deeply"), "{e}");
    }
}
