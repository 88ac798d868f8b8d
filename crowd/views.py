"""Worker pages: in-platform batches (accounts or signed anonymous links) and the MTurk ExternalQuestion page.

Organisers compose campaigns and run them from the campaign pages (forms over the services in
crowd/services.py and crowd/mturk.py); panel participants (Prolific-style) take in-platform batches through
a study address (crowd/studies.py).

Every page shows a batch's questions one at a time (keys y / n), posts all answers at once, and stores
them through crowd/answers.py. The MTurk page is framed by MTurk's worker site only: it drops
X-Frame-Options and sends `Content-Security-Policy: frame-ancestors` naming MTurk's origins. It keeps the
answers here as provisional (anyone can post to it under any ids) and then answers a page that posts them
on to MTurk's `externalSubmit`; `mturk_sync` confirms them from what MTurk reports. A submit refused
because it was already made, or because the batch is full, answers 409 with the reason.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from datetime import timedelta
from functools import wraps
from typing import Any
from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from annotation.formats.csv_safe import csv_writer
from annotation.models import Collection
from annotation.permissions import is_organiser, organiser_required
from crowd import selectors
from crowd.answers import (
    AssignmentRepeated,
    BatchFull,
    answers_from_fields,
    assignment_provisional_store,
    assignment_submit,
    worker_for_user,
    worker_get_or_create,
)
from crowd.client import NOT_AVAILABLE, MTurkClient, MTurkError, submit_hosts
from crowd.forms import (
    AggregateForm,
    BonusForm,
    CampaignComposeForm,
    CollectionChoiceForm,
    ConfirmForm,
    ExtendForm,
    ReviewForm,
    StudyForm,
)
from crowd.models import CrowdAssignment, CrowdBatch, CrowdCampaign, CrowdStudy, CrowdWorker
from crowd.mturk import campaign_bonus, campaign_expire, campaign_publish, campaign_review, campaign_sync
from crowd.report import campaign_report
from crowd.services import CrowdError, batches_extend, campaign_compose, labels_aggregate
from crowd.studies import (
    StudyBatchFilled,
    study_batch_for,
    study_create,
    study_done,
    study_participant,
    study_submit,
)


def _render_task(
    request: HttpRequest,
    batch: CrowdBatch,
    *,
    action: str,
    preview: bool = False,
    error: str = "",
    status: int = 200,
    batch_field: bool = False,
) -> HttpResponse:
    items = list(selectors.batch_items(batch=batch))
    context = {
        "batch": batch,
        "items": items,
        "action": action,
        "preview": preview,
        "error": error,
        "total": len(items),
        # A study page names the batch in the form: the next visit may be offered another one.
        "batch_field": batch_field,
    }
    return render(request, "mturk/worker.html", context, status=status)


def _submit(request: HttpRequest, batch: CrowdBatch, worker: CrowdWorker) -> CrowdAssignment:
    answers, times = answers_from_fields(request.POST, size=batch.items.count())
    return assignment_submit(batch=batch, worker=worker, answers=answers, times_ms=times)


def _check_open(batch: CrowdBatch, worker: CrowdWorker) -> str:
    """Why this worker cannot take this batch now, or '' when they can."""
    if batch.campaign.provider != CrowdCampaign.Provider.PLATFORM or batch.status != CrowdBatch.Status.OPEN:
        return "This batch is not open in the platform."
    if worker.blocked:
        return "You can no longer take batches of this study."
    if batch.assignments.filter(worker=worker).exists():
        return "You have already answered this batch."
    if selectors.batch_open_slots(batch=batch) <= 0:
        return "This batch has all the answers it needs."
    return ""


@login_required
def crowd_home(request: HttpRequest) -> HttpResponse:
    worker = worker_for_user(user=request.user)
    context = {
        "next_batch": selectors.batch_next_for_worker(worker=worker),
        "done": worker.assignments.count(),
        "campaigns": selectors.campaigns_overview()[:20] if is_organiser(request.user) else [],
        "is_organiser": is_organiser(request.user),
    }
    return render(request, "mturk/home.html", context)


@login_required
def batch_take(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = get_object_or_404(CrowdBatch.objects.select_related("campaign"), id=batch_id)
    worker = worker_for_user(user=request.user)
    reason = _check_open(batch, worker)
    if reason:
        messages.info(request, reason)
        return redirect("mturk:home")
    if request.method == "POST":
        try:
            _submit(request, batch, worker)
        except (AssignmentRepeated, BatchFull) as exc:
            messages.info(request, str(exc))
            return redirect("mturk:home")
        except CrowdError as exc:
            return _render_task(request, batch, action=request.path, error=str(exc), status=400)
        messages.success(request, "Thank you, your answers are saved.")
        return redirect("mturk:home")
    return _render_task(request, batch, action=request.path)


def link_take(request: HttpRequest, token: str) -> HttpResponse:
    """An anonymous worker's batch, reached by a signed link made by an organiser."""
    try:
        found = selectors.link_from_token(token)
    except selectors.LinkExpired:
        message = "This link has expired. Ask the study's organisers for a new one."
        return render(request, "mturk/done.html", {"message": message}, status=410)
    if found is None:
        raise Http404("unknown or tampered link")
    batch, label = found
    worker = worker_get_or_create(worker_id=f"link:{label}")
    reason = _check_open(batch, worker)
    if reason:
        # A refused answer is a conflict with what is stored; a page asked for again is simply gone.
        status = 409 if request.method == "POST" else 410
        return render(request, "mturk/done.html", {"message": reason}, status=status)
    if request.method == "POST":
        try:
            _submit(request, batch, worker)
        except (AssignmentRepeated, BatchFull) as exc:
            return render(request, "mturk/done.html", {"message": str(exc)}, status=409)
        except CrowdError as exc:
            return _render_task(request, batch, action=request.path, error=str(exc), status=400)
        return render(request, "mturk/done.html", {"message": "Thank you, your answers are saved."})
    return _render_task(request, batch, action=request.path)


def _framable(response: HttpResponse) -> HttpResponse:
    response["Content-Security-Policy"] = "frame-ancestors " + " ".join(submit_hosts())
    return response


# Posted from inside MTurk's frame, where our cookies are third-party; what arrives is kept provisional.
@csrf_exempt
@xframe_options_exempt
def hit_page(request: HttpRequest, token: str) -> HttpResponse:
    batch = selectors.hit_batch_from_token(token)
    if batch is None:
        raise Http404("unknown HIT")
    params = request.GET
    assignment_id = params.get("assignmentId", "")
    if params.get("hitId") and batch.hit_id and params["hitId"] != batch.hit_id:
        return _framable(HttpResponseBadRequest("hitId does not match this HIT"))
    if not assignment_id or assignment_id == NOT_AVAILABLE:
        return _framable(_render_task(request, batch, action="", preview=True))
    worker_id = params.get("workerId", "")
    submit_to = params.get("turkSubmitTo", "")
    parts = urlsplit(submit_to)
    if not worker_id or f"{parts.scheme}://{parts.netloc}" not in submit_hosts():
        return _framable(HttpResponseBadRequest("workerId and an MTurk turkSubmitTo are required"))
    if request.method == "POST":
        try:
            answers, times = answers_from_fields(request.POST, size=batch.items.count())
            assignment_provisional_store(
                batch=batch, worker_id=worker_id, assignment_id=assignment_id, answers=answers, times_ms=times
            )
        except (AssignmentRepeated, BatchFull) as exc:
            return _framable(render(request, "mturk/done.html", {"message": str(exc)}, status=409))
        except CrowdError as exc:
            return _framable(
                _render_task(request, batch, action=request.get_full_path(), error=str(exc), status=400)
            )
        fields = [(f"q{n}", request.POST.get(f"q{n}", "")) for n in range(1, batch.items.count() + 1)]
        context = {
            "submit_url": f"{parts.scheme}://{parts.netloc}/mturk/externalSubmit",
            "assignment_id": assignment_id,
            "fields": fields,
        }
        return _framable(render(request, "mturk/hit_submit.html", context))
    return _framable(_render_task(request, batch, action=request.get_full_path()))


# --- external studies (Prolific and other panels) -----------------------------------------------------


def _study_complete(request: HttpRequest, study: CrowdStudy, *, note: str = "") -> HttpResponse:
    if study.completion_url:
        return redirect(study.completion_url)
    context = {
        "message": note or "Thank you, your answers are saved.",
        "code": study.completion_code,
    }
    return render(request, "mturk/done.html", context)


def study_take(request: HttpRequest, key: str) -> HttpResponse:
    """A panel participant's batch: their ids come from the query string the panel adds to the address."""
    study = get_object_or_404(CrowdStudy.objects.select_related("campaign"), key=key)
    try:
        participant = study_participant(study=study, params=request.GET)
    except CrowdError as exc:
        return render(request, "mturk/done.html", {"message": str(exc)}, status=400)
    if study_done(study=study, worker=participant.worker):
        return _study_complete(request, study, note="You have already answered this study. Thank you.")
    if request.method == "POST":
        batch_id = request.POST.get("batch", "")
        batch = (
            study.campaign.batches.select_related("campaign").filter(id=int(batch_id)).first()
            if batch_id.isdigit()
            else None
        )
        if batch is None:
            return render(request, "mturk/done.html", {"message": "No such batch in this study."}, status=400)
        try:
            answers, times = answers_from_fields(request.POST, size=batch.items.count())
            study_submit(study=study, participant=participant, batch=batch, answers=answers, times_ms=times)
        except StudyBatchFilled:
            # The participant did the work; the panel pays them, so they get the completion all the same.
            note = "Thank you. Others filled this batch while you worked, so your answers were not needed."
            return _study_complete(request, study, note=note)
        except CrowdError as exc:
            return _render_task(
                request, batch, action=request.get_full_path(), error=str(exc), status=400, batch_field=True
            )
        return _study_complete(request, study)
    batch = study_batch_for(study=study, worker=participant.worker)
    if batch is None:
        message = "This study has all the answers it needs. Please return it on the panel's site."
        return render(request, "mturk/done.html", {"message": message}, status=410)
    return _render_task(request, batch, action=request.get_full_path(), batch_field=True)


# --- the organiser's console: campaigns ---------------------------------------------------------------


@organiser_required
def campaign_list(request: HttpRequest) -> HttpResponse:
    campaigns = selectors.campaigns_overview()
    return render(request, "mturk/campaigns.html", {"campaigns": campaigns})


@organiser_required
def campaign_new(request: HttpRequest) -> HttpResponse:
    """Compose a campaign: first the collection (its judges, turns and runs fill the form), then the rest."""
    collections = Collection.objects.order_by("name")
    if not collections.exists():
        return render(request, "mturk/campaign_new.html", {"chooser": None, "form": None})
    source = request.POST if request.method == "POST" else request.GET
    chooser = CollectionChoiceForm(
        source if "collection" in source else None, initial={"collection": collections.first()}
    )
    collection = chooser.cleaned_data["collection"] if chooser.is_valid() else collections.first()
    assert collection is not None
    if request.method != "POST":
        form = CampaignComposeForm(collection=collection)
        return render(request, "mturk/campaign_new.html", {"chooser": chooser, "form": form})
    form = CampaignComposeForm(request.POST, collection=collection)
    if form.is_valid():
        try:
            campaign, batches = campaign_compose(**form.compose_arguments())
        except CrowdError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Campaign {campaign.name}: {len(batches)} batches.")
            return redirect("mturk:campaign", name=campaign.name)
    return render(request, "mturk/campaign_new.html", {"chooser": chooser, "form": form}, status=400)


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
    action_forms: dict[str, forms.BaseForm] = {
        "aggregate": AggregateForm(),
        "study": StudyForm(),
        "publish": ConfirmForm(prefix="publish"),
        "sync": forms.Form(),
        "review": ReviewForm(prefix="review"),
        "bonus": BonusForm(prefix="bonus"),
        "extend": ExtendForm(prefix="extend"),
        "expire": ConfirmForm(prefix="expire"),
        **(bound or {}),
    }
    context: dict[str, Any] = {
        "campaign": campaign,
        "report": campaign_report(campaign=campaign),
        "is_mturk": is_mturk,
        "forms": action_forms,
        "studies": [
            (study, request.build_absolute_uri(reverse("mturk:study", args=[study.key])))
            for study in campaign.studies.all()
        ],
    }
    if is_mturk:
        client = MTurkClient()
        context["mturk"] = {
            "target": _mturk_target(client),
            "endpoint": client.endpoint_url,
            "external_url": settings.MTURK_EXTERNAL_URL,
        }
        if client.is_local:
            # The local fake stands in for MTurk's worker site: these open a HIT as a made-up worker.
            context["worker_links"] = [
                (
                    batch.index,
                    f"{client.endpoint_url.rstrip('/')}/worker/frame?hitId={batch.hit_id}&workerId=DEMO{n}",
                )
                for batch in campaign.batches.exclude(hit_id="").order_by("index")
                for n in range(1, batch.max_assignments + 1)
            ]
    return render(request, "mturk/campaign.html", context, status=status)


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
    links = selectors.campaign_links(campaign=campaign, base_url=base, prefix=prefix)
    if request.GET.get("format") == "tsv":
        out = io.StringIO()
        writer = csv_writer(out, delimiter="\t", lineterminator="\n")
        writer.writerow(["batch", "worker", "url"])
        writer.writerows(links)
        response = HttpResponse(out.getvalue(), content_type="text/tab-separated-values; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{campaign.name}-links.tsv"'
        return response
    expires = timezone.now() + timedelta(seconds=settings.CROWD_LINK_MAX_AGE)
    context = {"campaign": campaign, "links": links, "prefix": prefix, "expires": expires}
    return render(request, "mturk/links.html", context)


CampaignAction = Callable[[CrowdCampaign, Any], str]


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
                messages.success(request, run(campaign, form.cleaned_data))
            except (CrowdError, MTurkError) as exc:
                messages.error(request, str(exc))
            return redirect("mturk:campaign", name=campaign.name)

        return view

    return decorate


def _client_for(campaign: CrowdCampaign) -> MTurkClient:
    if campaign.provider != CrowdCampaign.Provider.MTURK:
        raise CrowdError(f"campaign {campaign.name} is in the platform, not on MTurk")
    return MTurkClient()


@_action(AggregateForm, "aggregate")
def campaign_aggregate(campaign: CrowdCampaign, data: dict[str, Any]) -> str:
    result = labels_aggregate(campaign=campaign, min_votes=data["min_votes"])
    return (
        f"{result.labelled} labels as {campaign.label_judge.name} ({result.yes} yes, {result.no} no), "
        f"{len(result.unresolved)} unresolved, {result.discarded_assignments} assignments discarded."
    )


@_action(StudyForm, "study")
def campaign_study(campaign: CrowdCampaign, data: dict[str, Any]) -> str:
    study = study_create(campaign=campaign, **{k: v or "" for k, v in data.items()})
    return f"Study address made for {study.panel}; give the panel the address shown below."


@_action(ConfirmForm, "publish", prefix="publish")
def campaign_publish_view(campaign: CrowdCampaign, data: dict[str, Any]) -> str:
    client = _client_for(campaign)
    base_url = settings.MTURK_EXTERNAL_URL
    if not base_url.startswith("https://") and not client.is_local:
        raise CrowdError(
            "MTurk only frames HTTPS pages: set MTURK_EXTERNAL_URL to this site's https:// address"
        )
    published = campaign_publish(campaign=campaign, client=client, base_url=base_url)
    return f"Published {len(published)} HITs on {_mturk_target(client)} ({client.endpoint_url})."


@_action(forms.Form, "sync")
def campaign_sync_view(campaign: CrowdCampaign, data: dict[str, Any]) -> str:
    result = campaign_sync(campaign=campaign, client=_client_for(campaign))
    text = f"{result.seen} assignments seen on MTurk, {result.stored} stored"
    for label, rows in (("skipped", result.skipped), ("missing", result.missing), ("failed", result.failed)):
        if rows:
            text += f"; {len(rows)} {label}: " + "; ".join(rows[:5])
    return text + f"; {result.unconfirmed} provisional answers not reported by MTurk."


@_action(ReviewForm, "review", prefix="review")
def campaign_review_view(campaign: CrowdCampaign, data: dict[str, Any]) -> str:
    result = campaign_review(
        campaign=campaign,
        client=_client_for(campaign),
        reject_failed=data["reject_failed"],
        block_failed=data["block_failed"],
    )
    return f"{result.approved} approved, {result.rejected} rejected, {result.blocked} workers blocked."


@_action(BonusForm, "bonus", prefix="bonus")
def campaign_bonus_view(campaign: CrowdCampaign, data: dict[str, Any]) -> str:
    client = _client_for(campaign) if campaign.provider == CrowdCampaign.Provider.MTURK else None
    result = campaign_bonus(campaign=campaign, client=client, amount=data["amount"], reason=data["reason"])
    return f"{result.paid} bonuses paid, {result.total} USD."


@_action(ExtendForm, "extend", prefix="extend")
def campaign_extend_view(campaign: CrowdCampaign, data: dict[str, Any]) -> str:
    result = labels_aggregate(campaign=campaign, min_votes=data["min_votes"])
    if not result.unresolved:
        return "No unresolved pairs: nothing to extend."
    client = _client_for(campaign) if campaign.provider == CrowdCampaign.Provider.MTURK else None
    count = batches_extend(campaign=campaign, items=result.unresolved, extra=data["extra"], client=client)
    return f"{len(result.unresolved)} unresolved pairs: {count} batches got {data['extra']} more assignments."


@_action(ConfirmForm, "expire", prefix="expire")
def campaign_expire_view(campaign: CrowdCampaign, data: dict[str, Any]) -> str:
    count = campaign_expire(campaign=campaign, client=_client_for(campaign))
    return f"{count} HITs expired."
