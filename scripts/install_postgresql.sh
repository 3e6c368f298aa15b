#!/usr/bin/env bash
# Install Debian's PostgreSQL server when no initdb is found: the server's tests
# (tests/serve/) start a real PostgreSQL on a temporary folder and run the store and the queue
# against it. Only the binaries are needed: the tests make and remove their own cluster, so
# the package's default cluster is not created.
# Idempotent and quiet: does nothing when PostgreSQL is already there.
set -euo pipefail
if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || command -v initdb >/dev/null 2>&1; then
  exit 0
fi
what=install_postgresql.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
# No default cluster: postgresql-common reads this before the server package's postinst runs.
as_root mkdir -p /etc/postgresql-common/createcluster.d
echo "create_main_cluster = false" | as_root tee /etc/postgresql-common/createcluster.d/kernelproof.conf >/dev/null
apt_install postgresql
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null
