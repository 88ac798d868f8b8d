"""The run-evaluation pages, included under evaluation/ in the judging namespace."""

from django.urls import path

import core.converters  # noqa: F401  registers <text:...> and <textpath:...>
from core.lazy_views import lazy_views

views = lazy_views("judging.evaluation.views")

urlpatterns = [
    path("", views.evaluation_index, name="evaluation-index"),
    path("<slug:name>/runs/<textpath:run>/", views.evaluation_run_turns, name="evaluation-run"),
]
