//! The dashboard page, run by `cargo test` through node:
//!
//! - `page_logic`: node's test runner on the page's own logic
//!   (tests/browser/logic.test.mjs → dashboard/src/logic.js);
//! - `page_in_chromium`: tests/browser/dashboard.test.mjs drives Debian's
//!   headless Chromium with playwright-core against the real `parallax
//!   serve` (this crate's binary), inside `unshare --net` with only
//!   loopback up, bounded by `timeout`, with a fresh HOME and TMPDIR. It
//!   signs in, sees a blocked event arrive with its rule id, opens it and
//!   sees the secret masked, reads the rule hits, the definition and the
//!   latency, approves a held call by clicking while a `POST
//!   /evaluate?wait=` caller waits, and reloads. A screenshot of each view
//!   goes to `$PARALLAX_ARTIFACTS_DIR/dashboard/` (default
//!   `target/artifacts/dashboard/`); with `PARALLAX_UPDATE_SCREENSHOTS=1`
//!   they are also copied to docs/dashboard/.
//!
//! Without node, chromium or the npm packages (`.ci/steps/50-dashboard.sh`
//! installs them) each test prints one `skipped:` line and passes; with
//! `CI=true` it fails instead.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// `true` when `why` is `None`; otherwise one skip line (or, in CI, a
/// failure).
fn can_run(test: &str, why: Option<String>) -> bool {
    let Some(why) = why else { return true };
    let msg = format!("{test} — {why}");
    if in_ci() {
        panic!("{msg}; with CI=true this fails instead of being skipped");
    }
    let _ = writeln!(std::io::stderr(), "skipped: {msg}");
    false
}

fn runs(cmd: &[&str]) -> bool {
    Command::new("timeout")
        .arg("20")
        .args(cmd)
        .output()
        .is_ok_and(|o| o.status.success())
}

fn chromium() -> PathBuf {
    std::env::var_os("PARALLAX_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
}

fn artifacts() -> PathBuf {
    match std::env::var_os("PARALLAX_ARTIFACTS_DIR").filter(|v| !v.is_empty()) {
        Some(d) => Path::new(ROOT).join(d).join("dashboard"),
        None => Path::new(ROOT).join("target/artifacts/dashboard"),
    }
}

/// Runs `node --test <script>` (inside `wrap`), bounded; panics with its
/// output unless every test passed.
fn node_test(wrap: &[&str], script: &str, envs: &[(&str, &Path)], label: &str) {
    let mut cmd = Command::new("timeout");
    cmd.args(["-k", "5", "300"]).args(wrap);
    cmd.args(["node", "--test", "--test-reporter=tap", script])
        .current_dir(ROOT);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{label}: cannot run node: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The runner's report, for the log either way.
    let _ = writeln!(std::io::stderr(), "--- {label}\n{stdout}{stderr}");
    assert!(
        out.status.success(),
        "{label} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains("# fail 0") && !stdout.contains("# pass 0"),
        "{label}: no test ran, or one failed:\n{stdout}"
    );
}

#[test]
fn page_logic() {
    let why = (!runs(&["node", "--version"])).then(|| "node not found".to_string());
    if !can_run("dashboard page logic", why) {
        return;
    }
    node_test(
        &[],
        "tests/browser/logic.test.mjs",
        &[],
        "dashboard page logic",
    );
}

#[test]
fn page_in_chromium() {
    let playwright = Path::new(ROOT).join("tests/browser/node_modules/playwright-core");
    let why = if !runs(&["node", "--version"]) {
        Some("node not found".to_string())
    } else if !chromium().is_file() {
        Some(format!(
            "{} not found (Debian's chromium; .ci/steps/50-dashboard.sh installs it)",
            chromium().display()
        ))
    } else if !playwright.is_dir() {
        Some(format!(
            "{} not installed (npm ci --prefix tests/browser)",
            playwright.display()
        ))
    } else if !runs(&["unshare", "--net", "--", "ip", "link", "set", "lo", "up"]) {
        Some("`unshare --net` then `ip link set lo up` failed (needs root and iproute2)".into())
    } else {
        None
    };
    if !can_run("dashboard in chromium", why) {
        return;
    }
    let work = std::env::temp_dir().join(format!("parallax-dashboard-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let home = work.join("home");
    let tmp = work.join("tmp");
    for d in [&home, &tmp] {
        std::fs::create_dir_all(d).expect("create the test's directories");
    }
    let shots = artifacts();
    let _ = std::fs::remove_dir_all(&shots);
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_parallax"));
    let config = Path::new(ROOT).join("tests/fixtures/dashboard/parallax.yaml");
    node_test(
        &[
            "unshare",
            "--net",
            "--",
            "sh",
            "-c",
            "ip link set lo up && exec \"$@\"",
            "sh",
        ],
        "tests/browser/dashboard.test.mjs",
        &[
            ("PARALLAX_BIN", &bin),
            ("PARALLAX_DASHBOARD_CONFIG", &config),
            ("PARALLAX_WORK_DIR", &work),
            ("PARALLAX_SCREENSHOTS", &shots),
            ("HOME", &home),
            ("TMPDIR", &tmp),
        ],
        "dashboard in chromium",
    );
    let views = [
        "live",
        "decision",
        "rules",
        "latency",
        "approvals",
        "approvals-decided",
        "health",
    ];
    for v in views {
        let png = shots.join(format!("{v}.png"));
        let bytes = std::fs::read(&png).unwrap_or_default();
        assert!(
            bytes.starts_with(b"\x89PNG"),
            "a screenshot of the {v} view at {}",
            png.display()
        );
    }
    let _ = writeln!(
        std::io::stderr(),
        "dashboard screenshots: {}",
        shots.display()
    );
    if std::env::var("PARALLAX_UPDATE_SCREENSHOTS").is_ok_and(|v| v == "1") {
        let docs = Path::new(ROOT).join("docs/dashboard");
        std::fs::create_dir_all(&docs).expect("create docs/dashboard");
        for v in views {
            let name = format!("{v}.png");
            std::fs::copy(shots.join(&name), docs.join(&name)).expect("copy a screenshot");
        }
    }
    let _ = std::fs::remove_dir_all(&work);
}
