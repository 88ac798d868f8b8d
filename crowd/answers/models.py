"""Crowd answers: the workers, each worker's go at a batch (CrowdAssignment) and its answer to each question
(CrowdAnswer), kept raw whoever gave them; crowd/answers/services.py is the one way they are written."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models import NuggetSupport
from crowd.campaigns.models import BatchItem, CrowdBatch


class CrowdWorker(models.Model):
    """A person answering batches: an MTurk WorkerId, an account, or an anonymous link's label."""

    worker_id = models.CharField(max_length=128, unique=True)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="crowd_worker",
    )
    blocked = models.BooleanField(default=False)

    def __str__(self) -> str:
        return self.worker_id


class CrowdAssignmentQuerySet(models.QuerySet["CrowdAssignment"]):
    def voting(self) -> CrowdAssignmentQuerySet:
        """Assignments whose answers count: confirmed (by MTurk, an account or a signed link), not rejected."""
        return self.filter(status__in=VOTING_STATUSES)

    def provisional(self) -> CrowdAssignmentQuerySet:
        return self.filter(status=CrowdAssignment.Status.ACCEPTED)


class CrowdAssignment(models.Model):
    """One worker's go at one batch; `assignment_id` is MTurk's AssignmentId or one we make.

    Answers posted to the MTurk HIT page are stored as Accepted: provisional, since anyone can post
    there under any assignment and worker id. They neither vote nor take a place of the batch until
    `mturk_sync` sees the same assignment id and worker id from MTurk.

    In a panel study (crowd/providers/panels/services.py) an Accepted row without answers holds the place a participant
    took when they opened the study, for the campaign's work time, until their answers replace it.
    """

    class Status(models.TextChoices):
        ACCEPTED = "Accepted", "Accepted (provisional, not yet confirmed by MTurk)"
        SUBMITTED = "Submitted", "Submitted"
        APPROVED = "Approved", "Approved"
        REJECTED = "Rejected", "Rejected"

    batch = models.ForeignKey(CrowdBatch, on_delete=models.CASCADE, related_name="assignments")
    worker = models.ForeignKey(CrowdWorker, on_delete=models.CASCADE, related_name="assignments")
    assignment_id = models.CharField(max_length=128, unique=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.SUBMITTED)
    accept_time = models.DateTimeField(null=True, blank=True)
    submit_time = models.DateTimeField(null=True, blank=True)
    passed_tests = models.BooleanField(null=True, help_text="Null until scored.")
    feedback = models.TextField(blank=True)
    # Bonuses paid on top of the reward (MTurk SendBonus), counted in the campaign's cost.
    bonus = models.DecimalField(max_digits=6, decimal_places=2, default=0)

    objects = CrowdAssignmentQuerySet.as_manager()

    class Meta:
        ordering = ["batch", "id"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "worker"], name="crowd_assignment_one_per_worker"),
        ]

    def __str__(self) -> str:
        return self.assignment_id

    @property
    def is_provisional(self) -> bool:
        return self.status == self.Status.ACCEPTED

    @property
    def work_seconds(self) -> float | None:
        if self.accept_time and self.submit_time:
            return (self.submit_time - self.accept_time).total_seconds()
        return None


# Confirmed assignments that vote in the majority and take one of the batch's places.
VOTING_STATUSES = [CrowdAssignment.Status.SUBMITTED, CrowdAssignment.Status.APPROVED]


class CrowdAnswer(models.Model):
    assignment = models.ForeignKey(CrowdAssignment, on_delete=models.CASCADE, related_name="answers")
    item = models.ForeignKey(BatchItem, on_delete=models.CASCADE, related_name="answers")
    matched = models.BooleanField()
    # A nugget-support campaign's three-way answer ('' in a yes/no campaign); `matched` then says whether
    # it is support or partial support, so counts of yes answers mean the same in both kinds.
    support = models.CharField(max_length=16, choices=NuggetSupport.choices, blank=True)
    time_spent_ms = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["assignment", "item__position"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "item"], name="crowd_answer_unique_item"),
        ]

    def __str__(self) -> str:
        return f"{self.assignment} #{self.item.position + 1} = {int(self.matched)}"
