"""The run report's choices: whose grades to count, and to what depth."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import forms

from annotation.models import Judge

# A pool deeper than this is not asked of people; the cap keeps one statement's unnesting bounded.
MAX_DEPTH = 1000


class JudgedForm(forms.Form):
    judge = forms.ChoiceField(required=False, help_text="Whose grades count as judged.")
    depth = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_DEPTH,
        help_text="The pool depth to count unjudged pairs within (default: the deepest pool's).",
    )

    def __init__(self, *args: Any, judges: Iterable[Judge], **kwargs: Any) -> None:
        """`judges`: the judges with relevance grades here, by name (a menu whose cost does not grow with
        the grades; the report resolves "the judge with most grades")."""
        super().__init__(*args, **kwargs)
        field = self.fields["judge"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", "the judge with most grades")] + [(judge.name, judge.name) for judge in judges]
