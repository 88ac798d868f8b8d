"""The run report's choices: whose grades to count, and to what depth."""

from __future__ import annotations

from typing import Any

from django import forms

from judging.quality.runs.selectors import GradingJudge

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

    def __init__(self, *args: Any, judges: list[GradingJudge], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.judges = {judge.name: judge for judge in judges}
        field = self.fields["judge"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", "the judge with most grades")] + [
            (judge.name, f"{judge.name} ({judge.grades})") for judge in judges
        ]

    def chosen(self, *, default: str) -> list[GradingJudge]:
        """The judge chosen; with none, the one with most grades (`default` "first") or every judge ("all")."""
        name = self.cleaned_data.get("judge")
        if name:
            return [self.judges[name]]
        every = list(self.judges.values())
        return every[:1] if default == "first" else every
