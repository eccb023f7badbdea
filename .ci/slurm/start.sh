#!/usr/bin/env bash
# Start the harness one-node SLURM test cluster on Debian 12 (Slurm 22.05), as root:
#   munged, MariaDB + slurmdbd (accounting, so sacct and submitit see job states), slurmctld, slurmd,
#   one node with all CPUs, two fake A100 GPUs (gres), partitions `debug` (default) and `a100`.
# Idempotent: installs only missing packages, starts only daemons that are not running, and restarts a
# daemon whose configuration changed. Configuration comes from the *.in templates beside this script.
# Environment (all optional):
#   HARNESS_SLURM_DIR             state, logs and fake GPU devices (default /var/lib/harness-slurm)
#   HARNESS_SLURM_MAX_ARRAY_SIZE  MaxArraySize (default 1001, Slurm's default)
#   HARNESS_SLURM_MAX_JOB_COUNT   MaxJobCount (default 10000, Slurm's default)
#   HARNESS_SLURM_KILL_WAIT       seconds between SIGTERM and SIGKILL (default 5; Slurm's default is 30)
# Stop with .ci/slurm/stop.sh.
set -euo pipefail
HERE=$(dirname "$(readlink -f "$0")")
# shellcheck source=lib.sh
source "$HERE/lib.sh"

PACKAGES=(munge slurm-client slurmctld slurmd slurmdbd mariadb-server)
# The database user of slurmdbd; MariaDB listens on localhost only (a throwaway test cluster).
DB_PASS=harness-slurm-local
MAX_ARRAY_SIZE=${HARNESS_SLURM_MAX_ARRAY_SIZE:-1001}
MAX_JOB_COUNT=${HARNESS_SLURM_MAX_JOB_COUNT:-10000}
KILL_WAIT=${HARNESS_SLURM_KILL_WAIT:-5}
LOG_DIR=$STATE_DIR/log
T0_NS=$(date +%s%N)
# Configuration files that render wrote this time (their daemons restart).
CHANGED=()

# wait_for SECONDS WHAT CMD...: poll CMD every 0.2 s until it succeeds; after SECONDS, or at once when
# CMD reports a fatal error (a configuration it cannot parse), print its last output and return 1.
wait_for() {
  local seconds=$1 what=$2 i out
  shift 2
  for ((i = 0; i < seconds * 5; i++)); do
    out=$("$@" 2>&1) && return 0
    [[ $out == *"fatal:"* ]] && break
    sleep 0.2
  done
  log "gave up waiting for: $what; last output of '$*':"
  printf '%s\n' "$out" | tail -n 5 >&2
  return 1
}

show_log() {
  log "last lines of $1:"
  tail -n 40 "$1" >&2 2>/dev/null || log "(no log file $1)"
}

install_packages() {
  local missing=() pkg
  for pkg in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -qx 'install ok installed' || missing+=("$pkg")
  done
  ((${#missing[@]})) || return 0
  log "installing ${missing[*]} (log: $LOG_DIR/apt.log)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update >"$LOG_DIR/apt.log" 2>&1 || { show_log "$LOG_DIR/apt.log"; die "apt-get update failed"; }
  apt-get install -y --no-install-recommends "${missing[@]}" >>"$LOG_DIR/apt.log" 2>&1 ||
    { show_log "$LOG_DIR/apt.log"; die "apt-get install ${missing[*]} failed"; }
}

make_dirs() {
  install -d -m 0755 "$STATE_DIR" "$LOG_DIR" "$STATE_DIR/dev" "$STATE_DIR/slurmd" "$CONF_DIR"
  id slurm >/dev/null 2>&1 || die "user slurm is missing although the slurm packages are installed"
  chown slurm:slurm "$LOG_DIR"
  install -d -m 0755 -o slurm -g slurm "$STATE_DIR/slurmctld"
}

# Two character devices with the NVIDIA major number: gres/gpu needs real device files, not regular files.
make_fake_gpus() {
  local i dev
  for i in 0 1; do
    dev=$STATE_DIR/dev/nvidia$i
    [[ -c $dev ]] && continue
    rm -f "$dev"
    mknod -m 0666 "$dev" c 195 "$i" || die "mknod $dev failed (fake GPUs need character device nodes)"
  done
}

read_node_facts() {
  NODE=$(hostname -s)
  CPUS=$(nproc)
  REAL_MEMORY=$(slurmd -C 2>/dev/null | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
  [[ $REAL_MEMORY =~ ^[0-9]+$ ]] ||
    die "cannot read RealMemory from 'slurmd -C': $(slurmd -C 2>&1 | head -n 3)"
  # The whole memory split evenly over the CPUs: memory never limits how many jobs run, only CPUs do.
  DEF_MEM_PER_CPU=$((REAL_MEMORY / CPUS))
}

# render NAME MODE OWNER: write $CONF_DIR/NAME from $HERE/NAME.in; add NAME to CHANGED when it changed.
render() {
  local name=$1 mode=$2 owner=$3 tmp
  tmp=$(mktemp)
  sed -e "s|@NODE@|$NODE|g" -e "s|@CPUS@|$CPUS|g" -e "s|@REAL_MEMORY@|$REAL_MEMORY|g" \
    -e "s|@DEF_MEM_PER_CPU@|$DEF_MEM_PER_CPU|g" -e "s|@STATE_DIR@|$STATE_DIR|g" \
    -e "s|@MAX_ARRAY_SIZE@|$MAX_ARRAY_SIZE|g" -e "s|@MAX_JOB_COUNT@|$MAX_JOB_COUNT|g" \
    -e "s|@KILL_WAIT@|$KILL_WAIT|g" -e "s|@DB_PASS@|$DB_PASS|g" "$HERE/$name.in" >"$tmp"
  if ! cmp -s "$tmp" "$CONF_DIR/$name"; then
    install -m "$mode" -o "$owner" -g "$owner" "$tmp" "$CONF_DIR/$name"
    CHANGED+=("$name")
    log "wrote $CONF_DIR/$name"
  fi
  rm -f "$tmp"
}

start_munge() {
  pid_of "$MUNGED_PIDFILE" munged >/dev/null && return 0
  install -d -m 0755 -o munge -g munge /run/munge
  install -d -m 0700 -o munge -g munge /var/log/munge /var/lib/munge
  [[ -s /etc/munge/munge.key ]] || runuser -u munge -- mungekey --create --keyfile=/etc/munge/munge.key
  runuser -u munge -- /usr/sbin/munged ||
    { show_log /var/log/munge/munged.log; die "munged failed to start"; }
  wait_for 10 "munge credentials" sh -c 'munge -n | unmunge' ||
    { show_log /var/log/munge/munged.log; die "munged does not answer"; }
  log "started munged"
}

# Uses a MariaDB that already answers on the default socket; otherwise starts Debian's own.
start_mariadb() {
  if ! mariadb-admin --silent ping >/dev/null 2>&1; then
    install -d -m 0755 -o mysql -g mysql /run/mysqld
    setsid /usr/sbin/mariadbd --user=mysql --pid-file="$MARIADB_PIDFILE" \
      </dev/null >>"$LOG_DIR/mariadbd.log" 2>&1 &
    touch "$MARIADB_MARKER"
    wait_for 60 "mariadbd" mariadb-admin --silent ping ||
      { show_log "$LOG_DIR/mariadbd.log"; die "mariadbd did not start"; }
    log "started mariadbd"
  fi
  mariadb -u root <<SQL || die "cannot create the slurm database user (MariaDB root by socket?)"
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
ALTER USER 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
GRANT ALL PRIVILEGES ON slurm_acct_db.* TO 'slurm'@'localhost';
SQL
}

# ensure_daemon NAME LOGFILE CHANGED: (re)start a self-daemonizing slurm daemon; CHANGED=1 forces a restart.
# The daemons fork before reading most of their configuration, so a bad config shows as a dead process.
ensure_daemon() {
  local name=$1 logfile=$2 changed=$3 pidfile=/run/$1.pid
  if pid_of "$pidfile" "$name" >/dev/null; then
    ((changed)) || return 0
    stop_daemon "$pidfile" "$name"
  fi
  rm -f "$pidfile"
  "/usr/sbin/$name" || { show_log "$logfile"; die "$name failed to start"; }
  wait_for 10 "$name pid file" pid_of "$pidfile" "$name" || true
  sleep 0.5
  pid_of "$pidfile" "$name" >/dev/null || { show_log "$logfile"; die "$name died right after start"; }
  log "started $name"
}

# The node appears once per partition; every line must show a state that accepts jobs.
node_ready() {
  [[ $(sinfo -h -N -n "$NODE" -o %T | sort -u) =~ ^(idle|mixed|allocated|completing)$ ]]
}

wait_until_ready() {
  wait_for 60 "slurmctld registered in slurmdbd" \
    sh -c 'sacctmgr -n -P list cluster format=cluster | grep -qx harness' ||
    { show_log "$LOG_DIR/slurmctld.log"; die "cluster 'harness' never appeared in slurmdbd"; }
  if ! wait_for 30 "node $NODE idle" node_ready; then
    scontrol show node "$NODE" >&2 || true
    show_log "$LOG_DIR/slurmd.log"
    die "node $NODE is not usable: $(sinfo -h -N -n "$NODE" -o '%P %T %E' | tr '\n' ' ')"
  fi
  wait_for 30 "sacct" sacct -n -X -S now-1minutes -o JobID || die "sacct does not answer"
}

print_summary() {
  local ms=$((($(date +%s%N) - T0_NS) / 1000000))
  printf 'harness-slurm: up after %d.%d s: cluster harness, node %s (%s CPUs, %s MB,' \
    $((ms / 1000)) $((ms % 1000 / 100)) "$NODE" "$CPUS" "$REAL_MEMORY"
  printf ' gpu:a100:2, feature a100),' 
  printf ' partitions debug (default) and a100, state in %s\n' "$STATE_DIR"
  scontrol show config | grep -E 'MaxArraySize|MaxJobCount'
}

check_settings() {
  local name value
  for name in HARNESS_SLURM_MAX_ARRAY_SIZE HARNESS_SLURM_MAX_JOB_COUNT HARNESS_SLURM_KILL_WAIT; do
    value=${!name:-}
    [[ -z $value || $value =~ ^[1-9][0-9]*$ ]] || die "$name=$value is not a positive whole number"
  done
}

main() {
  require_root
  check_settings
  install -d -m 0755 "$STATE_DIR" "$LOG_DIR"
  install_packages
  make_dirs
  make_fake_gpus
  read_node_facts
  render slurmdbd.conf 600 slurm
  render slurm.conf 644 root
  render gres.conf 644 root
  local dbd_changed=0 ctld_changed=0
  [[ " ${CHANGED[*]} " == *" slurmdbd.conf "* ]] && dbd_changed=1
  [[ " ${CHANGED[*]} " == *" slurm.conf "* || " ${CHANGED[*]} " == *" gres.conf "* ]] && ctld_changed=1
  start_munge
  start_mariadb
  ensure_daemon slurmdbd "$LOG_DIR/slurmdbd.log" "$dbd_changed"
  if ! wait_for 60 "slurmdbd answers" sacctmgr -n list cluster; then
    show_log "$LOG_DIR/slurmdbd.log"
    die "slurmdbd does not answer (or the clients cannot read $CONF_DIR/slurm.conf: see above)"
  fi
  ensure_daemon slurmctld "$LOG_DIR/slurmctld.log" "$ctld_changed"
  ensure_daemon slurmd "$LOG_DIR/slurmd.log" "$ctld_changed"
  wait_until_ready
  print_summary
}

main "$@"
