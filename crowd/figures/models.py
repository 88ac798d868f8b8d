"""The figures the campaign page shows, kept by PostgreSQL triggers (crowd/figures/triggers.py) as answers,
assignments and batches are written, so that the page reads a few rows however many answers a campaign has.

Nothing in Python writes these tables. They point at what they count by key without a foreign key
constraint: the triggers remove a row when what it counts is deleted, and Django's cascades never touch them.
"""

from __future__ import annotations

from django.db import models

from core.wording import plural


class CampaignFigures(models.Model):
    """A campaign's batches by state, its places, and what its paid assignments cost (the sums over its
    `BatchFigures`)."""

    campaign = models.OneToOneField(
        "crowd.CrowdCampaign",
        primary_key=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    batches = models.IntegerField(default=0)
    # By what their rows say (crowd/campaigns/report.py `batch_state`): complete, full, open or closed.
    batches_complete = models.IntegerField(default=0)
    batches_full = models.IntegerField(default=0)
    batches_open = models.IntegerField(default=0)
    batches_closed = models.IntegerField(default=0)
    places = models.BigIntegerField(default=0)
    answered = models.BigIntegerField(default=0)
    # Assignments neither provisional nor rejected, and their bonuses: what the campaign pays.
    paid = models.BigIntegerField(default=0)
    bonus = models.DecimalField(max_digits=14, decimal_places=2, default=0)

    def __str__(self) -> str:
        return f"campaign {self.campaign_id}: {plural(self.batches, 'batch')}"


class BatchFigures(models.Model):
    """One batch's confirmed, passing, provisional and paid assignments, beside the batch's places and
    whether it can still be taken."""

    batch = models.OneToOneField(
        "crowd.CrowdBatch",
        primary_key=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    campaign_id = models.BigIntegerField(db_index=True)
    max_assignments = models.IntegerField()
    takeable = models.BooleanField(help_text="Open or published.")
    submitted = models.IntegerField(default=0)
    passed = models.IntegerField(default=0)
    accepted = models.IntegerField(default=0)
    paid = models.IntegerField(default=0)
    bonus = models.DecimalField(max_digits=12, decimal_places=2, default=0)

    def __str__(self) -> str:
        return f"batch {self.batch_id}: {self.submitted}/{self.max_assignments}"


class WorkerFigures(models.Model):
    """One worker's confirmed or rejected assignments in one campaign, their answers and test answers."""

    campaign_id = models.BigIntegerField()
    worker = models.ForeignKey(
        "crowd.CrowdWorker", on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    assignments = models.IntegerField(default=0)
    answers = models.IntegerField(default=0)
    tests = models.IntegerField(default=0)
    tests_right = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign_id", "worker"], name="crowd_worker_figures_unique"),
        ]

    def __str__(self) -> str:
        return (
            f"campaign {self.campaign_id} worker {self.worker_id}: {plural(self.assignments, 'assignment')}"
        )


class ItemVotes(models.Model):
    """The votes on one pair (not a test question) of the workers who passed the tests, by answer: `v0`,
    `v1` are no / yes in a yes/no campaign; `v0`, `v1`, `v2` the three NuggetSupport values in order in a
    nugget-support one."""

    item = models.OneToOneField(
        "crowd.BatchItem",
        primary_key=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    campaign_id = models.BigIntegerField()
    v0 = models.IntegerField(default=0)
    v1 = models.IntegerField(default=0)
    v2 = models.IntegerField(default=0)

    def __str__(self) -> str:
        return f"item {self.item_id}: {self.v0}/{self.v1}/{self.v2}"


class VoteProfile(models.Model):
    """How many of a campaign's pairs have these votes (two or more): Krippendorff's alpha depends on
    nothing else, and a campaign has a few dozen profiles whatever its size."""

    campaign_id = models.BigIntegerField()
    v0 = models.IntegerField()
    v1 = models.IntegerField()
    v2 = models.IntegerField()
    units = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["campaign_id", "v0", "v1", "v2"], name="crowd_vote_profile_unique"
            ),
        ]

    def __str__(self) -> str:
        return (
            f"campaign {self.campaign_id}: {plural(self.units, 'pair')} voted {self.v0}/{self.v1}/{self.v2}"
        )
