"""The evaluation, estimate and nugget score pages read stored reports: a view queues the computation and
answers "computing" at once, a task worker computes, the next view shows the figures the request used to
compute itself; a label written after a report makes the next view compute again and never shows the
old figure as current; two views before the worker queue one computation; a view of stored figures makes
as many queries whatever the data's size."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from annotation.models import Judge, NuggetAssignment, RelevanceJudgment, Run
from annotation.rag_nuggets.io import assignments_import
from judging.evaluation.reports import evaluation_runs_compute
from judging.hybrid.estimate import hybrid_estimate
from judging.hybrid.units import unit_table
from judging.measures.rag_nuggets import SCORE_NAMES
from judging.models import ReportResult
from judging.scores.rag_nuggets import nugget_scores, nugget_scores_text
from judging.scores.relevance import runs_evaluate
from tests.background import tasks_run_ready
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    RankingFactory,
    RelevanceJudgmentFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)
from tests.rag_nugget_files import assignment_records, assignments_file, nugget_lists, rag_collection

pytestmark = pytest.mark.django_db

ESTIMATE = {"task": "relevance", "human_judge": "nist", "machine_judge": "llm", "measure": "nDCG@5"}
PANEL = {
    "hybrid-human_judge": "nist",
    "hybrid-machine_judge": "llm",
    "hybrid-method": "ppi++",
    "hybrid-measure": "nDCG@5",
}


def _page(name, collection):
    """(url, query) of each page that shows a stored report."""
    return {
        "evaluation-runs": (reverse("judging:evaluation-runs", args=[collection.name]), {"judge": "nist"}),
        "evaluation-run": (
            reverse("judging:evaluation-run", args=[collection.name, "plain"]),
            {"judge": "nist", "rel": "1"},
        ),
        "evaluation-panel": (reverse("judging:evaluation-runs", args=[collection.name]), PANEL),
        "hybrid-estimate": (reverse("judging:hybrid-estimate", args=[collection.name]), ESTIMATE),
    }[name]


def _judges():
    return Judge.objects.in_bulk(["nist", "llm"], field_name="name")


def _computed(name, collection):
    """The figures of each page computed here in the request, as the pages did before their figures
    moved to the worker: an Evaluation or a HybridEstimate."""
    judges = _judges()
    if name == "evaluation-runs":
        return runs_evaluate(collection=collection, judge=judges["nist"])
    if name == "evaluation-run":
        run = Run.objects.get(collection=collection, name="plain")
        return runs_evaluate(collection=collection, judge=judges["nist"], runs=[run], rel_threshold=1)
    table = unit_table(
        collection=collection, task="relevance", measure="nDCG@5", human=judges["nist"], machine=judges["llm"]
    )
    return hybrid_estimate(table=table, method="ppi++", pairs=name == "hybrid-estimate")


def _figures(name, computed):
    """What a page's figures say, comparable between a computed result and the one a page drew."""
    if name == "evaluation-runs":
        return computed.runs
    if name == "evaluation-run":
        return computed.per_turn
    if name == "hybrid-estimate":
        # The page reads the estimate without its pairs, and shows of them how many Holm settles and
        # the ranks each run is not settled against.
        return _pairs_shown(
            computed.as_json(),
            pairs=len(computed.pairs),
            settled=sum(p.settled for p in computed.pairs),
            ranking=[(row["rank"], row["run"], len(row["unsettled_with"])) for row in computed.ranking()],
        )
    return computed.as_json()


def _pairs_shown(figures, **shown):
    return {**figures, "pairs": None, "ranking": None, "settled_share": None, **shown}


def _drawn(name, response):
    """The figures a page drew, from its context."""
    key = {"evaluation-runs": "evaluation", "evaluation-run": "evaluation", "evaluation-panel": "hybrid"}
    if name == "hybrid-estimate":
        context = response.context
        return _pairs_shown(
            context["result"].as_json(),
            pairs=context["pair_count"],
            settled=context["settled_count"],
            ranking=[(row["rank"], row["run"], _count(row["unsettled"])) for row in context["ranking"]],
        )
    return _figures(name, response.context[key.get(name, "result")])


def _count(ranks: str) -> int:
    """How many ranks "2–5, 7" names."""
    spans = [span.partition("–") for span in ranks.split(", ") if span]
    return sum(int(last or first) - int(first) + 1 for first, _, last in spans)


def _cells(name, computed) -> list[str]:
    """The figures as the page's template writes them."""
    if name == "evaluation-runs":
        return [f'data-sort-value="{v!r}"' for run in computed.runs.values() for v in run.values()]
    if name == "evaluation-run":
        return [
            f'data-sort-value="{v!r}"' for turn in computed.per_turn["plain"].values() for v in turn.values()
        ]
    if name == "evaluation-panel":
        # The error bars are drawn from the estimate and its interval: their titles carry the figures.
        return [f"{e.estimate:.4f} [{e.lo:.4f}, {e.hi:.4f}]</title>" for e in computed.runs.values()]
    return [f"[{e.lo:.4f}, {e.hi:.4f}]" for e in computed.runs.values()] + [
        f"{row['estimate']:.4f}" for row in computed.ranking()
    ]


PAGES = ("evaluation-runs", "evaluation-run", "evaluation-panel", "hybrid-estimate")


@pytest.mark.parametrize("name", PAGES)
def test_a_page_answers_computing_at_once_then_shows_the_figures_the_request_used_to_compute(
    client, views_collection, name
):
    client.force_login(OrganiserFactory())
    url, query = _page(name, views_collection)
    computed = _computed(name, views_collection)
    expected = _cells(name, computed)

    waiting = client.get(url, query)
    ran = tasks_run_ready()
    done = client.get(url, query)

    assert waiting.status_code == 200
    body = waiting.content.decode()
    assert 'data-status="pending"' in body and "waiting for a task worker" in body
    assert '<meta http-equiv="refresh"' in body
    assert not any(cell in body for cell in expected)
    assert ran == 1
    assert done.status_code == 200
    shown = done.content.decode()
    assert 'id="report-status"' not in shown and '<meta http-equiv="refresh"' not in shown
    assert all(cell in shown for cell in expected), [cell for cell in expected if cell not in shown]
    assert _drawn(name, done) == _figures(name, computed)
    assert ReportResult.objects.get().status == ReportResult.Status.DONE


@pytest.mark.parametrize("name", PAGES)
def test_a_label_written_after_a_report_makes_the_next_view_compute_again(client, views_collection, name):
    client.force_login(OrganiserFactory())
    url, query = _page(name, views_collection)
    client.get(url, query)
    tasks_run_ready()
    before = _figures(name, _computed(name, views_collection))
    # Every grade of the human judge below 4 raised to 4: the figures move.
    RelevanceJudgment.objects.filter(judge__name="nist", grade__lt=4).update(grade=4)
    after = _computed(name, views_collection)
    assert _figures(name, after) != before

    stale = client.get(url, query)
    tasks_run_ready()
    fresh = client.get(url, query)

    body = stale.content.decode()
    # The earlier figures may be drawn, but only under the warning that they predate the latest changes.
    assert not stale.context[_report_key(name)].done
    assert (
        'data-status="pending"' in body
        and 'id="report-earlier"' in body
        and "before the latest changes" in body
    )
    assert '<meta http-equiv="refresh"' in body
    assert _drawn(name, stale) == before
    assert _drawn(name, fresh) == _figures(name, after)
    assert all(cell in fresh.content.decode() for cell in _cells(name, after))
    assert 'id="report-earlier"' not in fresh.content.decode()
    assert ReportResult.objects.filter(status=ReportResult.Status.DONE).count() == 2


def _report_key(name):
    return "hybrid_report" if name == "evaluation-panel" else "report"


@pytest.mark.parametrize("name", PAGES)
def test_two_views_before_the_worker_queue_one_computation(client, views_collection, name):
    client.force_login(OrganiserFactory())
    url, query = _page(name, views_collection)

    first, second = client.get(url, query), client.get(url, query)

    assert first.status_code == second.status_code == 200
    assert ReportResult.objects.count() == 1
    assert DBTaskResult.objects.count() == 1
    assert tasks_run_ready() == 1


def test_a_choice_that_cannot_be_estimated_says_why_with_400_and_is_not_computed_again(
    client, views_collection
):
    client.force_login(OrganiserFactory())
    url = reverse("judging:hybrid-estimate", args=["views"])
    query = {**ESTIMATE, "measure": "nope@3"}

    client.get(url, query)
    tasks_run_ready()
    refused = client.get(url, query)
    again = client.get(url, query)

    assert refused.status_code == again.status_code == 400
    body = refused.content.decode()
    assert "unknown measure" in body and 'id="report-status"' not in body
    assert refused.context["result"] is None
    assert tasks_run_ready() == 0


def _collection_of(size: int, name: str):
    """A collection of `size` turns and `size` runs, every turn graded by nist and llm."""
    collection = CollectionFactory(name=name)
    nist, llm = JudgeFactory(name=f"{name}-nist"), JudgeFactory(name=f"{name}-llm")
    runs = [RunFactory(collection=collection, name=f"run-{r}") for r in range(size)]
    for t in range(size):
        turn = TurnFactory(topic=TopicFactory(collection=collection), position=1)
        for p in range(3):
            RelevanceJudgmentFactory(judge=nist, turn=turn, passage_id=f"d{p}", grade=(t + p) % 5)
            RelevanceJudgmentFactory(judge=llm, turn=turn, passage_id=f"d{p}", grade=(t + 2 * p) % 5)
        for r, run in enumerate(runs):
            RankingFactory(
                run=run, turn=turn, passage_ids=[f"d{(p + r) % 3}" for p in range(3)], scores=[3, 2, 1]
            )
    return collection


def _stored_view_queries(client, collection) -> list[int]:
    name = collection.name
    pages = [
        (reverse("judging:evaluation-runs", args=[name]), {"judge": f"{name}-nist"}),
        (reverse("judging:evaluation-run", args=[name, "run-0"]), {"judge": f"{name}-nist"}),
        (
            reverse("judging:evaluation-runs", args=[name]),
            {
                "hybrid-human_judge": f"{name}-nist",
                "hybrid-machine_judge": f"{name}-llm",
                "hybrid-method": "ppi++",
                "hybrid-measure": "nDCG@5",
            },
        ),
        (
            reverse("judging:hybrid-estimate", args=[name]),
            {"task": "relevance", "human_judge": f"{name}-nist", "machine_judge": f"{name}-llm"},
        ),
    ]
    counts = []
    for url, query in pages:
        client.get(url, query)
        tasks_run_ready()
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url, query)
        assert response.status_code == 200 and 'id="report-status"' not in response.content.decode()
        counts.append(len(queries))
    return counts


def test_a_view_of_stored_figures_makes_as_many_queries_whatever_the_datas_size(client):
    client.force_login(OrganiserFactory())
    small, large = _collection_of(4, "small"), _collection_of(12, "large")

    assert _stored_view_queries(client, small) == _stored_view_queries(client, large)


# --- the nugget score pages ---------------------------------------------------------------------------

RAG_RUNS = ("run-a", "run-b", "run-c")


@pytest.fixture
def rag(tmp_path):
    collection = CollectionFactory(name="rag")
    rag_collection(tmp_path, collection, runs=RAG_RUNS)
    judge = Judge.objects.create(name="assigner", kind=Judge.Kind.LLM)
    records = assignment_records(nugget_lists(seed=3, size=5), seed=1, runs=RAG_RUNS)
    assignments_import(
        path=assignments_file(tmp_path / "a.jsonl", records), collection=collection, judge=judge
    )
    return collection, judge


def _nugget_cells(collection, judge, run: str | None) -> list[str]:
    scores = nugget_scores(collection=collection, judge=judge)
    if run is None:
        return [f'data-sort-value="{scores["runs"][r][s]!r}"' for r in RAG_RUNS for s in SCORE_NAMES]
    return [
        f'data-sort-value="{a[s]!r}"' for a in scores["answers"] if a["run_id"] == run for s in SCORE_NAMES
    ]


@pytest.mark.parametrize("run", [None, "run-b"])
def test_the_nugget_score_pages_compute_on_the_worker_and_again_after_an_assignment_changes(client, rag, run):
    collection, judge = rag
    client.force_login(OrganiserFactory())
    url = (
        reverse("judging:nugget-scores", args=[collection.name])
        if run is None
        else reverse("judging:nugget-scores-run", args=[collection.name, run])
    )
    query = {"judge": judge.name, "order": "all_score"}
    expected = _nugget_cells(collection, judge, run)

    waiting, also_waiting = client.get(url, query), client.get(url, query)
    ran = tasks_run_ready()
    done = client.get(url, query)
    NuggetAssignment.objects.filter(judge=judge).exclude(label="support").update(label="support")
    after = _nugget_cells(collection, judge, run)
    stale = client.get(url, query)
    tasks_run_ready()
    fresh = client.get(url, query)

    assert 'data-status="pending"' in waiting.content.decode() and waiting.context["table"] is None
    assert also_waiting.status_code == 200 and ran == 1
    assert all(cell in done.content.decode() for cell in expected)
    assert set(after) != set(expected)
    assert 'id="report-earlier"' in stale.content.decode()
    assert all(cell in fresh.content.decode() for cell in after)
    # One stored evaluation serves every rank order: another order is answered without the worker.
    other = client.get(url, {**query, "order": "vital_score"})
    assert other.status_code == 200 and 'id="report-status"' not in other.content.decode()


def test_the_metrics_download_serves_the_stored_scores_when_current_and_is_never_stale(client, rag):
    collection, judge = rag
    client.force_login(OrganiserFactory())
    page = reverse("judging:nugget-scores-run", args=[collection.name, "run-b"])
    download = reverse("judging:nugget-scores-download", args=[collection.name, "metrics"])
    query = {"judge": judge.name}

    def expected() -> str:
        scores = nugget_scores(collection=collection, judge=judge)
        return nugget_scores_text([a for a in scores["answers"] if a["run_id"] == "run-b"])

    client.get(page, query)
    tasks_run_ready()
    with CaptureQueriesContext(connection) as stored:
        current = client.get(download, {**query, "run": "run-b"})
    NuggetAssignment.objects.filter(judge=judge).exclude(label="support").update(label="support")
    changed = client.get(download, {**query, "run": "run-b"})

    assert current.content.decode() != changed.content.decode()
    assert changed.content.decode() == expected()
    assert not any('FROM "annotation_nuggetassignment"' in q["sql"] for q in stored.captured_queries)


def test_the_evaluation_says_how_many_runs_it_has_scored_as_it_goes(views_collection):
    told = []

    evaluation_runs_compute(
        collection=views_collection,
        params={"judge": "nist", "rel": 2},
        progress=lambda done, total, word="": told.append((done, total, word)),
    )

    assert told == [(1, 2, "runs"), (2, 2, "runs")]
