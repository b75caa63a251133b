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
    apt_install_quietly postgresql
fi
command -v runuser >/dev/null 2>&1 || {
    echo "runuser (util-linux) is needed to run PostgreSQL as nobody" >&2
    exit 1
}
ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null || command -v initdb
