#!/usr/bin/env bash
# Starts (or stops) a PostgreSQL cluster and a Redis server owned by the test run, on loopback ports.
set -uo pipefail
action=$1 tmp=$2 pg_port=$3 redis_port=$4
pgdata=$tmp/pgdata
mkdir -p "$tmp"
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

case $action in
start)
  rm -f "$tmp/pg.ok"
  if [ -n "$pgbin" ]; then
    if [ "$(id -u)" = 0 ]; then chown postgres "$tmp"; fi
    if [ ! -f "$pgdata/PG_VERSION" ]; then
      as_pg "$pgbin/initdb" -D "$pgdata" -U postgres --auth=trust -E UTF8 >"$tmp/initdb.log" 2>&1 || cat "$tmp/initdb.log"
    fi
    as_pg "$pgbin/pg_ctl" -D "$pgdata" status >/dev/null 2>&1 ||
      as_pg "$pgbin/pg_ctl" -D "$pgdata" -l "$tmp/pg.log" -w \
        -o "-p $pg_port -k $pgdata -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null
    if "$pgbin/psql" -h 127.0.0.1 -p "$pg_port" -U postgres -tAc "select 1" >/dev/null 2>&1; then
      "$pgbin/psql" -h 127.0.0.1 -p "$pg_port" -U postgres -tAc \
        "do \$\$ begin if not exists (select from pg_roles where rolname='assay') then create role assay login createdb superuser; end if; end \$\$;" >/dev/null
      "$pgbin/psql" -h 127.0.0.1 -p "$pg_port" -U postgres -tAc "select 1 from pg_database where datname='assay'" | grep -q 1 ||
        "$pgbin/psql" -h 127.0.0.1 -p "$pg_port" -U postgres -c "create database assay owner assay" >/dev/null
      touch "$tmp/pg.ok"
      echo "PostgreSQL on 127.0.0.1:$pg_port"
    else
      echo "PostgreSQL did not start (see $tmp/pg.log)"
    fi
  else
    echo "PostgreSQL is not installed"
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
  if [ -n "$pgbin" ] && [ -f "$pgdata/PG_VERSION" ]; then
    as_pg "$pgbin/pg_ctl" -D "$pgdata" -m fast stop >/dev/null 2>&1 || true
  fi
  redis-cli -p "$redis_port" shutdown nosave >/dev/null 2>&1 || true
  ;;
esac
