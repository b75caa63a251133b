# Sourced by .ci/run (bash, set -euo pipefail, cwd = repository root).
# The Python client suite (tests/python_client.rs) runs clients/python's
# pytest tests from their own virtual environment: the package installed
# with its test extras (slack_sdk with aiohttp, httpx, openai-agents,
# langchain-core, pytest, jsonschema, mypy), every version pinned by
# clients/python/ci-constraints.txt. Installing the package builds its
# compiled engine (clients/python/native, PyO3) with maturin: one release
# build of the extension, which the suite then runs in embedded mode beside
# the server mode.
echo "--- python client venv (.venv-client) with clients/python[test]"
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
fi
if [ ! -x .venv-client/bin/python ]; then
    python3 -m venv .venv-client
fi
PIP_CONSTRAINT="$PWD/clients/python/ci-constraints.txt" \
    .venv-client/bin/python -m pip install -q --disable-pip-version-check "./clients/python[test]"
