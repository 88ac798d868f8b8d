"""Organiser pages over the support labels: the run leaderboard (runs ranked by weighted support
precision or recall under one judge, and how the ranking moves under a second judge) and the
disagreement study's report. Measures and comparisons, so they live with the others in judging."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import get_object_or_404, render

from annotation.judge_menus import judges_with_labels
from annotation.models import Collection
from annotation.permissions import organiser_required
from core.api_errors import error_json, form_error_json
from core.names import named
from judging.measures.support import SupportMeasure
from judging.reports.store import ReportView, report_current, report_for, report_shown
from judging.support.forms import DisagreementReportForm
from judging.support.stored import (
    DISAGREEMENTS,
    LEADERBOARD,
    disagreements_compute,
    disagreements_params,
    support_reads,
)


def _stored(report: tuple[str, int], collection: Collection, params: dict, compute: str) -> ReportView:
    kind, version = report
    return report_for(
        kind=kind,
        version=version,
        collection=collection,
        params=params,
        reads=support_reads(),
        compute=f"judging.support.stored.{compute}",
    )


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
    context: dict[str, object] = {
        "collection": collection,
        "judges": judges,
        "judge": judge,
        "compare": compare,
        "by": by,
        "rows": [],
        "mean_sentences": 0.0,
        "correlation": None,
        "unknown_judge": unknown_judge,
    }
    if judge is not None:
        params = {"judge": judge.pk, "compare": compare.pk if compare is not None else None, "by": by}
        stored = _stored(LEADERBOARD, collection, params, "leaderboard_compute")
        context["stored"] = stored
        shown = report_shown(stored)
        if shown is not None:
            context.update(
                shown=shown,
                rows=shown["rows"],
                mean_sentences=shown["mean_sentences"],
                correlation=shown["correlation"],
            )
    return render(request, "evaluation/support_leaderboard.html", context)


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
    context: dict[str, object] = {"collection": collection, "form": form, "rows": []}
    status = 200
    if form.is_bound:
        if form.is_valid():
            data = form.cleaned_data
            study = disagreements_params(human=list(data["human"]), llm=data["llm"], blind=data["blind"])
            if request.GET.get("format") == "json":
                kind, version = DISAGREEMENTS
                figures = report_current(
                    kind=kind, version=version, collection=collection, params=study, reads=support_reads()
                )
                if figures is None:
                    figures = disagreements_compute(collection=collection, params=study)
                return JsonResponse(figures["reports"])
            stored = _stored(DISAGREEMENTS, collection, study, "disagreements_compute")
            context["stored"] = stored
            shown = report_shown(stored)
            if shown is not None:
                context.update(shown=shown, rows=shown["rows"])
        else:
            status = 400
            if request.GET.get("format") == "json":
                return form_error_json(form)
    return render(request, "evaluation/support_disagreements.html", context, status=status)
