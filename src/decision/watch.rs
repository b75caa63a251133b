//! `reload.watch`: the rules reload by themselves when their files change.
//!
//! The config and every rule file and folder it reads (the rule set's
//! `inputs`) are watched with the `notify` crate (inotify, FSEvents,
//! ReadDirectoryChangesW). A file is watched through its folder, since
//! editors save by writing a new file and renaming it over the old one;
//! events about other files of that folder (an audit log beside the config)
//! are ignored. Changes are debounced (`reload.debounce_ms` of quiet after
//! the last one: one save is several events), then the service reloads as
//! SIGHUP does: an edit that does not compile keeps the running rules, and
//! the error is logged and kept for `/health` ([`DecisionService::reload`]).
//! The set of watched paths is read again after every reload, so a policy
//! file added to `policy_files` is watched from then on.

use super::DecisionService;
use notify::{EventKind, RecursiveMode, Watcher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Changes queued between the watcher's thread and the reloader; one is
/// enough to know a reload is due, so a full queue drops the rest.
const QUEUE: usize = 64;

/// Whether `path` is one of `inputs` or lies inside one of its folders.
fn concerns(path: &Path, inputs: &[PathBuf]) -> bool {
    inputs
        .iter()
        .any(|i| path == i.as_path() || (i.is_dir() && path.starts_with(i)))
}

/// What to register: folders recursively, files through their folder.
fn watch_list(inputs: &[PathBuf]) -> Vec<(PathBuf, RecursiveMode)> {
    let mut out: Vec<(PathBuf, RecursiveMode)> = Vec::new();
    for i in inputs {
        let (dir, mode) = if i.is_dir() {
            (i.clone(), RecursiveMode::Recursive)
        } else {
            let parent = i.parent().filter(|p| !p.as_os_str().is_empty());
            (
                parent.unwrap_or(Path::new(".")).to_path_buf(),
                RecursiveMode::NonRecursive,
            )
        };
        if !out.iter().any(|(d, m)| *d == dir && *m == mode) {
            out.push((dir, mode));
        }
    }
    out
}

/// Absolute forms, so the watcher's absolute event paths compare equal.
fn absolute(inputs: Vec<PathBuf>) -> Vec<PathBuf> {
    inputs
        .into_iter()
        .map(|p| std::path::absolute(&p).unwrap_or(p))
        .collect()
}

/// Watches the rule files of `service` and reloads on change, until the
/// watcher cannot be set up (logged).
pub async fn watch_and_reload(service: Arc<DecisionService>) {
    let debounce = Duration::from_millis(service.settings.reload.debounce_ms);
    loop {
        let inputs = absolute(service.reload_inputs());
        if inputs.is_empty() {
            tracing::warn!(
                "reload.watch: no config file to watch (the baked config or --baked-only); \
                 not watching"
            );
            return;
        }
        let (tx, mut rx) = mpsc::channel::<()>(QUEUE);
        let relevant = inputs.clone();
        let watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            let Ok(event) = res else { return };
            if matches!(event.kind, EventKind::Access(_)) {
                return;
            }
            if event.paths.iter().any(|p| concerns(p, &relevant)) {
                let _ = tx.try_send(());
            }
        });
        let mut watcher = match watcher {
            Ok(w) => w,
            Err(e) => {
                tracing::error!(error = %e, "reload.watch: cannot start watching; reload with SIGHUP");
                return;
            }
        };
        for (dir, mode) in watch_list(&inputs) {
            if let Err(e) = watcher.watch(&dir, mode) {
                tracing::error!(path = %dir.display(), error = %e, "reload.watch: cannot watch");
            }
        }
        tracing::info!(
            paths = inputs.len(),
            "reload.watch: watching the rule files"
        );
        if rx.recv().await.is_none() {
            return;
        }
        // Quiet for `debounce` after the last change, then one reload.
        loop {
            match tokio::time::timeout(debounce, rx.recv()).await {
                Ok(Some(())) => continue,
                Ok(None) => return,
                Err(_) => break,
            }
        }
        drop(watcher);
        tracing::info!("reload.watch: the rule files changed; reloading");
        let s = service.clone();
        // Errors are logged, counted and kept for /health by `reload`.
        let _ = tokio::task::spawn_blocking(move || s.reload()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_watched_through_their_folder_and_siblings_ignored() {
        let dir = std::env::temp_dir().join(format!("parallax-watch-{}", std::process::id()));
        let rules = dir.join("rules");
        std::fs::create_dir_all(&rules).unwrap();
        let config = dir.join("parallax.yaml");
        std::fs::write(&config, "").unwrap();
        let inputs = vec![config.clone(), rules.clone()];
        let list = watch_list(&inputs);
        assert!(list.contains(&(dir.clone(), RecursiveMode::NonRecursive)));
        assert!(list.contains(&(rules.clone(), RecursiveMode::Recursive)));
        assert!(concerns(&config, &inputs));
        assert!(concerns(&rules.join("regex/x.yaml"), &inputs));
        assert!(!concerns(&dir.join("audit.log"), &inputs));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
