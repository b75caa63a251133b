//! Checks on operational settings that serde alone cannot make, run when a
//! config is loaded (serve, eval, lint), so a bad value stops start-up with
//! a clear message instead of surfacing at the first alert or request.

use super::Settings;
use crate::webhook;

/// Every problem found, one message each.
pub fn problems(s: &Settings) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(pd) = &s.reporting.pagerduty {
        if pd.routing_key.trim().is_empty() {
            out.push(
                "reporting.pagerduty.routing_key is empty: give the integration's routing key"
                    .into(),
            );
        }
        if let Err(e) = webhook::parse_url(&pd.events_url) {
            out.push(format!("reporting.pagerduty.events_url: {e}"));
        }
        if pd.on.is_empty() {
            out.push(
                "reporting.pagerduty.on is empty: name the verdicts that page (block, approve)"
                    .into(),
            );
        }
    }
    out.extend(crate::telemetry::settings_problems(&s.telemetry));
    if s.reload.watch && !(10..=60_000).contains(&s.reload.debounce_ms) {
        out.push(format!(
            "reload.debounce_ms is {}: give 10 to 60000 milliseconds",
            s.reload.debounce_ms
        ));
    }
    if let Some(url) = &s.reporting.webhook_url {
        if let Err(e) = webhook::parse_url(url) {
            out.push(e.to_string());
        }
    }
    if s.server
        .auth_token
        .as_deref()
        .is_some_and(|t| t.trim().is_empty())
    {
        out.push("server.auth_token is empty; remove it or set a real token".into());
    }
    if s.reporting
        .webhook_secret
        .as_deref()
        .is_some_and(str::is_empty)
    {
        out.push("reporting.webhook_secret is empty; remove it or set a real secret".into());
    }
    let positive = [
        ("server.max_connections", s.server.max_connections),
        ("server.max_json_depth", s.server.max_json_depth),
        ("server.max_string_bytes", s.server.max_string_bytes),
        ("server.max_header_bytes", s.server.max_header_bytes),
        ("reporting.queue_size", s.reporting.queue_size),
        (
            "reporting.webhook_queue_size",
            s.reporting.webhook_queue_size,
        ),
    ];
    for (name, v) in positive {
        if v == 0 {
            out.push(format!("{name} must be at least 1"));
        }
    }
    for (name, url) in [
        ("proxy.anthropic_upstream", &s.proxy.anthropic_upstream),
        ("proxy.openai_upstream", &s.proxy.openai_upstream),
    ] {
        if let Err(e) = crate::proxy::upstream::parse_base(url) {
            out.push(format!("{name}: {e}"));
        }
    }
    out.extend(crate::budgets::problems(&s.budgets));
    for (name, entry) in &s.proxy.upstreams {
        out.extend(crate::proxy::routes::entry_problems(name, entry));
    }
    if s.proxy
        .session_header
        .parse::<hyper::header::HeaderName>()
        .is_err()
    {
        out.push(format!(
            "proxy.session_header: `{}` is not a valid header name",
            s.proxy.session_header
        ));
    }
    for (name, v) in [
        ("proxy.connect_timeout_ms", s.proxy.connect_timeout_ms),
        ("proxy.response_timeout_ms", s.proxy.response_timeout_ms),
        (
            "proxy.stream_idle_timeout_ms",
            s.proxy.stream_idle_timeout_ms,
        ),
        ("proxy.keepalive_ms", s.proxy.keepalive_ms),
        ("mcp.max_message_bytes", s.mcp.max_message_bytes as u64),
        ("proxy.max_request_bytes", s.proxy.max_request_bytes as u64),
        (
            "proxy.max_response_bytes",
            s.proxy.max_response_bytes as u64,
        ),
    ] {
        if v == 0 {
            out.push(format!("{name} must be at least 1"));
        }
    }
    for (name, token) in &s.approvals.approver_tokens {
        if token.trim().is_empty() {
            out.push(format!("approvals.approver_tokens.{name} is empty"));
        } else if s.server.auth_token.as_deref() == Some(token.as_str()) {
            out.push(format!(
                "approvals.approver_tokens.{name} is server.auth_token: the agent's token must \
                 not be able to approve its own calls"
            ));
        }
    }
    out.extend(approval_notifier_problems(&s.approvals));
    if let Some(pg) = &s.store.postgres {
        out.extend(postgres_problems(pg));
    }
    if s.approvals.timeout_seconds == 0 {
        out.push("approvals.timeout_seconds must be at least 1".into());
    }
    for (name, v) in [
        ("server.idle_timeout_ms", s.server.idle_timeout_ms),
        ("server.eval_timeout_ms", s.server.eval_timeout_ms),
    ] {
        if v == 0 {
            out.push(format!("{name} must be at least 1"));
        }
    }
    if s.server.request_timeout_ms == 0 {
        out.push("server.request_timeout_ms must be at least 1".into());
    }
    if s.reporting.flush_ms == 0 {
        out.push("reporting.flush_ms must be at least 1".into());
    }
    out
}

/// Rules whose approvals name a notifier (`approval.via`, a policy's
/// `via:`) that `approvals:` does not configure: such an approval would
/// reach nobody and expire, so it is an error at start-up and in `lint`.
pub fn via_problems(s: &Settings, program: &parallax_runtime::Program) -> Vec<String> {
    let a = &s.approvals;
    let configured = |n: &str| match n {
        "slack" => a.slack.configured(),
        "webhook" => a.webhook_url.is_some(),
        _ => true,
    };
    let mut out = Vec::new();
    for rule in &program.rules {
        let Some(spec) = &rule.approval else { continue };
        for v in spec.via.iter().filter(|v| !configured(v)) {
            out.push(format!(
                "rule {}: its approvals are asked via {v}, but approvals.{} is not configured",
                rule.id,
                if v == "slack" { "slack" } else { "webhook_url" }
            ));
        }
    }
    out
}

/// The approvals' webhook and Slack settings.
fn approval_notifier_problems(a: &crate::settings::ApprovalsSettings) -> Vec<String> {
    let mut out = Vec::new();
    let empty = |v: &Option<String>| v.as_deref().is_some_and(|t| t.trim().is_empty());
    if let Some(url) = &a.webhook_url {
        if let Err(e) = webhook::parse_url(url) {
            out.push(format!("approvals.webhook_url: {e}"));
        }
        if a.webhook_secret.is_none() {
            out.push(
                "approvals.webhook_url is set but approvals.webhook_secret is not: approval \
                 notifications are signed and their callback tokens are keyed with it"
                    .into(),
            );
        }
    }
    if empty(&a.webhook_secret) {
        out.push("approvals.webhook_secret is empty; remove it or set a real secret".into());
    }
    if let Some(url) = &a.public_url {
        if let Err(e) = crate::proxy::upstream::parse_base(url) {
            out.push(format!("approvals.public_url: {e}"));
        }
    }
    if a.notify_queue_size == 0 {
        out.push("approvals.notify_queue_size must be at least 1".into());
    }
    if a.notify_timeout_ms == 0 {
        out.push("approvals.notify_timeout_ms must be at least 1".into());
    }
    let slack = &a.slack;
    if slack.configured() {
        for (key, v) in [
            ("bot_token", &slack.bot_token),
            ("channel", &slack.channel),
            ("signing_secret", &slack.signing_secret),
        ] {
            if v.is_none() {
                out.push(format!(
                    "approvals.slack.{key} is missing: Slack approvals need bot_token, channel \
                     and signing_secret"
                ));
            } else if empty(v) {
                out.push(format!("approvals.slack.{key} is empty"));
            }
        }
        if slack.approvers.is_empty() {
            out.push(
                "approvals.slack.approvers is empty: map Slack user ids to approver names \
                 (`U0123ABC: alice`), or nobody can decide from Slack"
                    .into(),
            );
        }
        for (user, name) in &slack.approvers {
            if name.trim().is_empty() {
                out.push(format!("approvals.slack.approvers.{user} is empty"));
            }
        }
    }
    if let Err(e) = crate::proxy::upstream::parse_base(&slack.api_base) {
        out.push(format!("approvals.slack.api_base: {e}"));
    }
    out
}

/// `store.postgres`: where the connection string comes from, and that it
/// parses (its text is never repeated: it may hold a password).
fn postgres_problems(pg: &super::PostgresSettings) -> Vec<String> {
    let mut out = Vec::new();
    match (&pg.url, &pg.url_env) {
        (Some(_), Some(_)) => {
            out.push("store.postgres: set url or url_env, not both".into());
        }
        (None, None) => {
            out.push("store.postgres: set url (a connection string) or url_env".into());
        }
        (Some(url), None) => {
            if let Err(e) = url.parse::<tokio_postgres::Config>() {
                out.push(format!(
                    "store.postgres.url is not a connection string: {e}"
                ));
            }
        }
        (None, Some(var)) if var.trim().is_empty() => {
            out.push("store.postgres.url_env is empty".into());
        }
        (None, Some(_)) => {}
    }
    if pg.pool == 0 {
        out.push("store.postgres.pool must be at least 1".into());
    }
    if pg.timeout_ms == 0 {
        out.push("store.postgres.timeout_ms must be at least 1".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_each_bad_setting() {
        assert!(problems(&Settings::default()).is_empty());
        let mut s = Settings::default();
        s.reporting.webhook_url = Some("https://hooks.example/x".into());
        s.server.auth_token = Some(" ".into());
        s.server.max_connections = 0;
        let p = problems(&s);
        assert_eq!(p.len(), 2, "https webhooks are fine: {p:?}");
        assert!(p[0].contains("auth_token"));
        assert!(p[1].contains("max_connections"));
        s.reporting.webhook_url = Some("ftp://hooks.example/x".into());
        assert!(problems(&s)[0].contains("not a valid URL"));
    }

    #[test]
    fn slack_set_up_partly_names_the_missing_key() {
        let mut s = Settings::default();
        s.approvals.slack.bot_token = Some("xoxb-1".into());
        s.approvals.slack.approvers = [("U1".to_string(), "alice".to_string())].into();
        let p = problems(&s);
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(
            p[0].starts_with("approvals.slack.channel is missing"),
            "{p:?}"
        );
        assert!(p[1].starts_with("approvals.slack.signing_secret is missing"));
        s.approvals.slack.channel = Some("C1".into());
        s.approvals.slack.signing_secret = Some("sec".into());
        assert!(problems(&s).is_empty());
        s.approvals.slack.approvers.clear();
        assert!(problems(&s)[0].contains("approvals.slack.approvers is empty"));
    }

    #[test]
    fn an_approvals_webhook_needs_its_secret() {
        let mut s = Settings::default();
        s.approvals.webhook_url = Some("https://hooks.example/approvals".into());
        let p = problems(&s);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].contains("approvals.webhook_secret is not"), "{p:?}");
        s.approvals.webhook_secret = Some("k".into());
        s.approvals.public_url = Some("parallax.example".into());
        assert!(problems(&s)[0].starts_with("approvals.public_url:"));
    }
}
