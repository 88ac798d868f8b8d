"""The `Idempotency-Key` header of the API's grade writes: a client names each grade attempt, so that a
retry whose first attempt was stored (its answer lost to an outage) changes nothing and counts no time
twice."""

from __future__ import annotations

import uuid

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import exceptions, serializers
from rest_framework.request import Request

IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key",
    OpenApiTypes.UUID,
    OpenApiParameter.HEADER,
    description=(
        "A fresh UUID per grade, sent again unchanged on its retries. A retry whose grade was already "
        "stored (its answer lost to an outage, say) changes nothing, its time is not added again, and it "
        "answers what the first attempt did. Only the last key applied to a (turn, passage) is kept."
    ),
)


def idempotency_key(request: Request) -> uuid.UUID | None:
    """The request's key, None without one; a malformed one is the API's 400 naming the header."""
    value = request.headers.get("Idempotency-Key")
    if value is None:
        return None
    field = serializers.UUIDField()
    try:
        return field.to_internal_value(value)
    except exceptions.ValidationError as refused:
        raise exceptions.ValidationError({"Idempotency-Key": refused.detail}) from None
