"""The collection and every label and piece of work on it, importable from here.

The collection and what all labels share live in this package; each label family's models live in the
family's own package (`annotation/<family>/models.py`) and are imported here so Django registers them."""

from annotation.labels.models import JudgeLabels
from annotation.models.collection import (
    Collection,
    Judge,
    Passage,
    PassageCount,
    PtkbStatement,
    Ranking,
    Response,
    ResponseSentence,
    Run,
    Topic,
    Turn,
)
from annotation.models.judgments import WORK_CONDITIONS, Condition, TimedJudgment
from annotation.nuggets.models import (
    MAX_NUGGET_TEXT,
    GoldResponse,
    NtnJudgment,
    NtrJudgment,
    Nugget,
    NuggetSetTurn,
    NuggetTurnCount,
)
from annotation.ptkb.models import PtkbJudgment
from annotation.rag_nuggets.models import (
    NUGGET_LABEL_FAILED,
    NUGGET_SUPPORT_WEIGHTS,
    NuggetAssignment,
    NuggetEdit,
    NuggetImportance,
    NuggetImportanceJudgment,
    NuggetSupport,
)
from annotation.relevance.adjudication.models import Adjudication, AdjudicationItem
from annotation.relevance.models import (
    Assignment,
    Pool,
    PoolEntry,
    RelevanceGrade,
    RelevanceJudgment,
    WorkSlot,
    WorkUnit,
)
from annotation.relevance.quality.models import AssessorPause, GoldGrade, GoldPair, GoldPlan
from annotation.support.models import SUPPORT_WEIGHTS, SupportJudgment, SupportLabel
from annotation.topic_work.models import TopicWork

__all__ = [
    "Collection",
    "Topic",
    "PtkbStatement",
    "Turn",
    "Passage",
    "PassageCount",
    "Run",
    "Ranking",
    "Response",
    "ResponseSentence",
    "Judge",
    "JudgeLabels",
    "TimedJudgment",
    "RelevanceGrade",
    "RelevanceJudgment",
    "PtkbJudgment",
    "Nugget",
    "GoldResponse",
    "NtrJudgment",
    "NtnJudgment",
    "SupportLabel",
    "SUPPORT_WEIGHTS",
    "SupportJudgment",
    "Pool",
    "PoolEntry",
    "Assignment",
    "WorkUnit",
    "WorkSlot",
    "NuggetSetTurn",
    "NuggetTurnCount",
    "Condition",
    "WORK_CONDITIONS",
    "NuggetImportance",
    "NuggetSupport",
    "MAX_NUGGET_TEXT",
    "NUGGET_LABEL_FAILED",
    "NUGGET_SUPPORT_WEIGHTS",
    "NuggetImportanceJudgment",
    "NuggetAssignment",
    "TopicWork",
    "NuggetEdit",
    "GoldPlan",
    "GoldPair",
    "GoldGrade",
    "AssessorPause",
    "Adjudication",
    "AdjudicationItem",
]
