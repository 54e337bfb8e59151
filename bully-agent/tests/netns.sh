#!/usr/bin/env bash
# Five bully-agent processes, one per Linux network namespace, joined by a bridge
# that lives in a sixth (switch) namespace, under iptables faults: the leader
# isolated, a partition that leaves a majority, the chained partition (5 reaches
# only 4, 4 reaches all) and 30 % loss on every link. Each fault starts from a
# healthy cluster, is held for FAULT_SECS, then healed. The agents' test child
# appends start/beat/stop lines to one shared file; the analysis
# (`bully-agent/tests/netns.rs`, an ignored test) reads it with this script's
# timeline and asserts: no overlap of the child's intervals, tokens that only
# grow, and a running child on the majority side for most of each fault.
#
# Needs root and `ip netns`; without them it says why and exits 0 (the only
# skip). It installs iptables (and iproute2) with apt-get when missing. It
# creates and removes only its own namespaces (`bully-<pid>-*`), whose veths,
# bridge and iptables rules live and die with them: nothing is added to the
# namespace it is started from. Addresses are 10.77.0.1-5 inside the namespaces.
#
# Run from anywhere:   sudo bash bully-agent/tests/netns.sh
# Environment:         FAULT_SECS (default 10), BULLY_NETNS_KEEP=1 keeps the run
#                      directory's logs (they are kept on failure anyway).
set -euo pipefail
cd "$(dirname "$0")/../.."

FAULT_SECS=${FAULT_SECS:-10}
N=5
NET=10.77.0
PREFIX="bully-$$"
SWITCH="$PREFIX-sw"

say() { printf 'netns: %s\n' "$*"; }
skip() {
  say "skipped: $*"
  exit 0
}
die() {
  printf 'netns: FAILED: %s\n' "$*" >&2
  exit 1
}
now_ms() { date +%s%3N; }

# --- can we? ------------------------------------------------------------------
[ "$(id -u)" = 0 ] || skip "not root (network namespaces and iptables need CAP_NET_ADMIN)"
if ! command -v ip >/dev/null 2>&1 || ! command -v iptables >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    say "installing iptables and iproute2 with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq iptables iproute2 >/dev/null
  fi
fi
command -v ip >/dev/null 2>&1 || skip "no ip command (iproute2) and apt-get could not install it"
if ! probe_err=$(ip netns add "$PREFIX-probe" 2>&1); then
  skip "ip netns add does not work here: $probe_err"
fi
# Which iptables backend works inside a namespace: the nft one (Debian's default)
# needs nf_tables in the kernel, the legacy one ip_tables; try both, in that order.
IPT=""
for candidate in iptables iptables-nft iptables-legacy; do
  command -v "$candidate" >/dev/null 2>&1 || continue
  if ip netns exec "$PREFIX-probe" "$candidate" -w -A INPUT -s "$NET.254" -j DROP 2>/dev/null &&
    ip netns exec "$PREFIX-probe" "$candidate" -w -A INPUT -s "$NET.254" \
      -m statistic --mode random --probability 0.3 -j DROP 2>/dev/null; then
    IPT=$candidate
    break
  fi
done
ip netns del "$PREFIX-probe"
[ -n "$IPT" ] || die "no iptables backend works inside a network namespace (tried iptables, iptables-nft, iptables-legacy)"
say "iptables backend: $IPT ($("$IPT" --version 2>/dev/null || echo unknown version))"

# --- the binary ---------------------------------------------------------------
TARGET_DIR=${CARGO_TARGET_DIR:-target}
# Built the way CI's test step builds it (the workspace's features, the test
# profile), so nothing is compiled twice: the analysis below is that test
# target, and its binary is the agent the namespaces run.
say "building bully-agent (the test profile)"
cargo test -q --workspace --all-features --test netns --no-run
AGENT="$PWD/$TARGET_DIR/debug/bully-agent"
CHILD="$PWD/bully-agent/tests/support/child.sh"
[ -x "$AGENT" ] || die "no binary at $AGENT"
[ -f "$CHILD" ] || die "no test child at $CHILD"

RUN="$PWD/$TARGET_DIR/netns/run-$(date -u +%Y%m%dT%H%M%S)-$$"
mkdir -p "$RUN"
LOG="$RUN/child.log"
TIMELINE="$RUN/timeline.txt"
: >"$LOG"
: >"$TIMELINE"
say "run directory: $RUN"

# --- cleanup, on any exit -----------------------------------------------------
declare -a AGENT_PID=()
cleanup() {
  local status=$?
  set +e
  for i in "${!AGENT_PID[@]}"; do
    kill -TERM "${AGENT_PID[$i]}" 2>/dev/null
  done
  for _ in $(seq 50); do
    local alive=0
    for i in "${!AGENT_PID[@]}"; do
      kill -0 "${AGENT_PID[$i]}" 2>/dev/null && alive=1
    done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  # Whatever still runs inside our namespaces (an agent that ignored SIGTERM, a
  # child it left behind) is ours: kill it by pid before the namespaces go.
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$PREFIX-"); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do
      kill -KILL "$pid" 2>/dev/null
    done
  done
  sleep 0.2
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$PREFIX-"); do
    ip netns del "$ns"
  done
  if [ "$status" = 0 ] && [ "${BULLY_NETNS_KEEP:-0}" != 1 ]; then
    rm -rf "$RUN"
  else
    say "logs kept in $RUN"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- topology: a bridge in the switch namespace, one veth per node -------------
ns() { echo "$PREFIX-n$1"; }
ip netns add "$SWITCH"
ip -n "$SWITCH" link add bully-br type bridge
ip -n "$SWITCH" link set bully-br up
for i in $(seq $N); do
  ip netns add "$(ns "$i")"
  # Both ends are created directly inside their namespaces: no interface ever
  # appears in the namespace this script runs in.
  ip link add bully-v"$i" netns "$(ns "$i")" type veth peer name bully-p"$i" netns "$SWITCH"
  ip -n "$SWITCH" link set bully-p"$i" master bully-br
  ip -n "$SWITCH" link set bully-p"$i" up
  ip -n "$(ns "$i")" addr add "$NET.$i/24" dev bully-v"$i"
  ip -n "$(ns "$i")" link set bully-v"$i" up
  ip -n "$(ns "$i")" link set lo up
done

ipt() { # ipt NODE ARGS...: an iptables command inside node NODE's namespace
  local node=$1
  shift
  ip netns exec "$(ns "$node")" "$IPT" -w "$@"
}
heal_all() {
  for i in $(seq $N); do ipt "$i" -F INPUT && ipt "$i" -F OUTPUT; done
}
# drop_from NODE PEER...: NODE no longer receives from the PEERs (the senders see
# nothing: their datagrams leave and vanish, as on a real cut link).
drop_from() {
  local node=$1
  shift
  for peer in "$@"; do ipt "$node" -A INPUT -s "$NET.$peer" -j DROP; done
}

# --- the agents ---------------------------------------------------------------
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$RUN/secret"
chmod 600 "$RUN/secret"
for i in $(seq $N); do
  {
    echo "cluster = 77"
    echo "id = $i"
    echo "data_dir = \"data/$i\""
    echo "secret_file = \"secret\""
    echo "algorithm = \"classic\""
    echo "quorum = \"majority\""
    echo "preemption = \"always\""
    echo "listen = \"127.0.0.1:9101\""
    echo
    echo "[timing]"
    echo "heartbeat_ms = 50"
    echo "leader_timeout_ms = 600"
    echo "max_message_delay_ms = 20"
    echo
    echo "[child]"
    echo "grace_ms = 200"
    echo "on_exit = \"restart\""
    echo "restart_delay_ms = 200"
    for j in $(seq $N); do
      echo
      echo "[[members]]"
      echo "id = $j"
      echo "address = \"$NET.$j:7000\""
    done
  } >"$RUN/node-$i.toml"
  "$AGENT" check --config "$RUN/node-$i.toml" || die "bully-agent check refused node-$i.toml"
done
# Each agent in a session of its own (setsid execs, so $! is the agent's pid):
# no signal meant for a process group reaches this script or another agent.
for i in $(seq $N); do
  setsid ip netns exec "$(ns "$i")" "$AGENT" run --config "$RUN/node-$i.toml" --log info -- \
    sh "$CHILD" "$LOG" >"$RUN/agent-$i.log" 2>&1 &
  AGENT_PID[i]=$!
done
say "five agents started: pids ${AGENT_PID[*]}"

# leader_of NODE: the leader NODE's status endpoint names, or "none".
leader_of() {
  local json
  json=$(ip netns exec "$(ns "$1")" "$AGENT" status --endpoint 127.0.0.1:9101 --json 2>/dev/null) || {
    echo none
    return
  }
  sed -n 's/.*"leader":[[:space:]]*\([0-9][0-9]*\).*/\1/p' <<<"$json" | head -n1 | grep . || echo none
}
child_running_on() {
  ip netns exec "$(ns "$1")" "$AGENT" status --endpoint 127.0.0.1:9101 --json 2>/dev/null |
    grep -q '"running":[[:space:]]*true'
}
agents_alive() {
  for i in $(seq $N); do
    if ! kill -0 "${AGENT_PID[$i]}" 2>/dev/null; then
      tail -n 5 "$RUN/agent-$i.log" >&2
      die "agent $i (pid ${AGENT_PID[$i]}) has exited; see $RUN/agent-$i.log"
    fi
  done
}
# wait_healthy SECS: every node names node 5 (the highest) and 5's child runs.
wait_healthy() {
  local deadline=$((SECONDS + $1))
  while [ $SECONDS -lt $deadline ]; do
    local agree=1
    for i in $(seq $N); do
      [ "$(leader_of "$i")" = "$N" ] || {
        agree=0
        break
      }
    done
    if [ "$agree" = 1 ] && child_running_on "$N"; then return 0; fi
    sleep 0.2
  done
  die "the cluster did not become healthy (all naming $N, its child running) within $1 s; see $RUN"
}

# scenario NAME MAJORITY APPLY: from a healthy cluster, apply the fault (a shell
# function), hold it FAULT_SECS, heal, wait until healthy again. The timeline
# line is what the analysis reads.
scenario() {
  local name=$1 majority=$2 apply=$3
  wait_healthy 30
  sleep 1
  agents_alive
  local leader
  leader=$(leader_of 1)
  say "$name: fault on (leader $leader, majority side {$majority}) for $FAULT_SECS s"
  local fault heal healthy
  fault=$(now_ms)
  "$apply"
  sleep "$FAULT_SECS"
  heal=$(now_ms)
  heal_all
  agents_alive
  wait_healthy 30
  healthy=$(now_ms)
  agents_alive
  say "$name: healed; healthy again $((healthy - heal)) ms after the heal"
  echo "$name majority=$majority leader=$leader fault=$fault heal=$heal healthy=$healthy" >>"$TIMELINE"
}

# (a) the leader isolated: DROP both ways in its own namespace, for every peer.
# Outgoing datagrams are refused locally (sendto fails with EPERM), which the
# agent must survive.
isolate_leader() {
  local leader
  leader=$(leader_of 1)
  for j in $(seq $N); do
    [ "$j" = "$leader" ] && continue
    ipt "$leader" -A INPUT -s "$NET.$j" -j DROP
    ipt "$leader" -A OUTPUT -d "$NET.$j" -j DROP
  done
}
# (b) {1,2,3} | {4,5}
partition_majority() {
  for i in 1 2 3; do drop_from "$i" 4 5; done
  for i in 4 5; do drop_from "$i" 1 2 3; done
}
# (c) 5 reaches only 4; 4 reaches all.
chained() {
  drop_from 5 1 2 3
  for i in 1 2 3; do drop_from "$i" 5; done
}
# (d) every link loses 30 % of its datagrams, each direction on its own.
loss30() {
  for i in $(seq $N); do
    for j in $(seq $N); do
      [ "$i" = "$j" ] && continue
      ipt "$i" -A INPUT -s "$NET.$j" -m statistic --mode random --probability 0.3 -j DROP
    done
  done
}

say "waiting for the first leader"
wait_healthy 30
scenario leader_isolated "1,2,3,4" isolate_leader
scenario partition_123_45 "1,2,3" partition_majority
scenario chained_5_4 "1,2,3,4" chained
scenario loss_30 "1,2,3,4,5" loss30

# SIGTERM: each agent stops its child, resigns and exits 0.
for i in $(seq $N); do kill -TERM "${AGENT_PID[$i]}"; done
for i in $(seq $N); do
  if ! wait "${AGENT_PID[$i]}"; then
    die "agent $i did not exit 0 after SIGTERM; see $RUN/agent-$i.log"
  fi
done
AGENT_PID=()
say "agents stopped; analysing $LOG"

BULLY_NETNS_RUN="$RUN" cargo test -q --workspace --all-features --test netns -- --ignored --nocapture
