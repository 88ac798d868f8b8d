"""The judges page's one choice: the reference judge the others' relevance grades are compared with."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import forms

from annotation.models import Judge


class ReferenceForm(forms.Form):
    reference = forms.ChoiceField(
        required=False,
        label="Reference judge",
        help_text="Each judge's relevance grades are compared with this judge's on the pairs both graded.",
    )

    def __init__(self, *args: Any, judges: Iterable[Judge], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.judges = {judge.name: judge for judge in judges}
        field = self.fields["reference"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", "---------")] + [
            (judge.name, judge.name) for judge in sorted(judges, key=lambda judge: judge.name)
        ]

    def chosen(self) -> Judge | None:
        name = self.cleaned_data.get("reference")
        return self.judges[name] if name else None
