"""Gold nuggets, gold responses and the nugget-to-response (NtR) and nugget-to-nugget (NtN) labels."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from annotation.models.collection import Collection, Judge, Response, Turn
from annotation.models.judgments import TimedJudgment

# The most characters a nugget of a TREC RAG list may have. nuggetizer asks its LLM for nuggets of 1-12
# words; a nugget is a short fact to check an answer against, and a text of megabytes is a mistake that
# every page and prompt showing the list would carry.
MAX_NUGGET_TEXT = 1000


class Nugget(TimedJudgment):
    """An essential piece of information for a turn.

    Human gold nuggets are continuous spans of a passage (`passage_id`, `start`, `end` into its stored
    text); LLM nuggets may be spans too or free text. `duplicate_of` marks a duplicate within the same
    judge's set; `original` links a nugget of a de-duplicated set (another judge) to the one it came from.
    """

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="nuggets")
    key = models.CharField(
        max_length=32, help_text="Identifier within the turn, e.g. '[3]' in CONE-RAG files."
    )
    text = models.TextField()
    # Order within the judge's list for the turn. Created nugget lists (TREC RAG) are ordered by
    # importance to the question and people reorder them while post-editing; imported spans keep 0,
    # so their order stays that of their ids.
    position = models.PositiveIntegerField(default=0)
    passage_id = models.CharField(max_length=255, blank=True)
    start = models.PositiveIntegerField(null=True, blank=True)
    end = models.PositiveIntegerField(null=True, blank=True)
    relevance = models.CharField(max_length=8, blank=True, help_text="Grade of the source passage.")
    duplicate_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="duplicates"
    )
    original = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="derived"
    )
    # NLI matching: the response a response nugget was extracted from, so NtN metrics can tell
    # apart the nuggets of several runs' responses to the same turn under one extraction judge.
    response = models.ForeignKey(
        Response, null=True, blank=True, on_delete=models.CASCADE, related_name="nuggets"
    )

    class Meta:
        ordering = ["turn_id", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["judge", "turn", "key"], name="nugget_unique_key"),
            models.CheckConstraint(
                condition=Q(start__isnull=True) | Q(end__gte=models.F("start")), name="nugget_span_ordered"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.turn_id} {self.key}: {self.text[:40]}"


class GoldResponse(TimedJudgment):
    """A response written by an assessor from the turn's nuggets."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="gold_responses")
    text = models.TextField(blank=True)
    nuggets = models.ManyToManyField(Nugget, blank=True, related_name="gold_responses")
    is_draft = models.BooleanField(default=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["judge", "turn"], name="gold_response_unique_unit")]

    def __str__(self) -> str:
        return f"gold response {self.turn_id}"


class NtrJudgment(TimedJudgment):
    """Nugget-to-response: does the response capture this gold nugget?"""

    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="ntr_judgments")
    nugget = models.ForeignKey(Nugget, on_delete=models.CASCADE, related_name="ntr_judgments")
    matched = models.BooleanField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["judge", "response", "nugget"], name="ntr_unique_unit")
        ]

    def __str__(self) -> str:
        return f"{self.response} ~ {self.nugget.key} = {int(self.matched)}"

    @property
    def turn_id(self) -> int:
        return self.nugget.turn_id


class NtnJudgment(TimedJudgment):
    """Nugget-to-nugget: does a response nugget entail a gold nugget?"""

    response_nugget = models.ForeignKey(Nugget, on_delete=models.CASCADE, related_name="ntn_as_premise")
    gold_nugget = models.ForeignKey(Nugget, on_delete=models.CASCADE, related_name="ntn_as_hypothesis")
    entails = models.BooleanField()
    score = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["judge", "response_nugget", "gold_nugget"], name="ntn_unique_unit"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.response_nugget_id} => {self.gold_nugget_id} = {int(self.entails)}"


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


class NuggetTurnCount(models.Model):
    """A judge's nuggets on one turn, counted: what the nugget counts page and command show of a set, read
    from one row per turn instead of every nugget of the set.

    Written by PostgreSQL alone, in the writer's transaction, by the triggers on the nuggets' and the set
    turns' tables (annotation/nuggets/counts.py), so that every writer keeps it true: the editors, the
    imports, de-duplication, the admin. A row that has counted a (judge, turn) stays, at zero once its
    nuggets are gone, so that concurrent writers of a turn wait on the same row. Nothing in Python
    writes it.
    """

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="+", db_index=False)
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="+")
    # The turn's, so that a set's rows in a collection are read on one index.
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="+", db_index=False)
    # Whether the set lists the turn (a NuggetSetTurn), which it may with no nugget on it.
    covered = models.BooleanField(default=False)
    nuggets = models.IntegerField(default=0)
    # Whitespace-separated tokens of the nuggets' texts, as Python's str.split() counts them.
    words = models.BigIntegerField(default=0)
    # Nuggets not marked as a duplicate of another of the set.
    unmarked = models.IntegerField(default=0)
    # Nuggets another set was derived from (a de-duplicated set's nugget has them as `original`), and
    # those of them not marked as duplicates.
    derived = models.IntegerField(default=0)
    derived_unmarked = models.IntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["judge", "turn"], name="nugget_turn_count_unique")]
        indexes = [models.Index(fields=["collection", "judge"], name="nugget_turn_count_set")]

    def __str__(self) -> str:
        return f"{self.judge_id} {self.turn_id}: {self.nuggets}"
