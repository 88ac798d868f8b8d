"""The one writer of each kind of judgment row.

Pages, the JSON API, imports, crowd aggregation and machine judges all record a label through the
function here for its table, so that the rules of a label (its scale, how time spent adds up over
revisions, what a revision replaces) live in one place. One module per family of labels; callers import
from this package. The assessor's relevance grade is the one write made in a statement of its own
(annotation/relevance/grade_sql.py, checks and next passage in one round trip), and that statement embeds
this package's upsert (`relevance_upsert_sql`), so a grade's rules are still written down once.
"""

from annotation.judgments.base import JudgmentRefused, Outcome, Written
from annotation.judgments.nuggets import (
    NtnRow,
    NtrRow,
    gold_response_submit,
    ntn_judgments_store,
    ntr_judgment_submit,
    ntr_judgments_upsert,
    nugget_duplicates_mark,
    nugget_refusal,
    nugget_upsert,
    nuggets_create,
)
from annotation.judgments.rag_nuggets import (
    ASSIGNMENT_LABELS,
    IMPORTANCE_LABELS,
    AssignmentRow,
    ImportanceRow,
    NuggetDraft,
    importance_judgment_submit,
    importance_judgments_submit,
    importance_judgments_upsert,
    nugget_assignment_submit,
    nugget_assignments_submit,
    nugget_assignments_upsert,
    nugget_list_replace,
)
from annotation.judgments.relevance import (
    PtkbRow,
    RelevanceRow,
    ptkb_judgments_submit,
    ptkb_judgments_upsert,
    relevance_judgment_submit,
    relevance_judgments_upsert,
)
from annotation.judgments.support import (
    SUPPORT_LABELS,
    SupportRow,
    support_judgment_submit,
    support_judgments_upsert,
)

__all__ = [
    "ASSIGNMENT_LABELS",
    "IMPORTANCE_LABELS",
    "AssignmentRow",
    "ImportanceRow",
    "NuggetDraft",
    "importance_judgment_submit",
    "importance_judgments_submit",
    "importance_judgments_upsert",
    "nugget_assignment_submit",
    "nugget_assignments_submit",
    "nugget_assignments_upsert",
    "nugget_list_replace",
    "SUPPORT_LABELS",
    "JudgmentRefused",
    "NtnRow",
    "NtrRow",
    "Outcome",
    "PtkbRow",
    "RelevanceRow",
    "SupportRow",
    "Written",
    "gold_response_submit",
    "ntn_judgments_store",
    "ntr_judgment_submit",
    "ntr_judgments_upsert",
    "nugget_duplicates_mark",
    "nugget_refusal",
    "nugget_upsert",
    "nuggets_create",
    "ptkb_judgments_submit",
    "ptkb_judgments_upsert",
    "relevance_judgment_submit",
    "relevance_judgments_upsert",
    "support_judgment_submit",
    "support_judgments_upsert",
]
