"""The OpenAPI schema says how each operation refuses a request, not only how it succeeds.

drf-spectacular documents the success answer of an operation and whatever its view declares; the refusals
that every DRF view gives the same way (not signed in, not found, a body it cannot read, the throttle)
were missing, so a client reading the schema could not know them and a schema fuzzer flags each one as an
undocumented status. They are added here, once, to every operation that can give them; a view that
declares one of these codes itself keeps its own description.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from rest_framework import serializers
from rest_framework.permissions import AllowAny

BODY_METHODS = {"POST", "PUT", "PATCH"}


class RefusalsAutoSchema(AutoSchema):
    def _refusals(self) -> dict[str, str]:
        refusals: dict[str, str] = {}
        if self.method in BODY_METHODS:
            refusals["400"] = "The reason the input was refused."
            refusals["413"] = "The request body is larger than the server accepts."
            refusals["415"] = "A body in a media type this operation does not read."
        elif self._reads_query_input():
            refusals["400"] = "The reason a query parameter was refused."
        if any(not isinstance(p, AllowAny) for p in self.view.get_permissions()):
            refusals["403"] = "Not signed in (no session, no valid token), or not allowed."
            if self._challenges():
                refusals["401"] = "Not signed in: no valid token (WWW-Authenticate names the scheme)."
        if "{" in self.path:
            refusals["404"] = "Nothing of that name here (or nothing you may see)."
        if self.view.get_throttles():
            refusals["429"] = "Too many requests; Retry-After says when to try again."
        return refusals

    def _challenges(self) -> bool:
        """DRF answers a request without credentials 401, not 403, when the view's first authentication
        names a scheme for the WWW-Authenticate header (a token tried before the session)."""
        authenticators = self.view.get_authenticators()
        return bool(authenticators) and authenticators[0].authenticate_header(self.view.request) is not None

    def _reads_query_input(self) -> bool:
        """The operation's query parameters are read through a serializer (core.api_input.query_input)."""
        return any(
            isinstance(p, serializers.Serializer)
            or (isinstance(p, type) and issubclass(p, serializers.Serializer))
            for p in self.get_override_parameters()
        )

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        for code, description in self._refusals().items():
            responses.setdefault(code, {"description": description})
        return responses
