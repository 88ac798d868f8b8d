"""/favicon.ico for the pages that link no icon of their own (the admin, the API docs, JSON answers):
browsers ask for it there, and a 404 on every such page only fills the logs."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponseRedirect
from django.templatetags.static import static
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe


@require_safe
@cache_control(max_age=24 * 3600)
def favicon(request: HttpRequest) -> HttpResponseRedirect:
    # Not permanent, and resolved per request: with hashed static names the target changes with the icon.
    return HttpResponseRedirect(static("favicon.svg"))
