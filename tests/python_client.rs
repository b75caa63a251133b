//! The Python client package (`clients/python`, `parallax-client`): runs
//! its pytest suite against this build's `parallax` binary, which the
//! suite serves on a free port of 127.0.0.1 with
//! clients/python/tests/fixtures/parallax.yaml (policies, an approve rule,
//! approver tokens), next to fake Slack, SMTP and HTTP services.
//!
//! The suite's virtual environment is `PARALLAX_CLIENT_VENV` (a relative
//! path is taken from the repository root), by default `.venv-client`;
//! `.ci/steps/40-python-client.sh` creates it with the package and its test
//! extras. Without it the suite says on stderr that it was skipped and
//! passes; under `CI=true` a missing venv fails instead, so CI cannot
//! quietly stop running it. The package's own source (not a copy installed
//! earlier) is what runs: `clients/python` goes first on `PYTHONPATH`.

#[path = "support/pytest.rs"]
mod pytest;

#[test]
fn python_client_package() {
    pytest::Suite {
        name: "python client suite",
        venv_env: "PARALLAX_CLIENT_VENV",
        default_venv: ".venv-client",
        made_by: ".ci/steps/40-python-client.sh",
        tests: "clients/python/tests",
        isolated: false,
        paths_env: &[("PYTHONPATH", "clients/python")],
    }
    .run(env!("CARGO_BIN_EXE_parallax"));
}
