//! Approvals in PostgreSQL, shared by every replica of a fleet
//! (`store.postgres`).
//!
//! - **One thread of its own** runs a small tokio runtime with the
//!   connections (tokio-postgres); the approvals code calls in with blocking
//!   methods, as it does the SQLite store, and waits at most
//!   `store.postgres.timeout_ms` for the answer. A call that cannot be
//!   answered (the database stopped, a network cut) is an error, which the
//!   decision service turns into a fail-closed verdict: nothing is approved
//!   that was not recorded.
//! - **Reconnects by itself**: a closed connection is replaced on the next
//!   call (at most every 250 ms while the database stays away), and once
//!   back every waiter is woken to re-read (the poll after a reconnect).
//! - **LISTEN/NOTIFY**: each transition is announced on the channel
//!   `parallax_approvals`; every replica LISTENs, and a notification wakes
//!   its held calls at once, so a decision made through replica B resolves
//!   the call held on A without waiting for a poll.
//! - **Exactly one decision wins**: the decide and expire statements only
//!   change a row still `pending` (and not past its deadline), and
//!   PostgreSQL serialises concurrent UPDATEs of one row, so of two
//!   replicas deciding at once the second changes nothing and is told so.
//! - **The fleet's rule-hit history** (`parallax_rule_hits`): each replica
//!   adds its hits every ten seconds, so the dashboard charts the fleet.
//! - **Versioned schema** (`parallax_schema`): migrations run at start-up
//!   under an advisory lock (two replicas starting together apply them
//!   once); a database whose version is newer than this build's refuses the
//!   start, naming both versions.

use super::{
    json, timeout_str, Approval, ApprovalBackend, NewApproval, RawRow, Status, StoreError,
};
use crate::settings::PostgresSettings;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Notify};
use tokio_postgres::{AsyncMessage, Client, Config, Row};

/// The notification channel every replica LISTENs on.
pub const CHANNEL: &str = "parallax_approvals";

/// The schema version this build writes; migrations 1..=this are applied.
pub const SCHEMA_VERSION: i32 = 2;

/// How long the fleet's rule-hit history is kept (the dashboard's longest
/// window).
const HIT_HISTORY_SECS: f64 = 86_400.0 + 60.0;

/// A name for this process among the fleet's: the host and the process id.
fn replica_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "host".into());
    format!("{host}:{}", std::process::id())
}

/// Each migration's statements, in order (index 0 is version 1).
const MIGRATIONS: [&str; 2] = [
    "
CREATE TABLE parallax_approvals (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL,
    rule_ids TEXT NOT NULL,
    reason TEXT NOT NULL,
    approvers TEXT NOT NULL,
    on_timeout TEXT NOT NULL,
    event TEXT NOT NULL,
    session_id TEXT,
    decided_by TEXT,
    decided_at DOUBLE PRECISION,
    comment TEXT,
    outcome TEXT,
    approved_action TEXT NOT NULL,
    approved_event TEXT,
    via TEXT NOT NULL DEFAULT '[]',
    slack_channel TEXT,
    slack_ts TEXT,
    recipient_keys TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX parallax_approvals_pending ON parallax_approvals (status, expires_at);
CREATE INDEX parallax_approvals_created ON parallax_approvals (created_at);
CREATE TABLE parallax_known_recipients (
    key TEXT PRIMARY KEY,
    first_seen DOUBLE PRECISION NOT NULL
);
",
    "
CREATE TABLE parallax_rule_hits (
    at DOUBLE PRECISION NOT NULL,
    replica TEXT NOT NULL,
    rule_id TEXT NOT NULL,
    hits BIGINT NOT NULL,
    PRIMARY KEY (at, replica, rule_id)
);
CREATE INDEX parallax_rule_hits_at ON parallax_rule_hits (at);
",
];

/// Serialises migrations between replicas starting at once (an arbitrary
/// constant: "parallax" in ASCII).
const MIGRATION_LOCK: i64 = 0x7061_7261_6c6c_6178;

const COLUMNS: &str = "id, status, created_at, expires_at, rule_ids, reason, approvers, \
    on_timeout, event, session_id, decided_by, decided_at, comment, outcome, approved_action, \
    approved_event, via, slack_channel, slack_ts, recipient_keys";

type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;
/// Work for the store's thread: given a connection (or none, when the
/// database cannot be reached), it answers its caller itself.
type Job = Box<dyn FnOnce(Result<Arc<Client>, String>) -> BoxFuture + Send>;

pub struct PostgresStore {
    jobs: mpsc::UnboundedSender<Job>,
    timeout: Duration,
    /// Woken by every notification (another replica's change) and after a
    /// reconnect.
    changed: Arc<Notify>,
    /// This process among the fleet's, for the rows it writes.
    replica: String,
}

/// Where the database is, for messages: host, port and database, never
/// the password.
fn describe(config: &Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(h) => h.clone(),
            tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
        })
        .unwrap_or_else(|| "localhost".into());
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config.get_dbname().unwrap_or("(default)");
    format!("{host}:{port}/{db}")
}

/// The error of a failed statement, as a message without secrets.
fn pg(e: tokio_postgres::Error) -> StoreError {
    let detail = e
        .as_db_error()
        .map(|d| format!("{}: {}", d.code().code(), d.message()))
        .unwrap_or_else(|| e.to_string());
    StoreError::Postgres(detail)
}

impl PostgresStore {
    /// Connects, applies the migrations and starts the store's thread;
    /// an unreachable database, bad credentials or a newer schema stop the
    /// start with the reason.
    pub fn open(settings: &PostgresSettings) -> Result<PostgresStore, StoreError> {
        let changed = Arc::new(Notify::new());
        let url = match (&settings.url, &settings.url_env) {
            (Some(u), _) => u.clone(),
            (None, Some(var)) => std::env::var(var).map_err(|_| {
                StoreError::Postgres(format!(
                    "store.postgres.url_env names {var}, which is not set"
                ))
            })?,
            (None, None) => {
                return Err(StoreError::Postgres(
                    "store.postgres needs url or url_env".into(),
                ))
            }
        };
        let mut config: Config = url.parse().map_err(|e| {
            StoreError::Postgres(format!(
                "store.postgres.url is not a connection string: {e}"
            ))
        })?;
        let timeout = Duration::from_millis(settings.timeout_ms.max(1));
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(timeout);
        }
        let target = describe(&config);
        let (tx, rx) = mpsc::unbounded_channel();
        let pool = settings.pool.max(1);
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
        let woken = changed.clone();
        std::thread::Builder::new()
            .name("parallax-postgres".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(StoreError::Postgres(format!(
                            "cannot start the store's runtime: {e}"
                        ))));
                        return;
                    }
                };
                rt.block_on(serve(config, pool, rx, woken, ready_tx));
            })
            .map_err(|e| StoreError::Postgres(format!("cannot start the store's thread: {e}")))?;
        match ready_rx.recv_timeout(timeout * 3 + Duration::from_secs(5)) {
            Ok(Ok(())) => {
                tracing::info!(database = %target, pool, "approvals are kept in PostgreSQL");
                Ok(PostgresStore {
                    jobs: tx,
                    timeout,
                    changed,
                    replica: replica_name(),
                })
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(StoreError::Postgres(format!(
                "{target} did not answer while starting"
            ))),
        }
    }

    /// What is woken when another replica changes an approval.
    pub fn changed(&self) -> Arc<Notify> {
        self.changed.clone()
    }

    /// This process's name among the fleet's (host and process id).
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// Adds this replica's rule hits since its last sample, at `at` (epoch
    /// seconds), to the fleet's history, and drops history older than a
    /// day; without waiting (a missed sample loses ten seconds of counts
    /// from the chart, never a verdict).
    pub fn record_hits(&self, at: f64, hits: Vec<(String, i64)>) {
        if hits.is_empty() {
            return;
        }
        let replica = self.replica.clone();
        let oldest = at - HIT_HISTORY_SECS;
        let job: Job = Box::new(move |client| {
            Box::pin(async move {
                let Ok(c) = client else { return };
                let (rules, counts): (Vec<String>, Vec<i64>) = hits.into_iter().unzip();
                let written = c
                    .execute(
                        "INSERT INTO parallax_rule_hits (at, replica, rule_id, hits) \
                         SELECT $1, $2, r, n FROM unnest($3::text[], $4::bigint[]) AS t(r, n) \
                         ON CONFLICT (at, replica, rule_id) \
                         DO UPDATE SET hits = parallax_rule_hits.hits + excluded.hits",
                        &[&at, &replica, &rules, &counts],
                    )
                    .await;
                let pruned = c
                    .execute("DELETE FROM parallax_rule_hits WHERE at < $1", &[&oldest])
                    .await;
                if let Err(e) = written.and(pruned) {
                    tracing::warn!(error = %e, "rule hits were not added to the fleet's history");
                }
            })
        });
        let _ = self.jobs.send(job);
    }

    /// The fleet's rule hits since `since` (epoch seconds): per sample
    /// time, per rule, summed over the replicas, oldest first.
    pub fn hits_since(&self, since: f64) -> Result<Vec<(f64, String, u64)>, StoreError> {
        self.call(move |c| async move {
            let rows = c
                .query(
                    "SELECT at, rule_id, sum(hits)::bigint FROM parallax_rule_hits \
                     WHERE at > $1 GROUP BY at, rule_id ORDER BY at",
                    &[&since],
                )
                .await
                .map_err(pg)?;
            Ok(rows
                .iter()
                .filter_map(|r| {
                    let at: f64 = r.try_get(0).ok()?;
                    let rule: String = r.try_get(1).ok()?;
                    let n: i64 = r.try_get(2).ok()?;
                    Some((at, rule, n.max(0) as u64))
                })
                .collect())
        })
    }

    /// Runs `f` on the store's thread with a connection and waits for its
    /// answer, at most `timeout_ms`.
    fn call<T, F, Fut>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Client>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let job: Job = Box::new(move |client| {
            Box::pin(async move {
                let answer = match client {
                    Ok(c) => f(c).await,
                    Err(why) => Err(StoreError::Postgres(why)),
                };
                let _ = tx.send(answer);
            })
        });
        self.jobs
            .send(job)
            .map_err(|_| StoreError::Postgres("the store's thread has stopped".into()))?;
        rx.recv_timeout(self.timeout).map_err(|_| {
            StoreError::Postgres(format!(
                "no answer within store.postgres.timeout_ms ({} ms)",
                self.timeout.as_millis()
            ))
        })?
    }
}

/// The connections of the store's thread.
struct Pool {
    config: Config,
    /// TLS as the connection string's `sslmode` asks (`prefer`, the
    /// default, uses it when the server offers it; `require` insists),
    /// verified against Mozilla's roots.
    tls: tokio_postgres_rustls::MakeRustlsConnect,
    size: usize,
    clients: Vec<Arc<Client>>,
    /// The connection the next job gets (round robin).
    next: usize,
    last_attempt: Option<Instant>,
    last_error: String,
    changed: Arc<Notify>,
}

impl Pool {
    /// A live connection, reconnecting the pool when one has closed.
    async fn client(&mut self) -> Result<Arc<Client>, String> {
        if self.clients.is_empty() || self.clients.iter().any(|c| c.is_closed()) {
            let now = Instant::now();
            let recent = self
                .last_attempt
                .is_some_and(|t| now.duration_since(t) < Duration::from_millis(250));
            if recent && !self.last_error.is_empty() {
                return Err(self.last_error.clone());
            }
            self.last_attempt = Some(now);
            match self.connect().await {
                Ok(()) => {
                    if !self.last_error.is_empty() {
                        tracing::info!("the PostgreSQL approvals store is reachable again");
                    }
                    self.last_error.clear();
                    // Whatever changed while we were away: every waiter
                    // re-reads now.
                    self.changed.notify_waiters();
                }
                Err(e) => {
                    if self.last_error.is_empty() {
                        tracing::error!(error = %e, "the PostgreSQL approvals store is unreachable");
                    }
                    self.clients.clear();
                    self.last_error = e.clone();
                    return Err(e);
                }
            }
        }
        let i = self.next % self.clients.len();
        self.next = self.next.wrapping_add(1);
        Ok(self.clients[i].clone())
    }

    /// Opens `size` connections; the first LISTENs.
    async fn connect(&mut self) -> Result<(), String> {
        self.clients.clear();
        let target = describe(&self.config);
        for i in 0..self.size {
            let (client, mut connection) = self
                .config
                .connect(self.tls.clone())
                .await
                .map_err(|e| format!("cannot connect to {target}: {e}"))?;
            let changed = self.changed.clone();
            tokio::spawn(async move {
                loop {
                    match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                        Some(Ok(AsyncMessage::Notification(_))) => changed.notify_waiters(),
                        Some(Ok(_)) => {}
                        Some(Err(e)) => {
                            tracing::warn!(error = %e, "a PostgreSQL connection closed");
                            break;
                        }
                        None => break,
                    }
                }
            });
            if i == 0 {
                client
                    .batch_execute(&format!("LISTEN {CHANNEL}"))
                    .await
                    .map_err(|e| format!("cannot LISTEN on {target}: {e}"))?;
            }
            self.clients.push(Arc::new(client));
        }
        Ok(())
    }
}

/// The store's thread: connect and migrate (answering `ready`), then serve
/// jobs, each as a task of its own so a slow statement holds up no other.
async fn serve(
    config: Config,
    size: usize,
    mut jobs: mpsc::UnboundedReceiver<Job>,
    changed: Arc<Notify>,
    ready: std::sync::mpsc::SyncSender<Result<(), StoreError>>,
) {
    let tls = match tls_connector() {
        Ok(t) => t,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let mut pool = Pool {
        config,
        tls,
        size,
        clients: Vec::new(),
        next: 0,
        last_attempt: None,
        last_error: String::new(),
        changed,
    };
    let first = match pool.client().await {
        Ok(c) => migrate(&c).await,
        Err(e) => Err(StoreError::Postgres(e)),
    };
    let failed = first.is_err();
    let _ = ready.send(first);
    if failed {
        return;
    }
    while let Some(job) = jobs.recv().await {
        let client = pool.client().await;
        tokio::spawn(job(client));
    }
}

/// The rustls connector (ring, Mozilla's roots).
fn tls_connector() -> Result<tokio_postgres_rustls::MakeRustlsConnect, StoreError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| StoreError::Postgres(format!("TLS set-up: {e}")))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// Applies the migrations this database lacks, under an advisory lock.
async fn migrate(client: &Client) -> Result<(), StoreError> {
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS parallax_schema (version INTEGER NOT NULL, \
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
        )
        .await
        .map_err(pg)?;
    client.batch_execute("BEGIN").await.map_err(pg)?;
    let result = async {
        client
            .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await
            .map_err(pg)?;
        let row = client
            .query_one("SELECT coalesce(max(version), 0) FROM parallax_schema", &[])
            .await
            .map_err(pg)?;
        let found: i32 = row.get(0);
        if found > SCHEMA_VERSION {
            return Err(StoreError::SchemaTooNew {
                found,
                supported: SCHEMA_VERSION,
            });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate() {
            let version = i as i32 + 1;
            if version > found {
                client.batch_execute(sql).await.map_err(pg)?;
                client
                    .execute(
                        "INSERT INTO parallax_schema (version) VALUES ($1)",
                        &[&version],
                    )
                    .await
                    .map_err(pg)?;
                tracing::info!(version, "applied a PostgreSQL schema migration");
            }
        }
        Ok(())
    }
    .await;
    let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
    client.batch_execute(end).await.map_err(pg)?;
    result
}

fn raw(r: &Row) -> Result<RawRow, StoreError> {
    let get = |e: tokio_postgres::Error| StoreError::Corrupt(e.to_string());
    Ok(RawRow {
        id: r.try_get(0).map_err(get)?,
        status: r.try_get(1).map_err(get)?,
        created_at: r.try_get(2).map_err(get)?,
        expires_at: r.try_get(3).map_err(get)?,
        rule_ids: r.try_get(4).map_err(get)?,
        reason: r.try_get(5).map_err(get)?,
        approvers: r.try_get(6).map_err(get)?,
        on_timeout: r.try_get(7).map_err(get)?,
        event: r.try_get(8).map_err(get)?,
        session_id: r.try_get(9).map_err(get)?,
        decided_by: r.try_get(10).map_err(get)?,
        decided_at: r.try_get(11).map_err(get)?,
        comment: r.try_get(12).map_err(get)?,
        outcome: r.try_get(13).map_err(get)?,
        approved_action: r.try_get(14).map_err(get)?,
        approved_event: r.try_get(15).map_err(get)?,
        via: r.try_get(16).map_err(get)?,
        slack_channel: r.try_get(17).map_err(get)?,
        slack_ts: r.try_get(18).map_err(get)?,
        recipient_keys: r.try_get(19).map_err(get)?,
    })
}

impl ApprovalBackend for PostgresStore {
    fn known_recipients(&self, keys: &[String]) -> Result<Vec<bool>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let keys = keys.to_vec();
        self.call(move |c| async move {
            let rows = c
                .query(
                    "SELECT key FROM parallax_known_recipients WHERE key = ANY($1)",
                    &[&keys],
                )
                .await
                .map_err(pg)?;
            let known: std::collections::HashSet<String> =
                rows.iter().filter_map(|r| r.try_get(0).ok()).collect();
            Ok(keys.iter().map(|k| known.contains(k)).collect())
        })
    }

    fn remember_recipients(&self, keys: &[String], at: f64) -> Result<(), StoreError> {
        let keys = keys.to_vec();
        self.call(move |c| async move {
            c.execute(
                "INSERT INTO parallax_known_recipients (key, first_seen) \
                 SELECT k, $2 FROM unnest($1::text[]) AS k ON CONFLICT (key) DO NOTHING",
                &[&keys, &at],
            )
            .await
            .map_err(pg)?;
            Ok(())
        })
    }

    fn set_slack_card(&self, id: &str, channel: &str, ts: &str) -> Result<(), StoreError> {
        let (id, channel, ts) = (id.to_string(), channel.to_string(), ts.to_string());
        self.call(move |c| async move {
            c.execute(
                "UPDATE parallax_approvals SET slack_channel = $2, slack_ts = $3 WHERE id = $1",
                &[&id, &channel, &ts],
            )
            .await
            .map_err(pg)?;
            Ok(())
        })
    }

    fn insert(&self, a: &NewApproval) -> Result<(), StoreError> {
        let values: (String, f64, f64, String, String, String, &'static str) = (
            a.id.clone(),
            a.created_at,
            a.expires_at,
            json(&a.rule_ids),
            a.reason.clone(),
            json(&a.approvers),
            timeout_str(a.on_timeout),
        );
        let rest: (
            String,
            Option<String>,
            &'static str,
            Option<String>,
            String,
            String,
        ) = (
            a.event.to_string(),
            a.session_id.clone(),
            a.approved_action.as_str(),
            a.approved_event.as_ref().map(|v| v.to_string()),
            json(&a.via),
            json(&a.recipient_keys),
        );
        self.call(move |c| async move {
            let (id, created, expires, rule_ids, reason, approvers, on_timeout) = values;
            let (event, session, action, approved_event, via, keys) = rest;
            c.execute(
                "INSERT INTO parallax_approvals (id, status, created_at, expires_at, rule_ids, \
                 reason, approvers, on_timeout, event, session_id, approved_action, \
                 approved_event, via, recipient_keys) \
                 VALUES ($1, 'pending', $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
                &[
                    &id,
                    &created,
                    &expires,
                    &rule_ids,
                    &reason,
                    &approvers,
                    &on_timeout,
                    &event,
                    &session,
                    &action,
                    &approved_event,
                    &via,
                    &keys,
                ],
            )
            .await
            .map_err(pg)?;
            Ok(())
        })
    }

    fn get(&self, id: &str) -> Result<Option<Approval>, StoreError> {
        let id = id.to_string();
        self.call(move |c| async move {
            let sql = format!("SELECT {COLUMNS} FROM parallax_approvals WHERE id = $1");
            let row = c.query_opt(&sql, &[&id]).await.map_err(pg)?;
            row.map(|r| raw(&r)?.parse()).transpose()
        })
    }

    fn list(&self, status: Option<Status>, limit: usize) -> Result<Vec<Approval>, StoreError> {
        let limit = limit.min(i64::MAX as usize) as i64;
        self.call(move |c| async move {
            let rows = match status {
                Some(s) => {
                    let sql = format!(
                        "SELECT {COLUMNS} FROM parallax_approvals WHERE status = $1 \
                         ORDER BY created_at DESC LIMIT $2"
                    );
                    c.query(&sql, &[&s.as_str(), &limit]).await
                }
                None => {
                    let sql = format!(
                        "SELECT {COLUMNS} FROM parallax_approvals ORDER BY created_at DESC \
                         LIMIT $1"
                    );
                    c.query(&sql, &[&limit]).await
                }
            }
            .map_err(pg)?;
            rows.iter().map(|r| raw(r)?.parse()).collect()
        })
    }

    fn decide(
        &self,
        id: &str,
        status: Status,
        by: &str,
        comment: Option<&str>,
        at: f64,
    ) -> Result<bool, StoreError> {
        let outcome = status.outcome();
        let (id, by, comment) = (id.to_string(), by.to_string(), comment.map(str::to_string));
        self.call(move |c| async move {
            let n = c
                .execute(
                    "UPDATE parallax_approvals SET status = $2, decided_by = $3, comment = $4, \
                     decided_at = $5, outcome = $6 \
                     WHERE id = $1 AND status = 'pending' AND expires_at > $5",
                    &[&id, &status.as_str(), &by, &comment, &at, &outcome],
                )
                .await
                .map_err(pg)?;
            Ok(n == 1)
        })
    }

    fn expire_due(&self, now: f64) -> Result<Vec<String>, StoreError> {
        self.call(move |c| async move {
            let rows = c
                .query(
                    "UPDATE parallax_approvals SET status = 'expired', decided_at = $1, \
                     outcome = on_timeout \
                     WHERE status = 'pending' AND expires_at <= $1 RETURNING id",
                    &[&now],
                )
                .await
                .map_err(pg)?;
            Ok(rows.iter().filter_map(|r| r.try_get(0).ok()).collect())
        })
    }

    /// NOTIFY, without waiting: the transition is recorded already, and a
    /// replica that misses the notification still re-reads within its poll.
    fn announce(&self, id: &str) {
        let id = id.to_string();
        let job: Job = Box::new(move |client| {
            Box::pin(async move {
                if let Ok(c) = client {
                    if let Err(e) = c
                        .execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &id])
                        .await
                    {
                        tracing::warn!(error = %e, "could not announce an approval's change");
                    }
                }
            })
        });
        let _ = self.jobs.send(job);
    }

    fn kind(&self) -> &'static str {
        "postgres"
    }
}
