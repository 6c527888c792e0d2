#!/usr/bin/env bash
# pcbench: a private MULTI-node Slurm 22.05 cluster on ONE Linux machine, for the multi-node tests
# (tests/slurm/test_multinode*.py). Adapted from ../shared/slurm/start-multinode.sh; it coexists
# with the single-node cluster of tests/slurm/start.sh (own state dir, ports, munged, key, socket).
# Every "node" is a set of Linux namespaces (network + UTS + PID + mount) with its own IP on a
# host bridge, its own hostname, /etc/hosts, /etc/resolv.conf and /tmp/ray, and one
# `slurmd -N <node>` inside; munged, slurmctld (and slurmdbd + mariadbd) run in the host namespaces.
#
#   sudo tests/slurm/start-multinode.sh       # idempotent; prints "slurm multinode cluster up: ..."
#   source /tmp/pcbench-slurm-mn/env.sh       # SLURM_CONF (+ PCBENCH_MN_*) for clients on the host
#   tests/slurm/stop-multinode.sh             # stops exactly what this script started (pid files)
#
# Default layout (PCBENCH_MN_NODES=2): bridge pcbmn-br 10.77.0.1/24 on the host;
#   node mn0 = netns pcbmn-mn0, eth0 10.77.0.2;  node mn1 = netns pcbmn-mn1, eth0 10.77.0.3.
# Per node (host pids, under $DIR/run): node-<n>.pid = the node's PID 1 (a bash "init": SIGTERM =
# clean shutdown, SIGKILL = power off, every process of the node dies with it), slurmd-<n>.pid =
# its slurmd. Run a command inside a node: $DIR/on-node <n> CMD... (nsenter into all its namespaces).
# If a node's slurmd died, rerunning this script starts it again inside the same node; if the
# node itself died, the node is recreated (the node-failure tests use this).
#
# Needs: apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge slurmdbd
#        mariadb-server; iproute2, util-linux (unshare, nsenter). Root.
# Environment:
#   PCBENCH_MN_DIR            state dir (default /tmp/pcbench-slurm-mn)
#   PCBENCH_MN_NODES          number of nodes (default 2, at most 250)
#   PCBENCH_MN_NET            first three octets of the /24 (default 10.77.0): host .1, node i .(i+2)
#   PCBENCH_MN_TAG            prefix of the bridge/netns/veth names (default pcbmn, at most 9 chars)
#   PCBENCH_MN_NODE_PREFIX    node names/hostnames <prefix>0.. (default mn)
#   PCBENCH_MN_PORT_BASE      slurmctld port; slurmd +1 (inside each node's netns), slurmdbd +2 (default 6917;
#                             the single-node cluster uses 6817-6819)
#   PCBENCH_MN_SLURMD_TIMEOUT SlurmdTimeout in s (default 10: a dead node is NOT_RESPONDING after ~15 s, DOWN after ~28 s)
#   PCBENCH_MN_CPUS           CPUs per node (default: this machine's, from slurmd -C; the nodes share the real cores)
#   PCBENCH_MN_MEM            RealMemory per node in MB (default: total / nodes)
#   PCBENCH_MN_ACCOUNTING     1 (default): also mariadbd + slurmdbd so that sacct works; 0: none
#   PCBENCH_MN_DB_PORT        mariadb port for accounting (default 3317; the single-node cluster uses 3306)
#   PCBENCH_MN_CLEAN          1: forget old jobs, node state and the accounting database first (only if slurmctld is down)
#   PCBENCH_MN_TIMEOUT        seconds to wait for each daemon / the nodes (default 60)
set -euo pipefail

DIR=${PCBENCH_MN_DIR:-/tmp/pcbench-slurm-mn}
NODES=${PCBENCH_MN_NODES:-2}
NET=${PCBENCH_MN_NET:-10.77.0}
TAG=${PCBENCH_MN_TAG:-pcbmn}
NPFX=${PCBENCH_MN_NODE_PREFIX:-mn}
PORT=${PCBENCH_MN_PORT_BASE:-6917}
SLURMD_TIMEOUT=${PCBENCH_MN_SLURMD_TIMEOUT:-10}
ACCOUNTING=${PCBENCH_MN_ACCOUNTING:-1}
DB_PORT=${PCBENCH_MN_DB_PORT:-3317}
TIMEOUT=${PCBENCH_MN_TIMEOUT:-60}
CLUSTER=pcbmn
PARTITION=debug
BR=$TAG-br
HOST_IP=$NET.1
CTL_HOST=$(hostname -s)

# say, fail, alive, running, retry, daemon, start_munged, start_accounting, ...: shared with start.sh
SAY_PREFIX="[pcbench-mn]"
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
state_layout                                   # ETC RUN LOG MUNGE SOCKET under $DIR; exports SLURM_CONF
t0=$(date +%s%N)

# child_pid PARENT NAME [NSPID]: host pid of PARENT's child called NAME (whose pid inside its pid namespace is NSPID)
child_pid() {
  local c
  for c in $(cat "/proc/$1/task/$1/children" 2>/dev/null); do
    alive "$c" "$2" || continue
    [ -z "${3:-}" ] || [ "$(awk '/^NSpid:/ {print $NF}' "/proc/$c/status" 2>/dev/null)" = "$3" ] || continue
    echo "$c"; return 0
  done
  return 1
}

[ "$(id -u)" = 0 ] || fail "must run as root (namespaces, bridge, daemons)"
bins="ip unshare nsenter setsid munged munge unmunge slurmctld slurmd scontrol sinfo"
[ "$ACCOUNTING" = 1 ] && bins="$bins slurmdbd sacctmgr mariadbd mariadb mariadb-install-db"
for b in $bins; do command -v "$b" >/dev/null || fail "$b not found (apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge iproute2 [slurmdbd mariadb-server])"; done
[ "$NODES" -ge 1 ] && [ "$NODES" -le 250 ] || fail "PCBENCH_MN_NODES must be 1..250"
[ ${#TAG} -le 9 ] || fail "PCBENCH_MN_TAG '$TAG' too long (interface names are at most 15 characters)"

mkdir -p "$ETC" "$RUN" "$LOG" "$DIR/spool" "$DIR/nodes"
if [ "${PCBENCH_MN_CLEAN:-0}" = 1 ] && ! running "$RUN/slurmctld.pid" slurmctld; then
  say "PCBENCH_MN_CLEAN=1: dropping old job and node state"; rm -rf "$DIR/state" "$DIR/spool" "$DIR/nodes"; mkdir -p "$DIR/spool" "$DIR/nodes"
  # job ids restart at 1: the accounting database goes too, else sacct answers for a new job with an
  # old job's record of the same id (submitit then reads a finished job that has not started)
  running "$RUN/mariadbd.pid" mariadbd && fail "PCBENCH_MN_CLEAN=1 with mariadbd still running: run tests/slurm/stop-multinode.sh first"
  rm -rf "$DIR/mysql"
fi
mkdir -p "$DIR/state"
node_names=(); for ((i = 0; i < NODES; i++)); do node_names+=("$NPFX$i"); done
# the node list is what stop-multinode.sh tears down: keep the nodes of an earlier, larger start
touch "$DIR/nodes.list"
for n in "${node_names[@]}"; do grep -qx "$n" "$DIR/nodes.list" || echo "$n" >>"$DIR/nodes.list"; done

# ------------------------------------------------------------------ munge (own key and socket)
start_munged

# ------------------------------------------------------------------ network: bridge + one netns per node
# stop-multinode.sh removes exactly these (tag and node list are kept in the state dir)
if [ -s "$DIR/tag" ] && [ "$(<"$DIR/tag")" != "$TAG" ]; then fail "state dir was started with PCBENCH_MN_TAG=$(<"$DIR/tag"); stop it first"; fi
echo "$TAG" >"$DIR/tag"
# refuse a subnet that some other interface already uses
other=$(ip -4 -o addr show | awk -v br="$BR" -v net="$NET." '$2 != br && index($4, net) == 1 {print $2}' | head -n 1)
[ -z "$other" ] || fail "subnet $NET.0/24 is already used by interface $other (set PCBENCH_MN_NET)"
if ! ip link show "$BR" >/dev/null 2>&1; then
  ip link add "$BR" type bridge; say "bridge $BR created"
fi
ip addr replace "$HOST_IP/24" dev "$BR"
ip link set "$BR" up
for i in "${!node_names[@]}"; do
  n=${node_names[$i]} ns=$TAG-${node_names[$i]} ip=$NET.$((i + 2))
  [ -e "/run/netns/$ns" ] || { ip netns add "$ns"; say "netns $ns created"; }
  if ! ip link show "$ns" >/dev/null 2>&1; then          # host side of the veth pair, named like the netns
    ip -n "$ns" link del eth0 >/dev/null 2>&1 || true
    ip link add "$ns" type veth peer name eth0 netns "$ns"
  fi
  ip link set "$ns" master "$BR" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr replace "$ip/24" dev eth0
  ip -n "$ns" link set eth0 up
  # a default route makes "which IP do I have" probes (Ray: UDP connect to 8.8.8.8) pick eth0;
  # the host does not forward, so nothing leaves the machine
  ip -n "$ns" route replace default via "$HOST_IP"
done

# ------------------------------------------------------------------ per-node files
{
  echo "127.0.0.1 localhost"
  echo "::1 localhost ip6-localhost ip6-loopback"
  echo "$HOST_IP $CTL_HOST $TAG-ctl"
  for i in "${!node_names[@]}"; do echo "$NET.$((i + 2)) ${node_names[$i]}"; done
} >"$ETC/hosts"
# no DNS inside the nodes: unknown names fail at once instead of after the resolver's 2 x 5 s timeout
printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"$ETC/resolv.conf"
mkdir -p /tmp/ray                                         # mount point for each node's private /tmp/ray
for n in "${node_names[@]}"; do
  mkdir -p "$DIR/nodes/$n/ray" "$DIR/spool/$n"; chmod 1777 "$DIR/nodes/$n/ray"   # slurmd does not create its spool dir
done

# written to a new file and renamed: running node inits keep reading their own copy
cat >"$DIR/node-init.sh.tmp" <<'EOF'
#!/bin/bash
# PID 1 of one node (written by start-multinode.sh). Runs inside the node's own network, UTS, PID
# and mount namespaces. SIGTERM: stop slurmd and exit (the kernel then kills every process left
# in the node). SIGUSR1: start slurmd again if it is not running. Reaps every orphan it adopts.
node=$1 dir=$2
hostname "$node"
mount --bind "$dir/etc/hosts" /etc/hosts
mount --bind "$dir/etc/resolv.conf" /etc/resolv.conf
mount --bind "$dir/nodes/$node/ray" /tmp/ray
export SLURM_CONF=$dir/etc/slurm.conf
slurmd_pid=
start_slurmd() {
  if [ -n "$slurmd_pid" ] && kill -0 "$slurmd_pid" 2>/dev/null; then return; fi
  slurmd -D -N "$node" </dev/null >>"$dir/log/slurmd-$node.out" 2>&1 &
  slurmd_pid=$!
  echo "$slurmd_pid" >"$dir/nodes/$node/slurmd.nspid"
}
stop() {
  if [ -n "$slurmd_pid" ] && kill -TERM "$slurmd_pid" 2>/dev/null; then
    for _ in $(seq 100); do kill -0 "$slurmd_pid" 2>/dev/null || break; sleep 0.1; done
  fi
  exit 0
}
trap stop TERM INT
trap start_slurmd USR1
start_slurmd
while :; do sleep 3600 & s=$!; wait "$s"; kill "$s" 2>/dev/null; done
EOF

cat >"$DIR/on-node" <<EOF
#!/bin/bash
# on-node NODE CMD...: run CMD inside NODE (its network, UTS, PID and mount namespaces). Written by start-multinode.sh.
[ \$# -ge 2 ] || { echo "usage: \$0 NODE CMD..." >&2; exit 2; }
p=\$(cat "$RUN/node-\$1.pid" 2>/dev/null) && [ "\$(cat /proc/\$p/comm 2>/dev/null)" = bash ] || { echo "node \$1 is not running" >&2; exit 1; }
shift
exec nsenter -t "\$p" -n -u -p -m -- env SLURM_CONF="$SLURM_CONF" "\$@"
EOF
chmod +x "$DIR/on-node" "$DIR/node-init.sh.tmp"; mv "$DIR/node-init.sh.tmp" "$DIR/node-init.sh"

# ------------------------------------------------------------------ slurm.conf
hw=$(slurmd -C | head -n 1)
cpus=${PCBENCH_MN_CPUS:-$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$hw")}
total_mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$hw")
mem=${PCBENCH_MN_MEM:-$((total_mem / NODES))}
if [ -z "${PCBENCH_MN_CPUS:-}" ]; then
  layout=$(sed -e 's/^NodeName=[^ ]* //' -e 's/ RealMemory=[0-9]*//' -e 's/ UpTime=.*//' <<<"$hw")
else
  layout="CPUs=$cpus"
fi
accounting=$(slurm_accounting_conf "$ACCOUNTING")
{
cat <<EOF
# Written by start-multinode.sh; regenerated on every start.
ClusterName=$CLUSTER
# slurmctld runs in the host namespaces; the nodes reach it on the bridge address
SlurmctldHost=$CTL_HOST($HOST_IP)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$PORT
# every slurmd listens on this port inside its own network namespace
SlurmdPort=$((PORT + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET,cred_expire=10
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$RUN/slurmctld.pid
# pid as seen inside the node's PID namespace; the host pid is in $RUN/slurmd-<node>.pid
SlurmdPidFile=$DIR/nodes/%n/slurmd.pid-in-node
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
# a node whose slurmd does not answer for this long is set DOWN (its jobs end with NODE_FAIL)
SlurmdTimeout=$SLURMD_TIMEOUT
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
$accounting
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SchedulerParameters=sched_min_interval=100000,batch_sched_delay=0,bf_interval=1,sched_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1024
# a node that was DOWN becomes usable again as soon as its slurmd registers
ReturnToService=2
# trust the CPUs/RealMemory written here (the fake nodes share one machine; no DRAIN for "low" counts)
SlurmdParameters=config_overrides
MinJobAge=300
KillWait=5
EOF
for i in "${!node_names[@]}"; do
  echo "NodeName=${node_names[$i]} NodeAddr=$NET.$((i + 2)) $layout RealMemory=$mem State=UNKNOWN"
done
echo "PartitionName=$PARTITION Nodes=$(IFS=,; echo "${node_names[*]}") Default=YES MaxTime=INFINITE State=UP"
} >"$ETC/slurm.conf.tmp"
if cmp -s "$ETC/slurm.conf.tmp" "$ETC/slurm.conf"; then rm -f "$ETC/slurm.conf.tmp"
elif running "$RUN/slurmctld.pid" slurmctld; then
  # node list, accounting or ports changed: slurmctld and every slurmd would need a restart
  rm -f "$ETC/slurm.conf.tmp"; fail "slurm.conf would change while the cluster runs: run stop-multinode.sh first"
else mv "$ETC/slurm.conf.tmp" "$ETC/slurm.conf"; fi
wipe_foreign_state
cat >"$DIR/env.sh" <<EOF
# source me: clients of the multinode test cluster (written by start-multinode.sh)
export SLURM_CONF=$SLURM_CONF
export PCBENCH_MN_DIR=$DIR
export PCBENCH_MN_PARTITION=$PARTITION
export PCBENCH_MN_NODELIST="${node_names[*]}"
export PCBENCH_MN_ACCOUNTING=$ACCOUNTING
export PCBENCH_MN_IPS="$(for i in "${!node_names[@]}"; do printf '%s ' "$NET.$((i + 2))"; done | sed 's/ $//')"
EOF

# ------------------------------------------------------------------ accounting (optional)
if [ "$ACCOUNTING" = 1 ]; then start_accounting "# Written by start-multinode.sh"; fi

# ------------------------------------------------------------------ slurmctld (host namespaces)
daemon slurmctld "$RUN/slurmctld.pid" slurmctld -D
retry "$TIMEOUT" bash -c 'scontrol ping | grep -q "is UP"' || fail "slurmctld does not answer" "$LOG/slurmctld.log" "$LOG/slurmctld.out"

# ------------------------------------------------------------------ the nodes
for n in "${node_names[@]}"; do
  ns=$TAG-$n nodepid=$RUN/node-$n.pid
  if running "$nodepid" bash; then
    if running "$RUN/slurmd-$n.pid" slurmd; then say "node $n already running (init $(<"$nodepid"), slurmd $(<"$RUN/slurmd-$n.pid"))"; continue; fi
    say "node $n: slurmd is not running, starting it again inside the node"
    rm -f "$DIR/nodes/$n/slurmd.nspid"
    kill -USR1 "$(<"$nodepid")"
  else
    rm -f "$nodepid" "$RUN/slurmd-$n.pid" "$DIR/nodes/$n/slurmd.nspid"
    # nsenter --net, not "ip netns exec": that one remounts /sys, which hides /sys/fs/cgroup,
    # and slurmd 22.05 then dies ("Unable to initialize cgroup plugin").
    # unshare ... --fork: its child is PID 1 of the new PID namespace; --kill-child: if unshare
    # dies, that PID 1 (and with it the whole node) is killed. nsenter execs without forking here.
    setsid bash -c 'echo $$ > "$1"; shift; exec "$@"' _ "$RUN/unshare-$n.pid" \
      nsenter --net="/run/netns/$ns" unshare --uts --pid --mount --fork --mount-proc --kill-child \
      bash "$DIR/node-init.sh" "$n" "$DIR" </dev/null >>"$LOG/node-$n.out" 2>&1 &
    retry 5 running "$RUN/unshare-$n.pid" unshare || fail "node $n: unshare did not start" "$LOG/node-$n.out"
    up=$(<"$RUN/unshare-$n.pid")
    retry 5 child_pid "$up" bash || fail "node $n: no init process" "$LOG/node-$n.out"
    child_pid "$up" bash >"$nodepid"
  fi
  retry 10 test -s "$DIR/nodes/$n/slurmd.nspid" || fail "node $n: init did not start slurmd" "$LOG/node-$n.out"
  nspid=$(<"$DIR/nodes/$n/slurmd.nspid")
  retry 5 child_pid "$(<"$nodepid")" slurmd "$nspid" || fail "node $n: slurmd exited at once" "$LOG/slurmd-$n.out" "$LOG/slurmd-$n.log"
  child_pid "$(<"$nodepid")" slurmd "$nspid" >"$RUN/slurmd-$n.pid"
  say "node $n up: netns $ns, init pid $(<"$nodepid"), slurmd pid $(<"$RUN/slurmd-$n.pid")"
done

# bounded wait for every node to be usable; a node left DOWN by an earlier run is resumed
end=$(( $(date +%s) + TIMEOUT ))
while :; do
  states=$(sinfo -h -N -p "$PARTITION" -o '%N %t' 2>/dev/null || true)
  notready=$(awk '$2 !~ /^(idle|mix|alloc|comp)$/ {print $1}' <<<"$states")
  [ -n "$states" ] && [ -z "$notready" ] && break
  for n in $(awk '$2 ~ /^(down|drain|drng|fail)/ {print $1}' <<<"$states"); do
    scontrol update NodeName="$n" State=RESUME >/dev/null 2>&1 || true
  done
  [ "$(date +%s)" -lt "$end" ] || { sinfo >&2 || true; fail "nodes not ready after ${TIMEOUT}s: $notready" "$LOG/slurmctld.log"; }
  sleep 0.2
done

ms=$(( ($(date +%s%N) - t0) / 1000000 ))
acct=none; [ "$ACCOUNTING" = 1 ] && acct=slurmdbd
printf 'slurm multinode cluster up: cluster=%s partition=%s nodes=%s (%s) cpus/node=%s mem/node=%sMB accounting=%s in %d.%03ds; source %s/env.sh\n' \
  "$CLUSTER" "$PARTITION" "$(IFS=,; echo "${node_names[*]}")" "$(for i in "${!node_names[@]}"; do printf '%s ' "$NET.$((i + 2))"; done | sed 's/ $//')" \
  "$cpus" "$mem" "$acct" $((ms / 1000)) $((ms % 1000)) "$DIR"
