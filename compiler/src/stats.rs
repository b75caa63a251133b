//! Compile statistics (`parallax compile --emit stats`): what each rule
//! costs and which path each atom took, so rule authors see what is
//! expensive before it ships.

use parallax_runtime::{AtomPath, EngineKind};
use serde::Serialize;
use std::fmt;

#[derive(Debug, Clone, Serialize)]
pub struct Stats {
    pub fingerprint: String,
    pub build_ms: f64,
    pub evaluators: usize,
    pub rules: Vec<RuleStat>,
    pub fields: Vec<FieldStat>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RuleStat {
    pub id: String,
    pub evaluator: String,
    pub engine: EngineKind,
    /// Sum of the rule's atoms' DFA sizes, each built alone.
    pub dfa_cost: usize,
    pub atoms: Vec<AtomStat>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AtomStat {
    pub field: String,
    pub path: AtomPath,
    /// Why the atom left the DFA path, when it did.
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FieldStat {
    pub field: String,
    pub shard_bytes: Vec<usize>,
    pub literals: usize,
    pub verifiers: usize,
    /// Bytes of the field's Aho-Corasick automata (0: none).
    #[serde(default)]
    pub literal_bytes: usize,
}

fn kib(bytes: usize) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "fingerprint   {}", self.fingerprint)?;
        writeln!(f, "build time    {:.1} ms", self.build_ms)?;
        let per_engine: Vec<String> = EngineKind::ALL
            .iter()
            .map(|e| {
                format!(
                    "{e} {}",
                    self.rules.iter().filter(|r| r.engine == *e).count()
                )
            })
            .collect();
        writeln!(
            f,
            "rules         {} in {} evaluators ({})",
            self.rules.len(),
            self.evaluators,
            per_engine.join(", ")
        )?;
        let total: usize = self.fields.iter().flat_map(|x| &x.shard_bytes).sum();
        let shards: usize = self.fields.iter().map(|x| x.shard_bytes.len()).sum();
        writeln!(f, "automata      {shards} DFA shards, {}", kib(total))?;
        let ac: usize = self.fields.iter().filter(|x| x.literals > 0).count();
        let ac_bytes: usize = self.fields.iter().map(|x| x.literal_bytes).sum();
        let lits: usize = self.fields.iter().map(|x| x.literals).sum();
        writeln!(
            f,
            "literals      {lits} in {ac} Aho-Corasick automata, {}",
            kib(ac_bytes)
        )?;
        let mut per_path: std::collections::BTreeMap<&str, usize> = Default::default();
        for a in self.rules.iter().flat_map(|r| &r.atoms) {
            *per_path.entry(a.path.as_str()).or_default() += 1;
        }
        let paths: Vec<String> = per_path.iter().map(|(p, n)| format!("{p} {n}")).collect();
        writeln!(f, "atom paths    {}", paths.join(", "))?;
        writeln!(f)?;
        writeln!(
            f,
            "{:<24} {:>7} {:>12} {:>9} {:>10}",
            "field", "shards", "DFA bytes", "literals", "verifiers"
        )?;
        for x in &self.fields {
            writeln!(
                f,
                "{:<24} {:>7} {:>12} {:>9} {:>10}",
                x.field,
                x.shard_bytes.len(),
                kib(x.shard_bytes.iter().sum()),
                x.literals,
                x.verifiers
            )?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "{:<32} {:<8} {:>12}  atoms (field:path)",
            "rule", "engine", "DFA cost"
        )?;
        for r in &self.rules {
            let atoms: Vec<String> = r
                .atoms
                .iter()
                .map(|a| match &a.note {
                    Some(n) => format!("{}:{} ({n})", a.field, a.path.as_str()),
                    None => format!("{}:{}", a.field, a.path.as_str()),
                })
                .collect();
            writeln!(
                f,
                "{:<32} {:<8} {:>12}  {}",
                r.id,
                r.engine,
                kib(r.dfa_cost),
                atoms.join(", ")
            )?;
        }
        let backtracking: Vec<String> = self
            .rules
            .iter()
            .flat_map(|r| {
                r.atoms
                    .iter()
                    .enumerate()
                    .filter(|(_, a)| a.path == AtomPath::Backtrack)
                    .map(move |(i, a)| format!("{} atom {i} ({})", r.id, a.field))
            })
            .collect();
        writeln!(f)?;
        writeln!(
            f,
            "backtracking atoms ({}): bounded by a step limit, run only on a literal hit \
             unless they have no literal",
            backtracking.len()
        )?;
        for b in backtracking {
            writeln!(f, "  {b}")?;
        }
        Ok(())
    }
}
