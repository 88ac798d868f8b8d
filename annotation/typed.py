"""Narrow types for Django objects whose stubs are wider than the way Assay uses them.

`AuthenticatedRequest` is the request of a view behind a login: its user is a signed-in `User`, never
AnonymousUser, so the type checker follows `request.user` into services that take a `User`; DRF views,
whose request type cannot be narrowed that way, ask `signed_in_user` after their permission check.
`choice_field` is a form's model choice field, checked to be one, so its queryset can be set per form;
`choices` reads that queryset back.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest
from rest_framework.request import Request


class AuthenticatedRequest(HttpRequest):
    user: User


def signed_in_user(request: HttpRequest | Request) -> User:
    """The user of a request that passed IsAuthenticated (or login_required): a `User`.

    An anonymous user here means a view lost its permission check; refusing (403) is safer than serving.
    """
    user = request.user
    if not isinstance(user, User):
        raise PermissionDenied
    return user


def choice_field(form: forms.BaseForm, name: str) -> forms.ModelChoiceField:
    """`form.fields[name]`, which must be a ModelChoiceField (or ModelMultipleChoiceField)."""
    field = form.fields[name]
    if not isinstance(field, forms.ModelChoiceField):
        raise TypeError(f"{type(form).__name__}.{name} is a {type(field).__name__}, not a model choice field")
    return field


def choices(form: forms.BaseForm, name: str) -> QuerySet[Any]:
    """The queryset a form's model choice field offers (set in the form's definition or its __init__)."""
    queryset = choice_field(form, name).queryset
    if queryset is None:
        raise TypeError(f"{type(form).__name__}.{name} has no queryset")
    return queryset
