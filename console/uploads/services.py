"""Files uploaded on the organiser's pages, imported through the services the import commands call.

A page stores the file and an ImportJob row and hands the job on (console.tasks): a small file is
imported before the page answers, a larger one by a task worker while the page polls the job. Either way
one function, `import_job_run`, does the import (through the kind's importer, console.importers) in one
transaction with the same checks as the command, so a rejected file changes nothing and the same
file twice reports everything unchanged.
"""

from __future__ import annotations

import filecmp
import logging
import shutil
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.files.uploadedfile import UploadedFile
from django.db import DatabaseError, IntegrityError, connections, router, transaction
from django.utils import timezone
from django.utils.text import get_valid_filename

from annotation.formats.base import ImportFailed
from annotation.labels.files import UploadRefused
from annotation.models import Collection
from annotation.selectors import annotation_tables
from console.models import ImportJob, upload_kinds
from console.uploads.importers import IMPORTERS
from core.bulk import statistics_refresh
from core.jobs import FINISHED, job_end, job_start

log = logging.getLogger(__name__)

# Files up to this size are imported before the page answers; larger ones in the background.
DEFAULT_INLINE_BYTES = 256 * 1024

# A running import tells the page how far it is at most this often (seconds), and that it is alive at
# least this often, so a page can tell it from one whose process died (IMPORT_STALE_AFTER_S).
PROGRESS_EVERY_S = 0.25
HEARTBEAT_S = 5.0
CONCURRENT = (
    "the same records were being imported by another upload at once; nothing was stored, upload it again"
)


def upload_root() -> Path:
    """Where uploads wait for their import: under MEDIA_ROOT when it is set (a task worker on another
    machine needs it to be shared storage), else the system's temporary directory."""
    base = Path(settings.MEDIA_ROOT) if settings.MEDIA_ROOT else Path(tempfile.gettempdir())
    return base / "assay-imports"


def inline_limit() -> int:
    return int(getattr(settings, "CONSOLE_INLINE_IMPORT_BYTES", DEFAULT_INLINE_BYTES))


def imported_inline(job: ImportJob) -> bool:
    """Whether the job's file is small enough to import before its page answers, rather than on a task
    worker while the page follows it."""
    return job.size <= inline_limit()


# --- Storing and starting --------------------------------------------------------------------------


@transaction.atomic
def import_job_create(
    *,
    collection: Collection,
    kind: str,
    upload: UploadedFile,
    options: dict[str, Any],
    user: User | None,
) -> ImportJob:
    """Store an uploaded file under its own (sanitised) name in a fresh folder and record its job.

    The file keeps its name so that the parsers' `path:line` messages can be shown as `name:line`.
    """
    kinds = [known for known, _ in upload_kinds()]
    if kind not in kinds:
        raise UploadRefused(f"unknown kind {kind!r}; one of {', '.join(kinds)}")
    name = get_valid_filename(Path(upload.name or "upload").name) or "upload"
    folder = upload_root() / uuid.uuid4().hex
    folder.mkdir(parents=True, exist_ok=False)
    target = folder / name
    with open(target, "wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    # Locked so that of two identical uploads at once the second sees the first's job: their imports
    # would write the same rows, and the later one would fail on them.
    Collection.objects.select_for_update().filter(pk=collection.pk).first()
    twin = _import_job_twin(collection=collection, kind=kind, options=options, path=target)
    if twin is not None:
        shutil.rmtree(folder, ignore_errors=True)
        raise UploadRefused(
            f"{name} is already being imported (upload {twin.pk}, {twin.get_status_display().lower()}); "
            "its page shows how far it is"
        )
    return ImportJob.objects.create(
        collection=collection,
        kind=kind,
        file_name=name,
        stored_path=str(target),
        size=target.stat().st_size,
        options=options,
        created_by=user,
    )


def _import_job_twin(
    *, collection: Collection, kind: str, options: dict[str, Any], path: Path
) -> ImportJob | None:
    """An unfinished job of the same file, kind and options in this collection, if any."""
    unfinished = ImportJob.objects.filter(collection=collection, kind=kind, size=path.stat().st_size).exclude(
        status__in=FINISHED
    )
    for job in unfinished:
        stored = Path(job.stored_path)
        if job.options == options and stored.is_file() and filecmp.cmp(stored, path, shallow=False):
            return job
    return None


# --- Running ---------------------------------------------------------------------------------------


def import_job_run(*, job_id: int) -> ImportJob:
    """Run one stored upload's import and record its outcome on the job; the stored file is removed.

    A job already finished is left as it is, so a task delivered twice imports once.
    """
    job = ImportJob.objects.select_related("collection").get(pk=job_id)
    if job.finished:
        return job
    job_start(job=job, percent=0, done=0, total=0, heartbeat_at=timezone.now())
    path = Path(job.stored_path)
    status, rows, problems, error = ImportJob.Status.DONE, [], [], ""
    progress = ImportProgress(job.pk, to_database=_progress_in_database())
    try:
        with progress:
            with transaction.atomic():
                importer = IMPORTERS.get(job.kind)
                if importer is None:
                    raise UploadRefused(f"no importer for {job.get_kind_display()} files is installed")
                rows = importer(path, job.collection, job.options, job.file_name, progress)
    except ImportFailed as exc:
        status, problems = ImportJob.Status.FAILED, [_shown(p, path) for p in exc.problems]
        problems += [f"... and {exc.more} more problems"] if exc.more else []
    except UploadRefused as exc:
        status, problems = ImportJob.Status.FAILED, [f"{job.file_name}: {exc}"]
    except IntegrityError:  # another import (an overlapping file) wrote the same rows and committed first
        status, problems = ImportJob.Status.FAILED, [f"{job.file_name}: {CONCURRENT}"]
    except Exception as exc:  # recorded on the job so the page can say it; nothing was imported
        log.exception("import job %s failed", job.pk)
        status, error = ImportJob.Status.FAILED, f"{type(exc).__name__}: {exc}"
    # Not in a `finally`: a worker stopped in the middle keeps the file for the run that resumes the job.
    shutil.rmtree(path.parent, ignore_errors=True)
    job_end(
        job=job,
        status=status,
        percent=100,
        result=[vars(row) for row in rows],
        problems=problems,
        error=error,
        done=progress.latest[0],
        total=progress.latest[1],
        heartbeat_at=timezone.now(),
    )
    cache.delete(progress_cache_key(job.pk))
    # A file big enough for a task worker can change the tables' sizes by much; a small one, imported while
    # its page waits, is not kept waiting the second the refresh takes at a TREC track's size.
    if status == ImportJob.Status.DONE and not imported_inline(job):
        statistics_refresh(annotation_tables())
    job.refresh_from_db()
    return job


# --- Progress --------------------------------------------------------------------------------------


def progress_cache_key(job_id: int) -> str:
    return f"assay:import-job:{job_id}:progress"


def progress_percent(done: int, total: int) -> int:
    """The share done while the import runs: 100 is kept for the end, when everything is committed."""
    return min(99, done * 100 // total) if total > 0 else 0


def _progress_in_database() -> bool:
    """Whether a second connection may write the job's row while the import's transaction is open.

    Not when the caller's own transaction holds the row (an import run before the page answers, where
    nobody polls).
    """
    return not connections[router.db_for_write(ImportJob)].in_atomic_block


def _progress_store(job_id: int, done: int, total: int, *, to_database: bool) -> None:
    """Publish one progress value and heartbeat: in the cache always, on the job's row when allowed."""
    now = timezone.now()
    percent = progress_percent(done, total)
    cache.set(
        progress_cache_key(job_id),
        {"done": done, "total": total, "percent": percent, "at": now.timestamp()},
        timeout=24 * 3600,
    )
    if to_database:
        ImportJob.objects.filter(pk=job_id, status=ImportJob.Status.RUNNING).update(
            done=done, total=total, percent=percent, heartbeat_at=now
        )


class ImportProgress:
    """How far a running import is, told to the page from a thread of its own.

    The import holds one transaction until it ends (it is all or nothing), so nothing it writes can be
    seen before then. The importer's hook (this object, called with `(done, total)`) only keeps the
    latest value; the helper thread publishes it at most every PROGRESS_EVERY_S, and at least every
    HEARTBEAT_S even when the importer says nothing: on the job's row through the thread's own
    connection, committed at once, where the database lets a second writer in, and always in the cache,
    which the status page reads too (the process's own with the default local cache, every process's
    with CACHE_URL).
    """

    def __init__(self, job_id: int, *, to_database: bool) -> None:
        self.job_id = job_id
        self.to_database = to_database
        self._latest = (0, 0)
        self._lock = threading.Lock()
        self._changed = threading.Event()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"import-job-{job_id}-progress", daemon=True)

    @property
    def latest(self) -> tuple[int, int]:
        with self._lock:
            return self._latest

    def __call__(self, done: int, total: int) -> None:
        with self._lock:
            self._latest = (done, total)
        self._changed.set()

    def __enter__(self) -> ImportProgress:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopped.set()
        self._changed.set()
        # Bounded: a publish stuck on a lock must not hold the import's outcome back.
        self._thread.join(timeout=HEARTBEAT_S)

    def _run(self) -> None:
        try:
            while not self._stopped.is_set():
                with self._lock:
                    done, total = self._latest
                try:
                    _progress_store(self.job_id, done, total, to_database=self.to_database)
                except DatabaseError:  # the next beat tries again; the import goes on either way
                    log.warning("import job %s: progress not stored", self.job_id, exc_info=True)
                self._changed.wait(HEARTBEAT_S)
                self._changed.clear()
                self._stopped.wait(PROGRESS_EVERY_S)
        finally:
            if self.to_database:
                connections.close_all()  # this thread's own connections only


def _shown(problem: str, path: Path) -> str:
    """A parser's `stored/path/name:line: message` as `name:line: message`."""
    prefix = str(path.parent) + "/"
    return problem[len(prefix) :] if problem.startswith(prefix) else problem
