# pcbench: shell functions shared by the test-cluster scripts in tests/slurm/ (start.sh,
# start-multinode.sh, stop.sh, stop-multinode.sh). Sourced, never run:
#   . "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# Only function definitions: sourcing it changes no variable and runs nothing, so each script
# keeps its own `set` options, defaults and environment variable names.
#
# The functions read these variables of the calling script, at call time:
#   SAY_PREFIX  prefix of every message, e.g. "[pcbench-slurm]" (single node) or "[pcbench-mn]"
#   DIR         the cluster's state dir; state_layout sets RUN LOG ETC MUNGE SOCKET from it
#   PORT DB_PORT TIMEOUT CLUSTER slurmctld port base, mariadb port, wait limit, ClusterName

# state_layout: where everything lives under $DIR, the same for both clusters. The stop scripts
# call it too: they find the daemons only through the pid files under these paths.
state_layout() {
  ETC=$DIR/etc RUN=$DIR/run LOG=$DIR/log
  MUNGE=$DIR/munge
  SOCKET=$MUNGE/run/munge.socket
  export SLURM_CONF=$ETC/slurm.conf
}

say() { echo "$SAY_PREFIX $*"; }
fail() {  # fail MESSAGE [LOGFILE...]: print the message and the tail of each log, exit 1
  local msg=$1; shift
  echo "$SAY_PREFIX ERROR: $msg" >&2
  for f in "$@"; do [ -f "$f" ] && { echo "----- last lines of $f" >&2; tail -n 25 "$f" >&2; }; done
  exit 1
}
# alive PID NAME: PID is a live (non-zombie) process whose command name is NAME.
# The name check keeps a recycled pid from being taken for (or signalled as) our daemon.
alive() { [ -n "${1:-}" ] && [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
# running PIDFILE NAME: the pid recorded in PIDFILE is alive and called NAME
running() { [ -s "$1" ] && alive "$(<"$1")" "$2"; }
# retry SECONDS CMD...: run CMD every 0.2 s until it succeeds or SECONDS pass
retry() {
  local end=$(( $(date +%s) + $1 )); shift
  until "$@" >/dev/null 2>&1; do [ "$(date +%s)" -lt "$end" ] || return 1; sleep 0.2; done
}
# daemon NAME PIDFILE CMD...: start CMD (which must stay in the foreground) in a new session,
# unless the pid file already names a live NAME; the pid file holds the daemon's own pid.
daemon() {
  local name=$1 pidfile=$2; shift 2
  if running "$pidfile" "$name"; then say "$name already running (pid $(<"$pidfile"))"; return 0; fi
  rm -f "$pidfile"
  setsid bash -c 'echo $$ > "$1"; shift; exec "$@"' _ "$pidfile" "$@" \
    </dev/null >>"$LOG/$name.out" 2>&1 &
  retry 5 running "$pidfile" "$name" && sleep 0.2 && running "$pidfile" "$name" \
    || fail "$name exited right after start" "$LOG/$name.out" "$LOG/$name.log"
  say "$name started (pid $(<"$pidfile"))"
}

# start_munged: a munged of this cluster's own (key and socket under $MUNGE, never /etc/munge),
# unless it is running already; then check a munge/unmunge round trip on $SOCKET.
start_munged() {
  local owner key margs
  if running "$MUNGE/run/munged.pid" munged; then
    say "munged already running (pid $(<"$MUNGE/run/munged.pid"))"
  else
    # The Debian package may not have created a munge user in a container; fall back to root (--force).
    owner=root; id munge >/dev/null 2>&1 && owner=munge
    mkdir -p "$MUNGE/etc" "$MUNGE/run" "$MUNGE/log" "$MUNGE/lib"
    chown -R "$owner:" "$MUNGE"
    chmod 0755 "$MUNGE" "$MUNGE/run"                     # clients must reach the socket
    chmod 0700 "$MUNGE/etc" "$MUNGE/log" "$MUNGE/lib"
    key=$MUNGE/etc/munge.key
    [ -s "$key" ] || head -c 1024 /dev/urandom >"$key"   # private key, never /etc/munge
    chown "$owner:" "$key"; chmod 0400 "$key"
    rm -f "$SOCKET" "$SOCKET.lock"
    margs=(--socket="$SOCKET" --key-file="$key" --pid-file="$MUNGE/run/munged.pid"
           --log-file="$MUNGE/log/munged.log" --seed-file="$MUNGE/lib/munged.seed")
    # munged daemonizes itself and writes its own pid file
    if [ "$owner" = munge ]; then runuser -u munge -- munged "${margs[@]}"; else munged --force "${margs[@]}"; fi \
      || fail "munged failed to start" "$MUNGE/log/munged.log"
    retry 5 running "$MUNGE/run/munged.pid" munged || fail "munged did not write its pid file" "$MUNGE/log/munged.log"
    say "munged started (pid $(<"$MUNGE/run/munged.pid"))"
  fi
  munge -S "$SOCKET" -n </dev/null | unmunge -S "$SOCKET" >/dev/null || fail "munge round trip failed" "$MUNGE/log/munged.log"
}

# slurm_accounting_conf 0|1: the accounting lines of slurm.conf (slurmdbd on port PORT+2, or none)
slurm_accounting_conf() {
  if [ "$1" = 1 ]; then
    cat <<EOF
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$((PORT + 2))
# names the munge socket for the slurmctld -> slurmdbd connection
AccountingStoragePass=$SOCKET
EOF
  else
    echo "AccountingStorageType=accounting_storage/none"
  fi
}

# wipe_foreign_state: slurmctld refuses a StateSaveLocation written for another ClusterName, so
# such state is dropped (only while this cluster's slurmctld is down)
wipe_foreign_state() {
  if [ -s "$DIR/state/clustername" ] && [ "$(<"$DIR/state/clustername")" != "$CLUSTER" ]; then
    running "$RUN/slurmctld.pid" slurmctld || { say "state belongs to cluster '$(<"$DIR/state/clustername")', wiping it"; rm -rf "${DIR:?}/state"/*; }
  fi
}

# start_accounting HEADER: mariadbd (database under $DIR/mysql, port DB_PORT, local socket) and
# slurmdbd (port PORT+2), and this cluster registered in it. HEADER is the first line written
# into slurmdbd.conf (it names the script that wrote it).
start_accounting() {
  local header=$1 db=$DIR/mysql
  if [ ! -d "$db/data/mysql" ]; then
    mkdir -p "$db"
    mariadb-install-db --user=root --datadir="$db/data" --auth-root-authentication-method=socket \
      --skip-test-db >"$LOG/mariadb-install-db.log" 2>&1 || fail "mariadb-install-db failed" "$LOG/mariadb-install-db.log"
  fi
  daemon mariadbd "$RUN/mariadbd.pid" mariadbd --no-defaults --user=root --datadir="$db/data" \
    --socket="$db/mysqld.sock" --pid-file="$db/mariadbd.pid" --bind-address=127.0.0.1 --port="$DB_PORT" \
    --log-error="$LOG/mariadbd.log" --innodb-buffer-pool-size=64M --skip-name-resolve
  retry "$TIMEOUT" mariadb -S "$db/mysqld.sock" -e 'SELECT 1' || fail "mariadbd does not answer" "$LOG/mariadbd.log"
  mariadb -S "$db/mysqld.sock" -e "
    CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
  cat >"$ETC/slurmdbd.conf" <<EOF
$header
DbdHost=localhost
DbdPort=$((PORT + 2))
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$SOCKET
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
PidFile=$RUN/slurmdbd.pid
LogFile=$LOG/slurmdbd.log
DebugLevel=info
EOF
  chmod 0600 "$ETC/slurmdbd.conf"                       # slurmdbd refuses a readable config
  daemon slurmdbd "$RUN/slurmdbd.pid" slurmdbd -D       # reads slurmdbd.conf next to $SLURM_CONF
  retry "$TIMEOUT" sacctmgr -n list cluster || fail "slurmdbd does not answer" "$LOG/slurmdbd.log" "$LOG/slurmdbd.out"
  sacctmgr -n -P list cluster format=cluster | grep -qx "$CLUSTER" || sacctmgr -i add cluster "$CLUSTER" >/dev/null
}
