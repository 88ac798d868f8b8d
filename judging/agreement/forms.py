"""Forms of the agreement pages: the two judges to compare and on what, and the measure to rank runs by."""

from __future__ import annotations

import re
from typing import Any

from django import forms

from annotation.judge_menus import judge_menu, judge_names_by_task, judges_with_labels
from annotation.models import Collection, Condition, Judge
from annotation.rag_nuggets.importance import IMPORTANCE_DEFAULT
from annotation.typed import choice_field
from judging.agreement.run_scores import IMPORTANCE_MEASURES, RUN_MEASURES
from judging.agreement.selectors import HUMAN_CONDITIONS, TASKS


class ComparisonForm(forms.Form):
    task = forms.ChoiceField(choices=[(t, t) for t in TASKS])
    a = forms.ModelChoiceField(label="Judge A", queryset=Judge.objects.all(), to_field_name="name")
    b = forms.ModelChoiceField(label="Judge B", queryset=Judge.objects.all(), to_field_name="name")
    threshold = forms.FloatField(
        label="Binary from grade",
        required=False,
        help_text="Relevance: also compare labels binarised at grade >= T.",
    )
    condition = forms.ChoiceField(
        required=False,
        choices=[("", "any")]
        + [(c.value, c.label) for c in Condition if c not in {Condition.MACHINE, Condition.IMPORTED}],
        help_text="Support and nugget tasks: compare only the human labels given in this condition.",
    )
    topics = forms.CharField(
        required=False, help_text="Topic numbers separated by spaces or commas; empty for all."
    )

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The lists offer only the judges that labelled the chosen task in this collection (a judge of
        # another task or collection would compare nothing); any judge named in the query is still
        # accepted, so that the comparison says why it has nothing to compare.
        task = self.data.get("task") or self.initial.get("task") or "relevance"
        offered = (
            judges_with_labels(collection=collection, task=task) if task in TASKS else Judge.objects.none()
        )
        names = [("", "---------")] + [(name, name) for name in offered.values_list("name", flat=True)]
        for field_name in ("a", "b"):
            field = choice_field(self, field_name)
            field.queryset = Judge.objects.all()
            field.widget.choices = names

    def clean_topics(self) -> list[str]:
        return [t for t in re.split(r"[\s,]+", self.cleaned_data["topics"]) if t]

    def clean(self) -> dict[str, object]:
        super().clean()
        data = self.cleaned_data
        if data.get("threshold") is not None and data.get("task") and not TASKS[data["task"]].binarisable:
            self.add_error("threshold", "a binary threshold applies to relevance only")
        condition, task = data.get("condition"), data.get("task")
        if condition and task is not None and condition not in HUMAN_CONDITIONS.get(task, set()):
            self.add_error("condition", f"condition {condition} does not apply to the {task} task")
        return data


class RankingForm(forms.Form):
    measure = forms.ChoiceField(choices=[(m, m) for m in RUN_MEASURES])
    a = forms.ModelChoiceField(label="Judge A", queryset=Judge.objects.all(), to_field_name="name")
    b = forms.ModelChoiceField(label="Judge B", queryset=Judge.objects.all(), to_field_name="name")
    importance_judge = forms.ModelChoiceField(
        label="Vital/okay labels of",
        queryset=Judge.objects.all(),
        to_field_name="name",
        required=False,
        help_text=f"For the nugget measures; blank: {IMPORTANCE_DEFAULT}",
    )

    def __init__(self, *args: Any, collection: Collection | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if collection is None:  # a form only validated, never shown
            return
        # The lists offer the judges with labels here of a task some measure reads, under that task, the
        # chosen measure's task first; any judge named is still accepted, so the report says why it has
        # nothing to rank.
        # Both menus' judges are read in one query.
        tasks = list(dict.fromkeys(task for task, _function in RUN_MEASURES.values()))
        importance_tasks = ["nugget-importance", "nugget-assignment"]
        every = judge_names_by_task(
            collection=collection, tasks=list(dict.fromkeys(tasks + importance_tasks))
        )
        names = {task: every[task] for task in tasks}
        measure = self.data.get("measure") or self.initial.get("measure")
        first = RUN_MEASURES[measure][0] if measure in RUN_MEASURES else None
        for field_name in ("a", "b"):
            choice_field(self, field_name).widget.choices = judge_menu(names, first=first)
        importance = {task: every[task] for task in importance_tasks}
        choice_field(self, "importance_judge").widget.choices = judge_menu(importance, empty="default")

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        measure = data.get("measure")
        if data.get("importance_judge") is not None and measure and measure not in IMPORTANCE_MEASURES:
            self.add_error(
                "importance_judge", f"vital/okay labels apply to the nugget measures, not {measure}"
            )
        return data
