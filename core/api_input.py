"""API input the database can hold: what DRF would pass on to PostgreSQL unchecked is refused here, with a
400 in the API's one error shape (core/api_errors.py), instead of failing in the database as a 500.

- Integers. DRF's IntegerField takes an integer of any size, and a `time_spent_ms` of 2**31 or a
  `turn_pk` of 10**30 failed in PostgreSQL ("integer out of range"). `IntegerField(column=...)` is DRF's
  field bounded to the range of the column the value is stored in or looked up by; the schema then
  shows the bounds as `minimum` and `maximum`.
- Query parameters. DRF hands them to a view raw, and a filter sent a NUL character (`?judge=%00`) to
  PostgreSQL, whose text cannot hold it. `query_input` reads them through a serializer, whose CharFields
  refuse NUL as they do in a body; the same serializer documents them in the schema
  (`extend_schema(parameters=[TheQuery])`).
"""

from __future__ import annotations

from typing import Any

from django.db import connection, models
from rest_framework import serializers
from rest_framework.request import Request


def column_range(column: models.Field[Any, Any]) -> tuple[int, int]:
    """The smallest and largest integer `column` holds."""
    low, high = connection.ops.integer_field_range(column.get_internal_type())
    assert low is not None and high is not None, f"{column} is not an integer column"
    return low, high


class IntegerField(serializers.IntegerField):
    """DRF's IntegerField within `column`'s range, narrowed further by `min_value` and `max_value`."""

    def __init__(self, *, column: models.Field[Any, Any], **kwargs: Any) -> None:
        low, high = column_range(column)
        kwargs["min_value"] = max(low, kwargs.get("min_value", low))
        kwargs["max_value"] = min(high, kwargs.get("max_value", high))
        super().__init__(**kwargs)


def query_input(request: Request, serializer_class: type[serializers.Serializer[Any]]) -> dict[str, Any]:
    """The request's query parameters as `serializer_class` validates them; ValidationError (a 400 that
    names the parameter) for one it refuses. Parameters it does not declare are ignored, as HTTP allows."""
    serializer = serializer_class(data=request.query_params)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)
