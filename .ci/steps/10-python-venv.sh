# Sourced by .ci/run (bash, set -euo pipefail, cwd = repository root).
# The Python SDK proxy suite (tests/python_sdks.rs) runs the official
# anthropic and openai SDKs from this virtual environment.
echo "--- python venv (.venv) with tests/python/requirements.txt"
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
fi
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -r tests/python/requirements.txt
