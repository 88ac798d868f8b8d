"""An in-platform campaign as an external study of a participant panel (Prolific, or any panel that sends
participants to a study address with their ids in the query string and takes them back with a code).

The panel vouches for who a participant is, much as MTurk does for a worker, but its ids arrive in the
address, where anyone could type another; so a participant answers one batch of the campaign, a repeat
of the address (a reload, a second tab, a submit posted twice) shows the completion again and stores
nothing, and the completion code is only shown once the answers are stored.
"""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Count, F, Q, QuerySet
from django.utils import timezone

from crowd.answers.selectors import COUNTED_STATUSES
from crowd.answers.services import (
    Answer,
    AssignmentRepeated,
    BatchFull,
    assignment_submit,
    worker_get_or_create,
)
from crowd.errors import CrowdError
from crowd.models import CrowdAssignment, CrowdBatch, CrowdCampaign, CrowdStudy, CrowdWorker

# Panels' participant ids are short tokens (Prolific's are 24 hex digits); anything else is refused
# rather than stored as a worker id.
PARTICIPANT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}")
PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
HOLD_ATTEMPTS = 3


@transaction.atomic
def study_create(
    *,
    campaign: CrowdCampaign,
    panel: str = "prolific",
    worker_param: str = "PROLIFIC_PID",
    study_param: str = "STUDY_ID",
    session_param: str = "SESSION_ID",
    external_study_id: str = "",
    completion_code: str = "",
    completion_url: str = "",
) -> CrowdStudy:
    """A study address for an in-platform campaign; participants end with the code or at the URL."""
    if campaign.provider != CrowdCampaign.Provider.PLATFORM:
        raise CrowdError(f"campaign {campaign.name} is on {campaign.get_provider_display()}, not in-platform")
    if not completion_code.strip() and not completion_url.strip():
        raise CrowdError("a study needs a completion code or a completion URL to send participants back")
    for label, name in (("worker", worker_param), ("study", study_param), ("session", session_param)):
        if not PARAM_NAME.fullmatch(name):
            raise CrowdError(
                f"{label} parameter {name!r} must be a query parameter name such as PROLIFIC_PID"
            )
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,39}", panel):
        raise CrowdError(f"panel {panel!r} must be lower-case letters, digits and '-' (such as prolific)")
    return CrowdStudy.objects.create(
        campaign=campaign,
        key=secrets.token_urlsafe(18),
        panel=panel,
        worker_param=worker_param,
        study_param=study_param,
        session_param=session_param,
        external_study_id=external_study_id.strip(),
        completion_code=completion_code.strip(),
        completion_url=completion_url.strip(),
    )


@dataclass(frozen=True)
class Participant:
    worker: CrowdWorker
    study_id: str
    session_id: str


def study_participant(*, study: CrowdStudy, params: Mapping[str, str]) -> Participant:
    """The participant named by the panel's query parameters (CrowdError saying which one is wrong)."""
    pid = (params.get(study.worker_param) or "").strip()
    if not pid:
        raise CrowdError(f"this study address needs your participant id ({study.worker_param})")
    if not PARTICIPANT_ID.fullmatch(pid):
        raise CrowdError(f"{study.worker_param} {pid[:40]!r} is not a participant id")
    study_id = (params.get(study.study_param) or "").strip()
    if study.external_study_id and study_id != study.external_study_id:
        raise CrowdError(f"{study.study_param} {study_id[:40]!r} is not this study's id")
    worker = worker_get_or_create(worker_id=f"{study.panel}:{pid}")
    if worker.blocked:
        raise CrowdError("you can no longer take part in this study")
    return Participant(
        worker=worker, study_id=study_id, session_id=(params.get(study.session_param) or "")[:128]
    )


def study_done(*, study: CrowdStudy, worker: CrowdWorker) -> bool:
    """Whether the participant has a confirmed answer to a batch of the study's campaign."""
    return CrowdAssignment.objects.filter(batch__campaign=study.campaign, worker=worker).voting().exists()


def _hold_since(campaign: CrowdCampaign) -> datetime:
    """Holds younger than the campaign's work time (its HIT duration) keep their place."""
    return timezone.now() - timedelta(seconds=campaign.duration_seconds)


def study_batch_held(*, study: CrowdStudy, worker: CrowdWorker) -> CrowdBatch | None:
    """The open batch whose place this participant holds now, if any."""
    hold = (
        CrowdAssignment.objects.provisional()
        .filter(
            batch__campaign=study.campaign,
            batch__status=CrowdBatch.Status.OPEN,
            worker=worker,
            accept_time__gte=_hold_since(study.campaign),
        )
        .select_related("batch__campaign")
        .first()
    )
    return hold.batch if hold is not None else None


def _batches_with_room(study: CrowdStudy, worker: CrowdWorker, since: datetime) -> QuerySet[CrowdBatch]:
    others_holding = Q(
        assignments__status=CrowdAssignment.Status.ACCEPTED, assignments__accept_time__gte=since
    ) & ~Q(assignments__worker=worker)
    return (
        CrowdBatch.objects.filter(campaign=study.campaign, status=CrowdBatch.Status.OPEN)
        .exclude(
            id__in=CrowdAssignment.objects.filter(worker=worker)
            .exclude(status=CrowdAssignment.Status.ACCEPTED)
            .values("batch_id")
        )
        .annotate(
            answered=Count("assignments", filter=Q(assignments__status__in=COUNTED_STATUSES)),
            held=Count("assignments", filter=others_holding),
        )
        .annotate(taken=F("answered") + F("held"))
        .filter(taken__lt=F("max_assignments"))
    )


@transaction.atomic
def study_batch_hold(*, study: CrowdStudy, worker: CrowdWorker) -> CrowdBatch | None:
    """The batch a participant answers, with a place held for them while they work; None when every
    batch has the answers it needs.

    Participants fill the batch nearest to complete before the next one starts, so a panel smaller than
    the campaign's places still gives whole batches their majority instead of one vote to every batch.
    A participant who opens the study holds one place for the campaign's work time (MTurk's accept does
    the same), so participants arriving together are packed into different places rather than racing for
    the last one; a reload keeps the batch held.
    """
    held = study_batch_held(study=study, worker=worker)
    if held is not None:
        return held
    since = _hold_since(study.campaign)
    # On PostgreSQL the chosen batch is locked and counted again: another participant may have taken its
    # last place between the choice and the lock.
    for _ in range(HOLD_ATTEMPTS):
        choice = _batches_with_room(study, worker, since).order_by("-taken", "index").first()
        if choice is None:
            return None
        batch = CrowdBatch.objects.select_for_update().select_related("campaign").get(id=choice.id)
        if not _batches_with_room(study, worker, since).filter(id=batch.id).exists():
            continue
        CrowdAssignment.objects.provisional().filter(batch__campaign=study.campaign, worker=worker).exclude(
            batch=batch
        ).delete()
        CrowdAssignment.objects.update_or_create(
            batch=batch,
            worker=worker,
            defaults={
                "status": CrowdAssignment.Status.ACCEPTED,
                "accept_time": timezone.now(),
                "submit_time": None,
                "passed_tests": None,
            },
            create_defaults={
                "assignment_id": f"hold-{uuid.uuid4().hex}",
                "status": CrowdAssignment.Status.ACCEPTED,
                "accept_time": timezone.now(),
            },
        )
        return batch
    return None


class StudyBatchFilled(CrowdError):
    """The batch got its last answer from someone else while this participant worked on it."""


def study_submit(
    *,
    study: CrowdStudy,
    participant: Participant,
    batch: CrowdBatch,
    answers: Mapping[int, Answer],
    times_ms: Mapping[int, int] | None = None,
) -> CrowdAssignment | None:
    """Store a participant's answers to one batch of the study; None when they had already answered
    (the repeat is not stored). StudyBatchFilled when the batch filled up meanwhile; the participant
    is done with the study either way, so any place they hold is given up."""
    try:
        return _study_submit(
            study=study, participant=participant, batch=batch, answers=answers, times_ms=times_ms
        )
    except StudyBatchFilled:
        _holds_release(study=study, worker=participant.worker)
        raise


def _holds_release(*, study: CrowdStudy, worker: CrowdWorker) -> None:
    CrowdAssignment.objects.provisional().filter(batch__campaign=study.campaign, worker=worker).delete()


@transaction.atomic
def _study_submit(
    *,
    study: CrowdStudy,
    participant: Participant,
    batch: CrowdBatch,
    answers: Mapping[int, Answer],
    times_ms: Mapping[int, int] | None,
) -> CrowdAssignment | None:
    if batch.campaign_id != study.campaign_id or batch.status != CrowdBatch.Status.OPEN:
        raise CrowdError(f"batch {batch.index} is not open in this study")
    # The participant's row is locked so two tabs posting different batches at once store one of them.
    CrowdWorker.objects.select_for_update().filter(id=participant.worker.id).first()
    if study_done(study=study, worker=participant.worker):
        return None
    held = CrowdAssignment.objects.provisional().filter(batch=batch, worker=participant.worker).first()
    try:
        stored = assignment_submit(
            batch=batch,
            worker=participant.worker,
            answers=answers,
            times_ms=times_ms,
            # The hold started when the participant opened the batch: their work time runs from there.
            accept_time=held.accept_time if held is not None else None,
        )
    except AssignmentRepeated:
        return None
    except BatchFull as exc:
        raise StudyBatchFilled(str(exc)) from None
    # A place the participant still holds in another batch (a second tab) is free again.
    _holds_release(study=study, worker=participant.worker)
    return stored
