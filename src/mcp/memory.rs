//! Memory servers' write tools: a `tools/call` that stores text in an
//! agent's memory is judged at `memory.before` too (a planted "always run
//! …" is persistence, a secret stored is kept for every later session).
//!
//! MCP has no memory method of its own: memory servers expose tools. A call
//! is a memory write when its tool's name (without the gateway's
//! `mcp__<server>__` prefix) pairs a writing verb with a memory noun —
//! `create_entities` and `add_observations` of the reference knowledge-graph
//! server, `add_memory`/`add-memory`/`store_memory` of the memory layers,
//! `saveNote`, `remember` — or is listed in `mcp.memory_tools`. Reading
//! tools (`search_nodes`, `read_graph`) and deletions are not writes. The
//! text judged is every string of the arguments, walked by
//! `parallax_runtime::prepared::each_string` (and rewritten in the same
//! order by `parallax_runtime::redact::each_string_mut`).

/// Verbs that store (a word of the tool's name).
const WRITE_VERBS: [&str; 13] = [
    "add", "save", "store", "create", "write", "update", "upsert", "append", "insert", "put",
    "set", "record", "remember",
];

/// Nouns that name what a memory holds.
const MEMORY_NOUNS: [&str; 13] = [
    "memory",
    "memories",
    "mem",
    "observation",
    "observations",
    "entity",
    "entities",
    "note",
    "notes",
    "fact",
    "facts",
    "knowledge",
    "context",
];

/// The words of a tool name: split at `_`, `-`, `.`, `/`, spaces and
/// lower-to-upper case changes, lowercased.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Whether a call of the server's tool `tool` writes to a memory.
pub fn is_memory_write(tool: &str, configured: &[String]) -> bool {
    if configured.iter().any(|t| t == tool) {
        return true;
    }
    let w = words(tool);
    if w.len() == 1 && w[0] == "remember" {
        return true;
    }
    w.iter().any(|x| WRITE_VERBS.contains(&x.as_str()))
        && w.iter().any(|x| MEMORY_NOUNS.contains(&x.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_writes_by_name() {
        for t in [
            "create_entities",
            "add_observations",
            "add_memory",
            "add-memory",
            "store_memory",
            "saveNote",
            "remember",
            "upsertMemories",
        ] {
            assert!(is_memory_write(t, &[]), "{t}");
        }
        for t in [
            "search_nodes",
            "read_graph",
            "delete_entities",
            "write_file",
            "create_issue",
            "get_memory",
            "remembered_items_list",
        ] {
            assert!(!is_memory_write(t, &[]), "{t}");
        }
        assert!(is_memory_write("kb_put", &["kb_put".to_string()]));
    }
}
