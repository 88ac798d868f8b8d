"""Relevance pools and their assignments with leased copies; the turns a nugget set covers and its edits.

Support and TREC RAG nugget work are handed out per topic through annotation.topic_work.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models.collection import Collection, Judge, Run, Topic, Turn

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


# --- Gold nuggets: the turns a nugget set covers --------------------------------------------


class NuggetSetTurn(models.Model):
    """A turn that a judge's nugget set covers, at its place in the set.

    A set may cover a turn with no nugget at all (CONE-RAG files keep such a turn as `{}`), and files
    list turns in their own order, so neither fact can be read off the Nugget rows; exports need both
    to give back the file they were imported from byte for byte.
    """

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="nugget_set_turns")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="nugget_set_turns")
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["judge_id", "position"]
        constraints = [models.UniqueConstraint(fields=["judge", "turn"], name="nugget_set_turn_unique")]

    def __str__(self) -> str:
        return f"{self.judge_id} {self.turn_id} @{self.position}"


# --- TREC RAG nugget evaluation: the edits people make to a nugget set ------------------------


class NuggetEdit(models.Model):
    """One edit made while post-editing a nugget set, kept so the history can be read back and timed.

    `before` and `after` hold the affected nuggets as `{"key", "text"}` lists: one to one for a
    rewrite, many to one for a merge, one to many for a split, one to none for a delete, none to one
    for an add, and the whole list of keys for a reorder.
    """

    class Action(models.TextChoices):
        REWRITE = "rewrite", "Rewrite"
        MERGE = "merge", "Merge"
        SPLIT = "split", "Split"
        DELETE = "delete", "Delete"
        ADD = "add", "Add"
        REORDER = "reorder", "Reorder"

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="nugget_edits")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="nugget_edits")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="nugget_edits"
    )
    action = models.CharField(max_length=10, choices=Action.choices)
    before = models.JSONField(default=list, blank=True)
    after = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["judge_id", "turn_id", "id"]

    def __str__(self) -> str:
        return f"{self.judge_id} {self.turn_id} {self.action}"
