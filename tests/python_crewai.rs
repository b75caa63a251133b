//! CrewAI (`parallax_client.integrations.crewai`): runs
//! clients/python/tests/test_crewai.py with the real `crewai` package
//! (pinned in clients/python/crewai-requirements.txt) against this build's
//! `parallax` binary, which the suite serves on a free port of 127.0.0.1
//! with clients/python/tests/fixtures/parallax.yaml, and against the
//! embedded engine. Guarded CrewAI tools are called directly, through
//! CrewAI's own tool machinery and through a `Crew.kickoff` whose model is
//! scripted: no model API. Inside a loopback-only network namespace, with
//! CrewAI's telemetry and tracing switched off and a fresh home folder (the
//! test module sets both before importing crewai): nothing may try the
//! internet.
//!
//! The venv is `PARALLAX_CREWAI_VENV` (a relative path is taken from the
//! repository root), by default `.venv-crewai`; `.ci/steps/48-crewai.sh`
//! creates it. Without it the suite says it was skipped and passes; with
//! `CI=true` a missing venv fails. The package's own source runs:
//! `clients/python` goes first on `PYTHONPATH`.

#[path = "support/pytest.rs"]
mod pytest;

#[test]
fn crewai_tools_guarded_by_parallax() {
    pytest::Suite {
        name: "CrewAI suite",
        venv_env: "PARALLAX_CREWAI_VENV",
        default_venv: ".venv-crewai",
        made_by: ".ci/steps/48-crewai.sh",
        tests: "clients/python/tests/test_crewai.py",
        isolated: true,
        paths_env: &[("PYTHONPATH", "clients/python")],
    }
    .run(env!("CARGO_BIN_EXE_parallax"));
}
