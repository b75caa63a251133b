# Sourced by .ci/run (bash, set -euo pipefail, cwd = repository root), before
# the steps that install Debian packages: one function for them all.

# apt_install_quietly PACKAGE...: installs the packages without starting
# their services (a policy-rc.d that answers 101 while dpkg runs): the
# tests start their own nginx or PostgreSQL and need nothing listening on
# the machine's ports.
apt_install_quietly() {
    apt-get update -qq
    local had_policy=0
    [ -e /usr/sbin/policy-rc.d ] && had_policy=1
    if [ "$had_policy" = 0 ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod +x /usr/sbin/policy-rc.d
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
    if [ "$had_policy" = 0 ]; then
        rm -f /usr/sbin/policy-rc.d
    fi
}
