"""Support declared once: FS/PS/NS labels of (answer sentence, citation), their file, their measures."""

from annotation.labels.family import Agreement, FileKind, Hybrid, LabelFamily, LabelTask, Scale
from annotation.models.judgments import Condition
from annotation.support.io import support_labels_download, support_labels_upload
from annotation.support.models import SupportJudgment, SupportLabel

_ORDER = (SupportLabel.NONE, SupportLabel.PARTIAL, SupportLabel.FULL)

FAMILY = LabelFamily(
    name="support",
    title="Citation support",
    tasks=(
        LabelTask(
            name="support",
            title="Citation support",
            model=SupportJudgment,
            collection="sentence__response__run__collection",
            # Support is ordered NS < PS < FS (weights 0, 0.5, 1), so weighted kappa is meaningful; the
            # papers report alpha on it as nominal categories.
            agreement=Agreement(
                description="(answer sentence, citation)",
                unit=("sentence_id", "citation_index"),
                topic="sentence__response__turn__topic__number",
                label="label",
                scale=Scale(
                    values=tuple(label.value for label in _ORDER),
                    names=tuple(str(label.label) for label in _ORDER),
                    ordinal=True,
                ),
                human_conditions=frozenset({Condition.SCRATCH, Condition.POST_EDIT, Condition.BLIND}),
            ),
            hybrid=Hybrid(
                default="weighted_precision",
                measures=("weighted_precision", "weighted_recall"),
                reads=(SupportJudgment,),
            ),
        ),
    ),
    files=(
        FileKind(
            "support-labels",
            "Support labels (JSONL)",
            records="support labels",
            importer=support_labels_upload,
            exporter=support_labels_download,
            task="support",
            progress_unit="labels stored",
        ),
    ),
)
