"""What every command pays before it does anything: `manage.py check`'s wall time, beside Django's own.

Times, in fresh processes taken in turn so that the machine's load falls on each alike (best of --rounds):
a bare interpreter (`python -c pass`); Django alone, set up with its contrib apps and nothing of Assay's
(the floor any Django command stands on); and `manage.py check`, which sets up every app, loads the URL
conf and runs every system check. Prints each time, check's ratio to Django alone, the modules check
loads, and which of the heavy libraries tests/test_startup.py keeps out of start-up it loaded anyway.

Twice: as this environment runs Python (here PYTHONDONTWRITEBYTECODE is set, so Assay's own modules are
compiled at every start), and with compiled bytecode kept in a scratch folder (PYTHONPYCACHEPREFIX), as an
installed deployment runs. Target: check under 0.6 s on a quiet machine.

check reads no row, so no database is made; DATABASE_URL names the cluster on PG_PORT (unconnected).

Usage: DEBUG=1 PG_PORT=55432 python bench/bench_startup.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 0.6
PG_PORT = int(os.environ.get("PG_PORT", "55432"))
# Kept in step with tests/test_startup.py's HEAVY (a bench imports no test module).
HEAVY = (
    "sklearn",
    "scipy",
    "matplotlib",
    "torch",
    "transformers",
    "openai",
    "ppi_py",
    "numpy",
    "drf_spectacular.views",
    "rest_framework.serializers",
    "django.contrib.postgres",
    "boto3",
    "botocore",
    "redis",
)

DJANGO_ALONE = """
import django
from django.conf import settings
settings.configure(
    INSTALLED_APPS=["django.contrib.admin", "django.contrib.auth", "django.contrib.contenttypes",
                    "django.contrib.sessions", "django.contrib.messages", "django.contrib.staticfiles"],
    DATABASES={"default": {"ENGINE": "django.db.backends.postgresql", "NAME": "assay"}},
)
django.setup()
"""

MODULES_OF_CHECK = """
import json, sys
import django
django.setup()
from django.core.management import call_command
call_command("check", verbosity=0)
print(json.dumps(sorted(sys.modules)))
"""


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """The command's wall time and its CPU time (user and system, which a busy machine inflates less)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def modules_of_check(env: dict[str, str]) -> list[str]:
    """The modules loaded once Django is set up and `check` has run, as `manage.py check` does."""
    done = subprocess.run(
        [sys.executable, "-c", MODULES_OF_CHECK],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def measure(label: str, env: dict[str, str], rounds: int) -> float:
    commands = {
        "bare interpreter": [sys.executable, "-c", "pass"],
        "Django alone": [sys.executable, "-c", DJANGO_ALONE],
        "manage.py check": [sys.executable, "manage.py", "check"],
    }
    for command in commands.values():  # once unmeasured: disk caches warm, bytecode written where kept
        timed(command, env)
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, command in commands.items():
            wall, cpu = timed(command, env)
            walls[name].append(wall)
            cpus[name].append(cpu)
    print(f"\n{label} (best and median of {rounds}, load {os.getloadavg()[0]:.1f})")
    print(f"  {'':<18} {'wall best':>9} {'median':>8}   {'CPU best':>8} {'median':>8}")
    for name in commands:
        wall, cpu = walls[name], cpus[name]
        print(
            f"  {name:<18} {min(wall):8.3f}s {statistics.median(wall):7.3f}s"
            f"   {min(cpu):7.3f}s {statistics.median(cpu):7.3f}s"
        )
    check, django_alone = min(walls["manage.py check"]), min(walls["Django alone"])
    check_cpu, django_alone_cpu = min(cpus["manage.py check"]), min(cpus["Django alone"])
    verdict = "under" if check < TARGET_S else "OVER"
    print(
        f"  check / Django alone: {check / django_alone:.2f}x wall, {check_cpu / django_alone_cpu:.2f}x CPU;"
        f" check {verdict} the {TARGET_S} s target (wall)"
    )
    return check


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "assay.settings",
        "DEBUG": os.environ.get("DEBUG", "1"),
        "DATABASE_URL": os.environ.get("DATABASE_URL", f"postgres://assay@127.0.0.1:{PG_PORT}/assay"),
        "PYTHONPATH": str(ROOT),
    }
    modules = modules_of_check(env)
    heavy = sorted({h for m in modules for h in HEAVY if m == h or m.startswith(h + ".")})
    print(f"manage.py check loads {len(modules)} modules; of the heavy ones: {', '.join(heavy) or 'none'}")

    as_run = (
        "PYTHONDONTWRITEBYTECODE set" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "bytecode written"
    )
    measure(f"as this environment runs Python ({as_run})", env, args.rounds)
    with tempfile.TemporaryDirectory(prefix="assay-bench-pyc-") as cache:
        kept = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"} | {
            "PYTHONPYCACHEPREFIX": cache
        }
        measure("with compiled bytecode kept (as an installed deployment runs)", kept, args.rounds)


if __name__ == "__main__":
    main()
