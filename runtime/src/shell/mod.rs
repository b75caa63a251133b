//! Commands as a shell sees them. A command is parsed (`parse`), then
//! walked (`walk`) the way a shell would run it, and the result is a set of
//! canonical per-command values that rules address as fields
//! (`docs/FIELDS.md`): the rendering of every script (`shell`), each simple
//! command's argv after unwrapping (`argv`), program basenames (`program`),
//! redirect targets (`redirect`), interpreter code (`code`), payloads
//! decoded in place (`decoded`), and the normalised files it touches (which
//! join `file` with every other tool's paths).
//!
//! So quoting (`"rm"`, `\rm`, `'/'`), indirection (`bash -c`, `eval`,
//! variables, `$(echo … | base64 -d)`), wrappers (`sudo`, `env`, `xargs`,
//! absolute program paths) and interpreters no longer hide a command from a
//! rule written for its plain form. Derived once per event, and only for
//! events that carry a command.

pub mod ast;
pub mod decode;
pub mod event_facts;
pub mod interp;
pub mod parse;
pub mod render;
pub mod sensitive;
pub mod unwrap;
pub mod walk;

/// Bytes parsed per event across every nested script (the outer command,
/// `bash -c` strings, decoded payloads, interpreter code), as a multiple of
/// the command's own length plus a floor; keeps the work linear however
/// deep the nesting.
const BUDGET_FACTOR: usize = 4;
const BUDGET_FLOOR: usize = 4096;

/// What the shell analysis derived from an event's commands.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShellFacts {
    /// Each script (the command, and every nested one) rendered canonically:
    /// words unquoted and expanded, wrappers removed, program basenames,
    /// single-spaced, words that need it in single quotes.
    pub shell: Vec<String>,
    /// Each simple command: program basename and its arguments.
    pub argv: Vec<String>,
    /// Basename of every program started, wrappers included.
    pub program: Vec<String>,
    /// Redirect targets, normalised.
    pub redirect: Vec<String>,
    /// Code given to interpreters (`python3 -c`, `perl -e`, piped in, …).
    pub code: Vec<String>,
    /// Literals decoded in place: base64, hex, `printf`/`echo -e`/`$'…'`
    /// escapes, reversed strings.
    pub decoded: Vec<String>,
    /// Files named: path-like arguments, redirect targets, scripts run,
    /// sensitive files a glob expands to; normalised, resolved after `cd`.
    pub paths: Vec<String>,
    /// The analysis stopped at a limit (length, depth, count).
    pub truncated: bool,
}

impl ShellFacts {
    /// Analyses a command line.
    pub fn from_command(command: &str) -> ShellFacts {
        let mut facts = ShellFacts::default();
        let budget = command.len().saturating_mul(BUDGET_FACTOR) + BUDGET_FLOOR;
        walk::Walker::new(&mut facts, budget).run_script(command, 0);
        facts
    }

    /// Analyses a command given as an argv (Codex's `shell` tool).
    pub fn from_argv(argv: &[String]) -> ShellFacts {
        let mut facts = ShellFacts::default();
        let len: usize = argv.iter().map(String::len).sum();
        let budget = len.saturating_mul(BUDGET_FACTOR) + BUDGET_FLOOR;
        walk::Walker::new(&mut facts, budget).run_argv(argv);
        facts
    }

    /// Adds another command's facts (an event with several commands).
    pub fn merge(&mut self, other: ShellFacts) {
        for (to, from) in [
            (&mut self.shell, other.shell),
            (&mut self.argv, other.argv),
            (&mut self.program, other.program),
            (&mut self.redirect, other.redirect),
            (&mut self.code, other.code),
            (&mut self.decoded, other.decoded),
            (&mut self.paths, other.paths),
        ] {
            for v in from {
                if !to.contains(&v) {
                    to.push(v);
                }
            }
        }
        self.truncated |= other.truncated;
    }
}
