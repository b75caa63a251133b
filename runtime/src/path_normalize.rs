//! Lexical path normalisation, so that one rule about `~/.ssh/id_rsa` or
//! `/etc/shadow` holds however the path is spelled: `//`, `/./`, `..`,
//! trailing slashes, `$HOME`/`${HOME}` (written as `~`), `file://` URLs
//! (and the one-slash `file:/etc/passwd`), Windows spellings (`C:\Users\u\.aws`
//! with backslashes read as slashes) and `/proc/N/root/…`, the root
//! directory seen through a process (`/proc/1/root/etc/shadow` is
//! `/etc/shadow`).
//!
//! Normalisation is lexical: no file system is consulted (the agent's
//! machine is not this one), so symbolic links are not followed. `..` above
//! the root stays at the root, as the kernel does; `..` at the start of a
//! relative path is kept, since the directory it climbs out of is unknown.
//! One pass over the input, no recursion.

/// Longest path that is normalised; longer strings are no path an agent
/// would read and are returned as they are.
pub const MAX_PATH_BYTES: usize = 4096;

/// The normal form of `raw` seen as a path, or `None` when it is no path
/// (empty, or a URL of another scheme).
///
/// ```
/// use parallax_runtime::path_normalize::normalize_path;
/// assert_eq!(normalize_path("//etc/./ssh/../shadow/").as_deref(), Some("/etc/shadow"));
/// assert_eq!(normalize_path("$HOME/.aws//credentials").as_deref(), Some("~/.aws/credentials"));
/// assert_eq!(normalize_path("file:///root/.ssh/id_rsa").as_deref(), Some("/root/.ssh/id_rsa"));
/// ```
pub fn normalize_path(raw: &str) -> Option<String> {
    let raw = raw.trim();
    if raw.is_empty() || raw.len() > MAX_PATH_BYTES {
        return None;
    }
    let path = match file_url_path(raw) {
        Some(p) => p,
        None if looks_like_url(raw) => return None,
        None => raw.to_string(),
    };
    let path = windows_as_slashes(&path);
    let normal = normalize_lexically(&home_as_tilde(&path));
    Some(strip_proc_root(normal))
}

/// `/proc/<pid>/root/x` and `/proc/self/root/x` are `/x` (a process's root
/// directory is, for an agent on its own machine, the root).
fn strip_proc_root(p: String) -> String {
    let Some(rest) = p.strip_prefix("/proc/") else {
        return p;
    };
    let (pid, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let pid_ok = pid == "self"
        || pid == "thread-self"
        || (!pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()));
    match tail.strip_prefix("root") {
        Some(t) if pid_ok && (t.is_empty() || t.starts_with('/')) => {
            if t.is_empty() {
                "/".to_string()
            } else {
                t.to_string()
            }
        }
        _ => p,
    }
}

/// A Windows path (`C:\Users\u\.ssh\id_rsa`, `C:/x`, `\\host\share`) with
/// its backslashes as slashes, so `(^|/)\.aws/credentials$` holds for it.
/// Other strings are left alone: a backslash in a POSIX path is a
/// character of the name.
fn windows_as_slashes(p: &str) -> String {
    let b = p.as_bytes();
    let drive = b.len() >= 3
        && b[0].is_ascii_alphabetic()
        && b[1] == b':'
        && (b[2] == b'\\' || b[2] == b'/');
    let unc = p.starts_with("\\\\");
    let home = p.starts_with("~\\")
        || p.starts_with("%USERPROFILE%\\")
        || p.starts_with("$env:USERPROFILE\\");
    if !(drive || unc || home) {
        return p.to_string();
    }
    let mut out = p.replace('\\', "/");
    for prefix in ["%USERPROFILE%", "$env:USERPROFILE"] {
        if let Some(rest) = out.strip_prefix(prefix) {
            out = format!("~{rest}");
        }
    }
    out
}

/// Joins a relative `path` onto a known working directory, then normalises.
pub fn resolve_against(cwd: &str, path: &str) -> Option<String> {
    let p = normalize_path(path)?;
    if p.starts_with('/') || p.starts_with('~') {
        return Some(p);
    }
    normalize_path(&format!("{cwd}/{p}"))
}

/// `file:///etc/passwd`, `file://localhost/etc/passwd` → `/etc/passwd`;
/// percent escapes decoded.
fn file_url_path(raw: &str) -> Option<String> {
    let scheme = raw.get(..7)?;
    if !scheme.eq_ignore_ascii_case("file://") {
        // `file:/etc/passwd`: the one-slash form browsers and curl accept.
        let short = raw.get(..6)?;
        if short.eq_ignore_ascii_case("file:/") {
            let rest = raw[5..].split(['?', '#']).next().unwrap_or_default();
            return Some(percent_decode(rest));
        }
        return None;
    }
    let rest = &raw[7..];
    let rest = if rest.starts_with('/') {
        rest
    } else {
        // A host part: only the local one names a file here.
        let (host, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) {
            return None;
        }
        tail
    };
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    Some(percent_decode(rest))
}

fn looks_like_url(raw: &str) -> bool {
    match raw.find("://") {
        Some(i) => {
            i > 0
                && raw[..i]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        None => false,
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `$HOME`, `${HOME}` and `"$HOME"` at the start are the home directory, `~`.
fn home_as_tilde(p: &str) -> String {
    for prefix in ["\"$HOME\"", "${HOME}", "$HOME"] {
        if let Some(rest) = p.strip_prefix(prefix) {
            if rest.is_empty() || rest.starts_with('/') {
                return format!("~{rest}");
            }
        }
    }
    p.to_string()
}

/// Collapses `//`, drops `.` segments and trailing slashes, resolves `..`.
/// A leading `~` (or `~user`) cannot be climbed out of lexically: `~/..`
/// stays as written.
fn normalize_lexically(p: &str) -> String {
    let absolute = p.starts_with('/');
    let mut segs: Vec<&str> = Vec::new();
    let mut base = 0usize;
    for (i, seg) in p.split('/').enumerate() {
        match seg {
            "" | "." => {}
            ".." => {
                if segs.len() > base && segs.last() != Some(&"..") {
                    segs.pop();
                } else if !absolute {
                    segs.push("..");
                }
            }
            s => {
                segs.push(s);
                if i == 0 && s.starts_with('~') {
                    base = 1;
                }
            }
        }
    }
    let mut out = String::with_capacity(p.len());
    if absolute {
        out.push('/');
    }
    out.push_str(&segs.join("/"));
    if out.is_empty() {
        out.push('.');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_one_path_agree() {
        for p in [
            "/etc/shadow",
            "//etc//shadow",
            "/etc/./shadow",
            "/etc/ssh/../shadow",
            "/etc/shadow/",
            "/../etc/shadow",
            "file:///etc/shadow",
            "FILE://localhost/etc/shadow",
            "file:///etc/%73hadow",
            "file:/etc/shadow",
            "/proc/1/root/etc/shadow",
            "/proc/self/root//etc/shadow",
        ] {
            assert_eq!(normalize_path(p).as_deref(), Some("/etc/shadow"), "{p}");
        }
        for p in [
            "~/.ssh/id_rsa",
            "$HOME/.ssh/id_rsa",
            "${HOME}/.ssh//id_rsa",
            "~/x/../.ssh/id_rsa",
            "~\\.ssh\\id_rsa",
            "%USERPROFILE%\\.ssh\\id_rsa",
        ] {
            assert_eq!(normalize_path(p).as_deref(), Some("~/.ssh/id_rsa"), "{p}");
        }
        assert_eq!(
            normalize_path("C:\\Users\\bob\\.aws\\credentials").as_deref(),
            Some("C:/Users/bob/.aws/credentials")
        );
        assert_eq!(normalize_path("a\\b").as_deref(), Some("a\\b"));
        assert_eq!(
            normalize_path("/proc/1/rootfs").as_deref(),
            Some("/proc/1/rootfs")
        );
        assert_eq!(normalize_path("/proc/1/root").as_deref(), Some("/"));
    }

    #[test]
    fn relative_and_odd_paths() {
        assert_eq!(normalize_path("./a/../.env").as_deref(), Some(".env"));
        assert_eq!(normalize_path("../../x").as_deref(), Some("../../x"));
        assert_eq!(normalize_path("/").as_deref(), Some("/"));
        assert_eq!(normalize_path(".").as_deref(), Some("."));
        assert_eq!(normalize_path("https://example.com/a"), None);
        assert_eq!(normalize_path("file://evil.example/etc/passwd"), None);
        assert_eq!(normalize_path(""), None);
        assert_eq!(
            resolve_against("/etc", "shadow").as_deref(),
            Some("/etc/shadow")
        );
        assert_eq!(resolve_against("/etc", "/tmp/x").as_deref(), Some("/tmp/x"));
        assert_eq!(normalize_path("%").as_deref(), Some("%"));
        assert_eq!(normalize_path("file:///a%2").as_deref(), Some("/a%2"));
    }
}
