#!/usr/bin/env bash
# make run: the development server on the demo collection, a task worker beside it, and the loopback
# fakes of an OpenAI-compatible server and of MTurk, so a new organiser can try LLM judge jobs and an
# MTurk campaign from the browser alone. A fake starts only where the user has not pointed the site at the real thing: no
# OPENAI_API_KEY, OPENAI_BASE_URL or AZURE_OPENAI_ENDPOINT for the LLM one; no MTURK_ENDPOINT_URL,
# MTURK_LIVE or AWS credentials for the MTurk one. FAKES=0 starts neither. The fakes listen on free
# loopback ports; they and the worker stop with the server (Ctrl-C, SIGTERM, or the server ending by
# itself).
set -euo pipefail
cd "$(dirname "$0")/.."
py=${VENV:-.venv}/bin/python
host=${HOST:-127.0.0.1}
port=${PORT:-8000}
tmp=${TMP:-$PWD/.tmp}
mkdir -p "$tmp"
export DEBUG=1

# The database: the server DATABASE_URL names, or the project's embedded PostgreSQL (assay/embedded_db.py, in
# .data/postgres on EMBEDDED_PG_PORT, default 55433), started here and stopped with the rest if it was not
# already running (manage.py commands start it on demand too).
started_db=0
if [ -z "${DATABASE_URL:-}" ]; then
  if ! "$py" -m assay.embedded_db status >/dev/null; then started_db=1; fi
  DATABASE_URL=$("$py" -m assay.embedded_db start)
  export DATABASE_URL
  database="the embedded PostgreSQL at $DATABASE_URL (data in ${EMBEDDED_PG_DIR:-.data/postgres})"
else
  database="the server DATABASE_URL names"
fi

"$py" manage.py migrate --noinput
"$py" manage.py load_demo

children=()
stop_children() {
  trap - EXIT INT TERM
  if [ ${#children[@]} -gt 0 ]; then
    kill "${children[@]}" 2>/dev/null || true
    wait "${children[@]}" 2>/dev/null || true
  fi
  if [ "$started_db" = 1 ]; then "$py" -m assay.embedded_db stop >/dev/null || true; fi
}
trap stop_children EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Starts `manage.py <command>` on a free port and sets $url to the address it prints.
start_fake() {
  local log="$tmp/run-$1-$port.log"
  # Made before the fake starts: the backgrounded command opens it in its own time, and a read of a log not
  # there yet fails the script (set -e).
  : >"$log"
  "$py" manage.py "$1" --port 0 --stop-with-parent >"$log" 2>&1 &
  last=$!
  children+=("$last")
  url=""
  for _ in $(seq 300); do
    url=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$log")
    [ -n "$url" ] && return 0
    kill -0 "$last" 2>/dev/null || break
    sleep 0.1
  done
  echo "$1 did not start:" >&2
  cat "$log" >&2
  exit 1
}

fakes=()
live=$(echo "${MTURK_LIVE:-}" | tr '[:upper:]' '[:lower:]')
if [ -n "${OPENAI_BASE_URL:-}" ]; then
  llm="$OPENAI_BASE_URL"
elif [ -n "${AZURE_OPENAI_ENDPOINT:-}" ]; then
  llm="Azure OpenAI at $AZURE_OPENAI_ENDPOINT"
elif [ -n "${OPENAI_API_KEY:-}" ]; then
  llm="OpenAI"
else
  llm="no endpoint (LLM jobs are refused until OPENAI_API_KEY or OPENAI_BASE_URL is set)"
fi
if [ -n "${MTURK_ENDPOINT_URL:-}" ]; then
  mturk="$MTURK_ENDPOINT_URL"
elif [[ $live =~ ^(1|true|yes|on)$ ]]; then
  mturk="the live marketplace (real money)"
else
  mturk="the MTurk sandbox"
fi
if [ "${FAKES:-1}" != 0 ]; then
  if [ -z "${OPENAI_API_KEY:-}${OPENAI_BASE_URL:-}${AZURE_OPENAI_ENDPOINT:-}" ]; then
    start_fake llm_fake_server
    export OPENAI_BASE_URL=$url
    fakes+=(llm)
    llm="the local fake at $url (answers that mean nothing; set OPENAI_API_KEY or OPENAI_BASE_URL for a model)"
  fi
  if [ -z "${MTURK_ENDPOINT_URL:-}${AWS_ACCESS_KEY_ID:-}${AWS_PROFILE:-}" ] && [[ ! $live =~ ^(1|true|yes|on)$ ]]; then
    start_fake mturk_fake_server
    export MTURK_ENDPOINT_URL=$url
    fakes+=(mturk)
    mturk="the local fake at $url (no workers, no money)"
  fi
fi
LOCAL_FAKES=$(IFS=,; echo "${fakes[*]:-}")
export LOCAL_FAKES

echo ""
echo "  Assay is at http://$host:$port/"
echo "  Log in as organiser / organiser-demo (organiser), or alice / alice-demo and bob / bob-demo (assessors)."
echo "  Database: $database."
echo "  LLM judges: $llm."
echo "  MTurk campaigns: $mturk."
echo "  Judge jobs and large uploads: one task worker (its log: $tmp/run-task-workers-$port.log)."
echo ""
# The task worker runs judge jobs and large uploads apart from the server, so a restart of the server (a
# file of the checkout changed) does not cut them short; stopped with the rest, it queues its job again.
bash scripts/keep.sh "task worker" "$tmp/run-task-worker-$port.pid" "$py" manage.py task_worker \
  >"$tmp/run-task-workers-$port.log" 2>&1 &
children+=("$!")
# RUNSERVER_ARGS adds options, e.g. --noreload (no restart when a file of the checkout changes).
# shellcheck disable=SC2086
"$py" manage.py runserver ${RUNSERVER_ARGS:-} "$host:$port" &
last=$!
children+=("$last")
# `wait` returns when the server ends, or at once on Ctrl-C or SIGTERM (whose traps exit): either way the
# EXIT trap stops the fakes, the worker and the server.
status=0
wait "$last" || status=$?
exit "$status"
