//! A PostgreSQL cluster of the test's own, in a temporary directory, on a
//! free loopback port: `initdb` (trust authentication, superuser
//! `parallax`), `pg_ctl start`, and on drop `pg_ctl stop` and the directory
//! removed. Run as a non-root user (PostgreSQL refuses root): when the test
//! runs as root (CI does), every command goes through `runuser -u nobody`
//! and the directory belongs to nobody.
//!
//! The programs are found on PATH, else in /usr/lib/postgresql/<n>/bin
//! (Debian's `postgresql` package). Without them [`PgCluster::start`] says
//! `skipped:` and gives `None`; with `CI=true` it panics instead, so CI
//! cannot quietly stop running the suite.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct PgCluster {
    dir: PathBuf,
    bin: PathBuf,
    pub port: u16,
    as_nobody: bool,
}

fn find_bin() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("PATH") {
        for d in std::env::split_paths(&path) {
            if d.join("initdb").is_file() && d.join("pg_ctl").is_file() {
                return Some(d);
            }
        }
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|b| b.join("initdb").is_file())
        .collect();
    found.sort();
    found.pop()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

impl PgCluster {
    /// A fresh cluster, started; `None` (after a `skipped:` line) when
    /// PostgreSQL is not installed and CI is not set.
    pub fn start(name: &str) -> Option<PgCluster> {
        let Some(bin) = find_bin() else {
            let msg = format!("{name} — PostgreSQL (initdb, pg_ctl) is not installed");
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{msg}; with CI=true this fails instead of being skipped");
            }
            eprintln!("skipped: {msg}");
            return None;
        };
        let dir = super::temp_dir(&format!("pg-{name}"));
        let as_nobody = is_root();
        if as_nobody {
            let status = Command::new("chown")
                .args(["-R", "nobody:nogroup"])
                .arg(&dir)
                .status()
                .expect("run chown");
            assert!(status.success(), "chown the cluster's directory");
        }
        let cluster = PgCluster {
            dir,
            bin,
            port: super::free_port(),
            as_nobody,
        };
        let data = cluster.data();
        cluster.run(
            "initdb",
            &[
                "-D",
                data.to_str().expect("utf-8 path"),
                "-U",
                "parallax",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        cluster.pg_start();
        Some(cluster)
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// `program` of the cluster's bin directory, as nobody when the test
    /// runs as root.
    fn command(&self, program: &str) -> Command {
        let exe = self.bin.join(program);
        if self.as_nobody {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(exe);
            c
        } else {
            Command::new(exe)
        }
    }

    fn run(&self, program: &str, args: &[&str]) {
        let out = self
            .command(program)
            .args(args)
            .env("LC_ALL", "C")
            .current_dir(&self.dir)
            .output()
            .unwrap_or_else(|e| panic!("run {program}: {e}"));
        assert!(
            out.status.success(),
            "{program} {args:?} failed:\n{}\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
        );
    }

    /// Starts the server (again), waiting until it accepts connections.
    pub fn pg_start(&self) {
        let data = self.data();
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            data.display()
        );
        let log = self.dir.join("server.log");
        self.run(
            "pg_ctl",
            &[
                "-D",
                data.to_str().expect("utf-8 path"),
                "-l",
                log.to_str().expect("utf-8 path"),
                "-o",
                &opts,
                "-w",
                "-t",
                "60",
                "start",
            ],
        );
    }

    /// Stops the server at once (`-m immediate`: what a crash looks like to
    /// its clients).
    pub fn pg_stop(&self) {
        let data = self.data();
        self.run(
            "pg_ctl",
            &[
                "-D",
                data.to_str().expect("utf-8 path"),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        );
    }

    /// The connection string of database `postgres` as `parallax`.
    pub fn url(&self) -> String {
        format!(
            "postgres://parallax@127.0.0.1:{}/postgres?connect_timeout=2",
            self.port
        )
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
