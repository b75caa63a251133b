//! A rule's definition as the compiled program holds it — the data
//! `parallax compile --emit program` prints — for the rule the page links
//! to: id, engine, stages, action, and for each atom the field it scans,
//! the path the planner chose and what a DFA path costs.
//!
//! Read from the rules in force (baked or dynamic, after any reload), so
//! the page never shows a definition other than the one deciding.

use parallax_runtime::{AtomPath, Engine, Predicate, Program};
use serde_json::{json, Value};

/// The atoms `p` refers to, in order of first mention.
fn atoms_of(p: &Predicate, out: &mut Vec<u32>) {
    match p {
        Predicate::Atom(a) => {
            if !out.contains(a) {
                out.push(*a);
            }
        }
        Predicate::Not(inner) => atoms_of(inner, out),
        Predicate::And(ps) | Predicate::Or(ps) => ps.iter().for_each(|q| atoms_of(q, out)),
        Predicate::Cel { atoms, .. } => {
            for a in atoms {
                if !out.contains(a) {
                    out.push(*a);
                }
            }
        }
        Predicate::Const(_) | Predicate::Check(_) => {}
    }
}

/// One atom: its field, pattern, path, and (on the DFA path) the size of
/// the shard DFA it is scanned in, with how many atoms share that shard.
fn atom_view(program: &Program, atom: u32) -> Value {
    let Some(a) = program.atoms.get(atom as usize) else {
        return json!({"atom": atom});
    };
    let plan = program.fields.get(a.field as usize);
    let field = plan.map(|f| f.field.name()).unwrap_or_default();
    let mut v = json!({
        "atom": atom,
        "field": field,
        "pattern": a.pattern,
        "path": a.path.as_str(),
    });
    if let Some(validator) = &a.validator {
        v["validator"] = json!(validator);
    }
    if a.path == AtomPath::Dfa {
        if let Some(shard) = plan.and_then(|f| f.shards.iter().find(|s| s.atoms.contains(&atom))) {
            v["dfa_shard_bytes"] = json!(shard.bytes);
            v["dfa_shard_atoms"] = json!(shard.atoms.len());
        }
    }
    v
}

/// The definition of rule `id`, or `None` when no rule in force has it.
pub fn definition(engine: &Engine, id: &str) -> Option<Value> {
    let program = engine.program();
    let rule = program.rules.iter().find(|r| r.id == id)?;
    let evaluator = program.evaluators.get(rule.evaluator as usize);
    let mut atoms = Vec::new();
    atoms_of(&rule.predicate, &mut atoms);
    let stages: Vec<&str> = rule.stages.iter().map(|s| s.as_str()).collect();
    let mut v = json!({
        "id": rule.id,
        "title": rule.title,
        "description": rule.description,
        "evaluator": evaluator.map(|e| e.name.as_str()),
        "engine": evaluator.map(|e| e.engine.as_str()),
        "source": evaluator.map(|e| e.source.as_str()),
        "stages": stages,
        "action": rule.action,
        "priority": rule.priority,
        "category": rule.category,
        "reason": rule.reason,
        "monitor": rule.monitor,
        "atoms": atoms.iter().map(|a| atom_view(program, *a)).collect::<Vec<_>>(),
        "backend": engine.backend().as_str(),
        "rules_fingerprint": program.fingerprint,
    });
    if let Some(sql) = program.sql.iter().find(|s| {
        program
            .rules
            .get(s.rule as usize)
            .is_some_and(|r| r.id == id)
    }) {
        v["sql"] = json!({"query": sql.query, "condition": sql.condition});
    }
    if let Some(a) = &rule.approval {
        v["approval"] = json!(a);
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shipped_rule_with_its_atoms_paths_and_costs() {
        let engine = crate::backend::baked::engine().expect("the baked engine");
        let d = definition(&engine, "dangerous-rm-rf-root").expect("a shipped rule");
        assert_eq!(d["engine"], "regex");
        assert_eq!(d["action"], "block");
        assert_eq!(d["stages"], json!(["tool.before"]));
        let atoms = d["atoms"].as_array().cloned().unwrap_or_default();
        assert!(!atoms.is_empty());
        for a in &atoms {
            // The rule reads each simple command's argv as a shell parses
            // it (issue 20), so an rm inside a quoted word is no delete.
            assert_eq!(a["field"], "argv");
            let path = a["path"].as_str().unwrap_or_default();
            assert!(
                ["literal", "dfa", "prefiltered", "verified", "backtrack"].contains(&path),
                "{a}"
            );
            if path == "dfa" {
                assert!(a["dfa_shard_bytes"].as_u64().unwrap_or(0) > 0, "{a}");
            }
        }
        assert!(definition(&engine, "no-such-rule").is_none());
    }
}
