#!/usr/bin/env bash
# Stop the one-node test cluster that start.sh started: slurmd, slurmctld, slurmdbd, mariadbd (only when
# start.sh started it), munged. Removes their pid files (a stale /run/slurmctld.pid breaks `apt-get purge`).
# Running job steps (slurmstepd) are left alone; the state under $HARNESS_SLURM_DIR is kept.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"
require_root

stop_daemon /run/slurmd.pid slurmd
stop_daemon /run/slurmctld.pid slurmctld
stop_daemon /run/slurmdbd.pid slurmdbd
if [[ -e $MARIADB_MARKER ]]; then
  stop_daemon "$MARIADB_PIDFILE" mariadbd
  rm -f "$MARIADB_MARKER"
fi
stop_daemon "$MUNGED_PIDFILE" munged
log "stopped"
