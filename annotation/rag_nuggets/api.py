"""The post-edit endpoint of a nugget list: one edit (rewrite, merge, split, delete, add, reorder) as the
page's script sends it, answered with the list after it, so a reload loses nothing.

The work is reached through its assessor (anyone else's is a 404), and the edit goes through the nugget
work service (annotation/rag_nuggets/services.py), which holds every rule of a list; an edit it refuses
is a 400 with its reason.
"""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.models import NuggetEdit, TopicWork
from annotation.rag_nuggets import selectors
from annotation.rag_nuggets.services import NuggetWorkRefused, nugget_edit_apply, nugget_work_get
from annotation.typed import signed_in_user
from core.api_input import IntegerField
from core.page_api import PageApi


def _text(help_text: str) -> serializers.CharField:
    # As sent: the service says what it refuses (blank text) and folds the whitespace itself.
    return serializers.CharField(required=False, trim_whitespace=False, allow_blank=True, help_text=help_text)


class NuggetEditInput(serializers.Serializer):
    action = serializers.ChoiceField(choices=NuggetEdit.Action.choices)
    key = serializers.CharField(
        required=False, trim_whitespace=False, help_text="The nugget rewritten, split or deleted."
    )
    keys = serializers.ListField(
        child=serializers.CharField(trim_whitespace=False),
        required=False,
        help_text="The nuggets merged (two or more), or every key of the list in its new order.",
    )
    text = _text("The new text (rewrite, merge, add).")
    texts = serializers.ListField(child=_text(""), required=False, help_text="The parts of a split.")
    after = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        trim_whitespace=False,
        help_text="Add after this nugget; null or empty: at the top.",
    )
    time_spent_ms = IntegerField(
        column=TopicWork._meta.get_field("time_spent_ms"),
        required=False,
        allow_null=True,
        help_text="Time on the page since the last edit.",
    )


class NuggetItemOutput(serializers.Serializer):
    key = serializers.CharField()
    text = serializers.CharField()


class NuggetListOutput(serializers.Serializer):
    nuggets = NuggetItemOutput(many=True, help_text="The list after the edit, in order.")


class NuggetEditApi(PageApi):
    @extend_schema(
        operation_id="rag_nuggets_edit",
        request=NuggetEditInput,
        responses={
            200: NuggetListOutput,
            400: OpenApiResponse(description="The reason the edit was refused, per field or as a whole."),
            404: OpenApiResponse(description="Not your work, not a post-edit step, or no such page."),
        },
    )
    def post(self, request: Request, work_id: int, index: int) -> Response:
        """Apply one edit to your list of the turn on page `index` (from 1) of a piece of post-edit work."""
        user = signed_in_user(request)
        try:
            work = nugget_work_get(work_id=work_id, user=user)
        except TopicWork.DoesNotExist:
            raise Http404("no such nugget work") from None
        turns = selectors.work_turns(work) if work.kind == TopicWork.Kind.NUGGET_EDIT else []
        if not 1 <= index <= len(turns):
            raise Http404("no such turn")
        payload = NuggetEditInput(data=request.data)
        payload.is_valid(raise_exception=True)
        edit = dict(payload.validated_data)
        spent = edit.pop("time_spent_ms", None)
        try:
            items = nugget_edit_apply(
                work=work, user=user, turn=turns[index - 1], edit=edit, time_spent_ms=spent
            )
        except NuggetWorkRefused as exc:
            reason = str(exc)
            raise exceptions.ValidationError([f"{reason[:1].upper()}{reason[1:]}."]) from None
        return Response(NuggetListOutput({"nuggets": [{"key": i.key, "text": i.text} for i in items]}).data)
