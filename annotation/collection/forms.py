"""Form fields naming parts of a collection."""

from __future__ import annotations

from typing import Any

from django import forms


class TurnIdsField(forms.CharField):
    """Turn ids typed or pasted, space or line separated: their list, or None (none given) for every turn.
    A text box rather than a choice of every turn: a track's collection has thousands, which a page would
    draw on every view whatever is chosen."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 2}))
        kwargs.setdefault("help_text", "Only these turn ids (space or line separated); empty: every turn.")
        super().__init__(**kwargs)

    def clean(self, value: Any) -> list[str] | None:
        # The text is checked as any text field's (a NUL character refused) before it is split.
        return str(super().clean(value)).split() or None


class TopicNumbersField(forms.CharField):
    """Topic numbers typed or pasted, space or line separated: their list, or None (none given) for every
    topic. A text box rather than a choice of every topic, as `TurnIdsField` for turns: a track has hundreds
    of topics, which a page would draw on every view."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 2}))
        kwargs.setdefault(
            "help_text", "Only these topic numbers (space or line separated); empty: every topic."
        )
        super().__init__(**kwargs)

    def clean(self, value: Any) -> list[str] | None:
        return str(super().clean(value)).split() or None
