//! OpenTelemetry traces (`telemetry:`): one span per decision, exported
//! over OTLP (http/protobuf or gRPC) to a Collector or a backend.
//!
//! A decision span is a child of the caller's trace when the request that
//! carried the event had a W3C `traceparent` ([`propagation`]); the proxy
//! opens a span of its own per model call, which its decisions and the
//! upstream request (sent a `traceparent` of it) belong to.
//!
//! Exporting never holds a decision: a finished span goes into a bounded
//! queue ([`queue`]) with `try_send`, and a span that does not fit is
//! dropped and counted (`parallax_telemetry_spans_dropped_total`). The
//! event's text is not on the span unless `telemetry.include_content`, and
//! then only with its secrets masked as the audit log masks them.

mod exporter;
pub mod propagation;
mod queue;

use crate::decision::Origin;
use crate::metrics::Metrics;
use crate::settings::{OtlpSettings, TelemetrySettings};
use opentelemetry::trace::{Span, SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, KeyValue, StringValue, Value};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use parallax_runtime::{mask_secrets, Engine, Event, Report};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Why telemetry cannot start.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("telemetry.otlp: cannot build the exporter: {0}")]
    Exporter(String),
}

/// The tracer and the export queue behind it; `None` in the decision
/// service when `telemetry.otlp` is not set.
pub struct Telemetry {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    include_content: bool,
    queue: queue::Handle,
}

/// The checks serde cannot make on `telemetry:` (run with the other
/// settings checks, so a bad endpoint stops start-up).
pub fn settings_problems(t: &TelemetrySettings) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(otlp) = &t.otlp {
        if let Err(e) = exporter::endpoint_uri(otlp) {
            out.push(format!("telemetry.otlp.endpoint: {e}"));
        }
        if !(1..=600_000).contains(&otlp.timeout_ms) {
            out.push(format!(
                "telemetry.otlp.timeout_ms is {}: give 1 to 600000 milliseconds",
                otlp.timeout_ms
            ));
        }
        for (name, value) in &otlp.headers {
            if hyper::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                out.push(format!(
                    "telemetry.otlp.headers: `{name}` is not a valid header name"
                ));
            } else if hyper::header::HeaderValue::from_str(value).is_err() {
                out.push(format!(
                    "telemetry.otlp.headers.{name}: not a valid header value"
                ));
            }
        }
    }
    if t.service_name.trim().is_empty() {
        out.push("telemetry.service_name is empty: name the service spans come from".into());
    }
    if t.queue_size == 0 {
        out.push("telemetry.queue_size must be at least 1".into());
    }
    if t.max_batch == 0 {
        out.push("telemetry.max_batch must be at least 1".into());
    }
    if !(1..=600_000).contains(&t.flush_ms) {
        out.push(format!(
            "telemetry.flush_ms is {}: give 1 to 600000 milliseconds",
            t.flush_ms
        ));
    }
    out
}

impl Telemetry {
    /// The exporter and its queue, started on the current Tokio runtime;
    /// `Ok(None)` when `telemetry.otlp` is not set. Nothing is sent until
    /// the first span: a receiver that is down is not an error here.
    pub fn start(
        settings: &TelemetrySettings,
        metrics: Arc<Metrics>,
    ) -> Result<Option<Arc<Telemetry>>, TelemetryError> {
        let Some(otlp) = &settings.otlp else {
            return Ok(None);
        };
        let resource = Resource::builder()
            .with_service_name(settings.service_name.clone())
            .with_attribute(KeyValue::new(
                "service.version",
                env!("CARGO_PKG_VERSION").to_string(),
            ))
            .build();
        let exporter = exporter::build(otlp, &resource)?;
        let (processor, queue) = queue::start(exporter, settings, metrics);
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("parallax");
        log_started(otlp);
        Ok(Some(Arc::new(Telemetry {
            provider,
            tracer,
            include_content: settings.include_content,
            queue,
        })))
    }

    /// Ends the span of one decision: a child of the context the request
    /// came with (the caller's `traceparent`, or the proxy's span), a root
    /// span otherwise. Called once per decision, after the verdict.
    pub fn decision(
        &self,
        engine: &Engine,
        event: &Event,
        origin: &Origin,
        report: &Report,
        started: Instant,
    ) {
        let parent = Context::current();
        let took = started.elapsed();
        let end = SystemTime::now();
        let start = end.checked_sub(took).unwrap_or(end);
        let mut attributes = decision_attributes(event, origin, report, took);
        if self.include_content {
            let mut masked = event.clone();
            mask_secrets(engine, &mut masked);
            attributes.push(KeyValue::new(
                "parallax.event",
                masked.to_value().to_string(),
            ));
        }
        let mut span = self
            .tracer
            .span_builder("parallax.decision")
            .with_kind(SpanKind::Internal)
            .with_start_time(start)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &parent);
        if let Some(f) = &report.failure {
            span.set_status(Status::error(format!("{}: {}", f.kind, f.message)));
        }
        span.end_with_timestamp(end);
    }

    /// A span for one proxied model call (kind server), child of the
    /// caller's context; the returned context carries it, so the call's
    /// decisions are its children and the upstream gets its `traceparent`.
    pub fn proxy_span(&self, parent: &Context, method: &str, path: &str) -> Context {
        let span = self
            .tracer
            .span_builder(format!("parallax.proxy {method}"))
            .with_kind(SpanKind::Server)
            .with_attributes([
                KeyValue::new("http.request.method", method.to_string()),
                KeyValue::new("url.path", path.to_string()),
            ])
            .start_with_context(&self.tracer, parent);
        parent.with_span(span)
    }

    /// Sends what is queued and stops the exporter (at shutdown, after the
    /// last request), waiting at most `wait`.
    pub async fn close(&self, wait: Duration) {
        self.queue.close(wait).await;
        if let Err(e) = self.provider.shutdown() {
            tracing::debug!(error = %e, "telemetry provider shutdown");
        }
    }
}

fn log_started(otlp: &OtlpSettings) {
    tracing::info!(
        endpoint = %otlp.endpoint,
        protocol = ?otlp.protocol,
        "exporting a span per decision over OTLP"
    );
}

/// What a decision span says, content aside: where the event came from,
/// what was decided and by which rules, how long it took.
fn decision_attributes(
    event: &Event,
    origin: &Origin,
    report: &Report,
    took: Duration,
) -> Vec<KeyValue> {
    let mut a = vec![
        KeyValue::new("parallax.door", origin.door.as_str()),
        KeyValue::new("parallax.stage", event.stage.as_str()),
        KeyValue::new("parallax.action", report.action.as_str()),
        KeyValue::new("parallax.blocked", report.blocked),
        KeyValue::new("parallax.duration_ms", took.as_secs_f64() * 1000.0),
        KeyValue::new("parallax.evaluation_ms", report.elapsed_ms),
    ];
    if report.would_block {
        a.push(KeyValue::new("parallax.would_block", true));
    }
    if !report.results.is_empty() {
        let rule_ids: Vec<StringValue> = report
            .results
            .iter()
            .map(|r| StringValue::from(r.rule_id.clone()))
            .collect();
        a.push(KeyValue::new(
            "parallax.rule_ids",
            Value::Array(rule_ids.into()),
        ));
        let mut evaluators: Vec<&str> = report
            .results
            .iter()
            .map(|r| r.evaluator.as_str())
            .collect();
        evaluators.sort_unstable();
        evaluators.dedup();
        let evaluators: Vec<StringValue> = evaluators
            .into_iter()
            .map(|e| StringValue::from(e.to_string()))
            .collect();
        a.push(KeyValue::new(
            "parallax.evaluators",
            Value::Array(evaluators.into()),
        ));
    }
    if let Some(f) = &origin.framework {
        a.push(KeyValue::new("parallax.framework", f.clone()));
    }
    if let Some(s) = event.session_id.as_ref().or(origin.session_id.as_ref()) {
        a.push(KeyValue::new("parallax.session_id", s.clone()));
    }
    if let Some(u) = &event.user_id {
        a.push(KeyValue::new("parallax.user_id", u.clone()));
    }
    if let Some(c) = &event.channel {
        a.push(KeyValue::new("parallax.channel", c.clone()));
    }
    if let Some(t) = event.metadata.get("tenant").and_then(|t| t.as_str()) {
        a.push(KeyValue::new("parallax.tenant", t.to_string()));
    }
    if let Some(t) = &event.tool_name {
        a.push(KeyValue::new("parallax.tool_name", t.clone()));
    }
    if let Some(f) = &report.failure {
        a.push(KeyValue::new("parallax.failure", f.kind.clone()));
    }
    a
}
