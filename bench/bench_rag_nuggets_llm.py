"""Figure: a TREC RAG nugget assignment job against a loopback OpenAI-compatible server with a fixed 250 ms
latency: each answer against its question's 30 nuggets, 10 nuggets per call.

Target: throughput at least 80% of concurrency / latency (the most a bounded pool of workers can do), and a
re-run of the same job makes zero calls (every answer comes from the LlmCall cache).

An assignment call returns ten labels where a relevance call returns one, so the job's own thread stores ten
rows per call; the latency is 250 ms rather than bench_llm's 100 ms, still well under what a real endpoint
takes to read an answer and label ten nuggets (seconds). `BENCH_LATENCY=0.1` runs it at bench_llm's latency.
Run: .venv/bin/python bench/bench_rag_nuggets_llm.py
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import django_with_temp_database  # noqa: E402  (puts the project on the path too)

from devtools.openai_server import FakeOpenAI, toy_responder  # noqa: E402  (needs the path above, not Django)

LATENCY = float(os.environ.get("BENCH_LATENCY", "0.25"))
CONCURRENCY = 8
TURNS, RUNS, NUGGETS, WINDOW = 20, 6, 30, 10  # 20 x 6 answers x 3 windows = 360 calls
WORDS = "capital river bridge museum tower market harbour station garden palace cathedral library".split()


def main() -> int:
    server = FakeOpenAI(latency=LATENCY, responder=toy_responder).start()
    os.environ["OPENAI_BASE_URL"] = server.url
    os.environ["OPENAI_API_KEY"] = "sk-bench"
    os.environ.pop("AZURE_OPENAI_ENDPOINT", None)
    django_with_temp_database()

    from annotation.models import Collection, Judge, Nugget, NuggetAssignment, Response, Run, Topic, Turn
    from judging.machine.jobs import judge_job_run, judge_job_start

    collection = Collection.objects.create(name="bench")
    topic = Topic.objects.create(collection=collection, number="2024", title="bench")
    gold = Judge.objects.create(name="gold", kind=Judge.Kind.IMPORTED)
    runs = [Run.objects.create(collection=collection, name=f"run-{r}") for r in range(RUNS)]
    turns = Turn.objects.bulk_create(
        Turn(collection=collection, topic=topic, turn_id=f"2024-{t}", position=t, utterance=f"Question {t}?")
        for t in range(TURNS)
    )
    Nugget.objects.bulk_create(
        Nugget(
            judge=gold,
            turn=turn,
            key=f"n{n}",
            position=n,
            text=f"The {WORDS[n % 12]} of city {t} opened in year {1900 + n}",
        )
        for t, turn in enumerate(turns)
        for n in range(NUGGETS)
    )
    Response.objects.bulk_create(
        Response(
            run=run,
            turn=turn,
            text=" ".join(f"The {WORDS[(r + k) % 12]} of city {t} opened long ago." for k in range(5)),
        )
        for t, turn in enumerate(turns)
        for r, run in enumerate(runs)
    )
    options = {"nuggets_judge": "gold", "window": WINDOW}

    def timed(judge: str, concurrency: int, model: str = "gpt-4o-mini", turn_ids: list[str] | None = None):
        job = judge_job_start(
            collection=collection,
            task="assignment",
            judge_name=judge,
            model=model,
            options={**options, "turns": turn_ids} if turn_ids else options,
            concurrency=concurrency,
        )
        started = time.perf_counter()
        judge_job_run(job=job)
        return job, time.perf_counter() - started

    # Baseline: one call at a time on one question; another model so it shares no cache with the rest.
    base_job, base_s = timed("bench-seq", 1, model="seq-model", turn_ids=["2024-0"])
    base_rate = base_job.calls_made / base_s

    job, elapsed = timed("bench", CONCURRENCY)
    rate = job.calls_made / elapsed
    ideal = CONCURRENCY / LATENCY
    ratio = rate / ideal
    labels = NuggetAssignment.objects.filter(judge__name="bench").count()
    print(
        f"nugget assignment, {TURNS * RUNS} answers x {NUGGETS} nuggets in windows of {WINDOW}: "
        f"{job.calls_made} calls, {labels} labels, latency {LATENCY * 1000:.0f} ms, concurrency {CONCURRENCY}"
    )
    print(
        f"  baseline concurrency 1: {base_rate:.1f} calls/s ({base_job.calls_made} calls in {base_s:.2f} s)"
    )
    print(f"  concurrency {CONCURRENCY}: {rate:.1f} calls/s in {elapsed:.2f} s; ideal {ideal:.0f} calls/s")
    print(f"  throughput / (concurrency / latency) = {ratio:.2f}  (target >= 0.80)")

    before = len(server.received)
    rerun, rerun_s = timed("bench", CONCURRENCY)
    rerun_requests = len(server.received) - before
    print(
        f"  re-run: {rerun.calls_made} calls made ({rerun_requests} requests reached the server), "
        f"{rerun.cache_hits} from the cache, in {rerun_s:.2f} s  (target 0 calls)"
    )
    server.stop()
    ok = (
        ratio >= 0.8
        and job.units_failed == 0
        and labels == TURNS * RUNS * NUGGETS
        and rerun.calls_made == 0
        and rerun_requests == 0
    )
    print("  PASS" if ok else "  FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
