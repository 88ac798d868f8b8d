"""Hybrid estimates of support and NtR measures, and the work sample_for_humans creates for them.

Synthetic collections whose truth is known: every answer sentence (or every response-nugget pair) has a
true label; a human judge gives it on some topics, a machine judge gives a noisy copy everywhere. The
estimates must equal ppi_py run on per-turn arrays computed here from those labels, not from Assay's
metrics; the samples must reach people through the existing support pages and crowd batches.
"""

import json
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse
from ppi_py import ppi_mean_pointestimate

from annotation.models import (
    Judge,
    NtrJudgment,
    Nugget,
    Response,
    ResponseSentence,
    SupportJudgment,
    TopicWork,
)
from crowd.aggregation.services import labels_aggregate
from crowd.answers.services import assignment_submit, worker_get_or_create
from crowd.models import BatchItem, CrowdCampaign
from judging.measures.hybrid.estimators import mean_interval
from judging.models import HumanSample
from tests.conftest import REPO
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

WEIGHT = {"FS": 1.0, "PS": 0.5, "NS": 0.0}
LABELS = list(WEIGHT)


def run(name, *args):
    out = StringIO()
    call_command(name, *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def scalar(value):
    return float(np.ravel(value)[0])


def ppi_reference(y, yhat, yhat_all, method, alpha=0.05):
    """(estimate, lo, hi): the estimate straight from ppi_py, the ends from the interval rule on these arrays
    (the rule itself is checked against scipy, statsmodels and ppi_py in test_hybrid_intervals)."""
    y, yhat, yhat_all = (np.asarray(v, dtype=float) for v in (y, yhat, yhat_all))
    if method == "classical":
        estimate = float(np.mean(y))
    else:
        lam = 1.0 if method == "ppi" else None
        estimate = scalar(ppi_mean_pointestimate(y, yhat, yhat_all, lam=lam))
    e = mean_interval(y=y, yhat=yhat, yhat_all=yhat_all, method=method, alpha=alpha)
    assert e.estimate == pytest.approx(estimate, abs=1e-12)
    return estimate, e.lo, e.hi


def assert_runs_match(data, expected):
    assert set(data["runs"]) == set(expected)
    for name, (estimate, lo, hi) in expected.items():
        row = data["runs"][name]
        assert row["estimate"] == pytest.approx(estimate, abs=1e-10)
        assert row["ci"] == pytest.approx([lo, hi], abs=1e-10)


# --- support -----------------------------------------------------------------------------------------

SUPPORT_TOPICS, SENTENCES = 24, 3
# Run quality: the probabilities of FS, PS, NS for a sentence's true label.
QUALITY = {"good": (0.7, 0.2, 0.1), "fair": (0.4, 0.3, 0.3), "poor": (0.15, 0.25, 0.6)}


class SupportWorld:
    """The true labels per (run, turn): one entry per sentence, None for a sentence citing nothing."""

    def __init__(self):
        self.truth: dict[tuple[str, str], list[str | None]] = {}
        self.machine: dict[tuple[str, str], list[str | None]] = {}
        self.human_turns: list[str] = []
        self.turns: list[str] = []

    def values(self, labels, measure):
        weights = [WEIGHT[label] for label in labels if label is not None]
        if measure == "weighted_precision":
            return sum(weights) / len(weights) if weights else 0.0
        return sum(weights) / len(labels)

    def arrays(self, run_name, measure, turns):
        y = [self.values(self.truth[(run_name, t)], measure) for t in turns]
        yhat = [self.values(self.machine[(run_name, t)], measure) for t in turns]
        yhat_all = [self.values(self.machine[(run_name, t)], measure) for t in self.turns]
        return y, yhat, yhat_all


@pytest.fixture
def support():
    """24 one-turn topics, 3 runs of 3-sentence answers (the poor run leaves its last sentence uncited);
    nist labels half of the topics with the true labels, gpt labels everything, one label in three wrong
    and biased towards Full support."""
    rng = np.random.default_rng(11)
    collection = CollectionFactory(name="rag")
    nist = JudgeFactory(name="nist-support")
    gpt = JudgeFactory(name="gpt", kind=Judge.Kind.LLM)
    world = SupportWorld()
    runs = {q: RunFactory(collection=collection, name=f"run-{q}") for q in QUALITY}
    rows = []
    human_topics = set(rng.choice(SUPPORT_TOPICS, SUPPORT_TOPICS // 2, replace=False).tolist())
    for t in range(SUPPORT_TOPICS):
        turn = TurnFactory(topic=TopicFactory(collection=collection, number=f"2024-{t + 1}"), position=1)
        world.turns.append(turn.turn_id)
        if t in human_topics:
            world.human_turns.append(turn.turn_id)
        for quality, run_obj in runs.items():
            refs = [f"p{t}-{quality}-{i}" for i in range(SENTENCES)]
            response = Response.objects.create(run=run_obj, turn=turn, rank=1, text="...", references=refs)
            truth, machine = [], []
            for i in range(SENTENCES):
                cited = not (quality == "poor" and i == SENTENCES - 1)
                sentence = ResponseSentence.objects.create(
                    response=response, index=i, text=f"Sentence {i}.", citations=[refs[i]] if cited else []
                )
                if not cited:
                    truth.append(None)
                    machine.append(None)
                    continue
                label = LABELS[rng.choice(3, p=QUALITY[quality])]
                noisy = label if rng.random() > 1 / 3 else LABELS[rng.choice(3, p=(0.6, 0.3, 0.1))]
                truth.append(label)
                machine.append(noisy)
                rows.append(SupportJudgment(judge=gpt, sentence=sentence, passage_id=refs[i], label=noisy))
                if t in human_topics:
                    rows.append(
                        SupportJudgment(judge=nist, sentence=sentence, passage_id=refs[i], label=label)
                    )
            world.truth[(run_obj.name, turn.turn_id)] = truth
            world.machine[(run_obj.name, turn.turn_id)] = machine
    SupportJudgment.objects.bulk_create(rows)
    return world


SUPPORT = ["--collection", "rag", "--task", "support", "--machine-judge", "gpt"]


@pytest.mark.parametrize("measure", ["weighted_precision", "weighted_recall"])
@pytest.mark.parametrize("method", ["classical", "ppi", "ppi++"])
def test_support_estimates_equal_ppi_py_on_the_per_turn_arrays(support, measure, method):
    data = json.loads(
        run(
            "estimate",
            *SUPPORT,
            "--human-judge",
            "nist-support",
            "--measure",
            measure,
            "--method",
            method,
            "--format",
            "json",
        )
    )

    expected = {
        name: ppi_reference(*support.arrays(name, measure, support.human_turns), method)
        for name in ("run-good", "run-fair", "run-poor")
    }
    assert_runs_match(data, expected)
    assert all(r["n_human"] == SUPPORT_TOPICS // 2 for r in data["runs"].values())
    assert all(r["n_machine"] == SUPPORT_TOPICS for r in data["runs"].values())
    assert data["ranking"][0]["run"] == "run-good"


def _label_through_the_support_pages(client, user, world):
    """The assessor opens each of their assignments and posts the true label of every unit in turn."""
    client.force_login(user)
    assert client.get(reverse("support-assignments")).status_code == 200
    posted = 0
    for assignment in TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT, user=user).select_related(
        "topic"
    ):
        position = 1
        while True:
            url = reverse("support-unit", args=[assignment.id, position])
            page = client.get(url)
            if page.status_code == 404:
                break
            unit = page.context["unit"]
            sentence = unit.sentence
            label = world.truth[(sentence.response.run.name, sentence.response.turn.turn_id)][sentence.index]
            response = client.post(url, {"label": label, "time_spent_ms": 1000})
            assert response.status_code == 302
            posted += 1
            position += 1
    client.logout()
    return posted


def test_a_support_sample_becomes_assignments_whose_labels_two_assessors_give_on_the_pages(client, support):
    ann, bea = UserFactory(username="ann"), UserFactory(username="bea")
    data = json.loads(
        run(
            "sample_for_humans",
            *SUPPORT,
            "--budget",
            "4",
            "--seed",
            "5",
            "--name",
            "support-pilot",
            "--assessors",
            "ann",
            "bea",
            "--format",
            "json",
        )
    )

    assert (data["drawn"], data["population"]) == (4, SUPPORT_TOPICS)
    assert all(u["inclusion_probability"] == pytest.approx(4 / SUPPORT_TOPICS) for u in data["units"])
    drawn = sorted(u["key"] for u in data["units"])
    assignments = TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT, topic__collection__name="rag")
    assert sorted(a.topic.turns.get().turn_id for a in assignments) == drawn
    assert {a.user.username for a in assignments} == {"ann", "bea"}
    assert {a.condition for a in assignments} == {"scratch"}
    assert (
        "support assignments of 4 topics (4 drawn turns, scratch)"
        in HumanSample.objects.get(name="support-pilot").work
    )

    units = _label_through_the_support_pages(client, ann, support) + _label_through_the_support_pages(
        client, bea, support
    )
    assert units == 4 * (3 * SENTENCES - 1)  # the poor run's uncited sentence is never a unit

    estimate = json.loads(
        run(
            "estimate",
            *SUPPORT,
            "--human-judge",
            "assessor:ann",
            "--human-judge",
            "assessor:bea",
            "--sample",
            "support-pilot",
            "--measure",
            "weighted_precision",
            "--format",
            "json",
        )
    )
    expected = {
        name: ppi_reference(*support.arrays(name, "weighted_precision", drawn), "ppi++")
        for name in ("run-good", "run-fair", "run-poor")
    }
    assert_runs_match(estimate, expected)
    assert all(r["n_human"] == 4 for r in estimate["runs"].values())
    assert "sample support-pilot" in estimate["design"]
    assert any("2 judges (assessor:ann, assessor:bea) merged" in n for n in estimate["notes"])


def test_a_support_sample_does_not_switch_an_assessors_condition(support):
    from django.core.management.base import CommandError

    from annotation.models import Topic
    from annotation.support.services import support_assignment_set

    ann = UserFactory(username="ann")
    gpt = Judge.objects.get(name="gpt")
    for topic in Topic.objects.filter(collection__name="rag"):
        support_assignment_set(topic=topic, user=ann, condition="post-edit", machine_judge=gpt)

    with pytest.raises(CommandError, match="ann already has topic .* in condition post-edit"):
        run(
            "sample_for_humans", *SUPPORT, "--budget", "2", "--seed", "1", "--name", "s", "--assessors", "ann"
        )
    assert set(TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT).values_list("condition", flat=True)) == {
        "post-edit"
    }
    assert not HumanSample.objects.filter(name="s").exists()


def test_two_human_judges_on_the_same_unit_count_as_their_mean(support):
    # A second human judge labels the first human topic, all Full support, so each run's value there is
    # the mean of nist's and theirs.
    other = JudgeFactory(name="second-opinion")
    turn = support.human_turns[0]
    SupportJudgment.objects.bulk_create(
        SupportJudgment(judge=other, sentence=s, passage_id=s.citations[0], label="FS")
        for s in ResponseSentence.objects.filter(
            response__turn__turn_id=turn, response__turn__collection__name="rag"
        )
        if s.citations
    )
    args = [*SUPPORT, "--measure", "weighted_precision", "--method", "classical", "--format", "json"]
    data = json.loads(
        run("estimate", *args, "--human-judge", "nist-support", "--human-judge", "second-opinion")
    )

    for name, row in data["runs"].items():
        y, _yhat, _all = support.arrays(name, "weighted_precision", support.human_turns)
        y[0] = (y[0] + 1.0) / 2
        assert row["estimate"] == pytest.approx(np.mean(y))
    assert any("1 unit has values from more than one human judge" in n for n in data["notes"])


# --- NtR ---------------------------------------------------------------------------------------------

NTR_TOPICS, NUGGETS = 20, 3
RECALL = {"strong": 0.75, "medium": 0.5, "weak": 0.25}


class NtrWorld:
    def __init__(self):
        self.truth: dict[tuple[int, int], bool] = {}  # (response id, nugget id) -> matched
        self.machine: dict[tuple[int, int], bool] = {}
        self.pairs: dict[tuple[str, str], list[tuple[int, int]]] = {}  # (run, turn) -> its pairs
        self.turns: list[str] = []
        self.human_turns: list[str] = []

    def recall(self, labels, run_name, turn):
        pairs = self.pairs[(run_name, turn)]
        return sum(labels[p] for p in pairs) / len(pairs)

    def arrays(self, run_name, turns):
        y = [self.recall(self.truth, run_name, t) for t in turns]
        yhat = [self.recall(self.machine, run_name, t) for t in turns]
        yhat_all = [self.recall(self.machine, run_name, t) for t in self.turns]
        return y, yhat, yhat_all


@pytest.fixture
def ntr():
    """20 one-turn topics with 3 gold nuggets each, 3 runs' responses; nist-ntr labels half the turns
    truly, the LLM everything with one label in four flipped, leaning towards a match."""
    rng = np.random.default_rng(21)
    collection = CollectionFactory(name="ikat")
    gold = JudgeFactory(name="gold")
    nist = JudgeFactory(name="nist-ntr")
    llm = JudgeFactory(name="llm-ntr", kind=Judge.Kind.LLM)
    world = NtrWorld()
    runs = {q: RunFactory(collection=collection, name=f"run-{q}") for q in RECALL}
    rows = []
    human_topics = set(rng.choice(NTR_TOPICS, NTR_TOPICS // 2, replace=False).tolist())
    for t in range(NTR_TOPICS):
        turn = TurnFactory(topic=TopicFactory(collection=collection, number=str(t + 1)), position=1)
        world.turns.append(turn.turn_id)
        if t in human_topics:
            world.human_turns.append(turn.turn_id)
        nuggets = [
            Nugget.objects.create(judge=gold, turn=turn, key=f"[{k}]", text=f"Fact {k} of topic {t}.")
            for k in range(NUGGETS)
        ]
        for quality, run_obj in runs.items():
            response = Response.objects.create(run=run_obj, turn=turn, rank=1, text=f"Answer {t} {quality}.")
            pairs = []
            for nugget in nuggets:
                pair = (response.id, nugget.id)
                matched = bool(rng.random() < RECALL[quality])
                flip = rng.random() < 0.25
                said = (rng.random() < 0.7) if flip else matched
                world.truth[pair], world.machine[pair] = matched, said
                pairs.append(pair)
                rows.append(NtrJudgment(judge=llm, response=response, nugget=nugget, matched=said))
                if t in human_topics:
                    rows.append(NtrJudgment(judge=nist, response=response, nugget=nugget, matched=matched))
            world.pairs[(run_obj.name, turn.turn_id)] = pairs
    NtrJudgment.objects.bulk_create(rows)
    return world


NTR = ["--collection", "ikat", "--task", "ntr", "--machine-judge", "llm-ntr", "--gold-judge", "gold"]


@pytest.mark.parametrize("method", ["classical", "ppi", "ppi++"])
def test_ntr_recall_estimates_equal_ppi_py_on_the_per_turn_arrays(ntr, method):
    data = json.loads(
        run("estimate", *NTR, "--human-judge", "nist-ntr", "--method", method, "--format", "json")
    )

    expected = {name: ppi_reference(*ntr.arrays(name, ntr.human_turns), method) for name in ntr_runs()}
    assert_runs_match(data, expected)
    assert all(r["n_human"] == NTR_TOPICS // 2 for r in data["runs"].values())


def ntr_runs():
    return [f"run-{q}" for q in RECALL]


def test_an_ntr_sample_becomes_a_crowd_campaign_whose_majority_labels_answer_the_estimate(ntr):
    data = json.loads(
        run(
            "sample_for_humans",
            *NTR,
            "--budget",
            "5",
            "--seed",
            "3",
            "--name",
            "ntr-pilot",
            "--generate-tests",
            "4",
            "--format",
            "json",
        )
    )

    assert (data["drawn"], data["population"]) == (5, NTR_TOPICS)
    assert all(u["inclusion_probability"] == pytest.approx(5 / NTR_TOPICS) for u in data["units"])
    drawn = sorted(u["key"] for u in data["units"])
    campaign = CrowdCampaign.objects.get(name="ntr-pilot")
    assert campaign.label_judge.name == "crowd-majority" and campaign.nugget_judge.name == "gold"
    items = BatchItem.objects.filter(batch__campaign=campaign)
    pairs = items.filter(test_question__isnull=True)
    assert pairs.count() == 5 * len(RECALL) * NUGGETS
    assert sorted({i.response.turn.turn_id for i in pairs}) == drawn
    assert items.filter(test_question__isnull=False).count() == campaign.batches.count()
    assert "labels as crowd-majority" in data["work"]

    # One platform worker answers every batch truly (test questions included); the majority is theirs.
    worker = worker_get_or_create(worker_id="w1")
    for batch in campaign.batches.all():
        answers = {
            item.position: item.test_question.answer
            if item.test_question_id
            else ntr.truth[(item.response_id, item.nugget_id)]
            for item in batch.items.select_related("test_question")
        }
        assignment_submit(batch=batch, worker=worker, answers=answers)
    assert labels_aggregate(campaign=campaign).labelled == pairs.count()

    estimate = json.loads(
        run(
            "estimate",
            *NTR,
            "--human-judge",
            "crowd-majority",
            "--sample",
            "ntr-pilot",
            "--method",
            "ppi",
            "--format",
            "json",
        )
    )
    expected = {name: ppi_reference(*ntr.arrays(name, drawn), "ppi") for name in ntr_runs()}
    assert_runs_match(estimate, expected)
    assert "sample ntr-pilot" in estimate["design"]


def test_an_ntr_sample_without_test_questions_names_the_remedy_and_keeps_nothing(ntr):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="test question pool needs at least one yes and one no"):
        run("sample_for_humans", *NTR, "--budget", "3", "--seed", "1", "--name", "no-tests")
    assert not HumanSample.objects.filter(name="no-tests").exists()
    assert not CrowdCampaign.objects.filter(name="no-tests").exists()


def test_crowd_imports_nothing_from_judging():
    # judging calls crowd's compose service for NtR samples; the reverse import would make a cycle.
    import ast

    crowd = REPO / "crowd"
    offenders = []
    for path in crowd.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module]
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
                else []
            )
            offenders += [f"{path.name}: {m}" for m in modules if m.split(".")[0] == "judging"]
    assert offenders == []
