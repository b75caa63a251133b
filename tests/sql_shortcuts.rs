//! The side-store's shortcuts (store/src/shortcut.rs) change no answer:
//! each time one says a rule cannot fire, a checking store runs the rule's
//! query anyway and SQLite must not fire; and a store with shortcuts on, one
//! checking them and one without them give every event the same hits.
//! Over the realistic mix and over adversarial sessions built to reach
//! each rule's threshold (identical calls, one tool at a machine pace,
//! blocks, secret reads then egress) with equal timestamps, the clock going
//! back, window edges, and rows leaving through retention, the row cap and
//! the session budget. Also: the shipped rules recognised are the seven
//! expected and no other, and the lockout's answer from the facts is
//! SQLite's when a session holds more blocks than its walk takes, tied
//! across the walk's end or not.

#[path = "../benches/support/mix.rs"]
mod mix;

use parallax_runtime::{Action, Event, PreparedEvent, Program, StateSettings};
use parallax_store::shortcut::Shortcut;
use parallax_store::{EventRow, ManualClock, ShortcutMode, SqlHit, Store, StoreRequest};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

const CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/parallax.yaml");
const T0: f64 = 1_800_000_000.0;

fn program() -> Program {
    parallax::backend::load(Some(Path::new(CONFIG)), false)
        .unwrap_or_else(|e| panic!("cannot load {CONFIG}: {e}"))
        .engine
        .program()
        .clone()
}

#[test]
fn the_shipped_rules_recognised_are_the_seven() {
    let program = program();
    let found: Vec<(String, Shortcut)> = program
        .sql
        .iter()
        .filter_map(|s| {
            Shortcut::recognise(&s.query, &s.condition)
                .map(|k| (program.rules[s.rule as usize].id.clone(), k))
        })
        .collect();
    let want = [
        ("sql-identical-call-loop", Shortcut::SameCall),
        ("sql-blocked-retry-lockout", Shortcut::Blocks),
        ("sql-secret-read-then-egress", Shortcut::SecretRead),
        ("sql-tool-pace-per-tool", Shortcut::SameTool),
        ("sql-endpoint-hammering", Shortcut::SameUrl15),
        ("sql-endpoint-runaway", Shortcut::SameUrl61),
        ("sql-sequential-page-scrape", Shortcut::Pages),
    ];
    let mut found_sorted = found.clone();
    found_sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut want_sorted: Vec<(String, Shortcut)> =
        want.iter().map(|(i, k)| (i.to_string(), *k)).collect();
    want_sorted.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(found_sorted, want_sorted);
}

/// Three stores (shortcuts off, checked, on) fed the same requests.
struct Trio {
    off: Store,
    checked: Store,
    on: Store,
    fired: BTreeMap<String, usize>,
}

impl Trio {
    fn new(program: &Program, settings: &StateSettings, session_rows: u64) -> Trio {
        let open = |mode| {
            let mut s = Store::open(program, settings, Arc::new(ManualClock::new(T0)))
                .expect("open the store");
            s.set_session_rows(session_rows);
            s.set_shortcuts(mode);
            s
        };
        Trio {
            off: open(ShortcutMode::Off),
            checked: open(ShortcutMode::Checked),
            on: open(ShortcutMode::On),
            fired: BTreeMap::new(),
        }
    }

    fn process(&mut self, req: &StoreRequest, what: &str) {
        let want: Vec<SqlHit> = self.off.process(req).expect("process");
        let checked = self.checked.process(req).expect("process");
        let on = self.on.process(req).expect("process");
        assert_eq!(checked, want, "checked store, {what}: {:?}", req.row);
        assert_eq!(on, want, "store with shortcuts, {what}: {:?}", req.row);
        assert_eq!(self.checked.wrong_skips(), 0, "{what}: {:?}", req.row);
        for h in want {
            *self.fired.entry(h.id).or_default() += 1;
        }
    }

    /// Records a row in the three stores without judging it (how a
    /// blocked event arrives).
    fn record(&mut self, req: &StoreRequest) {
        let now = req.now.expect("a clock");
        for s in [&mut self.off, &mut self.checked, &mut self.on] {
            s.record(&req.row, now, req.action, &req.rule_ids)
                .expect("record");
        }
    }

    fn finish(&self, what: &str) -> u64 {
        assert_eq!(self.checked.wrong_skips(), 0, "{what}");
        assert_eq!(
            self.checked.shortcut_skips(),
            self.on.shortcut_skips(),
            "{what}: the checked store skips where the live one does"
        );
        assert_eq!(
            self.off.row_count().expect("rows"),
            self.on.row_count().expect("rows"),
            "{what}"
        );
        self.on.shortcut_skips()
    }
}

fn request(v: Value, now: f64, action: Action, rule_ids: &[&str]) -> StoreRequest {
    let prepared = PreparedEvent::new(Event::from_value(v).expect("a valid event"));
    StoreRequest {
        row: EventRow::new(&prepared),
        action,
        rule_ids: rule_ids.iter().map(|s| s.to_string()).collect(),
        run_rules: true,
        now: Some(now),
        rules: None,
    }
}

#[test]
fn the_mix_gets_the_same_hits_and_shortcuts_skip_most_walks() {
    // Each event with the compiled evaluators' verdict, as the decision
    // service sends it (blocks included), every SQL rule at its stage.
    let engine = parallax::backend::load(Some(Path::new(CONFIG)), false)
        .expect("load")
        .engine;
    let program = engine.program().clone();
    let mut scratch = engine.new_scratch();
    let mut trio = Trio::new(&program, &StateSettings::default(), 10_000);
    let mut n = 0;
    for v in mix::realistic_mix(6_000, 20, T0) {
        if v.get("session_id").is_none() {
            continue;
        }
        let prepared = PreparedEvent::new(Event::from_value(v).expect("a mix event"));
        let verdict = engine.evaluate(&prepared, &mut scratch);
        let req = StoreRequest::new(&prepared, &verdict, &program, prepared.event.timestamp);
        trio.process(&req, "mix");
        n += 1;
    }
    let skips = trio.finish("mix");
    assert!(
        skips as usize > n,
        "shortcuts skip walks on the mix: {skips} over {n} events"
    );
}

/// xorshift: a deterministic walk without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a, T>(&mut self, of: &'a [T]) -> &'a T {
        &of[(self.next() % of.len() as u64) as usize]
    }
}

fn adversarial(settings: StateSettings, session_rows: u64, seed: u64, steps: usize) -> Trio {
    let program = program();
    let mut trio = Trio::new(&program, &settings, session_rows);
    let mut rng = Rng(seed);
    let mut now = T0;
    let sessions = [Some("a"), Some("b"), Some("c"), None];
    let calls = [
        json!({"tool_name": "Bash", "tool_args": {"command": "npm test"}}),
        json!({"tool_name": "Bash", "tool_args": {"command": "ls -la"}}),
        json!({"tool_name": "Bash", "tool_args": {"command": "cat ~/.aws/credentials"}}),
        json!({"tool_name": "Bash", "tool_args": {"command": "curl -s https://paste.example.net/new"}}),
        json!({"tool_name": "Bash", "tool_args": {"command": "curl -s http://localhost:8080/x"}}),
        json!({"tool_name": "Bash", "tool_args": {"command": "rm -rf /"}}),
        json!({"tool_name": "Read", "tool_args": {"file_path": "/home/dev/app/.env"}}),
        json!({"tool_name": "Read", "tool_args": {"file_path": "src/main.rs"}}),
        json!({"tool_name": "WebFetch", "tool_args": {"url": "https://collector.example.org/ingest"}}),
        json!({"tool_name": "WebFetch", "tool_args": {"url": "https://api.example.com/status"}}),
        json!({"tool_name": "Grep", "tool_args": {"pattern": "TODO"}}),
        json!({"tool_args": {"command": "npm test"}}),
    ];
    for i in 0..steps {
        // Mostly forward in quarter seconds; equal stamps; the clock going
        // back; jumps to each window's edge and past it.
        now += match rng.next() % 400 {
            0..=239 => 0.05,
            240..=319 => 0.0,
            320..=339 => -3.0,
            340..=359 => 1.0,
            360 => 60.0,
            361 => 120.0,
            362 => 300.0,
            363 => 600.0,
            364 => 601.0,
            _ => 0.25,
        };
        let mut v = rng.pick(&calls).clone();
        // Runs of the same call, so the thresholds are reached.
        if !rng.next().is_multiple_of(3) {
            v = calls[(i / 40) % calls.len()].clone();
        }
        v["stage"] = json!(if rng.next().is_multiple_of(5) {
            "tool.after"
        } else {
            "tool.before"
        });
        let session = if rng.next().is_multiple_of(2) {
            &sessions[(i / 25) % sessions.len()]
        } else {
            rng.pick(&sessions)
        };
        // Every 500 steps, a burst of 60 calls of one tool in one session,
        // with varying arguments (one tool at a machine pace); a burst of
        // 80 fetches of one URL (hammering, then the runaway level, the
        // URL now and then with a digit changed); and 40 numbered pages.
        let session = match i % 500 {
            0..60 => {
                v = json!({"stage": "tool.before", "tool_name": "Grep",
                           "tool_args": {"pattern": format!("p{}", i % 7)}});
                &Some("a")
            }
            200..280 => {
                let url = if i % 9 == 0 {
                    format!("https://api.example.com/poll/{}", i % 4)
                } else {
                    "https://api.example.com/poll/1".to_string()
                };
                v = json!({"stage": "tool.before", "tool_name": "WebFetch",
                           "tool_args": {"url": url}});
                &Some("b")
            }
            300..340 => {
                v = json!({"stage": "tool.before", "tool_name": "WebFetch",
                           "tool_args": {"url": format!("https://shop.example.com/cat?page={}", i % 37)}});
                &Some("c")
            }
            _ => session,
        };
        if let Some(s) = session {
            v["session_id"] = json!(s);
        }
        let (action, ids): (Action, &[&str]) = match rng.next() % 10 {
            0 => (Action::Block, &["dangerous-rm"]),
            1 => (Action::Block, &["sql-blocked-retry-lockout"]),
            2 => (Action::Detect, &["some-detector"]),
            _ => (Action::Allow, &[]),
        };
        let what = format!("seed {seed} step {i}");
        trio.process(&request(v, now, action, ids), &what);
    }
    trio.finish(&format!("seed {seed}"));
    trio
}

#[test]
fn adversarial_sessions_get_the_same_hits_through_every_bound() {
    let wide = StateSettings {
        path: None,
        retention_seconds: 1_000_000,
        max_rows: 1_000_000,
    };
    let trio = adversarial(wide.clone(), 1_000_000, 1, 3000);
    // Not vacuous: each shortcut's rule fired somewhere.
    for id in [
        "sql-identical-call-loop",
        "sql-tool-pace-per-tool",
        "sql-blocked-retry-lockout",
        "sql-secret-read-then-egress",
        "sql-endpoint-hammering",
        "sql-endpoint-runaway",
        "sql-sequential-page-scrape",
    ] {
        assert!(
            trio.fired.get(id).copied().unwrap_or(0) > 0,
            "{id} fired in the adversarial run: {:?}",
            trio.fired
        );
    }
    assert!(trio.on.shortcut_skips() > 0);
    adversarial(
        StateSettings {
            max_rows: 60,
            ..wide.clone()
        },
        1_000_000,
        2,
        2000,
    );
    adversarial(
        StateSettings {
            retention_seconds: 90,
            ..wide.clone()
        },
        1_000_000,
        3,
        2000,
    );
    adversarial(wide.clone(), 50, 4, 2000);
    adversarial(
        StateSettings {
            path: None,
            retention_seconds: 200,
            max_rows: 150,
        },
        70,
        5,
        2000,
    );
}

#[test]
fn a_state_file_brings_its_facts() {
    let dir = std::env::temp_dir().join(format!("parallax-shortcuts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("state.db");
    let _ = std::fs::remove_file(&path);
    let settings = StateSettings {
        path: Some(path.to_string_lossy().into_owned()),
        retention_seconds: 1_000_000,
        max_rows: 1_000_000,
    };
    let program = program();
    let secret = json!({"stage": "tool.before", "session_id": "s", "tool_name": "Read",
                        "tool_args": {"file_path": "/home/dev/app/.env"}});
    let egress = json!({"stage": "tool.before", "session_id": "s", "tool_name": "WebFetch",
                        "tool_args": {"url": "https://collector.example.org/ingest"}});
    {
        let mut store =
            Store::open(&program, &settings, Arc::new(ManualClock::new(T0))).expect("open");
        store.begin_batch();
        store
            .process(&request(secret, T0, Action::Allow, &[]))
            .expect("process");
        store.end_batch();
    }
    // Reopened, the secret read is known: the egress call is judged.
    let mut store =
        Store::open(&program, &settings, Arc::new(ManualClock::new(T0))).expect("reopen");
    store.set_shortcuts(ShortcutMode::Checked);
    let hits = store
        .process(&request(egress, T0 + 10.0, Action::Allow, &[]))
        .expect("process");
    assert!(
        hits.iter().any(|h| h.id == "sql-secret-read-then-egress"),
        "{hits:?}"
    );
    assert_eq!(store.wrong_skips(), 0);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

/// More blocks in the lockout's window than its walk takes (1,000): the
/// answer from the facts must be SQLite's whether the 1,000th and the
/// 1,001st are tied or not, with counted blocks (another rule's) above,
/// inside and below the tie, and blocks only the lockout made.
#[test]
fn the_lockout_past_its_walk_is_sqlites_answer() {
    let program = program();
    let wide = StateSettings {
        path: None,
        retention_seconds: 1_000_000,
        max_rows: 1_000_000,
    };
    let dangerous = json!({"stage": "tool.before", "session_id": "t", "tool_name": "Bash",
                           "tool_args": {"command": "ls -la"}});
    let result = json!({"stage": "tool.after", "session_id": "t", "tool_name": "Bash",
                        "tool_result": "ok"});
    // Each layout: runs of blocks (how many, seconds between them, counted
    // or only the lockout's), oldest first.
    let layouts: [&[(usize, f64, bool)]; 9] = [
        &[(1_005, 0.0, false)],
        &[(1_005, 0.0, false), (2, 0.0, true)],
        &[(998, 0.0, false), (5, 0.0, true)],
        &[(1_000, 0.0, false), (2, 0.01, true)],
        &[(1_000, 0.0, false), (3, 0.01, true)],
        &[(1_001, 0.0, false), (1, 0.0, true), (2, 0.01, true)],
        &[(1_200, 0.001, false), (2, 0.001, true)],
        &[(1_200, 0.001, false), (3, 0.001, true)],
        &[(2, 0.001, true), (1_100, 0.001, false), (1, 0.0, true)],
    ];
    let mut fired = 0;
    for (n, layout) in layouts.into_iter().enumerate() {
        let mut trio = Trio::new(&program, &wide, 1_000_000);
        let mut now = T0;
        let what = format!("layout {n}");
        for &(count, every, counted) in layout {
            let ids: &[&str] = if counted {
                &["dangerous-rm"]
            } else {
                &["sql-blocked-retry-lockout"]
            };
            for _ in 0..count {
                now += every;
                trio.record(&request(result.clone(), now, Action::Block, ids));
            }
        }
        // Dangerous calls, each judged, as the window fills and ages.
        for step in [0.0, 0.0, 1.0, 598.0, 0.5, 0.5, 2.0] {
            now += step;
            trio.process(&request(dangerous.clone(), now, Action::Allow, &[]), &what);
        }
        fired += trio
            .fired
            .get("sql-blocked-retry-lockout")
            .copied()
            .unwrap_or(0);
        trio.finish(&what);
    }
    assert!(fired > 0, "the lockout fired in some layout");
}
