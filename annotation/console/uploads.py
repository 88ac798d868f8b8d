"""Files uploaded on the organiser's pages, imported through the services the import commands call.

A page stores the file and an ImportJob row and hands the job on (annotation.console.tasks): a small
file is imported before the page answers, a larger one by a task worker while the page polls the job.
Either way one function, `import_job_run`, does the import
in one transaction with the same checks as the command, so a rejected file changes nothing and the same
file twice reports everything unchanged.
"""

from __future__ import annotations

import filecmp
import logging
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
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
from annotation.io import passages_import, run_import, topics_import
from annotation.judge_access import ImportJudgeRefused
from annotation.models import Collection, ImportJob, Judge
from annotation.nuggets.io import gold_responses_import, nuggets_import
from annotation.ptkb.io import ptkb_qrels_import
from annotation.relevance.io import qrels_import
from annotation.services import ImportResult, import_judge_get_or_create
from annotation.support.io import support_labels_import
from core.jobs import FINISHED, job_end, job_start
from core.progress import Progress

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


class UploadRefused(Exception):
    """The upload cannot be imported as asked (a judge of the wrong kind, a missing option)."""


@dataclass(frozen=True)
class KindRow:
    """One line of the outcome table: what the import did to one kind of record."""

    kind: str
    created: int
    updated: int
    unchanged: int
    deleted: int


def upload_root() -> Path:
    """Where uploads wait for their import: under MEDIA_ROOT when it is set (a task worker on another
    machine needs it to be shared storage), else the system's temporary directory."""
    base = Path(settings.MEDIA_ROOT) if settings.MEDIA_ROOT else Path(tempfile.gettempdir())
    return base / "assay-imports"


def inline_limit() -> int:
    return int(getattr(settings, "CONSOLE_INLINE_IMPORT_BYTES", DEFAULT_INLINE_BYTES))


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
    if kind not in ImportJob.Kind.values:
        raise UploadRefused(f"unknown kind {kind!r}; one of {', '.join(ImportJob.Kind.values)}")
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


def kind_rows(result: ImportResult, default: str, prefix: str = "") -> list[KindRow]:
    return [
        KindRow(prefix + kind, c.created, c.updated, c.unchanged, c.deleted)
        for kind, c in result.by_kind(default).items()
    ]


def judge_named(name: str) -> Judge:
    judge = Judge.objects.filter(name=name).first()
    if judge is None:
        known = ", ".join(Judge.objects.order_by("name").values_list("name", flat=True)[:10]) or "none yet"
        raise UploadRefused(f"no judge named {name!r}; known judges: {known}")
    return judge


def file_judge(options: dict[str, Any], file_name: str) -> Judge:
    """The judge a file is imported as (kind, model and prompt version from the form), refused by the
    same rule as the import commands' --judge and --judge-kind."""
    try:
        return import_judge_get_or_create(
            name=options["judge"],
            kind=options.get("judge_kind") or None,
            model=options.get("model", ""),
            prompt_version=options.get("prompt_version", ""),
            source=file_name,
        )
    except ImportJudgeRefused as exc:
        raise UploadRefused(str(exc)) from None


# --- One importer per kind: the checks of its command, then its service ------------------------------

# An importer gets the stored file, the collection, the form's options, the file's own name and the
# progress hook; one registered by another app (FileImporter) gets no hook: its page shows the heartbeat.
Importer = Callable[[Path, Collection, dict[str, Any], str, Progress], list[KindRow]]
FileImporter = Callable[[Path, Collection, dict[str, Any], str], list[KindRow]]


def _topics(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str, progress: Progress
) -> list[KindRow]:
    return kind_rows(topics_import(path=path, collection=collection, progress=progress), "topics")


def _passages(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str, progress: Progress
) -> list[KindRow]:
    return kind_rows(passages_import(path=path, collection=collection, progress=progress), "passages")


def _run(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str, progress: Progress
) -> list[KindRow]:
    results = run_import(
        path=path,
        collection=collection,
        name=options.get("run_name") or None,
        group=options.get("group", ""),
        progress=progress,
    )
    return [
        row for run, result in results for row in kind_rows(result, "rankings", prefix=f"run {run.name}: ")
    ]


def _qrels(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str, progress: Progress
) -> list[KindRow]:
    result = qrels_import(
        path=path,
        collection=collection,
        judge=file_judge(options, file_name),
        require_passages=bool(options.get("require_passages")),
        replace=bool(options.get("replace")),
        progress=progress,
    )
    return kind_rows(result, "judgments")


def _ptkb_qrels(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str, progress: Progress
) -> list[KindRow]:
    result = ptkb_qrels_import(
        path=path,
        collection=collection,
        judge=file_judge(options, file_name),
        replace=bool(options.get("replace")),
    )
    return kind_rows(result, "PTKB judgments")


def _nuggets(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str, progress: Progress
) -> list[KindRow]:
    original = judge_named(options["dedup_of"]) if options.get("dedup_of") else None
    if original is not None and original.name == options["judge"]:
        raise UploadRefused("the de-duplicated set must belong to another judge than the set it reduces")
    judge = file_judge(options, file_name)
    result = nuggets_import(
        path=path,
        collection=collection,
        judge=judge,
        fmt=options.get("fmt", "jsonl"),
        dedup_of=original,
        progress=progress,
    )
    return kind_rows(result, "nuggets")


def _gold_responses(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str, progress: Progress
) -> list[KindRow]:
    judge = file_judge(options, file_name)
    name = options.get("nugget_judge")
    if name and options.get("fmt") == "cone-rag" and not Judge.objects.filter(name=name).exists():
        # CONE-RAG names nuggets by text: a new nugget judge gets its nuggets from the file.
        nuggets_of: Judge | None = file_judge({"judge": name}, file_name)
    else:
        nuggets_of = judge_named(name) if name else None
    result = gold_responses_import(
        path=path,
        collection=collection,
        judge=judge,
        nugget_judge=nuggets_of,
        fmt=options.get("fmt", "jsonl"),
    )
    return kind_rows(result, "gold responses")


def _support_labels(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str, progress: Progress
) -> list[KindRow]:
    judge = file_judge(options, file_name)
    result = support_labels_import(path=path, collection=collection, judge=judge, progress=progress)
    return kind_rows(result, "support labels")


IMPORTERS: dict[str, Importer] = {
    ImportJob.Kind.TOPICS: _topics,
    ImportJob.Kind.PASSAGES: _passages,
    ImportJob.Kind.RUN: _run,
    ImportJob.Kind.QRELS: _qrels,
    ImportJob.Kind.PTKB_QRELS: _ptkb_qrels,
    ImportJob.Kind.NUGGETS: _nuggets,
    ImportJob.Kind.GOLD_RESPONSES: _gold_responses,
    ImportJob.Kind.SUPPORT_LABELS: _support_labels,
}


def importer_register(*, kind: str, importer: FileImporter) -> None:
    """Let an app built on this one import its own kind of file from these pages: the crowd app
    registers the CONE-RAG files, whose services it owns (this app imports nothing from it)."""
    if kind not in ImportJob.Kind.values:
        raise ValueError(f"unknown kind {kind!r}; one of {', '.join(ImportJob.Kind.values)}")

    def without_progress(
        path: Path, collection: Collection, options: dict[str, Any], file_name: str, progress: Progress
    ) -> list[KindRow]:
        return importer(path, collection, options, file_name)

    IMPORTERS[kind] = without_progress
