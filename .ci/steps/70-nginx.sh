# Sourced by .ci/run (bash, set -euo pipefail, cwd = repository root).
# tests/fleet.rs runs two `parallax serve` replicas behind nginx (Debian's
# package) with consistent hashing on the session header. The test starts
# nginx itself in the foreground with a generated config, so the package's
# own service is neither needed nor started here.
echo "--- nginx for tests/fleet.rs"
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
    apt-get update -qq
    # policy-rc.d 101: the package's postinst must not start its service
    # (port 80) on the CI machine; the test runs its own instance.
    had_policy=0
    [ -e /usr/sbin/policy-rc.d ] && had_policy=1
    if [ "$had_policy" = 0 ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod +x /usr/sbin/policy-rc.d
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null
    if [ "$had_policy" = 0 ]; then
        rm -f /usr/sbin/policy-rc.d
    fi
fi
/usr/sbin/nginx -v
