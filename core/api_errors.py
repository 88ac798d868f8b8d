"""The API's one error shape, for every refusal of every endpoint, DRF's own and ours.

    {"detail": "grade: \"7\" is not a valid choice.", "code": "invalid",
     "fields": {"grade": ["\"7\" is not a valid choice."]}}

`detail` is always one sentence a person can read (a script may show it as it is), `code` a stable word a
script can branch on (DRF's codes: `not_authenticated`, `authentication_failed`, `permission_denied`,
`not_found`, `method_not_allowed`, `unsupported_media_type`, `throttled`, `parse_error`, `invalid`, and
ours: `body_too_large`, `not_pooled`, `ptkb_left`), and `fields` is there for input refused field by
field (`non_field_errors` for the input as a whole). An error may add context of its own: the assessor
API's 409 names the copy and the page that asks for its PTKB step.

DRF's default answers a refusal in two shapes, `{"detail": ...}` or a bare dict of fields, so a client had
to guess which one it got; the relevance endpoints had a third of their own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, JsonResponse
from rest_framework import exceptions

if TYPE_CHECKING:
    from rest_framework.response import Response


def error_body(*, detail: str, code: str, fields: dict[str, list[str]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"detail": detail, "code": code}
    if fields:
        body["fields"] = fields
    return body


def error_json(
    *, detail: str, code: str, status: int, fields: dict[str, list[str]] | None = None
) -> JsonResponse:
    """A refusal in the one shape from a plain Django view (the pages' own JSON endpoints)."""
    return JsonResponse(error_body(detail=detail, code=code, fields=fields), status=status)


def form_error_json(form: forms.BaseForm) -> JsonResponse:
    """A form's errors as the 400 a DRF serializer's would give: `invalid`, field by field."""
    fields = {
        "non_field_errors" if name == NON_FIELD_ERRORS else name: [str(m) for m in messages]
        for name, messages in form.errors.items()
    }
    return error_json(detail=_sentence(fields), code="invalid", status=400, fields=fields)


def _fields(detail: object) -> dict[str, list[str]]:
    """A ValidationError's detail as {field: [messages]}; nested serializers flatten to `a.b`."""
    if isinstance(detail, dict):
        flat: dict[str, list[str]] = {}
        for name, value in detail.items():
            if isinstance(value, dict):
                flat.update({f"{name}.{inner}": messages for inner, messages in _fields(value).items()})
            else:
                flat[str(name)] = [str(m) for m in (value if isinstance(value, list) else [value])]
        return flat
    return {"non_field_errors": [str(m) for m in (detail if isinstance(detail, list) else [detail])]}


def _sentence(fields: dict[str, list[str]]) -> str:
    return " ".join(
        " ".join(messages) if name == "non_field_errors" else f"{name}: {' '.join(messages)}"
        for name, messages in fields.items()
    )


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler (status, WWW-Authenticate, Retry-After, Http404 and PermissionDenied mapped), then
    its body in the one shape. None (a 500) for what is not an API refusal, as DRF does."""
    # Imported here: the API view that calls this has loaded DRF's views already, and the pages and the
    # middleware that import this module for the error shape alone need not (tests/test_startup.py).
    from rest_framework.views import exception_handler as drf_exception_handler

    # DRF maps these two as well, but only inside its handler: mapped here, their body is shaped too.
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(*exc.args)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(*exc.args)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        fields = _fields(exc.detail)
        response.data = error_body(detail=_sentence(fields), code="invalid", fields=fields)
        return response
    if isinstance(exc, exceptions.APIException):
        codes = exc.get_codes()
        code = codes if isinstance(codes, str) else exc.default_code
        detail = exc.detail if isinstance(exc.detail, str) else _sentence(_fields(exc.detail))
        response.data = error_body(detail=str(detail), code=str(code)) | getattr(exc, "context", {})
    return response
