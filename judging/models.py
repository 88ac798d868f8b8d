"""Machine-judge bookkeeping. The labels themselves land in annotation's judgment tables."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models import Collection, Judge, Turn
from core.jobs import BackgroundJob, JobStatus, status_field
from judging.reports.models import ReportResult  # noqa: F401  Django registers an app's models from here

# --- LLM judge jobs and the call cache -------------------------------------------------------------


class JudgeJob(BackgroundJob):
    """One run of a machine judge over a collection: what it was asked, how far it got, what it cost."""

    class Task(models.TextChoices):
        RELEVANCE = "relevance", "Passage relevance"
        NUGGETS = "nuggets", "Nugget extraction"
        NTR = "ntr", "Nugget to response"
        SUPPORT = "support", "Support of answer sentences"
        NTN = "ntn", "Nugget to nugget (NLI)"
        DEDUP = "dedup", "Nugget de-duplication (NLI)"
        NUGGETS_CREATE = "nuggets-create", "Nugget list creation (TREC RAG)"
        IMPORTANCE = "importance", "Nugget importance, vital or okay"
        ASSIGNMENT = "assignment", "Nugget assignment to answers"

    # The Jobs page's words for the job states (core.jobs.JobStatus).
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="judge_jobs")
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="jobs")
    task = models.CharField(max_length=20, choices=Task.choices)
    model = models.CharField(max_length=200)
    prompt_version = models.CharField(max_length=100)
    options = models.JSONField(default=dict, blank=True, help_text="Turns, runs and task options of the job.")
    concurrency = models.PositiveSmallIntegerField(default=8)
    status = status_field(Status)
    units_total = models.PositiveIntegerField(default=0)
    units_done = models.PositiveIntegerField(default=0)
    units_failed = models.PositiveIntegerField(default=0)
    calls_made = models.PositiveIntegerField(
        default=0, help_text="Paid calls, the cache not counted (NLI jobs: pairs scored)."
    )
    cache_hits = models.PositiveIntegerField(
        default=0, help_text="Answers from the cache (NLI jobs: pairs already stored, not scored again)."
    )
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    error = models.TextField(blank=True)
    summary = models.TextField(blank=True, help_text="What the last run found, in words (NLI jobs).")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="judge_jobs"
    )
    # Saved with every progress report: a running job whose row stops moving lost its worker.
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.task} job {self.pk} ({self.judge.name})"

    @property
    def is_nli(self) -> bool:
        return self.task in (self.Task.NTN, self.Task.DEDUP)

    @property
    def percent(self) -> int:
        return round(100 * self.units_done / self.units_total) if self.units_total else 0


class LlmCall(models.Model):
    """A paid LLM call and its answer, keyed by model, prompt version, rendered prompt and parameters.

    A job asks this table before the API, so a re-run or a resumed job pays for no call twice.
    """

    key = models.CharField(
        max_length=64, unique=True, help_text="sha256 of model, prompt version, prompt, params."
    )
    model = models.CharField(max_length=200)
    prompt_version = models.CharField(max_length=100)
    prompt = models.TextField()
    params = models.JSONField(default=dict)
    answer = models.TextField()
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    job = models.ForeignKey(JudgeJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="calls")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.model} {self.prompt_version} {self.key[:10]}"


class LlmFailure(models.Model):
    """A unit a job could not label: the endpoint failed, or its answer did not parse (never a guessed label)."""

    job = models.ForeignKey(JudgeJob, on_delete=models.CASCADE, related_name="failures")
    unit = models.CharField(max_length=500)
    reason = models.TextField()
    answer = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["job", "id"]

    def __str__(self) -> str:
        return f"job {self.job_id} {self.unit}: {self.reason[:60]}"


class UnmatchedSpan(models.Model):
    """A nugget an LLM gave for a passage that could not be found in the passage, even after asking again."""

    job = models.ForeignKey(JudgeJob, null=True, on_delete=models.SET_NULL, related_name="unmatched_spans")
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="unmatched_spans")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="unmatched_spans")
    passage_id = models.CharField(max_length=255)
    text = models.TextField()

    class Meta:
        ordering = ["turn_id", "passage_id", "id"]

    def __str__(self) -> str:
        return f"{self.turn_id} {self.passage_id}: {self.text[:40]}"


# --- Hybrid assessment: the human samples drawn for prediction-powered estimates ---------------------


class HumanSample(models.Model):
    """Units drawn for people to judge, with a known probability each, so hybrid estimates stay valid.

    `population` is the number of units the sample was drawn from (the units the machine judge labelled);
    the weighted estimators need it besides each drawn unit's inclusion probability.
    """

    class Strategy(models.TextChoices):
        UNIFORM = "uniform", "Uniform, fixed size"
        UNCERTAINTY = "uncertainty", "Where the machine is least sure (unit by unit)"
        STRATIFIED = "stratified", "Stratified by the machine's label"
        TWO_STAGE = "two-stage", "Turns, then pairs within each drawn turn"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="human_samples")
    name = models.SlugField(max_length=100)
    task = models.CharField(max_length=20)
    unit = models.CharField(max_length=10, help_text="turn or pair")
    measure = models.CharField(max_length=100, blank=True)
    machine_judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="human_samples")
    strategy = models.CharField(max_length=12, choices=Strategy.choices)
    budget = models.PositiveIntegerField()
    seed = models.BigIntegerField(null=True, blank=True)
    population = models.PositiveIntegerField()
    work = models.CharField(max_length=200, blank=True, help_text="The assignment or campaign created.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "name"], name="human_sample_unique_name"),
            models.CheckConstraint(condition=models.Q(population__gte=1), name="human_sample_population_1"),
        ]

    def __str__(self) -> str:
        return f"{self.collection.name}/{self.name}"


class SampleUnit(models.Model):
    """One drawn unit (a turn id, or 'turn id<TAB>passage id') and its probability of having been drawn."""

    sample = models.ForeignKey(HumanSample, on_delete=models.CASCADE, related_name="units")
    key = models.CharField(max_length=500)
    inclusion_probability = models.FloatField()
    # Stratified designs: the stratum the unit was drawn from (the machine's label, and the turn where
    # turns are strata too), so estimators can weight within strata without redrawing them.
    stratum = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["sample", "id"]
        constraints = [
            models.UniqueConstraint(fields=["sample", "key"], name="sample_unit_unique_key"),
            models.CheckConstraint(
                condition=models.Q(inclusion_probability__gt=0) & models.Q(inclusion_probability__lte=1),
                name="sample_unit_probability_0_1",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.sample_id} {self.key} (pi={self.inclusion_probability:.3g})"


# --- Budget simulations started from the hybrid budget page ----------------------------------------------


class BudgetSimulation(BackgroundJob):
    """One run of the budget page's simulation (and plan): thousands of drawn samples take seconds to
    minutes on a collection of real size, so a task worker computes it (judging/hybrid/tasks.py) and the
    page shows this row, then the stored figures."""

    Status = JobStatus

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="budget_simulations")
    # The form's cleaned choices with judges and samples by name, as `judging.hybrid.budget` reads them.
    params = models.JSONField()
    # sha256 of the canonical params, and of the labels and runs they read when it was asked (or run):
    # an identical request on unchanged labels is answered by this row instead of a new simulation.
    params_key = models.CharField(max_length=64)
    fingerprint = models.CharField(max_length=64)
    result = models.JSONField(null=True, blank=True)
    # Why it failed (the page shows it as it is).
    message = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="budget_simulations",
    )

    class Meta(BackgroundJob.Meta):
        indexes = [models.Index(fields=["collection", "params_key"], name="budget_sim_params")]

    def __str__(self) -> str:
        return f"{self.collection.name} budget simulation {self.pk} ({self.status})"
