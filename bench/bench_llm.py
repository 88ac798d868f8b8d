"""Figure: LLM judging throughput against a loopback OpenAI-compatible server with a fixed 100 ms latency.

Target: throughput at least 80% of concurrency / latency (the most a bounded pool of workers can do),
and a re-run of the same job makes zero calls (every answer comes from the LlmCall cache).
Baseline in the same invocation: the same work at concurrency 1. Run: .venv/bin/python bench/bench_llm.py
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import django_with_temp_database  # noqa: E402  (puts the project on the path too)

from tests.judging.fake_openai import FakeOpenAI  # noqa: E402  (needs the path above, not Django)

LATENCY = 0.100
CONCURRENCY = 8
TURNS, PASSAGES_PER_TURN = 20, 12  # 240 relevance units
BASELINE_UNITS = 30


def main() -> int:
    server = FakeOpenAI(latency=LATENCY, responder=lambda prompt: "Grade: 2").start()
    os.environ["OPENAI_BASE_URL"] = server.url
    os.environ["OPENAI_API_KEY"] = "sk-bench"
    os.environ.pop("AZURE_OPENAI_ENDPOINT", None)
    django_with_temp_database()

    from annotation.models import Collection, Passage, Ranking, Run, Topic, Turn
    from judging.machine.jobs import judge_job_run, judge_job_start

    collection = Collection.objects.create(name="bench")
    topic = Topic.objects.create(collection=collection, number="1", title="bench")
    run = Run.objects.create(collection=collection, name="run")
    Passage.objects.bulk_create(
        Passage(
            collection=collection,
            passage_id=f"p{i}",
            text=f"Passage {i} about bicycles and frames, size {i}.",
        )
        for i in range(TURNS * PASSAGES_PER_TURN)
    )
    for t in range(TURNS):
        turn = Turn.objects.create(
            collection=collection,
            topic=topic,
            turn_id=f"1_{t + 1}",
            position=t + 1,
            utterance=f"Question {t}?",
        )
        ids = [f"p{t * PASSAGES_PER_TURN + i}" for i in range(PASSAGES_PER_TURN)]
        Ranking.objects.create(run=run, turn=turn, passage_ids=ids, scores=[1.0] * len(ids))

    def timed(judge: str, options: dict, concurrency: int, model: str = "gpt-4o-mini"):
        job = judge_job_start(
            collection=collection,
            task="relevance",
            judge_name=judge,
            model=model,
            options=options,
            concurrency=concurrency,
        )
        started = time.perf_counter()
        judge_job_run(job=job)
        return job, time.perf_counter() - started

    # Baseline: one call at a time, on a few turns; another model name so it shares no cache with the rest.
    baseline_turns = [f"1_{t + 1}" for t in range(BASELINE_UNITS // PASSAGES_PER_TURN + 1)]
    base_job, base_s = timed("bench-seq", {"turns": baseline_turns, "depth": 30}, 1, model="seq-model")
    base_rate = base_job.calls_made / base_s

    received_before = len(server.received)
    job, elapsed = timed("bench", {"depth": 30}, CONCURRENCY)
    rate = job.calls_made / elapsed
    ideal = CONCURRENCY / LATENCY
    ratio = rate / ideal
    print(f"LLM judging, {job.calls_made} calls, latency {LATENCY * 1000:.0f} ms, concurrency {CONCURRENCY}")
    print(
        f"  baseline concurrency 1: {base_rate:.1f} calls/s ({base_job.calls_made} calls in {base_s:.2f} s)"
    )
    print(f"  concurrency {CONCURRENCY}: {rate:.1f} calls/s in {elapsed:.2f} s; ideal {ideal:.0f} calls/s")
    print(f"  throughput / (concurrency / latency) = {ratio:.2f}  (target >= 0.80)")
    print(f"  speed-up over concurrency 1: {rate / base_rate:.1f}x")

    calls_before_rerun = len(server.received)
    rerun, rerun_s = timed("bench", {"depth": 30}, CONCURRENCY)
    rerun_requests = len(server.received) - calls_before_rerun
    print(
        f"  re-run: {rerun.calls_made} calls made ({rerun_requests} requests reached the server), "
        f"{rerun.cache_hits} from the cache, in {rerun_s:.2f} s  (target 0 calls)"
    )
    server.stop()
    ok = ratio >= 0.8 and rerun.calls_made == 0 and rerun_requests == 0
    assert len(server.received) - received_before == job.calls_made
    print("  PASS" if ok else "  FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
