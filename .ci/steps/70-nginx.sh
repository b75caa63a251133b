# Sourced by .ci/run (bash, set -euo pipefail, cwd = repository root).
# tests/fleet.rs runs two `parallax serve` replicas behind nginx (Debian's
# package) with consistent hashing on the session header. The test starts
# nginx itself in the foreground with a generated config, so the package's
# own service is neither needed nor started here.
echo "--- nginx for tests/fleet.rs"
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
    # Its service (port 80) is not started: the test runs its own instance.
    apt_install_quietly nginx
fi
/usr/sbin/nginx -v
