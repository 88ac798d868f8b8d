"""The hybrid budget and estimate pages on a collection of real size: how long a request takes to answer.

The collection: the iKAT 2024 test qrels (about 20,000 graded pairs over 116 turns, read from
ASSAY_SHARED_DATA, never copied) as the human judge, the tests' noisy, miscalibrated machine judge
(tests/judging/pair_data.py) grading every pair, and five synthetic runs of 30 passages per turn. Timed
with Django's test client on a throwaway PostgreSQL database (bench/_setup.py):

- the budget page's submit (a POST that queues the simulation and redirects), then the task the worker
  runs, then the page that shows the finished simulation, for three designs (turn units with nDCG@5, pair
  units with relevant_share, stratified pairs with P@5), at the `simulate_budget` default of 500 repeats;
- the estimate page (it answers in the request: one set of intervals, no repeats).

Run: ASSAY_SHARED_DATA=/work/shared/data .venv/bin/python bench/bench_budget_page.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import django_with_temp_database  # noqa: E402

django_with_temp_database()

from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402
from django.urls import reverse  # noqa: E402

from annotation.models import Collection, Judge, Ranking, RelevanceJudgment, Run, Topic, Turn  # noqa: E402
from tests.judging.pair_data import IKAT_QRELS, machine_judge, read_qrels, runs_for  # noqa: E402

CASES = {
    "turns, nDCG@5": {"unit": "turn", "measure": "nDCG@5", "budgets": "10 20 50 100"},
    "pairs, relevant_share": {"unit": "pair", "measure": "relevant_share", "budgets": "100 200 500 1000"},
    "stratified pairs, P@5": {
        "unit": "pair",
        "measure": "P(rel=2)@5",
        "design": "stratified",
        "budgets": "100 200 500 1000",
    },
}


def build() -> Collection:
    human = read_qrels(IKAT_QRELS)
    machine = machine_judge(human, seed=1)
    runs = runs_for(human, seed=2)
    collection = Collection.objects.create(name="ikat-bench")
    nist, llm = Judge.objects.create(name="nist"), Judge.objects.create(name="llm")
    turns = {}
    for t in sorted(human):
        topic = Topic.objects.create(collection=collection, number=t)
        turns[t] = Turn.objects.create(topic=topic, collection=collection, position=1, turn_id=t, utterance=t)
    rows = [
        RelevanceJudgment(judge=judge, turn=turns[t], passage_id=p, grade=grades[t][p])
        for judge, grades in ((nist, human), (llm, machine))
        for t in grades
        for p in grades[t]
    ]
    RelevanceJudgment.objects.bulk_create(rows, batch_size=5000)
    for name, ranked in runs.items():
        run = Run.objects.create(collection=collection, name=name)
        Ranking.objects.bulk_create(
            Ranking(run=run, turn=turns[t], passage_ids=list(docs), scores=list(docs.values()))
            for t, docs in ranked.items()
        )
    print(f"{len(rows) // 2:,} graded pairs, {len(turns)} turns, {len(runs)} runs")
    return collection


def timed(call):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    response = call()
    return response, time.perf_counter() - start


def main() -> None:
    from django.contrib.auth import get_user_model

    setup_test_environment()
    collection = build()
    client = Client()
    client.force_login(get_user_model().objects.create(username="organiser", is_staff=True))
    url = reverse("judging:hybrid-budget", args=[collection.name])
    base = {"task": "relevance", "human_judge": "nist", "machine_judge": "llm", "method": "ppi++"}
    base |= {"alpha": "0.05", "rel_threshold": "2", "repeats": "500"}
    queued = "judging.models" in sys.modules and hasattr(sys.modules["judging.models"], "BudgetSimulation")
    for name, case in CASES.items():
        query = {**base, **case}
        if not queued:  # the page before its work went to a task worker: the second GET is warm
            _cold, first = timed(lambda q=query: client.get(url, q))  # type: ignore[misc]
            response, seconds = timed(lambda q=query: client.get(url, q))  # type: ignore[misc]
            print(
                f"{name:<24} GET computes in the request: {first:6.2f} s cold, {seconds:6.2f} s warm ({response.status_code})"
            )
            continue
        from tests.background import tasks_run_ready

        response, answer = timed(lambda q=query: client.post(url, q))  # type: ignore[misc]
        _ran, work = timed(tasks_run_ready)
        from judging.models import BudgetSimulation

        done = BudgetSimulation.objects.order_by("-pk").values_list("status", flat=True).first()
        page, shown = timed(lambda r=response: client.get(r["Location"]))  # type: ignore[misc]
        again, reused = timed(lambda q=query: client.post(url, q))  # type: ignore[misc]
        print(
            f"{name:<24} POST answers {answer * 1000:6.0f} ms ({response.status_code}); task {work:6.2f} s ({done}); "
            f"result page {shown * 1000:5.0f} ms ({page.status_code}); same request again {reused * 1000:5.0f} ms "
            f"({'reused' if again['Location'] == response['Location'] else 'queued anew'}); the answer comes "
            f"{work / answer:.0f}x sooner than the simulation a request used to compute before answering"
        )
    estimate = reverse("judging:hybrid-estimate", args=[collection.name])
    for measure in ("nDCG@5", "AP(rel=2)"):
        response, seconds = timed(lambda m=measure: client.get(estimate, {**base, "measure": m}))  # type: ignore[misc]
        print(
            f"estimate page, {measure:<10} GET in the request: {seconds:6.2f} s (status {response.status_code})"
        )


if __name__ == "__main__":
    main()
