//! The shape of a parsed shell command: what the parser produces and the
//! walker reads. Only what detection needs is kept — words with their
//! quoting, substitutions as sub-scripts, redirects, pipelines and lists —
//! not a full POSIX grammar (`case` arms, function bodies and loops are read
//! as the plain commands they contain).

/// One piece of a word.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Literal text; `quoted` when it came from quotes or a backslash, so it
    /// is neither field-split nor glob/tilde/brace expanded.
    Lit { text: String, quoted: bool },
    /// `$name`, `${name}`, `${name:-default}`.
    Var {
        name: String,
        quoted: bool,
        default: Option<Word>,
    },
    /// `$(...)` or `` `...` ``.
    Command { script: Script, quoted: bool },
    /// `<(...)` (`output: false`) or `>(...)`.
    Process { script: Script, output: bool },
    /// Text kept as written: arithmetic, unsupported `${...}` forms.
    Raw(String),
}

/// A shell word: the concatenation of its parts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Word {
    pub parts: Vec<Part>,
}

/// `[fd]op target`, or a here-document.
#[derive(Debug, Clone, PartialEq)]
pub struct Redirect {
    pub fd: Option<u32>,
    /// `<`, `>`, `>>`, `<>`, `>|`, `&>`, `&>>`, `>&`, `<&`, `<<`, `<<-`, `<<<`.
    pub op: &'static str,
    pub target: Word,
    /// For `<<`: the index of its body in [`Parsed::heredocs`].
    pub heredoc: Option<usize>,
}

/// `NAME=value ... word ... redirect ...`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Simple {
    pub assigns: Vec<(String, Word)>,
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Simple(Simple),
    /// `( ... )` (`subshell: true`) or `{ ...; }`.
    Group {
        body: Script,
        subshell: bool,
        redirects: Vec<Redirect>,
    },
}

/// Commands joined by `|` (or `|&`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Pipeline {
    pub commands: Vec<Command>,
}

/// Pipelines and what follows each: `;`, `&`, `&&`, `||` (a newline is `;`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Script {
    pub items: Vec<(Pipeline, &'static str)>,
}

/// A parse: the script and the bodies of its here-documents.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Parsed {
    pub script: Script,
    pub heredocs: Vec<HereDoc>,
    /// The input was longer than the parser reads, or nested deeper than it
    /// follows: what is here is a prefix.
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct HereDoc {
    pub body: String,
    /// The delimiter was quoted, so the body is not expanded.
    pub literal: bool,
}
