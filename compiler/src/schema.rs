//! Lowering `schema` rules: a tool's arguments outside a JSON Schema.
//!
//! A rule `{tool, schema}` becomes `tool_name matches the globs AND the
//! arguments are outside the schema`. The tool names are an anchored regex
//! atom on `tool_name`, so they join that field's automaton and a schema is
//! only ever evaluated for the tools it names; the schema is a
//! [`CheckOp::Schema`] check. Each schema is built here with the same
//! `jsonschema` options the runtime uses, so one that cannot compile (a
//! wrong keyword type, a remote `$ref`, a pattern only a backtracking
//! engine runs) is an error naming the rule at build and lint time.
//!
//! Why the `jsonschema` crate and not schemas compiled to automata by this
//! compiler: draft 2020-12 has references, dynamic scopes, `oneOf` counts
//! and `unevaluatedProperties`, none of which lowers to predicates over
//! atoms; a validator that passes the official test suite is worth more
//! than a partial one that fits the IR.

use crate::ir::{AtomKind, AtomTable};
use crate::regex_check::check_regex;
use crate::source::SchemaRule;
use parallax_runtime::arg_schema::{self, ArgSchema};
use parallax_runtime::{Action, Check, CheckOp, FieldRef, Predicate};

/// The default place of the arguments.
const ARGS_FIELD: &str = "tool_args";

/// The predicate of one `schema` rule.
pub fn lower(r: &SchemaRule, table: &mut AtomTable) -> Result<Predicate, String> {
    if r.action == Action::Redact {
        return Err(
            "action `redact`: a schema rule can `block`, `approve` or `detect` (arguments \
             outside a schema have no matched text to rewrite)"
                .into(),
        );
    }
    let tools = r.tool.as_slice();
    if tools.is_empty() || tools.iter().any(|t| t.trim().is_empty()) {
        return Err("`tool`: name at least one tool, and no empty name".into());
    }
    let pattern = tools_pattern(tools);
    check_regex(&pattern)?;
    let field_name = r.field.as_deref().unwrap_or(ARGS_FIELD);
    let field = FieldRef::parse(field_name).map_err(|e| format!("`field`: {e}"))?;
    if !matches!(field, FieldRef::Json { .. }) {
        return Err(format!(
            "`field: {field_name}`: a schema applies to a JSON part of the event \
             (`tool_args` or a path below it, `tool_result`, `params`)"
        ));
    }
    arg_schema::compile(&r.schema).map_err(|e| format!("`schema`: {e}"))?;
    let tool_name = FieldRef::parse("tool_name").map_err(|e| e.to_string())?;
    let named = table.atom(
        tool_name,
        AtomKind::Regex {
            pattern,
            validator: None,
        },
    );
    let check = table.check(Check {
        field,
        op: CheckOp::Schema(ArgSchema::new(r.schema.clone())),
    });
    Ok(Predicate::And(vec![
        Predicate::Atom(named),
        Predicate::Check(check),
    ]))
}

/// `^(?:a|b*)$` for the names and globs `a`, `b*`: `*` is any run of
/// characters, `?` one character, everything else itself.
pub fn tools_pattern(tools: &[String]) -> String {
    let alternatives: Vec<String> = tools
        .iter()
        .map(|t| {
            let mut out = String::with_capacity(t.len() + 4);
            for c in t.chars() {
                match c {
                    '*' => out.push_str(".*"),
                    '?' => out.push('.'),
                    c => out.push_str(&regex_syntax::escape(c.encode_utf8(&mut [0; 4]))),
                }
            }
            out
        })
        .collect();
    format!("^(?:{})$", alternatives.join("|"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_become_an_anchored_alternation() {
        let p = tools_pattern(&["Bash".into(), "mcp__fs__*".into(), "a.b?".into()]);
        assert_eq!(p, r"^(?:Bash|mcp__fs__.*|a\.b.)$");
        let re = regex_automata::meta::Regex::new(&p).expect("compiles");
        assert!(re.is_match("mcp__fs__write_file"));
        assert!(re.is_match("a.bc"));
        assert!(!re.is_match("BashX"));
        assert!(!re.is_match("axbc"));
    }
}
