"""The form of the support disagreement study: which human, LLM and independent judges it compares."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypedDict

from django import forms
from django.db.models import QuerySet

from annotation.judge_menus import judges_with_labels
from annotation.models import Collection, Condition, Judge, TopicWork
from annotation.support.services import HUMAN_CONDITIONS
from annotation.typed import choice_field, choices


class StudyJudges(TypedDict):
    human: list[str]
    llm: str
    blind: str


def _support_judges(collection: Collection, conditions: Iterable[str] | None = None) -> QuerySet[Judge]:
    return judges_with_labels(collection=collection, task="support", conditions=conditions)


class DisagreementReportForm(forms.Form):
    """Which judges the study compares; the choices are the judges with labels of each kind here."""

    human = forms.ModelMultipleChoiceField(
        label="Human judges", queryset=Judge.objects.none(), to_field_name="name"
    )
    llm = forms.ModelChoiceField(label="LLM judge", queryset=Judge.objects.none(), to_field_name="name")
    blind = forms.ModelChoiceField(
        label="Independent assessor", queryset=Judge.objects.none(), to_field_name="name"
    )

    def __init__(self, *args, collection: Collection, **kwargs):
        super().__init__(*args, **kwargs)
        choice_field(self, "human").queryset = _support_judges(collection, HUMAN_CONDITIONS)
        choice_field(self, "llm").queryset = _support_judges(collection).exclude(
            kind__in=[Judge.Kind.ASSESSOR, Judge.Kind.CROWD]
        )
        choice_field(self, "blind").queryset = _support_judges(collection, [Condition.BLIND])

    def clean(self) -> dict[str, object]:
        super().clean()
        data = self.cleaned_data
        if data.get("blind") is not None and data.get("blind") in data.get("human", []):
            self.add_error("blind", "the independent assessor is one of the human judges, so not independent")
        return data

    @classmethod
    def defaults(cls, collection: Collection) -> StudyJudges:
        """Every human judge, the LLM whose labels were post-edited (else the first machine judge), and
        the first blind assessor: the study as the organiser most likely set it up."""
        form = cls(collection=collection)
        shown = (
            TopicWork.objects.filter(
                kind=TopicWork.Kind.SUPPORT, topic__collection=collection, machine_judge__isnull=False
            )
            .values_list("machine_judge__name", flat=True)
            .first()
        )
        llm = shown or choices(form, "llm").values_list("name", flat=True).first()
        blind = choices(form, "blind").values_list("name", flat=True).first()
        humans = list(choices(form, "human").values_list("name", flat=True))
        return {"human": humans, "llm": llm or "", "blind": blind or ""}
