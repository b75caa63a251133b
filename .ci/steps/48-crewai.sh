# Sourced by .ci/run (bash, set -euo pipefail, cwd = repository root).
# The CrewAI suite (tests/python_crewai.rs) runs
# clients/python/tests/test_crewai.py with the real `crewai` package from
# its own virtual environment, every version pinned by
# clients/python/crewai-requirements.txt, inside a loopback-only network
# namespace. Its own venv: crewai 1.15.30 requires openai<3, mcp<2 and
# pydantic<2.13, which the client suite's venv (openai-agents 0.24 with
# openai 3.x, mcp 2.x, pydantic 2.14) cannot hold. About a minute of
# downloads and installs (1 GB of wheels: chromadb, lancedb, onnxruntime...),
# nothing compiled.
echo "--- crewai venv (.venv-crewai) with clients/python/crewai-requirements.txt"
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
fi
if [ ! -x .venv-crewai/bin/python ]; then
    python3 -m venv .venv-crewai
fi
.venv-crewai/bin/python -m pip install -q --disable-pip-version-check -r clients/python/crewai-requirements.txt
# The package's source runs from clients/python (PYTHONPATH); its compiled
# engine is the one step 40 built into .venv-client (a stable-ABI, abi3,
# extension: any CPython 3.9+), copied beside crewai rather than built a
# second time (a release build of several minutes). The package's
# __init__ extends its path to a parallax_client folder on sys.path, so the
# embedded tests find it there.
crewai_engine=$(.venv-client/bin/python -I -c 'import parallax_client._engine as e; print(e.__file__)')
crewai_site=$(.venv-crewai/bin/python -I -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
mkdir -p "$crewai_site/parallax_client"
cp "$crewai_engine" "$crewai_site/parallax_client/"
unset crewai_engine crewai_site
