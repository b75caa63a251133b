//! The budgets of `benches/budgets.toml` and the verdict line each bench
//! prints for them.
//!
//! Shared by the benches and by the `loadgen` binary (included by path), so
//! both judge figures against the same file the same way.

// Each bench includes only what it uses of this shared module.
#![allow(dead_code)]

use serde::Deserialize;
use std::path::Path;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budgets {
    pub budget: Vec<Budget>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    pub name: String,
    pub what: String,
    pub unit: String,
    pub max: Option<f64>,
    pub min: Option<f64>,
    /// For HTTP budgets: the concurrency they hold at.
    pub connections: Option<usize>,
}

impl Budgets {
    /// Reads `benches/budgets.toml` of this repository. A missing or broken
    /// file is fatal: a bench that silently judged nothing would look green.
    pub fn load() -> Budgets {
        // The workspace's file, also from a member crate's bench
        // (classifier/benches/): the first benches/budgets.toml upwards.
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .map(|d| d.join("benches/budgets.toml"))
            .find(|p| p.exists())
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/budgets.toml"));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let budgets: Budgets =
            toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for b in &budgets.budget {
            assert!(
                b.max.is_some() != b.min.is_some(),
                "{}: budget `{}` needs exactly one of `max` and `min`",
                path.display(),
                b.name
            );
        }
        budgets
    }

    pub fn get(&self, name: &str) -> &Budget {
        self.budget
            .iter()
            .find(|b| b.name == name)
            .unwrap_or_else(|| panic!("benches/budgets.toml has no budget `{name}`"))
    }

    /// Prints the verdict for `name` given the measured `value` (in the
    /// budget's unit) and returns whether it is within budget.
    pub fn check(&self, name: &str, value: f64) -> bool {
        let b = self.get(name);
        let (ok, limit) = match (b.max, b.min) {
            (Some(max), _) => (value <= max, format!("max {max} {}", b.unit)),
            (_, Some(min)) => (value >= min, format!("min {min} {}", b.unit)),
            (None, None) => unreachable!("checked in load"),
        };
        let verdict = if ok { "within budget" } else { "OVER BUDGET" };
        println!(
            "budget {:<24} {:>12.2} {:<6} ({limit:<16}) {verdict}  — {}",
            b.name, value, b.unit, b.what
        );
        ok
    }

    /// Prints that `name` has no measurement yet, and why.
    pub fn not_measured(&self, name: &str, why: &str) {
        let b = self.get(name);
        println!(
            "budget {:<24} {:>12} {:<6} not measured yet ({why})  — {}",
            b.name, "-", b.unit, b.what
        );
    }
}
