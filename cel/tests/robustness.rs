//! Bad input never panics: random token soup through the parser, checker
//! and evaluator yields values or errors, nothing else.

use parallax_cel::{CelType, Declarations, Program, Value};
use std::collections::HashMap;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn random_input_never_panics() {
    let pieces = [
        "",
        " ",
        "x",
        "y",
        ".",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        ",",
        ":",
        "?",
        "!",
        "-",
        "+",
        "*",
        "/",
        "%",
        "&&",
        "||",
        "==",
        "<",
        ">=",
        "in",
        "1",
        "0u",
        "1.5",
        "'s'",
        "\"",
        "'''",
        "r'",
        "b'\\xff'",
        "\\",
        "`",
        "`a`",
        "has(",
        "x.y",
        ".exists(v, ",
        ".map(v, ",
        "size(",
        "int(",
        "true",
        "null",
        "if",
        "9223372036854775808",
        "-9223372036854775808",
        "'\\u00'",
        "'\\400'",
        "x[0]",
        "{1: 2, 1: 3}",
        "strings.quote(",
        ".format([",
        ".substring(",
        ".matches('(')",
        "é",
        "\n",
        "//c\n",
    ];
    let mut decls = Declarations::default();
    decls.declare("x", CelType::Dyn).declare("y", CelType::Int);
    let mut env: HashMap<String, Value> = HashMap::new();
    env.insert("x".into(), Value::Int(3));
    env.insert("y".into(), Value::Int(-1));
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let (mut parsed, mut evaluated) = (0, 0);
    for _ in 0..20_000 {
        let n = 1 + rng.next() % 12;
        let src: String = (0..n)
            .map(|_| pieces[(rng.next() % pieces.len() as u64) as usize])
            .collect();
        if let Ok(p) = Program::parse(&src) {
            parsed += 1;
            let _ = p.check(&decls);
            if p.eval(&env).is_ok() {
                evaluated += 1;
            }
        }
    }
    // The soup must reach the later phases, or this tests only the lexer.
    assert!(
        parsed > 400 && evaluated > 200,
        "{parsed} parsed, {evaluated} evaluated"
    );
}
