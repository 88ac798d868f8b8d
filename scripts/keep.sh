#!/usr/bin/env bash
# keep.sh NAME PIDFILE COMMAND [ARG...]: the process manager of make serve and make run. It runs COMMAND and
# starts it again 2 s after it ends, whatever the reason (a crash, the OOM killer, a task worker that lost
# the database and exited to be started afresh), until it gets SIGTERM or SIGINT: it then passes SIGTERM
# to COMMAND, waits for it and ends. PIDFILE holds COMMAND's pid while it runs. In production systemd does
# this job instead (deploy/systemd/).
set -uo pipefail
name=$1 pidfile=$2
shift 2
child=""
stop() {
  trap - TERM INT
  if [ -n "$child" ]; then
    kill -TERM "$child" 2>/dev/null
    wait "$child" 2>/dev/null
  fi
  rm -f "$pidfile"
  exit 0
}
trap stop TERM INT
while :; do
  "$@" &
  child=$!
  echo "$child" >"$pidfile"
  wait "$child"
  status=$?
  child=""
  echo "keep.sh: $name ended with status $status; starting it again in 2 s" >&2
  sleep 2 &
  wait $!  # in the background, so that a signal is handled at once, not after the pause
done
