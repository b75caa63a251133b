# Sourced by .ci/run (bash, set -euo pipefail, cwd = repository root).
# The dashboard (issue 22): Debian's chromium for the browser tests
# (tests/dashboard_page.rs), the npm packages pinned by the two lockfiles,
# and the check that the chart library embedded in the binary
# (dashboard/vendor/) is exactly the one the lockfile installs.
echo "--- dashboard: chromium, npm ci (dashboard/, tests/browser/), vendored uPlot check"
if [ ! -x /usr/bin/chromium ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
npm ci --prefix dashboard --no-audit --no-fund --loglevel=error >/dev/null
node dashboard/build.mjs --check
npm ci --prefix tests/browser --no-audit --no-fund --loglevel=error >/dev/null
# The browser test's screenshots, kept with the CI log.
export PARALLAX_ARTIFACTS_DIR="${PARALLAX_ARTIFACTS_DIR:-target/artifacts}"
echo "dashboard screenshots will be in $PARALLAX_ARTIFACTS_DIR/dashboard/"
