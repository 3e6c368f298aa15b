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
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_postgresql.sh: no apt-get here; install a PostgreSQL server by hand so that initdb and postgres exist" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    echo "install_postgresql.sh: not root and no sudo; run as root: apt-get update && apt-get install -y postgresql" >&2
    exit 1
  fi
fi
echo "install_postgresql.sh: installing postgresql (Debian package) for the server's tests"
export DEBIAN_FRONTEND=noninteractive
# No default cluster: postgresql-common reads this before the server package's postinst runs.
"${sudo[@]}" mkdir -p /etc/postgresql-common/createcluster.d
echo "create_main_cluster = false" | "${sudo[@]}" tee /etc/postgresql-common/createcluster.d/kernelproof.conf >/dev/null
"${sudo[@]}" apt-get update -qq >/dev/null
"${sudo[@]}" apt-get install -y -qq postgresql >/dev/null
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null
