"""Organiser pages over the support labels: the run leaderboard (runs ranked by weighted support
precision or recall under one judge, and how the ranking moves under a second judge) and the
disagreement study's report. Measures and comparisons, so they live with the others in judging."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import get_object_or_404, render

from annotation.judge_menus import judges_with_labels
from annotation.models import Collection, Condition
from annotation.permissions import organiser_required
from core.api_errors import error_json, form_error_json
from core.names import named
from judging.measures.support import SupportMeasure, compare_judges, leaderboard, mean_sentences_per_answer
from judging.scores.support import support_disagreement_report, support_scores
from judging.support.forms import DisagreementReportForm


@organiser_required
def support_leaderboard(request: HttpRequest, name: str) -> HttpResponse:
    collection = get_object_or_404(Collection, name=name)
    judges = judges_with_labels(collection=collection, task="support")
    asked = request.GET.get("judge", "")
    judge = named(judges, asked).first() or judges.first()
    # A judge named in the link but without labels here (a typo, another collection's judge) is said out
    # loud, rather than silently showing another judge's leaderboard under the name the user asked for.
    unknown_judge = asked if asked and (judge is None or judge.name != asked) else ""
    compare = named(judges, request.GET.get("compare", "")).first()
    by: SupportMeasure = (
        "weighted_precision" if request.GET.get("by") == "weighted_precision" else "weighted_recall"
    )
    rows, mean_sentences, correlation = [], 0.0, None
    if judge is not None:
        scores = support_scores(collection=collection, judge=judge)
        rows, mean_sentences = leaderboard(scores, by=by), mean_sentences_per_answer(scores)
        if compare is not None and compare != judge:
            correlation = compare_judges(scores, support_scores(collection=collection, judge=compare))
    return render(
        request,
        "evaluation/support_leaderboard.html",
        {
            "collection": collection,
            "judges": judges,
            "judge": judge,
            "compare": compare,
            "by": by,
            "rows": rows,
            "mean_sentences": mean_sentences,
            "correlation": correlation,
            "unknown_judge": unknown_judge,
        },
    )


# --- Disagreement study report ---------------------------------------------------------------------


@organiser_required
def support_disagreement_page(request: HttpRequest, name: str) -> HttpResponse:
    """The disagreement study's report: how often, and with what Cohen's kappa, the independent
    assessor sides with the human and with the LLM, per human condition (the command's --report)."""
    collection = get_object_or_404(Collection, name=name)
    params: QueryDict | None = request.GET if "llm" in request.GET else None
    if params is None:
        defaults = DisagreementReportForm.defaults(collection)
        if defaults["human"] and defaults["llm"] and defaults["blind"]:
            params = QueryDict(mutable=True)
            params.setlist("human", defaults["human"])
            params.update({"llm": defaults["llm"], "blind": defaults["blind"]})
    form = DisagreementReportForm(params, collection=collection)
    if not form.is_bound and request.GET.get("format") == "json":
        # Nothing to report yet and no judges named: a JSON client gets the reason, not the HTML form.
        return error_json(
            detail="name the judges (?human=…&llm=…&blind=…): this collection has no blind re-assessment yet",
            code="invalid",
            status=400,
        )
    rows: list[dict] = []
    status = 200
    if form.is_bound:
        if form.is_valid():
            data = form.cleaned_data
            reports = support_disagreement_report(
                collection=collection,
                human_judges=list(data["human"]),
                machine_judge=data["llm"],
                blind_judge=data["blind"],
            )
            if request.GET.get("format") == "json":
                return JsonResponse({c: r.as_dict() for c, r in reports.items()})
            titles = dict(Condition.choices) | {"all": "All conditions"}
            rows = [
                {"condition": c, "title": titles[c], "neither": r.neither, **r.as_dict()}
                for c, r in reports.items()
            ]
        else:
            status = 400
            if request.GET.get("format") == "json":
                return form_error_json(form)
    return render(
        request,
        "evaluation/support_disagreements.html",
        {"collection": collection, "form": form, "rows": rows},
        status=status,
    )
