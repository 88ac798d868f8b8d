"""The one action a stored report offers on every page that shows it: compute again one that failed or
whose worker stopped."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from annotation.permissions import organiser_required
from judging.reports.models import ReportResult
from judging.reports.store import ReportError, report_again


@organiser_required
@require_POST
def report_again_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue the report again, then go back to the page that showed it (`next`)."""
    report = get_object_or_404(ReportResult, pk=pk)
    try:
        report_again(report=report)
    except ReportError as exc:
        messages.info(request, str(exc))
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        back = "/"
    return redirect(back)
