"""Compute functions of the stored-report tests, named by dotted path as a feature's are."""

from __future__ import annotations

from typing import Any

from annotation.models import Collection, RelevanceJudgment


def graded(*, collection: Collection, params: dict[str, Any], progress: Any) -> dict[str, Any]:
    """How many relevance labels of the collection have at least `params["grade"]`, reporting progress
    per label as it counts them."""
    grades = list(
        RelevanceJudgment.objects.filter(turn__topic__collection=collection).values_list("grade", flat=True)
    )
    for done, _grade in enumerate(grades, start=1):
        progress(done, len(grades), "labels")
    return {"grade": params["grade"], "count": sum(grade >= params["grade"] for grade in grades)}


def refused(*, collection: Collection, params: dict[str, Any], progress: Any) -> dict[str, Any]:
    progress(1, 4, "topics")
    raise ValueError("the judge has no labels")


def nan(*, collection: Collection, params: dict[str, Any], progress: Any) -> dict[str, Any]:
    return {"kappa": float("nan")}
