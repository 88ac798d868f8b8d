"""PTKB declared once: yes/no labels of (turn, PTKB statement), and their PTKB qrels files."""

from annotation.labels.family import Agreement, FileKind, LabelFamily, LabelTask, Scale
from annotation.ptkb.io import ptkb_qrels_download, ptkb_qrels_upload
from annotation.ptkb.models import PtkbJudgment

FAMILY = LabelFamily(
    name="ptkb",
    title="PTKB statement relevance",
    tasks=(
        LabelTask(
            name="ptkb",
            title="PTKB statement relevance",
            model=PtkbJudgment,
            collection="turn__collection",
            agreement=Agreement(
                description="(turn, PTKB statement)",
                unit=("turn_id", "statement_id"),
                topic="turn__topic__number",
                label="relevant",
                scale=Scale(values=(0, 1), names=("not relevant", "relevant")),
            ),
        ),
    ),
    files=(
        FileKind(
            "ptkb-qrels",
            "PTKB qrels",
            records="PTKB judgments",
            importer=ptkb_qrels_upload,
            options=("replace",),
            exporter=ptkb_qrels_download,
            task="ptkb",
        ),
    ),
)
