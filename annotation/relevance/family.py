"""Relevance declared once: graded (turn, passage) pairs, their qrels files, their hybrid measures."""

from annotation.labels.family import Agreement, FileKind, Hybrid, LabelFamily, LabelTask, Scale
from annotation.relevance.io import qrels_download, qrels_upload
from annotation.relevance.models import RelevanceGrade, RelevanceJudgment

# The share of pooled pairs graded at least a threshold: a plain mean over pairs, the one relevance
# measure a hybrid estimate may sample by (turn, passage) pair.
RELEVANT_SHARE = "relevant_share"

FAMILY = LabelFamily(
    name="relevance",
    title="Passage relevance",
    tasks=(
        LabelTask(
            name="relevance",
            title="Passage relevance (0-4)",
            model=RelevanceJudgment,
            collection="turn__collection",
            agreement=Agreement(
                description="(turn, passage)",
                unit=("turn_id", "passage_id"),
                topic="turn__topic__number",
                label="grade",
                scale=Scale(
                    values=tuple(int(g) for g in RelevanceGrade.values),
                    names=tuple(str(label) for label in RelevanceGrade.labels),
                    ordinal=True,
                    alpha_level="ordinal",
                    binarisable=True,
                ),
            ),
            hybrid=Hybrid(
                default="nDCG@5",
                measures=(RELEVANT_SHARE,),
                any_measure="an ir_measures measure (nDCG@5, P(rel=2)@20, AP(rel=2), ...)",
                reads=(RelevanceJudgment,),
            ),
        ),
    ),
    files=(
        FileKind(
            "qrels",
            "Relevance qrels (TREC)",
            records="judgments",
            importer=qrels_upload,
            options=("replace", "require_passages"),
            exporter=qrels_download,
            # The assessors' grades of planted gold pairs stay out of their qrels unless asked.
            download_options=("include_gold",),
            task="relevance",
            # A qrels file's grades go in with one upsert: none, then all.
            progress_unit="grades stored",
        ),
    ),
)
