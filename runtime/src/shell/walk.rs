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
//! the shell commands inside them. Everything is bounded: a shared byte
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

/// What a command writes to its standard output, as far as it is known.
#[derive(Debug, Clone)]
enum Flow {
    Unknown,
    /// Literal text (an `echo`, a decoded literal, a here-document).
    Text(String),
    /// A download (`curl`/`wget` to stdout).
    Download,
}

pub struct Walker<'f> {
    facts: &'f mut ShellFacts,
    vars: HashMap<String, String>,
    cwd: Option<String>,
    budget: usize,
    /// Bytes of derived values still to keep (the same bound as `budget`).
    out: usize,
    commands: usize,
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
        for r in &s.redirects {
            reds.push(self.redirect(r, hd, depth, &mut stdin));
        }
        self.simple_words(assigns, words, reds, stdin, depth)
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
        if words.is_empty() {
            for (n, v) in assigns {
                self.vars.insert(n, v);
            }
            rendered.extend(reds);
            return (rendered.join(" "), Flow::Unknown);
        }
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
        let mut args: Vec<String> = words[start + 1..].to_vec();
        // `echo / | xargs rm -rf`: xargs appends what it reads.
        if let Flow::Text(t) = &stdin {
            if wrappers.iter().any(|&w| basename(&words[w]) == "xargs") {
                args.extend(t.split_whitespace().take(64).map(str::to_string));
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
            "cat" | "tee" if args.iter().all(|a| a.starts_with('-')) => stdin,
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
                    Flow::Download
                } else {
                    Flow::Unknown
                }
            }
            "eval" => {
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
                        let cmd = args[i + 1..end].to_vec();
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
                self.shell(args, stdin, depth);
                Flow::Unknown
            }
            "source" | "." => {
                if let Some(f) = args.first() {
                    self.executed(f);
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
                        _ => {
                            if let Some(f) = args.iter().find(|a| !a.starts_with('-')) {
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
    fn shell(&mut self, args: &[String], stdin: Flow, depth: usize) {
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
                    self.run_script(cmd, depth + 1);
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
            self.executed(a);
            return;
        }
        if let Flow::Text(t) = stdin {
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
        let file_prog = FILE_PROGRAMS.contains(&prog);
        for a in args {
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
            } else if let Some((host, path)) = remote_spec(a) {
                let _ = host;
                let _ = path;
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
                    (v, !quoted)
                }
                Part::Command { script, quoted } => {
                    all_unquoted_lit = false;
                    any = true;
                    let saved = self.cwd.clone();
                    let (r, flow) = self.script(script, hd, depth + 1);
                    self.cwd = saved;
                    let v = match flow {
                        Flow::Text(t) => t.trim_end_matches('\n').to_string(),
                        _ => {
                            push(&mut self.facts.shell, &mut self.out, r.clone());
                            format!("$({r})")
                        }
                    };
                    let split = !quoted && !v.starts_with("$(");
                    (v, split)
                }
                Part::Process { script, output } => {
                    all_unquoted_lit = false;
                    any = true;
                    let (r, _) = self.script(script, hd, depth + 1);
                    push(&mut self.facts.shell, &mut self.out, r.clone());
                    (format!("{}({r})", if *output { '>' } else { '<' }), false)
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
