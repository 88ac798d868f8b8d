"""Judge jobs for NLI tasks: what running ntn as a resumable JudgeJob (turn by turn, progress saved after
each turn) costs against calling the ntn_match service once over every turn, on the same model and pairs;
and what a re-run of the finished work costs (it must score zero pairs).

Target: the job reaches at least 80% of the direct service's pairs/s. Runs on the tiny randomly
initialised DeBERTa-v2 built here, on a throwaway PostgreSQL database.

    .venv/bin/python bench/bench_judge_jobs.py
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import django_with_temp_database  # noqa: E402

SCRATCH = django_with_temp_database()

from annotation.models import Judge, NtnJudgment, Nugget, Turn  # noqa: E402
from judging.machine.jobs import judge_job_run, judge_job_start  # noqa: E402
from judging.machine.nli import ntn_match  # noqa: E402
from tests.factories import CollectionFactory, JudgeFactory, TopicFactory  # noqa: E402
from tests.judging.nli_model import SENTENCES, build_tiny_nli_model  # noqa: E402

TARGET = 0.8
TURNS, PREMISES, GOLD = 40, 5, 4  # 40 turns x 5 response nuggets x 4 gold nuggets = 800 pairs


def collection_build():
    rng = random.Random(11)
    collection = CollectionFactory(name="bench")
    topic = TopicFactory(collection=collection)
    gold, extractor = JudgeFactory(name="gold"), JudgeFactory(name="extractor", kind=Judge.Kind.LLM)
    turns = Turn.objects.bulk_create(
        [
            Turn(collection=collection, topic=topic, position=i, turn_id=f"{topic.number}_{i}")
            for i in range(TURNS)
        ]
    )
    nuggets = []
    for turn in turns:
        for i in range(GOLD):
            text = " ".join(rng.sample(SENTENCES, rng.randint(1, 2)))
            nuggets.append(Nugget(judge=gold, turn=turn, key=f"[{i}]", text=text))
        for i in range(PREMISES):
            text = " ".join(rng.sample(SENTENCES, rng.randint(1, 3)))
            nuggets.append(Nugget(judge=extractor, turn=turn, key=f"r{i}", text=text))
    Nugget.objects.bulk_create(nuggets)
    return collection, gold, extractor


def main() -> int:
    import torch

    torch.set_num_threads(1)  # a shared 2-core machine: one thread on both sides keeps the comparison fair
    model_dir = str(build_tiny_nli_model(SCRATCH / "tiny-nli", hidden_size=64))
    collection, gold, extractor = collection_build()
    pairs = TURNS * PREMISES * GOLD
    # Warm-up: load the model once, outside both timings.
    ntn_match(
        collection=collection,
        gold_judge=gold,
        response_nugget_judge=extractor,
        judge_name="warm-up",
        model=model_dir,
        turn_ids=[collection.turns.first().turn_id],
    )

    best_direct, best_job, rerun_s, rerun_scored = 0.0, 0.0, 0.0, -1
    for attempt in range(2):
        start = time.perf_counter()
        result = ntn_match(
            collection=collection,
            gold_judge=gold,
            response_nugget_judge=extractor,
            judge_name=f"direct-{attempt}",
            model=model_dir,
        )
        best_direct = max(best_direct, result.scored / (time.perf_counter() - start))

        options = {"gold_judge": "gold", "response_nugget_judge": "extractor", "threshold": 0.5}
        start = time.perf_counter()
        job = judge_job_start(
            collection=collection,
            task="ntn",
            judge_name=f"job-{attempt}",
            model=model_dir,
            options=options,
            concurrency=1,
        )
        judge_job_run(job=job)
        best_job = max(best_job, job.calls_made / (time.perf_counter() - start))
        assert job.calls_made == pairs == NtnJudgment.objects.filter(judge__name=f"job-{attempt}").count()

        start = time.perf_counter()
        again = judge_job_start(
            collection=collection,
            task="ntn",
            judge_name=f"job-{attempt}",
            model=model_dir,
            options=options,
            concurrency=1,
        )
        judge_job_run(job=again)
        rerun_s, rerun_scored = time.perf_counter() - start, again.calls_made

    ratio = best_job / best_direct
    print(
        f"ntn on {TURNS} turns, {pairs} pairs (tiny DeBERTa-v2, hidden 64): ntn_match directly "
        f"{best_direct:,.0f} pairs/s; as a resumable job {best_job:,.0f} pairs/s; ratio {ratio:.2f} "
        f"(target >= {TARGET}); re-run of the finished work: {rerun_scored} pairs scored in {rerun_s:.2f} s"
    )
    if ratio < TARGET or rerun_scored != 0:
        print("FAILED")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
