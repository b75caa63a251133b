# Sourced by .ci/run (bash, set -euo pipefail, cwd = repository root).
# The LiteLLM gateway suite (tests/litellm_gateway.rs) runs the real
# `litellm` proxy, with Parallax as its Generic Guardrail API, from this
# virtual environment, inside a loopback-only network namespace.
echo "--- litellm venv (.venv-litellm) with tests/litellm/requirements.txt"
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
fi
if [ ! -x .venv-litellm/bin/python ]; then
    python3 -m venv .venv-litellm
fi
.venv-litellm/bin/python -m pip install -q --disable-pip-version-check -r tests/litellm/requirements.txt
