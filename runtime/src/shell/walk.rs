//! Walks a parsed command the way a shell would run it — without running
//! anything — and records what each simple command really is: its program
//! and argv after expansion and unwrapping, redirect targets, the files it
//! names, code handed to interpreters, and payloads decoded in place.
//!
//! What is followed: variables assigned earlier in the same command (and
//! `export`), `$IFS` and unquoted expansions split into words, brace
//! expansion, `${v:-default}`, `cd` for later relative paths, command and
//! process substitution, `bash -c`/`sh -c`/`eval`/`su -c`/`watch` strings,
//! literals piped into a shell or interpreter (`echo … | base64 -d | sh`),
//! here-documents and here-strings, `find -exec`, interpreter one-liners and
//! the shell commands inside them; positional parameters (`set --`, the
//! words after `sh -c STRING`), `for` loop variables, function bodies;
//! commands other programs run (`ssh host CMD`, `git -c core.sshCommand=`,
//! `GIT_SSH_COMMAND=`, `tar --to-command=`, `vim -c '!…'`, `awk` and
//! PowerShell code); and downloads that reach a shell by any route (pipe,
//! `tee`, `$(…)`, `<(…)`, a file downloaded then run), rendered as the
//! download piped into it. Everything is bounded: a shared byte
//! budget for every script parsed (so nesting cannot multiply the work), a
//! cap on commands walked, on the length of an expanded word and on depth.

use super::ast::{Command, HereDoc, Part, Pipeline, Redirect, Script, Simple, Word};
use super::decode;
use super::interp;
use super::parse::{parse_at_depth, MAX_DEPTH};
use super::render::quote;
use super::sensitive;
use super::unwrap::{basename, unwrap};
use super::ShellFacts;
use crate::path_normalize::{normalize_path, resolve_against};
use std::collections::HashMap;

/// Simple commands walked per event.
const MAX_COMMANDS: usize = 512;
/// Bytes of one expanded word.
const MAX_WORD_BYTES: usize = 8 * 1024;
/// Values kept per fact list.
const MAX_VALUES: usize = 512;

/// Programs that are shells: a `-c` string, a here-document or piped text
/// is a script for them.
const SHELLS: [&str; 9] = [
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "rbash",
];

/// Programs whose plain arguments are files, resolved against a known `cd`.
const FILE_PROGRAMS: [&str; 30] = [
    "rm", "rmdir", "shred", "unlink", "chmod", "chown", "chgrp", "cat", "less", "more", "head",
    "tail", "cp", "mv", "tar", "zip", "gzip", "scp", "rsync", "find", "truncate", "strings", "xxd",
    "base64", "od", "hexdump", "grep", "tac", "nl", "source",
];

/// Programs whose file arguments are not read for their contents: listing,
/// metadata, permissions, creating, testing, and using a key without
/// showing it (`ssh-add`, `ssh-keygen -l`). A sensitive file named to them
/// is no sensitive read.
const NON_READERS: [&str; 24] = [
    "ls",
    "stat",
    "chmod",
    "chown",
    "chgrp",
    "touch",
    "mkdir",
    "test",
    "[",
    "[[",
    "du",
    "realpath",
    "readlink",
    "dirname",
    "basename",
    "which",
    "ssh-add",
    "ssh-keygen",
    "cd",
    "pushd",
    "rmdir",
    "rm",
    "shred",
    "find",
];

/// `find` tests that narrow what it visits to some of the files.
const FIND_TESTS: [&str; 22] = [
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-regex",
    "-iregex",
    "-type",
    "-newer",
    "-mtime",
    "-mmin",
    "-atime",
    "-amin",
    "-ctime",
    "-cmin",
    "-size",
    "-user",
    "-group",
    "-perm",
    "-empty",
    "-lname",
    "-samefile",
];

/// Variables whose value a program runs as a command (git's ssh, pager and
/// editor hooks, the shell's start-up and prompt hooks).
const COMMAND_VARS: [&str; 14] = [
    "GIT_SSH_COMMAND",
    "GIT_SSH",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_ASKPASS",
    "GIT_EXTERNAL_DIFF",
    "GIT_SEQUENCE_EDITOR",
    "PAGER",
    "EDITOR",
    "VISUAL",
    "SSH_ASKPASS",
    "PROMPT_COMMAND",
    "BASH_ENV",
    "LESSOPEN",
];

/// What a command writes to its standard output, as far as it is known.
#[derive(Debug, Clone)]
enum Flow {
    Unknown,
    /// Literal text (an `echo`, a decoded literal, a here-document).
    Text(String),
    /// A download (`curl`/`wget` to stdout), with its rendering.
    Download(String),
}

pub struct Walker<'f> {
    facts: &'f mut ShellFacts,
    vars: HashMap<String, String>,
    cwd: Option<String>,
    budget: usize,
    /// Bytes of derived values still to keep (the same bound as `budget`).
    out: usize,
    commands: usize,
    /// Downloads a later command may run: files written by `curl -o`,
    /// `wget -O` or a redirect of a download, and `$(curl …)` / `<(curl …)`
    /// renderings, each with the download's own rendering.
    downloads: Vec<(String, String)>,
    /// Files the current simple command's standard output is redirected to.
    out_targets: Vec<String>,
    /// Files written with literal text earlier in the command, and the text.
    written: Vec<(String, String)>,
}

impl<'f> Walker<'f> {
    /// A walker that may parse `budget` bytes in all.
    pub fn new(facts: &'f mut ShellFacts, budget: usize) -> Walker<'f> {
        Walker {
            facts,
            vars: HashMap::new(),
            cwd: None,
            budget,
            out: budget.saturating_mul(4),
            commands: 0,
            downloads: Vec::new(),
            out_targets: Vec::new(),
            written: Vec::new(),
        }
    }

    /// Parses and walks a script; its rendering becomes a `shell` value.
    pub fn run_script(&mut self, src: &str, depth: usize) -> Option<String> {
        if src.trim().is_empty() {
            return None;
        }
        if depth > MAX_DEPTH || src.len() > self.budget {
            self.facts.truncated = true;
            return None;
        }
        self.budget -= src.len();
        let parsed = parse_at_depth(src, depth);
        self.facts.truncated |= parsed.truncated;
        let (rendered, _) = self.script(&parsed.script, &parsed.heredocs, depth);
        push(&mut self.facts.shell, &mut self.out, rendered.clone());
        Some(rendered)
    }

    /// Walks a command given as an argv (Codex's `["bash", "-lc", "…"]`).
    pub fn run_argv(&mut self, argv: &[String]) {
        let words: Vec<String> = argv.iter().take(MAX_VALUES).cloned().collect();
        let (rendered, _) = self.simple_words(Vec::new(), words, Vec::new(), Flow::Unknown, 0);
        push(&mut self.facts.shell, &mut self.out, rendered);
    }

    fn script(&mut self, s: &Script, hd: &[HereDoc], depth: usize) -> (String, Flow) {
        let mut out = String::new();
        let mut flow = Flow::Unknown;
        for (i, (pl, sep)) in s.items.iter().enumerate() {
            let (r, f) = self.pipeline(pl, hd, depth);
            out.push_str(&r);
            flow = f;
            if i + 1 < s.items.len() {
                out.push_str(match *sep {
                    ";" => "; ",
                    "&" => " & ",
                    "&&" => " && ",
                    "||" => " || ",
                    other => other,
                });
            } else if *sep == "&" {
                out.push_str(" &");
            }
        }
        (out, flow)
    }

    fn pipeline(&mut self, pl: &Pipeline, hd: &[HereDoc], depth: usize) -> (String, Flow) {
        let mut flow = Flow::Unknown;
        let mut parts = Vec::with_capacity(pl.commands.len());
        for c in &pl.commands {
            let (r, f) = self.command(c, flow, hd, depth);
            parts.push(r);
            flow = f;
        }
        (parts.join(" | "), flow)
    }

    fn command(
        &mut self,
        c: &Command,
        stdin: Flow,
        hd: &[HereDoc],
        depth: usize,
    ) -> (String, Flow) {
        match c {
            Command::Simple(s) => self.simple(s, stdin, hd, depth),
            Command::Group {
                body,
                subshell,
                redirects,
            } => {
                let saved = self.cwd.clone();
                let (r, f) = self.script(body, hd, depth);
                if *subshell {
                    self.cwd = saved;
                }
                let mut out = if *subshell {
                    format!("( {r} )")
                } else {
                    format!("{{ {r}; }}")
                };
                let mut ignored = Flow::Unknown;
                for red in redirects {
                    out.push(' ');
                    out.push_str(&self.redirect(red, hd, depth, &mut ignored));
                }
                (out, f)
            }
        }
    }

    fn simple(&mut self, s: &Simple, stdin: Flow, hd: &[HereDoc], depth: usize) -> (String, Flow) {
        let mut assigns = Vec::with_capacity(s.assigns.len());
        for (name, value) in &s.assigns {
            let v = self.expand(value, hd, depth).join(" ");
            assigns.push((name.clone(), v));
        }
        let mut words = Vec::new();
        for w in &s.words {
            words.extend(self.expand(w, hd, depth));
            if words.len() > MAX_VALUES {
                break;
            }
        }
        let mut stdin = stdin;
        let mut reds = Vec::with_capacity(s.redirects.len());
        self.out_targets.clear();
        for r in &s.redirects {
            reds.push(self.redirect(r, hd, depth, &mut stdin));
        }
        let targets = std::mem::take(&mut self.out_targets);
        let (rendered, flow) = self.simple_words(assigns, words, reds, stdin, depth);
        match &flow {
            // `curl URL > /tmp/p`: the file holds the download.
            Flow::Download(dl) => {
                for t in targets {
                    self.remember_download(t, dl.clone());
                }
            }
            // `echo 'rm -rf /' > x.sh`, `cat > x.sh <<EOF`: the file holds
            // the text, for a shell that runs it later in the command.
            Flow::Text(text) => {
                for t in targets {
                    if self.written.len() < 16 && text.len() <= MAX_WORD_BYTES {
                        self.written.push((t, text.clone()));
                    }
                }
            }
            Flow::Unknown => {}
        }
        (rendered, flow)
    }

    /// The heart of the walk: one simple command, expanded.
    fn simple_words(
        &mut self,
        assigns: Vec<(String, String)>,
        words: Vec<String>,
        reds: Vec<String>,
        stdin: Flow,
        depth: usize,
    ) -> (String, Flow) {
        self.commands += 1;
        if self.commands > MAX_COMMANDS {
            self.facts.truncated = true;
            return (String::new(), Flow::Unknown);
        }
        let mut rendered: Vec<String> = assigns
            .iter()
            .map(|(n, v)| format!("{n}={}", quote(v)))
            .collect();
        for (n, v) in &assigns {
            if COMMAND_VARS.contains(&n.as_str()) {
                self.run_nested(v, depth);
            }
        }
        if words.is_empty() {
            for (n, v) in assigns {
                self.vars.insert(n, v);
            }
            rendered.extend(reds);
            return (rendered.join(" "), Flow::Unknown);
        }
        // A function definition, `f() { body; }` or `function f { body; }`
        // (read as words up to the body's first command): the body runs
        // when the function is called, so it is walked as a command.
        // `env -S 'rm -rf /'`: env splits the string into words.
        let mut words = words;
        if let Some(i) = words
            .iter()
            .position(|w| w == "-S" || w == "--split-string")
        {
            if i > 0 && basename(&words[i - 1]) == "env" && i + 1 < words.len() {
                let split: Vec<String> = words[i + 1]
                    .split_whitespace()
                    .take(MAX_VALUES)
                    .map(str::to_string)
                    .collect();
                words.splice(i..i + 2, split);
            }
        }
        let mut skip = 0;
        while let Some(n) = function_body(&words[skip..]) {
            skip += n;
        }
        let words = if skip > 0 {
            words[skip..].to_vec()
        } else {
            words
        };
        let (start, wrappers) = unwrap(&words);
        for &w in &wrappers {
            push(
                &mut self.facts.program,
                &mut self.out,
                basename(&words[w]).to_string(),
            );
        }
        if start >= words.len() {
            // A wrapper alone (`sudo`, `env`): it is the program.
            let argv = render_argv(basename(&words[0]), &words[1..]);
            push(&mut self.facts.argv, &mut self.out, argv.clone());
            rendered.push(argv);
            rendered.extend(reds);
            return (rendered.join(" "), Flow::Unknown);
        }
        let prog = basename(&words[start]).to_string();
        if words[start].contains('/') {
            self.run_written(&words[start].clone(), depth);
        }
        let mut args: Vec<String> = words[start + 1..].to_vec();
        // `echo / | xargs rm -rf`: xargs appends what it reads.
        if let Flow::Text(t) = &stdin {
            if let Some(&x) = wrappers.iter().find(|&&w| basename(&words[w]) == "xargs") {
                match xargs_replace(&words[x + 1..start]) {
                    // `xargs -I{} sh -c 'rm -rf {}'`: each line replaces {}.
                    Some(repl) => {
                        let line = t.lines().next().unwrap_or("").trim().to_string();
                        for a in args.iter_mut() {
                            if a.contains(&repl) {
                                *a = a.replace(&repl, &line);
                            }
                        }
                    }
                    None => args.extend(t.split_whitespace().take(64).map(str::to_string)),
                }
            }
        }
        if prog == "rm" || prog == "chmod" || prog == "chown" || prog == "shred" || prog == "find" {
            if let Some(cwd) = self.cwd.clone() {
                for a in args.iter_mut() {
                    if !a.starts_with('-') && !a.starts_with('/') && !a.starts_with('~') {
                        if let Some(r) = resolve_against(&cwd, a) {
                            *a = r;
                        }
                    }
                }
            }
            // `rm -rf /./`, `/home/..`, `//`: the path they name. A
            // trailing `/*` is kept (it is "everything in").
            for a in args.iter_mut() {
                if a.starts_with('/') && a.len() > 1 && !is_glob_tail(a) {
                    if let Some(n) = normalize_path(a) {
                        *a = n;
                    }
                }
            }
        }
        // A file server with no directory serves the working directory:
        // when a `cd` made it known, it is written out, so a rule about
        // serving home or / sees it (`cd ~ && python3 -m http.server`).
        if let Some(cwd) = self.cwd.clone() {
            if let Some(flag) = served_directory_flag(&prog, &args) {
                args.push(flag.to_string());
                args.push(cwd);
            }
        }
        push(&mut self.facts.program, &mut self.out, prog.clone());
        let argv = render_argv(&prog, &args);
        push(&mut self.facts.argv, &mut self.out, argv.clone());
        self.collect_paths(&prog, &args);
        let out = self.special(&prog, &args, stdin, depth);
        rendered.push(argv);
        rendered.extend(reds);
        (rendered.join(" "), out)
    }

    /// What particular programs mean: directory changes, assignments,
    /// literal producers and decoders, shells, interpreters, `find -exec`.
    fn special(&mut self, prog: &str, args: &[String], stdin: Flow, depth: usize) -> Flow {
        let has = |flags: &[&str]| args.iter().any(|a| flags.contains(&a.as_str()));
        match prog {
            "cd" | "pushd" => {
                let target = args.iter().find(|a| !a.starts_with('-'));
                self.cwd = match (target, &self.cwd) {
                    (None, _) => Some("~".into()),
                    (Some(t), _) if t.starts_with('/') || t.starts_with('~') => normalize_path(t),
                    (Some(t), Some(c)) => resolve_against(c, t),
                    (Some(_), None) => None,
                };
                Flow::Unknown
            }
            "export" | "declare" | "typeset" | "local" | "readonly" => {
                for a in args.iter().filter(|a| !a.starts_with('-')) {
                    if let Some((n, v)) = a.split_once('=') {
                        self.vars.insert(n.to_string(), v.to_string());
                    }
                }
                Flow::Unknown
            }
            "echo" => {
                let mut escapes = false;
                let mut newline = true;
                let mut i = 0;
                while let Some(a) = args.get(i) {
                    match a.as_str() {
                        "-e" => escapes = true,
                        "-n" => newline = false,
                        "-ne" | "-en" => {
                            escapes = true;
                            newline = false
                        }
                        "-E" => escapes = false,
                        _ => break,
                    }
                    i += 1;
                }
                let raw = args[i..].join(" ");
                let mut text = if escapes {
                    decode::echo_e(&raw)
                } else {
                    raw.clone()
                };
                if escapes && text != raw {
                    push(&mut self.facts.decoded, &mut self.out, text.clone());
                }
                if newline {
                    text.push('\n');
                }
                Flow::Text(text)
            }
            "printf" => {
                let args: Vec<String> = match args.first().map(String::as_str) {
                    Some("-v") => args.iter().skip(2).cloned().collect(),
                    Some("--") => args.iter().skip(1).cloned().collect(),
                    _ => args.to_vec(),
                };
                let Some(format) = args.first() else {
                    return Flow::Unknown;
                };
                let text = decode::printf(format, &args[1..]);
                if format.contains('\\') {
                    push(&mut self.facts.decoded, &mut self.out, text.clone());
                }
                Flow::Text(text)
            }
            "base64" | "openssl" | "xxd" | "basenc" | "b64" => {
                let decodes = match prog {
                    "xxd" => has(&["-r", "-r -p", "-rp", "-pr"]),
                    _ => {
                        has(&["-d", "--decode", "-D", "-decode", "--base64"])
                            && (prog != "openssl" || has(&["-d"]))
                    }
                };
                let (Flow::Text(input), true) = (&stdin, decodes) else {
                    return Flow::Unknown;
                };
                let out = if prog == "xxd" {
                    decode::hex(input)
                } else {
                    decode::base64(input)
                };
                match out {
                    Some(d) => {
                        push(&mut self.facts.decoded, &mut self.out, d.clone());
                        Flow::Text(d)
                    }
                    None => Flow::Unknown,
                }
            }
            "rev" => match stdin {
                Flow::Text(t) => {
                    let r: String = t.trim_end_matches('\n').chars().rev().collect();
                    push(&mut self.facts.decoded, &mut self.out, r.clone());
                    Flow::Text(r)
                }
                _ => Flow::Unknown,
            },
            "cat" if args.iter().all(|a| a.starts_with('-')) => stdin,
            "tee" => {
                if let Flow::Download(dl) = &stdin {
                    for f in args.iter().filter(|a| !a.starts_with('-')) {
                        let key = self.resolve(f);
                        self.remember_download(key, dl.clone());
                    }
                }
                stdin
            }
            "curl" | "wget" => {
                let to_file = args.iter().any(|a| {
                    matches!(
                        a.as_str(),
                        "-o" | "-O" | "--output" | "--remote-name" | "-P"
                    ) || a.starts_with("--output=")
                        || (a.starts_with("-o") && a.len() > 2 && prog == "curl")
                });
                let to_stdout = prog == "curl" && !to_file
                    || prog == "wget"
                        && (has(&["-O-", "-qO-", "-qO"])
                            || args.windows(2).any(|w| w[0] == "-O" && w[1] == "-")
                            || args.windows(2).any(|w| w[0] == "-qO" && w[1] == "-"));
                if to_stdout {
                    Flow::Download(render_argv(prog, args))
                } else {
                    // `curl -o FILE URL`, `wget -O FILE URL`: the file holds
                    // the download, for a shell that runs it later.
                    let named = args.windows(2).find_map(|w| {
                        matches!(
                            w[0].as_str(),
                            "-o" | "-O" | "--output" | "--output-document"
                        )
                        .then(|| w[1].clone())
                    });
                    let named = named.or_else(|| {
                        args.iter().find_map(|a| {
                            a.strip_prefix("--output=")
                                .or_else(|| a.strip_prefix("--output-document="))
                                .map(str::to_string)
                        })
                    });
                    if let Some(f) = named.filter(|f| f != "-") {
                        let dl = render_argv(prog, args);
                        self.remember_download(self.resolve(&f), dl);
                    }
                    Flow::Unknown
                }
            }
            "eval" => {
                for a in args {
                    if let Some(dl) = self.download_in(a) {
                        self.runs_download(&dl, "sh");
                    }
                }
                self.run_script(&args.join(" "), depth + 1);
                Flow::Unknown
            }
            "su" | "runuser" => {
                if let Some(i) = args.iter().position(|a| a == "-c" || a == "--command") {
                    if let Some(cmd) = args.get(i + 1) {
                        self.run_script(cmd, depth + 1);
                    }
                }
                Flow::Unknown
            }
            "watch" => {
                let mut i = 0;
                while let Some(a) = args.get(i) {
                    if a == "-n" || a == "--interval" {
                        i += 2;
                    } else if a.starts_with('-') {
                        i += 1;
                    } else {
                        break;
                    }
                }
                self.run_script(&args[i.min(args.len())..].join(" "), depth + 1);
                Flow::Unknown
            }
            "find" => {
                let mut i = 0;
                while i < args.len() {
                    if matches!(args[i].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
                        let end = args[i + 1..]
                            .iter()
                            .position(|a| a == ";" || a == "+")
                            .map_or(args.len(), |n| i + 1 + n);
                        // `{}` stands for what find visits: under its
                        // starting points, when no test narrows what it
                        // visits (`find / -name '*.log' -exec rm {} ;`
                        // keeps its `{}`).
                        let narrowed = args.iter().any(|a| FIND_TESTS.contains(&a.as_str()));
                        let roots: Vec<&String> = args
                            .iter()
                            .take_while(|a| !a.starts_with('-') && *a != "(" && *a != "!")
                            .filter(|_| !narrowed)
                            .collect();
                        let cmd: Vec<String> = args[i + 1..end]
                            .iter()
                            .flat_map(|a| {
                                if a == "{}" && !roots.is_empty() {
                                    roots.iter().map(|r| r.to_string()).collect::<Vec<_>>()
                                } else {
                                    vec![a.clone()]
                                }
                            })
                            .collect();
                        if !cmd.is_empty() {
                            self.simple_words(
                                Vec::new(),
                                cmd,
                                Vec::new(),
                                Flow::Unknown,
                                depth + 1,
                            );
                        }
                        i = end;
                    }
                    i += 1;
                }
                Flow::Unknown
            }
            p if SHELLS.contains(&p) => {
                self.shell(p, args, stdin, depth);
                Flow::Unknown
            }
            "source" | "." => {
                if let Some(f) = args.first() {
                    if let Some(dl) = self.download_in(f) {
                        self.runs_download(&dl, "sh");
                    }
                    self.run_written(f, depth);
                    // `source .env` loads the settings without showing
                    // them: no read of the file.
                    if !basename(f).starts_with(".env") {
                        self.executed(f);
                    }
                }
                if let Flow::Download(dl) = &stdin {
                    self.runs_download(dl, "sh");
                }
                Flow::Unknown
            }
            // `set -- a b c` sets the positional parameters.
            "set" => {
                let start = args.iter().position(|a| a == "--").map(|i| i + 1);
                let start = start.or_else(|| {
                    (!args.is_empty() && !args[0].starts_with(['-', '+'])).then_some(0)
                });
                if let Some(i) = start {
                    self.set_positional(None, &args[i..]);
                }
                Flow::Unknown
            }
            // `for v in words; do …`: the loop body sees `v` as the words.
            "for" | "select" => {
                if let (Some(name), Some("in")) = (args.first(), args.get(1).map(String::as_str)) {
                    let value = args[2..].join(" ");
                    self.vars.insert(name.clone(), value);
                }
                Flow::Unknown
            }
            "ssh" => {
                if let Some(cmd) = ssh_remote_command(args) {
                    self.run_nested(&cmd, depth);
                }
                Flow::Unknown
            }
            "git" => {
                for cmd in git_command_values(args) {
                    self.run_nested(&cmd, depth);
                }
                Flow::Unknown
            }
            "tar" | "rsync" | "zip" => {
                for cmd in option_commands(prog, args) {
                    self.run_nested(&cmd, depth);
                }
                Flow::Unknown
            }
            "awk" | "gawk" | "mawk" | "nawk" => {
                if let Some(program) = interp::awk_program(args) {
                    self.code(&program, depth);
                }
                Flow::Unknown
            }
            "vim" | "vi" | "nvim" | "ex" | "view" | "gvim" | "rvim" => {
                for cmd in editor_shell_commands(args) {
                    self.run_nested(&cmd, depth);
                }
                Flow::Unknown
            }
            p if is_powershell(p) => {
                for code in powershell_code(args) {
                    self.code(&code, depth);
                }
                if let Flow::Download(dl) = &stdin {
                    self.runs_download(dl, "powershell");
                }
                Flow::Unknown
            }
            p if p.eq_ignore_ascii_case("cmd") || p.eq_ignore_ascii_case("cmd.exe") => {
                if let Some(i) = args
                    .iter()
                    .position(|a| a.eq_ignore_ascii_case("/c") || a.eq_ignore_ascii_case("/k"))
                {
                    let code = args[i + 1..].join(" ");
                    if !code.is_empty() {
                        self.code(&code, depth);
                    }
                }
                Flow::Unknown
            }
            p => {
                if let Some(codes) = interp::code_args(p, args) {
                    for code in codes {
                        self.code(&code, depth);
                    }
                } else if interp::code_flags(p).is_some() {
                    let reads_stdin = args.iter().all(|a| a.starts_with('-'));
                    match (&stdin, reads_stdin) {
                        (Flow::Text(t), true) => self.code(&t.clone(), depth),
                        (Flow::Download(dl), true) => {
                            let dl = dl.clone();
                            self.runs_download(&dl, p);
                        }
                        _ => {
                            if let Some(f) = args.iter().find(|a| !a.starts_with('-')) {
                                if let Some(dl) = self.download_in(f) {
                                    self.runs_download(&dl, p);
                                }
                                self.executed(f);
                            }
                        }
                    }
                } else if p.contains('.') || args.is_empty() {
                    // `./x.sh` (the program word had a `/`, already a path).
                }
                Flow::Unknown
            }
        }
    }

    /// A shell's arguments: `-c STRING` is a script; else the first plain
    /// argument is a script file; else piped literal text is a script.
    fn shell(&mut self, prog: &str, args: &[String], stdin: Flow, depth: usize) {
        let mut i = 0;
        while i < args.len() {
            let a = args[i].as_str();
            if a == "-c"
                || (a.starts_with('-')
                    && !a.starts_with("--")
                    && a.len() > 2
                    && a[1..].contains('c'))
            {
                if let Some(cmd) = args.get(i + 1) {
                    // `sh -c 'rm -rf "$1"' _ /`: the words after the
                    // string are $0, $1, …
                    if args.len() > i + 2 {
                        self.set_positional(Some(&args[i + 2]), &args[i + 3..]);
                    }
                    if let Some(dl) = self.download_in(cmd) {
                        self.runs_download(&dl, prog);
                    }
                    self.run_script(cmd, depth + 1);
                } else if let Flow::Download(dl) = &stdin {
                    // `curl … | xargs -0 bash -c`: the download is the string.
                    self.runs_download(dl, prog);
                }
                return;
            }
            if a == "-o" || a == "+o" || a == "--rcfile" || a == "--init-file" {
                i += 2;
                continue;
            }
            if a.starts_with('-') || a.starts_with('+') {
                i += 1;
                continue;
            }
            if let Some(dl) = self.download_in(a) {
                self.runs_download(&dl, prog);
            }
            self.run_written(a, depth);
            self.executed(a);
            return;
        }
        match stdin {
            Flow::Text(t) => {
                self.run_script(&t, depth + 1);
            }
            Flow::Download(dl) => self.runs_download(&dl, prog),
            Flow::Unknown => {}
        }
    }

    /// `$0`, `$1`, … and `$@`/`$*`.
    fn set_positional(&mut self, zero: Option<&String>, rest: &[String]) {
        if let Some(z) = zero {
            self.vars.insert("0".into(), z.clone());
        }
        for (n, v) in rest.iter().take(9).enumerate() {
            self.vars.insert((n + 1).to_string(), v.clone());
        }
        let all = rest.join(" ");
        self.vars.insert("@".into(), all.clone());
        self.vars.insert("*".into(), all);
    }

    fn remember_download(&mut self, key: String, download: String) {
        if self.downloads.len() < 64 && !self.downloads.iter().any(|(k, _)| *k == key) {
            self.downloads.push((key, download));
        }
    }

    /// The download a file or a `$(…)`/`<(…)` rendering holds, if any.
    fn download_in(&self, key: &str) -> Option<String> {
        let resolved = self.resolve(key);
        self.downloads
            .iter()
            .find(|(k, _)| *k == key || *k == resolved)
            .map(|(_, d)| d.clone())
    }

    /// A download run by `prog`, by whatever route (piped in, `tee`,
    /// `sh -c "$(curl …)"`, `eval`, `<(curl …)`, a file downloaded earlier
    /// in the command): rendered as the download piped into the program,
    /// the one form the rules need to know.
    fn runs_download(&mut self, download: &str, prog: &str) {
        push(
            &mut self.facts.shell,
            &mut self.out,
            format!("{download} | {prog}"),
        );
    }

    /// Runs a command string a program will run (`git -c core.sshCommand=…`,
    /// `tar --to-command=…`, `ssh host CMD`, `vim -c '!…'`).
    fn run_nested(&mut self, cmd: &str, depth: usize) {
        let cmd = cmd.trim_start_matches('!');
        if let Some(dl) = self.download_in(cmd) {
            self.runs_download(&dl, "sh");
        }
        self.run_script(cmd, depth + 1);
    }

    /// A script file written earlier in the command with literal text:
    /// that text is the script.
    fn run_written(&mut self, file: &str, depth: usize) {
        let key = self.resolve(file);
        let text = self
            .written
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, t)| t.clone());
        if let Some(t) = text {
            self.run_script(&t, depth + 1);
        }
    }

    fn code(&mut self, code: &str, depth: usize) {
        if depth > MAX_DEPTH || code.len() > self.budget {
            self.facts.truncated = true;
            return;
        }
        self.budget -= code.len();
        push(&mut self.facts.code, &mut self.out, code.to_string());
        // Files the code names in string literals (`open('/etc/shadow')`,
        // `expanduser('~/.ssh/id_rsa')`) are files the call reads.
        for lit in interp::path_literals(code) {
            let p = self.resolve(&lit);
            for m in sensitive::sensitive_matches(&p) {
                push(&mut self.facts.paths, &mut self.out, m.to_string());
            }
            push(&mut self.facts.paths, &mut self.out, p);
        }
        let (commands, decoded) = interp::embedded(code);
        for c in commands {
            self.run_script(&c, depth + 1);
        }
        for d in decoded {
            push(&mut self.facts.decoded, &mut self.out, d.clone());
            self.code(&d, depth + 1);
        }
    }

    /// A script file run by a shell, `source` or an interpreter.
    fn executed(&mut self, file: &str) {
        let p = self.resolve(file);
        push(&mut self.facts.paths, &mut self.out, p);
    }

    fn resolve(&self, p: &str) -> String {
        let resolved = match &self.cwd {
            Some(c) => resolve_against(c, p),
            None => normalize_path(p),
        };
        resolved.unwrap_or_else(|| p.to_string())
    }

    /// Files a command names: path-like arguments, option values that are
    /// paths (`--file=x`, `-d @x`, `-F f=@x`), every plain argument of a
    /// file program when the directory is known, and the sensitive files a
    /// glob expands to.
    fn collect_paths(&mut self, prog: &str, args: &[String]) {
        // `source`/`.` run their file: `executed` names it (or not, for a
        // `.env` it loads without showing).
        if NON_READERS.contains(&prog) || prog == "source" || prog == "." {
            return;
        }
        let file_prog = FILE_PROGRAMS.contains(&prog);
        // `cp SRC… DEST`: the destination is written, not read.
        let plain: Vec<usize> = (0..args.len())
            .filter(|&i| !args[i].starts_with('-'))
            .collect();
        let dest = match prog {
            "cp" | "mv" | "install" | "ln" if plain.len() >= 2 => plain.last().copied(),
            _ => None,
        };
        for (i, a) in args.iter().enumerate() {
            if Some(i) == dest {
                continue;
            }
            // `docker run --env-file .env`: loaded, not shown.
            if i > 0 && args[i - 1] == "--env-file" || a.starts_with("--env-file=") {
                continue;
            }
            // `ssh -i KEY`: the key authenticates, it is not shown.
            if i > 0
                && args[i - 1] == "-i"
                && matches!(prog, "ssh" | "scp" | "sftp" | "ssh-copy-id" | "autossh")
            {
                continue;
            }
            let mut candidates: Vec<&str> = Vec::new();
            if let Some(at) = a.find('@') {
                let after = &a[at + 1..];
                let before = &a[..at];
                // `@file` as curl reads it, not `user@host`.
                if before.is_empty() || before.ends_with('=') || before.starts_with('-') {
                    candidates.push(after.split(';').next().unwrap_or(after));
                }
            }
            if a.starts_with('-') {
                if let Some((_, v)) = a.split_once('=') {
                    candidates.push(v);
                }
            } else if let Some((_, path)) = remote_spec(a) {
                // `scp host:.ssh/id_rsa .`: the remote file is named too.
                if !path.is_empty() {
                    candidates.push(path);
                }
            } else if looks_like_path(a) || (file_prog && (self.cwd.is_some() || is_dotfile(a))) {
                candidates.push(a);
            }
            for c in candidates {
                if c.is_empty() || c.contains("://") && !c.starts_with("file://") {
                    continue;
                }
                let p = self.resolve(c);
                for m in sensitive::sensitive_matches(&p) {
                    push(&mut self.facts.paths, &mut self.out, m.to_string());
                }
                push(&mut self.facts.paths, &mut self.out, p);
            }
        }
    }

    fn redirect(&mut self, r: &Redirect, hd: &[HereDoc], depth: usize, stdin: &mut Flow) -> String {
        let fd = r.fd.map(|f| f.to_string()).unwrap_or_default();
        match r.op {
            "<<" | "<<-" => {
                let body = r
                    .heredoc
                    .and_then(|i| hd.get(i))
                    .map(|h| {
                        if h.literal {
                            h.body.clone()
                        } else {
                            self.substitute_known(&h.body)
                        }
                    })
                    .unwrap_or_default();
                *stdin = Flow::Text(body);
                format!("{fd}<<EOF")
            }
            "<<<" => {
                let t = self.expand(&r.target, hd, depth).join(" ");
                let out = format!("{fd}<<< {}", quote(&t));
                *stdin = Flow::Text(format!("{t}\n"));
                out
            }
            ">&" | "<&" => {
                let t = self.expand(&r.target, hd, depth).join(" ");
                if !t.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
                    let p = self.resolve(&t);
                    push(&mut self.facts.redirect, &mut self.out, p.clone());
                    push(&mut self.facts.paths, &mut self.out, p);
                }
                format!("{fd}{}{}", r.op, quote(&t))
            }
            op => {
                let t = self.expand(&r.target, hd, depth).join(" ");
                let p = self.resolve(&t);
                if op == "<" {
                    *stdin = Flow::Unknown;
                }
                if !t.starts_with("<(") && !t.starts_with(">(") {
                    // Files read (`<`, `<>`) are named files; files written
                    // are only redirect targets.
                    if op.starts_with('<') {
                        for m in sensitive::sensitive_matches(&p) {
                            push(&mut self.facts.paths, &mut self.out, m.to_string());
                        }
                        push(&mut self.facts.paths, &mut self.out, p.clone());
                    } else if matches!(r.fd, None | Some(1)) && self.out_targets.len() < 8 {
                        self.out_targets.push(p.clone());
                    }
                    push(&mut self.facts.redirect, &mut self.out, p);
                }
                format!("{fd}{op} {}", quote(&t))
            }
        }
    }

    /// `$name` and `${name}` of known variables replaced in a here-document.
    fn substitute_known(&self, body: &str) -> String {
        if self.vars.is_empty() || !body.contains('$') {
            return body.to_string();
        }
        let mut out = body.to_string();
        for (n, v) in &self.vars {
            out = out
                .replace(&format!("${{{n}}}"), v)
                .replace(&format!("${n}"), v);
            if out.len() > MAX_WORD_BYTES * 4 {
                break;
            }
        }
        out
    }

    /// A word's fields after expansion.
    fn expand(&mut self, w: &Word, hd: &[HereDoc], depth: usize) -> Vec<String> {
        let mut fields: Vec<String> = vec![String::new()];
        let mut any = false;
        let mut all_unquoted_lit = true;
        for part in &w.parts {
            let (value, split) = match part {
                Part::Lit { text, quoted } => {
                    all_unquoted_lit &= !quoted;
                    any = true;
                    (text.clone(), false)
                }
                Part::Raw(r) => {
                    any = true;
                    (r.clone(), false)
                }
                Part::Var {
                    name,
                    quoted,
                    default,
                } => {
                    all_unquoted_lit = false;
                    let v = match (self.lookup(name), default) {
                        // Each expansion is paid from the parse budget, so
                        // doubling variables cannot grow the work.
                        (Some(v), _) if v.len() <= self.budget => {
                            self.budget -= v.len();
                            v
                        }
                        (Some(_), _) => {
                            self.facts.truncated = true;
                            format!("${name}")
                        }
                        (None, Some(d)) => self.expand(d, hd, depth).join(" "),
                        (None, None) => format!("${name}"),
                    };
                    any = true;
                    // `"$@"` is one word per positional parameter.
                    (v, !quoted || name == "@")
                }
                Part::Command { script, quoted } => {
                    all_unquoted_lit = false;
                    any = true;
                    let saved = self.cwd.clone();
                    let (r, flow) = self.script(script, hd, depth + 1);
                    self.cwd = saved;
                    let v = match flow {
                        Flow::Text(t) => t.trim_end_matches('\n').to_string(),
                        other => {
                            push(&mut self.facts.shell, &mut self.out, r.clone());
                            let v = format!("$({r})");
                            if let Flow::Download(dl) = other {
                                self.remember_download(v.clone(), dl);
                            }
                            v
                        }
                    };
                    let split = !quoted && !v.starts_with("$(");
                    (v, split)
                }
                Part::Process { script, output } => {
                    all_unquoted_lit = false;
                    any = true;
                    let (r, flow) = self.script(script, hd, depth + 1);
                    push(&mut self.facts.shell, &mut self.out, r.clone());
                    let v = format!("{}({r})", if *output { '>' } else { '<' });
                    if let Flow::Download(dl) = flow {
                        self.remember_download(v.clone(), dl);
                    }
                    (v, false)
                }
            };
            if split {
                let mut pieces = value.split([' ', '\t', '\n']);
                if let Some(first) = pieces.next() {
                    append(fields.last_mut(), first);
                }
                for p in pieces {
                    if fields.last().is_some_and(|f| f.is_empty()) {
                        append(fields.last_mut(), p);
                    } else {
                        fields.push(p.to_string());
                    }
                }
            } else {
                append(fields.last_mut(), &value);
            }
        }
        if !any {
            return Vec::new();
        }
        if fields.len() > 1 {
            fields.retain(|f| !f.is_empty());
        }
        if all_unquoted_lit && fields.len() == 1 {
            if let Some(expanded) = brace_expand(&fields[0]) {
                return expanded;
            }
        }
        fields
    }

    fn lookup(&self, name: &str) -> Option<String> {
        if let Some(v) = self.vars.get(name) {
            return Some(v.clone());
        }
        match name {
            "IFS" => Some(" ".into()),
            // The user's shell, when not set in the command.
            "SHELL" => Some("sh".into()),
            "BASH" => Some("bash".into()),
            "PWD" => self.cwd.clone(),
            _ => None,
        }
    }
}

fn append(field: Option<&mut String>, s: &str) {
    if let Some(f) = field {
        let room = MAX_WORD_BYTES.saturating_sub(f.len());
        let mut end = s.len().min(room);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        f.push_str(&s[..end]);
    }
}

/// `pre{a,b}post` → `preapost`, `prebpost` (one group, no nesting).
fn brace_expand(w: &str) -> Option<Vec<String>> {
    let open = w.find('{')?;
    let close = open + w[open..].find('}')?;
    let inner = &w[open + 1..close];
    if !inner.contains(',') || inner.contains('{') {
        return None;
    }
    let (pre, post) = (&w[..open], &w[close + 1..]);
    Some(
        inner
            .split(',')
            .take(64)
            .map(|alt| format!("{pre}{alt}{post}"))
            .collect(),
    )
}

/// `user@host:path` or `host:path` as scp and rsync write a remote file.
pub fn remote_spec(a: &str) -> Option<(&str, &str)> {
    if a.starts_with('/') || a.starts_with('.') || a.starts_with('~') || a.contains("://") {
        return None;
    }
    let (host, path) = a.split_once(':')?;
    let host_ok = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'@'));
    host_ok.then_some((host, path))
}

fn is_dotfile(a: &str) -> bool {
    a.starts_with('.') && a.len() > 1 && !a.starts_with("..")
}

fn looks_like_path(a: &str) -> bool {
    a.starts_with('/')
        || a.starts_with('~')
        || a.starts_with("./")
        || a.starts_with("../")
        || a.starts_with("$HOME")
        || a.starts_with("${HOME}")
        || a.starts_with("file://")
        || is_dotfile(a)
        || (a.contains('/') && !a.contains("://") && !a.starts_with('<') && !a.starts_with('>'))
}

/// The option that names the served directory, for a file server started
/// without one (`python3 -m http.server`, `php -S addr`).
fn served_directory_flag(prog: &str, args: &[String]) -> Option<&'static str> {
    let has = |a: &str| {
        args.iter()
            .any(|x| x == a || x.starts_with(&format!("{a}=")))
    };
    let python = prog.starts_with("python");
    if python
        && args
            .windows(2)
            .any(|w| w[0] == "-m" && (w[1] == "http.server" || w[1] == "SimpleHTTPServer"))
        && !has("--directory")
        && !has("-d")
    {
        return Some("--directory");
    }
    if prog.starts_with("php") && has("-S") && !has("-t") {
        return Some("-t");
    }
    None
}

/// The first command of a function body when `words` define a function:
/// `f { cmd…` (how `f() { cmd…` reads), `f () { cmd…`, `function f { cmd…`.
/// Returns how many words precede the body.
fn function_body(words: &[String]) -> Option<usize> {
    let mut i = match words.first().map(String::as_str) {
        Some("function") => 2,
        _ => 1,
    };
    if words.get(i).map(String::as_str) == Some("()") {
        i += 1;
    }
    (words.get(i).map(String::as_str) == Some("{") && words.len() > i + 1).then_some(i + 1)
}

/// `/x/*`, `/*`: a glob over a directory's contents, kept as written.
fn is_glob_tail(a: &str) -> bool {
    a.ends_with("/*") || a.ends_with("/.*")
}

/// The replacement string of `xargs -I R` / `-IR` / `-i` / `--replace[=R]`.
fn xargs_replace(opts: &[String]) -> Option<String> {
    for (i, o) in opts.iter().enumerate() {
        if o == "-I" {
            return opts.get(i + 1).cloned();
        }
        if let Some(r) = o.strip_prefix("-I") {
            return Some(r.to_string());
        }
        if o == "-i" || o == "--replace" {
            return Some("{}".into());
        }
        if let Some(r) = o
            .strip_prefix("--replace=")
            .or_else(|| o.strip_prefix("-i"))
        {
            return Some(r.to_string());
        }
    }
    None
}

/// The command `ssh [options] host CMD…` runs on the host, if any.
fn ssh_remote_command(args: &[String]) -> Option<String> {
    const WITH_VALUE: &str = "bcDEeFIiJLlmOopQRSWwB";
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "--" {
            i += 1;
            break;
        }
        if let Some(flags) = a.strip_prefix('-').filter(|f| !f.is_empty()) {
            // `-p 22`, `-p22`, `-vp 22`: a value follows the last flag when
            // it takes one and nothing is attached.
            let last = flags.chars().last().unwrap_or(' ');
            let takes = WITH_VALUE.contains(last)
                && flags
                    .chars()
                    .take(flags.len().saturating_sub(1))
                    .all(|c| !WITH_VALUE.contains(c));
            i += if takes { 2 } else { 1 };
            continue;
        }
        break;
    }
    // `i` is the host; what follows is the remote command.
    let rest: Vec<&str> = args
        .get(i + 1..)?
        .iter()
        .map(String::as_str)
        .skip_while(|a| *a == "--")
        .collect();
    (!rest.is_empty()).then(|| rest.join(" "))
}

/// git configuration whose value git runs as a command.
fn git_runs_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    matches!(
        k.as_str(),
        "core.sshcommand"
            | "core.pager"
            | "core.editor"
            | "core.fsmonitor"
            | "core.askpass"
            | "sequence.editor"
            | "diff.external"
            | "uploadpack.packobjectshook"
            | "credential.helper"
    ) || k.starts_with("alias.")
        || k.starts_with("pager.")
        || (k.starts_with("filter.")
            && (k.ends_with(".clean") || k.ends_with(".smudge") || k.ends_with(".process")))
        || (k.starts_with("diff.") && k.ends_with(".textconv"))
        || (k.starts_with("merge.") && k.ends_with(".driver"))
}

/// Commands in git's arguments: `-c key=CMD` and `config key CMD` for keys
/// whose value git runs (an alias or credential helper only with `!`).
fn git_command_values(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut take = |key: &str, value: &str| {
        let lk = key.to_ascii_lowercase();
        let bang_only = lk.starts_with("alias.") || lk == "credential.helper";
        if git_runs_key(key) && (!bang_only || value.starts_with('!')) && out.len() < 16 {
            out.push(value.to_string());
        }
    };
    for (i, a) in args.iter().enumerate() {
        if a == "-c" {
            if let Some((k, v)) = args.get(i + 1).and_then(|kv| kv.split_once('=')) {
                take(k, v);
            }
        }
    }
    if let Some(i) = args.iter().position(|a| a == "config") {
        let rest: Vec<&String> = args[i + 1..]
            .iter()
            .filter(|a| !a.starts_with('-'))
            .collect();
        if let [k, v, ..] = rest.as_slice() {
            take(k, v);
        }
    }
    out
}

/// Commands given as option values: `tar --to-command=CMD`,
/// `--checkpoint-action=exec=CMD`, `-I CMD`, `--use-compress-program=CMD`,
/// `--info-script`/`--new-volume-script`; `rsync -e CMD`/`--rsh=CMD`;
/// `zip -TT CMD`/`--unzip-command=CMD`.
fn option_commands(prog: &str, args: &[String]) -> Vec<String> {
    let (separate, joined): (&[&str], &[&str]) = match prog {
        "tar" => (
            &[
                "--to-command",
                "-I",
                "--use-compress-program",
                "-F",
                "--info-script",
                "--new-volume-script",
            ],
            &[
                "--to-command=",
                "--use-compress-program=",
                "--info-script=",
                "--new-volume-script=",
                "--checkpoint-action=exec=",
                "--checkpoint-action=exec:",
            ],
        ),
        "rsync" => (&["-e", "--rsh"], &["--rsh=", "--rsync-path="]),
        "zip" => (&["-TT", "--unzip-command"], &["--unzip-command="]),
        _ => (&[], &[]),
    };
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if separate.contains(&a.as_str()) {
            if let Some(v) = args.get(i + 1) {
                out.push(v.clone());
            }
        }
        for j in joined {
            if let Some(v) = a.strip_prefix(j) {
                out.push(v.to_string());
            }
        }
    }
    out.truncate(16);
    out
}

/// Shell commands an editor runs at start (`vim -c ':!rm -rf /'`,
/// `+'!cmd'`, `--cmd`).
fn editor_shell_commands(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let ex = if a == "-c" || a == "--cmd" {
            args.get(i + 1).map(String::as_str)
        } else {
            a.strip_prefix('+')
        };
        let Some(ex) = ex else { continue };
        let ex = ex.trim_start_matches([':', ' ']);
        let ex = ex
            .strip_prefix("silent")
            .map_or(ex, |r| r.trim_start_matches(['!', ' ']).trim_start());
        let cmd = ex
            .strip_prefix('!')
            .or_else(|| {
                ex.strip_prefix("call system(")
                    .map(|r| r.trim_end_matches(')'))
            })
            .or_else(|| ex.strip_prefix("sh "))
            .map(|c| c.trim_matches(['\'', '"', ' ']));
        if let Some(c) = cmd.filter(|c| !c.is_empty()) {
            out.push(c.to_string());
        }
    }
    out.truncate(16);
    out
}

fn is_powershell(p: &str) -> bool {
    let p = p.to_ascii_lowercase();
    matches!(
        p.as_str(),
        "powershell" | "powershell.exe" | "pwsh" | "pwsh.exe"
    )
}

/// PowerShell's code: `-Command X…` (any unambiguous prefix, any case),
/// `-EncodedCommand B64` (UTF-16LE base64, decoded), or the plain words
/// when neither is given (`powershell "iex …"`). `-File` runs a file.
fn powershell_code(args: &[String]) -> Vec<String> {
    let mut i = 0;
    let mut plain = Vec::new();
    while i < args.len() {
        let a = args[i].to_ascii_lowercase();
        let flag = a.strip_prefix('-').or_else(|| a.strip_prefix('/'));
        match flag {
            Some(f) if ("encodedcommand".starts_with(f) && !f.is_empty()) || f == "ec" => {
                return args
                    .get(i + 1)
                    .and_then(|b| decode::base64_utf16le(b))
                    .into_iter()
                    .collect();
            }
            Some(f) if !f.is_empty() && "command".starts_with(f) => {
                return vec![args[i + 1..].join(" ")];
            }
            Some(f) if !f.is_empty() && "file".starts_with(f) => return Vec::new(),
            Some(f)
                if [
                    "executionpolicy",
                    "windowstyle",
                    "configurationname",
                    "workingdirectory",
                    "ep",
                    "w",
                    "wd",
                ]
                .iter()
                .any(|o| o.starts_with(f) && f.len() >= 2 || *o == f) =>
            {
                i += 2;
            }
            Some(_) => i += 1,
            None => {
                plain.push(args[i].clone());
                i += 1;
            }
        }
    }
    if plain.is_empty() {
        Vec::new()
    } else {
        vec![plain.join(" ")]
    }
}

fn render_argv(prog: &str, args: &[String]) -> String {
    let mut out = quote(prog);
    for a in args {
        out.push(' ');
        if a.starts_with("<(") || a.starts_with(">(") || a.starts_with("$(") {
            out.push_str(a);
        } else {
            out.push_str(&quote(a));
        }
    }
    out
}

/// Keeps `v` unless it is empty, already there, or the output budget is spent.
fn push(list: &mut Vec<String>, out: &mut usize, v: String) {
    if v.is_empty() || list.len() >= MAX_VALUES || v.len() > *out || list.contains(&v) {
        return;
    }
    *out -= v.len();
    list.push(v);
}
