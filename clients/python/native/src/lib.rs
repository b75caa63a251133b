//! `parallax_client._engine`: the decision service in-process, for Python.
//!
//! One [`Engine`] is one config (or one bare parlok policy file) compiled
//! at construction by the same compiler `parallax serve` runs at start-up,
//! and decided by the same [`DecisionService`]: the same parse and limits
//! as `POST /evaluate`, the same side-store for temporal rules, the same
//! approvals database (parlok's `state_db`, or `approvals.path`) and
//! notifiers. The answers are the HTTP API's own JSON, so the Python side
//! reads them with the classes that read the server's.
//!
//! Everything runs with the GIL released; a decision that has to wait (the
//! side-store, an approval) waits on a small runtime owned by the engine.

use parallax::backend;
use parallax::decision::{DecisionService, Door, Origin};
use pyo3::exceptions::PyTypeError;
use pyo3::exceptions::{PyKeyError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The engine's async work (side-store replies, approval waits, notifier
/// sends) runs here: two workers, so a waiting approval never holds up the
/// notifier that tells the approver about it.
fn runtime() -> Result<tokio::runtime::Runtime, std::io::Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("parallax-engine")
        .enable_all()
        .build()
}

/// One compiled program and the service deciding with it.
#[pyclass(frozen, module = "parallax_client._engine")]
struct Engine {
    service: Arc<DecisionService>,
    runtime: tokio::runtime::Runtime,
    path: PathBuf,
    /// Whether the file was a bare parlok policy file.
    policy_file: bool,
}

fn seconds(wait: f64) -> PyResult<Duration> {
    if !(wait.is_finite() && wait >= 0.0) {
        return Err(PyValueError::new_err(format!(
            "wait must be zero or more seconds, not {wait}"
        )));
    }
    Ok(Duration::from_secs_f64(wait.min(86_400.0)))
}

#[pymethods]
impl Engine {
    /// Compiles `path` (a Parallax config or a parlok policy file); a file
    /// that does not compile raises `ValueError` with every error.
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Engine> {
        py.detach(|| {
            let loaded = backend::load(Some(&path), false)
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            let problems = parallax::settings::checks::problems(&loaded.settings);
            if let Some(p) = problems.first() {
                return Err(PyValueError::new_err(format!("{}: {p}", path.display())));
            }
            let policy_file = parallax_compiler::is_policy_file(&path);
            let via =
                parallax::settings::checks::via_problems(&loaded.settings, loaded.engine.program());
            if let (false, Some(p)) = (policy_file, via.first()) {
                return Err(PyValueError::new_err(format!("{}: {p}", path.display())));
            }
            let runtime = runtime().map_err(|e| {
                PyRuntimeError::new_err(format!("cannot start the engine's runtime: {e}"))
            })?;
            // Notifiers start tasks: the service is opened on the runtime.
            let service = {
                let _inside = runtime.enter();
                DecisionService::new(loaded.engine, loaded.settings)
                    .map_err(|e| PyRuntimeError::new_err(e.to_string()))?
            };
            let service = Arc::new(service);
            // Built whole now, so the first call runs at full speed.
            service
                .engine()
                .build_all()
                .map_err(|e| PyValueError::new_err(format!("{}: {e}", path.display())))?;
            Ok(Engine {
                service,
                runtime,
                path,
                policy_file,
            })
        })
    }

    /// Decides one event (JSON text, as `POST /evaluate` takes it); the
    /// answer is the API's JSON. With `wait`, an `approve` is held up to
    /// that many seconds for its decision, as `?wait=` does.
    #[pyo3(signature = (event, wait = 0.0))]
    fn evaluate(&self, py: Python<'_>, event: &str, wait: f64) -> PyResult<String> {
        let wait = seconds(wait)?;
        py.detach(|| {
            let server = &self.service.settings.server;
            let started = Instant::now();
            let event = parallax::http::evaluate::parse_event(
                event.as_bytes(),
                server.max_json_depth,
                server.max_string_bytes,
            )
            .map_err(|(code, message)| PyValueError::new_err(format!("{code}: {message}")))?;
            let origin = Origin::door(Door::Library);
            let report = self
                .runtime
                .block_on(self.service.decide_waiting(event, &origin, started, wait));
            serde_json::to_string(&report)
                .map_err(|e| PyRuntimeError::new_err(format!("cannot encode the verdict: {e}")))
        })
    }

    /// [`Engine::evaluate`] on a Python mapping, answered as a dict: the
    /// event is read straight from the Python objects and the answer built
    /// as Python objects, with no JSON text either way (a fifth of a
    /// decision's cost from Python for a 1 KB call). The same limits and
    /// checks as the text form; `TypeError` for a value JSON cannot hold.
    #[pyo3(signature = (event, wait = 0.0))]
    fn evaluate_dict<'py>(
        &self,
        py: Python<'py>,
        event: &Bound<'py, PyAny>,
        wait: f64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let wait = seconds(wait)?;
        let started = Instant::now();
        let value: serde_json::Value = pythonize::depythonize(event)
            .map_err(|e| PyTypeError::new_err(format!("the event cannot be read as JSON: {e}")))?;
        let report = py.detach(|| {
            let server = &self.service.settings.server;
            parallax::http::json_limits::check(
                &value,
                server.max_json_depth,
                server.max_string_bytes,
            )
            .map_err(|e| PyValueError::new_err(format!("limit_exceeded: {e}")))?;
            let event = parallax_runtime::Event::from_value(value).map_err(|e| {
                let code = match e {
                    parallax_runtime::EventError::Json(_) => "malformed_json",
                    _ => "invalid_event",
                };
                PyValueError::new_err(format!("{code}: {e}"))
            })?;
            let origin = Origin::door(Door::Library);
            Ok::<_, PyErr>(
                self.runtime
                    .block_on(self.service.decide_waiting(event, &origin, started, wait)),
            )
        })?;
        pythonize::pythonize(py, &report)
            .map_err(|e| PyRuntimeError::new_err(format!("cannot encode the verdict: {e}")))
    }

    /// The approval `id` as `GET /approvals/{id}` answers it; with `wait`,
    /// once decided or after that many seconds. `KeyError` if unknown.
    #[pyo3(signature = (id, wait = 0.0))]
    fn approval(&self, py: Python<'_>, id: &str, wait: f64) -> PyResult<String> {
        let wait = seconds(wait)?;
        py.detach(|| {
            let approvals = self.approvals_store()?;
            let found = self
                .runtime
                .block_on(approvals.wait(id, wait, self.service.audit()))
                .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
            match found {
                Some(a) => Ok(parallax::approvals::full(&a).to_string()),
                None => Err(PyKeyError::new_err(format!("no approval `{id}`"))),
            }
        })
    }

    /// The approvals with `status` (pending, approved, denied, expired;
    /// `None`: all), at most `limit`, as `GET /approvals` lists them (JSON).
    #[pyo3(signature = (status = None, limit = 100))]
    fn approvals(&self, py: Python<'_>, status: Option<&str>, limit: usize) -> PyResult<String> {
        let status = match status {
            None => None,
            Some(s) => Some(parallax::approvals::Status::parse(s).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "status is pending, approved, denied or expired, not `{s}`"
                ))
            })?),
        };
        py.detach(|| {
            let approvals = self.approvals_store()?;
            let _ = approvals.expire_due(self.service.audit());
            let list = approvals
                .list(status, limit.clamp(1, 1000))
                .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
            let items: Vec<serde_json::Value> =
                list.iter().map(parallax::approvals::full).collect();
            Ok(serde_json::Value::Array(items).to_string())
        })
    }

    /// Approves (`approve=True`) or denies approval `id` as `by`; the
    /// decided approval's JSON. A call waiting on it goes on at once.
    #[pyo3(signature = (id, approve, by, comment = None))]
    fn decide(
        &self,
        py: Python<'_>,
        id: &str,
        approve: bool,
        by: &str,
        comment: Option<&str>,
    ) -> PyResult<String> {
        py.detach(|| {
            let approvals = self.approvals_store()?;
            match approvals.decide(id, approve, by, comment, self.service.audit()) {
                Ok(a) => Ok(parallax::approvals::full(&a).to_string()),
                Err(parallax::approvals::DecideError::NotFound(id)) => {
                    Err(PyKeyError::new_err(format!("no approval `{id}`")))
                }
                Err(e) => Err(PyValueError::new_err(e.to_string())),
            }
        })
    }

    /// A parlok tool call (JSON: adapter, action, recipient, body, subject,
    /// metadata) as the event it is sent as; errors name the problem.
    #[staticmethod]
    fn call_event(call: &str) -> PyResult<String> {
        let event = parallax::cli::test_calls::call_event(call).map_err(PyValueError::new_err)?;
        Ok(event.to_value().to_string())
    }

    /// What was compiled: path, whether it is a bare policy file, the
    /// backend, fingerprint, and each evaluator with its rule count (JSON).
    fn summary(&self) -> String {
        let engine = self.service.engine();
        let program = engine.program();
        let evaluators: Vec<serde_json::Value> = program
            .evaluators
            .iter()
            .enumerate()
            .map(|(i, e)| {
                serde_json::json!({
                    "name": e.name,
                    "rules": program.rules.iter().filter(|r| r.evaluator as usize == i).count(),
                })
            })
            .collect();
        serde_json::json!({
            "path": self.path.display().to_string(),
            "policy_file": self.policy_file,
            "backend": engine.backend().as_str(),
            "fingerprint": program.fingerprint,
            "rules": program.rules.len(),
            "evaluators": evaluators,
        })
        .to_string()
    }
}

impl Engine {
    fn approvals_store(&self) -> PyResult<&parallax::approvals::Approvals> {
        self.service.approvals().ok_or_else(|| {
            PyKeyError::new_err(
                "no rule asks for approval (`action: approve`), so there are no approvals",
            )
        })
    }
}

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Engine>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
