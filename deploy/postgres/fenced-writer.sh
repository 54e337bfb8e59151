#!/usr/bin/env bash
# A job for bully-agent that writes to PostgreSQL under its fencing token: a row,
# then 30 ms' rest, again and again, each row through fenced_write (schema.sql),
# which the database refuses, in the write's own transaction, once a write with
# a newer token has landed. A leader frozen past its lease that wakes and writes before its agent
# can stop it is refused: no row of the old leader follows one of the new.
#
# Usage, as the command of `bully-agent run`: fenced-writer.sh CONNINFO
#   CONNINFO: a libpq connection string or URI of a database set up with
#   schema.sql, e.g. "host=db.example dbname=jobs". psql must be on PATH.
#
# Prints "fenced-writer: wrote TOKEN row SEQ" for each write that landed. On a
# refusal it prints "fenced-writer: refused TOKEN: MESSAGE" and exits with
# status 3: a newer leader writes, so this leadership is over, whatever this
# machine's agent believes yet. Other failures (the database unreachable) are
# printed and the write is tried again.
set -euo pipefail
conninfo=${1:?usage: fenced-writer.sh CONNINFO}
token=${BULLY_FENCING_TOKEN:?not set: bully-agent sets it for the command it runs}
# TERM-LEADER, two zero-padded decimals: SQL reads each as a number, and
# compares the pair as (term, leader), as bully-agent orders tokens.
term=${token%-*}
leader=${token#*-}

while :; do
  # One psql per write keeps the job simple; a long-lived connection would do
  # as well, as each write is one statement.
  if answer=$(psql --no-psqlrc --quiet --no-align --tuples-only --set ON_ERROR_STOP=1 \
      --set term="$term" --set leader="$leader" --dbname "$conninfo" 2>&1 <<'SQL'
SELECT fenced_write(:'term', :'leader');
SQL
  ); then
    echo "fenced-writer: wrote $token row $answer"
  elif [[ $answer == *"fenced: token ("* ]]; then
    echo "fenced-writer: refused $token: ${answer%%$'\n'*}"
    exit 3
  else
    echo "fenced-writer: failed $token: ${answer%%$'\n'*}" >&2
  fi
  sleep 0.03
done
