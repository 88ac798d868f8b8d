"""The dashboard's bars, chosen by the organiser (a GET form, so a view of them can be bookmarked)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import forms

from annotation.models import Collection, Judge
from judging.quality.selectors import QualitySettings

DEFAULTS = QualitySettings()


class QualityForm(forms.Form):
    rel = forms.IntegerField(
        min_value=1, max_value=4, required=False, initial=DEFAULTS.rel, label="Relevant from grade"
    )
    gold_bar = forms.FloatField(
        min_value=0, max_value=1, required=False, initial=DEFAULTS.gold_bar, label="Flag gold exact below"
    )
    fast_seconds = forms.FloatField(
        min_value=0,
        max_value=3600,
        required=False,
        initial=DEFAULTS.fast_seconds,
        label="Fast under (seconds)",
    )
    min_n = forms.IntegerField(
        min_value=1,
        max_value=10_000,
        required=False,
        initial=DEFAULTS.min_n,
        label="Observations before a flag",
    )

    adjudicated = forms.ModelChoiceField(
        queryset=Judge.objects.none(),
        to_field_name="name",
        required=False,
        label="Agreement with adjudicated judge",
    )

    def __init__(self, *args: Any, collection: Collection | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["adjudicated"]
        assert isinstance(field, forms.ModelChoiceField)
        if collection is not None:
            field.queryset = Judge.objects.filter(adjudication__collection=collection).order_by("name")

    @classmethod
    def defaults(cls) -> dict[str, str]:
        return {
            name: str(field.initial) for name, field in cls.base_fields.items() if field.initial is not None
        }

    def bars_query(self) -> str:
        """The valid bars as a query string, so that an action can send the organiser back to the same view."""
        if not self.is_valid():
            return ""
        return urlencode({name: value for name, value in self.cleaned_data.items() if value is not None})

    def settings(self) -> QualitySettings:
        """The bars asked for, the defaults for those left out."""
        data = self.cleaned_data
        chosen = {
            name: data[name]
            for name in ("rel", "gold_bar", "fast_seconds", "min_n")
            if data.get(name) is not None
        }
        return QualitySettings(**chosen)
