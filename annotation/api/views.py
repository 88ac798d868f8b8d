"""Read access to collections for any signed-in user; judgments are visible to their own judge or organisers."""

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response as ApiResponse
from rest_framework.views import APIView

from annotation.api import serializers as s
from annotation.models import (
    Collection,
    Judge,
    Passage,
    RelevanceJudgment,
    Response,
    Run,
    Topic,
    Turn,
)
from annotation.services import judge_for_assessor, relevance_judgment_submit


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


class TopicList(generics.ListAPIView):
    serializer_class = s.TopicOutput

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
        queryset = Passage.objects.filter(collection=_collection(self))
        ids = self.request.query_params.getlist("id")
        return queryset.filter(passage_id__in=ids) if ids else queryset


class RunList(generics.ListAPIView):
    serializer_class = s.RunOutput

    def get_queryset(self) -> QuerySet[Run]:
        return Run.objects.filter(collection=_collection(self)).select_related("collection")


class ResponseList(generics.ListAPIView):
    serializer_class = s.ResponseOutput

    def get_queryset(self) -> QuerySet[Response]:
        run = get_object_or_404(Run, collection=_collection(self), name=self.kwargs["run"])
        return Response.objects.filter(run=run).select_related("run", "turn").prefetch_related("sentences")


class JudgeList(generics.ListAPIView):
    queryset = Judge.objects.all()
    serializer_class = s.JudgeOutput


class RelevanceJudgmentList(APIView):
    """List relevance judgments (organisers: any judge; others: their own), or submit one as yourself."""

    @extend_schema(responses=s.RelevanceJudgmentOutput(many=True))
    def get(self, request: Request, collection: str) -> ApiResponse:
        target = get_object_or_404(Collection, name=collection)
        queryset = RelevanceJudgment.objects.filter(turn__collection=target).select_related("judge", "turn")
        if request.user.is_staff:
            judge_name = request.query_params.get("judge")
            if judge_name:
                queryset = queryset.filter(judge__name=judge_name)
        else:
            queryset = queryset.filter(judge__user=request.user)
        paginator = generics.GenericAPIView.pagination_class()
        page = paginator.paginate_queryset(queryset.order_by("id"), request, view=self)
        return paginator.get_paginated_response(s.RelevanceJudgmentOutput(page, many=True).data)

    @extend_schema(request=s.RelevanceJudgmentInput, responses={201: s.RelevanceJudgmentOutput})
    def post(self, request: Request, collection: str) -> ApiResponse:
        data = dict(request.data.items()) if hasattr(request.data, "items") else {}
        data["collection"] = collection
        payload = s.RelevanceJudgmentInput(data=data)
        payload.is_valid(raise_exception=True)
        target = get_object_or_404(Collection, name=collection)
        turn = Turn.objects.filter(collection=target, turn_id=payload.validated_data["turn_id"]).first()
        if turn is None:
            return ApiResponse(
                {"turn_id": [f"no turn {payload.validated_data['turn_id']!r} in {collection}"]},
                status=status.HTTP_400_BAD_REQUEST,
            )
        judgment = relevance_judgment_submit(
            judge=judge_for_assessor(user=request.user),
            turn=turn,
            passage_id=payload.validated_data["passage_id"],
            grade=payload.validated_data["grade"],
            time_spent_ms=payload.validated_data.get("time_spent_ms"),
        )
        return ApiResponse(s.RelevanceJudgmentOutput(judgment).data, status=status.HTTP_201_CREATED)
