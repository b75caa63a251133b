# Sourced by .ci/run (bash, set -euo pipefail, cwd = repository root).
# tests/postgres_fleet.rs starts its own PostgreSQL cluster (initdb, pg_ctl)
# in a temporary directory as the user nobody, so only the programs are
# needed: Debian's `postgresql` package, whose own service (port 5432) is
# neither needed nor started here.
echo "--- PostgreSQL for tests/postgres_fleet.rs"
pg_found=0
if command -v initdb >/dev/null 2>&1; then
    pg_found=1
elif ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    pg_found=1
fi
if [ "$pg_found" = 0 ]; then
    apt-get update -qq
    had_policy=0
    [ -e /usr/sbin/policy-rc.d ] && had_policy=1
    if [ "$had_policy" = 0 ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod +x /usr/sbin/policy-rc.d
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    if [ "$had_policy" = 0 ]; then
        rm -f /usr/sbin/policy-rc.d
    fi
fi
command -v runuser >/dev/null 2>&1 || {
    echo "runuser (util-linux) is needed to run PostgreSQL as nobody" >&2
    exit 1
}
ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null || command -v initdb
