"""Pages of the support assessment: assessors judge units of their assignments; organisers assign
conditions and read the run leaderboard under any judge."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from annotation.models import (
    Collection,
    Judge,
    Passage,
    SupportAssignment,
    SupportJudgment,
    SupportLabel,
    Topic,
)
from annotation.support.disagreements import support_disagreement_report
from annotation.support.services import (
    GUIDELINE,
    HUMAN_CONDITIONS,
    LABELS,
    SupportConflict,
    assignment_units,
    labels_by_unit,
    support_assignment_get,
    support_assignment_set,
    support_assignments_of,
    support_judgment_submit,
)
from judging.support_metrics import compare_judges, leaderboard, mean_sentences_per_answer, support_scores


class SupportLabelForm(forms.Form):
    label = forms.ChoiceField(choices=SupportLabel.choices, widget=forms.RadioSelect)
    time_spent_ms = forms.IntegerField(min_value=0, max_value=24 * 3600 * 1000, required=False)


def _owned_assignment(request: HttpRequest, assignment_id: int) -> SupportAssignment:
    try:
        return support_assignment_get(assignment_id=assignment_id, user=request.user)
    except SupportAssignment.DoesNotExist:
        raise Http404("no such assignment") from None


@login_required
def support_assignments(request: HttpRequest) -> HttpResponse:
    collections = Collection.objects.all() if request.user.is_staff else Collection.objects.none()
    return render(
        request,
        "support/assignments.html",
        {"rows": support_assignments_of(user=request.user), "collections": collections},
    )


@login_required
def support_unit(request: HttpRequest, assignment_id: int, position: int) -> HttpResponse:
    assignment = _owned_assignment(request, assignment_id)
    units = assignment_units(assignment)
    if not 1 <= position <= len(units):
        raise Http404("no such unit")
    unit = units[position - 1]
    judge = Judge.objects.filter(user=request.user).first()
    mine = labels_by_unit(judge=judge, sentence_ids={u.sentence.id for u in units}) if judge else {}
    current = mine.get(unit.key)

    status = 200
    if request.method == "POST":
        form = SupportLabelForm(request.POST)
        if form.is_valid():
            try:
                support_judgment_submit(
                    assignment=assignment,
                    user=request.user,
                    sentence=unit.sentence,
                    citation_index=unit.citation_index,
                    label=form.cleaned_data["label"],
                    time_spent_ms=form.cleaned_data["time_spent_ms"],
                )
            except SupportConflict as exc:
                form.add_error(None, str(exc))
            else:
                if position < len(units):
                    return redirect("support-unit", assignment_id=assignment.id, position=position + 1)
                messages.success(request, f"Topic {assignment.topic.number}: all units judged.")
                return redirect("support-assignments")
        status = 400

    shown = ""
    if assignment.condition == SupportAssignment.Condition.POST_EDIT:
        if current is not None:
            shown = current.shown_label
        else:
            machine = SupportJudgment.objects.filter(
                judge=assignment.machine_judge, sentence=unit.sentence, citation_index=unit.citation_index
            ).first()
            shown = machine.label if machine else ""
    if request.method != "POST":
        initial = current.label if current is not None else shown
        form = SupportLabelForm(initial={"label": initial} if initial else {})

    sentences = list(unit.sentence.response.sentences.all())
    passage = Passage.objects.filter(
        collection=assignment.topic.collection, passage_id=unit.passage_id
    ).first()
    context = {
        "assignment": assignment,
        "unit": unit,
        "position": position,
        "total": len(units),
        "done": sum(1 for u in units if u.key in mine),
        "current": current,
        "shown_label": shown,
        "shown_label_display": SupportLabel(shown).label if shown else "",
        "sentences": sentences,
        "passage": passage,
        "form": form,
        "guideline": GUIDELINE,
        "labels": [(value, SupportLabel(value).label, i) for i, value in enumerate(LABELS, start=1)],
        "previous_url": reverse("support-unit", args=[assignment.id, position - 1]) if position > 1 else "",
        "next_url": reverse("support-unit", args=[assignment.id, position + 1])
        if position < len(units)
        else "",
    }
    return render(request, "support/unit.html", context, status=status)


def _staff(request: HttpRequest) -> None:
    if not request.user.is_staff:
        raise PermissionDenied("organisers only")


class AssignForm(forms.Form):
    topic = forms.ModelChoiceField(queryset=Topic.objects.none())
    assessor = forms.ModelChoiceField(
        queryset=get_user_model().objects.filter(is_active=True).order_by("username")
    )
    condition = forms.ChoiceField(
        choices=[
            (SupportAssignment.Condition.SCRATCH, "From scratch"),
            (SupportAssignment.Condition.POST_EDIT, "Post-editing"),
        ]
    )
    machine_judge = forms.ModelChoiceField(
        queryset=Judge.objects.exclude(kind__in=[Judge.Kind.ASSESSOR, Judge.Kind.CROWD]), required=False
    )
    max_citations = forms.IntegerField(min_value=1, max_value=20, initial=1)

    def __init__(self, *args, collection: Collection, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["topic"].queryset = collection.topics.all()

    def clean(self):
        data = super().clean()
        if data.get("condition") == SupportAssignment.Condition.POST_EDIT and not data.get("machine_judge"):
            self.add_error("machine_judge", "Post-editing needs the machine judge whose labels are shown.")
        return data


@login_required
def support_organise(request: HttpRequest, name: str) -> HttpResponse:
    _staff(request)
    collection = get_object_or_404(Collection, name=name)
    status = 200
    if request.method == "POST":
        form = AssignForm(request.POST, collection=collection)
        if form.is_valid():
            data = form.cleaned_data
            try:
                support_assignment_set(
                    topic=data["topic"],
                    user=data["assessor"],
                    condition=data["condition"],
                    machine_judge=data["machine_judge"],
                    max_citations=data["max_citations"],
                )
            except SupportConflict as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, "Assignment saved.")
                return redirect("support-organise", name=collection.name)
        status = 400
    else:
        form = AssignForm(collection=collection)
    assignments = SupportAssignment.objects.filter(topic__collection=collection).select_related(
        "topic", "user", "machine_judge"
    )
    return render(
        request,
        "support/organise.html",
        {
            "collection": collection,
            "form": form,
            "assignments": assignments,
            "has_topics": collection.topics.exists(),
        },
        status=status,
    )


@login_required
def support_leaderboard(request: HttpRequest, name: str) -> HttpResponse:
    _staff(request)
    collection = get_object_or_404(Collection, name=name)
    judges = Judge.objects.filter(supportjudgments__sentence__response__run__collection=collection).distinct()
    asked = request.GET.get("judge", "")
    judge = judges.filter(name=asked).first() or judges.first()
    # A judge named in the link but without labels here (a typo, another collection's judge) is said out
    # loud, rather than silently showing another judge's leaderboard under the name the user asked for.
    unknown_judge = asked if asked and (judge is None or judge.name != asked) else ""
    compare = judges.filter(name=request.GET.get("compare", "")).first()
    by = "weighted_precision" if request.GET.get("by") == "weighted_precision" else "weighted_recall"
    rows, mean_sentences, correlation = [], 0.0, None
    if judge is not None:
        scores = support_scores(collection=collection, judge=judge)
        rows, mean_sentences = leaderboard(scores, by=by), mean_sentences_per_answer(scores)
        if compare is not None and compare != judge:
            correlation = compare_judges(scores, support_scores(collection=collection, judge=compare))
    return render(
        request,
        "support/leaderboard.html",
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


def _support_judges(collection: Collection, **filters) -> QuerySet[Judge]:
    return (
        Judge.objects.filter(
            supportjudgments__sentence__response__run__collection=collection,
            **{f"supportjudgments__{key}": value for key, value in filters.items()},
        )
        .distinct()
        .order_by("name")
    )


class DisagreementReportForm(forms.Form):
    """Which judges the study compares; the choices are the judges with labels of each kind here."""

    human = forms.ModelMultipleChoiceField(
        label="Human judges", queryset=Judge.objects.none(), to_field_name="name"
    )
    llm = forms.ModelChoiceField(label="LLM judge", queryset=Judge.objects.none(), to_field_name="name")
    blind = forms.ModelChoiceField(
        label="Independent assessor", queryset=Judge.objects.none(), to_field_name="name"
    )

    def __init__(self, *args, collection: Collection, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["human"].queryset = _support_judges(collection, condition__in=HUMAN_CONDITIONS)
        self.fields["llm"].queryset = _support_judges(collection).exclude(
            kind__in=[Judge.Kind.ASSESSOR, Judge.Kind.CROWD]
        )
        self.fields["blind"].queryset = _support_judges(collection, condition=SupportJudgment.Condition.BLIND)

    def clean(self):
        data = super().clean()
        if data.get("blind") is not None and data.get("blind") in data.get("human", []):
            self.add_error("blind", "the independent assessor is one of the human judges, so not independent")
        return data

    @classmethod
    def defaults(cls, collection: Collection) -> dict[str, list[str] | str]:
        """Every human judge, the LLM whose labels were post-edited (else the first machine judge), and
        the first blind assessor: the study as the organiser most likely set it up."""
        form = cls(collection=collection)
        shown = (
            SupportAssignment.objects.filter(topic__collection=collection, machine_judge__isnull=False)
            .values_list("machine_judge__name", flat=True)
            .first()
        )
        llm = shown or form.fields["llm"].queryset.values_list("name", flat=True).first()
        blind = form.fields["blind"].queryset.values_list("name", flat=True).first()
        humans = list(form.fields["human"].queryset.values_list("name", flat=True))
        return {"human": humans, "llm": llm or "", "blind": blind or ""}


@login_required
def support_disagreement_page(request: HttpRequest, name: str) -> HttpResponse:
    """The disagreement study's report: how often, and with what Cohen's kappa, the independent
    assessor sides with the human and with the LLM, per human condition (the command's --report)."""
    _staff(request)
    collection = get_object_or_404(Collection, name=name)
    params = request.GET if "llm" in request.GET else None
    if params is None:
        defaults = DisagreementReportForm.defaults(collection)
        if defaults["human"] and defaults["llm"] and defaults["blind"]:
            params = QueryDict(mutable=True)
            params.setlist("human", defaults["human"])
            params.update({"llm": defaults["llm"], "blind": defaults["blind"]})
    form = DisagreementReportForm(params, collection=collection)
    if not form.is_bound and request.GET.get("format") == "json":
        # Nothing to report yet and no judges named: a JSON client gets the reason, not the HTML form.
        return JsonResponse(
            {
                "error": "name the judges (?human=…&llm=…&blind=…): this collection has no blind re-assessment yet"
            },
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
            titles = dict(SupportJudgment.Condition.choices) | {"all": "All conditions"}
            rows = [
                {"condition": c, "title": titles[c], "neither": r.neither, **r.as_dict()}
                for c, r in reports.items()
            ]
        else:
            status = 400
            if request.GET.get("format") == "json":
                reason = "; ".join(f"{f}: {' '.join(m)}" for f, m in form.errors.items())
                return JsonResponse({"error": reason}, status=400)
    return render(
        request,
        "support/disagreements.html",
        {"collection": collection, "form": form, "rows": rows},
        status=status,
    )
