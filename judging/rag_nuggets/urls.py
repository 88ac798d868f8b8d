"""The TREC RAG nugget score pages, included under evaluation/ in the judging namespace."""

from django.urls import path

import core.converters  # noqa: F401  registers <text:...> and <textpath:...>
from judging.rag_nuggets import views

urlpatterns = [
    path("<slug:name>/nuggets/", views.nugget_scores_page, name="nugget-scores"),
    path("<slug:name>/nuggets/runs/<textpath:run>/", views.nugget_scores_run, name="nugget-scores-run"),
    path(
        "<slug:name>/nuggets/download/<text:kind>",
        views.nugget_scores_download,
        name="nugget-scores-download",
    ),
]
