//! Token and cost budgets on the model calls the proxy forwards
//! (`budgets:`). After each answer the proxy hands its usage here
//! ([`Budgets::record`]); before forwarding the next request it asks
//! whether the request's session or user has spent a limit
//! ([`Budgets::check`]), and a spent budget answers the agent with a block
//! naming the budget instead of reaching the model. Crossing `warn_at` of
//! a limit logs a warning and counts on `/metrics`.
//!
//! Per-user budgets run per UTC day. A model with no price in
//! `budgets.prices` is charged at the highest configured prices, so an
//! unpriced model can never slip past a cost limit; such answers are
//! counted (`parallax_budget_unpriced_answers_total`). A ledger that cannot
//! be read fails closed: the request is blocked with the reason.

pub mod ledger;
pub mod usage;

use crate::metrics::MetricsSource;
use crate::settings::{BudgetLimit, BudgetsSettings, ModelPrice};
use hyper::HeaderMap;
use ledger::{Entry, Ledger, LedgerError, Spent};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use usage::Usage;

/// What the limits say about a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Within,
    /// A limit is spent: the block text.
    Spent(String),
}

/// The budgets in force and their ledger.
pub struct Budgets {
    settings: BudgetsSettings,
    ledger: Ledger,
    counters: Arc<Counters>,
    /// (budget, session or user, day) already warned about, so a warning
    /// is logged once, not on every request after it.
    warned: Mutex<HashSet<(String, String, i64)>>,
}

/// The series on `/metrics`.
#[derive(Default)]
pub struct Counters {
    input_tokens: AtomicU64,
    output_tokens: AtomicU64,
    /// Cost in millionths, so an atomic integer can hold it.
    cost_micros: AtomicU64,
    unpriced: AtomicU64,
    ledger_errors: AtomicU64,
    blocked: Mutex<BTreeMap<String, u64>>,
    warnings: Mutex<BTreeMap<String, u64>>,
}

fn bump(map: &Mutex<BTreeMap<String, u64>>, key: &str) {
    let mut m = map.lock().unwrap_or_else(|p| p.into_inner());
    *m.entry(key.to_string()).or_default() += 1;
}

impl MetricsSource for Counters {
    fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP parallax_budget_tokens_total Tokens the proxy's model answers reported, by kind.\n\
             # TYPE parallax_budget_tokens_total counter\n\
             parallax_budget_tokens_total{{kind=\"input\"}} {}\n\
             parallax_budget_tokens_total{{kind=\"output\"}} {}",
            self.input_tokens.load(Relaxed),
            self.output_tokens.load(Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP parallax_budget_cost_total Cost of the proxy's model answers, by budgets.prices.\n\
             # TYPE parallax_budget_cost_total counter\n\
             parallax_budget_cost_total {}",
            self.cost_micros.load(Relaxed) as f64 / 1e6
        );
        let _ = writeln!(
            out,
            "# HELP parallax_budget_unpriced_answers_total Answers of a model with no price, charged at the highest prices.\n\
             # TYPE parallax_budget_unpriced_answers_total counter\n\
             parallax_budget_unpriced_answers_total {}",
            self.unpriced.load(Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP parallax_budget_ledger_errors_total Ledger reads or writes that failed (a failed read blocks the request).\n\
             # TYPE parallax_budget_ledger_errors_total counter\n\
             parallax_budget_ledger_errors_total {}",
            self.ledger_errors.load(Relaxed)
        );
        for (name, help, map) in [
            (
                "parallax_budget_blocked_total",
                "Requests blocked because a budget was spent, by budget.",
                &self.blocked,
            ),
            (
                "parallax_budget_warnings_total",
                "Budgets that crossed budgets.warn_at, by budget.",
                &self.warnings,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            let m = map.lock().unwrap_or_else(|p| p.into_inner());
            for (budget, n) in m.iter() {
                let _ = writeln!(
                    out,
                    "{name}{{budget=\"{}\"}} {n}",
                    crate::metrics::escape_label(budget)
                );
            }
        }
    }
}

/// What a limit measures and over what.
enum Measure {
    SessionTokens(u64),
    UserDayTokens(u64),
    SessionCost(f64),
    UserDayCost(f64),
}

fn measure(l: &BudgetLimit) -> Option<Measure> {
    match (
        l.tokens_per_session,
        l.tokens_per_user_per_day,
        l.cost_per_session,
        l.cost_per_user_per_day,
    ) {
        (Some(n), None, None, None) => Some(Measure::SessionTokens(n)),
        (None, Some(n), None, None) => Some(Measure::UserDayTokens(n)),
        (None, None, Some(c), None) => Some(Measure::SessionCost(c)),
        (None, None, None, Some(c)) => Some(Measure::UserDayCost(c)),
        _ => None,
    }
}

/// The problems of `budgets:`, each naming its key (lint and start-up).
pub fn problems(s: &BudgetsSettings) -> Vec<String> {
    let mut out = Vec::new();
    if !(s.warn_at > 0.0 && s.warn_at <= 1.0) {
        out.push(format!(
            "budgets.warn_at: {} is not a share between 0 (excluded) and 1",
            s.warn_at
        ));
    }
    if s.user_header.parse::<hyper::header::HeaderName>().is_err() {
        out.push(format!(
            "budgets.user_header: `{}` is not a valid header name",
            s.user_header
        ));
    }
    for (model, p) in &s.prices {
        if !(p.input.is_finite() && p.input >= 0.0 && p.output.is_finite() && p.output >= 0.0) {
            out.push(format!(
                "budgets.prices.{model}: prices must be finite and not negative"
            ));
        }
    }
    let mut ids = HashSet::new();
    for (i, l) in s.limits.iter().enumerate() {
        let at = format!("budgets.limits[{i}]");
        if l.id.trim().is_empty() {
            out.push(format!("{at}.id: a budget needs an id"));
        } else if !ids.insert(l.id.as_str()) {
            out.push(format!("{at}.id: `{}` is used twice", l.id));
        }
        match measure(l) {
            None => out.push(format!(
                "{at}: give exactly one of tokens_per_session, tokens_per_user_per_day, \
                 cost_per_session, cost_per_user_per_day"
            )),
            Some(Measure::SessionTokens(0) | Measure::UserDayTokens(0)) => {
                out.push(format!("{at}: a token limit must be at least 1"))
            }
            Some(Measure::SessionCost(c) | Measure::UserDayCost(c)) => {
                if !(c.is_finite() && c > 0.0) {
                    out.push(format!("{at}: a cost limit must be above 0"));
                }
                if s.prices.is_empty() {
                    out.push(format!(
                        "{at}: a cost limit needs budgets.prices (price per million tokens by model)"
                    ));
                }
            }
            Some(_) => {}
        }
    }
    out
}

/// The user a request is for: the configured header, else the body's
/// own (`metadata.user_id`, `user`, `safety_identifier`), else the session.
pub fn user_of(headers: &HeaderMap, header: &str, body: &Value, session: &str) -> String {
    let clip = |s: &str| s.trim().chars().take(256).collect::<String>();
    headers
        .get(header)
        .and_then(|v| v.to_str().ok())
        .map(clip)
        .filter(|s| !s.is_empty())
        .or_else(|| {
            [
                body.pointer("/metadata/user_id"),
                body.get("user"),
                body.get("safety_identifier"),
            ]
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(clip)
            .find(|s| !s.is_empty())
        })
        .unwrap_or_else(|| session.to_string())
}

/// Seconds since the epoch.
fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The UTC day `ts` falls in (days since the epoch).
fn day_of(ts: f64) -> i64 {
    (ts / 86_400.0).floor() as i64
}

impl Budgets {
    pub fn open(settings: &BudgetsSettings) -> Result<Budgets, LedgerError> {
        Ok(Budgets {
            settings: settings.clone(),
            ledger: Ledger::open(settings.path.as_deref())?,
            counters: Arc::default(),
            warned: Mutex::default(),
        })
    }

    /// The series this adds to `/metrics`.
    pub fn metrics(&self) -> Arc<Counters> {
        self.counters.clone()
    }

    /// What the dashboard shows: the limits and what was spent and
    /// blocked since start-up.
    pub fn report(&self) -> Value {
        let c = &self.counters;
        let map = |m: &Mutex<BTreeMap<String, u64>>| {
            serde_json::to_value(&*m.lock().unwrap_or_else(|p| p.into_inner()))
                .unwrap_or(Value::Null)
        };
        let limits: Vec<Value> = self
            .settings
            .limits
            .iter()
            .filter_map(|l| {
                let (what, n) = match measure(l)? {
                    Measure::SessionTokens(n) => ("tokens_per_session", n as f64),
                    Measure::UserDayTokens(n) => ("tokens_per_user_per_day", n as f64),
                    Measure::SessionCost(c) => ("cost_per_session", c),
                    Measure::UserDayCost(c) => ("cost_per_user_per_day", c),
                };
                Some(serde_json::json!({"id": l.id, "measure": what, "limit": n}))
            })
            .collect();
        serde_json::json!({
            "limits": limits,
            "input_tokens": c.input_tokens.load(Relaxed),
            "output_tokens": c.output_tokens.load(Relaxed),
            "cost": c.cost_micros.load(Relaxed) as f64 / 1e6,
            "blocked": map(&c.blocked),
            "warnings": map(&c.warnings),
            "unpriced_answers": c.unpriced.load(Relaxed),
            "ledger_errors": c.ledger_errors.load(Relaxed),
        })
    }

    /// The request header naming the user.
    pub fn user_header(&self) -> &str {
        &self.settings.user_header
    }

    /// The price of `model`: its own, the longest `prefix*` that fits, or
    /// (unknown) the highest prices configured.
    fn price(&self, model: Option<&str>) -> (ModelPrice, bool) {
        let prices = &self.settings.prices;
        let found = model.and_then(|m| {
            prices.get(m).copied().or_else(|| {
                prices
                    .iter()
                    .filter_map(|(k, p)| k.strip_suffix('*').map(|pre| (pre, p)))
                    .filter(|(pre, _)| m.starts_with(pre))
                    .max_by_key(|(pre, _)| pre.len())
                    .map(|(_, p)| *p)
            })
        });
        match found {
            Some(p) => (p, true),
            None => (
                ModelPrice {
                    input: prices.values().map(|p| p.input).fold(0.0, f64::max),
                    output: prices.values().map(|p| p.output).fold(0.0, f64::max),
                },
                prices.is_empty(),
            ),
        }
    }

    /// Writes one answer's usage.
    pub fn record(&self, session: &str, user: &str, model: Option<&str>, usage: Usage) {
        let (price, priced) = self.price(model);
        if !priced {
            self.counters.unpriced.fetch_add(1, Relaxed);
        }
        let cost = (usage.input as f64 * price.input + usage.output as f64 * price.output) / 1e6;
        self.counters.input_tokens.fetch_add(usage.input, Relaxed);
        self.counters.output_tokens.fetch_add(usage.output, Relaxed);
        self.counters
            .cost_micros
            .fetch_add((cost * 1e6).round() as u64, Relaxed);
        let entry = Entry {
            ts: now(),
            session,
            user,
            model,
            input: usage.input,
            output: usage.output,
            cost,
        };
        if let Err(e) = self.ledger.record(&entry) {
            self.counters.ledger_errors.fetch_add(1, Relaxed);
            tracing::error!(error = %e, session, "could not record a model answer's usage");
        }
    }

    /// Whether a request of `session` for `user` may go to the model.
    pub fn check(&self, session: &str, user: &str) -> Verdict {
        let ts = now();
        let day = day_of(ts);
        let day_start = day as f64 * 86_400.0;
        let mut session_spent: Option<Spent> = None;
        let mut user_spent: Option<Spent> = None;
        for limit in &self.settings.limits {
            let Some(m) = measure(limit) else { continue };
            let per_session = matches!(m, Measure::SessionTokens(_) | Measure::SessionCost(_));
            let spent = if per_session {
                match session_spent {
                    Some(s) => Ok(s),
                    None => self.ledger.session(session),
                }
            } else {
                match user_spent {
                    Some(s) => Ok(s),
                    None => self.ledger.user_since(user, day_start),
                }
            };
            let spent = match spent {
                Ok(s) => s,
                Err(e) => {
                    self.counters.ledger_errors.fetch_add(1, Relaxed);
                    tracing::error!(error = %e, "the budget ledger cannot be read");
                    return Verdict::Spent(format!(
                        "Parallax blocked this request: the budget ledger cannot be read ({e}), \
                         so budget `{}` cannot be checked",
                        limit.id
                    ));
                }
            };
            if per_session {
                session_spent = Some(spent);
            } else {
                user_spent = Some(spent);
            }
            let (used, cap, what, whose) = match m {
                Measure::SessionTokens(n) => {
                    (spent.tokens as f64, n as f64, "tokens", "this session")
                }
                Measure::UserDayTokens(n) => (
                    spent.tokens as f64,
                    n as f64,
                    "tokens",
                    "this user today (UTC)",
                ),
                Measure::SessionCost(c) => (spent.cost, c, "cost", "this session"),
                Measure::UserDayCost(c) => (spent.cost, c, "cost", "this user today (UTC)"),
            };
            let amount = |x: f64| {
                if what == "tokens" {
                    format!("{x:.0} tokens")
                } else {
                    format!("{x:.4}")
                }
            };
            if used >= cap {
                bump(&self.counters.blocked, &limit.id);
                tracing::warn!(budget = %limit.id, session, user, used, cap, "budget spent: request blocked");
                return Verdict::Spent(format!(
                    "Parallax blocked this request: budget `{}` is spent ({} of {} for {whose})",
                    limit.id,
                    amount(used),
                    amount(cap)
                ));
            }
            if used >= cap * self.settings.warn_at {
                let key = if per_session { session } else { user };
                let fresh = self
                    .warned
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert((limit.id.clone(), key.to_string(), day));
                if fresh {
                    bump(&self.counters.warnings, &limit.id);
                    tracing::warn!(
                        budget = %limit.id, session, user, used, cap,
                        "budget past budgets.warn_at"
                    );
                }
            }
        }
        Verdict::Within
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(limits: Vec<BudgetLimit>) -> BudgetsSettings {
        let mut s = BudgetsSettings::default();
        s.prices.insert(
            "claude-sonnet*".into(),
            ModelPrice {
                input: 3.0,
                output: 15.0,
            },
        );
        s.prices.insert(
            "gpt-4o".into(),
            ModelPrice {
                input: 2.5,
                output: 10.0,
            },
        );
        s.limits = limits;
        s
    }

    fn limit(id: &str) -> BudgetLimit {
        BudgetLimit {
            id: id.into(),
            tokens_per_session: None,
            tokens_per_user_per_day: None,
            cost_per_session: None,
            cost_per_user_per_day: None,
        }
    }

    #[test]
    fn a_spent_session_is_blocked_and_others_are_not() {
        let mut l = limit("session-cap");
        l.tokens_per_session = Some(100);
        let b = Budgets::open(&settings(vec![l])).expect("budgets");
        let u = Usage {
            input: 60,
            output: 30,
        };
        b.record("s1", "alice", Some("gpt-4o"), u);
        assert_eq!(b.check("s1", "alice"), Verdict::Within);
        b.record("s1", "alice", Some("gpt-4o"), u);
        let Verdict::Spent(text) = b.check("s1", "alice") else {
            panic!("not blocked")
        };
        assert!(
            text.contains("`session-cap`") && text.contains("180 tokens of 100"),
            "{text}"
        );
        assert_eq!(b.check("s2", "alice"), Verdict::Within);
        let mut m = String::new();
        b.metrics().render(&mut m);
        assert!(
            m.contains("parallax_budget_blocked_total{budget=\"session-cap\"} 1"),
            "{m}"
        );
        assert!(
            m.contains("parallax_budget_tokens_total{kind=\"input\"} 120"),
            "{m}"
        );
        assert!(
            m.contains("parallax_budget_warnings_total{budget=\"session-cap\"} 1"),
            "{m}"
        );
    }

    #[test]
    fn cost_uses_prices_and_charges_unknown_models_the_most() {
        let mut l = limit("daily-spend");
        l.cost_per_user_per_day = Some(1.0);
        let b = Budgets::open(&settings(vec![l])).expect("budgets");
        // 100k in, 10k out on a prefix-priced model: 0.3 + 0.15.
        let u = Usage {
            input: 100_000,
            output: 10_000,
        };
        b.record("s1", "bob", Some("claude-sonnet-4-5"), u);
        assert_eq!(b.check("s9", "bob"), Verdict::Within);
        // Unknown model: the highest prices (3 and 15), 0.45 again.
        b.record("s2", "bob", Some("mystery-model"), u);
        assert_eq!(b.check("s9", "bob"), Verdict::Within);
        b.record("s3", "bob", None, u);
        assert!(matches!(b.check("s9", "bob"), Verdict::Spent(t) if t.contains("daily-spend")));
        assert_eq!(b.check("s9", "carol"), Verdict::Within);
        let mut m = String::new();
        b.metrics().render(&mut m);
        assert!(
            m.contains("parallax_budget_unpriced_answers_total 2"),
            "{m}"
        );
    }

    #[test]
    fn settings_problems_name_their_keys() {
        let mut both = limit("both");
        both.tokens_per_session = Some(1);
        both.cost_per_session = Some(1.0);
        let mut cost = limit("cost");
        cost.cost_per_session = Some(2.0);
        let mut zero = limit("both");
        zero.tokens_per_user_per_day = Some(0);
        let mut s = settings(vec![both, limit(""), zero]);
        s.warn_at = 1.5;
        let p = problems(&s).join("\n");
        for want in [
            "budgets.warn_at",
            "budgets.limits[0]: give exactly one",
            "budgets.limits[1].id",
            "budgets.limits[2].id: `both` is used twice",
            "budgets.limits[2]: a token limit must be at least 1",
        ] {
            assert!(p.contains(want), "{want} missing from:\n{p}");
        }
        let s = BudgetsSettings {
            limits: vec![cost],
            ..Default::default()
        };
        assert!(problems(&s).join("\n").contains("needs budgets.prices"));
    }

    #[test]
    fn the_user_comes_from_the_header_then_the_body_then_the_session() {
        let mut h = HeaderMap::new();
        let body = serde_json::json!({"metadata": {"user_id": "u-body"}});
        assert_eq!(user_of(&h, "x-parallax-user", &body, "s"), "u-body");
        h.insert("x-parallax-user", "alice".parse().expect("value"));
        assert_eq!(user_of(&h, "x-parallax-user", &body, "s"), "alice");
        assert_eq!(
            user_of(
                &HeaderMap::new(),
                "x-parallax-user",
                &serde_json::json!({}),
                "s"
            ),
            "s"
        );
    }
}
