"""Stop and start a PostgreSQL cluster under load, and count what a running Assay answered meanwhile.

    python scripts/outage_check.py PORT PGDATA [PG_PORT]

PORT is a running Assay (e.g. `SERVE_HTTP=1 make serve` pointed at a cluster you own: never the one
others use), PGDATA that cluster's data folder. Four clients load a page that reads the database (a
session cookie makes it read the session) for 2 s, the cluster is stopped for 4 s and started again, and
the clients go on for 4 s. It prints the statuses before, while down and after; a healthy stack answers
503 while down and no 5xx once the cluster is back.
"""

from __future__ import annotations

import collections
import http.client
import os
import subprocess
import sys
import threading
import time
from pathlib import Path


def main() -> int:
    port, pgdata = int(sys.argv[1]), sys.argv[2]
    pg_port = sys.argv[3] if len(sys.argv) > 3 else "55499"
    pgbin = sorted(Path("/usr/lib/postgresql").glob("*/bin"))[-1]
    as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    seen: list[tuple[float, object]] = []
    stop = threading.Event()

    def client() -> None:
        while not stop.is_set():
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
                conn.request("GET", "/", headers={"Cookie": "sessionid=" + "s" * 32})
                response = conn.getresponse()
                response.read()
                seen.append((time.monotonic(), response.status))
            except OSError as exc:
                seen.append((time.monotonic(), type(exc).__name__))
            time.sleep(0.02)

    threads = [threading.Thread(target=client) for _ in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(2)
    down = time.monotonic()
    subprocess.run([*as_pg, str(pgbin / "pg_ctl"), "-D", pgdata, "-m", "fast", "stop"], capture_output=True)
    time.sleep(4)
    options = f"-p {pg_port} -k {pgdata} -c listen_addresses=127.0.0.1"
    subprocess.run(
        [
            *as_pg,
            str(pgbin / "pg_ctl"),
            "-D",
            pgdata,
            "-l",
            f"{pgdata}/restart.log",
            "-w",
            "-o",
            options,
            "start",
        ],
        capture_output=True,
    )
    up = time.monotonic()
    time.sleep(4)
    stop.set()
    for thread in threads:
        thread.join()

    def phase(start: float, end: float) -> dict:
        return dict(collections.Counter(status for at, status in seen if start <= at < end))

    print("before:", phase(0, down))
    print("down:  ", phase(down, up))
    after = phase(up, float("inf"))
    print("after: ", after)
    return 1 if any(isinstance(s, int) and s >= 500 for s in after) else 0


if __name__ == "__main__":
    sys.exit(main())
