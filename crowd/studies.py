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
from collections.abc import Mapping
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count, F, Q

from crowd.answers import AssignmentRepeated, BatchFull, assignment_submit, worker_get_or_create
from crowd.models import CrowdAssignment, CrowdBatch, CrowdCampaign, CrowdStudy, CrowdWorker
from crowd.selectors import COUNTED_STATUSES
from crowd.services import CrowdError

# Panels' participant ids are short tokens (Prolific's are 24 hex digits); anything else is refused
# rather than stored as a worker id.
PARTICIPANT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}")
PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")


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


def study_batch_for(*, study: CrowdStudy, worker: CrowdWorker) -> CrowdBatch | None:
    """The open batch with the most free places that the participant has not answered, so participants
    who arrive together are spread over batches rather than racing for the last place of one."""
    return (
        CrowdBatch.objects.filter(campaign=study.campaign, status=CrowdBatch.Status.OPEN)
        .exclude(assignments__worker=worker)
        .annotate(taken=Count("assignments", filter=Q(assignments__status__in=COUNTED_STATUSES)))
        .filter(taken__lt=F("max_assignments"))
        .order_by("taken", "index")
        .first()
    )


class StudyBatchFilled(CrowdError):
    """The batch got its last answer from someone else while this participant worked on it."""


@transaction.atomic
def study_submit(
    *,
    study: CrowdStudy,
    participant: Participant,
    batch: CrowdBatch,
    answers: Mapping[int, bool],
    times_ms: Mapping[int, int] | None = None,
) -> CrowdAssignment | None:
    """Store a participant's answers to one batch of the study; None when they had already answered
    (the repeat is not stored). StudyBatchFilled when the batch filled up meanwhile."""
    if batch.campaign_id != study.campaign_id or batch.status != CrowdBatch.Status.OPEN:
        raise CrowdError(f"batch {batch.index} is not open in this study")
    # The participant's row is locked so two tabs posting different batches at once store one of them.
    CrowdWorker.objects.select_for_update().filter(id=participant.worker.id).first()
    if study_done(study=study, worker=participant.worker):
        return None
    try:
        return assignment_submit(batch=batch, worker=participant.worker, answers=answers, times_ms=times_ms)
    except AssignmentRepeated:
        return None
    except BatchFull as exc:
        raise StudyBatchFilled(str(exc)) from None
