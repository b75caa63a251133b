//! `parallax init [DIR]`: a starter `parallax.yaml` and an example policy
//! file that `parallax lint` accepts and that block the obvious.
//!
//! The starter config is the crate's own `parallax.yaml` (its inline
//! starter rules: destructive deletes, download-and-run, credentials),
//! without the curated `rules/` tree a fresh folder does not have, plus
//! `policy_files:` naming the example policy.

use super::fail;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const STARTER: &str = include_str!("../../parallax.yaml");

/// The example policy file `init` writes.
pub const EXAMPLE_POLICY: &str = "\
# Tool calls of the slack and email adapters (tool_name `<adapter>.<action>`,
# tool_args {recipient, body, subject, metadata}). The first policy that
# matches decides; a call of these adapters no policy matches is denied.
# Format: docs/POLICIES.md.
version: 1
default: deny
policies:
  - name: no-credentials-outside
    match: {adapter: [slack, email]}
    when: recipient.is_external and body.matches('(?i)(password|secret|token|api[_ -]?key)\\s*[:=]')
    decision: deny
    reason: Credentials do not leave the company.

  - name: team-channels
    match: {adapter: slack, action: chat_postMessage}
    when: not recipient.is_external
    decision: rewrite
    transforms: [redact_secrets, clamp_length(2000)]
    reason: Team chat, secrets masked.

  - name: partner-mail
    match: {adapter: email, action: send}
    when: recipient.is_external and not bulk_send(10)
    decision: rewrite
    transforms: [redact_secrets, strip_urls]
    reason: Mail outside, secrets and links removed.
";

/// The starter config, for a folder holding `policies/tools.yaml`.
pub fn starter_config() -> String {
    let policy = "# parlok-style tool-call policies (docs/POLICIES.md).\n\
                  policy_files: [policies/tools.yaml]\n\
                  policy:\n  internal_domains: [example.com]   # your domains\n";
    let mut out = String::new();
    let mut replaced = false;
    for line in STARTER.lines() {
        if line.trim_start().starts_with("rules_dir:") {
            out.push_str(policy);
            replaced = true;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    if !replaced {
        out.push('\n');
        out.push_str(policy);
    }
    out
}

pub fn run(dir: Option<PathBuf>) -> ExitCode {
    let dir = dir.unwrap_or_else(|| PathBuf::from("."));
    match write(&dir) {
        Ok(written) => {
            for p in written {
                println!("wrote {}", p.display());
            }
            println!(
                "check it: parallax lint -c {}",
                dir.join("parallax.yaml").display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

fn write(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let config = dir.join("parallax.yaml");
    let policy = dir.join("policies").join("tools.yaml");
    for p in [&config, &policy] {
        if p.exists() {
            return Err(format!(
                "{} exists: init never overwrites a file",
                p.display()
            ));
        }
    }
    let mkdir = |d: &Path| {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))
    };
    mkdir(dir)?;
    mkdir(&dir.join("policies"))?;
    let put = |p: &Path, text: &str| {
        std::fs::write(p, text).map_err(|e| format!("cannot write {}: {e}", p.display()))
    };
    put(&config, &starter_config())?;
    put(&policy, EXAMPLE_POLICY)?;
    Ok(vec![config, policy])
}
