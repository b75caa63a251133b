//! The shell analysis against a corpus of commands and the facts each must
//! yield (`tests/fixtures/shell_facts.txt`): one case per block, the command
//! on a `$ ` line, then `field: value` lines that must each be among the
//! derived values of that field (`!field: value` must not be).

use parallax_runtime::shell::ShellFacts;

fn values<'a>(f: &'a ShellFacts, field: &str) -> &'a [String] {
    match field {
        "shell" => &f.shell,
        "argv" => &f.argv,
        "program" => &f.program,
        "redirect" => &f.redirect,
        "code" => &f.code,
        "decoded" => &f.decoded,
        "paths" => &f.paths,
        other => panic!("unknown field {other}"),
    }
}

#[test]
fn corpus_of_commands_yields_its_facts() {
    let corpus = include_str!("fixtures/shell_facts.txt");
    let mut failures = Vec::new();
    let mut cases = 0;
    let mut current: Option<(String, ShellFacts)> = None;
    for line in corpus.lines() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(cmd) = line.strip_prefix("$ ") {
            let cmd = cmd.replace("\\n", "\n");
            current = Some((cmd.clone(), ShellFacts::from_command(&cmd)));
            cases += 1;
            continue;
        }
        let Some((cmd, facts)) = &current else {
            panic!("a fact before any command: {line}");
        };
        let (field, want) = line.split_once(": ").expect("field: value");
        let (negated, field) = match field.strip_prefix('!') {
            Some(f) => (true, f),
            None => (false, field),
        };
        let got = values(facts, field);
        let present = got.iter().any(|v| v == want);
        if present == negated {
            failures.push(format!(
                "{cmd:?}: {}{field} {want:?}; got {got:?}",
                if negated { "unexpected " } else { "missing " }
            ));
        }
    }
    assert!(cases > 20);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn argv_arrays_are_words_already() {
    let argv: Vec<String> = ["bash", "-lc", "cd /etc && cat shadow"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let f = ShellFacts::from_argv(&argv);
    assert!(f.argv.contains(&"cat shadow".to_string()), "{f:?}");
    assert!(f.paths.contains(&"/etc/shadow".to_string()), "{f:?}");
}

#[test]
fn adversarial_commands_stay_bounded() {
    let cases = [
        "$(".repeat(50_000),
        "`".repeat(50_001),
        "a=$a$a$a$a; ".repeat(2_000),
        "eval ".repeat(20_000) + "x",
        "bash -c \"".repeat(5_000),
        "{a,b}".repeat(10_000),
        "echo cm0gLXJmIC8= | base64 -d | ".repeat(3_000) + "sh",
        "x<<E\n".repeat(5_000),
        "python3 -c 'os.system(\"".repeat(3_000),
        "cat /etc/".to_string() + &"*".repeat(100_000),
        "f { ".repeat(20_000) + "rm -rf /",
        "function ".repeat(20_000),
        "ssh -p ".repeat(20_000),
        "git -c core.pager=".repeat(10_000),
        "for x in $x$x; do ".repeat(5_000),
        "set -- $@ $@; ".repeat(5_000),
        "sh -c 'sh -c \"$0 $0\" $0 $0' x x; ".repeat(2_000),
        "curl -o f u; sh f; ".repeat(3_000),
        "eval \"$(curl x)\" ".repeat(5_000),
        "powershell -enc ".to_string() + &"QQA".repeat(50_000),
        "xargs -I".repeat(20_000),
    ];
    for c in &cases {
        let f = ShellFacts::from_command(c);
        let total: usize = [&f.shell, &f.argv, &f.paths, &f.code, &f.decoded]
            .iter()
            .map(|v| v.iter().map(String::len).sum::<usize>())
            .sum();
        assert!(
            total <= 64 * c.len() + 65_536,
            "{} bytes from {}",
            total,
            c.len()
        );
    }
}
