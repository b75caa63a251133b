# Sourced by .ci/run (bash, set -euo pipefail, cwd = repository root).
# The TypeScript client (tests/typescript_client.rs): node >= 20 runs its
# suite; tsc (typescript, pinned in clients/typescript/package-lock.json)
# checks its hand-written types.
echo "--- clients/typescript: node $(node --version 2>/dev/null || echo missing), npm ci"
if ! command -v node >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
fi
npm ci --prefix clients/typescript --no-audit --no-fund --loglevel=error >/dev/null
