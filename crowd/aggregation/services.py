"""Writes of aggregated crowd labels: a nugget-matching campaign's majority vote into NtR judgments
(`labels_aggregate`), a nugget-support campaign's three-way answers into NuggetAssignments."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation.judge_access import ImportJudgeRefused
from annotation.labels.writer import Written
from annotation.models import Condition, Judge
from annotation.nuggets.writer import NtrRow, ntr_judgments_upsert
from annotation.rag_nuggets.writer import AssignmentRow, nugget_assignments_upsert
from annotation.services import judge_get_or_create
from core.jobs import job_end, job_start
from core.wording import plural
from crowd.aggregation.selectors import (
    METHODS,
    CampaignFit,
    campaign_fit,
    campaign_pair_keys,
    judge_name_of_method,
    majority_labels,
    pair_task,
)
from crowd.errors import CrowdError
from crowd.models import VOTING_STATUSES, BatchItem, CrowdAnswer, CrowdAssignment, CrowdCampaign, CrowdFitJob

log = logging.getLogger(__name__)

METHOD_DESCRIPTIONS = {
    "majority": "Majority vote of crowd workers who passed the batch's test questions; a tie gives no label.",
    "ds": "Dawid-Skene (1979) aggregate of every confirmed crowd answer, via crowd-kit.",
    "mace": "MACE (Hovy et al. 2013) aggregate of every confirmed crowd answer, via crowd-kit.",
    "glad": "GLAD (Whitehill et al. 2009) aggregate of every confirmed crowd answer, via crowd-kit.",
}


@dataclass
class NuggetAggregateResult:
    method: str
    judge: Judge
    labels: dict[str, int] = field(default_factory=dict)
    unresolved: list[tuple[int, int]] = field(default_factory=list)
    written: Written = field(default_factory=Written)


def method_judge_name(*, campaign: CrowdCampaign, method: str) -> str:
    """The majority is the campaign's own crowd judge; each model gets its own, named after it, so the
    methods can be compared with each other and with assessors on the agreement page."""
    return judge_name_of_method(campaign.label_judge.name, method)


def _method_judge(campaign: CrowdCampaign, method: str) -> Judge:
    name = method_judge_name(campaign=campaign, method=method)
    try:
        judge = judge_get_or_create(name=name, kind=Judge.Kind.CROWD, description=METHOD_DESCRIPTIONS[method])
    except ImportJudgeRefused as exc:
        raise CrowdError(str(exc)) from None
    if judge.kind != Judge.Kind.CROWD:
        raise CrowdError(f"judge {name!r} exists and is not a crowd judge")
    return judge


def nugget_labels_aggregate(
    *, campaign: CrowdCampaign, method: str, min_votes: int = 1, fit: CampaignFit | None = None
) -> NuggetAggregateResult:
    """Label every (answer, nugget) pair of a nugget-support campaign by `method`.

    majority follows CONE-RAG: only workers who passed their batch's test questions vote, and a tie leaves
    the pair without a label. ds, mace and glad are fitted to every confirmed answer (see
    crowd/aggregation/selectors.py). A pair with fewer than `min_votes` counted answers gets no label;
    a label that a pair no longer gets is removed, so aggregating twice changes nothing. Workers saw no
    machine label, so the labels are stored in the scratch condition. Only `method` is fitted (majority
    fits no model); `campaign_fit_store` fits all four for the campaign page. Fitting runs before the write
    transaction opens: it takes seconds and needs no lock. `fit`: one fitted already, with `method` among its
    methods (the fit job fits once for the labels and the comparison).
    """
    if campaign.kind != CrowdCampaign.Kind.NUGGET_SUPPORT:
        raise CrowdError(f"campaign {campaign.name} asks yes/no questions: aggregate it by majority vote")
    if method not in METHODS:
        raise CrowdError(f"method {method!r} is not one of {', '.join(METHODS)}")
    if fit is None:
        fit = campaign_fit(campaign=campaign, methods=(method,))
    if method == "majority":
        voters = [a for a in fit.answers if a.passed_tests]
        labels = majority_labels(voters)
    else:
        voters = fit.answers
        # Before any worker answered there is nothing to fit: every pair is unresolved, as with majority.
        labels = fit.labels.get(method, {})
    votes: dict[str, int] = {}
    for a in voters:
        votes[a.task] = votes.get(a.task, 0) + 1
    result = NuggetAggregateResult(method=method, judge=_method_judge(campaign, method))
    rows: list[AssignmentRow] = []
    unresolved: list[tuple[int, int]] = []
    for response_id, nugget_id in campaign_pair_keys(campaign=campaign):
        task = pair_task(response_id, nugget_id)
        label = labels.get(task)
        if label is None or votes.get(task, 0) < min_votes:
            unresolved.append((response_id, nugget_id))
            continue
        rows.append(AssignmentRow(response_id=response_id, nugget_id=nugget_id, label=label))
        result.labels[label] = result.labels.get(label, 0) + 1
    result.unresolved = unresolved
    with transaction.atomic():
        result.written = nugget_assignments_upsert(
            judge=result.judge,
            collection=campaign.collection,
            rows=rows,
            condition=Condition.SCRATCH,
            remove=unresolved,
        )
    return result


def nugget_aggregate_summary(result: NuggetAggregateResult) -> str:
    """What an aggregation wrote, in one sentence, for the campaign page and the command."""
    counts = ", ".join(f"{n} {label}" for label, n in sorted(result.labels.items())) or "none"
    w = result.written
    return (
        f"{plural(sum(result.labels.values()), 'label')} as {result.judge.name} by {result.method} ({counts}), "
        f"{len(result.unresolved)} unresolved; {w.created} new, {w.updated} changed, {w.unchanged} unchanged, "
        f"{w.removed} removed"
    )


def campaign_fit_store(*, campaign: CrowdCampaign, fit: CampaignFit | None = None) -> dict[str, Any]:
    """Fit all four methods and store what the campaign page shows of them (`fit_report`): each method's
    accuracy on the test questions and each worker's reliability under each model. Apart from the
    aggregation itself, which fits only the method it writes, because fitting MACE and GLAD is most of
    the time and only this comparison needs them all. `fit`: one of all four fitted already."""
    if campaign.kind != CrowdCampaign.Kind.NUGGET_SUPPORT:
        raise CrowdError(f"campaign {campaign.name} asks yes/no questions: there are no models to compare")
    if fit is None:
        fit = campaign_fit(campaign=campaign)
    report = {**fit.report, "fitted_at": timezone.now().isoformat(timespec="seconds")}
    with transaction.atomic():
        CrowdCampaign.objects.filter(pk=campaign.pk).update(fit_report=report)
    return report


def fit_job_run(*, job_id: int) -> CrowdFitJob:
    """Run one aggregation job from the campaign page: write the asked method's labels, then refit the
    comparison of all four methods; the outcome (or the error) is recorded on the job. A job already
    finished is left as it is, so a task delivered twice aggregates once; run again after an
    interruption it writes the same labels (the write is idempotent). The four methods are fitted once,
    for the labels and the comparison both: fitting is nearly all of the job's time."""
    job = CrowdFitJob.objects.select_related("campaign__collection", "campaign__label_judge").get(pk=job_id)
    if job.finished:
        return job
    job_start(job=job)
    status, message = CrowdFitJob.Status.DONE, ""
    try:
        fit = _campaign_fit_checked(job.campaign, job.method)
        result = nugget_labels_aggregate(
            campaign=job.campaign, method=job.method, min_votes=job.min_votes, fit=fit
        )
        message = nugget_aggregate_summary(result)
        campaign_fit_store(campaign=job.campaign, fit=fit)
    except CrowdError as exc:
        status, message = CrowdFitJob.Status.FAILED, _after(message, str(exc))
    except Exception as exc:  # recorded on the job so the page can say it
        log.exception("crowd fit job %s failed", job.pk)
        status, message = CrowdFitJob.Status.FAILED, _after(message, f"{type(exc).__name__}: {exc}")
    job_end(job=job, status=status, message=message)
    job.refresh_from_db()
    return job


def _campaign_fit_checked(campaign: CrowdCampaign, method: str) -> CampaignFit | None:
    """All four methods fitted, after the checks the aggregation makes (the campaign's kind, the method);
    None when a model fails: the asked method is then fitted alone, so its labels are still written, and
    the comparison fails again where its failure is reported."""
    if campaign.kind != CrowdCampaign.Kind.NUGGET_SUPPORT:
        raise CrowdError(f"campaign {campaign.name} asks yes/no questions: aggregate it by majority vote")
    if method not in METHODS:
        raise CrowdError(f"method {method!r} is not one of {', '.join(METHODS)}")
    try:
        return campaign_fit(campaign=campaign)
    except Exception:
        log.warning("fitting every method of campaign %s failed; fitting %s alone", campaign.pk, method)
        return None


def _after(written: str, error: str) -> str:
    """A failure's message; when the labels were written before the comparison failed, it says so too."""
    return f"{written}; then the comparison of the methods failed: {error}" if written else error


@dataclass
class AggregateResult:
    labelled: int = 0
    yes: int = 0
    no: int = 0
    unresolved: list[BatchItem] = field(default_factory=list)
    discarded_assignments: int = 0


@transaction.atomic
def labels_aggregate(*, campaign: CrowdCampaign, min_votes: int = 1) -> AggregateResult:
    """Majority vote per pair over the workers who passed their batch's test questions.

    Answers of workers who failed are kept in CrowdAnswer but not counted, nor are provisional ones
    (posted to the HIT page, not confirmed by MTurk) or rejected assignments. A tie, or fewer than
    `min_votes` counted votes, leaves the pair unresolved: no label is stored (a stale one is removed)
    and the pair is reported so its batch can be given more assignments.
    """
    result = AggregateResult()
    result.discarded_assignments = (
        CrowdAssignment.objects.filter(batch__campaign=campaign, passed_tests=False).voting().count()
    )
    votes: dict[int, Counter[bool]] = {}
    counted = CrowdAnswer.objects.filter(
        item__batch__campaign=campaign,
        item__test_question__isnull=True,
        assignment__passed_tests=True,
        assignment__status__in=VOTING_STATUSES,
    ).values_list("item_id", "matched")
    for item_id, matched in counted:
        votes.setdefault(item_id, Counter())[matched] += 1
    judge = campaign.label_judge
    items = BatchItem.objects.filter(batch__campaign=campaign, test_question__isnull=True)
    # Whole rows are read only for the pairs left unresolved; at the study's size (11,600 pairs) labels
    # are written in bulk, so a campaign aggregates in a few queries rather than one per pair.
    labels: list[NtrRow] = []
    unlabelled: list[tuple[int, int]] = []
    unresolved: list[int] = []
    for item_id, response_id, nugget_id in items.order_by("batch__index", "position").values_list(
        "id", "response_id", "nugget_id"
    ):
        tally = votes.get(item_id, Counter())
        total = tally[True] + tally[False]
        if total < min_votes or tally[True] == tally[False]:
            unresolved.append(item_id)
            unlabelled.append((response_id, nugget_id))
            continue
        matched = tally[True] > tally[False]
        result.labelled += 1
        result.yes += matched
        result.no += not matched
        labels.append(NtrRow(response_id=response_id, nugget_id=nugget_id, matched=matched))
    ntr_judgments_upsert(judge=judge, rows=labels, remove=unlabelled)
    by_id = BatchItem.objects.select_related("batch", "response__run", "response__turn", "nugget").in_bulk(
        unresolved
    )
    result.unresolved = [by_id[item_id] for item_id in unresolved]
    return result
