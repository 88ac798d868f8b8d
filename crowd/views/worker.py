"""Worker pages: in-platform batches (accounts or signed anonymous links), panel studies and the MTurk
ExternalQuestion page. The organiser's campaign pages are in crowd/views/console.py.

Panel participants (Prolific-style) take in-platform batches through a study address
(crowd/providers/panels/services.py).

Every page shows a batch's questions one at a time (keys y / n), posts all answers at once, and stores
them through crowd/answers/services.py. The MTurk page is framed by MTurk's worker site only: it drops
X-Frame-Options and adds `frame-ancestors` naming MTurk's origins to the site's content security policy.
It keeps the answers here as provisional (anyone can post to it under any ids) and then answers a page that
posts them on to MTurk's `externalSubmit`; `mturk_sync` confirms them from what MTurk reports. A submit
refused because it was already made, or because the batch is full, answers 409 with the reason.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import SplitResult, urlsplit

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt

from annotation.permissions import is_organiser
from crowd.answers.selectors import (
    batch_next_for_worker,
    batch_open_slots,
    batch_with_room,
    worker_answered_campaign,
)
from crowd.answers.services import (
    Answer,
    AssignmentRepeated,
    BatchFull,
    ProvisionalCapReached,
    answers_from_fields,
    assignment_provisional_store,
    assignment_submit,
    worker_for_user,
    worker_get_or_create,
)
from crowd.campaigns.selectors import batch_items, campaigns_overview
from crowd.errors import CrowdError
from crowd.models import CrowdAssignment, CrowdBatch, CrowdCampaign, CrowdStudy, CrowdWorker
from crowd.providers.links.selectors import LinkExpired, link_from_token, link_worker_id
from crowd.providers.mturk.client import NOT_AVAILABLE, submit_hosts
from crowd.providers.mturk.selectors import hit_batch_from_token
from crowd.providers.panels.services import (
    StudyBatchFilled,
    study_batch_hold,
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
    note: str = "",
) -> HttpResponse:
    items = list(batch_items(batch=batch))
    context = {
        "batch": batch,
        "items": items,
        "action": action,
        "preview": preview,
        "error": error,
        "note": note,
        "total": len(items),
        "three_way": batch.campaign.kind == CrowdCampaign.Kind.NUGGET_SUPPORT,
        # A study page names the batch in the form: the next visit may be offered another one.
        "batch_field": batch_field,
    }
    return render(request, "crowd/worker.html", context, status=status)


# What the worker, assignment and HIT id columns hold; MTurk's own ids are far shorter.
MAX_MTURK_ID = 128


def _answers(request: HttpRequest, batch: CrowdBatch) -> tuple[dict[int, Answer], dict[int, int]]:
    """The posted answers and times (CrowdError for a missing answer or an absurd time)."""
    return answers_from_fields(request.POST, size=batch.items.count(), kind=batch.campaign.kind)


def _batch_id(value: str) -> int | None:
    """A posted batch id, or None: ASCII digits only ("²" passes isdigit), short enough for the column."""
    return int(value) if value.isascii() and value.isdigit() and len(value) <= 18 else None


def _submit(request: HttpRequest, batch: CrowdBatch, worker: CrowdWorker) -> CrowdAssignment:
    answers, times = _answers(request, batch)
    return assignment_submit(batch=batch, worker=worker, answers=answers, times_ms=times)


def _check_open(batch: CrowdBatch, worker: CrowdWorker) -> str:
    """Why this worker cannot take this batch now, or '' when they can."""
    if batch.campaign.provider != CrowdCampaign.Provider.PLATFORM or batch.status != CrowdBatch.Status.OPEN:
        return "This batch is not open in the platform."
    if worker.blocked:
        return "You can no longer take batches of this study."
    if batch.assignments.filter(worker=worker).exists():
        return "You have already answered this batch."
    if batch_open_slots(batch=batch) <= 0:
        return "This batch has all the answers it needs."
    return ""


@login_required
def crowd_home(request: HttpRequest) -> HttpResponse:
    worker = worker_for_user(user=request.user)
    context = {
        "next_batch": batch_next_for_worker(worker=worker),
        "done": worker.assignments.count(),
        "campaigns": campaigns_overview(limit=20) if is_organiser(request.user) else [],
        "is_organiser": is_organiser(request.user),
    }
    return render(request, "crowd/home.html", context)


@login_required
def batch_take(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = get_object_or_404(CrowdBatch.objects.select_related("campaign"), id=batch_id)
    worker = worker_for_user(user=request.user)
    reason = _check_open(batch, worker)
    if reason:
        messages.info(request, reason)
        return redirect("crowd:home")
    if request.method == "POST":
        try:
            _submit(request, batch, worker)
        except (AssignmentRepeated, BatchFull) as exc:
            messages.info(request, str(exc))
            return redirect("crowd:home")
        except CrowdError as exc:
            return _render_task(request, batch, action=request.path, error=str(exc), status=400)
        messages.success(request, "Thank you, your answers are saved.")
        return redirect("crowd:home")
    return _render_task(request, batch, action=request.path)


def _done(request: HttpRequest, message: str, *, status: int = 200) -> HttpResponse:
    return render(request, "crowd/done.html", {"message": message}, status=status)


def link_take(request: HttpRequest, token: str) -> HttpResponse:
    """An anonymous worker's batch, reached by a signed link made by an organiser.

    A link is one worker's place in the campaign: it answers its own batch, or, when others (accounts,
    a panel study, links made after an extend) filled that batch first, another batch of the campaign
    that still needs answers, so a participant holding a link is given work rather than an error.
    """
    try:
        found = link_from_token(token)
    except LinkExpired:
        return _done(request, "This link has expired. Ask the study's organisers for a new one.", status=410)
    if found is None:
        raise Http404("unknown or tampered link")
    batch, label = found
    campaign = batch.campaign
    worker = worker_get_or_create(worker_id=link_worker_id(label))
    if worker.blocked:
        return _done(request, "You can no longer take batches of this study.", status=403)
    if worker_answered_campaign(worker=worker, campaign=campaign):
        if request.method == "POST":
            return _done(request, "You have already answered this batch.", status=409)
        # A reload or a second visit after submitting: the work is done, nothing is gone.
        return _done(request, "You have already answered this batch: your answers are saved. Thank you.")
    if request.method == "POST":
        posted = _batch_id(request.POST.get("batch", ""))
        if posted is not None and posted != batch.id:
            other = campaign.batches.select_related("campaign").filter(id=posted).first()
            if other is None:
                return _done(request, "No such batch in this study.", status=400)
            batch = other
        reason = _check_open(batch, worker)
        if reason:
            return _done(request, reason, status=409)
        try:
            _submit(request, batch, worker)
        except (AssignmentRepeated, BatchFull) as exc:
            return _done(request, str(exc), status=409)
        except CrowdError as exc:
            return _render_task(request, batch, action=request.path, error=str(exc), status=400)
        return _done(request, "Thank you, your answers are saved.")
    if not _check_open(batch, worker):
        return _render_task(request, batch, action=request.path)
    instead = batch_with_room(campaign=campaign, worker=worker)
    if instead is None:
        message = "Every batch of this study has the answers it needs, so there is nothing left to answer. Thank you."
        return _done(request, message, status=410)
    note = "Others answered this link's batch first; this is another batch of the same study."
    return _render_task(request, instead, action=request.path, batch_field=True, note=note)


def _framable(response: HttpResponse) -> HttpResponse:
    # The site's policy (scripts and styles from our origin only) plus MTurk's worker sites as the frame's
    # ancestors: this is what django-csp's csp_update decorator sets, with hosts read per request.
    setattr(response, "_csp_update", {"frame-ancestors": submit_hosts()})  # noqa: B010
    return response


def _mturk_id_refused(name: str, value: str) -> str:
    """Why an id from the HIT page's query cannot be MTurk's, or '' (absent ids are checked where needed)."""
    if len(value) > MAX_MTURK_ID:
        return f"{name} is longer than {MAX_MTURK_ID} characters"
    if any(unicodedata.category(c) == "Cc" for c in value):  # NUL, newlines, escapes
        return f"{name} contains control characters"
    return ""


def _hit_submit(
    request: HttpRequest,
    batch: CrowdBatch,
    parts: SplitResult,
    assignment_id: str,
    *,
    message: str = "Your answers are saved.",
    status: int = 200,
) -> HttpResponse:
    """The page that hands the posted answers on to MTurk's externalSubmit."""
    fields = [(f"q{n}", request.POST.get(f"q{n}", "")) for n in range(1, batch.items.count() + 1)]
    context = {
        "submit_url": f"{parts.scheme}://{parts.netloc}/mturk/externalSubmit",
        "assignment_id": assignment_id,
        "fields": fields,
        "message": message,
    }
    return render(request, "crowd/hit_submit.html", context, status=status)


# Posted from inside MTurk's frame, where our cookies are third-party; what arrives is kept provisional.
@csrf_exempt
@xframe_options_exempt
def hit_page(request: HttpRequest, token: str) -> HttpResponse:
    batch = hit_batch_from_token(token)
    if batch is None:
        raise Http404("unknown HIT")
    params = request.GET
    for name in ("hitId", "assignmentId", "workerId"):
        reason = _mturk_id_refused(name, params.get(name, ""))
        if reason:
            return _framable(HttpResponseBadRequest(reason, content_type="text/plain; charset=utf-8"))
    assignment_id = params.get("assignmentId", "")
    if params.get("hitId") and batch.hit_id and params["hitId"] != batch.hit_id:
        return _framable(HttpResponseBadRequest("hitId does not match this HIT"))
    if not assignment_id or assignment_id == NOT_AVAILABLE:
        return _framable(_render_task(request, batch, action="", preview=True))
    worker_id = params.get("workerId", "")
    try:
        parts = urlsplit(params.get("turkSubmitTo", ""))
    except ValueError:  # e.g. an unclosed IPv6 bracket
        parts = urlsplit("")
    if not worker_id or f"{parts.scheme}://{parts.netloc}" not in submit_hosts():
        return _framable(HttpResponseBadRequest("workerId and an MTurk turkSubmitTo are required"))
    if request.method == "POST":
        try:
            answers, times = _answers(request, batch)
            assignment_provisional_store(
                batch=batch, worker_id=worker_id, assignment_id=assignment_id, answers=answers, times_ms=times
            )
        except (AssignmentRepeated, BatchFull) as exc:
            return _framable(render(request, "crowd/done.html", {"message": str(exc)}, status=409))
        except ProvisionalCapReached as exc:
            # Nothing is kept here, but the answers still go on to MTurk: forged posts that filled the cap
            # must not stop a real worker from finishing the HIT, and mturk_sync stores it from MTurk.
            return _framable(_hit_submit(request, batch, parts, assignment_id, message=str(exc), status=429))
        except CrowdError as exc:
            return _framable(
                _render_task(request, batch, action=request.get_full_path(), error=str(exc), status=400)
            )
        return _framable(_hit_submit(request, batch, parts, assignment_id))
    return _framable(_render_task(request, batch, action=request.get_full_path()))


# --- external studies (Prolific and other panels) -----------------------------------------------------


def _study_complete(request: HttpRequest, study: CrowdStudy, *, note: str = "") -> HttpResponse:
    if study.completion_url:
        return redirect(study.completion_url)
    context = {
        "message": note or "Thank you, your answers are saved.",
        "code": study.completion_code,
    }
    return render(request, "crowd/done.html", context)


def study_take(request: HttpRequest, key: str) -> HttpResponse:
    """A panel participant's batch: their ids come from the query string the panel adds to the address."""
    study = get_object_or_404(CrowdStudy.objects.select_related("campaign"), key=key)
    try:
        participant = study_participant(study=study, params=request.GET)
    except CrowdError as exc:
        return render(request, "crowd/done.html", {"message": str(exc)}, status=400)
    if study_done(study=study, worker=participant.worker):
        return _study_complete(request, study, note="You have already answered this study. Thank you.")
    if request.method == "POST":
        batch_id = _batch_id(request.POST.get("batch", ""))
        batch = (
            study.campaign.batches.select_related("campaign").filter(id=batch_id).first()
            if batch_id is not None
            else None
        )
        if batch is None:
            return render(request, "crowd/done.html", {"message": "No such batch in this study."}, status=400)
        try:
            answers, times = _answers(request, batch)
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
    # Opening the study holds the participant a place, as accepting a HIT does on MTurk.
    batch = study_batch_hold(study=study, worker=participant.worker)
    if batch is None:
        message = "This study has all the answers it needs. Please return it on the panel's site."
        return render(request, "crowd/done.html", {"message": message}, status=410)
    return _render_task(request, batch, action=request.get_full_path(), batch_field=True)
