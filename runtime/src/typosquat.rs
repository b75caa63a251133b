//! Typosquat detection for package installs: a name that is not one of an
//! ecosystem's most-used packages but is one edit (Damerau–Levenshtein,
//! adjacent transposition included), a separator change or a look-alike
//! character away from one (`reqeusts`, `python-dateutil` spelt
//! `pythondateutil`, `lоdash` with a Cyrillic `о`).
//!
//! The popular names are baked into the binary from
//! `rules/catalogues/packages/*.txt` (each file cites its source and date).
//! The index is built once, on first use: every popular name's *skeleton*
//! (lower case, separators dropped, look-alikes folded) and each of its
//! one-character deletions, SymSpell-style, so a lookup costs one probe per
//! character of the name looked up, then a bounded distance check of the
//! few candidates found. Nothing here allocates per call beyond fixed
//! stack buffers; names longer than [`MAX_NAME`] bytes are not judged.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::OnceLock;

/// Package ecosystems with a baked list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ecosystem {
    PyPi,
    Npm,
    Crates,
    RubyGems,
}

const PYPI: &str = include_str!("../../rules/catalogues/packages/pypi.txt");
const NPM: &str = include_str!("../../rules/catalogues/packages/npm.txt");
const CRATES: &str = include_str!("../../rules/catalogues/packages/crates.txt");
const RUBYGEMS: &str = include_str!("../../rules/catalogues/packages/rubygems.txt");

/// Longest name judged, in bytes (folded). Real names are far shorter; a
/// longer word is not a package name an agent typed.
pub const MAX_NAME: usize = 64;
/// Names of this many characters or fewer are never judged by distance:
/// one edit away from a four-letter name is most of the namespace.
const SHORT: usize = 4;

type Key = [u8];
type Map = HashMap<Box<Key>, Vec<u32>, BuildHasherDefault<Fnv>>;

/// FNV-1a: keys are short, and the default hasher's set-up dominates them.
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.0 = h;
    }
}

struct Index {
    /// Popular names as written in the list.
    names: Vec<&'static str>,
    /// Each popular name's canonical form (the registry's own equivalence).
    canonical: HashMap<Box<Key>, u32, BuildHasherDefault<Fnv>>,
    /// Skeleton of each popular name, by position in `names`.
    skeletons: Vec<Box<Key>>,
    /// Whether the popular name is short (four characters or fewer): such a
    /// name is imitated only by look-alikes and separators, not by an edit.
    short: Vec<bool>,
    /// Skeletons and their one-deletion variants → popular names.
    neighbours: Map,
}

fn index(eco: Ecosystem) -> &'static Index {
    static INDEXES: [OnceLock<Index>; 4] = [
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
    ];
    let (slot, text) = match eco {
        Ecosystem::PyPi => (0, PYPI),
        Ecosystem::Npm => (1, NPM),
        Ecosystem::Crates => (2, CRATES),
        Ecosystem::RubyGems => (3, RUBYGEMS),
    };
    INDEXES[slot].get_or_init(|| build(eco, text))
}

fn build(eco: Ecosystem, text: &'static str) -> Index {
    let mut ix = Index {
        names: Vec::new(),
        canonical: HashMap::default(),
        skeletons: Vec::new(),
        short: Vec::new(),
        neighbours: HashMap::default(),
    };
    let mut canon = Buf::new();
    let mut skel = Buf::new();
    for line in text.lines() {
        let name = line.trim();
        if name.is_empty() || name.starts_with('#') {
            continue;
        }
        if !canonical(eco, name, &mut canon) || !skeleton(canon.as_slice(), &mut skel) {
            continue;
        }
        if ix.canonical.contains_key(canon.as_slice()) {
            continue;
        }
        let id = ix.names.len() as u32;
        ix.names.push(name);
        ix.canonical.insert(canon.as_slice().into(), id);
        ix.skeletons.push(skel.as_slice().into());
        let short = char_len(canon.as_slice()) <= SHORT;
        ix.short.push(short);
        let s = skel.as_slice();
        let mut add = |k: &[u8]| {
            let v = ix.neighbours.entry(k.into()).or_default();
            if !v.contains(&id) {
                v.push(id);
            }
        };
        add(s);
        // Short popular names match only by look-alikes and separators.
        if !short {
            let mut del = Buf::new();
            for i in 0..s.len() {
                del.clear();
                del.extend(&s[..i]);
                del.extend(&s[i + 1..]);
                add(del.as_slice());
            }
        }
    }
    ix
}

/// A fixed-size byte buffer on the stack.
struct Buf {
    bytes: [u8; MAX_NAME],
    len: usize,
    overflow: bool,
}

impl Buf {
    fn new() -> Buf {
        Buf {
            bytes: [0; MAX_NAME],
            len: 0,
            overflow: false,
        }
    }
    fn clear(&mut self) {
        self.len = 0;
        self.overflow = false;
    }
    fn push(&mut self, b: u8) {
        if self.len < MAX_NAME {
            self.bytes[self.len] = b;
            self.len += 1;
        } else {
            self.overflow = true;
        }
    }
    fn extend(&mut self, bs: &[u8]) {
        for b in bs {
            self.push(*b);
        }
    }
    fn push_char(&mut self, c: char) {
        let mut tmp = [0u8; 4];
        self.extend(c.encode_utf8(&mut tmp).as_bytes());
    }
    fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
    fn last(&self) -> Option<u8> {
        self.len.checked_sub(1).map(|i| self.bytes[i])
    }
}

fn char_len(s: &[u8]) -> usize {
    s.iter().filter(|b| (**b & 0xC0) != 0x80).count()
}

/// The registry's own notion of the same name: PyPI (PEP 503) lower-cases
/// and treats runs of `-`, `_`, `.` as one `-`; crates.io lower-cases and
/// treats `-` and `_` alike; npm and RubyGems names are lower-cased only.
/// False when the name is too long.
fn canonical(eco: Ecosystem, name: &str, out: &mut Buf) -> bool {
    out.clear();
    for c in name.chars() {
        let c = c.to_lowercase().next().unwrap_or(c);
        match (eco, c) {
            (Ecosystem::PyPi, '-' | '_' | '.') => {
                if out.last() != Some(b'-') {
                    out.push(b'-');
                }
            }
            (Ecosystem::Crates, '_') => out.push(b'-'),
            _ => out.push_char(c),
        }
    }
    !out.overflow && out.len > 0
}

/// What a name looks like: separators dropped, letters that look alike
/// folded to one (Cyrillic and Greek look-alikes of Latin letters, `1`/`i`/
/// `l`/`|` to `l`, `0` to `o`, `rn` to `m`, `vv` to `w`). Reads a canonical
/// (lower-case) name.
fn skeleton(canon: &[u8], out: &mut Buf) -> bool {
    out.clear();
    let Ok(text) = std::str::from_utf8(canon) else {
        return false;
    };
    for c in text.chars() {
        let f = match c {
            '-' | '_' | '.' | ' ' => continue,
            '1' | 'i' | '|' | 'ı' | 'і' | 'ӏ' | 'ι' | 'ǀ' => 'l',
            '0' | 'о' | 'ο' | 'σ' | 'ө' => 'o',
            'а' | 'α' => 'a',
            'е' | 'ё' | 'ε' => 'e',
            'р' | 'ρ' => 'p',
            'с' | 'ϲ' => 'c',
            'х' | 'χ' => 'x',
            'у' | 'γ' => 'y',
            'ѕ' => 's',
            'ј' => 'j',
            'ԁ' => 'd',
            'ԛ' => 'q',
            'ԝ' | 'ω' => 'w',
            'ν' => 'v',
            'к' | 'κ' => 'k',
            'м' => 'm',
            'т' | 'τ' => 't',
            'в' | 'β' => 'b',
            'н' | 'η' => 'n',
            'г' => 'r',
            c => c,
        };
        if f == 'n' && out.last() == Some(b'r') {
            out.len -= 1;
            out.push(b'm');
        } else if f == 'v' && out.last() == Some(b'v') {
            out.len -= 1;
            out.push(b'w');
        } else {
            out.push_char(f);
        }
    }
    !out.overflow && out.len > 0
}

/// Optimal-string-alignment distance of two short byte strings, capped:
/// returns whether it is at most 1.
fn within_one(a: &[u8], b: &[u8]) -> bool {
    if a == b {
        return true;
    }
    let (la, lb) = (a.len(), b.len());
    if la.abs_diff(lb) > 1 {
        return false;
    }
    let p = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[p..], &b[p..]);
    if a.len() == b.len() {
        // One substitution, or one adjacent transposition.
        a[1..] == b[1..] || (a.len() >= 2 && a[0] == b[1] && a[1] == b[0] && a[2..] == b[2..])
    } else if a.len() > b.len() {
        a[1..] == *b
    } else {
        b[1..] == *a
    }
}

/// The popular package `name` imitates, if it does: `None` for a popular
/// name itself, for a name of four characters or fewer, and for one that
/// is not near any popular name.
pub fn imitates(eco: Ecosystem, name: &str) -> Option<&'static str> {
    let ix = index(eco);
    let mut canon = Buf::new();
    if !canonical(eco, name, &mut canon) || ix.canonical.contains_key(canon.as_slice()) {
        return None;
    }
    if char_len(canon.as_slice()) <= SHORT {
        return None;
    }
    let mut skel = Buf::new();
    if !skeleton(canon.as_slice(), &mut skel) {
        return None;
    }
    let s = skel.as_slice();
    let check = |ids: &Vec<u32>| {
        ids.iter().copied().find(|&id| {
            let popular = &ix.skeletons[id as usize];
            if ix.short[id as usize] {
                **popular == *s
            } else {
                within_one(s, popular)
            }
        })
    };
    if let Some(id) = ix.neighbours.get(s).and_then(check) {
        return Some(ix.names[id as usize]);
    }
    let mut del = Buf::new();
    for i in 0..s.len() {
        del.clear();
        del.extend(&s[..i]);
        del.extend(&s[i + 1..]);
        if let Some(id) = ix.neighbours.get(del.as_slice()).and_then(check) {
            return Some(ix.names[id as usize]);
        }
    }
    None
}

/// The first typosquatted name in an install command's words (`pip install
/// -U reqeusts flask`, `npm i lodahs@4`, `cargo add serde_jsno`), with the
/// name it imitates. The words are the shell analysis's `argv` rendering:
/// the program's basename, then its arguments separated by spaces, a word
/// that needed quoting in single quotes.
pub fn in_command(text: &str) -> Option<(&str, &'static str)> {
    let mut rest = text.split_ascii_whitespace().map(unquote);
    let program = rest.next()?;
    let eco = ecosystem_of(program)?;
    // Up to four words before the verb (`python3 -m pip install`, `uv pip
    // install`, `yarn global add`); the verb starts the package arguments.
    let mut seen = 0;
    // `npx`/`bunx` run one package: the first name after the options.
    let single = matches!(program, "npx" | "bunx");
    if !single {
        loop {
            let w = rest.next()?;
            seen += 1;
            if is_verb(w) {
                break;
            }
            if seen >= 4 {
                return None;
            }
        }
    }
    let mut skip_next = false;
    for w in rest {
        if skip_next {
            skip_next = false;
            continue;
        }
        if w == "--" {
            continue;
        }
        if let Some(opt) = w.strip_prefix('-') {
            skip_next = !opt.contains('=') && takes_value(eco, w);
            continue;
        }
        if let Some(name) = package_name(eco, w) {
            if let Some(popular) = imitates(eco, name) {
                return Some((name, popular));
            }
        }
        if single {
            break;
        }
    }
    None
}

fn unquote(w: &str) -> &str {
    let w = w.strip_prefix('\'').unwrap_or(w);
    w.strip_suffix('\'').unwrap_or(w)
}

fn ecosystem_of(program: &str) -> Option<Ecosystem> {
    let p = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    match p {
        "pip" | "python" | "py" | "uv" | "poetry" | "pipenv" | "pdm" | "pipx" | "rye" => {
            Some(Ecosystem::PyPi)
        }
        "npm" | "yarn" | "pnpm" | "bun" | "npx" | "bunx" | "cnpm" => Some(Ecosystem::Npm),
        "cargo" => Some(Ecosystem::Crates),
        "gem" => Some(Ecosystem::RubyGems),
        _ => None,
    }
}

fn is_verb(w: &str) -> bool {
    matches!(
        w,
        "install" | "i" | "in" | "isntall" | "add" | "download" | "inject"
    )
}

/// Options of the installers that take the next word as their value (paths,
/// URLs, versions, feature lists): that word is not a package.
fn takes_value(eco: Ecosystem, opt: &str) -> bool {
    let common = matches!(
        opt,
        "--registry" | "--index" | "--index-url" | "--source" | "--cwd" | "--prefix" | "--tag"
    );
    common
        || match eco {
            Ecosystem::PyPi => matches!(
                opt,
                "-r" | "--requirement"
                    | "-c"
                    | "--constraint"
                    | "-e"
                    | "--editable"
                    | "-i"
                    | "--extra-index-url"
                    | "-f"
                    | "--find-links"
                    | "-t"
                    | "--target"
                    | "--root"
                    | "--trusted-host"
                    | "--platform"
                    | "--python-version"
                    | "--implementation"
                    | "--abi"
                    | "--src"
                    | "--upgrade-strategy"
                    | "--progress-bar"
                    | "--log"
                    | "--proxy"
                    | "--retries"
                    | "--timeout"
                    | "--exists-action"
                    | "--cert"
                    | "--client-cert"
                    | "--cache-dir"
                    | "--python"
                    | "-p"
                    | "--group"
                    | "-G"
                    | "--extra"
                    | "-E"
                    | "--extras"
                    | "--optional"
                    | "--default-index"
                    | "--with"
                    | "--only-binary"
                    | "--no-binary"
                    | "--report"
                    | "--dev-group"
            ),
            Ecosystem::Npm => matches!(
                opt,
                "-w" | "--workspace"
                    | "--cache"
                    | "--userconfig"
                    | "--omit"
                    | "--include"
                    | "--install-strategy"
                    | "--filter"
                    | "-F"
                    | "--dir"
                    | "-C"
                    | "--reporter"
                    | "--backend"
                    | "-p"
                    | "--package"
            ),
            Ecosystem::Crates => matches!(
                opt,
                "--git"
                    | "--path"
                    | "--branch"
                    | "--rev"
                    | "--version"
                    | "--vers"
                    | "--features"
                    | "-F"
                    | "--root"
                    | "--target"
                    | "--profile"
                    | "--package"
                    | "-p"
                    | "--rename"
                    | "--bin"
                    | "--example"
                    | "-j"
                    | "--jobs"
                    | "--target-dir"
                    | "--config"
                    | "-Z"
                    | "--manifest-path"
            ),
            Ecosystem::RubyGems => matches!(
                opt,
                "-v" | "--version"
                    | "-s"
                    | "-i"
                    | "--install-dir"
                    | "-n"
                    | "--bindir"
                    | "--platform"
                    | "-g"
                    | "--file"
            ),
        }
}

/// The package name in an install argument, with versions, extras and
/// specifiers stripped (`requests[socks]>=2`, `lodash@^4`, `@types/node@20`,
/// `serde@1`, `rails:7.1`); `None` for paths, URLs, archives and anything
/// that is not a name.
pub fn package_name(eco: Ecosystem, word: &str) -> Option<&str> {
    let word = word.trim_matches(|c| c == '"' || c == '\'' || c == ',');
    let end = match eco {
        Ecosystem::Npm => {
            // A scope's `@` starts the name; the next `@` starts the version.
            let from = usize::from(word.starts_with('@'));
            word[from..].find('@').map_or(word.len(), |i| i + from)
        }
        Ecosystem::PyPi => word
            .find(|c: char| {
                matches!(
                    c,
                    '[' | '=' | '<' | '>' | '!' | '~' | ';' | '@' | ' ' | '(' | ','
                )
            })
            .unwrap_or(word.len()),
        Ecosystem::Crates => word.find('@').unwrap_or(word.len()),
        Ecosystem::RubyGems => word.find(':').unwrap_or(word.len()),
    };
    let name = word[..end].trim();
    let mut chars = name.chars();
    let first = chars.next()?;
    let scoped = eco == Ecosystem::Npm && first == '@';
    if !(first.is_alphanumeric() || scoped) {
        return None;
    }
    let mut slashes = 0;
    for c in name.chars().skip(1) {
        match c {
            '/' if scoped => slashes += 1,
            '-' | '_' | '.' => {}
            c if c.is_alphanumeric() => {}
            _ => return None,
        }
    }
    if scoped && slashes != 1 {
        return None;
    }
    // Archives and files named on the command line are not registry names.
    let lower_tail = name.rsplit('.').next().unwrap_or("");
    if name.contains('.')
        && matches!(
            lower_tail,
            "whl" | "gz" | "tgz" | "zip" | "gem" | "txt" | "toml" | "json" | "crate" | "py"
        )
    {
        return None;
    }
    Some(name)
}

/// The first typosquatted name in a dependency-file entry: its first name
/// (after an opening quote), for `eco`. See [`package_name`].
pub fn in_entry(eco: Ecosystem, text: &str) -> Option<(&str, &'static str)> {
    let t = text.trim_start_matches(|c: char| c.is_whitespace() || c == '"' || c == '\'');
    let end = t
        .find(|c: char| {
            c == '"' || c == '\'' || c.is_whitespace() || (c == '=' && eco != Ecosystem::PyPi)
        })
        .unwrap_or(t.len());
    let name = package_name(eco, &t[..end])?;
    imitates(eco, name).map(|p| (name, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_one_separators_and_look_alikes() {
        use Ecosystem::*;
        assert_eq!(imitates(PyPi, "reqeusts"), Some("requests"));
        assert_eq!(imitates(PyPi, "requets"), Some("requests"));
        assert_eq!(imitates(PyPi, "requestss"), Some("requests"));
        assert_eq!(imitates(PyPi, "pythondateutil"), Some("python-dateutil"));
        assert_eq!(imitates(PyPi, "nunpy"), Some("numpy"));
        assert_eq!(imitates(PyPi, "djang0"), Some("django"));
        assert_eq!(imitates(PyPi, "beautifulsoup"), Some("beautifulsoup4"));
        assert_eq!(imitates(Npm, "lodahs"), Some("lodash"));
        assert_eq!(imitates(Npm, "l\u{043e}dash"), Some("lodash"));
        assert_eq!(imitates(Npm, "expres"), Some("express"));
        assert_eq!(imitates(Npm, "cross-env.js"), None);
        assert_eq!(imitates(Npm, "crossenv"), Some("cross-env"));
        assert_eq!(imitates(Npm, "@types/nodes"), Some("@types/node"));
        assert_eq!(imitates(Crates, "serde-jsonn"), Some("serde_json"));
        assert_eq!(imitates(Crates, "tokoi"), Some("tokio"));
        assert_eq!(imitates(Crates, "rnemchr"), Some("memchr"));
        assert_eq!(imitates(RubyGems, "nokogri"), Some("nokogiri"));
    }

    #[test]
    fn popular_and_registry_equal_names_never_match() {
        use Ecosystem::*;
        for (eco, n) in [
            (PyPi, "requests"),
            (PyPi, "Python_Dateutil"),
            (PyPi, "python.dateutil"),
            (PyPi, "scipy"),
            (PyPi, "scapy"),
            (PyPi, "pyaml"),
            (PyPi, "six"),
            (PyPi, "sixx"),
            (PyPi, "mocks"),
            (PyPi, "cattrs"),
            (Npm, "react"),
            (Npm, "preact"),
            (Npm, "eslint"),
            (Npm, "tslint"),
            (Npm, "@types/node"),
            (Crates, "serde-json"),
            (Crates, "serde_json"),
            (Npm, "my-internal-tool"),
            (PyPi, "mycompany-utils"),
        ] {
            assert_eq!(imitates(eco, n), None, "{n}");
        }
    }

    #[test]
    fn commands() {
        assert_eq!(
            in_command("pip install -U reqeusts flask"),
            Some(("reqeusts", "requests"))
        );
        assert_eq!(
            in_command("python3 -m pip install 'reqeusts[socks]>=2.0'"),
            Some(("reqeusts", "requests"))
        );
        assert_eq!(
            in_command("npm i -D lodahs@^4.17.0"),
            Some(("lodahs", "lodash"))
        );
        assert_eq!(
            in_command("cargo add serde --features derive tokoi"),
            Some(("tokoi", "tokio"))
        );
        assert_eq!(in_command("pip install -r requirments.txt"), None);
        assert_eq!(in_command("pip install requests flask numpy"), None);
        assert_eq!(in_command("npm install"), None);
        assert_eq!(in_command("pip install ./dist/reqeusts-1.0.whl"), None);
        assert_eq!(
            in_command("pip install -i https://pypi.org/simple requests"),
            None
        );
        assert_eq!(
            in_command("npx craete-react-app my-app"),
            Some(("craete-react-app", "create-react-app"))
        );
        assert_eq!(in_command("npx create-react-app my-app"), None);
        assert_eq!(in_command("npm install mocks"), None);
        assert_eq!(in_command("npx expresss"), Some(("expresss", "express")));
        assert_eq!(in_command("git add reqeusts"), None);
    }

    #[test]
    fn entries() {
        use Ecosystem::*;
        assert_eq!(
            in_entry(PyPi, "reqeusts==2.31.0"),
            Some(("reqeusts", "requests"))
        );
        assert_eq!(
            in_entry(PyPi, "\"reqeusts>=2\""),
            Some(("reqeusts", "requests"))
        );
        assert_eq!(
            in_entry(Npm, "\"lodahs\": \"^4\""),
            Some(("lodahs", "lodash"))
        );
        assert_eq!(
            in_entry(Crates, "tokoi = { version"),
            Some(("tokoi", "tokio"))
        );
        assert_eq!(in_entry(Crates, "tokio = \"1\""), None);
    }

    #[test]
    fn hostile_input_is_bounded() {
        let long = "a".repeat(10_000);
        assert_eq!(imitates(Ecosystem::PyPi, &long), None);
        let cmd = format!("pip install {}", "x ".repeat(50_000));
        assert_eq!(in_command(&cmd), None);
        assert_eq!(in_command(""), None);
        assert_eq!(in_entry(Ecosystem::Npm, "\"@\": \"1\""), None);
    }
}
