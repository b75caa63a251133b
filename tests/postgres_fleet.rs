//! Shared approvals on PostgreSQL (`store.postgres`), end to end: a cluster
//! this test starts (tests/support/postgres.rs) and two servers on
//! 127.0.0.1 pointed at it, as two replicas of a fleet. An approval raised
//! on A is decided through B and A's held call resolves; two replicas
//! deciding at once give exactly one winner; the known-recipients memory is
//! one; a database that goes away fails closed and the replica recovers by
//! itself; a schema newer than the build refuses the start.
//!
//! Without PostgreSQL installed each test says `skipped:`; with `CI=true`
//! it fails instead.

mod support;

use parallax::approvals::store::postgres::PostgresStore;
use parallax::approvals::ApprovalBackend;
use parallax::settings::PostgresSettings;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use support::postgres::PgCluster;
use support::{request, temp_dir, Response, TestServer};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/api/parallax.yaml"
);
const AGENT: &str = "agent-fleet-token";
const ALICE: &str = "alice-fleet-token";
const BOB: &str = "bob-fleet-token";

fn pg_settings(url: &str) -> PostgresSettings {
    PostgresSettings {
        url: Some(url.to_string()),
        url_env: None,
        pool: 2,
        timeout_ms: 2_000,
    }
}

/// A replica: the API fixture's rules (one `approve` rule: a push to
/// main), approvals in the cluster's database.
fn replica(pg: &PgCluster, name: &str) -> TestServer {
    let url = pg.url();
    let db = temp_dir(&format!("fleet-{name}")).join("unused.db");
    TestServer::start(
        Path::new(FIXTURE),
        move |s| {
            s.server.auth_token = Some(AGENT.into());
            s.approvals.path = db.display().to_string();
            s.approvals.approver_tokens = [
                ("alice".to_string(), ALICE.to_string()),
                ("bob".to_string(), BOB.to_string()),
            ]
            .into_iter()
            .collect();
            s.store.postgres = Some(pg_settings(&url));
        },
        |s, _| s,
    )
}

fn call(s: &TestServer, method: &str, path: &str, token: &str, body: &Value) -> Response {
    let auth = format!("Bearer {token}");
    let text = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    request(
        s.addr,
        method,
        path,
        &[
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
        ],
        text.as_bytes(),
    )
}

fn deploy(session: &str) -> Value {
    json!({"stage": "tool.before", "session_id": session, "tool_name": "Bash",
           "tool_args": {"command": "git push origin main"}})
}

/// Raises an approval on `s` without waiting; its id.
fn raise(s: &TestServer, session: &str) -> String {
    let r = call(s, "POST", "/evaluate", AGENT, &deploy(session));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    assert_eq!(v["action"], "approve", "{v}");
    v["approval"]["id"]
        .as_str()
        .expect("an approval id")
        .to_string()
}

fn pending_ids(s: &TestServer) -> Vec<String> {
    let r = call(s, "GET", "/approvals?status=pending", AGENT, &Value::Null);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()["approvals"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|a| a["id"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn an_approval_raised_on_one_replica_is_decided_through_another() {
    let Some(pg) = PgCluster::start("decided-elsewhere") else {
        return;
    };
    let a = replica(&pg, "a1");
    let b = replica(&pg, "b1");
    let addr_a = a.addr;
    // The agent's call, held on A until a human decides.
    let held = std::thread::spawn(move || {
        let r = request(
            addr_a,
            "POST",
            "/evaluate?wait=20",
            &[
                ("Authorization", &format!("Bearer {AGENT}")),
                ("Content-Type", "application/json"),
            ],
            deploy("fleet-1").to_string().as_bytes(),
        );
        (Instant::now(), r)
    });
    // B's inbox shows A's approval.
    let deadline = Instant::now() + Duration::from_secs(15);
    let id = loop {
        if let Some(id) = pending_ids(&b).into_iter().next() {
            break id;
        }
        assert!(Instant::now() < deadline, "B never saw A's approval");
        std::thread::sleep(Duration::from_millis(20));
    };
    let decided_at = Instant::now();
    let r = call(
        &b,
        "POST",
        &format!("/approvals/{id}/approve"),
        ALICE,
        &json!({"comment": "ok from B"}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let (answered_at, answer) = held.join().expect("the held call");
    assert_eq!(answer.status, 200);
    let v = answer.json();
    assert_eq!(v["action"], "allow", "{v}");
    assert_eq!(v["approval"]["id"], id.as_str());
    assert_eq!(v["approval"]["decided_by"], "alice");
    println!(
        "approved through B; the call held on A answered {:.1} ms after the decision",
        answered_at.duration_since(decided_at).as_secs_f64() * 1000.0
    );
    // Both replicas read the same record.
    for s in [&a, &b] {
        let r = call(s, "GET", &format!("/approvals/{id}"), AGENT, &Value::Null);
        assert_eq!(r.json()["status"], "approved");
    }
}

#[test]
fn two_replicas_deciding_at_once_give_exactly_one_winner() {
    let Some(pg) = PgCluster::start("one-winner") else {
        return;
    };
    let a = Arc::new(replica(&pg, "a2"));
    let b = Arc::new(replica(&pg, "b2"));
    for round in 0..8 {
        let id = raise(&a, &format!("race-{round}"));
        let barrier = Arc::new(Barrier::new(2));
        let mut handles = Vec::new();
        for (server, verb, token) in [(a.clone(), "approve", ALICE), (b.clone(), "deny", BOB)] {
            let (barrier, id) = (barrier.clone(), id.clone());
            handles.push(std::thread::spawn(move || {
                barrier.wait();
                let r = call(
                    &server,
                    "POST",
                    &format!("/approvals/{id}/{verb}"),
                    token,
                    &Value::Null,
                );
                (verb, r.status, r.json())
            }));
        }
        let results: Vec<(&str, u16, Value)> = handles
            .into_iter()
            .map(|h| h.join().expect("a decider"))
            .collect();
        let winners: Vec<&(&str, u16, Value)> = results.iter().filter(|r| r.1 == 200).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        let loser = results.iter().find(|r| r.1 != 200).expect("a loser");
        assert_eq!(loser.1, 409, "round {round}: {results:?}");
        let want = if winners[0].0 == "approve" {
            "approved"
        } else {
            "denied"
        };
        for s in [&a, &b] {
            let r = call(s, "GET", &format!("/approvals/{id}"), AGENT, &Value::Null);
            assert_eq!(r.json()["status"], want, "round {round}");
        }
    }
}

#[test]
fn the_known_recipients_memory_is_one_for_the_fleet() {
    let Some(pg) = PgCluster::start("recipients") else {
        return;
    };
    let a = PostgresStore::open(&pg_settings(&pg.url())).expect("A's store");
    let b = PostgresStore::open(&pg_settings(&pg.url())).expect("B's store");
    let keys = vec![
        "email:ana@northwind.test".to_string(),
        "url:evil.test".to_string(),
    ];
    assert_eq!(b.known_recipients(&keys).unwrap(), [false, false]);
    a.remember_recipients(&keys[..1], 1.0).unwrap();
    a.remember_recipients(&keys[..1], 2.0).unwrap();
    assert_eq!(b.known_recipients(&keys).unwrap(), [true, false]);
    assert_eq!(a.kind(), "postgres");
    // What one indexed statement costs through the store's thread (for
    // docs/DEPLOYMENT.md's comparison with the per-replica side-store).
    let n = 500;
    let started = Instant::now();
    for _ in 0..n {
        b.known_recipients(&keys).unwrap();
    }
    println!(
        "one known-recipients lookup through PostgreSQL: {:.0} µs on average over {n}",
        started.elapsed().as_secs_f64() * 1e6 / n as f64
    );
}

#[test]
fn the_dashboard_charts_the_whole_fleet() {
    let Some(pg) = PgCluster::start("fleet-hits") else {
        return;
    };
    let a = replica(&pg, "a4");
    let b = replica(&pg, "b4");
    let rm =
        json!({"stage": "tool.before", "tool_name": "Bash", "tool_args": {"command": "rm -rf /"}});
    for (s, n) in [(&a, 2), (&b, 1)] {
        for _ in 0..n {
            assert_eq!(
                call(s, "POST", "/evaluate", AGENT, &rm).json()["action"],
                "block"
            );
        }
    }
    // Each replica adds its hits every ten seconds; either one's dashboard
    // then counts all three.
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let r = call(&b, "GET", "/ui/api/hits?window=600", AGENT, &Value::Null);
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let v = r.json();
        assert_eq!(v["fleet"], true, "{v}");
        let rule = v["rules"]
            .as_array()
            .and_then(|rs| rs.iter().find(|x| x["id"] == "fixture-rm-rf"))
            .cloned()
            .expect("the rule");
        if rule["hits"] == 3 {
            break;
        }
        assert!(rule["hits"].as_u64().unwrap_or(0) <= 3, "{rule}");
        assert!(
            Instant::now() < deadline,
            "the fleet's hits never reached 3: {rule}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn a_database_that_goes_away_fails_closed_and_the_replica_recovers() {
    let Some(pg) = PgCluster::start("goes-away") else {
        return;
    };
    let a = replica(&pg, "a3");
    let before = raise(&a, "held-before");
    pg.pg_stop();
    // A new approve verdict cannot be recorded: blocked, saying why.
    let r = call(&a, "POST", "/evaluate", AGENT, &deploy("while-down"));
    let v = r.json();
    assert_eq!(v["action"], "block", "{v}");
    assert_eq!(v["failure"]["kind"], "approvals", "{v}");
    assert!(
        v["failure"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("PostgreSQL"),
        "{v}"
    );
    // The inbox says the store is away, not that nothing is pending.
    let r = call(&a, "GET", "/approvals?status=pending", AGENT, &Value::Null);
    let msg = r.assert_error(503, "store_unavailable");
    assert!(msg.contains("PostgreSQL"), "{msg}");
    // Everything else goes on.
    let r = call(
        &a,
        "POST",
        "/evaluate",
        AGENT,
        &json!({"stage": "tool.before", "tool_name": "Bash", "tool_args": {"command": "ls"}}),
    );
    assert_eq!(r.json()["action"], "allow");

    pg.pg_start();
    // The replica reconnects by itself: the approval raised before is
    // still pending, and new ones are recorded again.
    let deadline = Instant::now() + Duration::from_secs(20);
    let after = loop {
        let r = call(&a, "POST", "/evaluate", AGENT, &deploy("after"));
        let v = r.json();
        if v["action"] == "approve" {
            break v["approval"]["id"].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "never recovered: {v}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let pending = pending_ids(&a);
    assert!(
        pending.contains(&before) && pending.contains(&after),
        "{pending:?}"
    );
    let r = call(
        &a,
        "POST",
        &format!("/approvals/{before}/deny"),
        ALICE,
        &Value::Null,
    );
    assert_eq!(r.status, 200);
}

#[test]
fn a_schema_newer_than_the_build_refuses_the_start() {
    let Some(pg) = PgCluster::start("schema-newer") else {
        return;
    };
    // A current replica creates the schema...
    drop(PostgresStore::open(&pg_settings(&pg.url())).expect("first start"));
    // ...and a newer build than this one migrated it further.
    let url = pg.url();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(conn);
        client
            .execute("INSERT INTO parallax_schema (version) VALUES (99)", &[])
            .await
            .expect("insert");
    });
    let err = PostgresStore::open(&pg_settings(&pg.url()))
        .err()
        .expect("refused");
    let msg = err.to_string();
    assert!(msg.contains("99") && msg.contains("upgrade"), "{msg}");
    // A bad URL is refused naming the key, and never echoes a password.
    let bad = PostgresStore::open(&pg_settings(
        "postgres://parallax:s3cret@127.0.0.1:1/postgres?connect_timeout=1",
    ))
    .err()
    .expect("refused");
    assert!(!bad.to_string().contains("s3cret"), "{bad}");
}

/// `store:` written in the config file reaches the settings (it used to be
/// refused as an unknown key by the compiler, so only a config built in
/// code could use PostgreSQL). Needs no cluster: loading does not connect.
#[test]
fn the_store_section_of_a_config_file_is_read() {
    let dir = temp_dir("store-section");
    std::fs::create_dir_all(dir.join("rules")).expect("rules dir");
    let path = dir.join("parallax.yaml");
    std::fs::write(
        &path,
        "rules_dir: rules\nstore:\n  postgres:\n    url_env: PARALLAX_TEST_PG_URL\n    pool: 3\n",
    )
    .expect("config");
    let loaded = parallax::backend::load(Some(&path), false).expect("the config loads");
    let pg = loaded
        .settings
        .store
        .postgres
        .expect("store.postgres is read");
    assert_eq!(pg.url_env.as_deref(), Some("PARALLAX_TEST_PG_URL"));
    assert_eq!(pg.pool, 3);
}
