"""A test collection and every label given on it.

Every label row points at the Judge that gave it (an assessor, a crowd aggregate, an LLM with a prompt
version, an NLI model, or an imported file) and at its unit, so comparing two judges on the units they
share is one query whatever the task.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.collection.placeholder import is_placeholder
from core.model_fields import NaturalOrderField


class Collection(models.Model):
    name = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Topic(models.Model):
    """A conversation (iKAT) or a single information need (TREC RAG)."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="topics")
    number = models.CharField(max_length=64)
    title = models.TextField(blank=True)

    class Meta:
        ordering = ["collection", "id"]
        constraints = [models.UniqueConstraint(fields=["collection", "number"], name="topic_unique_number")]

    def __str__(self) -> str:
        return f"{self.number}: {self.title}" if self.title else self.number


class PtkbStatement(models.Model):
    """A statement of the user's personal text knowledge base (persona) for a conversation."""

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="ptkb")
    statement_id = models.CharField(max_length=32)
    text = models.TextField()

    class Meta:
        ordering = ["topic", "id"]
        constraints = [
            models.UniqueConstraint(fields=["topic", "statement_id"], name="ptkb_unique_statement"),
        ]

    def __str__(self) -> str:
        return f"{self.topic.number} PTKB {self.statement_id}"


class Turn(models.Model):
    """One user utterance of a conversation; `turn_id` is `<topic number>_<turn id>` (the qrels qid)."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="turns")
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="turns")
    turn_id = models.CharField(max_length=64)
    position = models.PositiveIntegerField(help_text="Order of the turn within its conversation.")
    utterance = models.TextField()
    resolved_utterance = models.TextField(blank=True)
    response = models.TextField(blank=True, help_text="The canonical system response of the turn.")
    response_provenance = models.JSONField(default=list, blank=True)
    ptkb_provenance = models.JSONField(default=list, blank=True)
    # The turn id's reading order ('2_2' before '2_10' before '10_1'), so that a page of a collection's
    # turns in that order is read through the index below instead of sorting every turn in Python.
    reading_order = NaturalOrderField(source="turn_id")

    class Meta:
        ordering = ["topic_id", "position"]
        constraints = [models.UniqueConstraint(fields=["collection", "turn_id"], name="turn_unique_id")]
        indexes = [models.Index(fields=["collection", "reading_order", "id"], name="turn_reading_order")]

    def __str__(self) -> str:
        return self.turn_id


class Passage(models.Model):
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="passages")
    passage_id = models.CharField(max_length=255)
    title = models.TextField(blank=True)
    text = models.TextField()

    class Meta:
        ordering = ["collection", "passage_id"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "passage_id"], name="passage_unique_id"),
        ]

    def __str__(self) -> str:
        return self.passage_id


class PassageCount(models.Model):
    """How many passages a collection holds, kept by PostgreSQL as passages are written
    (annotation/collection/passage_count.py), so that the pages listing collections read one row instead
    of counting a collection's millions of passages. A table of its own, not a column of Collection: a
    collection saved from an instance read earlier would write back a count that has since changed."""

    collection = models.OneToOneField(
        Collection, on_delete=models.CASCADE, primary_key=True, related_name="passage_count"
    )
    passages = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.collection_id}: {self.passages}"


class Run(models.Model):
    class Kind(models.TextChoices):
        AUTOMATIC = "automatic", "Automatic"
        MANUAL = "manual", "Manual"
        GENERATION_ONLY = "generation-only", "Generation only"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="runs")
    name = models.CharField(max_length=200)
    group = models.CharField(max_length=200, blank=True)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.AUTOMATIC)
    source_format = models.CharField(max_length=20, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # What its last import accepted with warnings (annotation.collection.checks builds it); empty for a run
    # imported before the checks existed, whose report the run_report command or page builds on demand.
    report = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["collection", "name"]
        constraints = [models.UniqueConstraint(fields=["collection", "name"], name="run_unique_name")]

    def __str__(self) -> str:
        return self.name


class Ranking(models.Model):
    """A run's whole ranked list for one turn, in rank order.

    One row per (run, turn) rather than per ranked passage: evaluation and pooling always read whole
    lists (ir_measures wants every scored document of a query, pooling slices the head of each list),
    so a 1000-deep list is one row to write and read instead of a thousand, which makes a 4.6 M-line
    run set a few thousand inserts. Passages are named by id, since runs rank documents whose text the
    collection may not hold (iKAT 2024 passages are not public).
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="rankings")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="rankings")
    passage_ids = models.JSONField(default=list)
    scores = models.JSONField(default=list)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "turn"], name="ranking_unique_run_turn")]

    def __str__(self) -> str:
        return f"{self.run.name} {self.turn.turn_id} ({len(self.passage_ids)})"


class Response(models.Model):
    """A generated answer of a run for a turn (iKAT response or TREC RAG answer)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="responses")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="responses")
    rank = models.PositiveIntegerField(default=1)
    text = models.TextField()
    references = models.JSONField(default=list, blank=True, help_text="Passage ids the citations index into.")
    response_length = models.PositiveIntegerField(
        null=True, blank=True, help_text="TREC RAG answers: the length the run reported."
    )

    class Meta:
        ordering = ["run", "turn", "rank"]
        constraints = [
            models.UniqueConstraint(fields=["run", "turn", "rank"], name="response_unique_run_turn_rank"),
        ]

    def __str__(self) -> str:
        return f"{self.run.name} {self.turn.turn_id} #{self.rank}"


class PlaceholderFlag(models.BooleanField[bool, bool]):
    """Whether the row's `text` is a placeholder (annotation/collection/placeholder.py), kept beside it so the
    support pages count an assessor's units in the database. Set from the text whenever the ORM writes the
    row (create, save, bulk_create, the admin), as `auto_now` sets a time; the bulk writer that COPYs
    sentences (annotation/collection/io.py) sets it by the same rule."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("default", False)
        kwargs.setdefault("editable", False)
        super().__init__(*args, **kwargs)

    def pre_save(self, model_instance: models.Model, add: bool) -> bool:
        value = is_placeholder(model_instance.text)  # type: ignore[attr-defined]
        setattr(model_instance, self.attname, value)
        return value


class ResponseSentence(models.Model):
    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="sentences")
    index = models.PositiveIntegerField(help_text="0-based position of the sentence in the answer.")
    text = models.TextField()
    citations = models.JSONField(default=list, blank=True, help_text="Cited passage ids, in citation order.")
    placeholder = PlaceholderFlag(help_text="Whether the text is a stand-in, never a support unit.")

    class Meta:
        ordering = ["response", "index"]
        constraints = [
            models.UniqueConstraint(fields=["response", "index"], name="sentence_unique_index"),
        ]

    def __str__(self) -> str:
        return f"{self.response} s{self.index}"


class Judge(models.Model):
    """Whoever gave a label: a person, a crowd aggregate, a machine, or an imported file."""

    class Kind(models.TextChoices):
        ASSESSOR = "assessor", "Assessor"
        CROWD = "crowd", "Crowd aggregate"
        LLM = "llm", "LLM"
        NLI = "nli", "NLI model"
        IMPORTED = "imported", "Imported file"
        ADJUDICATED = "adjudicated", "Adjudicated"

    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="judge"
    )
    model = models.CharField(max_length=200, blank=True, help_text="LLM or NLI model name.")
    prompt_version = models.CharField(max_length=100, blank=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(kind="assessor") | Q(user__isnull=False), name="judge_assessor_has_user"
            ),
        ]

    def __str__(self) -> str:
        return self.name
