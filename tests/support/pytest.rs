//! Running a pytest suite from a virtual environment against this build's
//! `parallax` binary, for the suites written in Python (tests/python_sdks.rs,
//! tests/python_client.rs).
//!
//! The venv is named by an environment variable (a relative path is taken
//! from the repository root) or a default folder; the CI step that creates
//! it is named in the skip line. Without it the suite says on stderr that
//! it was skipped and passes, like the conformance suites without their
//! corpora; under `CI=true` a missing venv fails instead, so CI cannot
//! quietly stop running it. pytest's closing line goes to stderr, so the CI
//! log shows how many tests ran.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The suites take seconds to a minute; this only bounds a hang.
const TIMEOUT: Duration = Duration::from_secs(300);

/// One pytest suite.
pub struct Suite<'a> {
    /// What the suite is, in messages ("Python SDK suite").
    pub name: &'a str,
    /// The variable that names the venv, and the default folder.
    pub venv_env: &'a str,
    pub default_venv: &'a str,
    /// What creates the venv (for the skip line).
    pub made_by: &'a str,
    /// The tests' folder, from the repository root.
    pub tests: &'a str,
    /// Extra environment for pytest, a path each taken from the repository
    /// root (e.g. `PYTHONPATH`).
    pub paths_env: &'a [(&'a str, &'a str)],
    /// Run pytest in a loopback-only network namespace of its own (`unshare
    /// --net`, then `ip link set lo up`): for suites that start third-party
    /// programs which might try to reach outside (a gateway fetching price
    /// tables, telemetry). Needs root, as CI runs.
    pub isolated: bool,
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Reads a child's pipe to the end on a thread of its own (so neither pipe
/// can fill up and stall the child).
fn drain(pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut pipe = pipe;
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

impl Suite<'_> {
    fn venv(&self) -> PathBuf {
        match std::env::var_os(self.venv_env).filter(|v| !v.is_empty()) {
            Some(dir) => repo().join(dir),
            None => repo().join(self.default_venv),
        }
    }

    /// Runs the suite with `parallax` (this build's binary); panics with
    /// its output when it fails, hangs or collects nothing.
    pub fn run(&self, parallax: &str) {
        let venv = self.venv();
        let python = venv.join("bin/python");
        if !python.exists() {
            let why = format!(
                "{} — no venv at {} ({} creates it; or set {})",
                self.name,
                venv.display(),
                self.made_by,
                self.venv_env
            );
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{why}; with CI=true a missing venv fails instead of being skipped");
            }
            // Straight to the process's stderr: a passing test's output is
            // captured by the harness and never shown.
            let _ = writeln!(std::io::stderr(), "skipped: {why}");
            return;
        }
        let mut command = if self.isolated {
            let mut c = Command::new("unshare");
            c.args([
                "--net",
                "--",
                "sh",
                "-c",
                "ip link set lo up && exec \"$0\" \"$@\"",
            ])
            .arg(&python);
            c
        } else {
            Command::new(&python)
        };
        command
            .args(["-m", "pytest", self.tests, "-q", "-p", "no:cacheprovider"])
            .current_dir(repo())
            .env("PARALLAX_BIN", parallax)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, path) in self.paths_env {
            command.env(key, repo().join(path));
        }
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
        let out = drain(child.stdout.take().expect("stdout is piped"));
        let err = drain(child.stderr.take().expect("stderr is piped"));
        let started = Instant::now();
        let status = loop {
            match child.try_wait().expect("wait for pytest") {
                Some(status) => break Some(status),
                None if started.elapsed() > TIMEOUT => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                None => std::thread::sleep(Duration::from_millis(100)),
            }
        };
        let out = out.join().unwrap_or_default();
        let err = err.join().unwrap_or_default();
        match status {
            None => panic!(
                "pytest did not finish within {} s and was killed\n--- stdout\n{out}\n--- stderr\n{err}",
                TIMEOUT.as_secs()
            ),
            // 5 is pytest's "no tests collected": a suite that ran nothing failed.
            Some(s) if !s.success() => panic!(
                "the {} failed ({s})\n--- stdout\n{out}\n--- stderr\n{err}",
                self.name
            ),
            Some(_) => {
                let summary = out
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("");
                let _ = writeln!(std::io::stderr(), "{}: {summary}", self.name);
            }
        }
    }
}
