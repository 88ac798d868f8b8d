"""A test collection and every label given on it.

Every label row points at the Judge that gave it (an assessor, a crowd aggregate, an LLM with a prompt
version, an NLI model, or an imported file) and at its unit, so comparing two judges on the units they
share is one query whatever the task.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


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

    class Meta:
        ordering = ["topic_id", "position"]
        constraints = [models.UniqueConstraint(fields=["collection", "turn_id"], name="turn_unique_id")]

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

    class Meta:
        ordering = ["run", "turn", "rank"]
        constraints = [
            models.UniqueConstraint(fields=["run", "turn", "rank"], name="response_unique_run_turn_rank"),
        ]

    def __str__(self) -> str:
        return f"{self.run.name} {self.turn.turn_id} #{self.rank}"


class ResponseSentence(models.Model):
    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="sentences")
    index = models.PositiveIntegerField(help_text="0-based position of the sentence in the answer.")
    text = models.TextField()
    citations = models.JSONField(default=list, blank=True, help_text="Cited passage ids, in citation order.")

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

    @property
    def is_human(self) -> bool:
        return self.kind in {self.Kind.ASSESSOR, self.Kind.CROWD}


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
    # NLI matching (issue 7): the response a response nugget was extracted from, so NtN metrics can tell
    # apart the nuggets of several runs' responses to the same turn under one extraction judge.
    response = models.ForeignKey(
        Response, null=True, blank=True, on_delete=models.CASCADE, related_name="nuggets"
    )

    class Meta:
        ordering = ["turn_id", "id"]
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

    class Condition(models.TextChoices):
        SCRATCH = "scratch", "From scratch"
        POST_EDIT = "post-edit", "Post-editing"
        MACHINE = "machine", "Machine"
        IMPORTED = "imported", "Imported"
        BLIND = "blind", "Blind re-assessment"

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


# --- Support assessment (issue 6): organisers' per-topic-and-assessor conditions ----------------------


class SupportAssignment(models.Model):
    """Which condition an assessor judges a topic's support units in, chosen by an organiser.

    One row per (topic, assessor), so an assessor meets a topic's units in one condition only. A blind
    re-assessment names its sampled units in `units` ([sentence id, citation index] pairs); the other
    conditions cover every unit of the topic up to the first `max_citations` citations of each sentence.
    """

    class Condition(models.TextChoices):
        SCRATCH = "scratch", "From scratch"
        POST_EDIT = "post-edit", "Post-editing"
        BLIND = "blind", "Blind re-assessment"

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="support_assignments")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="support_assignments"
    )
    condition = models.CharField(max_length=12, choices=Condition.choices)
    machine_judge = models.ForeignKey(
        Judge,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="support_assignments_shown",
        help_text="Post-editing: the judge whose label is shown and preselected.",
    )
    max_citations = models.PositiveSmallIntegerField(default=1)
    units = models.JSONField(
        default=list, blank=True, help_text="Blind: [sentence id, citation index] pairs."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["topic_id", "user_id"]
        constraints = [
            models.UniqueConstraint(fields=["topic", "user"], name="support_assignment_unique_topic_user"),
            models.CheckConstraint(
                condition=~Q(condition="post-edit") | Q(machine_judge__isnull=False),
                name="support_assignment_post_edit_has_judge",
            ),
            models.CheckConstraint(
                condition=Q(max_citations__gte=1), name="support_assignment_max_citations_1"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.topic.number} {self.user} ({self.condition})"


# --- Relevance pooling and assignment of assessment work (issue 3, part A) -------------------------


class Pool(models.Model):
    """The (turn, passage) pairs chosen from the runs for human assessment.

    Plain pooling takes every run's top `depth` per turn. Adaptive pooling (iKAT 2024) takes every
    passage ranked 1..`always_depth` and, from `always_depth`+1 to `depth`, only those a filter judge
    (typically an LLM) graded at least `min_grade`.
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
    copy = models.PositiveSmallIntegerField()
    # The unit's assignment and position, copied here so that the first free copy is found by walking
    # the open copies in order (work_slot_open_in_order) instead of every unit the assignment has.
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveIntegerField()
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="work_slots"
    )
    leased_until = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
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


# --- Gold nuggets (issue 4): the turns a nugget set covers --------------------------------------------


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
