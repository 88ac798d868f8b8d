"""Label rows: one table per kind of judgment, each pointing at its judge and its unit."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from annotation.models.collection import Judge, PtkbStatement, Response, ResponseSentence, Turn
from annotation.topic_work.models import Condition


class TimedJudgment(models.Model):
    """What every human or machine label row carries besides its unit and its value."""

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="%(class)ss")
    time_spent_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


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


class PtkbJudgment(TimedJudgment):
    """Whether a PTKB statement is relevant to a turn."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="ptkb_judgments")
    statement = models.ForeignKey(PtkbStatement, on_delete=models.CASCADE, related_name="judgments")
    relevant = models.BooleanField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["judge", "turn", "statement"], name="ptkb_unique_unit"),
        ]

    def __str__(self) -> str:
        return f"{self.turn_id} {self.statement_id} = {int(self.relevant)}"


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


class SupportLabel(models.TextChoices):
    FULL = "FS", "Full support"
    PARTIAL = "PS", "Partial support"
    NONE = "NS", "No support"


SUPPORT_WEIGHTS = {SupportLabel.FULL: 1.0, SupportLabel.PARTIAL: 0.5, SupportLabel.NONE: 0.0}


class SupportJudgment(TimedJudgment):
    """Is an answer sentence supported by the passage it cites (its `citation_index`-th citation)?"""

    sentence = models.ForeignKey(ResponseSentence, on_delete=models.CASCADE, related_name="support_judgments")
    citation_index = models.PositiveSmallIntegerField(default=0)
    passage_id = models.CharField(max_length=255)
    label = models.CharField(max_length=2, choices=SupportLabel.choices)
    condition = models.CharField(max_length=12, choices=Condition.choices, default=Condition.IMPORTED)
    shown_label = models.CharField(max_length=2, choices=SupportLabel.choices, blank=True)
    changed = models.BooleanField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["judge", "sentence", "citation_index"], name="support_unique_unit"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.sentence} c{self.citation_index} = {self.label}"

    @property
    def weight(self) -> float:
        return SUPPORT_WEIGHTS[SupportLabel(self.label)]


class NuggetImportance(models.TextChoices):
    """How much a nugget matters to a good answer (TREC RAG's AutoNuggetizer words)."""

    VITAL = "vital", "Vital"
    OKAY = "okay", "Okay"


class NuggetSupport(models.TextChoices):
    """How far an answer contains a nugget; the values are nuggetizer's own strings."""

    SUPPORT = "support", "Support"
    PARTIAL = "partial_support", "Partial support"
    NONE = "not_support", "Not support"


NUGGET_SUPPORT_WEIGHTS = {NuggetSupport.SUPPORT: 1.0, NuggetSupport.PARTIAL: 0.5, NuggetSupport.NONE: 0.0}

# nuggetizer's word where its LLM gave no readable label, in either step. Only its files bring it (no page,
# crowd or Assay judge gives it); it is kept so that scores count it as nuggetizer does (an assignment
# "failed" supports nothing but counts in the share's whole; an importance "failed" is not vital) and the
# file comes back as it was. Agreement leaves it out: it is no judgment.
NUGGET_LABEL_FAILED = "failed"


class NuggetImportanceJudgment(TimedJudgment):
    """One judge's vital/okay label for a nugget (of any judge's nugget set)."""

    nugget = models.ForeignKey(Nugget, on_delete=models.CASCADE, related_name="importance_judgments")
    importance = models.CharField(
        max_length=6, choices=[*NuggetImportance.choices, (NUGGET_LABEL_FAILED, "Failed")]
    )
    condition = models.CharField(max_length=12, choices=Condition.choices, default=Condition.IMPORTED)
    shown_label = models.CharField(
        max_length=5, choices=NuggetImportance.choices, blank=True, help_text="Post-editing: the label shown."
    )
    changed = models.BooleanField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["judge", "nugget"], name="nugget_importance_unique_unit"),
        ]

    def __str__(self) -> str:
        return f"{self.nugget_id} = {self.importance}"


class NuggetAssignment(TimedJudgment):
    """Whether an answer supports a nugget, partly supports it or not (TREC RAG "nugget assignment").

    The word is the track's; it is a label on an (answer, nugget) pair, unrelated to the relevance
    `Assignment` that hands pooled turns to assessors.
    """

    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="nugget_assignments")
    nugget = models.ForeignKey(Nugget, on_delete=models.CASCADE, related_name="assignments")
    label = models.CharField(max_length=16, choices=[*NuggetSupport.choices, (NUGGET_LABEL_FAILED, "Failed")])
    condition = models.CharField(max_length=12, choices=Condition.choices, default=Condition.IMPORTED)
    shown_label = models.CharField(
        max_length=16, choices=NuggetSupport.choices, blank=True, help_text="Post-editing: the label shown."
    )
    changed = models.BooleanField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["judge", "response", "nugget"], name="nugget_assignment_unique_unit"
            ),
        ]
        indexes = [models.Index(fields=["response", "nugget"])]

    def __str__(self) -> str:
        return f"{self.response_id} ~ {self.nugget_id} = {self.label}"

    @property
    def weight(self) -> float:
        if self.label == NUGGET_LABEL_FAILED:
            return 0.0
        return NUGGET_SUPPORT_WEIGHTS[NuggetSupport(self.label)]
