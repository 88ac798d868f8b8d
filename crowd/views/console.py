"""The organiser's campaign pages: list, compose, signed links, and the campaign page with its actions
(aggregate, study address, and on MTurk qualification test / publish / sync / review / bonus / extend /
expire).

Each action is a POST form over one service of crowd's features (campaigns, aggregation, MTurk or panels), then back to
the campaign page with what happened. The worker-facing pages are in crowd/views/worker.py.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from datetime import timedelta
from functools import wraps
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from annotation.models import Collection
from annotation.permissions import organiser_required
from core.csv_safe import csv_writer
from core.pagination import page_of
from core.wording import plural
from crowd.aggregation.selectors import campaign_fit_report, fit_job_state
from crowd.aggregation.services import labels_aggregate, method_judge_name
from crowd.aggregation.tasks import fit_job_start
from crowd.answers.selectors import campaign_places_left
from crowd.campaigns.report import campaign_report, campaign_workers
from crowd.campaigns.selectors import campaigns_overview
from crowd.campaigns.services import batches_extend, campaign_compose
from crowd.errors import CrowdError
from crowd.forms import (
    AggregateForm,
    BonusForm,
    CampaignComposeForm,
    CollectionChoiceForm,
    ConfirmForm,
    ExtendForm,
    QualificationForm,
    ReviewForm,
    StudyForm,
)
from crowd.models import CrowdCampaign
from crowd.providers.links import selectors as link_selectors
from crowd.providers.mturk.client import MTurkClient, MTurkError
from crowd.providers.mturk.selectors import campaign_qualification
from crowd.providers.mturk.services import (
    campaign_bonus,
    campaign_expire,
    campaign_publish,
    campaign_qualification_set,
    campaign_review,
    campaign_sync,
)
from crowd.providers.panels.services import study_create

# Rows per page of the campaign page's Batches and Workers tables, and batches per page of its links (each
# with a link per worker place): a campaign at real size has thousands.
PER_PAGE = 50
LINK_BATCHES_PER_PAGE = 20


@organiser_required
def campaign_list(request: HttpRequest) -> HttpResponse:
    campaigns = campaigns_overview()
    return render(request, "crowd/campaigns.html", {"campaigns": campaigns})


@organiser_required
def campaign_new(request: HttpRequest) -> HttpResponse:
    """Compose a campaign: first the collection (its judges, turns and runs fill the form), then the rest."""
    collections = Collection.objects.order_by("name")
    if not collections.exists():
        return render(request, "crowd/campaign_new.html", {"chooser": None, "form": None})
    source = request.POST if request.method == "POST" else request.GET
    chooser = CollectionChoiceForm(
        source if "collection" in source else None, initial={"collection": collections.first()}
    )
    collection = chooser.cleaned_data["collection"] if chooser.is_valid() else collections.first()
    assert collection is not None
    if request.method != "POST":
        form = CampaignComposeForm(collection=collection)
        return render(request, "crowd/campaign_new.html", {"chooser": chooser, "form": form})
    form = CampaignComposeForm(request.POST, collection=collection)
    if form.is_valid():
        try:
            campaign, batches = campaign_compose(**form.compose_arguments())
        except CrowdError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Campaign {campaign.name}: {plural(len(batches), 'batch')}.")
            return redirect("crowd:campaign", name=campaign.name)
    return render(request, "crowd/campaign_new.html", {"chooser": chooser, "form": form}, status=400)


# A worker who answered after the last fit has no reliability yet.
NOT_FITTED: dict[str, None] = {"ds": None, "mace": None, "glad": None}


def _mturk_target(client: MTurkClient) -> str:
    if client.live:
        return "live"
    return "local" if client.is_local else "sandbox"


def _campaign_page(
    request: HttpRequest,
    campaign: CrowdCampaign,
    *,
    bound: dict[str, forms.BaseForm] | None = None,
    status: int = 200,
) -> HttpResponse:
    is_mturk = campaign.provider == CrowdCampaign.Provider.MTURK
    qualification = campaign_qualification(campaign=campaign) if is_mturk else None
    made = (
        {"threshold": qualification.threshold, "questions": qualification.questions} if qualification else {}
    )
    action_forms: dict[str, forms.BaseForm] = {
        "aggregate": AggregateForm(),
        "study": StudyForm(),
        "qualification": QualificationForm(prefix="qualification", initial=made),
        "publish": ConfirmForm(prefix="publish"),
        "sync": forms.Form(),
        "review": ReviewForm(prefix="review"),
        "bonus": BonusForm(prefix="bonus"),
        "extend": ExtendForm(prefix="extend"),
        "expire": ConfirmForm(prefix="expire"),
        **(bound or {}),
    }
    batches = page_of(
        request,
        campaign.batches.order_by("index"),
        param="batch_page",
        anchor="crowd-batches",
        per_page=PER_PAGE,
    )
    workers = page_of(
        request,
        campaign_workers(campaign=campaign),
        param="worker_page",
        anchor="crowd-workers",
        per_page=PER_PAGE,
    )
    report = campaign_report(
        campaign=campaign,
        batch_ids={batch.pk for batch in batches.page},
        worker_ids={worker_pk for worker_pk, _ in workers.page},
    )
    three_way = campaign.kind == CrowdCampaign.Kind.NUGGET_SUPPORT
    fit = campaign_fit_report(campaign=campaign) if three_way else {}
    reliability = {row["worker"]: row for row in fit.get("workers", [])}
    context: dict[str, object] = {
        "campaign": campaign,
        "report": report,
        "three_way": three_way,
        "fit": fit,
        "fit_job": fit_job_state(campaign=campaign) if three_way else None,
        "fit_methods": [
            (method, method_judge_name(campaign=campaign, method=method), score)
            for method, score in fit.get("methods", {}).items()
        ],
        "worker_rows": [(w, reliability.get(w.worker_id, NOT_FITTED)) for w in report.workers],
        "batch_pager": batches,
        "worker_pager": workers,
        "is_mturk": is_mturk,
        "forms": action_forms,
        "studies": [
            (study, request.build_absolute_uri(reverse("crowd:study", args=[study.key])))
            for study in campaign.studies.all()
        ],
    }
    if is_mturk:
        client = MTurkClient()
        context["mturk"] = {
            "target": _mturk_target(client),
            "endpoint": client.endpoint_url,
            "external_url": _external_url(request),
            "started_by_make_run": "mturk" in settings.LOCAL_FAKES,
        }
        context["qualification"] = qualification
        if client.is_local:
            # The local fake stands in for MTurk's worker site: these open a HIT as a made-up worker
            # (the HITs of the batches on this page of the Batches table).
            context["worker_links"] = [
                (
                    batch.index,
                    f"{client.endpoint_url.rstrip('/')}/worker/frame?hitId={batch.hit_id}&workerId=DEMO{n}",
                )
                for batch in batches.page
                if batch.hit_id
                for n in range(1, batch.max_assignments + 1)
            ]
    return render(request, "crowd/campaign.html", context, status=status)


def _campaign(name: str) -> CrowdCampaign:
    return get_object_or_404(CrowdCampaign.objects.select_related("collection", "label_judge"), name=name)


@organiser_required
def campaign_detail(request: HttpRequest, name: str) -> HttpResponse:
    return _campaign_page(request, _campaign(name))


@organiser_required
def campaign_links(request: HttpRequest, name: str) -> HttpResponse:
    """Signed links for an in-platform campaign, one per batch and worker place (as `crowd_links`)."""
    campaign = _campaign(name)
    if campaign.provider != CrowdCampaign.Provider.PLATFORM:
        raise Http404("links are for in-platform campaigns")
    prefix = request.GET.get("prefix", "anon")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}", prefix):
        return HttpResponseBadRequest("prefix: letters, digits, '-' and '_' only")
    base = request.build_absolute_uri("/").rstrip("/")
    if request.GET.get("format") == "tsv":
        links = link_selectors.campaign_links(campaign=campaign, base_url=base, prefix=prefix)
        out = io.StringIO()
        writer = csv_writer(out, delimiter="\t", lineterminator="\n")
        writer.writerow(["batch", "worker", "url"])
        writer.writerows(links)
        response = HttpResponse(out.getvalue(), content_type="text/tab-separated-values; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{campaign.name}-links.tsv"'
        return response
    # A page of batches at a time (the download has them all): a campaign has thousands of batches.
    pager = page_of(
        request,
        campaign.batches.order_by("index"),
        param="page",
        anchor="links",
        per_page=LINK_BATCHES_PER_PAGE,
    )
    links = link_selectors.batch_links(batches=pager.page.object_list, base_url=base, prefix=prefix)
    expires = timezone.now() + timedelta(seconds=settings.CROWD_LINK_MAX_AGE)
    context = {"campaign": campaign, "links": links, "pager": pager, "prefix": prefix, "expires": expires}
    return render(request, "crowd/links.html", context)


CampaignAction = Callable[[HttpRequest, CrowdCampaign, Any], str]


def _action(
    form_class: type[forms.BaseForm], key: str, *, prefix: str | None = None
) -> Callable[[CampaignAction], Callable[..., HttpResponse]]:
    """A POST-only campaign action: its form, one service call, then back to the campaign page with what
    happened (or the page again, 400, with the form's errors)."""

    def decorate(run: CampaignAction) -> Callable[..., HttpResponse]:
        @organiser_required
        @require_POST
        @wraps(run)
        def view(request: HttpRequest, name: str) -> HttpResponse:
            campaign = _campaign(name)
            form = form_class(request.POST, prefix=prefix)
            if not form.is_valid():
                return _campaign_page(request, campaign, bound={key: form}, status=400)
            try:
                messages.success(request, run(request, campaign, form.cleaned_data))
            except (CrowdError, MTurkError) as exc:
                messages.error(request, str(exc))
            return redirect("crowd:campaign", name=campaign.name)

        return view

    return decorate


def _external_url(request: HttpRequest) -> str:
    """The root MTurk frames HIT pages from: MTURK_EXTERNAL_URL, or else the address this page was asked at
    (the port `make run` was given, not a guessed one)."""
    return settings.MTURK_EXTERNAL_URL or request.build_absolute_uri("/")


def _client_for(campaign: CrowdCampaign) -> MTurkClient:
    if campaign.provider != CrowdCampaign.Provider.MTURK:
        raise CrowdError(f"campaign {campaign.name} is in the platform, not on MTurk")
    return MTurkClient()


@_action(AggregateForm, "aggregate")
def campaign_aggregate(request: HttpRequest, campaign: CrowdCampaign, data: dict[str, Any]) -> str:
    if campaign.kind == CrowdCampaign.Kind.NUGGET_SUPPORT:
        # Fitting takes seconds to minutes: a task worker does it, and this page shows how it stands.
        job = fit_job_start(
            campaign=campaign, method=data.get("method") or "majority", min_votes=data["min_votes"]
        )
        return f"Aggregation by {job.method} queued: this page shows when it is done."
    result = labels_aggregate(campaign=campaign, min_votes=data["min_votes"])
    return (
        f"{plural(result.labelled, 'label')} as {campaign.label_judge.name} ({result.yes} yes, {result.no} no), "
        f"{len(result.unresolved)} unresolved, {plural(result.discarded_assignments, 'assignment')} discarded."
    )


@_action(StudyForm, "study")
def campaign_study(request: HttpRequest, campaign: CrowdCampaign, data: dict[str, Any]) -> str:
    study = study_create(campaign=campaign, **{k: v or "" for k, v in data.items()})
    needed = campaign_places_left(campaign=campaign)
    return (
        f"Study address made for {study.panel}; give the panel the address shown below, "
        f"with {plural(needed, 'place')} for participants (one batch each)."
    )


@_action(QualificationForm, "qualification", prefix="qualification")
def campaign_qualification_view(request: HttpRequest, campaign: CrowdCampaign, data: dict[str, Any]) -> str:
    qualification, made = campaign_qualification_set(
        campaign=campaign,
        client=_client_for(campaign),
        threshold=data["threshold"],
        questions=data["questions"],
    )
    if made:
        return (
            f"Qualification test {qualification.qualification_type_id} made on MTurk from "
            f"{plural(qualification.questions, 'test question')}: HITs published from now on require "
            f"{qualification.threshold}% right."
        )
    return (
        f"The qualification test {qualification.qualification_type_id} stays as made; HITs published from "
        f"now on require {qualification.threshold}% right."
    )


@_action(ConfirmForm, "publish", prefix="publish")
def campaign_publish_view(request: HttpRequest, campaign: CrowdCampaign, data: dict[str, Any]) -> str:
    client = _client_for(campaign)
    base_url = _external_url(request)
    if not base_url.startswith("https://") and not client.is_local:
        raise CrowdError(
            "MTurk only frames HTTPS pages: set MTURK_EXTERNAL_URL to this site's https:// address"
        )
    published = campaign_publish(campaign=campaign, client=client, base_url=base_url)
    return f"Published {plural(len(published), 'HIT')} on {_mturk_target(client)} ({client.endpoint_url})."


@_action(forms.Form, "sync")
def campaign_sync_view(request: HttpRequest, campaign: CrowdCampaign, data: dict[str, Any]) -> str:
    result = campaign_sync(campaign=campaign, client=_client_for(campaign))
    text = f"{plural(result.seen, 'assignment')} seen on MTurk, {result.stored} stored"
    for label, rows in (("skipped", result.skipped), ("missing", result.missing), ("failed", result.failed)):
        if rows:
            text += f"; {len(rows)} {label}: " + "; ".join(rows[:5])
    return text + f"; {result.unconfirmed} provisional answers not reported by MTurk."


@_action(ReviewForm, "review", prefix="review")
def campaign_review_view(request: HttpRequest, campaign: CrowdCampaign, data: dict[str, Any]) -> str:
    result = campaign_review(
        campaign=campaign,
        client=_client_for(campaign),
        reject_failed=data["reject_failed"],
        block_failed=data["block_failed"],
    )
    return (
        f"{result.approved} approved, {result.rejected} rejected, {plural(result.blocked, 'worker')} blocked."
    )


@_action(BonusForm, "bonus", prefix="bonus")
def campaign_bonus_view(request: HttpRequest, campaign: CrowdCampaign, data: dict[str, Any]) -> str:
    client = _client_for(campaign) if campaign.provider == CrowdCampaign.Provider.MTURK else None
    result = campaign_bonus(campaign=campaign, client=client, amount=data["amount"], reason=data["reason"])
    return f"{plural(result.paid, 'bonus')} paid, {result.total} USD."


@_action(ExtendForm, "extend", prefix="extend")
def campaign_extend_view(request: HttpRequest, campaign: CrowdCampaign, data: dict[str, Any]) -> str:
    result = labels_aggregate(campaign=campaign, min_votes=data["min_votes"])
    if not result.unresolved:
        return "No unresolved pairs: nothing to extend."
    client = _client_for(campaign) if campaign.provider == CrowdCampaign.Provider.MTURK else None
    count = batches_extend(campaign=campaign, items=result.unresolved, extra=data["extra"], client=client)
    return (
        f"{plural(len(result.unresolved), 'unresolved pair')}: {plural(count, 'batch')} got "
        f"{plural(data['extra'], 'more assignment')}."
    )


@_action(ConfirmForm, "expire", prefix="expire")
def campaign_expire_view(request: HttpRequest, campaign: CrowdCampaign, data: dict[str, Any]) -> str:
    count = campaign_expire(campaign=campaign, client=_client_for(campaign))
    return f"{plural(count, 'HIT')} expired."
