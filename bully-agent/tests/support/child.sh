#!/bin/bash
# The command the agent runs while its node leads, in the process tests.
#
# Appends "start|beat|stop TOKEN PID MILLIS" lines to the file $1: `start` once,
# `beat` every 50 ms while it runs, `stop` when it has stopped after SIGTERM (at
# once, or after the stop time below).
# TOKEN is $BULLY_FENCING_TOKEN, MILLIS the wall clock in milliseconds since the
# epoch. `>>` opens the file with O_APPEND and each line is one write(2), so the
# lines of all the children on this machine come in one total order: the file's.
# `support/child_log.rs` parses and checks it.
#
# bash, not sh: the clock is bash's $EPOCHREALTIME, read without a fork. A
# `$(date ...)` (or any `$(...)`) is a process in the child's group, and the
# SIGTERM the agent sends that group can kill it halfway, leaving a line
# without a time. Started with `sh`, it re-executes itself with bash.
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
log=$1
# Sets $ms to the time in milliseconds: microseconds without the dot, less 3 digits.
now() { local us=${EPOCHREALTIME/[.,]/}; ms=${us%???}; }
now; echo "start $BULLY_FENCING_TOKEN $$ $ms" >> "$log"
# A job that takes a while to stop: if the file "$1.stop_ms" exists it holds the
# milliseconds this job keeps working (and beating) after SIGTERM before it stops.
stop_ms=0
[ -f "$log.stop_ms" ] && read -r stop_ms < "$log.stop_ms"
stopping() {
    local until=$((ms + stop_ms))
    while now; [ "$ms" -lt "$until" ]; do
        echo "beat $BULLY_FENCING_TOKEN $$ $ms" >> "$log"; sleep 0.05
    done
    echo "stop $BULLY_FENCING_TOKEN $$ $ms" >> "$log"; exit 0
}
trap 'now; stopping' TERM
while :; do now; echo "beat $BULLY_FENCING_TOKEN $$ $ms" >> "$log"; sleep 0.05 & wait $!; done
