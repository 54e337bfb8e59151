#!/usr/bin/env bash
# Runs bully-agent's fencing test against a real PostgreSQL
# (bully-agent/tests/postgres_fencing.rs): three agents run fenced-writer.sh
# against a throwaway server; the leader, frozen past its lease, wakes and is
# refused by the database while the new leader's writes land.
#
# Uses Debian's postgresql package (initdb, pg_ctl, psql), installed with
# apt-get when missing; skips, saying why, where it cannot be installed. The
# test itself also says why and passes without running when it finds no
# PostgreSQL (BULLY_POSTGRES_BIN names another installation's bin directory).
# Run from anywhere: bash deploy/postgres/test.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

# Where the test looks: Debian keeps initdb off PATH, in a directory per version.
found() {
  [ -n "${BULLY_POSTGRES_BIN:-}" ] ||
    compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null ||
    command -v initdb >/dev/null
}
if ! found; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql) >/dev/null 2>&1 || true
  fi
fi
if ! found; then
  echo "skipped: PostgreSQL is not installed and apt-get could not install Debian's postgresql package"
  exit 0
fi
# Debian's package creates a cluster of its own (and starts it where services
# run): leave it be; the test's server has a socket directory of its own.

bash -n "$here/fenced-writer.sh"
cd "$root"
cargo test -p bully-agent --test postgres_fencing -- --nocapture \
  an_old_leaders_write_after_a_pause_is_refused_by_postgresql
