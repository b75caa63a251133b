//! Lowering CEL rules: parse, resolve Parallax's old flattened names,
//! type-check against the event's variables, and turn string-matching
//! calls on event fields into atoms of the shared automata.
//!
//! `command.contains("curl")` must not run a substring search (or compile a
//! regex, for `matches`) per evaluation and must not scan `command` a
//! second time: the field is already scanned once for every rule, so the
//! call becomes an atom of that scan and the expression only reads its bit.

use crate::ir::{AtomKind, AtomTable};
use crate::source::CelRule;
use parallax_cel::ast::{Expr, ExprKind, Literal, Span, UnaryOp};
use parallax_cel::{CelType, Declarations, Program, SourceError};
use parallax_runtime::{CelExpr, FieldRef, JsonRoot, Predicate, CANONICAL_NAMES, TOP_FIELD_NAMES};

/// Event variables and their static types.
pub fn declarations() -> Declarations {
    let mut d = Declarations::default();
    // Every plain and canonical field is a string variable, under the
    // names rules use (one table, `parallax_runtime::field`).
    let names = TOP_FIELD_NAMES
        .iter()
        .map(|(n, _)| *n)
        .chain(CANONICAL_NAMES.iter().map(|(n, _)| *n));
    for name in names {
        d.declare(name, CelType::String);
    }
    d.declare("timestamp", CelType::Double);
    // Arguments and results may be any JSON (a bare string, an object…).
    d.declare("tool_args", CelType::Dyn);
    d.declare("tool_result", CelType::Dyn);
    d.declare(
        "params",
        CelType::Map(Box::new(CelType::String), Box::new(CelType::Dyn)),
    );
    // The approval triggers (`parallax_runtime::triggers`) and the
    // compiled classifiers (`parallax_runtime::classifier`).
    let host = parallax_runtime::triggers::SIGNATURES
        .iter()
        .chain(parallax_runtime::classifier::SIGNATURES.iter());
    for (name, args, result) in host {
        let t = |n: &str| CelType::parse(n).unwrap_or(CelType::Dyn);
        d.declare_function(name, args.iter().map(|a| t(a)).collect(), t(result));
    }
    d
}

/// What the triggers need from the config's `policy:` section: the lists
/// `external_recipient()` and `vip_recipient()` compare with, filled in as
/// their argument when a rule calls them without one.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    #[serde(default)]
    pub internal_domains: Vec<String>,
    #[serde(default)]
    pub vip_recipients: Vec<String>,
}

/// `external_recipient()` → `external_recipient([internal domains])`, same
/// for `vip_recipient()`; checks `after_hours`' literal arguments.
fn fill_triggers(e: &mut Expr, policy: &PolicyConfig, next_id: &mut u32) -> Result<(), String> {
    if let ExprKind::Call {
        target: None,
        function,
        args,
    } = &mut e.kind
    {
        let list = match function.as_str() {
            "external_recipient" => Some(&policy.internal_domains),
            "vip_recipient" => Some(&policy.vip_recipients),
            _ => None,
        };
        if let Some(list) = list.filter(|_| args.is_empty()) {
            let span = e.span;
            let mut item = |kind| {
                *next_id += 1;
                Expr {
                    id: *next_id,
                    span,
                    kind,
                }
            };
            let items = list
                .iter()
                .map(|d| item(ExprKind::Literal(Literal::String(d.clone()))))
                .collect();
            let list = item(ExprKind::List(items));
            args.push(list);
        }
        if function == "after_hours" {
            if let [a, b, c] = args.as_slice() {
                if let (
                    ExprKind::Literal(Literal::String(tz)),
                    ExprKind::Literal(Literal::String(start)),
                    ExprKind::Literal(Literal::String(end)),
                ) = (&a.kind, &b.kind, &c.kind)
                {
                    parallax_runtime::triggers::check_after_hours(tz, start, end)
                        .map_err(|m| format!("after_hours: {m}"))?;
                }
            }
        }
    }
    for (child, _) in children(e) {
        fill_triggers(child, policy, next_id)?;
    }
    Ok(())
}

const ROOTS: [(&str, JsonRoot); 3] = [
    ("tool_args", JsonRoot::ToolArgs),
    ("tool_result", JsonRoot::ToolResult),
    ("params", JsonRoot::Params),
];

/// Parses, checks and lowers one rule's expression; the error shows the
/// expression with a caret under the offending part.
pub fn lower_cel(
    r: &CelRule,
    table: &mut AtomTable,
    policy: &PolicyConfig,
) -> Result<Predicate, String> {
    lower_expr(&r.expr, table, policy)
}

/// [`lower_cel`] for an expression on its own (policies' translated `when`).
pub fn lower_expr(
    src: &str,
    table: &mut AtomTable,
    policy: &PolicyConfig,
) -> Result<Predicate, String> {
    let show = |e: SourceError| e.to_string();
    let program = Program::parse(src).map_err(show)?;
    let mut expr = program.expr;
    let mut next_id = max_id(&expr) + 1;
    resolve_aliases(&mut expr, &mut Vec::new(), &mut next_id);
    fill_triggers(&mut expr, policy, &mut next_id)?;
    let program = Program::from_expr(src, expr);
    let decls = declarations();
    let t = program.check(&decls).map_err(show)?;
    if !matches!(t, CelType::Bool | CelType::Dyn) {
        return Err(show(SourceError::new(
            "type error",
            format!("a rule's expression must be bool, this one is {t}"),
            src,
            program.expr.span,
        )));
    }
    let mut expr = program.expr;
    let mut lowering = Atoms {
        table,
        atom_fields: Vec::new(),
        atoms: Vec::new(),
        positive: Vec::new(),
    };
    lowering.rewrite(&mut expr, &mut Vec::new(), false);
    let Atoms {
        table,
        atom_fields,
        mut atoms,
        mut positive,
    } = lowering;
    atoms.sort_unstable();
    atoms.dedup();
    positive.sort_unstable();
    positive.dedup();
    let index = table.cel.len() as u32;
    table.cel.push(CelExpr {
        source: src.to_string(),
        expr,
        atom_fields,
    });
    Ok(Predicate::Cel {
        index,
        atoms,
        positive,
    })
}

fn max_id(e: &Expr) -> u32 {
    let mut m = 0;
    e.walk(&mut |n| m = m.max(n.id));
    m
}

/// Children of a node, mutably, with the comprehension variable each one
/// sees (if any).
fn children(e: &mut Expr) -> Vec<(&mut Expr, Option<String>)> {
    match &mut e.kind {
        ExprKind::Literal(_) | ExprKind::Ident { .. } | ExprKind::Atom(_) => vec![],
        ExprKind::Select { operand, .. } | ExprKind::Unary { operand, .. } => {
            vec![(operand, None)]
        }
        ExprKind::Index { operand, index } => vec![(operand, None), (index, None)],
        ExprKind::Call { target, args, .. } => {
            let mut v: Vec<(&mut Expr, Option<String>)> = Vec::new();
            if let Some(t) = target {
                v.push((t, None));
            }
            v.extend(args.iter_mut().map(|a| (a, None)));
            v
        }
        ExprKind::Binary { left, right, .. }
        | ExprKind::And(left, right)
        | ExprKind::Or(left, right) => vec![(left, None), (right, None)],
        ExprKind::Conditional {
            condition,
            then,
            otherwise,
        } => vec![(condition, None), (then, None), (otherwise, None)],
        ExprKind::List(items) => items.iter_mut().map(|i| (i, None)).collect(),
        ExprKind::Map(entries) => entries
            .iter_mut()
            .flat_map(|(k, v)| [(k, None), (v, None)])
            .collect(),
        ExprKind::Comprehension {
            range,
            var,
            filter,
            body,
            ..
        } => {
            let var = var.clone();
            let mut v: Vec<(&mut Expr, Option<String>)> = vec![(range, None)];
            if let Some(f) = filter {
                v.push((f, Some(var.clone())));
            }
            v.push((body, Some(var)));
            v
        }
    }
}

/// `tool_args_file_path` (Parallax's original flattened names) means
/// `tool_args.file_path`; likewise for `tool_result_` and `params_`.
fn resolve_aliases(e: &mut Expr, locals: &mut Vec<String>, next_id: &mut u32) {
    if let ExprKind::Ident {
        name,
        absolute: false,
    } = &e.kind
    {
        if !locals.contains(name) {
            for (root, _) in ROOTS {
                if let Some(key) = name
                    .strip_prefix(root)
                    .and_then(|r| r.strip_prefix('_'))
                    .filter(|k| !k.is_empty())
                {
                    let id = *next_id;
                    *next_id += 1;
                    let root_span = Span {
                        start: e.span.start,
                        end: e.span.start + root.len() as u32,
                    };
                    e.kind = ExprKind::Select {
                        operand: Box::new(Expr {
                            id,
                            span: root_span,
                            kind: ExprKind::Ident {
                                name: root.to_string(),
                                absolute: false,
                            },
                        }),
                        field: key.to_string(),
                        test: false,
                    };
                    return;
                }
            }
        }
    }
    for (child, var) in children(e) {
        let pushed = var.is_some();
        if let Some(v) = var {
            locals.push(v);
        }
        resolve_aliases(child, locals, next_id);
        if pushed {
            locals.pop();
        }
    }
}

/// The event field an expression reads, when it is one the scanner knows:
/// a top-level string, a canonical field, or a chain of field selections
/// (or string-literal indexes) under `tool_args`, `tool_result`, `params`.
pub fn event_field(e: &Expr, locals: &[String]) -> Option<FieldRef> {
    match &e.kind {
        ExprKind::Ident { name, .. } => {
            if locals.contains(name) {
                return None;
            }
            if name == "timestamp" {
                return None;
            }
            let f = FieldRef::parse(name).ok()?;
            Some(f)
        }
        ExprKind::Select {
            operand,
            field,
            test: false,
        } => json_child(operand, field, locals),
        ExprKind::Index { operand, index } => match &index.kind {
            ExprKind::Literal(Literal::String(key)) if !key.contains('.') && !key.is_empty() => {
                json_child(operand, key, locals)
            }
            _ => None,
        },
        _ => None,
    }
}

fn json_child(operand: &Expr, key: &str, locals: &[String]) -> Option<FieldRef> {
    match event_field(operand, locals)? {
        FieldRef::Json { root, mut path } => {
            path.push(key.to_string());
            Some(FieldRef::Json { root, path })
        }
        _ => None,
    }
}

struct Atoms<'t> {
    table: &'t mut AtomTable,
    atom_fields: Vec<(u32, FieldRef)>,
    atoms: Vec<u32>,
    positive: Vec<u32>,
}

impl Atoms<'_> {
    fn rewrite(&mut self, e: &mut Expr, locals: &mut Vec<String>, negated: bool) {
        if let Some((field, kind)) = atom_call(e, locals) {
            let id = self.table.atom(field.clone(), kind);
            e.kind = ExprKind::Atom(id);
            if !self.atom_fields.iter().any(|(a, _)| *a == id) {
                self.atom_fields.push((id, field));
            }
            self.atoms.push(id);
            if !negated {
                self.positive.push(id);
            }
            return;
        }
        let flips = matches!(
            e.kind,
            ExprKind::Unary {
                op: UnaryOp::Not,
                ..
            }
        );
        for (child, var) in children(e) {
            let pushed = var.is_some();
            if let Some(v) = var {
                locals.push(v);
            }
            self.rewrite(child, locals, negated ^ flips);
            if pushed {
                locals.pop();
            }
        }
    }
}

/// `field.contains("lit")`, `.startsWith`, `.endsWith`, `.matches("re")`
/// (or `matches(field, "re")`) on an event field: the atom that answers it.
fn atom_call(e: &Expr, locals: &[String]) -> Option<(FieldRef, AtomKind)> {
    let ExprKind::Call {
        target,
        function,
        args,
    } = &e.kind
    else {
        return None;
    };
    let (subject, lit) = match (target, args.as_slice()) {
        (Some(t), [a]) => (&**t, a),
        (None, [t, a]) if function == "matches" => (t, a),
        _ => return None,
    };
    let ExprKind::Literal(Literal::String(lit)) = &lit.kind else {
        return None;
    };
    let field = event_field(subject, locals)?;
    let escaped = regex_syntax::escape(lit);
    let kind = match function.as_str() {
        // An empty needle matches every string; the interpreter handles it.
        _ if lit.is_empty() => return None,
        "contains" => AtomKind::Literal {
            text: lit.clone(),
            case_insensitive: false,
        },
        "startsWith" => AtomKind::Regex {
            pattern: format!(r"\A{escaped}"),
            validator: None,
        },
        "endsWith" => AtomKind::Regex {
            pattern: format!(r"{escaped}\z"),
            validator: None,
        },
        "matches" => AtomKind::Regex {
            pattern: lit.clone(),
            validator: None,
        },
        _ => return None,
    };
    Some((field, kind))
}
