# Sourced by .ci/run (bash, set -euo pipefail, cwd = repository root).
# The API fuzz (tests/api_fuzz.rs): schemathesis, pinned in
# tests/api_fuzz/requirements.txt, in a virtual environment of its own.
echo "--- schemathesis venv (.venv-schemathesis) with tests/api_fuzz/requirements.txt"
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
fi
if [ ! -x .venv-schemathesis/bin/python ]; then
    python3 -m venv .venv-schemathesis
fi
.venv-schemathesis/bin/python -m pip install -q --disable-pip-version-check \
    -r tests/api_fuzz/requirements.txt
