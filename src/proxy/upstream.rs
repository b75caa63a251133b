//! The connection to the model APIs: one pooled hyper client over rustls
//! (HTTP/1.1 or HTTP/2, chosen by ALPN), `http://` allowed too (a local
//! gateway, the test suite's fake upstream). Connect and idle timeouts come
//! from `proxy:`; the time to the response head is bounded by the caller.

use crate::http::response::BoxError;
use crate::settings::ProxySettings;
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use hyper::body::Incoming;
use hyper::{Request, Response, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::time::Duration;

/// A request body sent upstream.
pub type UpstreamBody = BoxBody<Bytes, BoxError>;

/// Why a base URL cannot be an upstream.
#[derive(Debug, thiserror::Error)]
pub enum BaseUrlError {
    #[error("`{0}` is not a URL: {1}")]
    Invalid(String, String),
    #[error("`{0}` must start with https:// or http://")]
    Scheme(String),
    #[error("`{0}` names no host")]
    NoHost(String),
    #[error("`{0}` must not carry a query string")]
    Query(String),
}

/// An upstream's base: scheme, authority and a path prefix (no trailing
/// slash), e.g. `https://api.anthropic.com` or `http://127.0.0.1:8080/v2`.
#[derive(Debug, Clone)]
pub struct Base {
    pub scheme: String,
    pub authority: String,
    pub prefix: String,
}

/// Checks and splits a configured base URL.
pub fn parse_base(url: &str) -> Result<Base, BaseUrlError> {
    let uri: Uri = url.parse().map_err(|e: hyper::http::uri::InvalidUri| {
        BaseUrlError::Invalid(url.into(), e.to_string())
    })?;
    let scheme = match uri.scheme_str() {
        Some(s @ ("https" | "http")) => s.to_string(),
        _ => return Err(BaseUrlError::Scheme(url.into())),
    };
    let authority = uri
        .authority()
        .map(|a| a.to_string())
        .ok_or_else(|| BaseUrlError::NoHost(url.into()))?;
    if uri.query().is_some() {
        return Err(BaseUrlError::Query(url.into()));
    }
    Ok(Base {
        scheme,
        authority,
        prefix: uri.path().trim_end_matches('/').to_string(),
    })
}

impl Base {
    /// The upstream URI for `path_and_query` (which starts with `/`).
    pub fn join(&self, path_and_query: &str) -> Result<Uri, hyper::http::Error> {
        Uri::builder()
            .scheme(self.scheme.as_str())
            .authority(self.authority.as_str())
            .path_and_query(format!("{}{}", self.prefix, path_and_query))
            .build()
    }
}

/// The shared upstream client.
#[derive(Clone)]
pub struct Upstream {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, UpstreamBody>,
}

/// Why the upstream could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("cannot set up TLS: {0}")]
    Tls(String),
}

/// The TLS connector every outbound client shares (the proxy's upstream,
/// the webhooks, Slack): rustls with the system's roots (corporate CAs
/// included), Mozilla's bundled ones where the system has none; `http://`
/// allowed too; HTTP/1.1 or HTTP/2 by ALPN.
pub fn https_connector(
    connect_timeout: Duration,
) -> Result<hyper_rustls::HttpsConnector<HttpConnector>, UpstreamError> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(Some(connect_timeout));
    http.set_nodelay(true);
    let provider = || rustls::crypto::ring::default_provider();
    let builder = match hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_native_roots(provider())
    {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(error = %e, "no system TLS roots; using the bundled Mozilla roots");
            hyper_rustls::HttpsConnectorBuilder::new()
                .with_provider_and_webpki_roots(provider())
                .map_err(|e| UpstreamError::Tls(e.to_string()))?
        }
    };
    Ok(builder
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .wrap_connector(http))
}

impl Upstream {
    pub fn new(settings: &ProxySettings) -> Result<Upstream, UpstreamError> {
        let https = https_connector(Duration::from_millis(settings.connect_timeout_ms))?;
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_millis(settings.pool_idle_timeout_ms))
            .pool_timer(TokioTimer::new())
            .timer(TokioTimer::new())
            .build(https);
        Ok(Upstream { client })
    }

    /// Sends `req`; the response head arrives or the error says why not.
    pub async fn send(
        &self,
        req: Request<UpstreamBody>,
    ) -> Result<Response<Incoming>, hyper_util::client::legacy::Error> {
        self.client.request(req).await
    }
}
