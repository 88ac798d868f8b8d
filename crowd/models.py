"""The crowd app's models, each kept in its feature's package and imported here so Django registers them:
campaigns (campaigns, batches, test questions), answers (workers, assignments, answers), panel studies,
MTurk qualification tests, aggregation jobs, and the campaign page's kept figures."""

from crowd.aggregation.models import CrowdFitJob
from crowd.answers.models import (
    VOTING_STATUSES,
    CrowdAnswer,
    CrowdAssignment,
    CrowdAssignmentQuerySet,
    CrowdWorker,
)
from crowd.campaigns.models import BatchItem, CrowdBatch, CrowdCampaign, TestQuestion
from crowd.figures.models import BatchFigures, CampaignFigures, ItemVotes, VoteProfile, WorkerFigures
from crowd.providers.mturk.models import CrowdQualification
from crowd.providers.panels.models import CrowdStudy

__all__ = [
    "VOTING_STATUSES",
    "BatchFigures",
    "BatchItem",
    "CampaignFigures",
    "CrowdAnswer",
    "CrowdAssignment",
    "CrowdAssignmentQuerySet",
    "CrowdBatch",
    "CrowdCampaign",
    "CrowdFitJob",
    "CrowdQualification",
    "CrowdStudy",
    "CrowdWorker",
    "ItemVotes",
    "TestQuestion",
    "VoteProfile",
    "WorkerFigures",
]
