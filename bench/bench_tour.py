"""The organiser's tour in real Chromium, each step's wait, beside a collection of real size and without.

Runs tests/browser/test_organiser_tour.py twice in this invocation: as the suite runs it (the baseline),
and with ASSAY_TOUR_REAL_SIZE=1, which first builds the real-size collection (devtools/realsize.py) in
the same database, so that the pages every organiser passes through (home, people, jobs, organise pages,
judge menus) carry 45 runs, 3 pools and tens of thousands of pairs. Prints the seconds of each step
under both and their ratio. Needs Chromium and the public iKAT data beside the checkout, as the test does.
The test's database is made by pytest-django on the bench cluster (bench/_setup.py), under a name of this
run's own, and dropped when the test ends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import ROOT, bench_database_name, cluster_url  # noqa: E402

TEST = "tests/browser/test_organiser_tour.py"


def _tour(real_size: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="assay-tour-") as scratch:
        timings = Path(scratch) / "timings.json"
        env = {
            **os.environ,
            "ASSAY_TOUR_TIMINGS": str(timings),
            "ASSAY_TOUR_REAL_SIZE": "1" if real_size else "0",
        }
        env["DATABASE_URL"] = cluster_url()
        env["TEST_DATABASE_NAME"] = bench_database_name()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", TEST],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0 or not timings.is_file():
            print(done.stdout[-3000:], done.stderr[-2000:], sep="\n")
            raise SystemExit(f"the tour failed (real size: {real_size})")
        return json.loads(timings.read_text())


def main() -> int:
    small = _tour(real_size=False)
    real = _tour(real_size=True)
    print(f"{'step':28} {'demo s':>8} {'real-size s':>12} {'ratio':>6}")
    for step, seconds in small.items():
        print(f"{step:28} {seconds:8.2f} {real[step]:12.2f} {real[step] / seconds:6.2f}")
    total_small, total_real = sum(small.values()), sum(real.values())
    print(
        f"{'whole tour':28} {total_small:8.1f} {total_real:12.1f} {total_real / total_small:6.2f}"
        f"   (slowest real-size step: {max(real, key=lambda s: real[s])}, {max(real.values()):.2f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
