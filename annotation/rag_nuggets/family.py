"""TREC RAG nuggets declared once: vital/okay of a nugget, the three-level assignment of (answer,
nugget), nuggetizer's files, and the nugget scores a hybrid estimate takes."""

from annotation.labels.family import Agreement, FileKind, Hybrid, LabelFamily, LabelTask, Scale

# Nugget is the nuggets family's model, which these labels point at: read through annotation.models.
from annotation.models import Condition, Nugget
from annotation.rag_nuggets.formats import SCORE_NAMES
from annotation.rag_nuggets.io import assignments_upload, created_nuggets_upload
from annotation.rag_nuggets.models import (
    NUGGET_LABEL_FAILED,
    NuggetAssignment,
    NuggetImportanceJudgment,
    NuggetSupport,
)

# Ordered like support: not_support 0, partial 0.5, support 1.
_ASSIGNMENT = (NuggetSupport.NONE, NuggetSupport.PARTIAL, NuggetSupport.SUPPORT)
_HUMAN = frozenset({Condition.SCRATCH, Condition.POST_EDIT})

FAMILY = LabelFamily(
    name="rag_nuggets",
    title="TREC RAG nuggets",
    tasks=(
        LabelTask(
            name="nugget-importance",
            title="Nugget importance (vital/okay)",
            model=NuggetImportanceJudgment,
            collection="nugget__turn__collection",
            # nuggetizer's "failed" (its LLM gave no readable label) is no judgment to agree with.
            agreement=Agreement(
                description="nugget",
                unit=("nugget_id", "nugget__turn_id"),
                topic="nugget__turn__topic__number",
                label="importance",
                scale=Scale(values=("okay", "vital"), names=("Okay", "Vital")),
                excluded=(NUGGET_LABEL_FAILED,),
                human_conditions=_HUMAN,
            ),
        ),
        LabelTask(
            name="nugget-assignment",
            title="Nugget assignment",
            model=NuggetAssignment,
            collection="response__run__collection",
            agreement=Agreement(
                description="(answer, nugget)",
                unit=("response_id", "nugget_id"),
                topic="response__turn__topic__number",
                label="label",
                scale=Scale(
                    values=tuple(label.value for label in _ASSIGNMENT),
                    names=tuple(str(label.label) for label in _ASSIGNMENT),
                    ordinal=True,
                ),
                excluded=(NUGGET_LABEL_FAILED,),
                human_conditions=_HUMAN,
            ),
            hybrid=Hybrid(
                default="all_score",
                measures=SCORE_NAMES,
                reads=(NuggetAssignment, NuggetImportanceJudgment, Nugget),
            ),
        ),
    ),
    files=(
        FileKind(
            "nuggetizer-nuggets",
            "TREC RAG created nuggets with vital/okay (nuggetizer JSONL)",
            records="nuggets",
            importer=created_nuggets_upload,
        ),
        FileKind(
            "nugget-assignments",
            "TREC RAG nugget assignments (nuggetizer JSONL)",
            records="assignments",
            importer=assignments_upload,
            options=("nugget_judge",),
        ),
    ),
)
