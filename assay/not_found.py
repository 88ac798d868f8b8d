"""The 404s Django answers itself (handler404: an address no route matches, or an Http404 a page view
raises): in the API's one error shape for the API and the JSON endpoints (core/api_errors.py), as DRF
answers a 404 of its own; Django's page for the rest.

An address can match no route although its operation exists: a name holding a NUL character matches none
of the URL converters (core/converters.py), and a script asking for it should still get JSON it can read.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.defaults import page_not_found

from assay.middleware import wants_json
from core.api_errors import error_json


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if wants_json(request):
        return error_json(detail="Not found.", code="not_found", status=404)
    return page_not_found(request, exception)
