# Sourced by .ci/run (bash, set -euo pipefail, cwd = repository root).
# The real-agent suite (tests/agents.rs) runs the pinned Claude Code and
# Codex CLIs from this project-local prefix (npm is quiet when up to date).
echo "--- npm agents (.ci/agents): claude-code 2.1.328, codex 0.169.0"
npm install --prefix .ci/agents --no-save --no-audit --no-fund --loglevel=error \
    @anthropic-ai/claude-code@2.1.328 @openai/codex@0.169.0 >/dev/null
