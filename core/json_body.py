"""One strict reader for JSON request bodies: the parser of every DRF view that reads a body.

Python's json module accepts what the rest of the stack cannot take: `NaN`, `Infinity` and `1e400`
(floats no database column or JSON answer holds), NUL characters and lone surrogates (PostgreSQL and
UTF-8 refuse them on write), and nesting deep enough to exhaust the interpreter's stack. Each of those
was a 500; here each is a refusal with a short reason, before any view code runs, and a body over
DATA_UPLOAD_MAX_MEMORY_SIZE is a 413 that says so.
"""

from __future__ import annotations

import json
import math
from typing import IO, Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

# Far deeper than any body a page or script of ours sends, far shallower than the interpreter's stack.
MAX_DEPTH = 32


def _constant(name: str) -> float:
    raise ParseError(f"JSON parse error - {name} is not a number JSON allows")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ParseError(f"JSON parse error - {text[:40]} is out of range")
    return value


def _check_text(text: str) -> None:
    if "\x00" in text:
        raise ParseError("JSON parse error - NUL characters are not allowed")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ParseError("JSON parse error - lone surrogates are not allowed") from None


def _check_tree(data: object) -> None:
    """NUL-free, encodable strings (keys too) and at most MAX_DEPTH levels, walked without recursion."""
    stack: list[tuple[object, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            _check_text(value)
            continue
        if not isinstance(value, dict | list):
            continue
        if depth > MAX_DEPTH:
            raise ParseError(f"JSON parse error - nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            for key in value:
                _check_text(key)
            stack.extend((item, depth + 1) for item in value.values())
        else:
            stack.extend((item, depth + 1) for item in value)


def json_parse(raw: bytes) -> Any:
    """The parsed body, or ParseError (a 400 in the API's error shape) with the reason."""
    try:
        data = json.loads(raw, parse_constant=_constant, parse_float=_finite)
    except RecursionError:
        raise ParseError(f"JSON parse error - nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # UnicodeDecodeError too
        raise ParseError(f"JSON parse error - {exc}") from None
    _check_tree(data)
    return data


class BodyTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "body_too_large"


class StrictJSONParser(JSONParser):
    """DRF's JSON parser with the checks above."""

    def parse(
        self, stream: IO[bytes] | None, media_type: str | None = None, parser_context: Any = None
    ) -> Any:
        if stream is None:
            return {}
        return json_parse(stream.read())


class StrictBodies(APIView):
    """For DRF views that read a body: the strict JSON parser, and 413 with the reason for a body over
    DATA_UPLOAD_MAX_MEMORY_SIZE (Django's check raises while DRF reads it; it became a bare 400)."""

    parser_classes = [StrictJSONParser, FormParser, MultiPartParser]

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, RequestDataTooBig):
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            exc = BodyTooLarge(f"the request body is larger than {limit} bytes")
        return super().handle_exception(exc)
