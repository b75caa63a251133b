//! Which API a proxied request speaks, from its path: `/anthropic/...`
//! goes to the Anthropic upstream, `/openai/...` to the OpenAI one, and
//! three endpoints are model calls the proxy inspects. Every other path
//! (count_tokens, models, files, ...) passes through untouched.

/// The upstream a path belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    Anthropic,
    OpenAi,
}

/// The model endpoints whose traffic is inspected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelApi {
    /// `POST /v1/messages`
    Messages,
    /// `POST /v1/chat/completions`
    ChatCompletions,
    /// `POST /v1/responses`
    Responses,
}

impl ModelApi {
    pub fn as_str(self) -> &'static str {
        match self {
            ModelApi::Messages => "messages",
            ModelApi::ChatCompletions => "chat_completions",
            ModelApi::Responses => "responses",
        }
    }
}

/// The provider of a request path and the path the upstream gets
/// (`/anthropic/v1/messages` → `Anthropic`, `/v1/messages`); `None` for
/// paths outside the proxy.
pub fn route(path: &str) -> Option<(Provider, &str)> {
    for (prefix, provider) in [
        ("/anthropic", Provider::Anthropic),
        ("/openai", Provider::OpenAi),
    ] {
        if let Some(rest) = path.strip_prefix(prefix) {
            if rest.is_empty() {
                return Some((provider, "/"));
            }
            if rest.starts_with('/') {
                return Some((provider, rest));
            }
        }
    }
    None
}

/// The model endpoint `rest` (the upstream path, no query) is, if any.
pub fn model_api(provider: Provider, rest: &str) -> Option<ModelApi> {
    let rest = rest.trim_end_matches('/');
    match (provider, rest) {
        (Provider::Anthropic, "/v1/messages") => Some(ModelApi::Messages),
        (Provider::OpenAi, "/v1/chat/completions") => Some(ModelApi::ChatCompletions),
        (Provider::OpenAi, "/v1/responses") => Some(ModelApi::Responses),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_by_prefix_and_finds_the_model_endpoints() {
        assert_eq!(
            route("/anthropic/v1/messages"),
            Some((Provider::Anthropic, "/v1/messages"))
        );
        assert_eq!(
            route("/openai/v1/responses"),
            Some((Provider::OpenAi, "/v1/responses"))
        );
        assert_eq!(route("/anthropicx/v1"), None);
        assert_eq!(route("/evaluate"), None);
        assert_eq!(
            model_api(Provider::Anthropic, "/v1/messages"),
            Some(ModelApi::Messages)
        );
        assert_eq!(
            model_api(Provider::Anthropic, "/v1/messages/count_tokens"),
            None
        );
        assert_eq!(
            model_api(Provider::OpenAi, "/v1/chat/completions"),
            Some(ModelApi::ChatCompletions)
        );
        assert_eq!(model_api(Provider::OpenAi, "/v1/models"), None);
    }
}
