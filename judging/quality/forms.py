"""The dashboard's bars, chosen by the organiser (a GET form, so a view of them can be bookmarked)."""

from __future__ import annotations

from django import forms

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

    def settings(self) -> QualitySettings:
        """The bars asked for, the defaults for those left out."""
        data = self.cleaned_data
        chosen = {
            name: data[name]
            for name in ("rel", "gold_bar", "fast_seconds", "min_n")
            if data.get(name) is not None
        }
        return QualitySettings(**chosen)
