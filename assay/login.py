"""The login page, which lands each kind of account on its own work.

Its failed attempts are limited by django-axes like every other way in (core/login_limits.py).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.views import LoginView
from django.urls import reverse

from annotation.models import Assignment, TopicWork
from annotation.permissions import is_organiser
from annotation.rag_nuggets.selectors import NUGGET_KINDS
from annotation.topic_work.selectors import topic_work_has
from crowd.models import CrowdWorker


def landing_url(user: Any) -> str:
    """Where a login without `next` lands: organisers on the home page with every collection; a crowd
    worker's account on the crowd page; an assessor on their own work (relevance first, then support, then
    TREC RAG nugget work), so that a login never waits on pages that are not theirs."""
    if is_organiser(user):
        return reverse("home")
    if CrowdWorker.objects.filter(user=user).exists():
        return reverse("crowd:home")
    if Assignment.objects.filter(assessors=user).exists():
        return reverse("relevance-queue")
    if topic_work_has(user=user, kinds=[TopicWork.Kind.SUPPORT]):
        return reverse("support-assignments")
    if topic_work_has(user=user, kinds=NUGGET_KINDS):
        return reverse("rag-nuggets-work")
    return reverse("relevance-queue")


class LandingLoginView(LoginView):
    def get_default_redirect_url(self) -> str:
        return landing_url(self.request.user)
