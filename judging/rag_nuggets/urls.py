"""The TREC RAG nugget score pages, included under evaluation/ in the judging namespace."""

from django.urls import path

import core.converters  # noqa: F401  registers <text:...> and <textpath:...>
from core.lazy_views import lazy_views

views = lazy_views("judging.rag_nuggets.views")

urlpatterns = [
    path("<slug:name>/nuggets/", views.nugget_scores_page, name="nugget-scores"),
    path("<slug:name>/nuggets/runs/<textpath:run>/", views.nugget_scores_run, name="nugget-scores-run"),
    path(
        "<slug:name>/nuggets/download/<text:kind>",
        views.nugget_scores_download,
        name="nugget-scores-download",
    ),
]
