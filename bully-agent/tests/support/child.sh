#!/bin/sh
# The command the agent runs while its node leads, in the process tests.
#
# Appends "start|beat|stop TOKEN PID MILLIS" lines to the file $1: `start` once,
# `beat` every 50 ms while it runs, `stop` when it is asked to stop (SIGTERM).
# TOKEN is $BULLY_FENCING_TOKEN, MILLIS the wall clock in milliseconds since the
# epoch. `>>` opens the file with O_APPEND and each line is one write(2), so the
# lines of all the children on this machine come in one total order: the file's.
# `support/child_log.rs` parses and checks it.
log=$1
now() { date +%s%3N; }
echo "start $BULLY_FENCING_TOKEN $$ $(now)" >> "$log"
trap 'echo "stop $BULLY_FENCING_TOKEN $$ $(now)" >> "$log"; exit 0' TERM
while :; do echo "beat $BULLY_FENCING_TOKEN $$ $(now)" >> "$log"; sleep 0.05 & wait $!; done
