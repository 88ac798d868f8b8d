"""Reads of an upload's job: its status and progress as its page and the status endpoint show them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from annotation.families import FILE_KINDS
from console.models import ImportJob
from console.uploads.services import progress_cache_key
from core.jobs import job_interrupted

# What a running import's `done of total` counts, as its page says it: each importer counts the records
# of its file once, as they are stored (a label family's file says it in its declaration).
PROGRESS_UNITS: dict[str, str] = {
    ImportJob.Kind.TOPICS: "topics stored",
    ImportJob.Kind.PASSAGES: "passages stored",
    ImportJob.Kind.RUN: "rankings and responses stored",
    **{kind: file.progress_unit for kind, file in FILE_KINDS.items()},
}


def progress_unit(*, job: ImportJob) -> str:
    return PROGRESS_UNITS.get(job.kind, "records stored")


INTERRUPTED_REASON = "its worker stopped during the import; nothing was imported"


@dataclass(frozen=True)
class ImportJobState:
    """What the import page and its status endpoint say about a job."""

    status: str
    label: str
    percent: int
    done: int
    total: int
    finished: bool
    reason: str = ""

    @property
    def interrupted(self) -> bool:
        return self.status == "interrupted"


def import_job_state(*, job: ImportJob) -> ImportJobState:
    """A job's status and progress, from its row and the latest value its runner published.

    A running import may publish only to the cache (an import run inside its caller's transaction cannot
    write its row from a second connection), so the fresher of the two is shown. A running job silent for longer than IMPORT_STALE_AFTER_S,
    or an unfinished one whose task has ended or is gone, lost its worker: its transaction never
    committed, so nothing was imported.
    """
    done, total, percent = job.done, job.total, job.percent
    interrupted = ImportJobState("interrupted", "Interrupted", percent, done, total, True, INTERRUPTED_REASON)
    if job_interrupted(job):
        return interrupted
    if job.status != ImportJob.Status.RUNNING:
        return ImportJobState(job.status, job.get_status_display(), percent, done, total, job.finished)
    beats = [at for at in (job.heartbeat_at, job.started_at) if at is not None]
    published = cache.get(progress_cache_key(job.pk))
    if published:
        at = datetime.fromtimestamp(published["at"], tz=UTC)
        if not beats or at > max(beats):
            done, total, percent = published["done"], published["total"], published["percent"]
        beats.append(at)
    stale_after = timedelta(seconds=settings.IMPORT_STALE_AFTER_S)
    if beats and timezone.now() - max(beats) > stale_after:
        return dataclasses.replace(interrupted, percent=percent, done=done, total=total)
    return ImportJobState(job.status, job.get_status_display(), percent, done, total, False)
