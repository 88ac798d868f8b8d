"""Crowd nugget matching: campaigns of batched response–nugget pairs with test questions.

A campaign turns chosen turns x chosen runs' responses x the turn's gold nuggets into batches of
`batch_size` pairs plus `tests_per_batch` test questions with known answers. Each batch goes to
`assignments_per_batch` workers, in the platform or as an MTurk HIT. Every worker's raw answers stay
in crowd/answers (CrowdAssignment, CrowdAnswer); the aggregated label becomes an annotation.NtrJudgment of a crowd
Judge such as "mturk-majority".
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from annotation.models import Collection, Judge, Nugget, NuggetSupport, Response, Run, Turn


class CrowdCampaign(models.Model):
    class Provider(models.TextChoices):
        PLATFORM = "platform", "In-platform"
        MTURK = "mturk", "Amazon Mechanical Turk"

    class Kind(models.TextChoices):
        # CONE-RAG's question: does the answer contain the fact (yes/no), labels are NtrJudgments.
        NTR = "ntr", "Nugget matching (yes / no)"
        # TREC RAG's: support / partial support / not support, labels are NuggetAssignments.
        NUGGET_SUPPORT = "nugget-support", "Nugget assignment (support / partial / not)"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="crowd_campaigns")
    name = models.SlugField(max_length=100, unique=True)
    provider = models.CharField(max_length=10, choices=Provider.choices, default=Provider.PLATFORM)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.NTR)
    nugget_judge = models.ForeignKey(
        Judge, on_delete=models.PROTECT, related_name="+", help_text="Whose gold nuggets are matched."
    )
    label_judge = models.ForeignKey(
        Judge, on_delete=models.PROTECT, related_name="+", help_text="The crowd judge the labels belong to."
    )
    turns = models.ManyToManyField(Turn, related_name="+")
    runs = models.ManyToManyField(Run, related_name="+")
    skip_duplicates = models.BooleanField(default=True, help_text="Leave out nuggets marked duplicate_of.")
    seed = models.IntegerField(default=0)
    batch_size = models.PositiveSmallIntegerField(default=10)
    tests_per_batch = models.PositiveSmallIntegerField(default=1)
    assignments_per_batch = models.PositiveSmallIntegerField(default=3)
    # MTurk HIT type
    title = models.CharField(max_length=200, default="Does the answer contain this fact?")
    description = models.TextField(
        default="Read a short answer and a fact; say whether the answer states the fact. 11 questions."
    )
    keywords = models.CharField(max_length=200, default="relevance, text, fact checking")
    reward = models.DecimalField(max_digits=6, decimal_places=2, default="0.50")
    duration_seconds = models.PositiveIntegerField(default=1800)
    lifetime_seconds = models.PositiveIntegerField(default=7 * 24 * 3600)
    auto_approval_delay_seconds = models.PositiveIntegerField(default=3 * 24 * 3600)
    hit_type_id = models.CharField(max_length=64, blank=True)
    block_qualification_id = models.CharField(
        max_length=64, blank=True, help_text="MTurk qualification given to workers who failed test questions."
    )
    # The last fit of the aggregation models (crowd/aggregation): per method its accuracy on the test
    # questions and each worker's reliability. Fitting takes seconds at a campaign's size, so the campaign
    # page shows what the last aggregation stored instead of fitting on every view.
    fit_report = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(batch_size__gte=1), name="crowd_campaign_batch_size_positive"),
            models.CheckConstraint(
                condition=Q(assignments_per_batch__gte=1), name="crowd_campaign_assignments_positive"
            ),
        ]

    def __str__(self) -> str:
        return self.name


# The judges a campaign's labels go to, by provider, so labels from the platform's own workers are not
# filed as Mechanical Turk's. Here beside the campaign, not with the services that write those labels:
# the crowd app reserves the names at every start-up (crowd/apps.py), which should not import the services.
#
# The crowd judge a campaign's majority labels go to unless it names one.
LABEL_JUDGE_BY_PROVIDER: dict[str, str] = {
    CrowdCampaign.Provider.PLATFORM: "crowd-majority",
    CrowdCampaign.Provider.MTURK: "mturk-majority",
}
# A nugget-support campaign's labels are NuggetAssignments, aggregated by one of several methods
# (crowd/aggregation): the majority's judge is named after the provider, each model's after that.
NUGGET_LABEL_JUDGE_BY_PROVIDER: dict[str, str] = {
    CrowdCampaign.Provider.PLATFORM: "crowd-nuggets",
    CrowdCampaign.Provider.MTURK: "mturk-nuggets",
}
# Each worker's own votes go to a judge of theirs: this prefix, then the worker's id.
WORKER_JUDGE_PREFIX: dict[str, str] = {
    CrowdCampaign.Provider.MTURK: "mturk-worker",
    CrowdCampaign.Provider.PLATFORM: "crowd-worker",
}


class TestQuestion(models.Model):
    """A response–nugget pair whose answer is known, used to catch careless workers."""

    __test__ = False  # not a pytest test class, despite the name

    class Source(models.TextChoices):
        ORGANISER = "organiser", "Written by an organiser"
        GENERATED = "generated", "Generated from a nugget"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="crowd_test_questions")
    response_text = models.TextField()
    nugget_text = models.TextField()
    answer = models.BooleanField()
    # The known three-way answer of a nugget-support question ('' for a yes/no one); `answer` is then
    # whether the answer states the nugget at least in part.
    support = models.CharField(max_length=16, choices=NuggetSupport.choices, blank=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.ORGANISER)
    origin = models.ForeignKey(Nugget, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"test {self.id} ({self.expected})"

    @property
    def expected(self) -> str:
        """The known answer as the worker gives it: a NuggetSupport value, or yes / no."""
        return self.support or ("yes" if self.answer else "no")


class CrowdBatch(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", "Open"
        PUBLISHED = "published", "Published on MTurk"
        EXPIRED = "expired", "Expired"
        # MTurk no longer knows the batch's HIT (deleted, or disposed of after its retention period).
        MISSING = "missing", "HIT missing on MTurk"

    campaign = models.ForeignKey(CrowdCampaign, on_delete=models.CASCADE, related_name="batches")
    index = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    max_assignments = models.PositiveSmallIntegerField()
    hit_id = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["campaign", "index"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "index"], name="crowd_batch_unique_index"),
            models.UniqueConstraint(
                fields=["hit_id"], condition=~Q(hit_id=""), name="crowd_batch_unique_hit"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.campaign.name} batch {self.index}"


class BatchItem(models.Model):
    """One question of a batch: a pair to label or a test question, at its position (0-based)."""

    batch = models.ForeignKey(CrowdBatch, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveSmallIntegerField()
    response = models.ForeignKey(Response, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    nugget = models.ForeignKey(Nugget, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    test_question = models.ForeignKey(
        TestQuestion, null=True, blank=True, on_delete=models.PROTECT, related_name="items"
    )

    class Meta:
        ordering = ["batch", "position"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "position"], name="crowd_item_unique_position"),
            models.CheckConstraint(
                condition=(
                    Q(test_question__isnull=True, response__isnull=False, nugget__isnull=False)
                    | Q(test_question__isnull=False, response__isnull=True, nugget__isnull=True)
                ),
                name="crowd_item_pair_or_test",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.batch} #{self.position + 1}"

    @property
    def is_test(self) -> bool:
        return self.test_question_id is not None

    @property
    def response_text(self) -> str:
        if self.test_question is not None:
            return self.test_question.response_text
        assert self.response is not None  # crowd_item_pair_or_test: a pair has both
        return self.response.text

    @property
    def nugget_text(self) -> str:
        if self.test_question is not None:
            return self.test_question.nugget_text
        assert self.nugget is not None  # crowd_item_pair_or_test: a pair has both
        return self.nugget.text
