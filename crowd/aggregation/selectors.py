"""Reads for nugget-support campaigns: the confirmed answers, and the aggregation models fitted to them.

Four ways to turn three-way crowd answers into one label per (answer, nugget) pair:

- `majority`: the most frequent answer, as CONE-RAG does; a tie (1-1-1, or 2-2 of four) gives no label.
- `ds`: Dawid & Skene (1979), a confusion matrix per worker learnt by EM with the true labels.
- `mace`: Hovy et al. (2013), each worker answers right with their competence and otherwise at random
  ("spams") from a distribution of their own.
- `glad`: Whitehill et al. (2009), a worker's ability (alpha) against a question's difficulty.

The three models come from crowd-kit (`crowdkit.aggregation`), imported inside `_fit_models` only: it
brings pandas and scipy, which no page or command but aggregation needs. Nearly all of a fit's time is
crowd-kit's own (pandas work per EM iteration: MACE's for each of its restarts, GLAD's in the optimiser
of each M-step; building our DataFrame is milliseconds), so a fit runs only the models asked for, with
the restarts and iterations of the CROWD_DS_*, CROWD_MACE_* and CROWD_GLAD_* settings. Every model is fitted to every
confirmed answer (the provider confirmed it and the assignment is not rejected), test questions included as
ordinary questions and workers who failed one too: the models learn whom to trust from the answers
themselves, and the test questions score each method afterwards. A test question that appears in several
batches is one question to the models.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from core.jobs import job_interrupted
from crowd.campaigns.models import LABEL_JUDGE_BY_PROVIDER, NUGGET_LABEL_JUDGE_BY_PROVIDER
from crowd.models import VOTING_STATUSES, BatchItem, CrowdAnswer, CrowdCampaign, CrowdFitJob

METHODS = ("majority", "ds", "mace", "glad")
MODEL_METHODS = ("ds", "mace", "glad")
# What the reliability of each model is, as the campaign page labels it.
RELIABILITY_MEANING = {
    "ds": "Dawid-Skene: chance of a right answer, the confusion-matrix diagonal weighted by the label priors",
    "mace": "MACE: competence, the chance the worker is not spamming",
    "glad": "GLAD: ability alpha (0 is chance; higher is better; negative is adversarial)",
}


def judge_name_of_method(label_judge: str, method: str) -> str:
    """The judge of `method`'s labels beside the campaign judge `label_judge`: the majority's is that
    judge itself, each model's is named after it."""
    return label_judge if method == "majority" else f"{label_judge}-{method}"


def aggregate_judge_names() -> list[str]:
    """The crowd judges campaigns write their aggregates to unless they name their own: each provider's
    majority judge and, beside a nugget-support campaign's, each model's. Kept for them (crowd/apps.py)."""
    names = list(LABEL_JUDGE_BY_PROVIDER.values())
    for label_judge in NUGGET_LABEL_JUDGE_BY_PROVIDER.values():
        names += [judge_name_of_method(label_judge, method) for method in METHODS]
    return names


@dataclass(frozen=True)
class CountedAnswer:
    task: str
    worker: str
    label: str
    passed_tests: bool
    item_id: int
    response_id: int | None
    nugget_id: int | None
    gold: str


@dataclass
class CampaignFit:
    """Each method's label per task, and what the campaign page shows of the fit (`report`)."""

    answers: list[CountedAnswer]
    labels: dict[str, dict[str, str]] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)


def pair_task(response_id: int, nugget_id: int) -> str:
    return f"pair:{response_id}:{nugget_id}"


def campaign_pair_keys(*, campaign: CrowdCampaign) -> list[tuple[int, int]]:
    """(answer id, nugget id) of every pair in the campaign's batches, in batch order."""
    rows = (
        BatchItem.objects.filter(batch__campaign=campaign, test_question__isnull=True)
        .order_by("batch__index", "position")
        .values_list("response_id", "nugget_id")
    )
    return [(int(r), int(n)) for r, n in rows if r is not None and n is not None]


def counted_answers(*, campaign: CrowdCampaign) -> list[CountedAnswer]:
    """Every confirmed answer of the campaign, one query, in a stable order."""
    rows = (
        CrowdAnswer.objects.filter(
            item__batch__campaign=campaign, assignment__status__in=VOTING_STATUSES, support__gt=""
        )
        .order_by("assignment__worker__worker_id", "item_id")
        .values_list(
            "item_id",
            "item__test_question_id",
            "item__test_question__support",
            "item__response_id",
            "item__nugget_id",
            "assignment__worker__worker_id",
            "assignment__passed_tests",
            "support",
        )
    )
    answers = []
    for item_id, test_id, gold, response_id, nugget_id, worker, passed, label in rows:
        task = f"test:{test_id}" if test_id is not None else pair_task(response_id, nugget_id)
        answers.append(
            CountedAnswer(
                task=task,
                worker=worker,
                label=label,
                passed_tests=bool(passed),
                item_id=item_id,
                response_id=response_id,
                nugget_id=nugget_id,
                gold=gold or "",
            )
        )
    return answers


def majority_labels(answers: list[CountedAnswer]) -> dict[str, str]:
    """The most frequent answer per task; tasks whose top answers tie are left out."""
    tallies: dict[str, Counter[str]] = defaultdict(Counter)
    for answer in answers:
        tallies[answer.task][answer.label] += 1
    labels = {}
    for task, tally in tallies.items():
        (top, n), *rest = tally.most_common()
        if not rest or rest[0][1] < n:
            labels[task] = top
    return labels


def _fit_models(
    answers: list[CountedAnswer], *, methods: tuple[str, ...], seed: int
) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, float]]]:
    """Labels per task and reliability per worker from each crowd-kit model in `methods`."""
    import pandas as pd
    from crowdkit.aggregation import GLAD, MACE, DawidSkene

    frame = pd.DataFrame(
        {
            "task": [a.task for a in answers],
            "worker": [a.worker for a in answers],
            "label": [a.label for a in answers],
        }
    )
    labels: dict[str, dict[str, str]] = {}
    reliability: dict[str, dict[str, float]] = {}

    if "ds" in methods:
        ds = DawidSkene(n_iter=settings.CROWD_DS_ITERATIONS).fit(frame)
        labels["ds"] = _labels(ds.labels_)
        reliability["ds"] = ds_reliability(ds.errors_, ds.priors_)

    if "mace" in methods:
        mace = MACE(
            n_restarts=settings.CROWD_MACE_RESTARTS, n_iter=settings.CROWD_MACE_ITERATIONS, random_state=seed
        ).fit(frame)
        labels["mace"] = _labels(mace.labels_)
        _, workers = pd.factorize(frame["worker"])
        # spamming_[:, 1] is the chance of not spamming: crowd-kit's E-step gives it to the true label.
        reliability["mace"] = {str(w): float(mace.spamming_[i, 1]) for i, w in enumerate(workers)}

    if "glad" in methods:
        glad = GLAD(
            n_iter=settings.CROWD_GLAD_ITERATIONS, m_step_max_iter=settings.CROWD_GLAD_M_STEP_ITERATIONS
        ).fit(frame)
        labels["glad"] = _labels(glad.labels_)
        reliability["glad"] = {str(w): float(a) for w, a in glad.alphas_.items()}
    return labels, reliability


def _labels(series: Any) -> dict[str, str]:
    return {str(task): str(label) for task, label in series.items()}


def ds_reliability(errors: Any, priors: Any) -> dict[str, float]:
    """Each worker's chance of a right answer under Dawid-Skene: sum over true labels l of
    prior(l) x P(answers l | true l), the diagonal of their confusion matrix weighted by the priors."""
    result: dict[str, float] = {}
    for worker in errors.index.get_level_values(0).unique():
        matrix = errors.loc[worker]
        result[str(worker)] = float(
            sum(priors[label] * matrix.loc[label, label] for label in priors.index if label in matrix.index)
        )
    return result


def _score(labels: dict[str, str], gold: dict[str, str]) -> dict[str, Any]:
    correct = sum(labels.get(task) == expected for task, expected in gold.items())
    unresolved = sum(task not in labels for task in gold)
    return {
        "correct": correct,
        "scored": len(gold),
        "unresolved": unresolved,
        "accuracy": correct / len(gold) if gold else None,
    }


def campaign_fit(*, campaign: CrowdCampaign, methods: tuple[str, ...] = METHODS) -> CampaignFit:
    """Fit `methods` (majority, a count, always) to the campaign's confirmed answers and score each on the
    test questions.

    Majority here counts every confirmed answer, as the models do: the written majority (CONE-RAG's)
    leaves out workers who failed a test question, so on the test questions it would be right by
    construction. A tie is scored as wrong (no label). Workers' test accuracy counts each of their
    answers to a test question.
    """
    answers = counted_answers(campaign=campaign)
    fit = CampaignFit(answers=answers)
    gold = {a.task: a.gold for a in answers if a.task.startswith("test:")}
    fit.labels["majority"] = majority_labels(answers)
    reliability: dict[str, dict[str, float]] = {}
    wanted = tuple(method for method in MODEL_METHODS if method in methods)
    if answers and wanted:
        model_labels, reliability = _fit_models(answers, methods=wanted, seed=campaign.seed)
        fit.labels.update(model_labels)
    per_worker: dict[str, Counter[str]] = defaultdict(Counter)
    for a in answers:
        per_worker[a.worker]["answers"] += 1
        if a.gold:
            per_worker[a.worker]["tests"] += 1
            per_worker[a.worker]["right"] += a.label == a.gold
    fit.report = {
        "answers": len(answers),
        "tasks": len({a.task for a in answers}),
        "tests": len(gold),
        "methods": {
            method: _score(fit.labels.get(method, {}), gold) for method in METHODS if method in fit.labels
        },
        "workers": [
            {
                "worker": worker,
                "answers": counts["answers"],
                "tests": counts["tests"],
                "test_accuracy": counts["right"] / counts["tests"] if counts["tests"] else None,
                **{method: reliability.get(method, {}).get(worker) for method in MODEL_METHODS},
            }
            for worker, counts in sorted(per_worker.items())
        ],
    }
    return fit


def campaign_fit_report(*, campaign: CrowdCampaign) -> dict[str, Any]:
    """What the last aggregation stored of its fit, with each model's reliability explained, for the
    campaign page; the number of confirmed answers now tells whether answers came in since."""
    report = dict(campaign.fit_report or {})
    if not report:
        return {}
    report["answers_now"] = CrowdAnswer.objects.filter(
        item__batch__campaign=campaign, assignment__status__in=VOTING_STATUSES, support__gt=""
    ).count()
    report["meaning"] = RELIABILITY_MEANING
    return report


@dataclass(frozen=True)
class FitJobState:
    job: CrowdFitJob
    # Unfinished, yet its task no longer waits or runs: its worker died.
    interrupted: bool


def fit_job_state(*, campaign: CrowdCampaign) -> FitJobState | None:
    """The campaign's latest aggregation job and whether it was interrupted (two queries), or None."""
    job = CrowdFitJob.objects.filter(campaign=campaign).first()
    if job is None:
        return None
    return FitJobState(job=job, interrupted=job_interrupted(job))
