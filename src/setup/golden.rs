//! Golden files for every config setup writes (tests/fixtures/setup/):
//! from no file and from a user's existing file, with revert restoring the
//! file byte for byte (or removing the one setup created). Regenerate the
//! `*.golden.json` files with `PARALLAX_UPDATE_GOLDEN=1` and review the
//! diff.

use super::claudecode::{self, Scope, Transport};
use super::{backup_path, codex, codex_proxy};
use std::path::{Path, PathBuf};

const EXE: &str = "/opt/parallax/bin/parallax";

pub(super) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/setup")
}

pub(super) fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("parallax-setup-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn golden(name: &str, actual: &[u8]) {
    golden_file(&format!("{name}.golden.json"), actual);
}

pub(super) fn golden_file(file: &str, actual: &[u8]) {
    let path = fixtures().join(file);
    if std::env::var_os("PARALLAX_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(
        String::from_utf8_lossy(actual),
        String::from_utf8_lossy(&expected),
        "{} differs",
        path.display()
    );
}

fn claude(dir: &Path, transport: Transport, url: &str, fail_closed: bool) -> claudecode::Options {
    claudecode::Options {
        scope: Scope::Project,
        url: url.into(),
        fail_closed,
        transport,
        exe: EXE.into(),
        home: dir.join("home"),
        project: dir.join("proj"),
    }
}

/// setup → golden, a second setup changes nothing, revert → `before`.
fn round_trip(
    name: &str,
    file: &Path,
    before: Option<&[u8]>,
    setup: &dyn Fn() -> Result<super::Outcome, String>,
    revert: &dyn Fn() -> Result<super::Outcome, String>,
) {
    if let Some(b) = before {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, b).unwrap();
    }
    let out = setup().unwrap();
    assert!(!out.todo.is_empty());
    let written = std::fs::read(file).unwrap();
    golden(name, &written);
    assert_eq!(backup_path(file).exists(), before.is_some(), "{name}");
    second_setup_then_revert(name, file, &written, before, setup, revert);
}

/// What every setup must do once it wrote `written` over `before`: a
/// second setup changes nothing, revert gives back the user's bytes (or
/// removes the file setup created) and the backup, and a second revert
/// finds nothing of Parallax's.
fn second_setup_then_revert(
    name: &str,
    file: &Path,
    written: &[u8],
    before: Option<&[u8]>,
    setup: &dyn Fn() -> Result<super::Outcome, String>,
    revert: &dyn Fn() -> Result<super::Outcome, String>,
) {
    let again = setup().unwrap();
    assert!(again.done[0].contains("unchanged"), "{:?}", again.done);
    assert_eq!(std::fs::read(file).unwrap(), written);
    revert().unwrap();
    match before {
        Some(b) => assert_eq!(std::fs::read(file).unwrap(), b, "{name}: revert"),
        None => assert!(!file.exists(), "{name}: revert left {}", file.display()),
    }
    assert!(!backup_path(file).exists(), "{name}: backup left behind");
    let nothing = revert().unwrap();
    assert!(
        nothing.done[0].contains("no Parallax") || nothing.done[0].contains("does not"),
        "{:?}",
        nothing.done
    );
}

/// name, transport, url, --fail-closed, the file before setup.
type ClaudeCase<'a> = (&'a str, Transport, &'a str, bool, Option<&'a [u8]>);

#[test]
fn claude_code_settings() {
    let user = std::fs::read(fixtures().join("claudecode-user.json")).unwrap();
    let cases: [ClaudeCase; 4] = [
        (
            "claudecode-empty",
            Transport::Command,
            crate::hooks::client::DEFAULT_URL,
            false,
            None,
        ),
        (
            "claudecode-existing",
            Transport::Command,
            "http://10.0.0.5:9920",
            true,
            Some(&user),
        ),
        (
            "claudecode-http-empty",
            Transport::Http,
            "http://127.0.0.1:9920/",
            false,
            None,
        ),
        (
            "claudecode-http-existing",
            Transport::Http,
            "http://127.0.0.1:9920",
            false,
            Some(&user),
        ),
    ];
    for (name, transport, url, fail_closed, before) in cases {
        let dir = tmp(name);
        let opts = claude(&dir, transport, url, fail_closed);
        let file = dir.join("proj/.claude/settings.json");
        round_trip(name, &file, before, &|| claudecode::setup(&opts), &|| {
            claudecode::revert(Scope::Project, &opts.home, &opts.project)
        });
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn claude_code_scopes() {
    let home = Path::new("/h");
    let proj = Path::new("/p");
    assert_eq!(
        claudecode::settings_path(Scope::User, home, proj),
        Path::new("/h/.claude/settings.json")
    );
    assert_eq!(
        claudecode::settings_path(Scope::Local, home, proj),
        Path::new("/p/.claude/settings.local.json")
    );
}

#[test]
fn codex_hooks_json() {
    let user = std::fs::read(fixtures().join("codex-user.json")).unwrap();
    let cases: [(&str, Option<&[u8]>); 2] =
        [("codex-empty", None), ("codex-existing", Some(&user))];
    for (name, before) in cases {
        let dir = tmp(name);
        let opts = codex::Options {
            url: crate::hooks::client::DEFAULT_URL.into(),
            fail_closed: false,
            exe: EXE.into(),
            codex_home: dir.join("codex-home"),
        };
        round_trip(
            name,
            &codex::hooks_path(&opts.codex_home),
            before,
            &|| codex::setup(&opts),
            &|| codex::revert(&opts.codex_home),
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
    let env = std::ffi::OsStr::new("/x/ch");
    assert_eq!(
        codex::codex_home(Some(env), Path::new("/h")),
        Path::new("/x/ch")
    );
    assert_eq!(
        codex::codex_home(None, Path::new("/h")),
        Path::new("/h/.codex")
    );
}

#[test]
fn unreadable_files_are_refused_and_left_alone() {
    let dir = tmp("refuse");
    let opts = claude(
        &dir,
        Transport::Command,
        crate::hooks::client::DEFAULT_URL,
        false,
    );
    let file = dir.join("proj/.claude/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    for bad in [
        &b"{\"hooks\": "[..],
        b"[1, 2]",
        b"{\"hooks\": []}",
        b"{\"hooks\": {\"PreToolUse\": 3}}",
    ] {
        std::fs::write(&file, bad).unwrap();
        let e = claudecode::setup(&opts).unwrap_err();
        assert!(e.contains("settings.json"), "{e}");
        assert!(e.contains("nothing written"), "{e}");
        assert_eq!(std::fs::read(&file).unwrap(), bad);
        assert!(!backup_path(&file).exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn revert_keeps_what_the_user_added_after_setup() {
    let dir = tmp("later");
    let opts = claude(
        &dir,
        Transport::Command,
        crate::hooks::client::DEFAULT_URL,
        false,
    );
    let file = dir.join("proj/.claude/settings.json");
    claudecode::setup(&opts).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    let edited = text.replacen('{', "{\n  \"model\": \"sonnet\",", 1);
    std::fs::write(&file, edited).unwrap();
    claudecode::revert(Scope::Project, &opts.home, &opts.project).unwrap();
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "{\n  \"model\": \"sonnet\"\n}\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn codex_proxy_provider() {
    let user = std::fs::read(fixtures().join("codex-user.toml")).unwrap();
    let cases: [(&str, Option<&[u8]>, &str); 2] = [
        ("codex-proxy-empty", None, crate::hooks::client::DEFAULT_URL),
        ("codex-proxy-existing", Some(&user), "http://10.0.0.5:9920/"),
    ];
    for (name, before, url) in cases {
        let dir = tmp(name);
        let home = dir.join("codex-home");
        let file = codex_proxy::config_path(&home);
        if let Some(b) = before {
            std::fs::create_dir_all(&home).unwrap();
            std::fs::write(&file, b).unwrap();
        }
        let out = codex_proxy::setup(&home, url).unwrap();
        assert!(!out.todo.is_empty());
        let written = std::fs::read(&file).unwrap();
        golden_file(&format!("{name}.golden.toml"), &written);
        // Codex's own parser reads it the way the provider is meant.
        let v: toml::Value = toml::from_str(std::str::from_utf8(&written).unwrap()).unwrap();
        assert_eq!(v["model_provider"].as_str(), Some("parallax"));
        let p = &v["model_providers"]["parallax"];
        assert_eq!(p["wire_api"].as_str(), Some("responses"));
        assert!(p["base_url"].as_str().unwrap().ends_with(":9920/openai/v1"));
        second_setup_then_revert(
            name,
            &file,
            &written,
            before,
            &|| codex_proxy::setup(&home, url),
            &|| codex_proxy::revert(&home),
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn codex_proxy_refuses_what_it_cannot_parse_and_keeps_later_edits() {
    let dir = tmp("codex-proxy-refuse");
    let home = dir.join("codex-home");
    let file = codex_proxy::config_path(&home);
    std::fs::create_dir_all(&home).unwrap();
    for bad in [
        &b"model = \"x\"\n[model_providers\n"[..],
        b"model_providers = 3\n",
    ] {
        std::fs::write(&file, bad).unwrap();
        let e = codex_proxy::setup(&home, "http://127.0.0.1:9920").unwrap_err();
        assert!(
            e.contains("config.toml") && e.contains("nothing written"),
            "{e}"
        );
        assert_eq!(std::fs::read(&file).unwrap(), bad);
        assert!(!backup_path(&file).exists());
    }
    // A key the user adds after setup survives revert; the backup, no
    // longer the file's meaning, is left in place.
    std::fs::write(&file, "model_provider = \"openai\"\n").unwrap();
    codex_proxy::setup(&home, "http://127.0.0.1:9920").unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("model = \"o4\"\n{text}")).unwrap();
    codex_proxy::revert(&home).unwrap();
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "model = \"o4\"\nmodel_provider = \"openai\"\n"
    );
    assert!(backup_path(&file).exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn openclaw_plugin_registration() {
    use super::openclaw;
    let user = std::fs::read(fixtures().join("openclaw-user.json")).unwrap();
    let cases: [(&str, Option<&[u8]>, bool); 2] = [
        ("openclaw-empty", None, false),
        ("openclaw-existing", Some(&user), true),
    ];
    for (name, before, fail_open) in cases {
        let dir = tmp(name);
        let file = openclaw::config_path(None, &dir);
        if let Some(b) = before {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, b).unwrap();
        }
        let url = crate::hooks::client::DEFAULT_URL;
        let out = openclaw::setup(&file, url, fail_open).unwrap();
        assert!(!out.todo.is_empty());
        let written = std::fs::read_to_string(&file).unwrap();
        let state = file.parent().unwrap().display().to_string();
        golden(name, written.replace(&state, "<STATE>").as_bytes());
        let plugin = openclaw::plugin_dir(&file);
        for (f, text) in openclaw::PLUGIN_FILES {
            assert_eq!(std::fs::read_to_string(plugin.join(f)).unwrap(), text);
        }
        assert_eq!(backup_path(&file).exists(), before.is_some(), "{name}");
        let on_disk = std::fs::read(&file).unwrap();
        second_setup_then_revert(
            name,
            &file,
            &on_disk,
            before,
            &|| openclaw::setup(&file, url, fail_open),
            &|| openclaw::revert(&file),
        );
        assert!(!plugin.exists(), "{name}: plugin left behind");
        let _ = std::fs::remove_dir_all(&dir);
    }
    let dir = tmp("openclaw-refuse");
    let file = dir.join("openclaw.json");
    for bad in [&b"{ // json5\n plugins: {} }"[..], b"{\"plugins\": []}"] {
        std::fs::write(&file, bad).unwrap();
        let e = openclaw::setup(&file, "http://127.0.0.1:9920", false).unwrap_err();
        assert!(
            e.contains("openclaw.json") && e.contains("nothing written"),
            "{e}"
        );
        assert_eq!(std::fs::read(&file).unwrap(), bad);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn openclaw_proxy_provider() {
    use super::openclaw_proxy::{self, Api, Options};
    let user = std::fs::read(fixtures().join("openclaw-proxy-user.json")).unwrap();
    let cases: [(&str, Option<&[u8]>, Api); 2] = [
        ("openclaw-proxy-empty", None, Api::AnthropicMessages),
        ("openclaw-proxy-existing", Some(&user), Api::OpenaiResponses),
    ];
    for (name, before, api) in cases {
        let dir = tmp(name);
        let file = dir.join("openclaw.json");
        if let Some(b) = before {
            std::fs::write(&file, b).unwrap();
        }
        let opts = Options {
            url: "http://127.0.0.1:9920/".into(),
            api,
            model: "claude-sonnet-4-5".into(),
            key_env: api.default_key_env().into(),
        };
        let out = openclaw_proxy::setup(&file, &opts).unwrap();
        assert!(!out.todo.is_empty());
        let written = std::fs::read(&file).unwrap();
        golden(name, &written);
        let v: serde_json::Value = serde_json::from_slice(&written).unwrap();
        let p = &v["models"]["providers"]["parallax"];
        assert_eq!(p["api"], api.as_str());
        assert_eq!(
            v["agents"]["defaults"]["model"]["primary"],
            "parallax/claude-sonnet-4-5"
        );
        // The key is referred to, never written.
        assert!(p["apiKey"].as_str().unwrap().starts_with("${"));
        assert_eq!(backup_path(&file).exists(), before.is_some(), "{name}");
        second_setup_then_revert(
            name,
            &file,
            &written,
            before,
            &|| openclaw_proxy::setup(&file, &opts),
            &|| openclaw_proxy::revert(&file),
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert_eq!(
        Api::AnthropicMessages.base_url("http://h:1/"),
        "http://h:1/anthropic"
    );
    assert_eq!(
        Api::OpenaiCompletions.base_url("http://h:1"),
        "http://h:1/openai/v1"
    );
    // The plugin and the provider together: revert of both ends byte for
    // byte; an unparseable file is refused.
    let dir = tmp("openclaw-both");
    let file = dir.join("openclaw.json");
    std::fs::write(&file, &user).unwrap();
    let opts = Options {
        url: "http://127.0.0.1:9920".into(),
        api: Api::AnthropicMessages,
        model: "m".into(),
        key_env: "K".into(),
    };
    super::openclaw::setup(&file, "http://127.0.0.1:9920", false).unwrap();
    openclaw_proxy::setup(&file, &opts).unwrap();
    super::openclaw::revert(&file).unwrap();
    openclaw_proxy::revert(&file).unwrap();
    assert_eq!(std::fs::read(&file).unwrap(), user);
    for bad in [&b"{ models: {} }"[..], b"{\"models\": []}"] {
        std::fs::write(&file, bad).unwrap();
        let e = openclaw_proxy::setup(&file, &opts).unwrap_err();
        assert!(e.contains("nothing written"), "{e}");
        assert_eq!(std::fs::read(&file).unwrap(), bad);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
