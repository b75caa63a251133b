//! Files that are an agent's memory: what it reads back into every later
//! session as instructions or remembered facts.
//!
//! Agents keep long-term memory in plain files, written with their own file
//! tools: a write to one of them is a memory write whatever front door
//! carried it (a Claude Code or Codex hook, the OpenClaw plugin, an MCP
//! filesystem server, the proxy's tool calls). [`crate::PreparedEvent`]
//! therefore reads such a `tool.before` write as `memory.before` too: the
//! path is `memory_key`, what is written `memory_text`, so the
//! memory-poisoning rules judge it like any memory.
//!
//! The names are the agents' documented conventions:
//! - Claude Code: `CLAUDE.md`, `CLAUDE.local.md` (project and user memory,
//!   docs.anthropic.com/en/docs/claude-code/memory);
//! - Codex CLI and the AGENTS.md convention: `AGENTS.md`,
//!   `AGENTS.override.md` (agents.md, github.com/openai/codex docs);
//! - OpenClaw: `MEMORY.md` and the daily notes `memory/<date>.md` of its
//!   workspace (docs.openclaw.ai, "Memory");
//! - Gemini CLI: `GEMINI.md`; Cursor: `.cursorrules`, `.cursor/rules/*.mdc`;
//!   GitHub Copilot: `.github/copilot-instructions.md`; Windsurf:
//!   `.windsurfrules`; Cline: `.clinerules`.

/// File names that are memory wherever they are.
const NAMES: [&str; 10] = [
    "CLAUDE.md",
    "CLAUDE.local.md",
    "AGENTS.md",
    "AGENTS.override.md",
    "MEMORY.md",
    "GEMINI.md",
    ".cursorrules",
    ".windsurfrules",
    ".clinerules",
    "copilot-instructions.md",
];

/// Whether `path` (as a tool call names it: absolute, relative, either
/// separator) is an agent's memory or standing-instructions file.
pub fn is_agent_memory_file(path: &str) -> bool {
    let path = path.trim();
    let mut parts = path.rsplit(['/', '\\']);
    let Some(name) = parts.next() else {
        return false;
    };
    let parent = parts.next().unwrap_or("");
    if NAMES.iter().any(|n| name.eq_ignore_ascii_case(n)) {
        // Copilot's file only counts in its `.github/` home.
        return !name.eq_ignore_ascii_case("copilot-instructions.md")
            || parent.eq_ignore_ascii_case(".github");
    }
    let lower_name = name.to_ascii_lowercase();
    (parent.eq_ignore_ascii_case("memory") && lower_name.ends_with(".md"))
        || (parent.eq_ignore_ascii_case("rules")
            && lower_name.ends_with(".mdc")
            && parts
                .next()
                .is_some_and(|p| p.eq_ignore_ascii_case(".cursor")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agents_memory_files_are_recognised() {
        for p in [
            "/home/dev/app/CLAUDE.md",
            "CLAUDE.local.md",
            "/home/dev/.claude/CLAUDE.md",
            "AGENTS.md",
            "C:\\work\\app\\AGENTS.md",
            "/home/dev/.openclaw/workspace/MEMORY.md",
            "/home/dev/.openclaw/workspace/memory/2026-12-05.md",
            "memory/notes.md",
            "GEMINI.md",
            ".cursorrules",
            "/repo/.cursor/rules/style.mdc",
            "/repo/.github/copilot-instructions.md",
            "agents.md",
            "/home/dev/app/memory.md",
        ] {
            assert!(is_agent_memory_file(p), "{p}");
        }
    }

    #[test]
    fn other_files_are_not() {
        for p in [
            "/home/dev/app/README.md",
            "/home/dev/app/docs/CLAUDE.md.bak",
            "/home/dev/app/memory.markdown",
            "/home/dev/app/memory/notes.txt",
            "/home/dev/app/src/memory/alloc.rs",
            "/repo/docs/copilot-instructions.md",
            "/repo/rules/style.mdc",
            "",
            "/",
        ] {
            assert!(!is_agent_memory_file(p), "{p}");
        }
    }
}
