"""Run evaluation cost: runs_evaluate (read rankings and qrels from the database, then ir_measures) against
ir_measures alone on the same data already in memory, in the same invocation.

Data: the real iKAT 2024 qrels (116 judged turns) when ../shared/data is present, else a synthetic set
of the same shape; 20 seeded runs of depth 1000 over the 218 turns (as iKAT submissions), so the database
path also skips the 102 unjudged turns. Prints seconds per full evaluation and the ratio to the baseline.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import ROOT, django_with_temp_database  # noqa: E402

RUNS, DEPTH, TURNS, JUDGED, REPEAT = 20, 1000, 218, 116, 3


def main() -> None:
    django_with_temp_database()
    import ir_measures
    from django.db import transaction

    from annotation.models import Collection, Judge, Ranking, RelevanceJudgment, Run, Topic, Turn
    from judging.scores.relevance import evaluation_measures, runs_evaluate

    rng = random.Random(7)
    qrels_path = (
        Path(os.environ.get("ASSAY_SHARED_DATA", ROOT.parent / "shared" / "data"))
        / "ikat2024"
        / "2024_test_qrels.trec"
    )
    qrels: dict[str, dict[str, int]] = {}
    if qrels_path.is_file():
        for qrel in ir_measures.read_trec_qrels(str(qrels_path)):
            qrels.setdefault(qrel.query_id, {})[qrel.doc_id] = int(qrel.relevance)
        source = "iKAT 2024 qrels"
    else:
        for t in range(JUDGED):
            qrels[f"{t // 10}_{t % 10 + 1}"] = {f"d{t}-{i}": rng.choice([0, 0, 1, 2, 3]) for i in range(177)}
        source = "synthetic qrels"
    turn_ids = list(qrels) + [f"x_{i}" for i in range(TURNS - len(qrels))]

    with transaction.atomic():
        collection = Collection.objects.create(name="bench-eval")
        topic = Topic.objects.create(collection=collection, number="all")
        turns = {
            tid: Turn.objects.create(
                collection=collection, topic=topic, turn_id=tid, position=i, utterance=tid
            )
            for i, tid in enumerate(turn_ids)
        }
        judge = Judge.objects.create(name="nist", kind=Judge.Kind.IMPORTED)
        RelevanceJudgment.objects.bulk_create(
            [
                RelevanceJudgment(judge=judge, turn=turns[tid], passage_id=pid, grade=grade)
                for tid, docs in qrels.items()
                for pid, grade in docs.items()
            ],
            batch_size=2000,
        )
        runs_in_memory: dict[str, dict[str, dict[str, float]]] = {}
        for r in range(RUNS):
            run = Run.objects.create(collection=collection, name=f"run{r:02d}")
            memory: dict[str, dict[str, float]] = {}
            rankings = []
            for tid in turn_ids:
                judged = [pid for pid in qrels.get(tid, {}) if rng.random() < 0.5]
                docs = judged + [f"noise-{r}-{tid}-{i}" for i in range(DEPTH - len(judged))]
                rng.shuffle(docs)
                scores = [float(DEPTH - i) for i in range(len(docs))]
                rankings.append(Ranking(run=run, turn=turns[tid], passage_ids=docs, scores=scores))
                if tid in qrels:
                    memory[tid] = dict(zip(docs, scores, strict=True))
            Ranking.objects.bulk_create(rankings, batch_size=100)
            runs_in_memory[run.name] = memory

    measures = evaluation_measures()

    def baseline() -> None:
        evaluator = ir_measures.evaluator(measures, qrels)
        for run in runs_in_memory.values():
            evaluator.calc_aggregate(run)

    def ours() -> None:
        runs_evaluate(collection=collection, judge=judge)

    timings: dict[str, list[float]] = {"baseline": [], "runs_evaluate": []}
    for _ in range(REPEAT):
        for name, action in (("baseline", baseline), ("runs_evaluate", ours)):
            start = time.perf_counter()
            action()
            timings[name].append(time.perf_counter() - start)
    base, mine = statistics.median(timings["baseline"]), statistics.median(timings["runs_evaluate"])
    print(
        f"evaluation of {RUNS} runs x {TURNS} turns x depth {DEPTH} on {source} ({len(qrels)} judged turns)"
    )
    print(f"ir_measures on in-memory dicts (baseline): {base:.2f} s")
    print(f"runs_evaluate from the database:          {mine:.2f} s")
    print(f"ratio runs_evaluate / baseline: {mine / base:.2f}")


if __name__ == "__main__":
    main()
