"""Import speed of the foundation, each figure beside a raw-sqlite3 baseline run in the same invocation.

1. The official iKAT 2024 qrels (20,575 lines): import + export on SQLite (goal: under 2 s together).
2. A generated 40-run x 116-turn x 1000-deep TREC run set (4.64 M lines): import_run on SQLite (goal: under
   60 s, and within 3x of a raw `sqlite3` executemany of the same rows, parsing included).

Usage: python bench/bench_imports.py [--runs 40] [--turns 116] [--depth 1000]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import ROOT, django_with_temp_sqlite  # noqa: E402

SHARED = ROOT.parent / "shared" / "data" / "ikat2024"


def raw_sqlite_baseline(db: Path, files: list[Path], columns: int) -> float:
    """Read the files, split each line, executemany the rows into one plain table, commit."""
    start = time.perf_counter()
    conn = sqlite3.connect(db)
    cols = ", ".join(f"c{i}" for i in range(columns))
    conn.execute(f"create table rows ({cols})")
    for path in files:
        with open(path, encoding="utf-8") as handle:
            rows = [line.split() for line in handle]
        conn.executemany(f"insert into rows values ({', '.join('?' * columns)})", rows)
    conn.commit()
    conn.close()
    return time.perf_counter() - start


def bench_qrels(scratch: Path) -> None:
    from annotation.io import topics_import
    from annotation.relevance.io import qrels_import, qrels_lines
    from annotation.services import collection_get_or_create, judge_get_or_create

    qrels = SHARED / "2024_test_qrels.trec"
    if not qrels.exists():
        print(f"qrels: skipped, {qrels} not found")
        return
    collection = collection_get_or_create(name="ikat24")
    topics_import(path=SHARED / "2024_test_topics.json", collection=collection)
    judge = judge_get_or_create(name="nist")
    start = time.perf_counter()
    qrels_import(path=qrels, collection=collection, judge=judge)
    imported = time.perf_counter() - start
    out = scratch / "export.qrels"
    with open(out, "w") as handle:
        handle.writelines(qrels_lines(collection=collection, judge=judge))
    total = time.perf_counter() - start
    baseline = raw_sqlite_baseline(scratch / "raw-qrels.sqlite3", [qrels], 4)
    print(
        f"qrels: 20,575 lines imported in {imported:.2f} s, import + export {total:.2f} s (goal < 2 s); "
        f"raw sqlite3 executemany {baseline:.2f} s; ratio {total / baseline:.1f}x"
    )


def bench_runs(scratch: Path, n_runs: int, n_turns: int, depth: int) -> None:
    from annotation.io import run_import
    from annotation.models import Ranking, Topic, Turn
    from annotation.services import collection_get_or_create

    collection = collection_get_or_create(name="runs")
    turn_ids = [f"{t // 7}_{t % 7 + 1}" for t in range(n_turns)]
    for turn_id in turn_ids:
        topic, _ = Topic.objects.get_or_create(collection=collection, number=turn_id.split("_")[0])
        Turn.objects.create(collection=collection, topic=topic, turn_id=turn_id, position=0, utterance="q")
    rng = random.Random(42)
    docs = [
        f"clueweb22-en{rng.randrange(10000):04d}-{rng.randrange(100):02d}-{rng.randrange(100000):05d}:{rng.randrange(30)}"
        for _ in range(20000)
    ]
    files = []
    for r in range(n_runs):
        path = scratch / f"run{r}.trec"
        with open(path, "w") as handle:
            for turn_id in turn_ids:
                for rank, doc in enumerate(rng.sample(docs, depth), start=1):
                    handle.write(f"{turn_id} Q0 {doc} {rank} {1000 - rank + rng.random():.4f} run{r}\n")
        files.append(path)
    lines = n_runs * n_turns * depth
    start = time.perf_counter()
    for path in files:
        run_import(path=path, collection=collection)
    ours = time.perf_counter() - start
    assert Ranking.objects.count() == n_runs * n_turns
    baseline = raw_sqlite_baseline(scratch / "raw-runs.sqlite3", files, 6)
    print(
        f"runs: {lines:,} lines ({n_runs} runs x {n_turns} turns x {depth}) imported in {ours:.1f} s (goal < 60 s); "
        f"raw sqlite3 executemany {baseline:.1f} s; ratio {ours / baseline:.2f}x (goal <= 3x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--turns", type=int, default=116)
    parser.add_argument("--depth", type=int, default=1000)
    args = parser.parse_args()
    scratch = django_with_temp_sqlite()
    bench_qrels(scratch)
    bench_runs(scratch, args.runs, args.turns, args.depth)


if __name__ == "__main__":
    main()
