//! ATR correlation rules (`detection.trace`, `detection.behavioral`)
//! lowered to SQL rules over the side-store's window of a session's events.
//!
//! An ATR trace rule speaks of OpenInference *spans*: a kind (`TOOL`,
//! `RETRIEVER`, `AGENT`, `HUMAN` …) and attributes. In Parallax a span is one
//! event of a session (the trace is the session): its kind and attributes
//! are read from the event's `metadata` (`{"span_kind": "TOOL",
//! "attributes": {...}}`, recorded in the side-store's `metadata` column),
//! and a plain Parallax event stands for the span it is when it carries no
//! metadata: a `tool.before` call is a `TOOL` span (its `tool_name` is
//! `tool.name`, its arguments `tool.args`), a `tool.after` result a
//! `TOOL_RESPONSE`, a `response.after` reply an `LLM` span. docs/ATR.md
//! documents the mapping.
//!
//! The primitives and what each becomes, judged on the current event (the
//! newest row) against the session's earlier rows:
//! - `forbid: [{shape, preceded_by?}]`: the current span has the shape (and
//!   an earlier span has the `preceded_by` shape);
//! - `require: [{target_shape, must_be_preceded_by}]`: the current span has
//!   the target shape and no earlier span has a required one;
//! - `invariant: [{attribute, across}]`: the current span and an earlier one
//!   share the `across` value but differ on `attribute` (both present);
//! - `behavioral` (`aggregation: count`, `group_by: [session.id]`): the
//!   spans passing `filter` within `window` number more than `threshold`
//!   (and at least `min_events`), and the rule has not fired in the session
//!   within `cooldown`. A span tagged `attributes.policy_exemption` (ATR's
//!   convention for scheduled batch jobs) is not counted.
//!
//! Shapes match `span.kind` and attributes by value (string, number,
//! boolean), `in: [...]`, `not_equals`, `exists`, and the placeholder
//! `${span.attributes.X}` (the same span's attribute X). A dotted attribute
//! name is found flat (`"tool.args.x"`) or nested (`tool.args` → `x`).
//! Anything else is reported unsupported with the reason, never guessed.
//!
//! Every search walks at most [`WALK`] of the session's newest rows, so a
//! rule's cost does not grow with the session (docs/SQL.md).

use parallax_runtime::{Stage, StageSet};
use serde_yaml::Value;

/// Rows of the session's window a correlation search walks, newest first.
pub const WALK: u32 = 1000;

/// A correlation rule as a SQL rule: the query, the condition on its first
/// row, and the stages it is judged at.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceSql {
    pub query: String,
    pub condition: String,
    pub stages: StageSet,
}

/// Lowers the `trace` or `behavioral` block of an ATR detection. `Ok(None)`:
/// the rule has neither. `Err`: a construct this lowering does not know
/// (the rule is then reported unsupported with that reason).
pub fn lower(
    rule_id: &str,
    trace: Option<&Value>,
    behavioral: Option<&Value>,
) -> Result<Option<TraceSql>, String> {
    if let Some(b) = behavioral {
        return behavioral_sql(rule_id, b).map(Some);
    }
    match trace {
        Some(t) => trace_sql(t).map(Some),
        None => Ok(None),
    }
}

/// A SQL string literal.
fn lit(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The span kind of row `a`: its metadata's, else the kind its stage stands for.
fn kind(a: &str) -> String {
    format!(
        "COALESCE(json_extract({a}.metadata, '$.span_kind'), CASE {a}.stage \
         WHEN 'tool.before' THEN 'TOOL' WHEN 'tool.after' THEN 'TOOL_RESPONSE' \
         WHEN 'response.after' THEN 'LLM' END)"
    )
}

/// JSON paths under `root` for a dotted name: every way of grouping its
/// segments into keys, the flat key first (`"a.b"`, then `a` → `b`).
fn paths(root: &str, name: &str) -> Result<Vec<String>, String> {
    if name.is_empty() || name.contains(['"', '\\', '\'']) {
        return Err(format!("attribute name `{name}` cannot be looked up"));
    }
    let segs: Vec<&str> = name.split('.').collect();
    if segs.len() > 6 || segs.iter().any(|s| s.is_empty()) {
        return Err(format!(
            "attribute name `{name}` has too many or empty parts"
        ));
    }
    let gaps = segs.len() - 1;
    let mut out = Vec::new();
    // Bit i set: a key boundary after segment i. Fewest boundaries first.
    let mut masks: Vec<u32> = (0..(1u32 << gaps)).collect();
    masks.sort_by_key(|m| m.count_ones());
    for m in masks {
        let mut p = root.to_string();
        let mut key = segs[0].to_string();
        for (i, s) in segs.iter().enumerate().skip(1) {
            if m & (1 << (i - 1)) != 0 {
                p.push_str(&format!(".\"{key}\""));
                key = s.to_string();
            } else {
                key.push('.');
                key.push_str(s);
            }
        }
        p.push_str(&format!(".\"{key}\""));
        out.push(p);
    }
    Ok(out)
}

/// `json_extract` (or `json_type`) of attribute `name` of row `a`, falling
/// back to the native fields a plain event has.
fn attr_with(a: &str, name: &str, func: &str) -> Result<String, String> {
    let mut parts: Vec<String> = paths("$.attributes", name)?
        .into_iter()
        .map(|p| format!("{func}({a}.metadata, {})", lit(&p)))
        .collect();
    if name == "tool.name" {
        parts.push(if func == "json_type" {
            format!("CASE WHEN {a}.tool_name IS NOT NULL THEN 'text' END")
        } else {
            format!("{a}.tool_name")
        });
    } else if let Some(rest) = name.strip_prefix("tool.args.") {
        for p in paths("$", rest)? {
            parts.push(format!("{func}({a}.tool_args, {})", lit(&p)));
        }
    }
    // SQLite's COALESCE takes two arguments or more.
    Ok(if parts.len() == 1 {
        parts.remove(0)
    } else {
        format!("COALESCE({})", parts.join(", "))
    })
}

fn attr(a: &str, name: &str) -> Result<String, String> {
    attr_with(a, name, "json_extract")
}

/// A scalar of a shape as SQL, or the placeholder `${span.attributes.X}`.
fn scalar(a: &str, v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => match s
            .strip_prefix("${span.attributes.")
            .and_then(|r| r.strip_suffix('}'))
        {
            Some(name) => attr(a, name),
            None if s.contains("${") => Err(format!("placeholder `{s}` is not supported")),
            None => Ok(lit(s)),
        },
        Value::Number(n) => Ok(n.to_string()),
        other => Err(format!("value {other:?} is not a string or number")),
    }
}

/// One attribute's matcher as a SQL condition on row `a`.
fn matcher(a: &str, name: &str, m: &Value) -> Result<String, String> {
    let value = || attr(a, name);
    let typed = || attr_with(a, name, "json_type");
    Ok(match m {
        Value::Bool(b) => format!("{} IS {}", typed()?, lit(if *b { "true" } else { "false" })),
        Value::String(_) | Value::Number(_) => format!("{} = {}", value()?, scalar(a, m)?),
        Value::Mapping(map) => {
            let mut all = Vec::new();
            for (k, v) in map {
                let k = k.as_str().unwrap_or_default();
                all.push(match (k, v) {
                    ("in", Value::Sequence(items)) => {
                        let items: Result<Vec<String>, String> =
                            items.iter().map(|i| scalar(a, i)).collect();
                        format!("{} IN ({})", value()?, items?.join(", "))
                    }
                    ("not_equals", Value::Bool(b)) => {
                        format!(
                            "{} IS NOT {}",
                            typed()?,
                            lit(if *b { "true" } else { "false" })
                        )
                    }
                    ("not_equals", v) => format!("{} IS NOT {}", value()?, scalar(a, v)?),
                    ("equals", v) => matcher(a, name, v)?,
                    ("exists", Value::Bool(true)) => format!("{} IS NOT NULL", value()?),
                    ("exists", Value::Bool(false)) => format!("{} IS NULL", value()?),
                    (k, _) => return Err(format!("attribute matcher `{k}` is not supported")),
                });
            }
            if all.is_empty() {
                return Err(format!("attribute `{name}` has an empty matcher"));
            }
            format!("({})", all.join(" AND "))
        }
        other => {
            return Err(format!(
                "attribute `{name}`: matcher {other:?} is not supported"
            ))
        }
    })
}

/// A span shape (`span.kind`, `attributes`) as a SQL condition on row `a`,
/// with the kinds it names (none: any kind).
fn shape(a: &str, v: &Value) -> Result<(String, Vec<String>), String> {
    let Value::Mapping(map) = v else {
        return Err("a shape is a mapping".into());
    };
    if let Some(list) = map.get("one_of_shapes") {
        let Value::Sequence(items) = list else {
            return Err("`one_of_shapes` is a list".into());
        };
        let mut conds = Vec::new();
        let mut kinds = Vec::new();
        for i in items {
            let (c, k) = shape(a, i)?;
            conds.push(c);
            if k.is_empty() {
                kinds.clear();
                break;
            }
            kinds.extend(k);
        }
        if conds.is_empty() {
            return Err("`one_of_shapes` is empty".into());
        }
        return Ok((format!("({})", conds.join(" OR ")), kinds));
    }
    let mut conds = Vec::new();
    let mut kinds = Vec::new();
    for (k, val) in map {
        match k.as_str().unwrap_or_default() {
            "span.kind" => {
                match val {
                    Value::String(s) => kinds.push(s.clone()),
                    Value::Mapping(m) => match m.get("in") {
                        Some(Value::Sequence(items)) => {
                            for i in items {
                                kinds.push(i.as_str().ok_or("a span kind is a string")?.into());
                            }
                        }
                        _ => return Err("`span.kind` takes a kind or `in: [...]`".into()),
                    },
                    _ => return Err("`span.kind` takes a kind or `in: [...]`".into()),
                }
                let list: Vec<String> = kinds.iter().map(|k| lit(k)).collect();
                conds.push(format!("{} IN ({})", kind(a), list.join(", ")));
            }
            "attributes" => {
                let Value::Mapping(attrs) = val else {
                    return Err("`attributes` is a mapping".into());
                };
                for (name, m) in attrs {
                    let name = name.as_str().ok_or("an attribute name is a string")?;
                    conds.push(matcher(a, name, m)?);
                }
            }
            // Scope markers: a session is the trace.
            "within_trace" if val.as_bool() == Some(true) => {}
            other => return Err(format!("shape key `{other}` is not supported")),
        }
    }
    if conds.is_empty() {
        conds.push("1".into());
    }
    Ok((format!("({})", conds.join(" AND ")), kinds))
}

/// The stages a span of these kinds is judged at (no kind: every stage).
fn stages_of(kinds: &[String]) -> StageSet {
    if kinds.is_empty() {
        return StageSet::of(&Stage::ALL);
    }
    let mut s = StageSet::EMPTY;
    for k in kinds {
        let stage = match k.as_str() {
            "TOOL" => Stage::ToolBefore,
            "TOOL_RESPONSE" | "RETRIEVER" => Stage::ToolAfter,
            _ => Stage::ResponseAfter,
        };
        s = s.union(StageSet::of(&[stage]));
    }
    s
}

/// `EXISTS` an earlier row of the session (bounded walk) satisfying `cond`
/// on alias `p` (which may also name the current row, `cur`).
fn earlier(cond: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM (SELECT stage, tool_name, tool_args, metadata FROM events \
         WHERE session_id = :session_id AND id < (SELECT max(id) FROM events) \
         ORDER BY ts DESC LIMIT {WALK}) AS p WHERE {cond})"
    )
}

const CURRENT: &str =
    "FROM events AS cur WHERE cur.id = (SELECT max(id) FROM events) AND cur.session_id = :session_id";

fn list<'a>(v: &'a Value, key: &str) -> Result<&'a [Value], String> {
    match v.get(key) {
        None => Ok(&[]),
        Some(Value::Sequence(s)) => Ok(s),
        Some(_) => Err(format!("`trace.{key}` is a list")),
    }
}

fn trace_sql(t: &Value) -> Result<TraceSql, String> {
    if let Some(f) = t.get("ingest_format").and_then(Value::as_str) {
        if f != "openinference" {
            return Err(format!(
                "trace ingest_format `{f}` (only openinference spans)"
            ));
        }
    }
    if let Value::Mapping(m) = t {
        for k in m.keys() {
            let k = k.as_str().unwrap_or_default();
            if !matches!(k, "ingest_format" | "forbid" | "require" | "invariant") {
                return Err(format!("trace primitive `{k}` is not supported"));
            }
        }
    }
    let mut hits = Vec::new();
    let mut stages = StageSet::EMPTY;
    for f in list(t, "forbid")? {
        let target = f.get("shape").ok_or("a `forbid` entry needs `shape`")?;
        let (cur, kinds) = shape("cur", target)?;
        stages = stages.union(stages_of(&kinds));
        hits.push(match f.get("preceded_by") {
            Some(p) => format!("({cur} AND {})", earlier(&shape("p", p)?.0)),
            None => cur,
        });
    }
    for r in list(t, "require")? {
        let target = r
            .get("target_shape")
            .ok_or("a `require` entry needs `target_shape`")?;
        let before = r
            .get("must_be_preceded_by")
            .ok_or("a `require` entry needs `must_be_preceded_by`")?;
        let (cur, kinds) = shape("cur", target)?;
        stages = stages.union(stages_of(&kinds));
        hits.push(format!(
            "({cur} AND NOT {})",
            earlier(&shape("p", before)?.0)
        ));
    }
    for i in list(t, "invariant")? {
        let a = i
            .get("attribute")
            .and_then(Value::as_str)
            .ok_or("an `invariant` entry needs `attribute`")?;
        let across = i
            .get("across")
            .and_then(Value::as_str)
            .ok_or("an `invariant` entry needs `across`")?;
        if across == "trace" {
            return Err("`invariant` across the whole trace is not supported".into());
        }
        stages = StageSet::of(&Stage::ALL);
        let (ca, cx, pa, px) = (
            attr("cur", a)?,
            attr("cur", across)?,
            attr("p", a)?,
            attr("p", across)?,
        );
        hits.push(format!(
            "({ca} IS NOT NULL AND {cx} IS NOT NULL AND {})",
            earlier(&format!(
                "{px} = {cx} AND {pa} IS NOT NULL AND {pa} IS NOT {ca}"
            ))
        ));
    }
    if hits.is_empty() {
        return Err("the trace block has no forbid, require or invariant entry".into());
    }
    Ok(TraceSql {
        query: format!(
            "SELECT CASE WHEN {} THEN 1 ELSE 0 END AS hit {CURRENT}",
            hits.join(" OR ")
        ),
        condition: "hit == 1".into(),
        stages,
    })
}

/// Seconds in an ISO 8601 duration of the form `PT…H…M…S` (`P…D` too).
fn duration(s: &str) -> Result<u64, String> {
    let bad = || format!("duration `{s}` is not of the form PT1M / PT30S / P1D");
    let rest = s.strip_prefix('P').ok_or_else(bad)?;
    let (days, time) = match rest.split_once('T') {
        Some((d, t)) => (d, t),
        None => (rest, ""),
    };
    let mut total = 0u64;
    let mut add = |part: &str, units: &[(char, u64)]| -> Result<(), String> {
        let mut num = String::new();
        for c in part.chars() {
            if c.is_ascii_digit() {
                num.push(c);
                continue;
            }
            let (_, mult) = units.iter().find(|(u, _)| *u == c).ok_or_else(bad)?;
            let n: u64 = num.parse().map_err(|_| bad())?;
            total = total.saturating_add(n.saturating_mul(*mult));
            num.clear();
        }
        if num.is_empty() {
            Ok(())
        } else {
            Err(bad())
        }
    };
    add(days, &[('D', 86_400)])?;
    add(time, &[('H', 3600), ('M', 60), ('S', 1)])?;
    if total == 0 {
        return Err(bad());
    }
    Ok(total)
}

fn behavioral_sql(rule_id: &str, b: &Value) -> Result<TraceSql, String> {
    let get_u = |k: &str| b.get(k).and_then(Value::as_u64);
    match b.get("aggregation").and_then(Value::as_str) {
        Some("count") | None => {}
        Some(a) => return Err(format!("behavioral aggregation `{a}` (only count)")),
    }
    if let Some(g) = b.get("group_by") {
        let ok =
            matches!(g, Value::Sequence(s) if s.iter().all(|x| x.as_str() == Some("session.id")));
        if !ok {
            return Err("behavioral group_by other than [session.id]".into());
        }
    }
    let window = duration(
        b.get("window")
            .and_then(Value::as_str)
            .ok_or("behavioral `window` is required")?,
    )?;
    let threshold = get_u("threshold").ok_or("behavioral `threshold` is a whole number")?;
    let op = match b.get("operator").and_then(Value::as_str).unwrap_or("gt") {
        "gt" => ">",
        "gte" | "ge" => ">=",
        other => {
            return Err(format!(
                "behavioral operator `{other}` (a count floor: gt or gte)"
            ))
        }
    };
    let need = if op == ">" { threshold + 1 } else { threshold };
    if need > 10_000 {
        return Err(format!(
            "behavioral threshold {threshold} is past the session's row budget"
        ));
    }
    let min = get_u("min_events").unwrap_or(0);
    let kinds = match b.get("filter") {
        Some(f) => shape("cur", f)?.1,
        None => Vec::new(),
    };
    let counted = |a: &str| -> Result<String, String> {
        let filter = match b.get("filter") {
            Some(f) => shape(a, f)?.0,
            None => "1".into(),
        };
        Ok(format!(
            "({filter} AND {} IS NULL)",
            attr(a, "policy_exemption")?
        ))
    };
    let walk = (need * 4).max(u64::from(WALK));
    let count = format!(
        "CASE WHEN {} THEN (SELECT count(*) FROM (SELECT 1 FROM (SELECT stage, tool_name, \
         tool_args, metadata FROM events WHERE session_id = :session_id AND ts > :now - {window} \
         ORDER BY ts DESC LIMIT {walk}) AS p WHERE {} LIMIT {need})) ELSE 0 END AS n",
        counted("cur")?,
        counted("p")?
    );
    let cooling = match b.get("cooldown").and_then(Value::as_str) {
        Some(c) => format!(
            "(SELECT count(*) FROM (SELECT rule_ids FROM events WHERE session_id = :session_id \
             AND action IN ('detect', 'redact', 'block') AND ts > :now - {} \
             AND id < (SELECT max(id) FROM events) ORDER BY ts DESC LIMIT {WALK}) \
             WHERE EXISTS (SELECT 1 FROM json_each(rule_ids) WHERE value = {})) AS cooling",
            duration(c)?,
            lit(rule_id)
        ),
        None => "0 AS cooling".into(),
    };
    Ok(TraceSql {
        query: format!("SELECT {count}, {cooling} {CURRENT}"),
        condition: format!("n {op} {threshold} && n >= {min} && cooling == 0"),
        stages: stages_of(&kinds),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_names_are_found_flat_or_nested() {
        assert_eq!(
            paths("$.attributes", "tool.args.x").unwrap(),
            vec![
                "$.attributes.\"tool.args.x\"",
                "$.attributes.\"tool\".\"args.x\"",
                "$.attributes.\"tool.args\".\"x\"",
                "$.attributes.\"tool\".\"args\".\"x\"",
            ]
        );
        assert!(paths("$", "a\"b").is_err());
        assert!(paths("$", "a..b").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(duration("PT1M").unwrap(), 60);
        assert_eq!(duration("PT5M").unwrap(), 300);
        assert_eq!(duration("PT1H30S").unwrap(), 3630);
        assert_eq!(duration("P1D").unwrap(), 86_400);
        assert!(duration("1M").is_err());
        assert!(duration("PT").is_err());
        assert!(duration("PTXM").is_err());
    }

    #[test]
    fn unknown_constructs_are_reasons_not_guesses() {
        let t: Value = serde_yaml::from_str("{sequence: []}").unwrap();
        assert!(lower("X", Some(&t), None).unwrap_err().contains("sequence"));
        let b: Value =
            serde_yaml::from_str("{window: PT1M, threshold: 3, aggregation: avg}").unwrap();
        assert!(lower("X", None, Some(&b)).unwrap_err().contains("avg"));
        assert_eq!(lower("X", None, None).unwrap(), None);
    }
}
