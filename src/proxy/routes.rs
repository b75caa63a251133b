//! The proxy's routing table: which upstream a request path goes to. The
//! two built-in prefixes (`/anthropic`, `/openai`) and every named entry of
//! `proxy.upstreams` (`/<name>`) become one [`Target`] each, holding what a
//! request needs on its way out: the base URL, the API shape that says
//! which paths are model calls, and a credential to add.

use super::api::{ModelApi, Provider};
use super::upstream::{parse_base, Base, BaseUrlError};
use crate::settings::{NamedUpstream, OtherPaths, ProxySettings, UpstreamApi};
use hyper::header::{HeaderName, HeaderValue};
use std::sync::Arc;

/// First path segments that belong to Parallax's own routes (or to the
/// built-in upstreams), so no named upstream may take them.
pub const RESERVED_NAMES: [&str; 14] = [
    "anthropic",
    "openai",
    "evaluate",
    "health",
    "ready",
    "metrics",
    "admin",
    "hooks",
    "ui",
    "slack",
    "approvals",
    "beta",
    "mcp",
    "openapi.json",
];

/// How a target recognises its model endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Matching {
    /// The built-in upstreams: the exact `/v1/...` paths.
    Exact,
    /// Named upstreams: by the path's last segments, so a base URL with
    /// `/v1` in it and Azure's `/openai/deployments/{name}/...` work too.
    Suffix,
}

/// One upstream as a request sees it.
#[derive(Debug)]
pub struct Target {
    /// `anthropic`, `openai` or the entry's name (logs and errors).
    pub name: String,
    pub base: Base,
    /// The API family: error shapes and the inspected endpoints.
    pub provider: Provider,
    matching: Matching,
    /// A header Parallax sets on every forwarded request.
    pub auth: Option<(HeaderName, HeaderValue)>,
    /// Refuse what is not an inspected model call.
    pub refuse_other_paths: bool,
}

impl Target {
    /// The model endpoint `rest` (the upstream path, no query) is, if any.
    pub fn model_api(&self, rest: &str) -> Option<ModelApi> {
        match self.matching {
            Matching::Exact => super::api::model_api(self.provider, rest),
            Matching::Suffix => model_api_by_suffix(self.provider, rest),
        }
    }
}

/// The model endpoint a named upstream's path ends in.
fn model_api_by_suffix(provider: Provider, rest: &str) -> Option<ModelApi> {
    let rest = rest.trim_end_matches('/');
    match provider {
        Provider::Anthropic if rest.ends_with("/v1/messages") => Some(ModelApi::Messages),
        Provider::OpenAi if rest.ends_with("/chat/completions") => Some(ModelApi::ChatCompletions),
        Provider::OpenAi if rest.ends_with("/responses") => Some(ModelApi::Responses),
        _ => None,
    }
}

/// Why the routing table cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    #[error("proxy.{0}: {1}")]
    Base(String, BaseUrlError),
    #[error("proxy.upstreams.{0}: {1}")]
    Name(String, String),
    #[error("proxy.upstreams.{name}.auth.{key}: {why}")]
    Auth {
        name: String,
        key: &'static str,
        why: String,
    },
}

/// Every upstream, looked up by the request path's first segment.
#[derive(Debug)]
pub struct Routes {
    targets: Vec<(String, Arc<Target>)>,
}

/// Whether `name` can be a named upstream: a path segment of lowercase
/// letters, digits, `-`, `_` and `.`, not one of Parallax's own.
pub fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() || name.len() > 64 {
        return Some("a name must be 1 to 64 characters".into());
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b'.'))
        || name.starts_with('.')
    {
        return Some(format!(
            "`{name}` is served as `/{name}/...`: use lowercase letters, digits, `-`, `_` and `.`"
        ));
    }
    if RESERVED_NAMES.contains(&name) {
        return Some(if name == "anthropic" || name == "openai" {
            format!("`{name}` is built in: set proxy.{name}_upstream instead")
        } else {
            format!("`/{name}` is one of Parallax's own routes; pick another name")
        });
    }
    None
}

/// The problems of `entry`, each naming its key, without reading the
/// environment (lint time).
pub fn entry_problems(name: &str, entry: &NamedUpstream) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(p) = name_problem(name) {
        out.push(format!("proxy.upstreams.{name}: {p}"));
    }
    if let Err(e) = parse_base(&entry.base_url) {
        out.push(format!("proxy.upstreams.{name}.base_url: {e}"));
    }
    if let Some(auth) = &entry.auth {
        if auth.header.parse::<HeaderName>().is_err() {
            out.push(format!(
                "proxy.upstreams.{name}.auth.header: `{}` is not a valid header name",
                auth.header
            ));
        }
        if auth.env.is_empty() || auth.env.contains('=') || auth.env.contains('\0') {
            out.push(format!(
                "proxy.upstreams.{name}.auth.env: `{}` is not an environment variable name",
                auth.env
            ));
        }
    }
    out
}

/// The header an entry's `auth` asks for, its value read from the
/// environment now.
fn auth_header(
    name: &str,
    entry: &NamedUpstream,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<(HeaderName, HeaderValue)>, RouteError> {
    let Some(auth) = &entry.auth else {
        return Ok(None);
    };
    let bad = |key: &'static str, why: String| RouteError::Auth {
        name: name.to_string(),
        key,
        why,
    };
    let header: HeaderName = auth.header.parse().map_err(|_| {
        bad(
            "header",
            format!("`{}` is not a valid header name", auth.header),
        )
    })?;
    let secret = env(&auth.env).filter(|v| !v.is_empty()).ok_or_else(|| {
        bad(
            "env",
            format!("the environment variable `{}` is not set", auth.env),
        )
    })?;
    let text = match auth.scheme.as_deref() {
        Some(scheme) if !scheme.is_empty() => format!("{scheme} {secret}"),
        _ => secret,
    };
    let mut value = HeaderValue::from_str(&text).map_err(|_| {
        // The message never carries the value itself.
        bad(
            "env",
            format!("the value of `{}` cannot be sent in a header", auth.env),
        )
    })?;
    value.set_sensitive(true);
    Ok(Some((header, value)))
}

impl Routes {
    /// The table for `settings`, credentials read through `env`.
    pub fn new(
        settings: &ProxySettings,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Routes, RouteError> {
        let built_in = |name: &str, key: &str, url: &str, provider| {
            Ok::<_, RouteError>((
                name.to_string(),
                Arc::new(Target {
                    name: name.to_string(),
                    base: parse_base(url).map_err(|e| RouteError::Base(key.to_string(), e))?,
                    provider,
                    matching: Matching::Exact,
                    auth: None,
                    refuse_other_paths: false,
                }),
            ))
        };
        let mut targets = vec![
            built_in(
                "anthropic",
                "anthropic_upstream",
                &settings.anthropic_upstream,
                Provider::Anthropic,
            )?,
            built_in(
                "openai",
                "openai_upstream",
                &settings.openai_upstream,
                Provider::OpenAi,
            )?,
        ];
        for (name, entry) in &settings.upstreams {
            if let Some(p) = name_problem(name) {
                return Err(RouteError::Name(name.clone(), p));
            }
            let base = parse_base(&entry.base_url)
                .map_err(|e| RouteError::Base(format!("upstreams.{name}.base_url"), e))?;
            let target = Target {
                name: name.clone(),
                base,
                provider: match entry.api {
                    UpstreamApi::Openai => Provider::OpenAi,
                    UpstreamApi::Anthropic => Provider::Anthropic,
                },
                matching: Matching::Suffix,
                auth: auth_header(name, entry, env)?,
                refuse_other_paths: entry.other_paths == OtherPaths::Refuse,
            };
            targets.push((name.clone(), Arc::new(target)));
        }
        Ok(Routes { targets })
    }

    /// The target of `path` and the path the upstream gets
    /// (`/ollama/v1/chat/completions` → `ollama`, `/v1/chat/completions`).
    pub fn route<'p>(&self, path: &'p str) -> Option<(&Arc<Target>, &'p str)> {
        let after = path.strip_prefix('/')?;
        let (segment, rest) = match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, "/"),
        };
        self.targets
            .iter()
            .find(|(name, _)| name == segment)
            .map(|(_, t)| (t, rest))
    }

    /// Every target, built-ins first (start-up log).
    pub fn targets(&self) -> impl Iterator<Item = &Arc<Target>> {
        self.targets.iter().map(|(_, t)| t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::UpstreamAuth;

    fn entry(url: &str, api: UpstreamApi) -> NamedUpstream {
        NamedUpstream {
            base_url: url.into(),
            api,
            auth: None,
            other_paths: OtherPaths::Forward,
        }
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn named_upstreams_route_by_their_first_segment() {
        let mut s = ProxySettings::default();
        s.upstreams.insert(
            "ollama".into(),
            entry("http://127.0.0.1:11434", UpstreamApi::Openai),
        );
        s.upstreams.insert(
            "azure".into(),
            entry("https://res.openai.azure.com", UpstreamApi::Openai),
        );
        let r = Routes::new(&s, &no_env).expect("routes");
        let (t, rest) = r.route("/ollama/v1/chat/completions").expect("ollama");
        assert_eq!((t.name.as_str(), rest), ("ollama", "/v1/chat/completions"));
        assert_eq!(t.model_api(rest), Some(ModelApi::ChatCompletions));
        let (t, rest) = r
            .route("/azure/openai/deployments/gpt-4o/chat/completions")
            .expect("azure");
        assert_eq!(t.model_api(rest), Some(ModelApi::ChatCompletions));
        assert_eq!(t.model_api("/openai/responses"), Some(ModelApi::Responses));
        assert_eq!(t.model_api("/v1/models"), None);
        assert_eq!(t.model_api("/v1/embeddings"), None);
        let (t, rest) = r.route("/anthropic/v1/messages").expect("built in");
        assert_eq!(t.model_api(rest), Some(ModelApi::Messages));
        // The built-ins keep their exact paths.
        assert_eq!(t.model_api("/x/v1/messages"), None);
        assert!(r.route("/ollamax/v1/chat/completions").is_none());
        assert!(r.route("/evaluate").is_none());
        assert_eq!(r.route("/ollama").map(|(_, rest)| rest), Some("/"));
    }

    #[test]
    fn an_anthropic_shaped_entry_finds_messages_only() {
        let t = Target {
            name: "claude-gw".into(),
            base: parse_base("http://127.0.0.1:1").expect("base"),
            provider: Provider::Anthropic,
            matching: Matching::Suffix,
            auth: None,
            refuse_other_paths: false,
        };
        assert_eq!(t.model_api("/v1/messages"), Some(ModelApi::Messages));
        assert_eq!(t.model_api("/gw/v1/messages/"), Some(ModelApi::Messages));
        assert_eq!(t.model_api("/v1/messages/count_tokens"), None);
        assert_eq!(t.model_api("/v1/chat/completions"), None);
    }

    #[test]
    fn names_that_clash_or_cannot_be_a_path_segment_are_refused() {
        for bad in [
            "openai",
            "anthropic",
            "evaluate",
            "ui",
            "Ollama",
            "a/b",
            "",
            ".x",
        ] {
            assert!(name_problem(bad).is_some(), "{bad:?} accepted");
        }
        for good in ["ollama", "vllm-1", "lm_studio", "azure.eu"] {
            assert_eq!(name_problem(good), None, "{good}");
        }
        assert!(name_problem("openai").is_some_and(|p| p.contains("proxy.openai_upstream")));
    }

    #[test]
    fn a_credential_comes_from_the_environment_and_is_required() {
        let mut s = ProxySettings::default();
        let mut e = entry("http://127.0.0.1:8000/v1", UpstreamApi::Openai);
        e.auth = Some(UpstreamAuth {
            header: "authorization".into(),
            env: "VLLM_KEY".into(),
            scheme: Some("Bearer".into()),
        });
        s.upstreams.insert("vllm".into(), e);
        let err = Routes::new(&s, &no_env).expect_err("no variable");
        assert!(
            err.to_string()
                .contains("proxy.upstreams.vllm.auth.env: the environment variable `VLLM_KEY`"),
            "{err}"
        );
        let env = |k: &str| (k == "VLLM_KEY").then(|| "tok-123".to_string());
        let r = Routes::new(&s, &env).expect("routes");
        let (t, _) = r.route("/vllm/chat/completions").expect("vllm");
        let (name, value) = t.auth.as_ref().expect("auth");
        assert_eq!(name, "authorization");
        assert_eq!(value, "Bearer tok-123");
        assert!(value.is_sensitive());
        assert_eq!(t.base.prefix, "/v1");
    }

    #[test]
    fn lint_names_each_bad_key() {
        let mut e = entry("ftp://x", UpstreamApi::Openai);
        e.auth = Some(UpstreamAuth {
            header: "bad header".into(),
            env: "A=B".into(),
            scheme: None,
        });
        let p = entry_problems("health", &e).join("\n");
        for key in [
            "proxy.upstreams.health:",
            "proxy.upstreams.health.base_url:",
            "proxy.upstreams.health.auth.header:",
            "proxy.upstreams.health.auth.env:",
        ] {
            assert!(p.contains(key), "{key} not named in:\n{p}");
        }
    }
}
