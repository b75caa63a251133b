//! Start-up and compile time of the real binary (issue 19), judged against
//! `baked-start`, `atr-dynamic-compile` and `atr-baked-start` in
//! benches/budgets.toml. `cargo bench --bench startup`.
//!
//! Each figure is the whole process, as a user gets it (`hyperfine -N` is
//! the same measurement by hand; docs/PERFORMANCE.md has the commands):
//! - **baked-start**: this bench's own release `parallax` (baked with the
//!   shipped rules) running `eval --config parallax.yaml /dev/null`: the
//!   source digest matches, so the baked program is used and nothing is
//!   lowered; also without `--config` (the baked config). Median wall of
//!   `STARTUP_RUNS` (20) runs after 3 warm-ups.
//! - **atr-dynamic-compile**: the same binary on a config loading the ATR
//!   corpus (`atr/rules` under `PARALLAX_CONFORMANCE_DIR`, the settings of
//!   tests/fixtures/atr/parallax.yaml): the rules differ from the baked
//!   ones, so it lowers, plans and builds every automaton and verifier
//!   (`Engine::build_all`: a rule that cannot be built is an error at
//!   start-up). Median of `STARTUP_ATR_RUNS` (3).
//! - **atr-baked-start**: a binary baked with that config
//!   (`PARALLAX_CONFIG=… cargo build --release`, into
//!   `<target>/startup-atr`; minutes the first time; or
//!   `STARTUP_ATR_BIN=/path/to/parallax`), running `eval /dev/null`. Also
//!   its first verdict (one message on stdin), which pays for building the
//!   scanners that message needs. `STARTUP_ATR=0` skips both ATR figures.
//!
//! Wall time depends on the machine's load, so every figure is printed with
//! the load average and the CPU time of the runs (getrusage of the
//! children); with valgrind installed, the instruction count of one run of
//! the baked start (callgrind, independent of load; `STARTUP_CALLGRIND=0`
//! skips it, `=all` adds the ATR baked start).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

#[path = "support/budgets.rs"]
mod budgets;
#[path = "../tests/support/conformance.rs"]
mod conformance;

/// One command's runs: wall times (ms) and CPU per run (ms).
struct Runs {
    wall_ms: Vec<f64>,
    cpu_ms: f64,
}

impl Runs {
    fn median(&self) -> f64 {
        let mut v = self.wall_ms.clone();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }
    fn min(&self) -> f64 {
        self.wall_ms.iter().copied().fold(f64::INFINITY, f64::min)
    }
    fn mean(&self) -> f64 {
        self.wall_ms.iter().sum::<f64>() / self.wall_ms.len() as f64
    }
    fn print(&self, label: &str) {
        println!(
            "{label:<44} median {:>9.1} ms  mean {:>9.1}  min {:>9.1}  CPU {:>9.1} ms/run  ({} runs, load {})",
            self.median(),
            self.mean(),
            self.min(),
            self.cpu_ms,
            self.wall_ms.len(),
            load()
        );
    }
}

/// User + system CPU of the waited-for children so far, in ms.
fn children_cpu_ms() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) } != 0 {
        return f64::NAN;
    }
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(usage.ru_utime) + ms(usage.ru_stime)
}

/// The 1-minute load average, as `uptime` prints it.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// Runs `bin args` in `dir` once; panics (naming the command) unless it
/// succeeds, so a broken start is never timed as a fast one.
fn run_once(bin: &Path, args: &[&str], dir: &Path, stdin: Option<&str>) {
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        use std::io::Write;
        pipe.write_all(text.as_bytes()).expect("write the event");
    }
    let out = child.wait_with_output().expect("wait for parallax");
    assert!(
        out.status.success(),
        "{} {args:?} failed ({}): {}",
        bin.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

fn measure(
    bin: &Path,
    args: &[&str],
    dir: &Path,
    stdin: Option<&str>,
    warmup: usize,
    runs: usize,
) -> Runs {
    for _ in 0..warmup {
        run_once(bin, args, dir, stdin);
    }
    let cpu_before = children_cpu_ms();
    let mut wall_ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        run_once(bin, args, dir, stdin);
        wall_ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    Runs {
        wall_ms,
        cpu_ms: (children_cpu_ms() - cpu_before) / runs as f64,
    }
}

/// Instructions of one run under callgrind, when valgrind is installed.
fn instructions(bin: &Path, args: &[&str], dir: &Path) -> Option<u64> {
    let out_file = dir.join("startup.callgrind");
    let out = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .arg(bin)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .ok()?;
    let _ = std::fs::remove_file(&out_file);
    // "==123== Collected : 28612345"
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .find_map(|l| l.split("Collected :").nth(1))
        .and_then(|n| n.trim().parse().ok())
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A config loading the corpus found (the fixture names the default place;
/// a copy pointing at the one found honours `PARALLAX_CONFORMANCE_DIR`),
/// written to `path`.
fn atr_config(corpus: &Path, path: &Path) {
    let fixture = workspace().join("tests/fixtures/atr/parallax.yaml");
    let mut settings: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&fixture).expect("read the ATR fixture"))
            .expect("the ATR fixture is YAML");
    settings["atr_dirs"] = serde_yaml::Value::Sequence(vec![corpus.display().to_string().into()]);
    let text = serde_yaml::to_string(&settings).expect("the config serialises");
    // Rewritten only when it changed: cargo rebuilds the baked binary when
    // its config's mtime moves.
    if std::fs::read_to_string(path).ok().as_deref() != Some(text.as_str()) {
        std::fs::write(path, text).expect("write the ATR config");
    }
}

/// A release `parallax` baked with `config`: `STARTUP_ATR_BIN`, else built
/// (or brought up to date) by cargo in `<target>/startup-atr`.
fn atr_baked_binary(config: &Path) -> PathBuf {
    if let Some(bin) = std::env::var_os("STARTUP_ATR_BIN") {
        return PathBuf::from(bin);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"))
        .join("startup-atr");
    eprintln!(
        "building a release parallax baked with the ATR corpus in {} (minutes the first time)",
        target.display()
    );
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let started = Instant::now();
    let status = Command::new(cargo)
        .args(["build", "--release", "--bin", "parallax"])
        .current_dir(workspace())
        .env("PARALLAX_CONFIG", config)
        .env("CARGO_TARGET_DIR", &target)
        .status()
        .expect("run cargo");
    assert!(status.success(), "the ATR-baked build failed");
    eprintln!(
        "ATR-baked build: {:.0} s (load {})",
        started.elapsed().as_secs_f64(),
        load()
    );
    target.join("release/parallax")
}

fn main() {
    // `cargo bench` passes harness flags (`--bench`); nothing to parse.
    let budgets = budgets::Budgets::load();
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_parallax"));
    let dir = std::env::temp_dir().join(format!("parallax-bench-startup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create a temp dir");
    let runs = env_usize("STARTUP_RUNS", 20);
    let callgrind = std::env::var("STARTUP_CALLGRIND").unwrap_or_default();

    // The shipped rules, baked: with their config (digest path) and without.
    let config = workspace().join("parallax.yaml");
    let config = config.to_str().expect("a UTF-8 path");
    let with_config = ["eval", "--config", config, "/dev/null"];
    let baked_only = ["eval", "/dev/null"];
    let with = measure(&bin, &with_config, &dir, None, 3, runs);
    with.print("baked, eval --config parallax.yaml /dev/null");
    let without = measure(&bin, &baked_only, &dir, None, 3, runs);
    without.print("baked, eval /dev/null (baked config)");
    if callgrind != "0" {
        match instructions(&bin, &baked_only, &dir) {
            Some(n) => println!(
                "baked, eval /dev/null: {:.1} M instructions (callgrind)",
                n as f64 / 1e6
            ),
            None => println!("callgrind: not measured (valgrind not installed or failed)"),
        }
    }
    budgets.check("baked-start", with.median());

    if std::env::var("STARTUP_ATR").is_ok_and(|v| v == "0") {
        println!("budget atr-dynamic-compile, atr-baked-start: not measured (STARTUP_ATR=0)");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let Some(corpus) = conformance::corpus("the startup bench's ATR figures", "atr/rules") else {
        println!("budget atr-dynamic-compile, atr-baked-start: not measured (no ATR corpus)");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    // A stable path (not the temp dir): the baked build watches it.
    let atr_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"));
    std::fs::create_dir_all(&atr_dir).expect("create the target dir");
    let atr_yaml = atr_dir.join("startup-atr.yaml");
    atr_config(&corpus, &atr_yaml);
    let atr_yaml = atr_yaml.to_str().expect("a UTF-8 path");

    let dynamic = measure(
        &bin,
        &["eval", "--config", atr_yaml, "/dev/null"],
        &dir,
        None,
        0,
        env_usize("STARTUP_ATR_RUNS", 3),
    );
    dynamic.print("ATR dynamic: eval --config atr /dev/null");
    budgets.check("atr-dynamic-compile", dynamic.median());

    let atr_bin = atr_baked_binary(Path::new(atr_yaml));
    let baked = measure(&atr_bin, &baked_only, &dir, None, 2, runs.min(10));
    baked.print("ATR baked, eval /dev/null");
    let message = r#"{"stage":"message.before","message_text":"Please summarise the design document and list the open questions."}"#;
    let first = measure(&atr_bin, &["eval", "-"], &dir, Some(message), 1, 5);
    first.print("ATR baked, start + first verdict (message)");
    if callgrind == "all" {
        if let Some(n) = instructions(&atr_bin, &baked_only, &dir) {
            println!(
                "ATR baked, eval /dev/null: {:.1} M instructions (callgrind)",
                n as f64 / 1e6
            );
        }
    }
    budgets.check("atr-baked-start", baked.median());
    let _ = std::fs::remove_dir_all(&dir);
}
