//! The front doors' settings: `server:`, `reporting:` and `proxy:` in
//! `parallax.yaml`, typed and checked here, in the binary that serves them.
//!
//! The compiler carries these sections through as written
//! ([`parallax_runtime::FrontDoorSections`]), so the runtime crate does not
//! grow with each front door; this module turns them into types, naming the
//! key of the first problem (`server.port: invalid type: ...`). `build.rs`
//! includes this file too, so a baked config with a bad section fails the
//! build, not the first start. It therefore uses nothing of the crate
//! around it: only serde and the runtime's types.

use parallax_runtime::{
    Action, FailMode, Priority, ProgramSettings, StateSettings, FRONT_DOOR_KEYS,
};
use serde::{Deserialize, Serialize};

/// Every setting the binary runs with.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub server: ServerSettings,
    pub reporting: ReportingSettings,
    pub proxy: ProxySettings,
    pub mcp: McpSettings,
    pub approvals: ApprovalsSettings,
    /// Reloading the rules when their files change.
    pub reload: ReloadSettings,
    /// OpenTelemetry traces: a span per decision (`crate::telemetry`).
    pub telemetry: TelemetrySettings,
    /// Token and cost budgets on the proxy's model calls.
    pub budgets: BudgetsSettings,
    /// Where state a fleet shares lives (approvals, known recipients).
    pub store: StoreSettings,
    /// Which token names which tenant (their overlays are compiled into
    /// the rules: `parallax_compiler::tenants`).
    pub tenants: std::collections::BTreeMap<String, TenantAuth>,
    /// The SQL rules' side-store (typed by the runtime, which opens it).
    pub state: StateSettings,
}

impl Settings {
    /// The settings `program` carries: its side-store settings, and its
    /// front-door sections parsed strictly. Every problem is listed, one
    /// message each, naming the key.
    pub fn from_program(program: &ProgramSettings) -> Result<Settings, Vec<String>> {
        let mut settings = Settings {
            state: program.state.clone(),
            ..Settings::default()
        };
        let mut problems = Vec::new();
        for key in program.front_doors.keys() {
            if !FRONT_DOOR_KEYS.contains(&key.as_str()) {
                problems.push(format!("`{key}` is not a front-door section"));
            }
        }
        let sections = &program.front_doors;
        if let Some(v) = sections.get("server") {
            parse_section("server", v, &mut settings.server, &mut problems);
        }
        if let Some(v) = sections.get("reporting") {
            parse_section("reporting", v, &mut settings.reporting, &mut problems);
        }
        if let Some(v) = sections.get("proxy") {
            parse_section("proxy", v, &mut settings.proxy, &mut problems);
        }
        if let Some(v) = sections.get("mcp") {
            parse_section("mcp", v, &mut settings.mcp, &mut problems);
        }
        if let Some(v) = sections.get("approvals") {
            parse_section("approvals", v, &mut settings.approvals, &mut problems);
        }
        if let Some(v) = sections.get("store") {
            parse_section("store", v, &mut settings.store, &mut problems);
        }
        if let Some(v) = sections.get("tenants") {
            parse_section("tenants", v, &mut settings.tenants, &mut problems);
        }
        if let Some(v) = sections.get("budgets") {
            parse_section("budgets", v, &mut settings.budgets, &mut problems);
        }
        if let Some(v) = sections.get("reload") {
            parse_section("reload", v, &mut settings.reload, &mut problems);
        }
        if let Some(v) = sections.get("telemetry") {
            parse_section("telemetry", v, &mut settings.telemetry, &mut problems);
        }
        if problems.is_empty() {
            Ok(settings)
        } else {
            Err(problems)
        }
    }
}

/// Parses one section into `out`, or adds a message naming the key path
/// that is wrong.
fn parse_section<T: serde::de::DeserializeOwned>(
    name: &str,
    value: &serde_json::Value,
    out: &mut T,
    problems: &mut Vec<String>,
) {
    match serde_path_to_error::deserialize::<_, T>(value) {
        Ok(v) => *out = v,
        Err(e) => {
            let path = e.path().to_string();
            let at = if path == "." || path.is_empty() {
                name.to_string()
            } else {
                format!("{name}.{path}")
            };
            problems.push(format!("{at}: {}", e.into_inner()));
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerSettings {
    /// Loopback by default: exposing a security engine is a decision.
    pub host: String,
    pub port: u16,
    /// Largest accepted request body; larger bodies get 413.
    pub max_body_bytes: usize,
    /// Bearer token every endpoint but `/health` requires (the environment
    /// variable `PARALLAX_AUTH_TOKEN` overrides it). `None`: no auth.
    pub auth_token: Option<String>,
    /// Largest accepted request head (request line plus headers).
    pub max_header_bytes: usize,
    /// Time a client gets to send its request head and body.
    pub request_timeout_ms: u64,
    /// Connections served at once; a connection beyond them is answered
    /// at once with 503 JSON and closed (never queued).
    pub max_connections: usize,
    /// A keep-alive connection that sends no complete request head within
    /// this long of being accepted or of its last response is closed.
    pub idle_timeout_ms: u64,
    /// Deadline on one evaluation (`POST /evaluate` and every async front
    /// door): past it the request is answered by `fail_mode`, so no input
    /// can hold a worker. Events of more than a few KiB of text run on the
    /// blocking pool under it; smaller ones finish in microseconds.
    pub eval_timeout_ms: u64,
    /// Deepest JSON nesting accepted in an event.
    pub max_json_depth: usize,
    /// Longest string (bytes) accepted anywhere in an event.
    pub max_string_bytes: usize,
    /// The verdict when evaluation itself fails.
    pub fail_mode: FailMode,
    /// Every rule in monitor mode: verdicts are computed and logged, but
    /// the returned action is at most `detect`.
    pub monitor: bool,
    /// What is built at start-up, before the server says it is ready.
    pub prebuild: Prebuild,
}

/// [`ServerSettings::prebuild`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Prebuild {
    /// The literal automata and gates every event goes through; each
    /// verifier (a rule's regex, checked where its literals hit) is built
    /// the first time an event needs it. Most verifiers never run on a
    /// given deployment's traffic, and their compiled forms were most of
    /// the idle memory (docs/PERFORMANCE.md, "Memory").
    #[default]
    Scanners,
    /// Everything, verifiers included: the first event that needs a
    /// verifier does not wait for it, at the cost of tens of MB held
    /// whether or not they ever run.
    All,
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            host: "127.0.0.1".into(),
            port: 9920,
            max_body_bytes: 1024 * 1024,
            auth_token: None,
            max_header_bytes: 16 * 1024,
            request_timeout_ms: 10_000,
            max_connections: 4096,
            idle_timeout_ms: 5_000,
            eval_timeout_ms: 2_000,
            max_json_depth: 64,
            max_string_bytes: 512 * 1024,
            fail_mode: FailMode::Closed,
            monitor: false,
            prebuild: Prebuild::Scanners,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReportingSettings {
    /// JSON-lines audit log.
    pub log_file: Option<String>,
    pub webhook_url: Option<String>,
    /// Verdicts that trigger the webhook.
    pub webhook_events: Vec<Action>,
    /// Log `allow` verdicts with no matched rule too.
    pub log_allows: bool,
    /// Longest time a written audit line waits in the writer's buffer.
    pub flush_ms: u64,
    /// When the audit writer asks the OS to put lines on disk.
    pub fsync: FsyncPolicy,
    /// Rotate the audit log when it would grow past this size (0: never).
    pub max_bytes: u64,
    /// Rotated audit logs kept (`log.1` … `log.N`).
    pub keep: usize,
    /// Audit lines waiting for the writer, at most.
    pub queue_size: usize,
    /// What a request does when the audit queue is full.
    pub on_full: OnFull,
    /// HMAC-SHA256 key signing webhook bodies.
    pub webhook_secret: Option<String>,
    pub webhook_format: WebhookFormat,
    /// Time one webhook attempt may take.
    pub webhook_timeout_ms: u64,
    /// Retries after the first failed attempt.
    pub webhook_retries: u32,
    /// Webhook notifications waiting to be sent, at most.
    pub webhook_queue_size: usize,
    /// Paging through PagerDuty's Events API v2 (`crate::pagerduty`).
    pub pagerduty: Option<PagerDutySettings>,
}

/// `reporting.pagerduty`: an incident per session and rule when a rule
/// blocks or holds a call, resolved when its approval is decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PagerDutySettings {
    /// The integration's routing key (Events API v2). A secret: never
    /// logged.
    pub routing_key: String,
    /// Where events are sent (tests point it at a fake).
    pub events_url: String,
    /// The verdicts that page: `block` and `approve` by default.
    pub on: Vec<Action>,
    /// Rules below this priority do not page.
    pub min_priority: Priority,
    /// Only these rules page (ids; a trailing `*` matches a prefix); empty:
    /// every rule.
    pub rules: Vec<String>,
    /// Time one attempt may take.
    pub timeout_ms: u64,
    /// Retries after a failed attempt (transport error, 5xx, 429).
    pub retries: u32,
    /// Events waiting to be sent, at most (more are dropped and counted).
    pub queue_size: usize,
}

impl Default for PagerDutySettings {
    fn default() -> Self {
        PagerDutySettings {
            routing_key: String::new(),
            events_url: "https://events.pagerduty.com/v2/enqueue".into(),
            on: vec![Action::Block, Action::Approve],
            min_priority: Priority::High,
            rules: Vec::new(),
            timeout_ms: 5_000,
            retries: 4,
            queue_size: 1024,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsyncPolicy {
    /// Leave it to the OS.
    Never,
    /// After every flush (every `flush_ms` at most).
    #[default]
    Flush,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnFull {
    /// Drop the line, count it in metrics and warn.
    #[default]
    Drop,
    /// Make the request wait for room (back-pressure).
    Block,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WebhookFormat {
    /// The audit record as JSON.
    #[default]
    Json,
    /// A Slack incoming-webhook message.
    Slack,
}

impl Default for ReportingSettings {
    fn default() -> Self {
        ReportingSettings {
            log_file: None,
            webhook_url: None,
            webhook_events: vec![Action::Block],
            log_allows: true,
            flush_ms: 200,
            fsync: FsyncPolicy::Flush,
            max_bytes: 100 * 1024 * 1024,
            keep: 5,
            queue_size: 8192,
            on_full: OnFull::Drop,
            webhook_secret: None,
            webhook_format: WebhookFormat::Json,
            webhook_timeout_ms: 5_000,
            webhook_retries: 4,
            webhook_queue_size: 1024,
            pagerduty: None,
        }
    }
}

/// The model-API proxy (`proxy:`), served on the API's own listener under
/// `/anthropic/...` and `/openai/...` (docs/PROXY.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProxySettings {
    /// Serve the proxy routes (`serve --mode proxy` sets it too).
    pub enabled: bool,
    /// Where `/anthropic/...` goes: `/anthropic/v1/messages` becomes
    /// `<anthropic_upstream>/v1/messages`.
    pub anthropic_upstream: String,
    /// Where `/openai/...` goes: `/openai/v1/responses` becomes
    /// `<openai_upstream>/v1/responses`.
    pub openai_upstream: String,
    /// A request header naming the session (the SQL rules' window key);
    /// without it the session comes from the request body where the API
    /// has one, else from the client connection.
    pub session_header: String,
    /// Time to open a connection to the upstream (TCP and TLS).
    pub connect_timeout_ms: u64,
    /// Time to the upstream's response head; a model may think for a while.
    pub response_timeout_ms: u64,
    /// Longest silence inside a streamed upstream response.
    pub stream_idle_timeout_ms: u64,
    /// Pooled upstream connections idle longer than this are closed.
    pub pool_idle_timeout_ms: u64,
    /// Largest model request body read (history included).
    pub max_request_bytes: usize,
    /// Largest non-streamed model response read.
    pub max_response_bytes: usize,
    /// While a streamed tool call is held for its verdict, a keep-alive
    /// (Anthropic `ping`, an SSE comment for OpenAI) goes out this often.
    pub keepalive_ms: u64,
    /// More model servers, each served at `/<name>/...`: OpenAI-compatible
    /// ones (Ollama, vLLM, LM Studio, Azure OpenAI) or another Anthropic
    /// Messages endpoint. Ordered by name so the listing is stable.
    pub upstreams: std::collections::BTreeMap<String, NamedUpstream>,
}

/// One entry of `proxy.upstreams`: a model server the agent reaches at
/// `/<name>/...` on Parallax's listener, `/<name>/v1/chat/completions`
/// forwarded to `<base_url>/v1/chat/completions` and inspected like
/// `/openai/...` traffic is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedUpstream {
    /// Scheme, host and an optional path prefix, e.g.
    /// `http://127.0.0.1:11434` or `https://myres.openai.azure.com`.
    pub base_url: String,
    /// The API shape the server speaks.
    pub api: UpstreamApi,
    /// A credential Parallax adds to every request it forwards there, read
    /// from the environment at start-up (never from the config file), so
    /// the agent need not hold it.
    #[serde(default)]
    pub auth: Option<UpstreamAuth>,
    /// What happens to a request that is not one of the inspected model
    /// endpoints (a model list, embeddings, a server's native API):
    /// `forward` it as it is, or `refuse` it, for servers whose other
    /// routes could carry model traffic Parallax does not read.
    #[serde(default)]
    pub other_paths: OtherPaths,
}

/// The API shape of a named upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UpstreamApi {
    /// OpenAI's Chat Completions and Responses: any path ending in
    /// `/chat/completions` or `/responses` is a model call (`/v1/...`,
    /// Azure's `/openai/deployments/{name}/...`, a base with `/v1` in it).
    Openai,
    /// Anthropic's Messages: a path ending in `/v1/messages`.
    Anthropic,
}

/// `proxy.upstreams.<name>.auth`: the header to set and the environment
/// variable holding its value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamAuth {
    /// `authorization`, `api-key` (Azure), `x-api-key` (Anthropic)...
    pub header: String,
    /// The environment variable whose value is sent.
    pub env: String,
    /// Put before the value with a space, e.g. `Bearer`.
    #[serde(default)]
    pub scheme: Option<String>,
}

/// `proxy.upstreams.<name>.other_paths`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OtherPaths {
    #[default]
    Forward,
    Refuse,
}

impl Default for ProxySettings {
    fn default() -> Self {
        ProxySettings {
            enabled: false,
            anthropic_upstream: "https://api.anthropic.com".into(),
            openai_upstream: "https://api.openai.com".into(),
            session_header: "x-parallax-session".into(),
            connect_timeout_ms: 10_000,
            response_timeout_ms: 600_000,
            stream_idle_timeout_ms: 300_000,
            pool_idle_timeout_ms: 90_000,
            max_request_bytes: 32 * 1024 * 1024,
            max_response_bytes: 32 * 1024 * 1024,
            keepalive_ms: 5_000,
            upstreams: Default::default(),
        }
    }
}

/// How a request is known to come from a tenant: the SHA-256 (hex) of
/// each of its bearer tokens. The rest of the tenant's section is rules,
/// compiled into the program.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantAuth {
    pub token_sha256: Vec<String>,
}

/// Where state a fleet's replicas share lives (`store:`): without a
/// section, approvals and the known-recipients memory stay in the SQLite
/// file `approvals.path`, one host's.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreSettings {
    /// PostgreSQL, shared by every replica pointed at it.
    pub postgres: Option<PostgresSettings>,
}

/// `store.postgres`: the database approvals and the known-recipients
/// memory live in. Exactly one of `url` and `url_env`.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostgresSettings {
    /// A libpq connection string (`postgres://user@host:5432/db?sslmode=
    /// require` or `host=... user=...`). A password written here is in the
    /// config file: prefer `url_env`.
    #[serde(default)]
    pub url: Option<String>,
    /// The environment variable holding the connection string.
    #[serde(default)]
    pub url_env: Option<String>,
    /// Connections kept open (one of them also LISTENs for other
    /// replicas' changes).
    #[serde(default = "default_pg_pool")]
    pub pool: usize,
    /// How long one statement may take before the store counts as down
    /// (the call then fails closed).
    #[serde(default = "default_pg_timeout_ms")]
    pub timeout_ms: u64,
}

fn default_pg_pool() -> usize {
    2
}

fn default_pg_timeout_ms() -> u64 {
    2_000
}

/// The connection string may hold a password: never printed.
impl std::fmt::Debug for PostgresSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresSettings")
            .field("url", &self.url.as_ref().map(|_| "<set>"))
            .field("url_env", &self.url_env)
            .field("pool", &self.pool)
            .field("timeout_ms", &self.timeout_ms)
            .finish()
    }
}

/// Token and cost budgets (`budgets:`) on the model calls the proxy
/// forwards: each answer's usage is written to a ledger, and a request
/// whose session or user has spent a limit is answered with a block
/// instead of being forwarded (docs/PROXY.md, "Budgets").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BudgetsSettings {
    /// The ledger's SQLite file, so spending survives a restart; kept in
    /// memory without one.
    pub path: Option<String>,
    /// A request header naming the user a call is for; without it the
    /// user is the body's own (`metadata.user_id`, `user`,
    /// `safety_identifier`), else the session.
    pub user_header: String,
    /// Share of a limit at which a warning is logged and counted.
    pub warn_at: f64,
    /// Price per million tokens, by model name; a name ending in `*` is a
    /// prefix (`claude-sonnet-4*`), the longest one that fits wins.
    pub prices: std::collections::BTreeMap<String, ModelPrice>,
    /// The limits, each with one measure.
    pub limits: Vec<BudgetLimit>,
}

impl Default for BudgetsSettings {
    fn default() -> Self {
        BudgetsSettings {
            path: None,
            user_header: "x-parallax-user".into(),
            warn_at: 0.8,
            prices: Default::default(),
            limits: Vec::new(),
        }
    }
}

/// A model's price per million tokens (any currency; the limits are in
/// the same one).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    pub input: f64,
    pub output: f64,
}

/// One budget: an id (named in the block and the metrics) and exactly one
/// of the four measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetLimit {
    pub id: String,
    #[serde(default)]
    pub tokens_per_session: Option<u64>,
    #[serde(default)]
    pub tokens_per_user_per_day: Option<u64>,
    #[serde(default)]
    pub cost_per_session: Option<f64>,
    #[serde(default)]
    pub cost_per_user_per_day: Option<f64>,
}

/// Hot reload (`reload:`): `parallax serve` watches the config and every
/// rule file and folder it reads, and reloads as SIGHUP does once the files
/// have been quiet for `debounce_ms` (an editor's save is several events).
/// An edit that does not compile keeps the running rules; the error, with
/// its file and line, is logged and shown on `/health`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReloadSettings {
    /// Watch the files (off by default: SIGHUP and `POST /admin/reload`
    /// reload on request).
    pub watch: bool,
    /// Quiet time after the last change before reloading, in milliseconds.
    pub debounce_ms: u64,
}

impl Default for ReloadSettings {
    fn default() -> Self {
        ReloadSettings {
            watch: false,
            debounce_ms: 300,
        }
    }
}

/// The MCP gateway (`mcp:`): `parallax mcp wrap` and `parallax mcp proxy`
/// (docs/MCP.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpSettings {
    /// What happens to a tool of a `tools/list` result that a rule flags
    /// (a poisoned description) or whose definition changed within the
    /// session (a rug-pull).
    pub poisoned_tools: PoisonedTools,
    /// Largest JSON-RPC message (one stdio line, one HTTP body, one SSE
    /// event) read from either side; a larger one is answered with an
    /// error and never forwarded.
    pub max_message_bytes: usize,
    /// Tools (their names on the server, without the `mcp__<server>__`
    /// prefix) whose calls are memory writes, judged at `memory.before`
    /// as well, beside the ones recognised by name (`src/mcp/memory.rs`).
    pub memory_tools: Vec<String>,
    /// Refuse a `tools/call` whose arguments are outside the `inputSchema`
    /// the server gave the tool in its first `tools/list` of the session
    /// (a later, changed schema is a rug-pull and never loosens this).
    pub enforce_input_schema: bool,
}

/// [`McpSettings::poisoned_tools`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PoisonedTools {
    /// Left out of the list the client sees; a call to it is refused.
    #[default]
    Remove,
    /// Kept, its description prefixed with a warning naming the rules.
    Flag,
}

impl Default for McpSettings {
    fn default() -> Self {
        McpSettings {
            poisoned_tools: PoisonedTools::Remove,
            max_message_bytes: 64 * 1024 * 1024,
            memory_tools: Vec::new(),
            enforce_input_schema: false,
        }
    }
}

/// Human approvals (`approvals:`): where pending approvals are kept and who
/// may decide them (docs/APPROVALS.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalsSettings {
    /// The SQLite file pending approvals live in, so a restart loses none
    /// (relative to the working directory). Opened only when a rule asks
    /// for approval.
    pub path: String,
    /// The approvers, by name: each decides with `Authorization: Bearer
    /// <token>`. The agent's `server.auth_token` cannot decide.
    pub approver_tokens: std::collections::BTreeMap<String, String>,
    /// How long an approval waits for a decision unless its rule says.
    pub timeout_seconds: u64,
    /// The longest `?wait=SECONDS` a caller may hold a request for.
    pub max_wait_seconds: u64,
    /// Where every approval transition is POSTed (JSON, signed); the
    /// `created` notification carries approve / deny callback URLs.
    pub webhook_url: Option<String>,
    /// HMAC-SHA256 key signing the approvals webhook's bodies (as
    /// `reporting.webhook_secret` does) and keying its callback tokens;
    /// required with `webhook_url`.
    pub webhook_secret: Option<String>,
    /// The base of the callback URLs (how approvers' tools reach this
    /// server); default the address the server listens on.
    pub public_url: Option<String>,
    /// Time one notification attempt (webhook or Slack call) may take.
    pub notify_timeout_ms: u64,
    /// Retries after a failed notification attempt.
    pub notify_retries: u32,
    /// Notifications waiting to be sent, per notifier, at most.
    pub notify_queue_size: usize,
    /// The Slack card with Approve / Deny buttons.
    pub slack: ApprovalsSlackSettings,
}

impl Default for ApprovalsSettings {
    fn default() -> Self {
        ApprovalsSettings {
            path: "parallax-approvals.db".into(),
            approver_tokens: Default::default(),
            timeout_seconds: 600,
            max_wait_seconds: 600,
            webhook_url: None,
            webhook_secret: None,
            public_url: None,
            notify_timeout_ms: 5_000,
            notify_retries: 4,
            notify_queue_size: 1024,
            slack: ApprovalsSlackSettings::default(),
        }
    }
}

/// `approvals.slack`: a Block Kit card posted with `chat.postMessage` when
/// an approval is created, decided by its buttons through `POST
/// /slack/interactions`. Off unless `bot_token`, `channel` and
/// `signing_secret` are all set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalsSlackSettings {
    /// The Slack app's bot token (`xoxb-...`, scope `chat:write`).
    pub bot_token: Option<String>,
    /// The channel the cards go to (an id such as `C0123456789`).
    pub channel: Option<String>,
    /// The app's signing secret: interactions are verified with it.
    pub signing_secret: Option<String>,
    /// Slack's Web API (tests point it at a fake Slack).
    pub api_base: String,
    /// Slack user ids to approver names (`U0123ABC: alice`); a click by a
    /// user not listed is refused.
    pub approvers: std::collections::BTreeMap<String, String>,
}

impl ApprovalsSlackSettings {
    /// Whether any of the keys that switch Slack on is set.
    pub fn configured(&self) -> bool {
        self.bot_token.is_some() || self.channel.is_some() || self.signing_secret.is_some()
    }
}

impl Default for ApprovalsSlackSettings {
    fn default() -> Self {
        ApprovalsSlackSettings {
            bot_token: None,
            channel: None,
            signing_secret: None,
            api_base: "https://slack.com/api".into(),
            approvers: Default::default(),
        }
    }
}

/// `telemetry:`: OpenTelemetry traces, a span per decision exported over
/// OTLP. Off (no exporter, nothing queued) until `otlp` is given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetrySettings {
    /// Where spans go; `None`: no traces.
    pub otlp: Option<OtlpSettings>,
    /// `service.name` of the exported resource.
    pub service_name: String,
    /// Put the event (secrets masked as in the audit log) on each span.
    /// Off by default: a trace backend is rarely meant to hold prompts and
    /// tool arguments.
    pub include_content: bool,
    /// Finished spans waiting for the exporter, at most; past it a span is
    /// dropped (and counted), never waited for.
    pub queue_size: usize,
    /// Spans sent in one export request, at most.
    pub max_batch: usize,
    /// Longest time a finished span waits before its batch is sent.
    pub flush_ms: u64,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        TelemetrySettings {
            otlp: None,
            service_name: "parallax".into(),
            include_content: false,
            queue_size: 2048,
            max_batch: 512,
            flush_ms: 1000,
        }
    }
}

/// `telemetry.otlp`: the OTLP receiver (a Collector, or a backend that
/// takes OTLP itself).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtlpSettings {
    /// The receiver's base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` takes it
    /// (`http://collector:4318` for http/protobuf, where `/v1/traces` is
    /// added unless the path already ends with it; `http://collector:4317`
    /// for gRPC). `https://` uses TLS with the system's roots.
    pub endpoint: String,
    #[serde(default)]
    pub protocol: OtlpProtocol,
    /// Time one export request may take.
    #[serde(default = "default_otlp_timeout_ms")]
    pub timeout_ms: u64,
    /// Headers sent with every export (a backend's API key, say).
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
}

fn default_otlp_timeout_ms() -> u64 {
    10_000
}

/// The OTLP transports, named as `OTEL_EXPORTER_OTLP_PROTOCOL` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum OtlpProtocol {
    #[default]
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    #[serde(rename = "grpc")]
    Grpc,
}
