//! The TypeScript client (`clients/typescript/`): its node test suite
//! (`node --test`) against this build's `parallax` binary, which the suite
//! starts on a free loopback port (clients/typescript/test/server.js).
//!
//! Needs Node 20 or newer on PATH. Without it the test says on stderr that
//! it was skipped and passes; under `CI=true` a missing node fails instead,
//! so CI cannot quietly stop running the suite. With `tsc` installed in
//! clients/typescript/node_modules (.ci/steps/45-typescript-client.sh
//! installs it from the committed lockfile) the hand-written types are
//! checked too, against a typed use of the client (test/types.check.ts).

use std::io::Write;
use std::path::Path;
use std::process::Command;

fn dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/typescript")
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Skips (one line on stderr) or, under CI=true, fails.
fn skip(why: &str) {
    if in_ci() {
        panic!("{why}; with CI=true this fails instead of being skipped");
    }
    let _ = writeln!(std::io::stderr(), "skipped: {why}");
}

/// Node's major version, if `node` runs.
fn node_major() -> Option<u32> {
    let out = Command::new("node").arg("--version").output().ok()?;
    let v = String::from_utf8_lossy(&out.stdout);
    v.trim()
        .trim_start_matches('v')
        .split('.')
        .next()?
        .parse()
        .ok()
}

#[test]
fn typescript_client_suite_against_the_binary() {
    match node_major() {
        Some(m) if m >= 20 => {}
        Some(m) => {
            return skip(&format!(
                "TypeScript client suite — node {m} is older than 20"
            ))
        }
        None => return skip("TypeScript client suite — node not found on PATH"),
    }
    // The binary, not a `cargo run`: the suite spawns it itself.
    let out = Command::new("timeout")
        .args(["180", "node", "--test", "test/client.test.js"])
        .current_dir(dir())
        .env("PARALLAX_BIN", env!("CARGO_BIN_EXE_parallax"))
        .env_remove("PARALLAX_AUTH_TOKEN")
        .output()
        .expect("run node --test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node --test failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let count = |key: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("# {key} ")))
            .and_then(|n| n.trim().parse::<u32>().ok())
            .unwrap_or(0)
    };
    let (pass, fail) = (count("pass"), count("fail"));
    assert!(pass > 0, "the suite ran no test:\n{stdout}");
    let _ = writeln!(
        std::io::stderr(),
        "typescript client: {pass} passed, {fail} failed"
    );
}

#[test]
fn typescript_client_types_check_with_tsc() {
    let tsc = dir().join("node_modules/.bin/tsc");
    if !tsc.exists() {
        return skip(&format!(
            "TypeScript client types — no tsc at {} (.ci/steps/45-typescript-client.sh \
             installs it: npm ci in clients/typescript)",
            tsc.display()
        ));
    }
    let out = Command::new("timeout")
        .arg("120")
        .arg(&tsc)
        .args(["--noEmit", "-p", "tsconfig.json"])
        .current_dir(dir())
        .output()
        .expect("run tsc");
    assert!(
        out.status.success(),
        "tsc --noEmit failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
