//! The official Python SDKs (`anthropic`, `openai`) as clients of the
//! model-API proxy: runs the pytest suite in `tests/python` against this
//! build's `parallax` binary (see tests/python/conftest.py).
//!
//! The SDKs live in a virtual environment, `PARALLAX_PYTHON_VENV` (a
//! relative path is taken from the repository root), by default `.venv`;
//! `.ci/steps/10-python-venv.sh` creates it from
//! tests/python/requirements.txt. Without it the
//! suite says on stderr that it was skipped and passes, like the
//! conformance suites without their corpora; under `CI=true` a missing venv
//! fails instead, so CI cannot quietly stop running it.

#[path = "support/pytest.rs"]
mod pytest;

#[test]
fn python_sdks_through_the_proxy() {
    pytest::Suite {
        name: "python SDK suite",
        venv_env: "PARALLAX_PYTHON_VENV",
        default_venv: ".venv",
        made_by: ".ci/steps/10-python-venv.sh",
        tests: "tests/python",
        isolated: false,
        paths_env: &[],
    }
    .run(env!("CARGO_BIN_EXE_parallax"));
}
