#!/usr/bin/env bash
# make serve: the production shape on one machine. PostgreSQL (the embedded cluster unless DATABASE_URL names
# a server) and Redis (scripts/services.sh), then
# migrate, collectstatic and `check --deploy`, then gunicorn (web) and the task workers (TASK_WORKERS
# `manage.py task_worker` processes, default 2, on the queue kept in PostgreSQL), each kept running by
# scripts/keep.sh, all in the foreground; Ctrl-C (or SIGTERM) stops them, and the database and Redis (the
# shared cache) keep running.
#
# Settings come from the environment as in production (README, Configuration); what is not set gets the
# one-machine value below. SERVE_HTTP=1 serves plain HTTP without a TLS proxy in front (cookies not
# marked secure, no HTTPS redirect, so `check --deploy` is not required to be clean).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bin=${VENV:-$root/.venv}/bin
tmp=${TMP:-$root/.tmp}
pg_port=${PG_PORT:-55432}
redis_port=${REDIS_PORT:-56379}
host=${HOST:-127.0.0.1}
port=${PORT:-8000}
db=${SERVE_DB:-assay}
redis_db=${SERVE_REDIS_DB:-1}

if [ "${SERVE_SERVICES:-1}" = 1 ]; then
  bash scripts/services.sh start "$tmp" "$pg_port" "$redis_port"
  [ -f "$tmp/pg.ok" ] || { echo "PostgreSQL is not running: see $tmp/pg.log" >&2; exit 1; }
fi
if [ -z "${DATABASE_URL:-}" ]; then
  "$bin/python" -m assay.embedded_db start --data "$tmp/pgdata" --port "$pg_port" --database "$db" >/dev/null
fi

export DEBUG=0
export DATABASE_URL=${DATABASE_URL:-postgres://assay@127.0.0.1:$pg_port/$db}
export CACHE_URL=${CACHE_URL:-redis://127.0.0.1:$redis_port/$((redis_db + 1))}
export STATIC_MANIFEST=${STATIC_MANIFEST:-1}
export ALLOWED_HOSTS=${ALLOWED_HOSTS:-127.0.0.1,localhost}
if [ "${SERVE_HTTP:-0}" = 1 ]; then
  export SECURE_COOKIES=0 SECURE_SSL_REDIRECT=0 SECURE_HSTS_SECONDS=0
else
  # Behind a TLS proxy on this machine (README, Running it at scale): it sets X-Forwarded-Proto, and its
  # X-Forwarded-For names the client for the log-in limits.
  export BEHIND_PROXY=${BEHIND_PROXY:-1} SECURE_SSL_REDIRECT=${SECURE_SSL_REDIRECT:-1}
  export TRUSTED_PROXIES=${TRUSTED_PROXIES:-127.0.0.1,::1}
fi
if [ -z "${SECRET_KEY:-}" ]; then
  # One random key per machine, kept beside the cluster and readable by this user only.
  if [ ! -s "$tmp/secret_key" ]; then
    (umask 077; "$bin/python" -c "import secrets; print(secrets.token_urlsafe(50))" >"$tmp/secret_key")
  fi
  SECRET_KEY=$(cat "$tmp/secret_key")
  export SECRET_KEY
fi

"$bin/python" manage.py migrate --noinput
"$bin/python" manage.py collectstatic --noinput -v 0
if [ "${SERVE_HTTP:-0}" = 1 ]; then
  "$bin/python" manage.py check --deploy || true
else
  "$bin/python" manage.py check --deploy --fail-level WARNING
fi

# One process manager: each process runs under scripts/keep.sh, which starts it again when it ends (a
# crash, an OOM kill, a task worker that lost the database), so one process dying neither takes the others
# down nor stays down. gunicorn keeps its own workers; each task worker is a keeper's process of its own.
# Each keeper writes its process's pid to $tmp/serve-$port-<name>.pid (web, tasks-1, tasks-2, ...).
pids=()
stop() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait
}
trap stop INT TERM EXIT
bash scripts/keep.sh web "$tmp/serve-$port-web.pid" \
  "$bin/gunicorn" assay.wsgi -c deploy/gunicorn.conf.py --bind "$host:$port" &
pids+=($!)
for i in $(seq "${TASK_WORKERS:-2}"); do
  bash scripts/keep.sh "task worker $i" "$tmp/serve-$port-tasks-$i.pid" "$bin/python" manage.py task_worker &
  pids+=($!)
done
echo "Assay (production shape) at http://$host:$port/ : web and task workers; Ctrl-C stops them" >&2
wait
