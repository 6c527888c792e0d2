#!/usr/bin/env bash
# pcbench: stop the test cluster started by tests/slurm/start.sh.
# Only the processes named in start.sh's pid files are signalled (never by process name).
# Jobs still on the cluster are cancelled first so that no slurmstepd outlives slurmd.
#   PCBENCH_SLURM_DIR   state dir (default /tmp/pcbench-slurm)
#   PCBENCH_SLURM_PURGE 1: also delete the state dir afterwards (job state, logs, database)
set -uo pipefail

DIR=${PCBENCH_SLURM_DIR:-/tmp/pcbench-slurm}
# say, alive (PID is a live process called NAME), state_layout: shared with start.sh
SAY_PREFIX="[pcbench-slurm]"
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
state_layout                  # RUN, MUNGE: where start.sh wrote its pid files; exports SLURM_CONF

# stop PIDFILE NAME: SIGTERM the pid in PIDFILE if it is a live NAME, wait up to 30 s, then SIGKILL
stop() {
  local pidfile=$1 name=$2 pid t0
  if [ ! -s "$pidfile" ]; then say "$name: not started by start.sh (no pid file)"; return 0; fi
  pid=$(<"$pidfile")
  if ! alive "$pid" "$name"; then say "$name: pid $pid is gone, removing stale pid file"; rm -f "$pidfile"; return 0; fi
  t0=$(date +%s%N)
  kill -TERM "$pid"
  for _ in $(seq 150); do alive "$pid" "$name" || break; sleep 0.2; done
  if alive "$pid" "$name"; then say "$name: pid $pid ignored SIGTERM for 30 s, sending SIGKILL"; kill -KILL "$pid"; sleep 0.2; fi
  rm -f "$pidfile"
  say "$name stopped (pid $pid, $(( ($(date +%s%N) - t0) / 1000000 )) ms)"
}

if [ -s "$RUN/slurmctld.pid" ] && alive "$(<"$RUN/slurmctld.pid")" slurmctld && command -v squeue >/dev/null; then
  jobs=$(squeue -h -o %i 2>/dev/null | tr '\n' ' ')
  if [ -n "${jobs// /}" ]; then
    say "cancelling jobs: $jobs"
    scancel --full $jobs 2>/dev/null || true
    for _ in $(seq 60); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.25; done
  fi
fi
stop "$RUN/slurmd.pid" slurmd
stop "$RUN/slurmctld.pid" slurmctld
stop "$RUN/slurmdbd.pid" slurmdbd
stop "$RUN/mariadbd.pid" mariadbd
stop "$MUNGE/run/munged.pid" munged
if [ "${PCBENCH_SLURM_PURGE:-0}" = 1 ]; then rm -rf "${DIR:?}"; say "removed $DIR"; fi
exit 0
