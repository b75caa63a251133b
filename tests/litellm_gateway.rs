//! The real LiteLLM gateway (`litellm[proxy]` from PyPI, pinned in
//! tests/litellm/requirements.txt) configured with Parallax as its Generic
//! Guardrail API, in front of a fake model on 127.0.0.1: runs the pytest
//! suite in `tests/litellm` against this build's `parallax` binary, inside
//! a loopback-only network namespace (nothing may try the internet).
//!
//! The venv is `PARALLAX_LITELLM_VENV`, by default `.venv-litellm`;
//! `.ci/steps/47-litellm.sh` creates it. Without it the suite says it was
//! skipped and passes; with `CI=true` a missing venv fails.

#[path = "support/pytest.rs"]
mod pytest;

#[test]
fn litellm_gateway_with_parallax_as_its_guardrail() {
    pytest::Suite {
        name: "LiteLLM gateway suite",
        venv_env: "PARALLAX_LITELLM_VENV",
        default_venv: ".venv-litellm",
        made_by: ".ci/steps/47-litellm.sh",
        tests: "tests/litellm",
        isolated: true,
        paths_env: &[],
    }
    .run(env!("CARGO_BIN_EXE_parallax"));
}
