"""Organiser pages: each run's hybrid estimate as an error bar, and the budget page (simulation and plan).

Thin views: the forms are validated here, and the figures computed on a task worker. An estimate (with
its simulated coverage) is a stored report (`reports`, judging/reports), which the page shows at once or
says how its computation stands; the budget page's simulation and plan are a `BudgetSimulation` row
(`tasks`, `budget`) whose page shows the stored figures. The estimate's choices come from the query
string so a page can be bookmarked. Charts are SVG drawn by the template from numbers, so every collection text
shown (run and judge names) goes through Django's autoescaping.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation.judge_menus import judge_fields, judge_menu, judge_names_by_task, judges_with_labels
from annotation.models import Collection, Judge
from annotation.permissions import organiser_required
from annotation.typed import choice_field
from core.jobs import job_interrupted
from core.names import named
from core.wording import plural
from judging.hybrid import charts
from judging.hybrid.budget import DEFAULT_REPEATS, budget_params, budget_shown, form_initial
from judging.hybrid.forms import SampleDrawForm
from judging.hybrid.reports import (
    EVALUATION_ESTIMATE,
    HYBRID_ESTIMATE,
    VERSION,
    EstimateShown,
    estimate_params,
    estimate_shown,
    panel_params,
)
from judging.hybrid.selectors import samples_progress, simulations_recent
from judging.hybrid.services import DEFAULT_MEASURE, HybridError, WorkSpec, human_sample_create
from judging.hybrid.tasks import budget_simulation_again, budget_simulation_start
from judging.hybrid.units import TASKS, UNITS, table_reads
from judging.measures.hybrid.estimators import METHODS
from judging.measures.hybrid.ranked import is_ranked, parse_ranked
from judging.models import BudgetSimulation, HumanSample
from judging.reports.store import report_for, report_shown_row

MAX_REPEATS = 2000


class HybridForm(forms.Form):
    task = forms.ChoiceField(choices=[(t, t) for t in TASKS])
    measure = forms.CharField(required=False, help_text="Empty: nDCG@5, weighted_precision or ntr_recall.")
    unit = forms.ChoiceField(choices=[(u, u) for u in UNITS], initial="turn")
    human_judge = forms.ModelMultipleChoiceField(
        queryset=Judge.objects.all(),
        to_field_name="name",
        help_text="One, or several assessors who shared out the sample (their values are merged).",
    )
    machine_judge = forms.ModelChoiceField(queryset=Judge.objects.all(), to_field_name="name")
    gold_judge = forms.ModelChoiceField(queryset=Judge.objects.all(), to_field_name="name", required=False)
    method = forms.ChoiceField(choices=[(m, m) for m in METHODS], initial="ppi++")
    alpha = forms.FloatField(
        min_value=0.001,
        max_value=0.5,
        initial=0.05,
        label="Error rate",
        help_text="0.05 gives 95% intervals, 0.1 gives 90%.",
    )
    sample = forms.ModelChoiceField(queryset=HumanSample.objects.none(), to_field_name="name", required=False)
    fpc = forms.BooleanField(
        required=False,
        label="Finite-population correction",
        help_text="Intervals for the mean over exactly these units: narrower when the sample is a large share.",
    )
    rel_threshold = forms.IntegerField(min_value=1, max_value=4, initial=2)

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choice_field(self, "sample").queryset = HumanSample.objects.filter(collection=collection)
        # The menus offer the judges with labels here, under the task they labelled, the chosen task's
        # first; any judge named is still accepted, so the estimate says why it has nothing to estimate.
        names = judge_names_by_task(collection=collection, tasks=[*TASKS, "nuggets"])
        gold = {"nuggets": names.pop("nuggets")}
        task = self.data.get("task") or self.initial.get("task")
        for name in ("human_judge", "machine_judge", "confidence_judge"):
            if name in self.fields:
                multiple = name == "human_judge"
                self.fields[name].widget.choices = judge_menu(
                    names, first=task, empty=None if multiple else "---------"
                )
        self.fields["gold_judge"].widget.choices = judge_menu(gold)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if "task" in data and "unit" in data:
            why = unsupported(
                task=data["task"],
                measure=data.get("measure") or DEFAULT_MEASURE[data["task"]],
                unit=data["unit"],
                design=data.get("design") or "default",
                page="budget" if "design" in self.fields else "estimate",
            )
            if why:
                self.add_error(None, why)
        return data


def unsupported(*, task: str, measure: str, unit: str, design: str, page: str) -> str | None:
    """Why a measure x unit x design combination does not run on `page` ("estimate" or "budget"), or None:
    checked by the forms so that nothing that would fail on the worker is queued."""
    ranked = task == "relevance" and is_ranked(measure)
    if unit == "pair" and task != "relevance":
        return f"{task} is sampled by whole turns: pair units serve relevance only"
    if design == "default":
        if unit == "pair" and ranked:
            return (
                f"{measure} needs a pair design to be estimated from pairs: choose the stratified design (P@k) or the "
                "two-stage design (nDCG@k, P@k) on the budget page, or sample_for_humans --unit pair and "
                "estimate --unit pair"
                if page == "budget"
                else f"{measure} is estimated from a pair sample by `estimate --unit pair`; "
                "this page estimates whole turns: choose unit turn"
            )
        return None
    if unit != "pair":
        return f"the {design} design draws (turn, passage) pairs: choose unit pair"
    if not ranked:
        return (
            f"the {design} design serves per-run measures (P@k; nDCG@k two-stage only); {measure} has no "
            f"{design} estimator: choose the default design (uniform pairs)"
        )
    parsed = parse_ranked(measure)
    if parsed.name == "AP":
        return f"the {design} design's simulation serves nDCG@k and P@k, not {measure}"
    if design == "stratified" and parsed.name != "P":
        return f"the stratified design serves P@k; {measure} needs the two-stage design"
    return None


class BudgetForm(HybridForm):
    budgets = forms.CharField(initial="10 20 50 100", help_text="Budgets separated by spaces.")
    repeats = forms.IntegerField(min_value=10, max_value=MAX_REPEATS, initial=DEFAULT_REPEATS)
    confidence_judge = forms.ModelChoiceField(
        queryset=Judge.objects.all(), to_field_name="name", required=False
    )
    design = forms.ChoiceField(
        choices=[
            ("default", "as the unit says"),
            ("stratified", "pairs stratified by the machine's grade (P@k)"),
            ("two-stage", "turns, then pairs within each drawn turn (nDCG@k, P@k)"),
        ],
        initial="default",
        required=False,
        help_text="Pair designs: unit pair and an nDCG@k (two-stage only) or P@k measure; the budget "
        "counts human pairs.",
    )
    target_width = forms.FloatField(required=False, min_value=0.0001)
    settle_share = forms.FloatField(required=False, min_value=0.01, max_value=1)
    assurance = forms.FloatField(
        required=False,
        min_value=0.5,
        max_value=0.99,
        help_text="The plan's budget meets the target width in this share of samples (empty: 0.8).",
    )

    def clean_budgets(self) -> list[int]:
        try:
            values = sorted({int(v) for v in self.cleaned_data["budgets"].split()})
        except ValueError:
            raise forms.ValidationError("budgets are whole numbers separated by spaces") from None
        if not values or len(values) > 12 or values[0] < 2:
            raise forms.ValidationError("give 1 to 12 budgets of at least 2")
        return values


def _defaults(request: HttpRequest, initial: dict[str, Any]) -> Any:
    if "human_judge" not in request.GET:
        return None
    data = request.GET.copy()
    for key, value in initial.items():
        data.setdefault(key, str(value))
    return data


@organiser_required
def hybrid_estimate_page(request: HttpRequest, name: str) -> HttpResponse:
    collection = get_object_or_404(Collection, name=name)
    return _estimate_page(request, collection, SampleDrawForm(collection=collection), 200)


@organiser_required
@require_POST
def hybrid_sample_draw(request: HttpRequest, name: str) -> HttpResponse:
    """Draw a human sample of turns as `sample_for_humans` does and hand it to the chosen assessors as a
    relevance assignment; then back to the estimates, with the sample chosen."""
    collection = get_object_or_404(Collection, name=name)
    form = SampleDrawForm(request.POST, collection=collection)
    if form.is_valid():
        data = form.cleaned_data
        try:
            sample = human_sample_create(
                collection=collection,
                name=data["name"],
                task="relevance",
                machine_judge=data["machine_judge"],
                budget=data["budget"],
                strategy=data["strategy"],
                seed=data["seed"],
                confidence_judges=list(data["confidence_judges"]),
                work=WorkSpec(assessors=list(data["assessors"]), pool=data["pool"]),
            )
        except HybridError as exc:
            form.add_error(None, str(exc))
        else:
            drawn = sample.units.count()
            messages.success(
                request,
                f"Sample {sample.name}: {drawn} of {plural(sample.population, 'turn')} drawn; {sample.work}. The estimates "
                "below are valid once the assessors have labelled every drawn turn.",
            )
            progress = next(p for p in samples_progress(collection_id=collection.id) if p.sample == sample)
            query = progress.query if progress.human_judges else f"sample={sample.name}"
            return redirect(f"{reverse('judging:hybrid-estimate', args=[collection.name])}?{query}")
    return _estimate_page(request, collection, form, 400)


def _estimate_page(
    request: HttpRequest, collection: Collection, draw_form: SampleDrawForm, status: int
) -> HttpResponse:

    initial: dict[str, Any] = {
        "unit": "turn",
        "method": "ppi++",
        "alpha": 0.05,
        "rel_threshold": 2,
        "task": "relevance",
    }
    chosen = named(HumanSample.objects.filter(collection=collection), request.GET.get("sample", "")).first()
    if chosen is not None:
        # A sample named in the address (as after drawing one) is preselected with its machine judge.
        initial.update(sample=chosen.name, machine_judge=chosen.machine_judge.name, measure=chosen.measure)
    form = HybridForm(_defaults(request, initial), collection=collection, initial=initial)
    context: dict[str, Any] = {
        "collection": collection,
        "form": form,
        "result": None,
        "report": None,
        "error": "",
        "draw_form": draw_form,
        "samples": samples_progress(collection_id=collection.id),
    }
    if form.is_bound:
        if not form.is_valid():
            status = 400
        else:
            report = report_for(
                kind=HYBRID_ESTIMATE,
                version=VERSION,
                collection=collection,
                params=estimate_params(form.cleaned_data),
                reads=table_reads(form.cleaned_data["task"]),
                compute="judging.hybrid.reports.hybrid_estimate_compute",
                deferred=True,
            )
            context["report"] = report
            row = report_shown_row(report)
            shown = estimate_shown(row) if row is not None else None
            if report.failed or isinstance(shown, str):
                status = 400
            if isinstance(shown, str):
                context["error"] = shown
            elif shown is not None:
                context.update(
                    result=shown.result,
                    ranking=shown.ranking,
                    pair_count=shown.pairs,
                    settled_count=shown.settled,
                    chart=_error_bars(shown),
                )
    return render(request, "hybrid/estimate.html", context, status=status)


def _error_bars(shown: EstimateShown) -> dict[str, Any]:
    return charts.error_bars(
        [(r["run"], r["interval"].estimate, r["interval"].lo, r["interval"].hi) for r in shown.ranking]
    )


class EvaluationEstimateForm(forms.Form):
    """The evaluation page's compact choice of a relevance estimate: judges, method and measure (and the
    sample the human labels answer, without which they are taken as a uniform random sample)."""

    prefix = "hybrid"
    human_judge = forms.ModelMultipleChoiceField(
        queryset=Judge.objects.none(), to_field_name="name", label="Human judge"
    )
    machine_judge = forms.ModelChoiceField(
        queryset=Judge.objects.none(), to_field_name="name", label="Machine judge"
    )
    method = forms.ChoiceField(choices=[(m, m) for m in METHODS], initial="ppi++")
    measure = forms.CharField(initial=DEFAULT_MEASURE["relevance"], max_length=100)
    sample = forms.ModelChoiceField(
        queryset=HumanSample.objects.none(), to_field_name="name", required=False, empty_label="none"
    )

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        judge_fields(
            self,
            judges_with_labels(collection=collection, task="relevance"),
            ["human_judge", "machine_judge"],
        )
        choice_field(self, "sample").queryset = HumanSample.objects.filter(
            collection=collection, task="relevance", unit="turn"
        )


def evaluation_estimate(request: HttpRequest, collection: Collection) -> tuple[dict[str, Any], int]:
    """(context, status) of the evaluation page's estimate panel: each run's relevance estimate under the
    chosen judges and method, drawn as error bars; nothing is computed until a human judge is chosen."""

    form = EvaluationEstimateForm(
        request.GET if f"{EvaluationEstimateForm.prefix}-human_judge" in request.GET else None,
        collection=collection,
    )
    context: dict[str, Any] = {"hybrid_form": form, "hybrid": None, "hybrid_report": None, "hybrid_error": ""}
    if not form.is_bound:
        return context, 200
    if not form.is_valid():
        return context, 400
    data = form.cleaned_data
    report = report_for(
        kind=EVALUATION_ESTIMATE,
        version=VERSION,
        collection=collection,
        params=panel_params(data),
        reads=table_reads("relevance"),
        compute="judging.hybrid.reports.evaluation_estimate_compute",
        deferred=True,
    )
    context["hybrid_report"] = report
    row = report_shown_row(report)
    shown = estimate_shown(row) if row is not None else None
    if isinstance(shown, str):
        context["hybrid_error"] = shown
        return context, 400
    status = 400 if report.failed else 200
    if shown is None:
        return context, status
    query = QueryDict(mutable=True)
    query.update({"task": "relevance", "measure": data["measure"], "method": data["method"]})
    query.setlist("human_judge", [j.name for j in data["human_judge"]])
    query["machine_judge"] = data["machine_judge"].name
    if data["sample"] is not None:
        query["sample"] = data["sample"].name
    context.update(hybrid=shown.result, hybrid_chart=_error_bars(shown), hybrid_query=query.urlencode())
    return context, status


BUDGET_INITIAL: dict[str, Any] = {
    "unit": "turn",
    "method": "ppi++",
    "alpha": 0.05,
    "rel_threshold": 2,
    "task": "relevance",
    "budgets": "10 20 50 100",
    "repeats": DEFAULT_REPEATS,
}


@organiser_required
def hybrid_budget_page(request: HttpRequest, name: str) -> HttpResponse:
    """The budget form. Submitted, it queues the simulation on a task worker (or finds the same one done
    on the same labels) and goes to its page; a form in the address (a bookmark, the estimate page's
    link) only fills the form in."""
    collection = get_object_or_404(Collection, name=name)
    if request.method == "POST":
        form = BudgetForm(request.POST, collection=collection, initial=BUDGET_INITIAL)
        if not form.is_valid():
            return _budget_page(request, collection, form, None, 400)
        simulation, reused = budget_simulation_start(
            collection=collection, params=budget_params(form.cleaned_data), user=request.user
        )
        if reused:
            messages.info(request, "The same simulation on the same labels: shown again, not run twice.")
        return redirect("judging:hybrid-budget-simulation", collection.name, simulation.pk)
    form = BudgetForm(_defaults(request, BUDGET_INITIAL), collection=collection, initial=BUDGET_INITIAL)
    return _budget_page(
        request, collection, form, None, 400 if form.is_bound and not form.is_valid() else 200
    )


@organiser_required
def hybrid_budget_simulation(request: HttpRequest, name: str, pk: int) -> HttpResponse:
    """One simulation, reached through its collection: the form as it was asked, how the work stands,
    and once done the stored figures."""
    simulation = get_object_or_404(
        BudgetSimulation.objects.select_related("collection", "created_by"), pk=pk, collection__name=name
    )
    form = BudgetForm(
        collection=simulation.collection, initial={**BUDGET_INITIAL, **form_initial(simulation.params)}
    )
    return _budget_page(request, simulation.collection, form, simulation, 200)


@organiser_required
@require_POST
def hybrid_budget_again(request: HttpRequest, name: str, pk: int) -> HttpResponse:
    """Queue again a simulation whose worker died."""
    simulation = get_object_or_404(BudgetSimulation, pk=pk, collection__name=name)
    try:
        budget_simulation_again(simulation=simulation)
    except HybridError as exc:
        messages.error(request, str(exc))
    return redirect("judging:hybrid-budget-simulation", name, simulation.pk)


def _budget_page(
    request: HttpRequest,
    collection: Collection,
    form: BudgetForm,
    simulation: BudgetSimulation | None,
    status: int,
) -> HttpResponse:
    interrupted = simulation is not None and job_interrupted(simulation)
    context: dict[str, Any] = {
        "collection": collection,
        "form": form,
        "job": simulation,
        "interrupted": interrupted,
        "recent": simulations_recent(collection_id=collection.id),
        "simulation": None,
        "plan": None,
    }
    if simulation is not None:
        context["estimate_query"] = _estimate_query(simulation.params)
        if simulation.status == BudgetSimulation.Status.DONE:
            context.update(budget_shown(stored=simulation.result or {}, params=simulation.params))
    return render(request, "hybrid/budget.html", context, status=status)


def _estimate_query(params: dict[str, Any]) -> str:
    """The estimate page's address for the choices a simulation was asked with."""
    query = QueryDict(mutable=True)
    for key in (
        "task",
        "measure",
        "unit",
        "machine_judge",
        "gold_judge",
        "method",
        "alpha",
        "sample",
        "rel_threshold",
    ):
        if params.get(key) not in (None, ""):
            query[key] = str(params[key])
    query.setlist("human_judge", params.get("human_judge", []))
    if params.get("fpc"):
        query["fpc"] = "on"
    return query.urlencode()
