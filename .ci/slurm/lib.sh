# Shared settings and helpers of start.sh and stop.sh (sourced, never executed).
# shellcheck shell=bash disable=SC2034  # the settings are used by the scripts that source this file

# Everything the cluster keeps between runs: slurmctld state, slurmd spool, logs, fake GPU device nodes.
STATE_DIR=${HARNESS_SLURM_DIR:-/var/lib/harness-slurm}
# Debian's slurm reads its configuration here.
CONF_DIR=/etc/slurm
# Exists while a mariadbd that start.sh started is running (stop.sh leaves a MariaDB it did not start alone).
MARIADB_MARKER=/run/harness-slurm-mariadb
MARIADB_PIDFILE=/run/mysqld/mysqld.pid
MUNGED_PIDFILE=/run/munge/munged.pid

log() { printf 'harness-slurm: %s\n' "$*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}

require_root() {
  [[ $(id -u) == 0 ]] || die "must run as root (it installs packages and starts daemons): sudo $0"
}

# pid_of PIDFILE NAME: print the pid recorded in PIDFILE when it is a live (non-zombie) process named NAME.
pid_of() {
  local pidfile=$1 name=$2 pid stat
  [[ -r $pidfile ]] || return 1
  pid=$(<"$pidfile")
  [[ $pid =~ ^[0-9]+$ && -r /proc/$pid/stat ]] || return 1
  [[ $(</proc/"$pid"/comm) == "$name" ]] || return 1
  stat=$(</proc/"$pid"/stat)
  [[ ${stat##*) } != Z* ]] || return 1
  echo "$pid"
}

# stop_daemon PIDFILE NAME: SIGTERM the daemon, wait up to 20 s, SIGKILL it if still there; remove PIDFILE.
stop_daemon() {
  local pidfile=$1 name=$2 pid i
  if pid=$(pid_of "$pidfile" "$name"); then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 200; i++)); do
      pid_of "$pidfile" "$name" >/dev/null || break
      sleep 0.1
    done
    if pid_of "$pidfile" "$name" >/dev/null; then
      log "$name (pid $pid) ignored SIGTERM for 20 s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    log "stopped $name (pid $pid)"
  fi
  rm -f "$pidfile"
}
