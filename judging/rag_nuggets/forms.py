"""The form of the TREC RAG nugget score pages: whose assignments, whose vital/okay labels, whose nugget
lists, the score the runs are ranked by, and whether a run's mean is over the topics it answered only.

The query string carries it, so a table can be bookmarked and shared; the menus offer the judges with
labels of each kind in the collection (one query each), and a judge of another kind or collection is a
form error, not an empty table.
"""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.judge_menus import judges_with_labels
from annotation.models import Collection, Judge
from annotation.rag_nuggets.importance import importance_judge_name
from annotation.typed import choice_field
from judging.measures.rag_nuggets import SCORE_NAMES
from judging.rag_nuggets.selectors import DEFAULT_SCORE

SCORE_CHOICES = [(name, name) for name in SCORE_NAMES]


def answered_only_field() -> forms.BooleanField:
    """The named option of averaging over answered topics only, as every nugget score form offers it."""
    return forms.BooleanField(
        label="Answered topics only",
        required=False,
        help_text="Average each run over the topics it answered, instead of every topic the evaluation "
        "covers with 0 where it gave no answer (nuggetizer's way).",
    )


def judge_field(label: str, **options: Any) -> forms.ModelChoiceField:
    """A judge menu chosen by name (the query string carries names); its queryset is set per collection
    in the form's __init__, from `judges_with_labels`."""
    return forms.ModelChoiceField(label=label, queryset=Judge.objects.none(), to_field_name="name", **options)


class NuggetScoresForm(forms.Form):
    judge = judge_field(
        "Assignment judge",
        help_text="Whose nugget assignments (support, partial support, not support) score the answers.",
    )
    importance_judge = judge_field(
        "Importance judge",
        required=False,
        empty_label="default",
        help_text="Whose vital/okay labels count; a nugget it did not label counts as okay.",
    )
    nuggets_judge = judge_field(
        "Nugget lists of",
        required=False,
        empty_label="every list the judge assigned",
        help_text="Only the nuggets of this judge's lists (and whose lists the nuggets file holds).",
    )
    order = forms.ChoiceField(label="Rank by", choices=SCORE_CHOICES, initial=DEFAULT_SCORE, required=False)
    answered_only = answered_only_field()

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choice_field(self, "judge").queryset = judges_with_labels(
            collection=collection, task="nugget-assignment"
        )
        choice_field(self, "importance_judge").queryset = judges_with_labels(
            collection=collection, task="nugget-importance"
        )
        choice_field(self, "nuggets_judge").queryset = judges_with_labels(
            collection=collection, task="nuggets"
        )

    def clean_order(self) -> str:
        return self.cleaned_data["order"] or DEFAULT_SCORE


def choices_slug(data: dict[str, Any]) -> str:
    """The choices of a cleaned form as a file-name part: assignment judge, importance judge (or
    "default"), and "answered-only" when chosen, so two downloads under different choices never share a
    name."""
    parts = [data["judge"].name, importance_slug(data)]
    if data.get("nuggets_judge"):
        parts.append("of-" + data["nuggets_judge"].name)
    if data.get("answered_only"):
        parts.append("answered-only")
    return "-".join(parts)


def importance_slug(data: dict[str, Any]) -> str:
    """ "imp-<importance judge>", or "imp-default" for the scores' stated default."""
    return "imp-" + importance_judge_name(data.get("importance_judge"))
