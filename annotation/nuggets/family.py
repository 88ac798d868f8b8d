"""Gold nuggets declared once: nugget lists and gold responses (not compared), NtR and NtN labels."""

from annotation.labels.family import Agreement, FileKind, Hybrid, LabelFamily, LabelTask, Scale
from annotation.nuggets.io import (
    gold_responses_download,
    gold_responses_upload,
    nuggets_download,
    nuggets_upload,
)
from annotation.nuggets.models import GoldResponse, NtnJudgment, NtrJudgment, Nugget

FAMILY = LabelFamily(
    name="nuggets",
    title="Gold nuggets",
    tasks=(
        LabelTask(name="nuggets", title="Gold nuggets", model=Nugget, collection="turn__collection"),
        LabelTask(
            name="gold_response", title="Gold responses", model=GoldResponse, collection="turn__collection"
        ),
        LabelTask(
            name="ntr",
            title="Nugget to response (NtR)",
            model=NtrJudgment,
            collection="response__run__collection",
            agreement=Agreement(
                description="(response, gold nugget)",
                unit=("response_id", "nugget_id"),
                topic="response__turn__topic__number",
                label="matched",
                scale=Scale(values=(0, 1), names=("not matched", "matched")),
            ),
            hybrid=Hybrid(
                default="ntr_recall", measures=("ntr_recall",), reads=(NtrJudgment, Nugget), needs_gold=True
            ),
        ),
        LabelTask(
            name="ntn",
            title="Nugget matching (NtN)",
            model=NtnJudgment,
            collection="gold_nugget__turn__collection",
            agreement=Agreement(
                description="(response nugget, gold nugget)",
                unit=("response_nugget_id", "gold_nugget_id"),
                topic="gold_nugget__turn__topic__number",
                label="entails",
                scale=Scale(values=(0, 1), names=("not entailed", "entailed")),
            ),
        ),
    ),
    files=(
        FileKind(
            "nuggets",
            "Gold nuggets",
            records="nuggets",
            importer=nuggets_upload,
            options=("fmt", "dedup_of"),
            formats="JSONL or CONE-RAG JSON",
            exporter=nuggets_download,
            download_options=("fmt", "dedup"),
            task="nuggets",
            progress_unit="nuggets stored",
        ),
        FileKind(
            "gold-responses",
            "Gold responses",
            records="gold responses",
            importer=gold_responses_upload,
            options=("nugget_judge", "fmt"),
            formats="JSONL or CONE-RAG JSON",
            exporter=gold_responses_download,
            download_options=("fmt", "nugget_judge"),
            task="gold_response",
        ),
    ),
)
