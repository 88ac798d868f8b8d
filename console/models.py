"""What the organiser's console records: file uploads imported in the background, with their outcome."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.families import FILE_KINDS
from annotation.models import Collection
from core.jobs import BackgroundJob, status_field

# The collection's own files come first on the upload menu, crowd's last.
COLLECTION_FILES = ("topics", "passages", "run")


def upload_kinds() -> list[tuple[str, str]]:
    """Every kind of file the console takes in, with its title: the collection's own, each label
    family's (as its package declares them), then crowd's. A callable, so that a family's new file needs
    no migration."""
    own = ImportJob.Kind.choices
    families = [(file.kind, file.upload_title) for file in FILE_KINDS.values()]
    return [
        *(choice for choice in own if choice[0] in COLLECTION_FILES),
        *families,
        *(choice for choice in own if choice[0] not in COLLECTION_FILES),
    ]


class ImportJob(BackgroundJob):
    """One uploaded file and its import into a collection through the same service the command uses.

    The page that received the file only stores it and this row; the import itself runs on a task
    worker (`task_id` names its task), and the page polls `status` and `percent` (with `done` of `total`
    records). `heartbeat_at` lets a page tell a running import from one whose worker died.
    `result` holds the created / updated / unchanged counts by kind of record; `problems` the file:line
    messages of a rejected file, which left the collection as it was.
    """

    # The console's own kinds: the collection's files and crowd's CONE-RAG files. The label families'
    # files are declared in their packages (FileKind); `upload_kinds` lists every kind.
    class Kind(models.TextChoices):
        TOPICS = "topics", "Topics (iKAT JSON or TREC id<TAB>query)"
        PASSAGES = "passages", "Passages (JSONL)"
        RUN = "run", "Run (TREC run, iKAT JSON run, TREC RAG answers JSONL)"
        CONE_RAG_RESPONSES = "cone-rag-responses", "CONE-RAG participant responses (JSON)"
        CONE_RAG_LABELS = "cone-rag-labels", "CONE-RAG crowd labels (TSV)"

    # The console's words for the job states (core.jobs.JobStatus): a failed import is a rejected file.
    class Status(models.TextChoices):
        PENDING = "pending", "Waiting"
        RUNNING = "running", "Importing"
        DONE = "done", "Done"
        FAILED = "failed", "Rejected"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="import_jobs")
    kind = models.CharField(max_length=24, choices=upload_kinds)
    file_name = models.CharField(max_length=255, help_text="The uploaded file's own name.")
    stored_path = models.CharField(max_length=1024, help_text="Where the upload waits for its import.")
    size = models.PositiveBigIntegerField(default=0)
    options = models.JSONField(default=dict, blank=True, help_text="Judge, format and the other choices.")
    status = status_field(Status)
    percent = models.PositiveSmallIntegerField(default=0)
    done = models.PositiveBigIntegerField(default=0, help_text="Records of the file stored so far.")
    total = models.PositiveBigIntegerField(default=0, help_text="Records of the file (0 until known).")
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="When the import last said it was alive (every few seconds)."
    )
    result = models.JSONField(default=list, blank=True, help_text="Counts by kind of record.")
    problems = models.JSONField(default=list, blank=True, help_text="file:line messages of a rejected file.")
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta(BackgroundJob.Meta):
        constraints = [
            models.CheckConstraint(
                condition=models.Q(percent__lte=100), name="import_job_percent_at_most_100"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.file_name} ({self.status})"

    @property
    def unchanged(self) -> bool:
        """True when the import found everything already there (the same file imported again)."""
        return self.status == self.Status.DONE and not any(
            row.get("created") or row.get("updated") or row.get("deleted") for row in self.result
        )
