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
//! tools (`search_nodes`, `read_graph`) and deletions are not writes.

use serde_json::Value;

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

/// Every string of a call's arguments, depth first (object members in
/// key order), the text a memory write stores.
pub fn texts(args: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut copy = args.clone();
    leaves_mut(&mut copy, &mut |s| out.push(s.clone()));
    out
}

/// Calls `f` on every string of `v`, depth first, in a fixed order (the
/// same for two walks of the same value).
pub fn leaves_mut(v: &mut Value, f: &mut dyn FnMut(&mut String)) {
    match v {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter_mut().for_each(|i| leaves_mut(i, f)),
        Value::Object(map) => map.values_mut().for_each(|i| leaves_mut(i, f)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[test]
    fn texts_and_leaves_agree() {
        let mut v = json!({"observations": [{"entityName": "Ana", "contents": ["a", "b"]}]});
        // Object members in key order (`contents` before `entityName`).
        assert_eq!(texts(&v), ["a", "b", "Ana"]);
        leaves_mut(&mut v, &mut |s| s.push('!'));
        assert_eq!(texts(&v), ["a!", "b!", "Ana!"]);
    }
}
