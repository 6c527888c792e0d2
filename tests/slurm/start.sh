#!/usr/bin/env bash
# pcbench: bring up a private single-node Slurm 22.05 cluster for the tests in tests/slurm/.
#
#   sudo tests/slurm/start.sh            # idempotent; prints "slurm cluster up: ..." when ready
#   source /tmp/pcbench-slurm/env.sh     # exports SLURM_CONF (and PCBENCH_SLURM_DIR) for clients
#   tests/slurm/stop.sh                  # stops exactly what this script started (pid files)
#
# Daemons: munged, slurmctld, slurmd and, for accounting (default on; submitit needs a working
# `sacct` to notice a job that died without writing its result pickle), mariadbd + slurmdbd.
# No systemd: each daemon runs in its own session, tracked by a pid file under $DIR/run.
# Everything (config, state, spool, logs, database) lives under $DIR.
#
# Environment:
#   PCBENCH_SLURM_DIR         state dir (default /tmp/pcbench-slurm)
#   PCBENCH_SLURM_ACCOUNTING  1 (default): also run mariadbd + slurmdbd; 0: no sacct
#   PCBENCH_SLURM_INSTALL     1 (default): apt-get install missing packages; 0: fail instead
#   PCBENCH_SLURM_CLEAN       1: forget old jobs, node state and the accounting database before starting (only if slurmctld is down)
#   PCBENCH_SLURM_TIMEOUT     seconds to wait for each daemon / the node (default 60)
#   PCBENCH_SLURM_PORT_BASE   slurmctld port; slurmd, slurmdbd use +1, +2 (default 6817)
#   PCBENCH_SLURM_DB_PORT     mariadb port (default 3306)
# Tested on Debian 12 (Slurm 22.05.8, MariaDB 10.11, munge 0.5.15) as root.
set -euo pipefail

DIR=${PCBENCH_SLURM_DIR:-/tmp/pcbench-slurm}
ACCOUNTING=${PCBENCH_SLURM_ACCOUNTING:-1}
INSTALL=${PCBENCH_SLURM_INSTALL:-1}
TIMEOUT=${PCBENCH_SLURM_TIMEOUT:-60}
PORT=${PCBENCH_SLURM_PORT_BASE:-6817}
DB_PORT=${PCBENCH_SLURM_DB_PORT:-3306}
CLUSTER=pcbench
PARTITION=debug
NODE=$(hostname -s)

# say, fail, running, retry, daemon, start_munged, start_accounting, ...: shared with start-multinode.sh
SAY_PREFIX="[pcbench-slurm]"
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
state_layout                                   # ETC RUN LOG MUNGE SOCKET under $DIR; exports SLURM_CONF
started_ns=$(date +%s%N)

[ "$(id -u)" = 0 ] || fail "must run as root (the daemons run as root on this private cluster)"

# ------------------------------------------------------------------ packages
pkgs="slurmctld slurmd slurm-client munge"
bins="slurmctld slurmd sinfo scontrol sbatch munged munge unmunge"
if [ "$ACCOUNTING" = 1 ]; then pkgs="$pkgs slurmdbd mariadb-server"; bins="$bins slurmdbd sacct sacctmgr mariadbd mariadb mariadb-install-db"; fi
missing=""
for b in $bins; do command -v "$b" >/dev/null || missing="$missing $b"; done
if [ -n "$missing" ]; then
  [ "$INSTALL" = 1 ] || fail "missing:$missing (apt-get install -y --no-install-recommends $pkgs)"
  say "installing $pkgs (missing:$missing)"
  t=$(date +%s)
  # apt-get update only if the package lists have never been fetched
  apt_log=/tmp/pcbench-slurm-apt.log
  ls /var/lib/apt/lists/*_Packages >/dev/null 2>&1 || apt-get update -q >"$apt_log" 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $pkgs >>"$apt_log" 2>&1 \
    || fail "apt-get install failed" "$apt_log"
  say "packages installed in $(( $(date +%s) - t )) s"
fi

mkdir -p "$ETC" "$RUN" "$LOG" "$DIR/spool"
if [ "${PCBENCH_SLURM_CLEAN:-0}" = 1 ] && ! running "$RUN/slurmctld.pid" slurmctld; then
  say "PCBENCH_SLURM_CLEAN=1: dropping old job and node state"
  rm -rf "$DIR/state" "$DIR/spool"; mkdir -p "$DIR/spool"
  # job ids restart at 1: the accounting database goes too, else sacct answers for a new job with an
  # old job's record of the same id
  running "$RUN/mariadbd.pid" mariadbd && fail "PCBENCH_SLURM_CLEAN=1 with mariadbd still running: run tests/slurm/stop.sh first"
  rm -rf "$DIR/mysql"
fi
mkdir -p "$DIR/state"

# ------------------------------------------------------------------ munge
start_munged

# ------------------------------------------------------------------ slurm.conf
# slurmd -C prints this host's layout, e.g. "CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105"
hw=$(slurmd -C | head -n 1 | sed 's/^NodeName=[^ ]* //')
cpus=$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$hw")
mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$hw")
accounting=$(slurm_accounting_conf "$ACCOUNTING")
cat >"$ETC/slurm.conf.tmp" <<EOF
# Written by pcbench tests/slurm/start.sh; regenerated on every start.
ClusterName=$CLUSTER
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
AuthType=auth/munge
CredType=cred/munge
# cred_expire (default 120 s) is also how long a requeued job must wait before it starts again
AuthInfo=socket=$SOCKET,cred_expire=10
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
# no cgroups in a container: track processes by /proc, no task binding
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
$accounting
MpiDefault=none
SwitchType=switch/none
# schedule immediately and backfill every second: jobs start in < 1 s, a requeue restarts ~11 s later
SchedulerType=sched/backfill
SchedulerParameters=sched_min_interval=100000,batch_sched_delay=0,bf_interval=1,sched_interval=2
# cores and memory are consumable, as on a real cluster; a job without --mem gets 1 GB per CPU
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1024
ReturnToService=2
MinJobAge=300
KillWait=5
NodeName=$NODE NodeAddr=127.0.0.1 $hw State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
conf_changed=0
if cmp -s "$ETC/slurm.conf.tmp" "$ETC/slurm.conf"; then rm -f "$ETC/slurm.conf.tmp"
else mv "$ETC/slurm.conf.tmp" "$ETC/slurm.conf"; conf_changed=1; fi
wipe_foreign_state
cat >"$DIR/env.sh" <<EOF
# source me: clients of the pcbench test cluster (written by tests/slurm/start.sh)
export SLURM_CONF=$SLURM_CONF
export PCBENCH_SLURM_DIR=$DIR
export PCBENCH_SLURM_PARTITION=$PARTITION
export PCBENCH_SLURM_ACCOUNTING=$ACCOUNTING
EOF

# ------------------------------------------------------------------ mariadbd + slurmdbd
if [ "$ACCOUNTING" = 1 ]; then start_accounting "# Written by pcbench tests/slurm/start.sh"; fi

# ------------------------------------------------------------------ slurmctld + slurmd
if [ "$conf_changed" = 1 ] && running "$RUN/slurmctld.pid" slurmctld; then
  say "slurm.conf changed: scontrol reconfigure"; scontrol reconfigure || true
fi
daemon slurmctld "$RUN/slurmctld.pid" slurmctld -D
retry "$TIMEOUT" bash -c 'scontrol ping | grep -q "is UP"' || fail "slurmctld does not answer" "$LOG/slurmctld.log" "$LOG/slurmctld.out"
daemon slurmd "$RUN/slurmd.pid" slurmd -D -N "$NODE"

# bounded wait for the node to become usable; a node left DOWN by an earlier run is resumed
state=""
end=$(( $(date +%s) + TIMEOUT ))
while :; do
  state=$(sinfo -h -p "$PARTITION" -n "$NODE" -o %t 2>/dev/null || true)
  case "$state" in
    idle|mix|alloc) break ;;
    down*|drain*|drng*|fail*) scontrol update NodeName="$NODE" State=RESUME >/dev/null 2>&1 || true ;;
  esac
  [ "$(date +%s)" -lt "$end" ] || { sinfo >&2 || true; fail "node $NODE not idle after ${TIMEOUT}s (state '${state:-none}')" "$LOG/slurmd.log" "$LOG/slurmctld.log"; }
  sleep 0.2
done

ms=$(( ($(date +%s%N) - started_ns) / 1000000 ))
acct=none; [ "$ACCOUNTING" = 1 ] && acct=slurmdbd
printf 'slurm cluster up: cluster=%s partition=%s node=%s cpus=%s mem=%sMB state=%s accounting=%s in %d.%03ds; source %s/env.sh\n' \
  "$CLUSTER" "$PARTITION" "$NODE" "$cpus" "$mem" "$state" "$acct" $((ms / 1000)) $((ms % 1000)) "$DIR"
