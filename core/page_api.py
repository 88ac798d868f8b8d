"""The base of the JSON endpoints the site's own pages call: a span saved, a list edited, progress polled.

They are DRF views like the rest of the API, so they are in its OpenAPI schema, read a body with the
strict JSON reader (core/json_body.py) and refuse in its one error shape (core/api_errors.py). A page
signs in with its session, whose CSRF check DRF's session authentication makes (the page sends the token
in the X-CSRFToken header); a script may use its token instead. They answer JSON only, and the per-user
throttle counts scripts only: a person on a page goes at a person's pace, and a page polling every second
or two must not use up the rate a script is given.
"""

from __future__ import annotations

from rest_framework.renderers import JSONRenderer

from core.json_body import StrictBodies
from core.throttling import ScriptFixedWindowThrottle


class PageApi(StrictBodies):
    renderer_classes = [JSONRenderer]
    throttle_classes = [ScriptFixedWindowThrottle]
