"""Relevance's rows: graded passages, and the pools and leased units its assessors work through."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models.collection import Collection, Judge, Run, Topic, Turn
from annotation.models.judgments import TimedJudgment


class RelevanceGrade(models.IntegerChoices):
    FAILS = 0, "Fails to meet"
    SLIGHTLY = 1, "Slightly meets"
    MODERATELY = 2, "Moderately meets"
    HIGHLY = 3, "Highly meets"
    FULLY = 4, "Fully meets"


class RelevanceJudgment(TimedJudgment):
    """Passage relevance for a turn on the iKAT 0–4 scale; the passage is named by id."""

    # No single-column indexes on the keys: the unique (judge, turn, passage) and the (turn, passage)
    # indexes lead with them, and each extra index is written on every grade.
    judge = models.ForeignKey(
        Judge, on_delete=models.CASCADE, related_name="relevancejudgments", db_index=False
    )
    turn = models.ForeignKey(
        Turn, on_delete=models.CASCADE, related_name="relevance_judgments", db_index=False
    )
    passage_id = models.CharField(max_length=255)
    grade = models.SmallIntegerField(choices=RelevanceGrade.choices)
    # The idempotency key of the last grade applied to the row: a client retrying a grade whose answer it
    # never got (an outage after the commit) sends the same key, and the writer then changes nothing.
    grade_key = models.UUIDField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["turn_id", "passage_id"]
        constraints = [
            models.UniqueConstraint(fields=["judge", "turn", "passage_id"], name="relevance_unique_unit"),
            models.CheckConstraint(condition=Q(grade__gte=0) & Q(grade__lte=4), name="relevance_grade_0_4"),
        ]
        indexes = [models.Index(fields=["turn", "passage_id"])]

    def __str__(self) -> str:
        return f"{self.judge_id}: {self.turn_id} {self.passage_id} = {self.grade}"


# --- Relevance pooling and assignment of assessment work -------------------------


class Pool(models.Model):
    """The (turn, passage) pairs chosen from the runs for human assessment.

    Plain pooling takes every run's top `depth` per turn. Adaptive pooling (iKAT 2024) takes every
    passage ranked 1..`always_depth` and, from `always_depth`+1 to `depth`, those a filter judge
    (typically an LLM) graded at least `min_grade` or did not grade at all (they enter unfiltered).
    """

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="pools")
    name = models.SlugField(max_length=100)
    depth = models.PositiveIntegerField()
    adaptive = models.BooleanField(default=False)
    always_depth = models.PositiveIntegerField(null=True, blank=True)
    filter_judge = models.ForeignKey(
        Judge, null=True, blank=True, on_delete=models.PROTECT, related_name="filtered_pools"
    )
    min_grade = models.SmallIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Kept counts of the entries, so that the pages listing pools read them instead of counting a pool's
    # hundreds of thousands of pairs on each view. Entries are written only when a pool is built (or a
    # sample copied into one), and pool_counts_store sets these in that same transaction.
    pair_count = models.PositiveIntegerField(default=0)
    turn_count = models.PositiveIntegerField(default=0)
    # Turns holding a pair that entered unfiltered: deeper than the head, no grade of the filter judge.
    unfiltered_turn_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["collection", "name"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "name"], name="pool_unique_name"),
            models.CheckConstraint(
                condition=Q(adaptive=False) | (Q(filter_judge__isnull=False) & Q(min_grade__isnull=False)),
                name="pool_adaptive_has_filter",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.collection.name}/{self.name}"


class PoolEntry(models.Model):
    """One pooled (turn, passage) and why it entered: its best rank, the run that ranked it there, and
    the filter judge's grade when there is one (`via_filter` when only the filter let it in)."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="entries")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="pool_entries")
    passage_id = models.CharField(max_length=255)
    best_rank = models.PositiveIntegerField()
    best_run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    filter_grade = models.SmallIntegerField(null=True, blank=True)
    via_filter = models.BooleanField(default=False)
    order = models.PositiveIntegerField(default=0, help_text="Presentation order within the turn.")

    class Meta:
        ordering = ["pool", "turn_id", "order"]
        constraints = [
            models.UniqueConstraint(fields=["pool", "turn", "passage_id"], name="pool_entry_unique"),
        ]
        # In presentation order: the assessor API walks a turn's entries along it (annotation.assignment).
        indexes = [models.Index(fields=["pool", "turn", "order", "id"], name="pool_entry_in_order")]

    def __str__(self) -> str:
        return f"{self.pool_id} {self.turn_id} {self.passage_id} (rank {self.best_rank})"


class Assignment(models.Model):
    """A pool's turns handed to a group of assessors as units of work (a turn or a whole conversation),
    each unit judged by `redundancy` different assessors, leased for `lease_minutes` at a time."""

    class UnitKind(models.TextChoices):
        TURN = "turn", "Turn"
        CONVERSATION = "conversation", "Conversation"

    pool = models.ForeignKey(Pool, on_delete=models.PROTECT, related_name="assignments")
    name = models.SlugField(max_length=100, unique=True)
    unit_kind = models.CharField(max_length=20, choices=UnitKind.choices, default=UnitKind.TURN)
    redundancy = models.PositiveSmallIntegerField(default=1)
    lease_minutes = models.PositiveIntegerField(default=60)
    assessors = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="relevance_assignments")
    with_ptkb = models.BooleanField(default=True, help_text="Ask for PTKB statement relevance per turn.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.CheckConstraint(condition=Q(redundancy__gte=1), name="assignment_redundancy_1")]

    def __str__(self) -> str:
        return self.name


class WorkUnit(models.Model):
    """A turn, or a conversation's pooled turns (`turn_pks`, in conversation order), to judge."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="units")
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    label = models.CharField(max_length=100)
    turn_pks = models.JSONField(default=list)
    position = models.PositiveIntegerField()

    class Meta:
        verbose_name = "unit"
        ordering = ["assignment", "position"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "position"], name="work_unit_unique_position"),
        ]

    def __str__(self) -> str:
        return f"{self.assignment.name} {self.label}"


class WorkSlot(models.Model):
    """One of a unit's `redundancy` copies. An assessor holds it under a lease; once the lease has run
    out and the work is not complete, the next assessor who asks may take it over. The unique
    (unit, assessor) constraint keeps one assessor from holding two copies of the same unit."""

    unit = models.ForeignKey(WorkUnit, on_delete=models.CASCADE, related_name="slots")
    copy = models.PositiveSmallIntegerField(verbose_name="copy number")
    # The unit's assignment and position, copied here so that the first free copy is found by walking
    # the open copies in order (work_slot_open_in_order) instead of every unit the assignment has.
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveIntegerField()
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="work_slots"
    )
    leased_until = models.DateTimeField(null=True, blank=True, verbose_name="lease ends")
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    # Kept when the copy completes (work_close, in the same write): the pairs it showed (pooled and gold)
    # and how many of them the assessor graded, so that the queue page sums these instead of counting
    # every unit the assessor ever did.
    pairs_shown = models.PositiveIntegerField(default=0)
    pairs_judged = models.PositiveIntegerField(default=0)

    class Meta:
        # The word pages and docs use (docs/glossary.md); the class keeps its first name.
        verbose_name = "copy"
        verbose_name_plural = "copies"
        ordering = ["unit", "copy"]
        constraints = [
            models.UniqueConstraint(fields=["unit", "copy"], name="work_slot_unique_copy"),
            models.UniqueConstraint(fields=["unit", "assessor"], name="work_slot_one_per_assessor"),
        ]
        indexes = [
            models.Index(fields=["assessor", "completed_at"]),
            models.Index(
                fields=["assignment", "position", "copy"],
                condition=Q(completed_at__isnull=True),
                name="work_slot_open_in_order",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.unit} #{self.copy}"
