//! Interpreter one-liners (`python3 -c`, `perl -e`, `node -e`, `ruby -e`,
//! `php -r`, …): which argument is code, and the shell commands code hands
//! to the system (`os.system("…")`, `subprocess.run([...])`, `execSync`,
//! Perl/Ruby backticks), so those are parsed as shell too. Base64 literals
//! decoded in the code (`b64decode("…")`, `Buffer.from("…","base64")`,
//! `decode_base64("…")`) are code as well.

use super::decode;

/// The code flags of each interpreter family (matched on the program's
/// basename, `python3.12` as `python`).
pub fn code_flags(program: &str) -> Option<&'static [&'static str]> {
    let family = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    Some(match family {
        "python" | "pypy" => &["-c"],
        "perl" => &["-e", "-E"],
        "ruby" | "lua" | "luajit" | "bun" => &["-e"],
        "node" | "nodejs" => &["-e", "--eval", "-p", "--print"],
        "php" => &["-r"],
        "deno" => &["eval"],
        "osascript" => &["-e"],
        "pwsh" | "powershell" => &["-c", "-Command", "-command"],
        _ => return None,
    })
}

/// The code arguments of an interpreter's argv (after the program), or
/// `None` when the interpreter runs a file or reads stdin.
pub fn code_args(program: &str, args: &[String]) -> Option<Vec<String>> {
    let flags = code_flags(program)?;
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if flags.contains(&a) {
            if let Some(code) = args.get(i + 1) {
                out.push(code.clone());
            }
            i += 2;
            continue;
        }
        // Clustered short flags: `perl -ne '…'`, `python3 -Ic '…'`.
        // Only lower-case letters: `-MFile::Path` is a module, not `-e`.
        let cluster = a.len() > 2
            && a.starts_with('-')
            && a[1..].bytes().all(|b| b.is_ascii_lowercase())
            && flags.iter().any(|f| f.len() == 2 && a.ends_with(&f[1..]));
        if cluster {
            if let Some(code) = args.get(i + 1) {
                out.push(code.clone());
            }
            i += 2;
            continue;
        }
        if !a.starts_with('-') && out.is_empty() {
            // A script file (or `-` for stdin): not a one-liner.
            return None;
        }
        i += 1;
    }
    (!out.is_empty()).then_some(out)
}

/// The program text of an `awk` command line (`awk 'BEGIN{…}' file`), or
/// `None` when it runs a program file (`-f`). Its `system("…")` calls are
/// shell commands, as in any interpreter's code.
pub fn awk_program(args: &[String]) -> Option<String> {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "-f" | "--file" => return None,
            "-e" | "--source" => return args.get(i + 1).cloned(),
            "-F" | "-v" | "--assign" | "--field-separator" => i += 2,
            "--" => return args.get(i + 1).cloned(),
            _ if a.starts_with('-') && a.len() > 1 => i += 1,
            _ => return Some(a.to_string()),
        }
    }
    None
}

/// Calls that run their argument as a command (`execute(` is Lua's
/// `os.execute`).
const RUNNERS: [&str; 19] = [
    "execute(",
    "passthru(",
    "proc_open(",
    "system(",
    "popen(",
    "Popen(",
    "run(",
    "call(",
    "check_call(",
    "check_output(",
    "getoutput(",
    "getstatusoutput(",
    "spawn(",
    "spawnSync(",
    "exec(",
    "execSync(",
    "execFile(",
    "execFileSync(",
    "shell_exec(",
];

/// Calls whose string argument is base64 decoded.
const B64_DECODERS: [&str; 5] = [
    "b64decode(",
    "decode_base64(",
    "Buffer.from(",
    "atob(",
    "base64_decode(",
];

/// What the code hands to a shell or decodes: shell command lines (argv
/// lists re-quoted so the shell parser reads them back word for word) and
/// decoded base64 literals.
pub fn embedded(code: &str) -> (Vec<String>, Vec<String>) {
    let mut commands = Vec::new();
    let mut decoded = Vec::new();
    for call in RUNNERS {
        for (at, _) in code.match_indices(call) {
            let rest = &code[at + call.len()..];
            if let Some(cmd) = string_or_list(rest) {
                commands.push(cmd);
            }
            if commands.len() >= 32 {
                break;
            }
        }
    }
    for call in B64_DECODERS {
        for (at, _) in code.match_indices(call) {
            if let Some((lit, _)) = string_literal(code[at + call.len()..].trim_start()) {
                if let Some(d) = decode::base64(&lit) {
                    decoded.push(d);
                }
            }
            if decoded.len() >= 32 {
                break;
            }
        }
    }
    // Perl and Ruby calls without parentheses: `system "…"`, `exec '…'`.
    for call in ["system ", "exec ", "spawn "] {
        for (at, _) in code.match_indices(call) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') {
                continue;
            }
            if let Some((lit, _)) = string_literal(code[at + call.len()..].trim_start()) {
                commands.push(lit);
            }
            if commands.len() >= 48 {
                break;
            }
        }
    }
    // Perl and Ruby backticks, and `qx{…}`.
    let mut rest = code;
    while let Some(start) = rest.find('`') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('`') else { break };
        if end > 0 {
            commands.push(after[..end].to_string());
        }
        rest = &after[end + 1..];
        if commands.len() >= 64 {
            break;
        }
    }
    for open in ["qx{", "qx(", "%x("] {
        for (at, _) in code.match_indices(open) {
            let close = if open.ends_with('{') { '}' } else { ')' };
            let body = &code[at + open.len()..];
            if let Some(end) = body.find(close) {
                commands.push(body[..end].to_string());
            }
        }
    }
    (commands, decoded)
}

/// String literals in code that are absolute or home paths
/// (`'/etc/shadow'`, `"~/.ssh/id_rsa"`), at most 32 of them.
pub fn path_literals(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = code.as_bytes();
    let mut i = 0;
    while i < b.len() && out.len() < 32 {
        let q = b[i];
        if q == b'\'' || q == b'"' || q == b'`' {
            let start = i + 1;
            let end = b[start..]
                .iter()
                .position(|&c| c == q || c == b'\n')
                .map_or(b.len(), |n| start + n);
            if let Some(lit) = code.get(start..end) {
                let path_like = (lit.starts_with('/') || lit.starts_with("~/"))
                    && lit.len() <= 256
                    && !lit.contains(char::is_whitespace);
                if path_like {
                    out.push(lit.to_string());
                }
            }
            i = end + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// A string literal (`'…'`, `"…"`, with backslash escapes) at the start of
/// `s`, and the rest after it.
fn string_literal(s: &str) -> Option<(String, &str)> {
    let s = s.strip_prefix(['b', 'r', 'f']).unwrap_or(s);
    let q = s.chars().next().filter(|c| matches!(c, '\'' | '"' | '`'))?;
    let mut out = String::new();
    let mut chars = s[1..].char_indices();
    while let Some((i, c)) = chars.next() {
        if c == '\\' {
            if let Some((_, n)) = chars.next() {
                match n {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    other => out.push(other),
                }
            }
        } else if c == q {
            return Some((out, &s[1 + i + 1..]));
        } else {
            out.push(c);
        }
    }
    None
}

/// A command line from a call's argument: a string literal, or a list of
/// them (`["rm", "-rf", "/"]`), re-quoted.
fn string_or_list(rest: &str) -> Option<String> {
    let rest = rest.trim_start();
    if let Some(list) = rest.strip_prefix(['[', '(']) {
        let mut items = Vec::new();
        let mut s = list.trim_start();
        while let Some((lit, after)) = string_literal(s) {
            items.push(super::render::quote(&lit));
            s = after.trim_start().trim_start_matches(',').trim_start();
            if items.len() >= 256 {
                break;
            }
        }
        return (!items.is_empty()).then(|| items.join(" "));
    }
    string_literal(rest).map(|(lit, _)| lit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn code_arguments() {
        assert_eq!(
            code_args("python3", &strs(&["-c", "print(1)"])),
            Some(strs(&["print(1)"]))
        );
        assert_eq!(
            code_args("python3.12", &strs(&["manage.py", "-c", "x"])),
            None
        );
        assert_eq!(
            code_args("perl", &strs(&["-ne", "print"])),
            Some(strs(&["print"]))
        );
        assert_eq!(
            code_args("node", &strs(&["--eval", "1"])),
            Some(strs(&["1"]))
        );
        assert_eq!(code_args("ls", &strs(&["-c", "1"])), None);
    }

    #[test]
    fn embedded_commands_and_payloads() {
        let (c, _) = embedded("import os; os.system('rm -rf /')");
        assert_eq!(c, ["rm -rf /"]);
        let (c, _) = embedded("subprocess.run([\"rm\", \"-rf\", \"/\"])");
        assert_eq!(c, ["rm -rf /"]);
        let (c, _) = embedded("print `id`; qx{whoami}");
        assert_eq!(c, ["id", "whoami"]);
        let (_, d) = embedded("exec(base64.b64decode('cm0gLXJmIC8='))");
        assert_eq!(d, ["rm -rf /"]);
    }
}
