#!/usr/bin/env bash
# Checks the alert rules (promtool check rules, promtool test rules on
# synthetic series), then runs a real Prometheus server scraping three
# bully-agents on 127.0.0.1: a query through its HTTP API finds exactly one
# member with bully_is_leader == 1, and again, another one, after the leader
# is killed (kill -9). Client-go's leader_election_master_status{name}, as
# Prometheus' own parser read it from each agent, agrees with bully_is_leader.
#
# Uses Debian's prometheus package (promtool and the server), installed with
# apt-get when missing; skips, saying why, where it cannot be installed.
# Builds bully-agent (debug) unless BULLY_AGENT names a binary.
# Run from anywhere: bash deploy/prometheus/test.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus) >/dev/null 2>&1 || true
  fi
fi
if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
  echo "skipped: promtool and prometheus are not installed and apt-get could not install Debian's prometheus package"
  exit 0
fi
# Debian's package starts a server of its own where systemd runs: leave it be;
# ours listens on a port of its own.
promtool --version 2>&1 | head -n 1

promtool check rules "$here/bully-agent.rules.yml"
(cd "$here" && promtool test rules bully-agent.rules.test.yml)

agent=${BULLY_AGENT:-}
if [ -z "$agent" ] || [ ! -x "$agent" ]; then
  (cd "$root" && cargo build -q -p bully-agent)
  agent=$root/target/debug/bully-agent
fi

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${KEEP:-}" ] && echo "files kept in $work" || rm -rf "$work"
}
trap cleanup EXIT

# Free ports, as the OS hands them out.
read -r -a ports < <(python3 - <<'PY'
import socket
held = []
for kind in [socket.SOCK_DGRAM] * 3 + [socket.SOCK_STREAM] * 4:
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    held.append(s)
print(" ".join(str(s.getsockname()[1]) for s in held))
PY
)
udp=("${ports[@]:0:3}")
http=("${ports[@]:3:3}")
prom_port=${ports[6]}

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/secret"
chmod 600 "$work/secret"
for id in 1 2 3; do
  {
    echo "cluster = 9"
    echo "id = $id"
    echo "data_dir = \"data/$id\""
    echo "secret_file = \"secret\""
    echo "listen = \"127.0.0.1:${http[$((id - 1))]}\""
    echo "[timing]"
    echo "heartbeat_ms = 50"
    echo "leader_timeout_ms = 600"
    echo "max_message_delay_ms = 20"
    echo "[child]"
    echo "grace_ms = 200"
    for member in 1 2 3; do
      echo "[[members]]"
      echo "id = $member"
      echo "address = \"127.0.0.1:${udp[$((member - 1))]}\""
    done
  } > "$work/node$id.toml"
  "$agent" run --config "$work/node$id.toml" -- sleep 100000 > "$work/node$id.log" 2>&1 &
  pids+=($!)
done
agent_pid() { sed -n "$1p" <<< "$(printf '%s\n' "${pids[@]:0:3}")"; }

cat > "$work/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $here/bully-agent.rules.yml
scrape_configs:
  - job_name: bully
    static_configs:
      - targets: ['127.0.0.1:${http[0]}', '127.0.0.1:${http[1]}', '127.0.0.1:${http[2]}']
YML
promtool check config "$work/prometheus.yml" >/dev/null
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" > "$work/prometheus.log" 2>&1 &
pids+=($!)

# The instances that report bully_is_leader == 1 now, through the HTTP API.
leaders() {
  curl -sf "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode 'query=bully_is_leader == 1' |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(" ".join(sorted(s["metric"]["instance"] for s in r)))'
}
# Waits (at most $2 s) until exactly one instance leads, other than $1; prints it.
one_leader() {
  local not=$1 deadline=$((SECONDS + $2)) found=
  while [ $SECONDS -lt $deadline ]; do
    found=$(leaders 2>/dev/null || true)
    if [ -n "$found" ] && [ "$(wc -w <<< "$found")" = 1 ] && [ "$found" != "$not" ]; then
      echo "$found"
      return 0
    fi
    sleep 0.5
  done
  echo "no single leader within $2 s (last answer: '$found')" >&2
  tail -n 5 "$work"/node*.log "$work/prometheus.log" >&2
  return 1
}

started=$SECONDS
first=$(one_leader none 60)
echo "before: exactly one member leads, per Prometheus: $first ($((SECONDS - started)) s after start)"
rules=$(curl -sf "http://127.0.0.1:$prom_port/api/v1/rules" | python3 -c 'import json,sys; g=json.load(sys.stdin)["data"]["groups"]; print(sum(1 for x in g for r in x["rules"] if r["health"]=="ok"))')
echo "Prometheus loaded $rules rules (alerts and a recording rule), all healthy"
[ "$rules" = 7 ]

# client-go's gauge: one series per agent, labelled with the default lease
# name (bully-agent-CLUSTER), 1 on the leader only.
# Prometheus scrapes each target on its own schedule, so the three series
# may not all be there yet when the first leader shows: wait (at most 30 s)
# for all three before comparing.
masters_now() {
  curl -sf "http://127.0.0.1:$prom_port/api/v1/query" \
    --data-urlencode 'query=leader_election_master_status{name="bully-agent-9"}' |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(len(r), " ".join(s["metric"]["instance"] for s in r if s["value"][1] == "1"))'
}
deadline=$((SECONDS + 30))
masters=$(masters_now || true)
while [ "${masters%% *}" != 3 ] && [ $SECONDS -lt $deadline ]; do
  sleep 0.5
  masters=$(masters_now || true)
done
echo "leader_election_master_status: $masters"
[ "$masters" = "3 $first" ]

# Kill the leader's agent (its supervisor stops the job when it goes).
port=${first##*:}
for id in 1 2 3; do
  if [ "${http[$((id - 1))]}" = "$port" ]; then victim=$id; fi
done
kill -9 "$(agent_pid "$victim")"
killed=$SECONDS
second=$(one_leader "$first" 60)
echo "after kill -9 of member $victim: exactly one member leads, per Prometheus: $second ($((SECONDS - killed)) s later, with 1 s scrapes)"
