//! The OTLP span exporter for `telemetry.otlp`, over the transport its
//! `protocol` names.
//!
//! http/protobuf goes through a hyper 1 client on the connector the proxy
//! and the webhooks use (rustls with ring, the system's roots), so no
//! second HTTP stack or TLS library comes in; gRPC is tonic's (the
//! exporter's only gRPC transport), TLS through rustls with ring too.

use super::TelemetryError;
use crate::settings::{OtlpProtocol, OtlpSettings};
use opentelemetry_otlp::{
    Protocol, SpanExporter, WithExportConfig, WithHttpConfig, WithTonicConfig,
};
use opentelemetry_sdk::trace::SpanExporter as _;
use opentelemetry_sdk::Resource;
use std::collections::HashMap;
use std::time::Duration;

/// The OTLP/HTTP path for traces, added to a base endpoint.
const TRACES_PATH: &str = "/v1/traces";

/// The URL spans are sent to: for http/protobuf the base endpoint with
/// `/v1/traces` (unless it ends with it), for gRPC the endpoint as given.
pub fn endpoint_uri(otlp: &OtlpSettings) -> Result<String, String> {
    let uri: hyper::Uri = otlp
        .endpoint
        .parse()
        .map_err(|e| format!("`{}` is not a URL: {e}", otlp.endpoint))?;
    match uri.scheme_str() {
        Some("http") | Some("https") => {}
        _ => {
            return Err(format!(
                "`{}`: give an http:// or https:// URL",
                otlp.endpoint
            ))
        }
    }
    if uri.host().is_none() {
        return Err(format!("`{}` names no host", otlp.endpoint));
    }
    Ok(match otlp.protocol {
        OtlpProtocol::Grpc => otlp.endpoint.clone(),
        OtlpProtocol::HttpProtobuf => {
            let base = otlp.endpoint.trim_end_matches('/');
            if base.ends_with(TRACES_PATH) {
                base.to_string()
            } else {
                format!("{base}{TRACES_PATH}")
            }
        }
    })
}

/// The exporter, with `resource` (service name and version) on every
/// batch. Connections are made when the first batch is sent.
pub fn build(otlp: &OtlpSettings, resource: &Resource) -> Result<SpanExporter, TelemetryError> {
    let endpoint = endpoint_uri(otlp).map_err(TelemetryError::Exporter)?;
    let timeout = Duration::from_millis(otlp.timeout_ms);
    let built = match otlp.protocol {
        OtlpProtocol::HttpProtobuf => {
            let connector = crate::proxy::upstream::https_connector(timeout)
                .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
            let client = opentelemetry_http::hyper::HyperClient::new(connector, timeout, None);
            let headers: HashMap<String, String> = otlp
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            SpanExporter::builder()
                .with_http()
                .with_http_client(client)
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(endpoint)
                .with_timeout(timeout)
                .with_headers(headers)
                .build()
        }
        OtlpProtocol::Grpc => {
            let mut headers = hyper::HeaderMap::new();
            for (k, v) in &otlp.headers {
                // Checked when the settings were read.
                if let (Ok(k), Ok(v)) = (
                    hyper::header::HeaderName::from_bytes(k.as_bytes()),
                    hyper::header::HeaderValue::from_str(v),
                ) {
                    headers.insert(k, v);
                }
            }
            let mut builder = SpanExporter::builder()
                .with_tonic()
                .with_protocol(Protocol::Grpc)
                .with_endpoint(endpoint.clone())
                .with_timeout(timeout)
                .with_metadata(
                    opentelemetry_otlp::tonic_types::metadata::MetadataMap::from_headers(headers),
                );
            if endpoint.starts_with("https://") {
                builder = builder.with_tls_config(
                    opentelemetry_otlp::tonic_types::transport::ClientTlsConfig::new()
                        .with_native_roots(),
                );
            }
            builder.build()
        }
    };
    let mut exporter = built.map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    exporter.set_resource(resource);
    Ok(exporter)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn otlp(endpoint: &str, protocol: OtlpProtocol) -> OtlpSettings {
        OtlpSettings {
            endpoint: endpoint.into(),
            protocol,
            timeout_ms: 1000,
            headers: Default::default(),
        }
    }

    #[test]
    fn http_endpoints_get_the_traces_path_once() {
        let http = OtlpProtocol::HttpProtobuf;
        for (given, sent) in [
            ("http://c:4318", "http://c:4318/v1/traces"),
            ("http://c:4318/", "http://c:4318/v1/traces"),
            ("https://c/otlp", "https://c/otlp/v1/traces"),
            ("http://c:4318/v1/traces", "http://c:4318/v1/traces"),
        ] {
            assert_eq!(endpoint_uri(&otlp(given, http)).unwrap(), sent);
        }
        assert_eq!(
            endpoint_uri(&otlp("http://c:4317", OtlpProtocol::Grpc)).unwrap(),
            "http://c:4317"
        );
    }

    #[test]
    fn endpoints_that_are_not_http_urls_are_refused() {
        for bad in ["c:4318", "ftp://c/", "", "http://"] {
            assert!(
                endpoint_uri(&otlp(bad, OtlpProtocol::HttpProtobuf)).is_err(),
                "{bad}"
            );
        }
    }
}
