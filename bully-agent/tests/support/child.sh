#!/bin/bash
# The command the agent runs while its node leads, in the process tests.
#
# Usage: child.sh LOG [STOP_MS]
#
# STOP_MS may also come from a file "LOG.stop_ms" (for every member at once);
# the argument wins, and without either it is 0.
#
# Appends "start|beat|term|stop TOKEN PID MILLIS" lines to the file LOG: `start`
# once, `beat` every 50 ms while it runs, `stop` when it leaves. TOKEN is
# $BULLY_FENCING_TOKEN, MILLIS the wall clock in milliseconds since the epoch.
# `>>` opens the file with O_APPEND and each line is one write(2), so the lines
# of all the children on this machine come in one total order: the file's.
# `support/child_log.rs` parses and checks it.
#
# On SIGTERM it leaves at once (a `stop` line) when STOP_MS is 0 or missing.
# Otherwise it takes STOP_MS milliseconds to finish, as a job flushing its work
# would: a `term` line, then `beat` lines every 50 ms (it still runs and still
# writes), then `stop`. Further SIGTERMs are ignored meanwhile; SIGKILL (the
# agent's, after its grace period) ends it wherever it is.
#
# bash, not sh: the clock is bash's $EPOCHREALTIME, read without a fork. A
# `$(date ...)` (or any `$(...)`) is a process in the child's group, and the
# SIGTERM the agent sends that group can kill it halfway, leaving a line
# without a time. Started with `sh`, it re-executes itself with bash.
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
log=$1
stop_ms=${2:-0}
[ -z "$2" ] && [ -f "$log.stop_ms" ] && read -r stop_ms < "$log.stop_ms"
# Sets $ms to the time in milliseconds: microseconds without the dot, less 3 digits.
now() { local us=${EPOCHREALTIME/[.,]/}; ms=${us%???}; }
write() { echo "$1 $BULLY_FENCING_TOKEN $$ $ms" >> "$log"; }
# Sleeps $1 milliseconds (at most 999), in the background so that a signal
# interrupts the wait.
pause_ms() { printf -v seconds '0.%03d' "$1"; sleep "$seconds" & wait $!; }
leave() {
  trap '' TERM
  now
  if (( stop_ms > 0 )); then
    write term
    local end=$((ms + stop_ms))
    while now; (( ms < end )); do
      write beat
      left=$((end - ms))
      pause_ms $(( left < 50 ? left : 50 ))
    done
  fi
  write stop
  exit 0
}
trap leave TERM
now; write start
while :; do now; write beat; pause_ms 50; done
