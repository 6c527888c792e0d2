#!/usr/bin/env bash
# pcbench: stop what tests/slurm/start-multinode.sh started, using only its pid files (never process names), then
# remove its network namespaces (and with them the veth pairs) and its bridge. Idempotent.
# Jobs still queued/running on this private cluster are cancelled first.
# PCBENCH_MN_KEEP_MUNGE=1 leaves munged running; PCBENCH_MN_PURGE=1 also deletes the state dir.
set -uo pipefail
DIR=${PCBENCH_MN_DIR:-/tmp/pcbench-slurm-mn}
t0=$(date +%s%N)
# say, alive (PID is a live process called NAME), state_layout: shared with start-multinode.sh
SAY_PREFIX="[pcbench-mn]"
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
state_layout                  # RUN, MUNGE: where start-multinode.sh wrote its pid files; exports SLURM_CONF
# stop_pidfile PIDFILE NAME [SIGNAL] [WAIT_TENTHS]: signal the recorded pid if it is still NAME,
# wait for it to go, SIGKILL after the wait
stop_pidfile() {
  local f=$1 name=$2 sig=${3:-TERM} tenths=${4:-300} p t
  [ -s "$f" ] || return 0
  p=$(<"$f")
  if ! alive "$p" "$name"; then rm -f "$f"; return 0; fi
  t=$(date +%s%N); kill -"$sig" "$p" 2>/dev/null
  for _ in $(seq "$tenths"); do alive "$p" "$name" || break; sleep 0.1; done
  if alive "$p" "$name"; then say "$name (pid $p) still alive, SIGKILL"; kill -KILL "$p" 2>/dev/null; sleep 0.2; fi
  rm -f "$f"; say "$name (pid $p) stopped after $(( ($(date +%s%N) - t) / 1000000 )) ms"
}

[ -d "$DIR" ] || { say "nothing to stop ($DIR does not exist)"; exit 0; }
TAG=$(cat "$DIR/tag" 2>/dev/null || echo "${PCBENCH_MN_TAG:-pcbmn}")
nodes=$(cat "$DIR/nodes.list" 2>/dev/null || true)

if [ -s "$RUN/slurmctld.pid" ] && alive "$(<"$RUN/slurmctld.pid")" slurmctld; then
  ids=$(squeue -h -o %A 2>/dev/null | tr '\n' ' ')
  if [ -n "${ids// /}" ]; then
    say "cancelling jobs: $ids"; scancel $ids 2>/dev/null || true
    for _ in $(seq 30); do [ -z "$(squeue -h -t R,CG -o %i 2>/dev/null)" ] && break; sleep 0.5; done
  fi
fi

for n in $nodes; do
  stop_pidfile "$RUN/slurmd-$n.pid" slurmd TERM 100
  # the node's PID 1: on SIGTERM it exits, and the kernel kills every process left in the node
  stop_pidfile "$RUN/node-$n.pid" bash TERM 50
  # unshare (outside the node) ignores SIGTERM and exits when its child does; SIGKILL if it lingers
  stop_pidfile "$RUN/unshare-$n.pid" unshare KILL 30
  rm -f "$DIR/nodes/$n/slurmd.nspid"
done
stop_pidfile "$RUN/slurmctld.pid" slurmctld
stop_pidfile "$RUN/slurmdbd.pid" slurmdbd
stop_pidfile "$RUN/mariadbd.pid" mariadbd
[ "${PCBENCH_MN_KEEP_MUNGE:-0}" = 1 ] || stop_pidfile "$MUNGE/run/munged.pid" munged

for n in $nodes; do
  ns=$TAG-$n
  if [ -e "/run/netns/$ns" ]; then
    left=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
    if [ -n "${left// /}" ]; then             # only processes inside our own namespace
      say "netns $ns: killing leftover pids $left"; kill -KILL $left 2>/dev/null; sleep 0.3
    fi
    ip netns del "$ns" && say "netns $ns removed"
  fi
  ip link show "$ns" >/dev/null 2>&1 && ip link del "$ns"      # veth, normally gone with the netns
done
if ip link show "$TAG-br" >/dev/null 2>&1; then ip link del "$TAG-br" && say "bridge $TAG-br removed"; fi
rm -f "$DIR/tag"
[ "${PCBENCH_MN_PURGE:-0}" = 1 ] && { rm -rf "${DIR:?}"; say "removed $DIR"; }
say "stopped in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
exit 0
