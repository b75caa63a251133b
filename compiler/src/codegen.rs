//! Generating the baked module: Rust source for the predicates, plus the
//! files it embeds (the program as JSON, one serialized DFA per shard).
//!
//! The output is deterministic (same rules, same bytes) and formatted with
//! prettyplease, so `parallax compile --emit rust` shows exactly what the
//! binary contains and a diff of two builds shows what changed.

use crate::plan::Compiled;
use parallax_runtime::{CelExpr, Check, CheckOp, NumCmp, Predicate, TextMode};
use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;
use std::io;
use std::path::{Path, PathBuf};

/// Name of the generated module file inside the output directory.
pub const MODULE_FILE: &str = "baked.rs";
const PROGRAM_FILE: &str = "program.json";
/// `compile --emit stats` text of the baked rules.
pub const STATS_FILE: &str = "stats.txt";

fn shard_file(field: usize, shard: usize) -> String {
    format!("dfa_f{field}_s{shard}.bin")
}

/// A call to the typed helper of a check, its constants inlined; the
/// field (a path, which Rust cannot build in a constant) is read from the
/// program's check table.
fn check_tokens(index: u32, check: &Check) -> TokenStream {
    let n = proc_macro2::Literal::usize_unsuffixed(index as usize);
    let field = quote!(&i.checks[#n].field);
    match &check.op {
        CheckOp::Exists => quote!(parallax_runtime::check::exists(i.event, #field)),
        CheckOp::NullOrEmpty => quote!(parallax_runtime::check::null_or_empty(i.event, #field)),
        CheckOp::Num { cmp, value } => {
            let cmp = match cmp {
                NumCmp::Eq => quote!(Eq),
                NumCmp::Gt => quote!(Gt),
                NumCmp::Gte => quote!(Gte),
                NumCmp::Lt => quote!(Lt),
                NumCmp::Lte => quote!(Lte),
            };
            let v = proc_macro2::Literal::f64_suffixed(*value);
            quote!(parallax_runtime::check::num(i.event, #field, parallax_runtime::NumCmp::#cmp, #v))
        }
        CheckOp::Bool(b) => quote!(parallax_runtime::check::boolean(i.event, #field, #b)),
        CheckOp::Cidr { v6, net, prefix } => {
            let net = proc_macro2::Literal::u128_suffixed(*net);
            let prefix = proc_macro2::Literal::u8_suffixed(*prefix);
            quote!(parallax_runtime::check::cidr(i.event, #field, #v6, #net, #prefix))
        }
        CheckOp::FieldRef { mode, cased, .. } => {
            let mode = match mode {
                TextMode::Equals => quote!(Equals),
                TextMode::Contains => quote!(Contains),
                TextMode::StartsWith => quote!(StartsWith),
                TextMode::EndsWith => quote!(EndsWith),
            };
            quote!(parallax_runtime::check::fieldref(
                i.event,
                #field,
                i.checks[#n].other(),
                parallax_runtime::TextMode::#mode,
                #cased
            ))
        }
        // The schema's validator is built at start-up, not in generated
        // code: the check itself holds it.
        CheckOp::Schema(_) => quote!(i.checks[#n].eval(i.event)),
        // A handful of tenant names, read from the check table.
        CheckOp::OneOf(_) => quote!(i.checks[#n].eval(i.event)),
    }
}

/// Straight-line Rust for one predicate (`cel` and `checks`: the program's
/// CEL expressions and checks, which `Predicate::Cel` and `Predicate::Check`
/// refer to).
fn predicate_tokens(p: &Predicate, cel: &[CelExpr], checks: &[Check]) -> TokenStream {
    match p {
        Predicate::Const(true) => quote!(true),
        Predicate::Const(false) => quote!(false),
        Predicate::Atom(a) => {
            let a = proc_macro2::Literal::u32_unsuffixed(*a);
            quote!(i.atom(#a))
        }
        Predicate::Check(c) => match checks.get(*c as usize) {
            Some(check) => check_tokens(*c, check),
            // The compiler numbers checks itself; an index past the table
            // would be a compiler bug, and the runtime check panics the same
            // way the interpreter's indexing would.
            None => {
                let n = proc_macro2::Literal::usize_unsuffixed(*c as usize);
                quote!(i.checks[#n].eval(i.event))
            }
        },
        Predicate::Not(q) => {
            let q = predicate_tokens(q, cel, checks);
            quote!(!(#q))
        }
        Predicate::And(ps) | Predicate::Or(ps) if ps.is_empty() => {
            if matches!(p, Predicate::And(_)) {
                quote!(true)
            } else {
                quote!(false)
            }
        }
        Predicate::And(ps) => {
            let ps = ps.iter().map(|q| predicate_tokens(q, cel, checks));
            quote!(#( (#ps) )&&*)
        }
        Predicate::Or(ps) => {
            let ps = ps.iter().map(|q| predicate_tokens(q, cel, checks));
            quote!(#( (#ps) )||*)
        }
        Predicate::Cel { index, .. } => match cel.get(*index as usize) {
            Some(c) => crate::cel_codegen::rule_tokens(*index, c),
            // The lowering always pushes the expression it refers to.
            None => quote!(false),
        },
    }
}

/// A Rust identifier for a rule: its index (unique) plus its id, cleaned.
fn rule_fn(index: usize, id: &str) -> Ident {
    let clean: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    Ident::new(&format!("rule_{index}_{clean}"), Span::call_site())
}

/// The generated module's source.
pub fn generate_rust(c: &Compiled) -> String {
    generate_rust_at(c, "")
}

/// The generated module for files written with [`write_baked_at`] and the
/// same `prefix`: several rule sets can then be baked into one `OUT_DIR`
/// (the build script bakes a test fixture beside the shipped rules).
pub fn generate_rust_at(c: &Compiled, prefix: &str) -> String {
    let p = &c.program;
    let fingerprint = &p.fingerprint;
    let rule_count = proc_macro2::Literal::usize_unsuffixed(p.rules.len());
    let header = format!(
        " Generated by parallax-compiler {} from {} rules ({} evaluators). Do not edit:\n \
         change the rules and rebuild. Inspect with `parallax compile --emit rust`.",
        env!("CARGO_PKG_VERSION"),
        p.rules.len(),
        p.evaluators.len()
    );

    let mut shard_statics = Vec::new();
    let mut field_tables = Vec::new();
    for (fi, field) in p.fields.iter().enumerate() {
        let mut names = Vec::new();
        for si in 0..field.shards.len() {
            let name = Ident::new(&format!("F{fi}_S{si}"), Span::call_site());
            let file = format!("{prefix}{}", shard_file(fi, si));
            let doc = format!(
                " Field `{}`, shard {si}: {} patterns.",
                field.field,
                field.shards[si].atoms.len()
            );
            shard_statics.push(quote! {
                #[doc = #doc]
                static #name: &Aligned<[u8]> = &Aligned {
                    _align: [],
                    bytes: *include_bytes!(concat!(env!("OUT_DIR"), "/", #file)),
                };
            });
            names.push(name);
        }
        field_tables.push(quote!(&[#(&#names.bytes),*]));
    }

    let mut fns = Vec::new();
    let mut fn_names = Vec::new();
    for (ri, rule) in p.rules.iter().enumerate() {
        let name = rule_fn(ri, &rule.id);
        let body = predicate_tokens(&rule.predicate, &p.cel, &p.checks);
        let doc = format!(
            " `{}` ({}, evaluator `{}`): {}",
            rule.id, rule.action, p.evaluators[rule.evaluator as usize].name, rule.title
        );
        let uses_input = !matches!(rule.predicate, Predicate::Const(_));
        let arg = if uses_input { quote!(i) } else { quote!(_i) };
        fns.push(quote! {
            #[doc = #doc]
            fn #name(#arg: &PredicateInput<'_>) -> bool {
                #body
            }
        });
        fn_names.push(name);
    }

    let cel_imports = if p.cel.is_empty() {
        quote!()
    } else {
        quote! {
            #[allow(unused_imports)]
            use parallax_runtime::cel::native::{self, Cmp};
            #[allow(unused_imports)]
            use parallax_runtime::cel::Scalar;
            #[allow(unused_imports)]
            use parallax_runtime::{Canonical, JsonRoot, TopField};
        }
    };
    let program_file = format!("{prefix}{PROGRAM_FILE}");
    let tokens = quote! {
        use parallax_runtime::{CompiledPredicate, PredicateInput};
        #cel_imports

        /// Fingerprint of the rules baked into this binary.
        pub const FINGERPRINT: &str = #fingerprint;

        /// The program (rules, atoms, field plans) the predicates belong to.
        pub const PROGRAM_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/", #program_file));

        /// Serialized DFAs must be read at 4-byte alignment to be used in place.
        #[repr(C)]
        struct Aligned<T: ?Sized> {
            _align: [u32; 0],
            bytes: T,
        }

        #(#shard_statics)*

        /// Serialized DFA shards, per scanned field, in program order.
        pub static DFA_SHARDS: &[&[&[u8]]] = &[#(#field_tables),*];

        /// One predicate per rule, in program order.
        pub static PREDICATES: [CompiledPredicate; #rule_count] = [#(#fn_names),*];

        #(#fns)*
    };
    // A plain comment, not `//!`: the module is pulled in with `include!`,
    // where inner attributes are not allowed.
    let header: String = header.lines().map(|l| format!("//{l}\n")).collect();
    match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(file) => header + &prettyplease::unparse(&file),
        // Unformatted but still valid Rust: never lose the output.
        Err(_) => header + &tokens.to_string(),
    }
}

/// Writes the baked module and its embedded files into `dir`; returns the
/// files written.
pub fn write_baked(c: &Compiled, dir: &Path, big_endian: bool) -> io::Result<Vec<PathBuf>> {
    write_baked_at(c, dir, big_endian, "")
}

/// [`write_baked`] with every file name prefixed by `prefix`.
pub fn write_baked_at(
    c: &Compiled,
    dir: &Path,
    big_endian: bool,
    prefix: &str,
) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    let mut write = |name: &str, bytes: &[u8]| -> io::Result<()> {
        let path = dir.join(format!("{prefix}{name}"));
        // Leave unchanged files alone so their mtime does not trigger rebuilds.
        if std::fs::read(&path).ok().as_deref() != Some(bytes) {
            std::fs::write(&path, bytes)?;
        }
        written.push(path);
        Ok(())
    };
    for (fi, shards) in c.dfas.iter().enumerate() {
        for (si, dfa) in shards.iter().enumerate() {
            let (bytes, pad) = if big_endian {
                dfa.to_bytes_big_endian()
            } else {
                dfa.to_bytes_little_endian()
            };
            write(&shard_file(fi, si), &bytes[pad..])?;
        }
    }
    let json = serde_json::to_vec_pretty(&c.program).map_err(io::Error::other)?;
    write(PROGRAM_FILE, &json)?;
    write(MODULE_FILE, generate_rust_at(c, prefix).as_bytes())?;
    write(
        STATS_FILE,
        c.stats_with_literal_bytes().to_string().as_bytes(),
    )?;
    Ok(written)
}
