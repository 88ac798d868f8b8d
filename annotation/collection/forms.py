"""Form fields naming parts of a collection."""

from __future__ import annotations

from typing import Any

from django import forms


class TypedNamesField(forms.CharField):
    """Names typed or pasted, space or line separated: their list, or None (none given) for all. A text
    box rather than a choice of every one: a track's collection has hundreds of topics and thousands of
    turns, which a page would draw on every view whatever is chosen."""

    help = ""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 2}))
        kwargs.setdefault("help_text", self.help)
        super().__init__(**kwargs)

    def clean(self, value: Any) -> list[str] | None:
        # The text is checked as any text field's (a NUL character refused) before it is split.
        return str(super().clean(value)).split() or None


class TurnIdsField(TypedNamesField):
    help = "Only these turn ids (space or line separated); empty: every turn."


class TopicNumbersField(TypedNamesField):
    help = "Only these topic numbers (space or line separated); empty: every topic."
