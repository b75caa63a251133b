//! Files whose reading or sending is a credential leaving: the concrete
//! targets a glob in a command is matched against (`/etc/sha*ow`,
//! `~/.ssh/id_*`), so the glob is reported as the file it expands to.
//! Paths are in the normal form of [`crate::path_normalize`].

/// Credential, key and account files, in normal form.
pub const SENSITIVE_FILES: [&str; 40] = [
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/passwd",
    "/etc/sudoers",
    "/etc/master.passwd",
    "/etc/security/opasswd",
    "/etc/ssl/private",
    "/etc/kubernetes/admin.conf",
    "~/.ssh/id_rsa",
    "~/.ssh/id_ed25519",
    "~/.ssh/id_ecdsa",
    "~/.ssh/id_dsa",
    "~/.ssh/authorized_keys",
    "/root/.ssh/id_rsa",
    "/root/.ssh/id_ed25519",
    "/root/.ssh/id_ecdsa",
    "~/.aws/credentials",
    "~/.aws/config",
    "~/.kube/config",
    "~/.docker/config.json",
    "~/.netrc",
    "~/.git-credentials",
    "~/.pgpass",
    "~/.npmrc",
    "~/.pypirc",
    "~/.vault-token",
    "~/.config/gcloud/credentials.db",
    "~/.config/gcloud/application_default_credentials.json",
    "~/.azure/accessTokens.json",
    "~/.config/gh/hosts.yml",
    "~/.gnupg/private-keys-v1.d",
    "~/.bash_history",
    "~/.zsh_history",
    "/var/run/secrets/kubernetes.io/serviceaccount/token",
    "/run/secrets/kubernetes.io/serviceaccount/token",
    "/proc/self/environ",
    ".env",
    ".env.local",
    ".env.production",
    "/root/.aws/credentials",
];

/// Longest pattern matched (longer globs are no file name).
const MAX_GLOB: usize = 256;

/// Whether `s` contains glob syntax.
pub fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// The sensitive files the glob `pattern` (normalised) would expand to.
pub fn sensitive_matches(pattern: &str) -> Vec<&'static str> {
    if pattern.len() > MAX_GLOB || !is_glob(pattern) {
        return Vec::new();
    }
    // `/home/*/.ssh/id_*`, `/home/bob/.ssh/id_*`: any user's home is a
    // home, so the part after it
    // is matched against the `~/` files as well.
    let in_homes = ["/home/", "/Users/"]
        .iter()
        .find_map(|h| pattern.strip_prefix(h))
        .and_then(|r| r.split_once('/'))
        .map(|(_, rest)| format!("~/{rest}"));
    SENSITIVE_FILES
        .iter()
        .copied()
        .filter(|f| {
            glob_match(pattern.as_bytes(), f.as_bytes())
                || in_homes
                    .as_ref()
                    .is_some_and(|h| glob_match(h.as_bytes(), f.as_bytes()))
        })
        .collect()
}

/// Shell glob matching: `*` and `?` never match `/`; `[...]` classes with
/// ranges and `!`/`^` negation. Iterative, with one saved star position, so
/// the work is bounded by pattern length times name length.
fn glob_match(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() {
            match p[pi] {
                b'*' => {
                    star = Some((pi, si));
                    pi += 1;
                    continue;
                }
                b'?' if s[si] != b'/' => {
                    pi += 1;
                    si += 1;
                    continue;
                }
                b'[' => {
                    if let Some((ok, len)) = class(&p[pi..], s[si]) {
                        if ok && s[si] != b'/' {
                            pi += len;
                            si += 1;
                            continue;
                        }
                    } else if s[si] == b'[' {
                        pi += 1;
                        si += 1;
                        continue;
                    }
                }
                c if c == s[si] => {
                    pi += 1;
                    si += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, ss)) if s[ss] != b'/' => {
                star = Some((sp, ss + 1));
                pi = sp + 1;
                si = ss + 1;
            }
            _ => return false,
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}

/// A `[...]` class at the start of `p`: whether `c` is in it, and its length.
fn class(p: &[u8], c: u8) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = matches!(p.get(1), Some(b'!' | b'^'));
    if negate {
        i += 1;
    }
    let mut found = false;
    let mut first = true;
    while i < p.len() {
        if p[i] == b']' && !first {
            return Some((found != negate, i + 1));
        }
        if i + 2 < p.len() && p[i + 1] == b'-' && p[i + 2] != b']' {
            found |= p[i] <= c && c <= p[i + 2];
            i += 3;
        } else {
            found |= p[i] == c;
            i += 1;
        }
        first = false;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_users_home_is_a_home() {
        assert!(sensitive_matches("/home/*/.ssh/id_*").contains(&"~/.ssh/id_rsa"));
        assert!(sensitive_matches("/Users/?ob/.aws/cred*").contains(&"~/.aws/credentials"));
        assert!(sensitive_matches("/home/bob/.ssh/id_*").contains(&"~/.ssh/id_ed25519"));
        assert!(sensitive_matches("/home/*/notes/*.txt").is_empty());
    }

    #[test]
    fn globs_find_their_targets() {
        assert_eq!(sensitive_matches("/etc/sha*ow"), ["/etc/shadow"]);
        assert_eq!(sensitive_matches("/etc/[s]hadow"), ["/etc/shadow"]);
        assert_eq!(sensitive_matches("/???/shadow"), ["/etc/shadow"]);
        assert!(sensitive_matches("~/.ssh/id_*").contains(&"~/.ssh/id_rsa"));
        assert!(sensitive_matches("~/.aws/*").contains(&"~/.aws/credentials"));
        assert!(sensitive_matches("/*").is_empty());
        assert!(sensitive_matches("*.rs").is_empty());
        assert!(sensitive_matches("src/*").is_empty());
        assert!(sensitive_matches("[").is_empty());
        let long = "*".repeat(200) + "x";
        assert!(sensitive_matches(&long).is_empty());
    }
}
