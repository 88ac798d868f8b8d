"""Read access to collections for any signed-in user; judgments are visible to their own judge or organisers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from django.contrib.auth import authenticate
from django.db.models import Model, QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response as ApiResponse

from annotation.api import serializers as s
from annotation.judge_access import import_judge_refusal, judges_readable
from annotation.judge_menus import labels_kept_count
from annotation.models import (
    Collection,
    Judge,
    Passage,
    PassageCount,
    RelevanceJudgment,
    Response,
    ResponseSentence,
    Run,
    SupportJudgment,
    Topic,
    TopicWork,
    Turn,
)
from annotation.permissions import IsOrganiser
from annotation.relevance.writer import relevance_judgment_submit
from annotation.selectors import TOPICS_PER_PAGE
from annotation.services import api_token_get, judge_for_assessor
from annotation.support.services import SupportConflict, support_judgment_submit
from annotation.typed import signed_in_user
from core.api_input import query_input
from core.idempotency import IDEMPOTENCY_KEY, idempotency_key
from core.json_body import StrictBodies
from core.pagination import CappedLimitOffsetPagination
from core.wording import plural

if TYPE_CHECKING:
    from rest_framework.permissions import _SupportsHasPermission


class TokenObtain(StrictBodies):
    """A script's API token for its account's user name and password (the same token the account page shows).

    The password is checked as the log-in page checks it, and a wrong one counts toward the same limit on
    failed log-ins: a locked user name or address gets 429 with Retry-After.
    """

    authentication_classes: list[type] = []  # no session, so no CSRF check: the password is the credential
    permission_classes = [AllowAny]

    @extend_schema(
        request=s.TokenInput,
        responses={
            200: s.TokenOutput,
            400: OpenApiResponse(description="A missing field, or a wrong user name or password."),
            429: OpenApiResponse(description="Too many failed log-ins for this name or address."),
        },
        auth=[],
    )
    def post(self, request: Request) -> ApiResponse:
        payload = s.TokenInput(data=request.data)
        payload.is_valid(raise_exception=True)
        # Django's request, not DRF's wrapper: axes marks a refused log-in on it for its middleware.
        user = authenticate(request._request, **payload.validated_data)
        if user is None:
            raise _refused("non_field_errors", "no active account has this user name and password")
        return ApiResponse(s.TokenOutput({"token": api_token_get(user=user).key}).data)


def _collection(view: generics.GenericAPIView) -> Collection:
    return get_object_or_404(Collection, name=view.kwargs["collection"])


class CollectionList(generics.ListAPIView):
    queryset = Collection.objects.all()
    serializer_class = s.CollectionOutput


class CollectionDetail(generics.RetrieveAPIView):
    queryset = Collection.objects.all()
    serializer_class = s.CollectionOutput
    lookup_field = "name"
    lookup_url_kwarg = "collection"


class TopicPagination(CappedLimitOffsetPagination):
    """A page of topics is shorter than other lists' (`TOPICS_PER_PAGE` unless `limit` asks for more):
    each topic carries its PTKB statements, tens of them."""

    default_limit = TOPICS_PER_PAGE


class TopicList(generics.ListAPIView):
    serializer_class = s.TopicOutput
    pagination_class = TopicPagination

    def get_queryset(self) -> QuerySet[Topic]:
        return (
            Topic.objects.filter(collection=_collection(self))
            .select_related("collection")
            .prefetch_related("ptkb")
        )


class TurnList(generics.ListAPIView):
    serializer_class = s.TurnOutput

    def get_queryset(self) -> QuerySet[Turn]:
        return Turn.objects.filter(collection=_collection(self)).select_related("topic")


class PassageList(generics.ListAPIView):
    serializer_class = s.PassageOutput

    def get_queryset(self) -> QuerySet[Passage]:
        self.collection = _collection(self)
        # By id within the one collection, along its unique index (the model's ordering begins with the
        # collection, which sorted every passage of it by the collection's name).
        queryset = Passage.objects.filter(collection=self.collection).order_by("passage_id")
        self.ids = query_input(self.request, s.PassageQuery).get("id")
        return queryset.filter(passage_id__in=self.ids) if self.ids else queryset

    def kept_count(self) -> int | None:
        """The collection's kept passage count, when every passage is listed."""
        if self.ids:
            return None
        kept = PassageCount.objects.filter(collection=self.collection).values_list("passages", flat=True)
        return next(iter(kept), 0)

    @extend_schema(parameters=[s.PassageQuery])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> ApiResponse:
        return super().get(request, *args, **kwargs)


class RunList(generics.ListAPIView):
    serializer_class = s.RunOutput

    def get_queryset(self) -> QuerySet[Run]:
        # Without each run's validation report (not in the output), which grows with the topics.
        return Run.objects.filter(collection=_collection(self)).select_related("collection").defer("report")


class ResponseList(generics.ListAPIView):
    serializer_class = s.ResponseOutput

    def get_queryset(self) -> QuerySet[Response]:
        run = get_object_or_404(Run, collection=_collection(self), name=self.kwargs["run"])
        return Response.objects.filter(run=run).select_related("run", "turn").prefetch_related("sentences")


class JudgeList(generics.ListAPIView):
    """The judges whose labels you may read: organisers every judge; assessors the machine and
    imported-file judges and their own (annotation.judge_access)."""

    serializer_class = s.JudgeOutput

    def get_queryset(self) -> QuerySet[Judge]:
        return judges_readable(user=self.request.user).order_by("name")


_Labels = TypeVar("_Labels", bound=Model)


def _whose(
    labels: QuerySet[_Labels], request: Request, judge_name: str | None
) -> tuple[QuerySet[_Labels], int | None]:
    """The labels a list shows: an organiser's, of the judge named (every judge's without one); anyone
    else's, their own; and the one judge's pk (None: every judge's; 0: no such judge). The pk is read
    first: filtered on it rather than on a join to the judges, the planner knows from the label table's
    statistics how many labels that judge has, and reads a judge with few along the (judge, ...) index
    instead of walking every label in id order to find them."""
    if request.user.is_staff:
        if not judge_name:
            return labels, None
        judges = Judge.objects.filter(name=judge_name)
    else:
        judges = Judge.objects.filter(user=signed_in_user(request))
    judge = judges.values_list("pk", flat=True).first()
    return (labels.filter(judge_id=judge), judge) if judge is not None else (labels.none(), 0)


class RelevanceJudgmentList(StrictBodies, generics.GenericAPIView):
    """List relevance judgments (organisers: any judge; others: their own); organisers also write here.

    POST is the organisers' channel for grades from elsewhere (another tool, a file, a judge run outside
    Assay), recorded as the judge named in `judge` (an existing machine or imported-file judge, as an
    import may write as) or as the organiser.
    Assessors grade through their assignments only (the relevance pages and /relevance/api/), which
    check the unit and the pool: here they get 403.
    """

    serializer_class = s.RelevanceJudgmentOutput
    counted: Callable[[], int]

    def get_permissions(self) -> Sequence[_SupportsHasPermission]:
        if self.request.method == "POST":
            return [IsAuthenticated(), IsOrganiser()]
        return super().get_permissions()

    def kept_count(self) -> int:
        """The page's total from the judges' kept counts, not a count of every grade listed."""
        return self.counted()

    @extend_schema(parameters=[s.RelevanceJudgmentQuery], responses=s.RelevanceJudgmentOutput(many=True))
    def get(self, request: Request, collection: str) -> ApiResponse:
        query = query_input(request, s.RelevanceJudgmentQuery)
        target = get_object_or_404(Collection, name=collection)
        queryset = RelevanceJudgment.objects.filter(turn__collection=target).select_related("judge", "turn")
        queryset, judge = _whose(queryset, request, query.get("judge"))
        self.counted = partial(labels_kept_count, collection=target, task="relevance", judge_id=judge)
        page = self.paginate_queryset(queryset.order_by("id"))
        return self.get_paginated_response(s.RelevanceJudgmentOutput(page, many=True).data)

    @extend_schema(
        request=s.RelevanceJudgmentInput,
        parameters=[IDEMPOTENCY_KEY],
        responses={
            201: s.RelevanceJudgmentOutput,
            400: OpenApiResponse(description="The reason, per field."),
            403: OpenApiResponse(description="Not an organiser: assessors grade through their assignments."),
        },
    )
    def post(self, request: Request, collection: str) -> ApiResponse:
        data = dict(request.data.items()) if hasattr(request.data, "items") else {}
        data["collection"] = collection
        payload = s.RelevanceJudgmentInput(data=data)
        payload.is_valid(raise_exception=True)
        key = idempotency_key(request)
        target = get_object_or_404(Collection, name=collection)
        turn = Turn.objects.filter(collection=target, turn_id=payload.validated_data["turn_id"]).first()
        if turn is None:
            raise _refused("turn_id", f"no turn {payload.validated_data['turn_id']!r} in {collection}")
        judge_name = payload.validated_data.get("judge")
        if judge_name:
            # Grades from elsewhere, as a file's are: the import's judge-name rule, and never people's labels.
            refusal = import_judge_refusal(judge_name)
            if refusal:
                raise _refused("judge", refusal)
            judge = Judge.objects.filter(name=judge_name).first()
            if judge is None:
                raise _refused("judge", f"no judge {judge_name!r}: the API writes as an existing judge only")
        else:
            judge = judge_for_assessor(user=signed_in_user(request))
        judgment = relevance_judgment_submit(
            judge=judge,
            turn=turn,
            passage_id=payload.validated_data["passage_id"],
            grade=payload.validated_data["grade"],
            time_spent_ms=payload.validated_data.get("time_spent_ms"),
            key=key,
        )
        return ApiResponse(s.RelevanceJudgmentOutput(judgment).data, status=status.HTTP_201_CREATED)


# --- Support labels ----------------------------------------------------------------------


def _refused(field: str, reason: str) -> ValidationError:
    """A 400 about one field, answered in the API's one error shape (core/api_errors.py)."""
    return ValidationError({field: [reason]})


class SupportJudgmentList(StrictBodies, generics.ListAPIView):
    """Support labels (organisers: any judge; others: their own), or submit one as yourself.

    A submission goes through the same service as the assessor page, so it obeys the assessor's
    assignment: its condition, its units, and never one unit in two conditions.
    """

    serializer_class = s.SupportJudgmentOutput
    counted: Callable[[], int] | None = None

    def get_queryset(self) -> QuerySet[SupportJudgment]:
        collection = _collection(self)
        queryset = SupportJudgment.objects.filter(
            sentence__response__run__collection=collection
        ).select_related("judge", "sentence__response__run", "sentence__response__turn")
        params = query_input(self.request, s.SupportJudgmentQuery)
        queryset, judge = _whose(queryset, self.request, params.get("judge"))
        # A run or a topic narrows the labels past what the kept counts tell apart: those are counted.
        self.counted = (
            None
            if params.get("run") or params.get("topic")
            else partial(
                labels_kept_count,
                collection=collection,
                task="support",
                judge_id=judge,
                condition=params.get("condition") or None,
            )
        )
        if params.get("run"):
            queryset = queryset.filter(sentence__response__run__name=params["run"])
        if params.get("topic"):
            queryset = queryset.filter(sentence__response__turn__turn_id=params["topic"])
        if params.get("condition"):
            queryset = queryset.filter(condition=params["condition"])
        return queryset.order_by("id")

    def kept_count(self) -> int | None:
        """The page's total from the judges' kept counts (None: count the rows)."""
        return self.counted() if self.counted is not None else None

    @extend_schema(parameters=[s.SupportJudgmentQuery])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> ApiResponse:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        request=s.SupportJudgmentInput,
        responses={
            201: s.SupportJudgmentOutput,
            200: OpenApiResponse(s.SupportJudgmentOutput, description="An earlier label of yours, revised."),
            400: OpenApiResponse(description="The reason, per field (or under non_field_errors)."),
        },
    )
    def post(self, request: Request, collection: str) -> ApiResponse:
        payload = s.SupportJudgmentInput(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        target = get_object_or_404(Collection, name=collection)
        sentence = (
            ResponseSentence.objects.filter(
                response__run__collection=target,
                response__run__name=data["run_id"],
                response__turn__turn_id=data["topic_id"],
                response__rank=1,
                index=data["sentence_index"],
            )
            .select_related("response__turn__topic")
            .first()
        )
        if sentence is None:
            raise _refused(
                "sentence_index",
                f"run {data['run_id']} has no sentence {data['sentence_index']} for topic {data['topic_id']} "
                f"in {collection}",
            )
        if "passage_id" in data:
            if data["passage_id"] not in sentence.citations:
                raise _refused("passage_id", f"the sentence does not cite {data['passage_id']}")
            citation_index = sentence.citations.index(data["passage_id"])
            if data.get("citation_index", citation_index) != citation_index:
                raise _refused("citation_index", f"{data['passage_id']} is citation {citation_index}")
        else:
            citation_index = data.get("citation_index", 0)
        if citation_index >= len(sentence.citations):
            raise _refused(
                "citation_index",
                "the sentence cites nothing, so it is No support by definition"
                if not sentence.citations
                else f"the sentence has {plural(len(sentence.citations), 'citation')}",
            )
        topic = sentence.response.turn.topic
        user = signed_in_user(request)
        assignment = TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT, topic=topic, user=user).first()
        if assignment is None:
            raise _refused("topic_id", f"you have no support assignment for topic {topic.number}")
        revising = SupportJudgment.objects.filter(
            judge__user=user, sentence=sentence, citation_index=citation_index
        ).exists()
        try:
            judgment = support_judgment_submit(
                assignment=assignment,
                user=user,
                sentence=sentence,
                citation_index=citation_index,
                label=data["label"],
                time_spent_ms=data.get("time_spent_ms"),
            )
        except SupportConflict as exc:
            raise _refused("non_field_errors", str(exc)) from None
        return ApiResponse(
            s.SupportJudgmentOutput(judgment).data,
            status=status.HTTP_200_OK if revising else status.HTTP_201_CREATED,
        )
