"""The assessor JSON endpoints, next passage and grade: the assessor page's script and scripted clients.

Both call the relevance work rules (annotation.relevance.work) and nothing else. The page signs in with
its session (and sends the CSRF token in the X-CSRFToken header); scripts send `Authorization: Token
<key>`.

They are plain Django views rather than DRF APIViews: they are most of the requests of a campaign, one
per judgment, and DRF's request wrapping, content negotiation and serializer fields cost more than the
work itself. What DRF gave them is kept, with DRF's own pieces and its answers: token authentication
(DRF's Token model and TokenAuthentication), the session with its CSRF check (SessionAuthentication's),
the per-user throttle (the API's own, core.throttling), and strict input checks that answer 400 with the reason per
field, in DRF's words.
"""

from __future__ import annotations

import math
from typing import Any, cast

from csp.decorators import csp_exempt
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from rest_framework import exceptions
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.fields import BooleanField, IntegerField

from annotation.models import RelevanceGrade
from annotation.relevance.forms import MAX_TIME_SPENT_MS
from annotation.relevance.work import NextKind, NextPassage, NotPooled, WorkRefused, work_grade, work_next
from core.json_body import BadJsonBody, read_json_body
from core.throttling import UserFixedWindowThrottle

_TOKEN = TokenAuthentication()
_SESSION = SessionAuthentication()


class _Refused(Exception):
    """An answer other than the work's: authentication, throttle, or input."""

    def __init__(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        super().__init__(status)
        self.status, self.body, self.headers = status, body, headers or {}


def _assessor(request: HttpRequest) -> User:
    """The caller: by token when the request carries one (scripts), else by session with its CSRF check.

    Token first, so that a script's request never touches the session. A missing or bad credential is
    401 (with `WWW-Authenticate: Token`), a session post without its CSRF token 403, a script over the
    API's per-user rate 429.
    """
    try:
        found = _TOKEN.authenticate(request)  # type: ignore[arg-type]  # it reads request.META only
        if found is None:
            if not request.user.is_active:  # AnonymousUser too
                raise exceptions.NotAuthenticated()
            _SESSION.enforce_csrf(request)  # type: ignore[arg-type]
    except (exceptions.AuthenticationFailed, exceptions.NotAuthenticated) as exc:
        raise _Refused(401, {"detail": str(exc.detail)}, {"WWW-Authenticate": _TOKEN.keyword}) from None
    except exceptions.PermissionDenied as exc:
        raise _Refused(403, {"detail": str(exc.detail)}) from None
    if found is None:
        # The page's pace is a person's, like every other page of the site; the throttle is for scripts.
        return cast(User, request.user)
    user: User = found[0]
    request.user = user
    throttle = UserFixedWindowThrottle()
    if not throttle.allow_request(request, None):  # type: ignore[arg-type]
        wait = throttle.wait()
        headers = {"Retry-After": str(math.ceil(wait))} if wait is not None else {}
        raise _Refused(429, {"detail": str(exceptions.Throttled(wait).detail)}, headers)
    return user


def _payload(request: HttpRequest) -> dict[str, Any]:
    """The request body as a dict: JSON (what the page and scripts send), a form, or nothing."""
    content_type = request.content_type or ""
    if content_type == "application/json":
        try:
            return read_json_body(request)
        except BadJsonBody as exc:
            raise _Refused(exc.status, {"detail": exc.reason}) from None
    if content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        return request.POST.dict()
    if not request.body:
        return {}
    raise _Refused(415, {"detail": f'Unsupported media type "{content_type}" in request.'})


# --- Input checks, in the words of DRF's fields -----------------------------------------------------

_MISSING = object()
_DECIMAL_END = IntegerField.re_decimal
_GRADES = {str(value): value for value in RelevanceGrade.values}


class _Fields:
    """Reads a payload field by field, collecting each field's error as DRF's serializer would."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.errors: dict[str, list[str]] = {}

    def _fail(self, name: str, message: str) -> None:
        self.errors[name] = [message]

    def integer(
        self, name: str, *, min_value: int | None = None, max_value: int | None = None, required: bool = True
    ) -> int | None:
        value = self.data.get(name, _MISSING)
        if value is _MISSING or (value is None and not required):
            if required:
                self._fail(name, "This field is required.")
            return None
        if value is None:
            self._fail(name, "This field may not be null.")
            return None
        try:
            if isinstance(value, str) and len(value) > 1000:
                raise ValueError
            number = int(_DECIMAL_END.sub("", str(value)))
        except (TypeError, ValueError):
            self._fail(name, "A valid integer is required.")
            return None
        if min_value is not None and number < min_value:
            self._fail(name, f"Ensure this value is greater than or equal to {min_value}.")
        elif max_value is not None and number > max_value:
            self._fail(name, f"Ensure this value is less than or equal to {max_value}.")
        return number

    def text(self, name: str, *, max_length: int) -> str:
        value = self.data.get(name, _MISSING)
        if value is _MISSING:
            self._fail(name, "This field is required.")
            return ""
        if value is None:
            self._fail(name, "This field may not be null.")
            return ""
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            self._fail(name, "Not a valid string.")
            return ""
        text = str(value).strip()
        if not text:
            self._fail(name, "This field may not be blank.")
        elif "\x00" in text:  # a form body is not read by the JSON checks; PostgreSQL refuses NUL
            self._fail(name, "Null characters are not allowed.")
        elif len(text) > max_length:
            self._fail(name, f"Ensure this field has no more than {max_length} characters.")
        return text

    def grade(self, name: str) -> int:
        value = self.data.get(name, _MISSING)
        if value is _MISSING:
            self._fail(name, "This field is required.")
            return 0
        if value is None:
            self._fail(name, "This field may not be null.")
            return 0
        grade = _GRADES.get(str(value))
        if grade is None:
            self._fail(name, f'"{value}" is not a valid choice.')
            return 0
        return grade

    def boolean(self, name: str) -> bool:
        value = self.data.get(name, False)
        try:
            if value in BooleanField.TRUE_VALUES:
                return True
            if value in BooleanField.FALSE_VALUES:
                return False
        except TypeError:  # an unhashable value (a list, an object)
            pass
        self._fail(name, "Must be a valid boolean.")
        return False

    def check(self) -> None:
        if self.errors:
            raise _Refused(400, self.errors)


def _passage_output(passage: NextPassage) -> dict[str, Any]:
    return {
        "slot": passage.slot_pk,
        "unit": passage.unit,
        "turn_id": passage.turn_id,
        "turn_pk": passage.turn_pk,
        "passage_id": passage.passage_id,
        "index": passage.index,
        "title": passage.title,
        "text": passage.text,
        "url": reverse("relevance-passage", args=[passage.slot_pk, passage.turn_pk, passage.index]),
    }


def _refused(exc: _Refused) -> JsonResponse:
    response = JsonResponse(exc.body, status=exc.status)
    for header, value in exc.headers.items():
        response[header] = value
    return response


@csp_exempt()  # type: ignore[arg-type]  # JSON is never rendered as a page: no policy header
@csrf_exempt  # a token client has no CSRF cookie; a session is checked in _assessor
@require_POST
def next_unit_api(request: HttpRequest, assignment_pk: int) -> HttpResponse:
    """POST: lease work in an assignment and get the next passage to grade; 204 when none is left.

    Body (optional): `{"slot": s}` stays on that unit (as the assessor page does) and answers 204 once it
    is complete, instead of closing it and leasing the next. A held unit whose screens are all answered
    is closed here (grading leaves that to this call) and the next one leased. 200:
    `{slot, unit, turn_id, turn_pk, passage_id, index, title, text, url}` (`index`: the passage's place
    in its turn, from 0; `url`: the same passage on the assessor page). If only a PTKB step is left the
    answer is 409 with the page that asks for it (the JSON client grades passages only). 404 outside the
    assignment, or for a unit the caller does not hold.
    """
    try:
        user = _assessor(request)
        fields = _Fields(_payload(request))
        slot_pk = fields.integer("slot", min_value=1, required=False)
        fields.check()
        step = work_next(user=user, assignment_pk=assignment_pk, slot_pk=slot_pk)
    except _Refused as exc:
        return _refused(exc)
    except WorkRefused as exc:
        return JsonResponse({"detail": str(exc)}, status=404)
    if step.kind in (NextKind.NO_WORK, NextKind.UNIT_DONE):
        return HttpResponse(status=204)
    assert step.slot is not None
    if step.kind is NextKind.PTKB_LEFT:
        return JsonResponse(
            {
                "slot": step.slot.pk,
                "detail": "only the PTKB step is left",
                "url": reverse("relevance-resume", args=[step.slot.pk]),
            },
            status=409,
        )
    assert step.passage is not None
    return JsonResponse(_passage_output(step.passage))


@csp_exempt()  # type: ignore[arg-type]
@csrf_exempt
@require_POST
def submit_grade_api(request: HttpRequest, slot_pk: int) -> HttpResponse:
    """POST: grade (or regrade) a passage of a unit the caller holds; 404 for anyone else's unit.

    Body: `{turn_pk, passage_id, grade, time_spent_ms?, next?}`; 201: `{turn_pk, passage_id, grade}`.
    With `"next": true` the answer carries the unit's next passage too, as the next call with `slot`
    would (`null` when none is left), and `unit_complete` (the unit is closed; false while a passage or
    its PTKB step is left), which saves a request per judgment; a script then asks next_unit_api for
    the next unit. Without it the unit is not closed here: the next call to next_unit_api closes
    it when it finds nothing left, which saves that check on every grade.
    """
    try:
        user = _assessor(request)
        fields = _Fields(_payload(request))
        turn_pk = fields.integer("turn_pk")
        passage_id = fields.text("passage_id", max_length=255)
        grade = fields.grade("grade")
        time_spent_ms = fields.integer(
            "time_spent_ms", min_value=0, max_value=MAX_TIME_SPENT_MS, required=False
        )
        then_next = fields.boolean("next")
        fields.check()
        assert turn_pk is not None
        graded = work_grade(
            user=user,
            slot_pk=slot_pk,
            turn_pk=turn_pk,
            passage_id=passage_id,
            grade=grade,
            time_spent_ms=time_spent_ms,
            then_next=then_next,
        )
    except _Refused as exc:
        return _refused(exc)
    except WorkRefused as exc:
        return JsonResponse({"detail": str(exc)}, status=404)
    except NotPooled as exc:
        return JsonResponse({"passage_id": [str(exc)]}, status=400)
    judgment = graded.judgment
    output: dict[str, Any] = {
        "turn_pk": judgment.turn_id,
        "passage_id": judgment.passage_id,
        "grade": judgment.grade,
    }
    if graded.next is not None:
        passage = graded.next.passage
        output["next"] = _passage_output(passage) if passage is not None else None
        output["unit_complete"] = graded.next.kind is NextKind.UNIT_DONE
    return JsonResponse(output, status=201)
