"""The quality dashboard, included under quality/ in the judging namespace."""

from django.urls import path

import core.converters  # noqa: F401  registers <text:...>
from core.lazy_views import lazy_views

views = lazy_views("judging.quality.views")

urlpatterns = [
    path("<slug:name>/", views.dashboard, name="quality-dashboard"),
    path("<slug:name>/pause/<text:username>", views.pause, name="quality-pause"),
    path("<slug:name>/resume/<text:username>", views.resume, name="quality-resume"),
]
