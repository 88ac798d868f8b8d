"""The crowd app's models, each kept in its feature's package and imported here so Django registers them:
campaigns (campaigns, batches, test questions), answers (workers, assignments, answers), panel studies,
MTurk qualification tests and aggregation jobs."""

from crowd.aggregation.models import CrowdFitJob
from crowd.answers.models import (
    VOTING_STATUSES,
    CrowdAnswer,
    CrowdAssignment,
    CrowdAssignmentQuerySet,
    CrowdWorker,
)
from crowd.campaigns.models import BatchItem, CrowdBatch, CrowdCampaign, TestQuestion
from crowd.providers.mturk.models import CrowdQualification
from crowd.providers.panels.models import CrowdStudy

__all__ = [
    "VOTING_STATUSES",
    "BatchItem",
    "CrowdAnswer",
    "CrowdAssignment",
    "CrowdAssignmentQuerySet",
    "CrowdBatch",
    "CrowdCampaign",
    "CrowdFitJob",
    "CrowdQualification",
    "CrowdStudy",
    "CrowdWorker",
    "TestQuestion",
]
