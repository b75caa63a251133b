//! `parallax lint --sigma DIR` as a user runs it: one line per failing rule,
//! unmapped-field warnings, `N compiled, N failed`, and the exit code.

use std::path::PathBuf;
use std::process::Command;

fn dir_with(files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("parallax-lint-sigma-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (path, content) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    dir
}

const GOOD: &str = "title: good\nid: good-1\nauthor: Someone\nlogsource: {product: linux, category: process_creation}\n\
detection:\n  sel:\n    CommandLine|contains: x\n    EventID: 1\n  condition: sel\n";
const BAD: &str =
    "title: bad\nid: bad-1\nlogsource: {product: linux, category: process_creation}\n\
detection:\n  sel:\n    CommandLine|contians: x\n  condition: sel\n";

#[test]
fn reports_failures_warnings_and_counts() {
    let dir = dir_with(&[
        ("a/good.yml", GOOD),
        ("b/c/bad.yaml", BAD),
        ("notes.txt", "ignored"),
    ]);
    let out = Command::new(env!("CARGO_BIN_EXE_parallax"))
        .args(["lint", "--sigma"])
        .arg(&dir)
        .current_dir(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success(),
        "a failing rule fails the lint:\n{stdout}"
    );
    let lines: Vec<&str> = stdout.lines().collect();
    let errors: Vec<&&str> = lines.iter().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stdout}");
    assert!(errors[0].contains("bad.yaml") && errors[0].contains("rule `bad-1`"));
    assert!(
        errors[0].contains("unknown modifier `contians`"),
        "{stdout}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("warning: field `EventID` (1 rules) is not mapped")),
        "{stdout}"
    );
    assert!(
        lines.last().unwrap().starts_with("1 compiled, 1 failed"),
        "{stdout}"
    );

    std::fs::remove_file(dir.join("b/c/bad.yaml")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_parallax"))
        .args(["lint", "--sigma"])
        .arg(&dir)
        .current_dir(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout
            .lines()
            .last()
            .unwrap()
            .starts_with("1 compiled, 0 failed"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
